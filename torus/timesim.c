/*
 * The timing simulator (timesim.h): tests/refsim.c's model with its events
 * kept in a heap (a radix heap on time). This file is the simulation;
 * timesim_setup.c holds memory, creation and teardown, and
 * timesim_internal.h the structures they share.
 *
 * Every node has one queue per (output, input port); an output is a link
 * direction or local delivery. Candidates:
 *   - a local queue's head is a delivery at its ready time;
 *   - a link with packets waiting departs at max(free_at, the earliest
 *     ready time among its queues' heads).
 * Both change as packets come and go. A delivery's entry is its queue
 * head's, and is spent when it is popped. A link's candidate changes: a
 * changed one is pushed again, and an entry whose time is not the link's
 * candidate any more is skipped when it surfaces (lazy deletion; a link's
 * candidate never comes back to a time it left while its old entry waits,
 * except after a departure, and then the two equal entries name the same
 * departure, which the first one spends). Heap order is refsim's: time,
 * then deliveries before departures, then node, then port (deliveries) or
 * link (departures). The events wait in a timing wheel, and those past
 * its span in a radix heap on time with a binary heap on key for the
 * entries at the current time (see "heap" and "wheel" below).
 *
 * Memory layout, for speed: a big job keeps millions of packets waiting
 * (every core's posts queue up at its injection port faster than the links
 * drain them), so the cost of a hop is mostly cache misses, and the layout
 * is chosen to have few of them and to start them early:
 *   - each output of a node is one cache-aligned block: a header line (free
 *     time, candidate, round-robin pointer, bitmap of non-empty queues),
 *     then one line per input queue, holding the queue's first packet (32
 *     bytes; what else a packet carried follows from the queue it waits
 *     in, see struct pkt) and a ring buffer for the packets behind it;
 *   - on a machine of 512 nodes or more, the next few events are taken
 *     out of the wheel into a window ahead of time and what they will
 *     touch is prefetched (see "window"); a smaller one stays in the
 *     cache, and its events go straight from the wheel;
 *   - blocks and rings come from huge pages (timesim_setup.c);
 *   - routes are computed from coordinates rather than looked up in a
 *     table of nodes squared bytes.
 */
#include "timesim_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ heap */

/*
 * Event times only grow while the simulator runs: an event is never timed
 * before the one being handled, and one posted between runs is at or after
 * `now`, which is past every event taken. So the events sit in a radix
 * heap on time (Ahuja, Mehlhorn, Orlin and Tarjan): an entry goes to the
 * bucket of the highest hex digit in which its time differs from rlast,
 * the time of the entries last taken out, and of its value there; a push
 * is an append. When the entries at rlast (bucket 0) are spent, the first
 * non-empty bucket is spread out again from its smallest time. Bucket 0
 * is a binary heap on key, the order of ties (refsim's: deliveries before
 * departures, then node, then port or link). The 4-ary heap before it
 * spent 35% of the timekeeper's time on the 4 MiB allreduce. Digits
 * rather than bits: an entry is spread out at most once per digit, about
 * 2 times on average where it was 4 to 7 with one bucket per bit.
 */

/* Bucket i > 0: e joins (the bucket keeps its smallest time, so that
 * finding the next time is a look at the first non-empty bucket). */
static inline int rb_append(struct timesim *s, size_t i, struct entry e)
{
	struct rbucket *b = &s->rb[i];
	if (b->n == b->cap && ts_grow(&b->e, &b->cap, 16))
		return -ENOMEM;
	if (!b->n++) {
		s->occ[(i - 1) / 64] |= 1ull << ((i - 1) % 64);
		b->mint = e.t;
	} else if (e.t < b->mint) {
		b->mint = e.t;
	}
	b->e[b->n - 1] = e;
	return 0;
}

