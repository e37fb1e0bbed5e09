/*
 * Link FIFO rings and link counters: set-up, snapshots and dumps (the hot
 * push/pop path is inline in torus/machine.h), plus the closed-form transfer
 * time of the model that tests and benchmarks compare against.
 */
#include <string.h>
#include "torus_internal.h"

void torus_ring_init(struct torus_ring *r, uint32_t slots, uint64_t off)
{
	atomic_store_explicit(&r->head, 0, memory_order_relaxed);
	atomic_store_explicit(&r->tail, 0, memory_order_relaxed);
	atomic_store_explicit(&r->want_space, 0, memory_order_relaxed);
	r->slots = slots;
	r->off_slots = off;
	r->off_side = off + (uint64_t)slots * sizeof(struct torus_packet);
}

void torus_ring_view_init(struct torus_ring_view *v, struct torus_ring *r, void *base, enum torus_ring_role role)
{
	v->ring = r;
	v->slot = (struct torus_packet *)((char *)base + r->off_slots);
	v->side = (struct torus_side *)((char *)base + r->off_side);
	v->mask = r->slots - 1;
	uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	v->pos = v->published = role == TORUS_RING_PRODUCER ? head : tail;
	v->cached = role == TORUS_RING_PRODUCER ? tail : head;
}

void torus_ring_dump(const struct torus_ring *r, const char *name, FILE *out)
{
	uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	fprintf(out, "%s: %u/%u slots used (head %u, tail %u)%s\n", name, head - tail, r->slots, head,
		tail, atomic_load_explicit(&r->want_space, memory_order_relaxed) ? ", producer waiting" : "");
}

void torus_link_read(const struct torus_link *l, struct torus_link_counters *out)
{
	out->packets = atomic_load_explicit(&l->packets, memory_order_relaxed);
	out->payload_bytes = atomic_load_explicit(&l->payload_bytes, memory_order_relaxed);
	out->wire_bytes = atomic_load_explicit(&l->wire_bytes, memory_order_relaxed);
	out->busy_ps = atomic_load_explicit(&l->busy_ps, memory_order_relaxed);
	out->free_at = atomic_load_explicit(&l->free_at, memory_order_relaxed);
}

void torus_link_dump(const struct torus_link *l, const char *indent, FILE *out)
{
	char name[96];
	for (int vc = 0; vc < 2; vc++) {
		if (!torus_ring_count(&l->vc[vc]))
			continue;
		snprintf(name, sizeof(name), "%slink %u->%u dim %u %c vc%d", indent, l->from, l->to, l->dim,
			 l->dir == TORUS_PLUS ? '+' : '-', vc);
		torus_ring_dump(&l->vc[vc], name, out);
	}
}

torus_vt_t torus_model_transfer(const struct torus_params *p, uint64_t m, uint32_t h, torus_vt_t t0)
{
	uint32_t pay = torus_params_payload(p);
	uint64_t full = m / pay, rest = m % pay;
	torus_vt_t sum = 0, smax = 0;

	if (h == 0)
		return t0;
	if (full) {
		smax = torus_ser_ps(p, torus_wire_bytes(p, pay));
		sum = full * smax;
	}
	if (rest || m == 0) {
		torus_vt_t s = torus_ser_ps(p, torus_wire_bytes(p, (uint32_t)rest));
		sum += s;
		if (s > smax)
			smax = s;
	}
	return t0 + sum + (torus_vt_t)(h - 1) * (smax + p->hop_latency_ps) + p->hop_latency_ps;
}

void torus_cost_init(struct torus_cost *c, const struct torus_params *p)
{
	for (uint32_t len = 0; len <= TORUS_MAX_PAYLOAD; len++) {
		c->wire[len] = torus_wire_bytes(p, len);
		c->ser[len] = torus_ser_ps(p, c->wire[len]);
	}
	c->hop_latency = p->hop_latency_ps;
}
