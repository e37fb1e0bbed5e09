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

/* Remove intervals [from, to), shifting the rest down. */
static void cal_drop(struct torus_calendar *cal, uint32_t from, uint32_t to)
{
	memmove(&cal->iv[from], &cal->iv[to], (cal->n - to) * sizeof(cal->iv[0]));
	cal->n -= to - from;
}

/* Interval a absorbs b (its neighbour after it). */
static void cal_absorb(struct torus_busy *a, const struct torus_busy *b)
{
	a->end = b->end;
	a->ready = a->ready > b->ready ? a->ready : b->ready;
	a->shared = a->shared > b->shared ? a->shared : b->shared;
}

/* Insert [s, e) for a packet ready at r at index i (there is room),
 * merging with touching neighbours. */
static void cal_insert(struct torus_calendar *cal, uint32_t i, torus_vt_t s, torus_vt_t e, torus_vt_t r)
{
	struct torus_busy *iv = cal->iv;
	int left = i > 0 && iv[i - 1].end == s, right = i < cal->n && iv[i].start == e;
	if (left) {
		iv[i - 1].end = e;
		if (r > iv[i - 1].ready)
			iv[i - 1].ready = r;
		if (right) {
			cal_absorb(&iv[i - 1], &iv[i]);
			cal_drop(cal, i, i + 1);
		}
	} else if (right) {
		iv[i].start = s;
		if (r > iv[i].ready)
			iv[i].ready = r;
	} else {
		memmove(&iv[i + 1], &iv[i], (cal->n - i) * sizeof(iv[0]));
		iv[i] = (struct torus_busy){s, e, r, 0};
		cal->n++;
	}
}

/* Full: the two neighbours with the smallest gap become one (the least
 * idle time is lost, which can only delay a later packet). */
static void cal_make_room(struct torus_calendar *cal)
{
	struct torus_busy *iv = cal->iv;
	uint32_t k = 0;
	/* (the smallest gap so far in a register: comparing against iv[k]
	 * reloaded it, and k, every step; half of reserve's time under bulk
	 * traffic, whose calendars are always full) */
	torus_vt_t best = iv[1].start - iv[0].end;
	for (uint32_t i = 1; i + 1 < cal->n; i++) {
		torus_vt_t gap = iv[i + 1].start - iv[i].end;
		if (gap < best) {
			best = gap;
			k = i;
		}
	}
	cal_absorb(&iv[k], &iv[k + 1]);
	cal_drop(cal, k + 1, k + 2);
}

/* Would [s, e) at index i need an interval of its own? */
static int cal_needs_slot(const struct torus_calendar *cal, uint32_t i, torus_vt_t s, torus_vt_t e)
{
	return !(i > 0 && cal->iv[i - 1].end == s) && !(i < cal->n && cal->iv[i].start == e);
}

/* The first interval that ends after t, by halving (the intervals are
 * sorted and disjoint); the last one must end after t. A scan of the 64 in
 * torus_calendar_share was 70% of its time in the 8x8x8 all-to-all. (A
 * branch-free halving was slower: each load waited for the one before.) */
static uint32_t cal_first_after(const struct torus_calendar *cal, torus_vt_t t)
{
	uint32_t lo = 0, hi = cal->n - 1;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (cal->iv[mid].end > t)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Where a packet ready at `ready` (before the calendar's end) fits, from
 * k = cal_first_after(ready): the first gap at or after ready that holds
 * ser, *t its start; returns the index it goes in at (n: after
 * everything). */
static uint32_t cal_fit(const struct torus_calendar *cal, uint32_t k, torus_vt_t ready, torus_vt_t ser, torus_vt_t *t)
{
	const struct torus_busy *iv = cal->iv;
	*t = ready;
	for (; k < cal->n && *t + ser > iv[k].start; k++)
		if (iv[k].end > *t)
			*t = iv[k].end;
	return k;
}

/* Reserve [t, t + ser) at index at (cal_fit's answer). */
static torus_vt_t cal_place(struct torus_calendar *cal, torus_vt_t ready, torus_vt_t ser, uint32_t at, torus_vt_t t)
{
	if (cal->n == TORUS_CAL_SLOTS && cal_needs_slot(cal, at, t, t + ser)) {
		cal_make_room(cal);
		return torus_calendar_reserve(cal, ready, ser);
	}
	cal_insert(cal, at, t, t + ser, ready);
	return t;
}

torus_vt_t torus_calendar_reserve(struct torus_calendar *cal, torus_vt_t ready, torus_vt_t ser)
{
	uint32_t n = cal->n;
	torus_vt_t t = ready;
	/* (the common case: after everything reserved so far, at = n) */
	uint32_t at = n && ready < cal->iv[n - 1].end ? cal_fit(cal, cal_first_after(cal, ready), ready, ser, &t) : n;
	return cal_place(cal, ready, ser, at, t);
}

void torus_calendar_forget(struct torus_calendar *cal, torus_vt_t before)
{
	uint32_t k = 0;
	while (k < cal->n && cal->iv[k].end <= before)
		k++;
	if (k)
		cal_drop(cal, 0, k);
}

/* Extend interval i by `more`, merging the ones it now reaches (their work
 * is pushed back after it). */
static void cal_extend(struct torus_calendar *cal, uint32_t i, torus_vt_t more)
{
	struct torus_busy *iv = cal->iv;
	iv[i].end += more;
	uint32_t k = i + 1;
	for (; k < cal->n && iv[k].start <= iv[i].end; k++) {
		torus_vt_t end = iv[i].end + (iv[k].end - iv[k].start);
		cal_absorb(&iv[i], &iv[k]);
		iv[i].end = end;
	}
	if (k > i + 1)
		cal_drop(cal, i + 1, k);
}

torus_vt_t torus_calendar_share(struct torus_calendar *cal, torus_vt_t ready, torus_vt_t ser)
{
	struct torus_busy *iv = cal->iv;
	uint32_t n = cal->n;
	if (n == 0 || ready >= iv[n - 1].end)
		return torus_calendar_reserve(cal, ready, ser);
	/* the stretch it runs into, and where reserve would put it */
	uint32_t i = cal_first_after(cal, ready);
	torus_vt_t t;
	uint32_t at = cal_fit(cal, i, ready, ser, &t);
	/* at most one packet late, or not out of order (everything in the
	 * stretch was ready no later than this packet): queue, as free_at does */
	if (t <= ready + ser || ready >= iv[i].ready)
		return cal_place(cal, ready, ser, at, t);
	/* out of order: share the stretch. One packet of it goes first; shared
	 * packets follow one another (the stretch's share frontier), and the
	 * stretch grows by ours */
	torus_vt_t start = (ready > iv[i].start ? ready : iv[i].start) + ser;
	if (start < iv[i].shared)
		start = iv[i].shared;
	cal_extend(cal, i, ser);
	iv[i].shared = start + ser;
	return start;
}

torus_vt_t torus_link_charge_cal_slow(struct torus_link *l, struct torus_calendar *cal, const struct torus_cost *c,
				      torus_vt_t ready, uint32_t payload)
{
	torus_vt_t ser = c->ser[payload];
	torus_vt_t start = torus_calendar_share(cal, ready, ser);
	/* free_at: the end of the calendar */
	torus_link_count(l, cal->iv[cal->n - 1].end, payload, c->wire[payload], ser);
	return start + ser + c->hop_latency;
}