/* Bucket 0, by key: e joins. */
static int b0_insert(struct rbucket *b, struct entry e)
{
	if (b->n == b->cap && ts_grow(&b->e, &b->cap, 16))
		return -ENOMEM;
	size_t i = b->n++;
	while (i > 0 && e.key < b->e[(i - 1) / 2].key) {
		b->e[i] = b->e[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	b->e[i] = e;
	return 0;
}

static size_t bucket_of(torus_vt_t t, torus_vt_t last)
{
	if (t == last)
		return 0;
	unsigned level = (63u - (unsigned)__builtin_clzll(t ^ last)) / 4;
	return 1 + 16 * level + (size_t)((t >> (4 * level)) & 15u);
}

static int rh_push(struct timesim *s, struct entry e)
{
	if (e.t < s->rlast)
		return -EINVAL; /* in the past: cannot happen (see above) */
	size_t i = bucket_of(e.t, s->rlast);
	int rc = i ? rb_append(s, i, e) : b0_insert(&s->rb[0], e);
	if (rc)
		return rc;
	s->nheap++;
	return 0;
}

/* The first non-empty bucket after 0 (the heap holds something). */
static size_t first_bucket(const struct timesim *s)
{
	size_t w = 0;
	while (!s->occ[w])
		w++;
	return 1 + 64 * w + (size_t)__builtin_ctzll(s->occ[w]);
}

/* The earliest time in the heap, without taking anything out (a peek must
 * not move rlast: events may still be posted before the next one). */
static torus_vt_t heap_min_time(const struct timesim *s)
{
	if (!s->nheap)
		return TIMESIM_NEVER;
	if (s->rb[0].n)
		return s->rlast;
	return s->rb[first_bucket(s)].mint;
}

/* The first entry (bucket 0 refilled if it ran dry), or NULL. */
static const struct entry *heap_top(struct timesim *s)
{
	if (!s->nheap)
		return NULL;
	if (!s->rb[0].n) {
		size_t i = first_bucket(s);
		struct rbucket *b = &s->rb[i];
		torus_vt_t m = b->mint;
		s->rlast = m;
		s->occ[(i - 1) / 64] &= ~(1ull << ((i - 1) % 64));
		for (size_t j = 0; j < b->n; j++) {
			/* to lower buckets (an append that fails loses the
			 * entry: the run ends with -ENOMEM) */
			size_t to = bucket_of(b->e[j].t, m);
			if ((to ? rb_append(s, to, b->e[j]) : b0_insert(&s->rb[0], b->e[j])) != 0)
				return NULL;
		}
		b->n = 0;
	}
	return &s->rb[0].e[0];
}

/* Take the first entry out (heap_top first). */
static void heap_pop(struct timesim *s)
{
	struct rbucket *b = &s->rb[0];
	struct entry e = b->e[--b->n];
	s->nheap--;
	size_t i = 0, n = b->n;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && b->e[c + 1].key < b->e[c].key)
			c++;
		if (e.key <= b->e[c].key)
			break;
		b->e[i] = b->e[c];
		i = c;
	}
	if (n)
		b->e[i] = e;
}


/* ----------------------------------------------------------------- wheel */

/*
 * Nearly every event is pushed less than a packet's serialisation and a
 * hop ahead of the one being handled, so the events sit in a timing wheel
 * first: slots of 2^wshift picoseconds, a few events each, covering twice
 * that reach (timesim_setup.c, wheel_init). A push is an append to its
 * slot; when the run (the entries of the slot taken last, sorted by time
 * then key) is spent, the next non-empty slot is sorted and becomes the
 * run. An entry for the run's slot or before it (one pushed at the time
 * being handled) is inserted into the run in its place. Entries past the
 * wheel's span go to the radix heap above, and the next entry is the
 * earlier of the run's first and the radix heap's. Against the radix
 * heap alone, an entry is moved once rather than spread out about twice
 * and then sifted through a binary heap of ties.
 */

static int ent_less(struct entry a, struct entry b)
{
	return a.t < b.t || (a.t == b.t && a.key < b.key);
}

/* e into l in its place (first: l's first size). */
static int elist_insert(struct elist *l, struct entry e, size_t first)
{
	int rc = ts_elist_room(l, first);
	if (rc)
		return rc;
	size_t i = l->n++;
	while (i > l->h && ent_less(e, l->e[i - 1])) {
		l->e[i] = l->e[i - 1];
		i--;
	}
	l->e[i] = e;
	return 0;
}

static int wheel_push(struct timesim *s, struct entry e)
{
	if (!s->wcount && s->run.h == s->run.n) {
		/* empty: the wheel moves up to the present (nothing is pushed
		 * before the event being handled, or between runs before now),
		 * so that it spans what comes next however long it stood idle */
		torus_vt_t t0 = s->cur > s->now ? s->cur : s->now;
		if (t0 >> s->wshift > s->wcur)
			s->wcur = t0 >> s->wshift;
	}
	uint64_t a = e.t >> s->wshift;
	if (a <= s->wcur)
		return elist_insert(&s->run, e, 64);
	if (a - s->wcur >= s->nslots) {
		s->st.beyond++;
		return rh_push(s, e);
	}
	uint32_t i = (uint32_t)a & s->wmask;
	struct wslot *w = &s->slot[i];
	if (w->n == w->cap && ts_grow(&w->e, &w->cap, 8))
		return -ENOMEM;
	if (!w->n)
		s->wocc[i / 64] |= 1ull << (i % 64);
	w->e[w->n++] = e;
	s->wcount++;
	return 0;
}

/* The first non-empty slot after wcur (some slot holds entries), as its
 * distance from wcur. */
