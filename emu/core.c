/*
 * The core side of the raw packet interface: identity, virtual clock,
 * sending into the core's injection FIFO, receiving from its reception FIFO,
 * and sleeping until either can move.
 */
#include "node.h"

#include <errno.h>
#include <string.h>
#include <time.h>

uint32_t emu_node_rank(const emu_core_t *c) { return c ? c->node->rank : 0; }
uint32_t emu_core_index(const emu_core_t *c) { return c ? c->index : 0; }
uint32_t emu_node_count(const emu_core_t *c) { return c ? c->node->hdr->nnodes : 0; }
const struct torus_shape *emu_shape(const emu_core_t *c) { return c ? &c->node->hdr->shape : NULL; }
const struct torus_params *emu_params(const emu_core_t *c) { return c ? c->node->params : NULL; }
torus_vt_t emu_core_now(const emu_core_t *c) { return c ? c->vt : 0; }

uint32_t emu_core_global(const emu_core_t *c) { return c ? c->global : 0; }
uint32_t emu_core_total(const emu_core_t *c) { return c ? c->node->first_core[c->node->hdr->nnodes] : 0; }

int emu_core_locate(const emu_core_t *c, uint32_t global, uint32_t *node, uint32_t *core)
{
	if (!c || !node || !core)
		return -EINVAL;
	return emu_rt_locate(c->node, global, node, core);
}

uint32_t emu_cores_of(const emu_core_t *c, uint32_t node)
{
	if (!c || node >= c->node->hdr->nnodes)
		return 0;
	return emu_shm_node(&c->node->shm, node)->ncores;
}

static void publish(emu_core_t *c)
{
	/* read by torusrun: the hang detector and the report */
	atomic_store_explicit(&c->shm->vt, c->vt, memory_order_relaxed);
	atomic_store_explicit(&c->shm->progress, ++c->progress, memory_order_relaxed);
}

int emu_core_compute(emu_core_t *c, torus_vt_t ps)
{
	if (!c)
		return -EINVAL;
	c->vt += ps;
	publish(c);
	return 0;
}

int emu_core_set_clock(emu_core_t *c, torus_vt_t t)
{
	if (!c)
		return -EINVAL;
	c->vt = t;
	publish(c);
	return 0;
}

int emu_pkt_send(emu_core_t *c, uint32_t node, uint32_t core, const void *buf, size_t len, uint16_t user,
		 uint16_t hints)
{
	struct torus_side *side;

	if (!c || (len && !buf) || len > torus_params_payload(c->node->params) ||
	    node >= c->node->hdr->nnodes || core >= emu_cores_of(c, node))
		return -EINVAL;
	emu_chaos(&c->chaos);
	for (uint32_t d = 0; d < TORUS_MAX_DIMS; d++) {
		uint32_t h = (hints >> (2 * d)) & 3u;
		if (h == 3 || (h && d >= c->node->hdr->shape.ndims))
			return -EINVAL;
	}
	if (emu_job_aborting(c->node))
		return -ECANCELED;
	struct torus_packet *pkt = torus_ring_reserve(&c->inj, &side);
	if (!pkt)
		return -EAGAIN;
	pkt->hdr.dest = node;
	pkt->hdr.len = (uint8_t)len;
	pkt->hdr.vc_kind = (uint8_t)(TORUS_PKT_RAW << 4);
	pkt->hdr.hints = hints;
	pkt->hdr.sw.raw.src = c->node->rank;
	pkt->hdr.sw.raw.dst_core = (uint8_t)core;
	pkt->hdr.sw.raw.src_core = (uint8_t)c->index;
	pkt->hdr.sw.raw.user = user;
	if (len)
		memcpy(pkt->payload, buf, len);
	side->vt = c->vt;
	side->tag = 0;
	side->aux = 0;
	torus_ring_commit(&c->inj);
	torus_ring_publish_head(&c->inj);
	atomic_store_explicit(&c->shm->sent, ++c->sent, memory_order_release);
	emu_bell_ring(&c->node->me->bell);
	publish(c);
	return 0;
}