static uint32_t wheel_next(const struct timesim *s)
{
	uint32_t from = (uint32_t)(s->wcur + 1) & s->wmask, w = from / 64;
	uint64_t m = s->wocc[w] & (~0ull << (from % 64));
	while (!m) { /* (back at the first word, its bits before `from` count) */
		w = w + 1 == s->nwocc ? 0 : w + 1;
		m = s->wocc[w];
	}
	return (w * 64 + (uint32_t)__builtin_ctzll(m) - (uint32_t)s->wcur) & s->wmask;
}

/* Insertion sort of e[0 .. n) by time, then key, until it has moved
 * entries more than budget places in all; the places moved. */
static size_t insertion_sort(struct entry *e, size_t n, size_t budget)
{
	size_t moves = 0;
	for (size_t k = 1; k < n && moves <= budget; k++) {
		struct entry x = e[k];
		size_t j = k;
		while (j > 0 && ent_less(x, e[j - 1])) {
			e[j] = e[j - 1];
			j--;
		}
		e[j] = x;
		moves += k - j;
	}
	return moves;
}

/* Sort e[0 .. n) by time, then key: insertion sort for a few, quicksort
 * (median of three, the smaller side first) for more. */
static void sort_entries(struct entry *e, size_t n)
{
	while (n > 16) {
		size_t mid = n / 2;
		struct entry a = e[0], b = e[mid], c = e[n - 1], p;
		p = ent_less(a, b) ? (ent_less(b, c) ? b : ent_less(a, c) ? c : a) : (ent_less(a, c) ? a : ent_less(b, c) ? c : b);
		size_t i = 0, j = n - 1;
		for (;;) {
			while (ent_less(e[i], p))
				i++;
			while (ent_less(p, e[j]))
				j--;
			if (i >= j)
				break;
			struct entry x = e[i];
			e[i++] = e[j];
			e[j--] = x;
		}
		/* e[0 .. j] <= p <= e[j + 1 .. n) */
		size_t left = j + 1;
		if (left < n - left) {
			sort_entries(e, left);
			e += left;
			n -= left;
		} else {
			sort_entries(e + left, n - left);
			n = left;
		}
	}
	insertion_sort(e, n, SIZE_MAX);
}

/* The run is spent and the wheel holds entries: the next slot becomes
 * the run. */
static void wheel_turn(struct timesim *s)
{
	uint32_t i = (uint32_t)(s->wcur + wheel_next(s)) & s->wmask;
	struct wslot *w = &s->slot[i];
	/* the run is spent: the slot's array becomes the run, the run's the slot's */
	struct entry *e = w->e;
	size_t n = w->n, cap = w->cap;
	s->wcur += (i - (uint32_t)s->wcur) & s->wmask;
	w->e = s->run.e;
	w->cap = s->run.cap;
	w->n = 0;
	s->run = (struct elist){e, 0, n, cap};
	s->wocc[i / 64] &= ~(1ull << (i % 64));
	s->wcount -= n;
	/* a slot's entries mostly come in order (a link's next departure is
	 * pushed one packet after the one before): insertion sort while it
	 * stays cheap, else sort them all */
	if (insertion_sort(e, n, 8 * (size_t)n) > 8 * (size_t)n)
		sort_entries(e, n);
}

/* *top: the next entry if it comes before limit, from the run or the
 * radix heap (*heap says which), or NULL. 0 or -ENOMEM. */
static int q_top(struct timesim *s, torus_vt_t limit, const struct entry **top, int *heap)
{
	if (s->run.h == s->run.n && s->wcount)
		wheel_turn(s);
	const struct entry *r = s->run.h < s->run.n ? &s->run.e[s->run.h] : NULL;
	*heap = 0;
	*top = NULL;
	if (s->nheap) {
		torus_vt_t hm = heap_min_time(s);
		if (!r || hm <= r->t) {
			if (hm >= limit)
				return 0; /* (and the run's first is no earlier) */
			/* taking the heap's top moves its rlast to hm, which is
			 * before limit and no later than the run's first: no
			 * later than anything pushed from here on */
			const struct entry *h = heap_top(s);
			if (!h)
				return -ENOMEM;
			if (!r || ent_less(*h, *r)) {
				*heap = 1;
				*top = h;
				return 0;
			}
		}
	}
	if (r && r->t < limit)
		*top = r;
	return 0;
}

static void q_pop(struct timesim *s, int heap)
{
	if (heap)
		heap_pop(s);
	else
		s->run.h++;
}

/* The earliest time among the wheel and the radix heap, taking nothing
 * out and moving nothing. */
static torus_vt_t q_min_time(const struct timesim *s)
{
	torus_vt_t m = heap_min_time(s);
	if (s->run.h < s->run.n)
		return s->run.e[s->run.h].t < m ? s->run.e[s->run.h].t : m;
	if (s->wcount) {
		const struct wslot *w = &s->slot[(uint32_t)(s->wcur + wheel_next(s)) & s->wmask];
		for (size_t k = 0; k < w->n; k++) {
			if (w->e[k].t < m)
				m = w->e[k].t;
		}
	}
	return m;
}

static size_t q_size(const struct timesim *s) { return s->nheap + s->wcount + (s->run.n - s->run.h); }

enum { CLS_DELIVERY, CLS_DEPARTURE };
/* (always inlined: as functions of their own, GCC finds them free of side
 * effects, a prefetch not counting as one, and drops the calls) */
#define PREFETCHER static inline __attribute__((always_inline)) void
PREFETCHER prefetch_event(const struct timesim *s, uint64_t key);
PREFETCHER prefetch_packet(const struct timesim *s, uint64_t key);

/*
 * The window (machines of 512 nodes and more: s->far): the next few
 * events, taken out of the wheel or the heap ahead of time and kept
 * sorted (time, then key), so that what they will touch can be
 * loaded while the ones before them are handled: a big torus's events
 * each miss the cache a few times, one miss waiting for the other, and
 * only several events' misses in flight at once keep the simulator from
 * waiting on memory most of the time. An entry enters at the back
 * (prefetch_event: its output's header and queue) and has its packet
 * loaded two places from the front (prefetch_packet).
 *
 * Every entry in the window comes before every entry in the wheel and
 * the heap, so the window's front is the next event. An event
 * pushed before the window's last entry (one at the very time being
 * handled, or one posted between runs) is inserted in its place; the
 * window may then grow past WIN_AHEAD, and drains back to it.
 */
#define WIN_AHEAD 8

/* An event joins: the window if it comes before the window's last, else the heap. */
static int heap_push(struct timesim *s, torus_vt_t t, uint64_t key)
{
	struct entry e = {t, key};
	int rc;
	if (s->win.n > s->win.h && ent_less(e, s->win.e[s->win.n - 1])) {
		if ((rc = elist_insert(&s->win, e, 4 * WIN_AHEAD)) != 0)
			return rc;
	} else if ((rc = wheel_push(s, e)) != 0) {
		return rc;
	}
	size_t pending = q_size(s) + (s->win.n - s->win.h);
	if (pending > s->st.heap_max)
		s->st.heap_max = pending;
	return 0;
}

/* Fill the window to WIN_AHEAD from the heap. 0 or -ENOMEM. */
static int win_fill(struct timesim *s)
{
	while (s->win.n - s->win.h < WIN_AHEAD && q_size(s)) {
		int heap;
		const struct entry *top;
		if (q_top(s, TIMESIM_NEVER, &top, &heap) || !top || ts_elist_room(&s->win, 4 * WIN_AHEAD))
			return -ENOMEM;
		struct entry e = *top;
		q_pop(s, heap);
		s->win.e[s->win.n++] = e;
		prefetch_event(s, e.key);
	}
	return 0;
}

/* The earliest pending event's time (TIMESIM_NEVER: none). */
static torus_vt_t ev_min_time(const struct timesim *s)
{
	return s->win.n > s->win.h ? s->win.e[s->win.h].t : q_min_time(s);
}

/*
 * An entry's key: class << 62 | node << 32 | port or link << 12 | guess.
 * The guess (a departure's: the port round robin would pick at its time,
 * as things stand when it is pushed) only tells prefetch_event where to
 * look; it sits below the rest, so it orders only entries that name the
 * same departure, of which the first spends it.
 */
static uint64_t key_of(uint32_t cls, uint32_t node, uint32_t idx, uint32_t guess)
{
	return (uint64_t)cls << 62 | (uint64_t)node << 32 | (uint64_t)idx << 12 | (guess & 0xFFFu);
}
static uint32_t key_node(uint64_t key) { return (uint32_t)((key >> 32) & 0x3FFFFFFFu); }
static uint32_t key_idx(uint64_t key) { return (uint32_t)((key >> 12) & 0xFFFFFu); }

/* Stage one: the output's header and the queue the event will take from. */
PREFETCHER prefetch_event(const struct timesim *s, uint64_t key)
{
	const struct node *nd = &s->nodes[key_node(key)];
	uint32_t idx = key_idx(key);
	if (key >> 62 == CLS_DEPARTURE) {
		struct out *O = out_of(nd, idx);
		__builtin_prefetch(O);
		__builtin_prefetch(&queues_of(nd, O)[key & 0xFFFu]);
		return;
	}
	__builtin_prefetch(&queues_of(nd, out_of(nd, s->lout))[idx]);
}

static uint32_t route(const struct timesim *s, const struct node *nd, uint32_t dest);

/* Stage two, once the event's queue is in the cache: the packet that
 * will follow its head, and for a departure, the queues at the next node
 * that its head will join (both VCs' ports: they share the line pair). */