int emu_pkt_recv(emu_core_t *c, struct emu_pkt_info *info, void *buf, size_t cap)
{
	struct torus_side *side;

	if (!c || !info || (cap && !buf))
		return -EINVAL;
	emu_chaos(&c->chaos);
	struct torus_packet *pkt = torus_ring_peek(&c->rx, &side);
	if (!pkt)
		return -EAGAIN;
	if (pkt->hdr.len > cap)
		return -EMSGSIZE;
	info->src_node = pkt->hdr.sw.raw.src;
	info->src_core = pkt->hdr.sw.raw.src_core;
	info->len = pkt->hdr.len;
	info->user = pkt->hdr.sw.raw.user;
	info->arrival = side->vt;
	if (pkt->hdr.len)
		memcpy(buf, pkt->payload, pkt->hdr.len);
	if (side->vt > c->vt)
		c->vt = side->vt;
	torus_ring_release(&c->rx);
	if (torus_ring_publish_tail(&c->rx))
		emu_bell_ring(&c->node->me->bell);
	atomic_store_explicit(&c->shm->received, ++c->received, memory_order_relaxed);
	publish(c);
	return 0;
}

static unsigned ready_events(emu_core_t *c, unsigned events)
{
	unsigned r = 0;
	if ((events & EMU_EV_RECV) && torus_ring_count(c->rx.ring))
		r |= EMU_EV_RECV;
	if ((events & EMU_EV_SEND) && c->inj.pos - atomic_load_explicit(&c->inj.ring->tail, memory_order_acquire) <= c->inj.mask)
		r |= EMU_EV_SEND;
	return r;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int emu_core_block(emu_core_t *c, const struct emu_wait *w, int timeout_ms)
{
	long long deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
	struct emu_bell *bell = &c->shm->bell;
	int r;

	for (uint32_t spin = 0; spin < EMU_IDLE_POLLS; spin++) {
		if ((r = w->ready(w->arg)))
			return r;
		emu_idle_poll(spin);
	}
	for (;;) {
		emu_chaos(&c->chaos);
		if ((r = w->ready(w->arg)))
			return r;
		if (emu_job_aborting(c->node))
			return -ECANCELED;
		int slice = EMU_SLEEP_SLICE_MS;
		if (deadline >= 0) {
			long long left = deadline - now_ms();
			if (left <= 0)
				return 0;
			if (left < slice)
				slice = (int)left;
		}
		uint32_t seq = emu_bell_prepare(bell);
		if (w->arm)
			w->arm(w->arg);
		if ((r = w->ready(w->arg))) {
			emu_bell_cancel(bell);
		} else {
			atomic_store_explicit(&c->shm->state, EMU_CORE_WAITING, memory_order_relaxed);
			emu_bell_sleep(bell, seq, slice);
			atomic_store_explicit(&c->shm->state, EMU_CORE_RUNNING, memory_order_relaxed);
		}
		if (w->disarm)
			w->disarm(w->arg);
		if (r)
			return r;
	}
}

struct core_wait {
	emu_core_t *c;
	unsigned events;
};

static int core_ready(void *arg)
{
	struct core_wait *cw = arg;
	return (int)ready_events(cw->c, cw->events);
}

static void core_arm(void *arg)
{
	struct core_wait *cw = arg;
	if (cw->events & EMU_EV_SEND)
		torus_ring_mark_full(&cw->c->inj); /* the engine rings us when it pops */
}

int emu_core_wait(emu_core_t *c, unsigned events, int timeout_ms, unsigned *holding)
{
	if (!c || !events || (events & ~(EMU_EV_SEND | EMU_EV_RECV)))
		return -EINVAL;
	struct core_wait cw = {c, events};
	struct emu_wait w = {core_ready, core_arm, NULL, &cw};
	int r = emu_core_block(c, &w, timeout_ms);
	if (r == 0)
		return -ETIMEDOUT;
	if (r < 0)
		return r;
	if (holding)
		*holding = (unsigned)r;
	return 0;
}

void emu_node_dump(const emu_core_t *c, FILE *out)
{
	if (!c || !out)
		return;
	struct emu_node_rt *rt = c->node;
	fprintf(out, "node %u: delivered %llu, engine moves %llu\n", rt->rank,
		(unsigned long long)atomic_load(&rt->me->delivered), (unsigned long long)atomic_load(&rt->me->progress));
	for (uint32_t i = 0; i < rt->nin; i++)
		torus_link_dump(rt->in[i].link, "  ", out);
}

int emu_link_read(const emu_core_t *c, uint32_t dim, uint32_t dir, struct torus_link_counters *out)
{
	if (!c || !out || dir > 1)
		return -EINVAL;
	const struct torus_shape *s = &c->node->hdr->shape;
	if (dim >= s->ndims || !torus_dim_has_links(s, dim))
		return -EINVAL;
	torus_link_read(emu_shm_link_out(&c->node->shm, c->node->rank, dim, dir), out);
	return 0;
}