PREFETCHER prefetch_packet(const struct timesim *s, uint64_t key)
{
	const struct node *nd = &s->nodes[key_node(key)];
	uint32_t idx = key_idx(key);
	if (key >> 62 != CLS_DEPARTURE) {
		const struct queue *q = &queues_of(nd, out_of(nd, s->lout))[idx];
		if (q->n > 1)
			__builtin_prefetch(&q->buf[q->head]);
		return;
	}
	struct out *O = out_of(nd, idx);
	const struct queue *q = &queues_of(nd, O)[key & 0xFFFu];
	if (!q->n)
		return;
	if (q->n > 1)
		__builtin_prefetch(&q->buf[q->head]);
	if (!s->far)
		return; /* a small machine stays in the cache: the route below would only cost */
	const struct node *nx = &s->nodes[O->nbr];
	uint32_t dest = q->first.dest;
	uint32_t out = dest == O->nbr ? s->lout : torus_route_apply_hints(route(s, nx, dest), q->first.hints);
	struct out *NO = out_of(nx, out);
	__builtin_prefetch(NO);
	__builtin_prefetch(&queues_of(nx, NO)[2 * idx]);
	__builtin_prefetch(&queues_of(nx, NO)[2 * idx + 1]);
}

/* Is the heap's top entry still the candidate it was pushed for? (A
 * delivery's always is.) */
static int entry_current(const struct timesim *s, const struct entry *e)
{
	if (e->key >> 62 != CLS_DEPARTURE)
		return 1;
	return out_of(&s->nodes[key_node(e->key)], key_idx(e->key))->cand == e->t;
}

/* --------------------------------------------------------------- packets */




/* The first link of the dimension-order route from nd to dest (not nd):
 * torus_route_table's answer, without its nodes-squared table. */
static uint32_t route(const struct timesim *s, const struct node *nd, uint32_t dest)
{
	const uint32_t *cd = &s->coords[(size_t)dest * s->ndims];
	for (uint32_t d = 0; d < s->ndims; d++) {
		uint32_t a = nd->coords[d], b = cd[d], n = s->cfg.shape->dims[d];
		if (a == b)
			continue;
		uint32_t fwd = b > a ? b - a : b + n - a; /* torus_ring_delta */
		int plus = 2 * fwd < n || (2 * fwd == n && a % 2 == 0);
		return 2 * d + (plus ? TORUS_PLUS : TORUS_MINUS);
	}
	return 0; /* cannot happen: dest is another node */
}

/* The output at node n for a packet to dest arriving on from_link
 * (GEN_NONE: injected); sets *vc for the hop. */
static uint32_t output(const struct timesim *s, uint32_t n, uint32_t dest, uint16_t hints, uint32_t from_link,
		       uint32_t *vc)
{
	const struct node *nd = &s->nodes[n];
	if (dest == n)
		return s->lout;
	uint32_t l = torus_route_apply_hints(route(s, nd, dest), hints), wrap = (nd->wrap >> l) & 1u;
	if (!(from_link == l && !wrap))
		*vc = wrap;
	return l;
}

/* The port a departure will likely take (for prefetch_event): the first
 * non-empty one after the round-robin pointer, ready or not, which under
 * load is the one taken, for the price of a bit scan. */
static uint32_t guess(const struct node *nd, struct out *L)
{
	uint32_t start = L->rr + 1 == nd->nports ? 0 : L->rr + 1;
	const uint64_t *bits = bits_of(L);
	for (uint32_t w = start / 64, i = 0; i <= nd->nwords; i++, w = w + 1 == nd->nwords ? 0 : w + 1) {
		uint64_t m = bits[w];
		if (i == 0)
			m &= ~0ull << (start % 64);
		if (m)
			return w * 64 + (uint32_t)__builtin_ctzll(m);
	}
	return 0;
}

/* The link's departure candidate after its queues or free_at changed. */
static int link_update(struct timesim *s, uint32_t n, uint32_t l)
{
	struct node *nd = &s->nodes[n];
	struct out *L = out_of(nd, l);
	torus_vt_t r = TIMESIM_NEVER;
	if (L->waiting) {
		const struct queue *q = queues_of(nd, L);
		const uint64_t *bits = bits_of(L);
		for (uint32_t w = 0; w < nd->nwords; w++)
			for (uint64_t m = bits[w]; m; m &= m - 1) {
				torus_vt_t hrt = q[w * 64 + (uint32_t)__builtin_ctzll(m)].first.ready;
				if (hrt < r)
					r = hrt;
			}
	}
	if (r == TIMESIM_NEVER) {
		L->cand = TIMESIM_NEVER;
		return 0;
	}
	torus_vt_t t = r > L->free_at ? r : L->free_at;
	if (t == L->cand)
		return 0;
	L->cand = t;
	return heap_push(s, t, key_of(CLS_DEPARTURE, n, l, guess(nd, L)));
}

static int push(struct timesim *s, uint32_t n, uint32_t out, uint32_t port, const struct pkt *k)
{
	struct node *nd = &s->nodes[n];
	struct out *O = out_of(nd, out);
	struct queue *q = &queues_of(nd, O)[port];
	if (q->n) {
		/* behind another: into the ring; no candidate changes */
		uint32_t rn = q->n - 1;
		if (!q->buf || rn == q->mask + 1) {
			int rc = ts_q_grow(&s->ar, q, rn);
			if (rc)
				return rc;
		}
		q->buf[(q->head + rn) & q->mask] = *k;
		__builtin_prefetch(&q->buf[(q->head + rn + 1) & q->mask], 1); /* (the next push writes beside it) */
		q->n++;
		return 0;
	}
	q->first = *k;
	q->n = 1;
	O->waiting++;
	bits_of(O)[port / 64] |= 1ull << (port % 64);
	if (out == s->lout)
		return heap_push(s, k->ready, key_of(CLS_DELIVERY, n, port, 0));
	/* a new head can only bring the departure forward, to max(free_at,
	 * its ready time): what link_update would find, without the scan */
	struct out *L = O;
	torus_vt_t t = k->ready > L->free_at ? k->ready : L->free_at;
	if (t >= L->cand)
		return 0;
	L->cand = t;
	return heap_push(s, t, key_of(CLS_DEPARTURE, n, out, port));
}

/* Take the head of a queue out (into *k). */
static uint32_t pop(struct node *nd, uint32_t out, uint32_t port, struct pkt *k)
{
	struct out *O = out_of(nd, out);
	struct queue *q = &queues_of(nd, O)[port];
	uint32_t g = q->gen;
	*k = q->first;
	if (--q->n) {
		q->first = q->buf[q->head];
		q->head = (q->head + 1) & q->mask;
		/* the one after: in cache by the time it is the head */
		if (q->n > 1)
			__builtin_prefetch(&q->buf[q->head]);
		return g;
	}
	O->waiting--;
	bits_of(O)[port / 64] &= ~(1ull << (port % 64));
	return g;
}

/* ------------------------------------------------------------ get requests */

static int greq_new(struct timesim *s, uint32_t origin, uint64_t reply_len, uint64_t *id)
{
	if (s->greq_free == UINT32_MAX) {
		if (s->ngreq == s->greq_cap) {
			uint32_t nc = s->greq_cap ? 2 * s->greq_cap : 16;
			struct greq *ng = nc > s->greq_cap ? realloc(s->greq, (size_t)nc * sizeof(*ng)) : NULL;
			if (!ng)
				return -ENOMEM;
			s->greq = ng;
			s->greq_cap = nc;
		}
		s->greq[s->ngreq].next_free = UINT32_MAX;
		s->greq_free = s->ngreq++;
	}
	uint32_t i = s->greq_free;
	s->greq_free = s->greq[i].next_free;
	s->greq[i].origin = origin;
	s->greq[i].reply_len = reply_len;
	*id = i;
	return 0;
}

static struct greq greq_take(struct timesim *s, uint64_t id)
{
	struct greq g = s->greq[id];
	s->greq[id].next_free = s->greq_free;
	s->greq_free = (uint32_t)id;
	return g;
}

/* ----------------------------------------------------------- generators */

/* Queue generator g's next packet at node n, if it has one and none waits. */
static int gen_next(struct timesim *s, uint32_t n, uint32_t g)
{
	struct node *nd = &s->nodes[n];
	struct gen *G = &nd->gens[g];
	if (G->busy || G->head == G->n)
		return 0;
	struct job *j = &G->jobs[G->head];
	struct pkt k;
	k.ready = j->ready > G->cursor ? j->ready : G->cursor;
	k.kind = (uint8_t)j->kind;
	k.dest = j->dest;
	k.cookie = j->cookie;
	k.index = j->index++;
	k.hints = j->hints;
	if (j->kind == PK_GETREQ) {
		int rc = greq_new(s, j->origin, j->reply_len, &k.index);
		if (rc)
			return rc;
		k.len = (uint8_t)s->cfg.getreq_bytes;
		j->rest = 0;
	} else {
		k.len = (uint8_t)(j->rest > s->pay ? s->pay : j->rest);
		j->rest -= k.len;
	}
	uint32_t vc = 0;
	uint32_t out = output(s, n, k.dest, k.hints, GEN_NONE, &vc);
	G->busy = 1;
	if (j->rest == 0 && ++G->head == G->n)
		G->head = G->n = 0; /* its last packet is on its way; the queue is empty */
	return push(s, n, out, G->port, &k);
}

/* Generator g's packet k left its origin at `left`: the next one is ready then. */
static int gen_left(struct timesim *s, uint32_t n, uint32_t g, const struct pkt *k, torus_vt_t left)
{
	struct node *nd = &s->nodes[n];
	struct gen *G = &nd->gens[g];
	G->busy = 0;
	if (left > G->cursor)
		G->cursor = left;
	if (g != nd->ngens - 1 && s->cfg.hooks.left)
		s->cfg.hooks.left(s->cfg.hooks.arg, n, k->cookie, k->kind == PK_GETREQ ? 0 : k->len, left);
	return gen_next(s, n, g);
}

static int gen_add(struct timesim *s, uint32_t n, uint32_t g, const struct job *j)
{
	struct gen *G = &s->nodes[n].gens[g];
	if (G->n == G->cap) {
		if (G->head > G->cap / 2) {
			/* most of it is done: close the gap instead of growing */
			memmove(G->jobs, G->jobs + G->head, (G->n - G->head) * sizeof(*G->jobs));
			G->n -= G->head;
			G->head = 0;
		} else {
			size_t nc = G->cap ? 2 * G->cap : 8;
			struct job *nj = realloc(G->jobs, nc * sizeof(*nj));
			if (!nj)
				return -ENOMEM;
			G->jobs = nj;
			G->cap = nc;
		}
	}
	G->jobs[G->n++] = *j;
	return gen_next(s, n, g);
}

/* ---------------------------------------------------------------- events */

static int deliver(struct timesim *s, uint32_t n, uint32_t port, torus_vt_t t)
{
	struct node *nd = &s->nodes[n];
	struct pkt k;
	uint32_t g = pop(nd, s->lout, port, &k);
	int rc = 0;
	const struct queue *q = &queues_of(nd, out_of(nd, s->lout))[port];
	if (q->n)
		rc = heap_push(s, q->first.ready, key_of(CLS_DELIVERY, n, port, 0));
	s->st.deposits++;
	if (k.kind == PK_GETREQ) {
		/* the reply: the data back to the requester, from this node's reply queue */
		struct greq gr = greq_take(s, k.index);
		struct job j = {k.cookie, gr.reply_len, 0, t, PK_DATA, gr.origin, n, 0, k.hints};
		if (rc == 0 && !(s->cfg.hooks.request && s->cfg.hooks.request(s->cfg.hooks.arg, n, k.cookie, t)))
			rc = gen_add(s, n, nd->ngens - 1, &j);
	} else if (s->cfg.hooks.deposit) {
		s->cfg.hooks.deposit(s->cfg.hooks.arg, n, k.cookie, k.index, k.len, t);
	}
	if (g != GEN_NONE && rc == 0)
		rc = gen_left(s, n, g, &k, t);
	return rc;
}

/* Round robin: the first non-empty queue of link l after the port served
 * last whose head is ready by t, going round once; UINT32_MAX: none. */
static uint32_t rr_pick(const struct node *nd, uint32_t l, torus_vt_t t)
{
	struct out *L = out_of(nd, l);
	const uint64_t *bits = bits_of(L);
	const struct queue *q = queues_of(nd, L);
	uint32_t rr = L->rr, start = rr + 1 == nd->nports ? 0 : rr + 1;
	if (nd->nwords == 1) {
		/* the usual case: the ports at and after start, then those before */
		uint64_t hi = bits[0] & (~0ull << start), lo = bits[0] & ~(~0ull << start);
		for (uint64_t m = hi; m; m &= m - 1)
			if (q[__builtin_ctzll(m)].first.ready <= t)
				return (uint32_t)__builtin_ctzll(m);
		for (uint64_t m = lo; m; m &= m - 1)
			if (q[__builtin_ctzll(m)].first.ready <= t)
				return (uint32_t)__builtin_ctzll(m);
		return UINT32_MAX;
	}
	for (uint32_t pass = 0; pass < 2; pass++) {
		uint32_t from = pass ? 0 : start, to = pass ? start : nd->nports;
		for (uint32_t w = from / 64; from < to && w <= (to - 1) / 64; w++) {
			uint64_t m = bits[w];
			if (w == from / 64)
				m &= ~0ull << (from % 64);
			for (; m; m &= m - 1) {
				uint32_t p = w * 64 + (uint32_t)__builtin_ctzll(m);
				if (p >= to)
					break;
				if (q[p].first.ready <= t)
					return p;
			}
		}
	}
	return UINT32_MAX;
}

static int depart(struct timesim *s, uint32_t n, uint32_t l, torus_vt_t t)
{
	struct node *nd = &s->nodes[n];
	struct out *L = out_of(nd, l);
	uint32_t port = rr_pick(nd, l, t);
	if (port == UINT32_MAX)
		return -EFAULT; /* cannot happen: t was chosen from a head */
	struct pkt k;
	uint32_t g = pop(nd, l, port, &k);
	L->rr = port;
	const struct torus_cost *c = L->cost;
	torus_vt_t end = t + c->ser[k.len];
	L->free_at = end;
	L->cand = TIMESIM_NEVER; /* its entry is spent */
	s->st.hops++;
	if (s->cfg.hooks.hop)
		s->cfg.hooks.hop(s->cfg.hooks.arg, n, l, t, end, c->wire[k.len], k.len, k.cookie, k.kind == PK_GETREQ);
	/* its VC on this hop: the port's, or if it was injected here, the
	 * one it entered the dimension on */
	uint32_t vc = port < nd->first_core_port ? !(port & 1u) : (nd->wrap >> l) & 1u;
	uint32_t next = L->nbr;
	struct pkt moved = k;
	k.ready = end + c->hop_latency;
	uint32_t out = output(s, next, k.dest, k.hints, l, &vc);
	int rc = push(s, next, out, 2 * l + (vc ? 0 : 1), &k);
	if (rc == 0)
		rc = link_update(s, n, l);
	if (rc == 0 && g != GEN_NONE)
		rc = gen_left(s, n, g, &moved, end);
	return rc;
}

/* ------------------------------------------------------------------- API */




int timesim_post(struct timesim *s, const struct timesim_xfer *x)
{
	if (!s || !x || x->kind < TIMESIM_RAW || x->kind > TIMESIM_MEMFIFO || x->src_node >= s->nnodes ||
	    x->dst_node >= s->nnodes || x->src_core >= s->cfg.cores[x->src_node])
		return -EINVAL;
	if (x->kind == TIMESIM_RAW ? x->len > s->pay : x->fifo >= s->cfg.params->inj_fifos)
		return -EINVAL;
	for (uint32_t d = 0; d < TORUS_MAX_DIMS; d++) {
		uint32_t h = (x->hints >> (2 * d)) & 3u;
		if (h == 3 || (h && d >= s->cfg.shape->ndims))
			return -EINVAL;
	}
	if (x->ready < s->now)
		return -ERANGE;
	struct node *nd = &s->nodes[x->src_node];
	if (x->kind == TIMESIM_RAW) {
		struct pkt k = {x->ready, x->cookie, 0, x->dst_node, x->hints, (uint8_t)x->len, PK_DATA};
		uint32_t vc = 0;
		uint32_t out = output(s, x->src_node, k.dest, k.hints, GEN_NONE, &vc);
		return push(s, x->src_node, out, nd->first_core_port + x->src_core * (1 + s->cfg.params->inj_fifos), &k);
	}
	struct job j = {x->cookie, x->len, 0, x->ready, x->kind == TIMESIM_GET ? PK_GETREQ : PK_DATA, x->dst_node,
			x->src_node, x->kind == TIMESIM_GET ? x->len : 0, x->hints};
	return gen_add(s, x->src_node, x->src_core * s->cfg.params->inj_fifos + x->fifo, &j);
}

torus_vt_t timesim_next(struct timesim *s)
{
	/* (a stale departure may still be in it: the time is then early) */
	return ev_min_time(s);
}

int timesim_run(struct timesim *s, torus_vt_t limit)
{
	if (!s)
		return -EINVAL;
	torus_vt_t last = s->now;
	for (;;) {
		if (atomic_load_explicit(&s->cancel, memory_order_relaxed))
			return -ECANCELED;
		struct entry e;
		if (s->far) {
			if (win_fill(s))
				return -ENOMEM;
			if (s->win.n == s->win.h || s->win.e[s->win.h].t >= limit)
				break;
			e = s->win.e[s->win.h++];
			if (s->win.n - s->win.h > 2)
				prefetch_packet(s, s->win.e[s->win.h + 2].key);
		} else {
			/* a small machine stays in the cache: no window */
			int heap;
			const struct entry *top;
			if (q_top(s, limit, &top, &heap))
				return -ENOMEM;
			if (!top)
				break;
			e = *top;
			q_pop(s, heap);
		}
		torus_vt_t t = e.t;
		if (!entry_current(s, &e)) {
			s->st.stale++;
			continue;
		}
		uint32_t n = key_node(e.key), idx = key_idx(e.key);
		s->st.events++;
		last = s->cur = t;
		int rc;
		if (e.key >> 62 == CLS_DEPARTURE) {
			rc = depart(s, n, idx, t);
		} else {
			rc = deliver(s, n, idx, t);
		}
		if (rc)
			return rc;
		if (s->stop) {
			/* events at t may remain: everything before t is final */
			s->stop = 0;
			if (t > s->now)
				s->now = t;
			return 0;
		}
	}
	/* everything before limit is done; with no limit, everything before
	 * the last event (events at its time may still be added after it) */
	torus_vt_t now = limit == TIMESIM_NEVER ? last + 1 : limit;
	if (now > s->now)
		s->now = now;
	return 0;
}

