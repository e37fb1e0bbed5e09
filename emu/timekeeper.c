/*
 * The timekeeper (docs/exact-engine-plan.md):
 * one thread of torusrun that times the whole job with the exact model
 * (torus/timesim.h), while the node engines move the bytes.
 *
 * Cores tell it what they put on the network, at their virtual clocks
 * (events), and ask it what they can observe (queries). It simulates as
 * far as is safe and no further:
 *
 *   - a running core's next post is ready no earlier than its clock plus
 *     inj_overhead, so packets earlier than the smallest such time are
 *     final (the horizon);
 *   - a core that asks what it can observe at time t (a receive) is
 *     answered once everything up to t is final;
 *   - a core that waits for an arrival resumes at it: the simulation
 *     stops at that arrival (timesim_stop), and that core's clock bounds
 *     the horizon again.
 *
 * Nothing here depends on the host's timing: the answers are a function of
 * the cores' events and queries alone, which are a function of the
 * answers. So every run of a deterministic program gives the same times.
 */
#include "emu_internal.h"
#include "node.h" /* emu_stash_mix */
#include "../torus/timesim.h"
#include "unit.h"
#include <torus/trace.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NLINKS (2 * TORUS_MAX_DIMS)
#define TK_QTYPES (EMU_TKQ_PKT + 1)

/* Arrivals of one queue of a core not yet in its ring, in arrival order. */
struct tk_queue {
	struct emu_tk_arr *arr;
	size_t narr, head, cap;
};

/* Arrivals of memory-FIFO packets sent in any order (EMU_TK_MSG_ANY), by
 * name, until the core says it waited for them (EMU_TK_WAITED kind 2):
 * open addressing, linear probing, at most half full. */
struct tk_pkt {
	uint64_t src, name, index; /* src + 1: 0 marks an empty slot */
	torus_vt_t t;
};
struct tk_pkts {
	struct tk_pkt *slot;
	size_t n, cap;
};

/* A step of a program (EMU_TK_STEP): after mark `mark` of counter id
 * (UINT64_MAX: none), nev events from pool index ev, its clock end after
 * them (times from its start). */
struct tk_step {
	uint64_t mark;
	uint32_t id, nev;
	torus_vt_t end;
	size_t ev;
};
struct tk_stream {
	struct tk_step *s;
	size_t n, cap, head;
	uint32_t handled;
};

struct tk_core {
	struct emu_tk_core *sh;
	struct emu_core_shm *cs;
	uint32_t node, core;
	uint32_t qseen;       /* the query number taken last */
	int waiting;          /* a query is pending */
	uint32_t qtype, qn;
	torus_vt_t qvt, qdeadline;
	uint64_t qkey;
	uint32_t qids[EMU_TKQ_MAX_IDS], qmarks[EMU_TKQ_MAX_IDS];
	int blocked;          /* EMU_TKQ_CTR_WAIT, _MARK_WAIT, _CTR_OR_RECV: nothing answers at qvt; the
			       * first change (or arrival, or the deadline) does */
	int arrived_bar;      /* EMU_TKQ_BARRIER: counted at its barrier */
	/* a blocked wait's answer found ahead of the simulation (a counter that
	 * reaches zero, or a mark crossed, as a packet finishes leaving): it
	 * answers at zero_at (counter or pair zero_which; a mark crossed at
	 * zero_xt) unless something else does first; TIMESIM_NEVER: none */
	torus_vt_t zero_at, zero_xt;
	uint32_t zero_which;
	torus_vt_t clock;     /* running: lower bound on its next action */
	torus_vt_t qlead;     /* its query's emu_core_lead */
	torus_vt_t lead_until; /* no action before this (its last answer plus that lead) */
	/* emu_core_expect: it acts on nothing before its raw arrivals number
	 * `expect`; until then a running core sets no bound, and a waiter
	 * answered by an arrival does not stop the simulation */
	uint64_t raw_arrived, expect;
	torus_vt_t kept_at;   /* the arrival that kept its last promise: it acts after it */
	int done;
	int in_pace;          /* EMU_TKQ_PACE: in tk->pace */
	torus_vt_t lim;       /* simulate only before this, for this core's sake */
	uint32_t run;         /* 0: a query waits on the bound; 1: a running core */
	struct tk_queue q[EMU_TK_NQ];
	struct tk_fifo *fifo; /* per injection FIFO: its descriptors not known to be done long ago */
	uint32_t rf;          /* EMU_TK_REFUSE: for its next descriptor (an index + 1 into tk->rf) */
	/* its last answer, for the report of an event it posts too late */
	uint32_t last_qtype;
	torus_vt_t last_vt, last_now;
	/* the answer, until it is published (publish) */
	uint32_t afound;
	torus_vt_t avt;
	struct {
		int64_t value;
		uint64_t hits;
		uint32_t which;
		torus_vt_t t;
	} a;
	int pub;              /* in tk->pubq */
	/* plans (emu_core_declare_begin): the wait its plan declared, taken as
	 * asked (qseen is its number) until the core asks it; an answer to it
	 * found before that is held */
	int declared, held;
	/* a program (EMU_TKQ_PROGRAM): its streams' steps and their events;
	 * while it runs, the wait the timekeeper asks for it (porder: the
	 * stream of each pair) */
	struct tk_stream *pst;
	struct emu_tk_ev *pev;
	size_t npev, cappev;
	uint32_t fill, fill_stream; /* events of the step being received still to come */
	int prog, prog_done;
	uint32_t nprog, porder[EMU_TK_PLANS];
	/* deferred waits (EMU_TK_WAITED): waiting on one from its ring (its
	 * events behind it are read once it is answered), and the answer to
	 * its last one, from which its events marked EMU_TK_EV_REL are timed */
	int defer_wait;
	torus_vt_t base;
	/* EMU_TKQ_PKT: the packet it waits for (src, message, index), and the
	 * arrivals of those sent to it in any order */
	uint64_t pkt_src, pkt_name, pkt_index;
	struct tk_pkts pkts;
};

/* What a destination refuses of an unchecked descriptor (EMU_TK_REFUSE;
 * errors are enum dma_error values, 0: none). */
struct tk_refuse {
	int32_t all, ctr, req, range;
	uint32_t region, req_region;
	uint64_t limit, off, req_off;
};

/* A refused deposit's report to the core that posted it (struct dma_fault). */
struct tk_fault {
	int32_t error;
	uint32_t node, region, len;
	uint64_t offset;
};

/* An injection FIFO's descriptors (xfer indices, TK_COPY_DONE | ready for
 * a local copy), in post order, from the first that may be pending. */
struct tk_fifo {
	uint64_t *d;
	uint32_t head, n, cap;
};

struct emu_tk {
	struct emu_shm *m;
	pthread_t thread;
	int threaded;         /* emu_tk_start: its thread runs; emu_tk_open: the caller's rounds */
	_Atomic int stop;
	int failed;
	struct timesim *ts;
	struct tk_core *c;
	uint32_t ncores;
	uint32_t *first;      /* global rank of each node's core 0 */
	uint32_t *cores;      /* per node (the simulator keeps a pointer to it) */
	struct torus_cost *costs;
	const struct torus_cost **link_cost;
	uint64_t *busy;       /* per node and link: virtual time busy */
	struct emu_trace **trace; /* --trace: a writer per node, else NULL */
	torus_vt_t *free_at;
	/* each core's bound: the time up to which it lets the simulation run
	 * (struct tk_core: lim, run), and a tree of the smallest (its root:
	 * tree[1]; leaves at P + core; waiters before running cores at ties) */
	uint32_t *tree, P;
	/* DMA transfers (cookie DMA_COOKIE | index) and counters in virtual
	 * time: per node, by node-wide id */
	struct tk_xfer *xf;
	size_t nxf, capxf;
	struct tk_ctr **ctr;
	struct tk_timer *timer; /* local copies to complete: a heap by (t, seq) */
	size_t ntimer, captimer;
	uint64_t timer_seq;
	struct tk_barrier *bar; /* barriers with members waiting */
	size_t nbar, capbar;
	struct tk_refuse *rf;   /* refusals of unchecked descriptors (tk_xfer.rf) */
	size_t nrf, caprf;
	/* EMU_TKQ_PACE: the cores waiting for the simulation to reach their
	 * qdeadline, a heap by it (core indices) */
	uint32_t *pace;
	uint32_t npace;
	/* answers to publish (flush) */
	uint32_t *pubq, npub;
	size_t cappub;
	struct emu_tk_plan plan; /* the one being followed, copied from the core */
	uint64_t events, queries, paced, sleeps, rounds, planned, deferred;
	uint64_t by_type[TK_QTYPES]; /* queries answered, by type (TORUS_TK_DEBUG) */
	int prog_err;             /* a program that could not be run (try_answer has no error path) */
	int rounds_err;           /* emu_tk_rounds: the error that stopped it, for every later call */
	uint64_t sim_ns, sleep_ns; /* wall time simulating, and asleep (TORUS_TK_DEBUG) */
	uint64_t cpu_ns;          /* the timekeeper thread's CPU time, at its end */
	/* emu_tk_progress: published at the end of every round that moved */
	_Atomic uint64_t pub_now, pub_events, pub_hops, pub_sim_ns, pub_wait_vt;
	_Atomic uint32_t pub_wait, pub_wait_query;
};

#define DMA_COOKIE (1ull << 63)
#define NO_CTR UINT32_MAX

struct tk_xfer {
	uint32_t kind, src_node, dst_node, inj, rec, tag;
	uint32_t src_core, dst_core; /* memory FIFO: who sent it, to which core */
	uint64_t ready;              /* memory FIFO: the message's name (EMU_TK_MSG_ANY) */
	uint64_t len, left;          /* bytes, and bytes that have left its node */
	torus_vt_t done;             /* when it was fully injected; TIMESIM_NEVER until then */
	uint32_t rf;                 /* unchecked and (partly) refused: index + 1 into tk->rf */
};
#define TK_COPY_DONE (1ull << 63)

/* A counter in virtual time. Changes are applied as they come: the
 * network's in time order, a core's when the timekeeper reads them (at the
 * core's clock, which can be up to one lookahead, inj_overhead, behind the
 * simulation). So the decrements of the last lookahead are kept, and a
 * read at time q undoes those later than q. Reads come no earlier than
 * that: every core's clock is within a lookahead of the simulation. */
struct tk_dec {
	torus_vt_t t;
	int64_t delta;
};
struct tk_ctr {
	int64_t value;
	uint64_t hits;
	torus_vt_t changed;   /* when it last changed */
	struct tk_dec *dec;   /* recent decrements, in time order: [head, n) */
	uint32_t head, n, cap;
	/* watermarks (dma_counter_watch): level[0..nl) and when each was
	 * crossed, the first `crossed` of them */
	int64_t *level;
	torus_vt_t *xvt;
	uint32_t nl, crossed;
	uint32_t nset;        /* levels given so far (they come in order) */
};

/* A local copy's counter decrement, at t (after the network's events at t). */
struct tk_timer {
	torus_vt_t t;
	uint64_t seq;
	uint32_t node, rec;
	int64_t len;
	uint32_t fcore;     /* a fault for this core (global rank) instead; UINT32_MAX: a copy */
	struct tk_fault f;
};

struct tk_barrier {
	uint64_t key;
	uint32_t n, arrived;
	torus_vt_t max;
	uint32_t *members;    /* global core ranks, arrived so far */
};

/* Where a counter change comes from (ctr_change, marks_crossed): a core's
 * event or a copy's timer, outside the simulation; the simulation's
 * current event, at its time (stop the simulation where it answers); or
 * the current event, at a later time (a packet finishes leaving: answers
 * at that time wait until the simulation gets there, as something else
 * may answer first). */
enum { CH_OUTSIDE, CH_RUN, CH_AHEAD };

static void ctr_change(struct emu_tk *tk, uint32_t node, uint32_t id, int64_t delta, torus_vt_t t, int alloc,
		       int in_run);

static uint64_t raw_cookie(uint32_t src_global, uint32_t dst_core, uint32_t id)
{
	return (uint64_t)src_global << 40 | (uint64_t)(dst_core & 0xFF) << 32 | id;
}

static void on_hop(void *arg, uint32_t node, uint32_t link, torus_vt_t start, torus_vt_t end, uint32_t wire,
		   uint32_t payload, uint64_t cookie, int request)
{
	struct emu_tk *tk = arg;
	size_t i = (size_t)node * NLINKS + link;
	tk->busy[i] += end - start;
	tk->free_at[i] = end;
	if (tk->trace) {
		uint32_t kind = TORUS_PKT_RAW, tag = 0;
		if (cookie & DMA_COOKIE) {
			const struct tk_xfer *x = &tk->xf[cookie & ~DMA_COOKIE];
			kind = request ? emu_node_unit.getreq_kind : emu_node_unit.tk_kind[x->kind];
			tag = x->tag;
		}
		emu_trace_packet(tk->trace[node], link, start, end, payload, wire, kind, tag);
	}
}

static int bound_less(const struct emu_tk *tk, uint32_t a, uint32_t b)
{
	if (b == UINT32_MAX)
		return a != UINT32_MAX;
	if (a == UINT32_MAX)
		return 0;
	const struct tk_core *x = &tk->c[a], *y = &tk->c[b];
	return x->lim < y->lim || (x->lim == y->lim && x->run < y->run);
}

static torus_vt_t add_sat(torus_vt_t a, torus_vt_t b) { return a > TIMESIM_NEVER - b ? TIMESIM_NEVER : a + b; }

/* Room for one more element in arr (n used of *cap, elem bytes each):
 * arr, or arr doubled (from `first`), or NULL if out of memory (arr stays). */
static void *grow(void *arr, size_t *cap, size_t n, size_t elem, size_t first)
{
	if (n < *cap)
		return arr;
	size_t nc = *cap ? 2 * *cap : first;
	void *na = realloc(arr, nc * elem);
	if (na)
		*cap = nc;
	return na;
}

/* Core k's bound changed (or may have): recompute it and its tree path. */
static void rebound(struct emu_tk *tk, struct tk_core *k)
{
	if (k->done) {
		k->lim = TIMESIM_NEVER;
		k->run = 1;
	} else if (!k->waiting && k->raw_arrived < k->expect) {
		k->lim = TIMESIM_NEVER;
		k->run = 1;
	} else if (!k->waiting || k->qtype == EMU_TKQ_PACE) {
		/* its next post is ready no earlier than its clock plus
		 * inj_overhead (counter changes: see struct tk_ctr), nor
		 * before the end of the work it promised after its last
		 * answer (emu_core_lead); a core that waits to be paced posts
		 * next */
		k->lim = add_sat(k->clock > k->lead_until ? k->clock : k->lead_until, tk->m->hdr->params.inj_overhead_ps);
		k->run = 1;
	} else {
		/* answerable once everything up to its time (or deadline) is final;
		 * a barrier or a blocked counter wait, when something answers it */
		torus_vt_t upto = k->qtype == EMU_TKQ_WAIT_RECV || (k->qtype == EMU_TKQ_CTR_OR_RECV && k->blocked)
					  ? k->qdeadline
				  : k->qtype == EMU_TKQ_BARRIER || k->qtype == EMU_TKQ_PKT ||
						    ((k->qtype == EMU_TKQ_CTR_WAIT || k->qtype == EMU_TKQ_MARK_WAIT) && k->blocked)
					  ? TIMESIM_NEVER
					  : k->qvt;
		if (k->zero_at < upto)
			upto = k->zero_at;
		k->lim = add_sat(upto, 1);
		k->run = 0;
	}
	uint32_t pos = tk->P + (uint32_t)(k - tk->c);
	for (pos /= 2; pos; pos /= 2) {
		uint32_t a = tk->tree[2 * pos], b = tk->tree[2 * pos + 1];
		tk->tree[pos] = bound_less(tk, b, a) ? b : a;
	}
}

/* Move arrivals of queue qi waiting here into core k's ring while it has room. */
static void refill(struct tk_core *k, uint32_t qi)
{
	struct emu_tk_aq *aq = &k->sh->aq[qi];
	struct tk_queue *q = &k->q[qi];
	uint32_t head = atomic_load_explicit(&aq->head, memory_order_relaxed);
	uint32_t tail = atomic_load_explicit(&aq->tail, memory_order_acquire);
	uint32_t n = 0;
	while (q->head < q->narr && head - tail < EMU_TK_ARR_SLOTS) {
		aq->arr[head % EMU_TK_ARR_SLOTS] = q->arr[q->head++];
		head++;
		n++;
	}
	if (q->head == q->narr)
		q->head = q->narr = 0;
	/* before the arrivals: a core that sees them and no overflow is right */
	atomic_store_explicit(&aq->over, (uint32_t)(q->narr - q->head), memory_order_relaxed);
	if (n) /* pairs with the core's acquire load of head */
		atomic_store_explicit(&aq->head, head, memory_order_release);
}

static void refill_all(struct tk_core *k)
{
	for (uint32_t qi = 0; qi < EMU_TK_NQ; qi++)
		refill(k, qi);
}

/* The earliest arrival of queue qi core k has not taken, or TIMESIM_NEVER. */
static torus_vt_t first_arrival(const struct tk_core *k, uint32_t qi)
{
	const struct emu_tk_aq *aq = &k->sh->aq[qi];
	const struct tk_queue *q = &k->q[qi];
	uint32_t head = atomic_load_explicit(&aq->head, memory_order_relaxed);
	uint32_t tail = atomic_load_explicit(&aq->tail, memory_order_acquire);
	if (head != tail)
		return aq->arr[tail % EMU_TK_ARR_SLOTS].t;
	return q->head < q->narr ? q->arr[q->head].t : TIMESIM_NEVER;
}

/* Core k has an answer to publish (flush); a program's core can have a
 * chain of them in one flush, so the queue grows. */
static void pub_push(struct emu_tk *tk, struct tk_core *k)
{
	if (k->pub)
		return;
	void *p = grow(tk->pubq, &tk->cappub, tk->npub + 1, sizeof(*tk->pubq), 64);
	if (!p) {
		tk->prog_err = -ENOMEM;
		return;
	}
	tk->pubq = p;
	k->pub = 1;
	tk->pubq[tk->npub++] = (uint32_t)(k - tk->c);
}

/* Answer core k's query: its clock becomes vt. The answer is published by
 * flush (after the simulator's run, when a plan of the core's can be
 * timed). */
static void answer(struct emu_tk *tk, struct tk_core *k, int found, torus_vt_t vt)
{
	if (k->defer_wait) {
		/* a wait from its ring: nothing to publish; what it told after
		 * it is timed from here, and read in the next round */
		k->defer_wait = 0;
		k->waiting = 0;
		k->zero_at = TIMESIM_NEVER;
		k->base = vt > k->qvt ? vt : k->qvt;
		k->clock = k->base > k->clock ? k->base : k->clock;
		k->lead_until = k->base;
		rebound(tk, k);
		tk->deferred++;
		_Atomic uint64_t *w = emu_shm_tk_dirty(tk->m) + (uint32_t)(k - tk->c) / 64;
		atomic_fetch_or_explicit(w, 1ull << ((uint32_t)(k - tk->c) % 64), memory_order_relaxed);
		return;
	}
	k->afound = (uint32_t)found;
	k->avt = vt;
	k->waiting = 0;
	k->zero_at = TIMESIM_NEVER;
	k->last_qtype = k->qtype;
	k->last_vt = vt;
	k->last_now = timesim_now(tk->ts);
	/* a query it asked under a promise the simulation has seen kept: it
	 * takes that arrival before it acts */
	k->clock = vt > k->kept_at ? vt : k->kept_at;
	k->lead_until = add_sat(vt, k->qlead);
	rebound(tk, k);
	tk->queries++;
	if (k->qtype < TK_QTYPES)
		tk->by_type[k->qtype]++;
	pub_push(tk, k);
}

/* ------------------------------------------------ packets sent in any order */

static size_t pkt_home(const struct tk_pkts *h, uint64_t src, uint64_t name, uint64_t index)
{
	return (size_t)emu_stash_mix(src << 32 ^ index, name) & (h->cap - 1);
}

/* The slot of packet (src, name, index), or SIZE_MAX. */
static size_t pkt_find(const struct tk_pkts *h, uint64_t src, uint64_t name, uint64_t index)
{
	if (!h->n)
		return SIZE_MAX;
	for (size_t i = pkt_home(h, src, name, index);; i = (i + 1) & (h->cap - 1)) {
		const struct tk_pkt *p = &h->slot[i];
		if (!p->src)
			return SIZE_MAX;
		if (p->src == src + 1 && p->name == name && p->index == index)
			return i;
	}
}

static int pkt_put(struct tk_pkts *h, uint64_t src, uint64_t name, uint64_t index, torus_vt_t t)
{
	if (2 * (h->n + 1) > h->cap) {
		struct tk_pkts g = {calloc(h->cap ? 2 * h->cap : 64, sizeof(struct tk_pkt)), 0, h->cap ? 2 * h->cap : 64};
		if (!g.slot)
			return -ENOMEM;
		for (size_t i = 0; i < h->cap; i++)
			if (h->slot[i].src && pkt_put(&g, h->slot[i].src - 1, h->slot[i].name, h->slot[i].index, h->slot[i].t))
				return -ENOMEM; /* (it cannot: g has room) */
		free(h->slot);
		*h = g;
	}
	size_t i = pkt_home(h, src, name, index);
	while (h->slot[i].src)
		i = (i + 1) & (h->cap - 1);
	h->slot[i] = (struct tk_pkt){src + 1, name, index, t};
	h->n++;
	return 0;
}

/* Forget slot i, moving back the entries of its run that it displaced. */
static void pkt_del(struct tk_pkts *h, size_t i)
{
	size_t mask = h->cap - 1;
	for (size_t j = (i + 1) & mask; h->slot[j].src; j = (j + 1) & mask) {
		size_t home = pkt_home(h, h->slot[j].src - 1, h->slot[j].name, h->slot[j].index);
		/* j's entry may move to i if its home is not in (i, j] (cyclically) */
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			h->slot[i] = h->slot[j];
			i = j;
		}
	}
	h->slot[i].src = 0;
	h->n--;
}

/* Core k waits for packet (pkt_src, pkt_name, pkt_index): answer it if the
 * packet has arrived (1), else 0. */
static int pkt_answer(struct emu_tk *tk, struct tk_core *k)
{
	size_t i = pkt_find(&k->pkts, k->pkt_src, k->pkt_name, k->pkt_index);
	if (i == SIZE_MAX)
		return 0;
	torus_vt_t t = k->pkts.slot[i].t;
	pkt_del(&k->pkts, i);
	answer(tk, k, 1, t > k->qvt ? t : k->qvt);
	return 1;
}

/* A packet sent to core k in any order arrived at t: kept by name; a core
 * waiting for it resumes there, and nothing later is safe until it acts. */
static void arrive_any(struct emu_tk *tk, struct tk_core *k, uint64_t src, uint64_t name, uint64_t index, torus_vt_t t)
{
	if (pkt_put(&k->pkts, src, name, index, t)) {
		tk->failed = -ENOMEM;
		timesim_stop(tk->ts);
		return;
	}
	if (k->waiting && k->qtype == EMU_TKQ_PKT && pkt_answer(tk, k))
		timesim_stop(tk->ts);
}

/* Arrival a of queue qi at core k: into its ring (arrivals are final as
 * they happen, and in order); a core waiting for it resumes there. */
static void arrive(struct emu_tk *tk, struct tk_core *k, uint32_t qi, const struct emu_tk_arr *a, int in_run)
{
	struct tk_queue *q = &k->q[qi];
	if (q->narr == q->cap) {
		if (q->head > q->cap / 2) {
			memmove(q->arr, q->arr + q->head, (q->narr - q->head) * sizeof(*q->arr));
			q->narr -= q->head;
			q->head = 0;
		} else {
			size_t nc = q->cap ? 2 * q->cap : 64;
			struct emu_tk_arr *na = realloc(q->arr, nc * sizeof(*na));
			if (!na) {
				tk->failed = -ENOMEM;
				if (in_run)
					timesim_stop(tk->ts);
				return;
			}
			q->arr = na;
			q->cap = nc;
		}
	}
	q->arr[q->narr++] = *a;
	refill(k, qi);
	int promised = 0, kept = 0;
	if (qi == EMU_TK_Q_RAW && k->raw_arrived++ < k->expect) {
		promised = 1;
		kept = k->raw_arrived == k->expect;
		if (kept) {
			k->kept_at = a->t;
			if (k->clock < a->t)
				k->clock = a->t; /* it takes this one before it may act */
		}
	}
	if (k->waiting && k->qkey == qi &&
	    (k->qtype == EMU_TKQ_WAIT_RECV || (k->qtype == EMU_TKQ_CTR_OR_RECV && k->blocked))) {
		/* it resumes at this arrival: nothing later is safe until it acts,
		 * unless it promised to wait for more */
		k->a.which = k->qn;
		answer(tk, k, 1, a->t > k->qvt ? a->t : k->qvt);
		if (in_run && (!promised || kept))
			timesim_stop(tk->ts);
	} else if (kept && !k->waiting) {
		rebound(tk, k); /* it may act from here */
		if (in_run)
			timesim_stop(tk->ts);
	}
}

/* Core k's blocked wait is answered at `at` (pair which; a mark crossed at
 * xt) unless something answers it earlier: hold that until the simulation
 * gets there, and stop the run so that its limit takes k's new bound. */
static void defer(struct emu_tk *tk, struct tk_core *k, torus_vt_t at, uint32_t which, torus_vt_t xt)
{
	if (at >= k->zero_at)
		return;
	k->zero_at = at;
	k->zero_which = which;
	k->zero_xt = xt;
	rebound(tk, k);
	timesim_stop(tk->ts);
}

static int timer_less(const struct tk_timer *a, const struct tk_timer *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int timer_push(struct emu_tk *tk, struct tk_timer x)
{
	struct tk_timer *nt = grow(tk->timer, &tk->captimer, tk->ntimer, sizeof(*nt), 64);
	if (!nt)
		return -ENOMEM;
	tk->timer = nt;
	x.seq = tk->timer_seq++;
	size_t i = tk->ntimer++;
	for (; i > 0 && timer_less(&x, &tk->timer[(i - 1) / 2]); i = (i - 1) / 2)
		tk->timer[i] = tk->timer[(i - 1) / 2];
	tk->timer[i] = x;
	return 0;
}

/*
 * A deposit refused at node `at` at time t: the report reaches the core
 * that posted it (global rank g) one hop_latency per hop later, on the side:
 * it takes no link's bandwidth (faults are rare, and BG/P reports them out
 * of band).
 */
static int fault(struct emu_tk *tk, uint32_t at, uint32_t g, const struct tk_fault *f, torus_vt_t t)
{
	const struct emu_shm_hdr *h = tk->m->hdr;
	torus_vt_t d = (torus_vt_t)torus_hops(&h->shape, at, tk->c[g].node) * h->params.hop_latency_ps;
	return timer_push(tk, (struct tk_timer){.t = add_sat(t, d), .fcore = g, .f = *f});
}

/* Is packet `index` (len bytes) of transfer x refused where it is deposited,
 * at node `at`? Then report it (1). */
static int refused(struct emu_tk *tk, const struct tk_xfer *x, uint32_t at, uint64_t index, uint32_t len, torus_vt_t t)
{
	const struct tk_refuse *r = &tk->rf[x->rf - 1];
	struct tk_fault f = {0, at, UINT32_MAX, len, 0};
	if (x->kind == EMU_TK_MEMFIFO) {
		f.error = r->all;
	} else {
		/* a put's packet, or a get's reply packet at the requester: the
		 * region, then the packet's range, then the counter */
		uint64_t off = r->off + index * torus_params_payload(&tk->m->hdr->params);
		f.region = r->region;
		f.offset = off;
		f.error = r->all                                    ? r->all
			  : off > r->limit || len > r->limit - off ? r->range
								   : r->ctr;
	}
	if (!f.error)
		return 0;
	int rc = fault(tk, at, tk->first[x->src_node] + x->src_core, &f, t);
	if (rc)
		tk->failed = rc;
	/* advance() delivers it: nothing after it may be simulated first */
	timesim_stop(tk->ts);
	return 1;
}

/* A get's request at its target: refused, the report goes back and no
 * reply is sent. */
static int on_request(void *arg, uint32_t node, uint64_t cookie, torus_vt_t t)
{
	struct emu_tk *tk = arg;
	if (!(cookie & DMA_COOKIE))
		return 0;
	const struct tk_xfer *x = &tk->xf[cookie & ~DMA_COOKIE];
	if (!x->rf || !tk->rf[x->rf - 1].req)
		return 0;
	const struct tk_refuse *r = &tk->rf[x->rf - 1];
	struct tk_fault f = {r->req, node, r->req_region, (uint32_t)x->len, r->req_off};
	int rc = fault(tk, node, tk->first[x->src_node] + x->src_core, &f, t);
	if (rc)
		tk->failed = rc;
	timesim_stop(tk->ts); /* (as in refused) */
	return 1;
}

static void on_deposit(void *arg, uint32_t node, uint64_t cookie, uint64_t index, uint32_t len, torus_vt_t t)
{
	struct emu_tk *tk = arg;
	if (cookie & DMA_COOKIE) {
		/* a put's packet at its destination, a get's reply at the
		 * requester, a memory-FIFO packet at its core */
		const struct tk_xfer *x = &tk->xf[cookie & ~DMA_COOKIE];
		if (x->rf && refused(tk, x, node, index, len, t))
			return;
		if (x->kind == EMU_TK_MEMFIFO && (x->ready & EMU_TK_MSG_ANY)) {
			arrive_any(tk, &tk->c[tk->first[node] + x->dst_core], x->src_node, x->ready, index, t);
		} else if (x->kind == EMU_TK_MEMFIFO) {
			struct emu_tk_arr a = {t, (uint64_t)x->src_node << 8 | x->src_core, x->ready, index};
			arrive(tk, &tk->c[tk->first[node] + x->dst_core], EMU_TK_Q_MEMFIFO, &a, 1);
		} else if (x->rec != NO_CTR && len) {
			ctr_change(tk, node, x->rec, -(int64_t)len, t, 0, CH_RUN);
		}
		return;
	}
	uint32_t src_global = (uint32_t)(cookie >> 40), dst_core = (uint32_t)(cookie >> 32) & 0xFF;
	const struct tk_core *src = &tk->c[src_global];
	struct emu_tk_arr a = {t, (uint64_t)src->node << 8 | src->core, (uint32_t)cookie, 0};
	arrive(tk, &tk->c[tk->first[node] + dst_core], EMU_TK_Q_RAW, &a, 1);
}

/* A DMA packet left its node: its injection counter counts it, and its
 * descriptor is done when it was the last (a get: its request). */
static void on_left(void *arg, uint32_t node, uint64_t cookie, uint32_t len, torus_vt_t t)
{
	struct emu_tk *tk = arg;
	if (!(cookie & DMA_COOKIE))
		return;
	struct tk_xfer *x = &tk->xf[cookie & ~DMA_COOKIE];
	x->left += len;
	if (x->kind == EMU_TK_GET || x->left >= x->len)
		x->done = t;
	if (x->inj != NO_CTR && len)
		ctr_change(tk, node, x->inj, -(int64_t)len, t, 0, CH_AHEAD); /* (t: when it finished leaving) */
}

/* Is core k waiting for counter id of its node to be zero? */
static int waits_for(const struct tk_core *k, uint32_t id, uint32_t *which)
{
	for (uint32_t i = 0; i < k->qn; i++)
		if (k->qids[i] == id) {
			*which = i;
			return 1;
		}
	return 0;
}

/* Counter c's value at time q (q no earlier than a lookahead before now). */
static int64_t value_at(const struct tk_ctr *c, torus_vt_t q)
{
	int64_t v = c->value;
	for (uint32_t i = c->n; i > c->head && c->dec[i - 1].t > q; i--)
		v -= c->dec[i - 1].delta;
	return v;
}

/* The first time after q at which counter c became zero, among the changes
 * made so far; TIMESIM_NEVER if none. */
static torus_vt_t zero_after(const struct tk_ctr *c, torus_vt_t q)
{
	int64_t v = value_at(c, q);
	for (uint32_t i = c->head; i < c->n; i++) {
		if (c->dec[i].t <= q)
			continue;
		v += c->dec[i].delta;
		if (v == 0)
			return c->dec[i].t;
	}
	return TIMESIM_NEVER;
}

/* The mark of query pair i of core k: crossed by time q? */
static int mark_by(const struct emu_tk *tk, const struct tk_core *k, uint32_t i, torus_vt_t q, torus_vt_t *t)
{
	const struct tk_ctr *c = &tk->ctr[k->node][k->qids[i]];
	if (k->qmarks[i] >= c->crossed || c->xvt[k->qmarks[i]] > q)
		return 0;
	*t = c->xvt[k->qmarks[i]];
	return 1;
}

/* The earliest crossing among core k's marks by time q (ties: the first
 * pair): 1 and *which, *t; 0 if none. */
static int first_mark(const struct emu_tk *tk, const struct tk_core *k, torus_vt_t q, uint32_t *which, torus_vt_t *t)
{
	int found = 0;
	torus_vt_t best = 0;
	for (uint32_t i = 0; i < k->qn; i++) {
		torus_vt_t x;
		if (mark_by(tk, k, i, q, &x) && (!found || x < best)) {
			found = 1;
			*which = i;
			best = x;
		}
	}
	if (found)
		*t = best;
	return found;
}

/* Counter (node, id) fell to its next marks at t: record them, and answer
 * the cores of its node blocked on one of them. */
static void marks_crossed(struct emu_tk *tk, uint32_t node, uint32_t id, struct tk_ctr *c, torus_vt_t t, int in_run)
{
	while (c->crossed < c->nl && c->value <= c->level[c->crossed])
		c->xvt[c->crossed++] = t;
	for (uint32_t g = tk->first[node]; g < tk->first[node + 1]; g++) {
		struct tk_core *k = &tk->c[g];
		uint32_t which;
		torus_vt_t x;
		if (k->waiting && k->qtype == EMU_TKQ_MARK_WAIT && k->blocked && waits_for(k, id, &which) &&
		    first_mark(tk, k, TIMESIM_NEVER, &which, &x)) {
			if (in_run == CH_AHEAD) {
				defer(tk, k, x > k->qvt ? x : k->qvt, which, x);
				continue;
			}
			k->a.which = which;
			k->a.t = x;
			answer(tk, k, 1, x > k->qvt ? x : k->qvt);
			if (in_run)
				timesim_stop(tk->ts);
		}
	}
}

/* Counter (node, id) gets n watermarks (ev CTR_WATCH), or level i is
 * `level` (CTR_LEVEL; the last one also crosses those it stands at). */
static int watch_op(struct emu_tk *tk, uint32_t node, const struct emu_tk_ev *ev)
{
	struct tk_ctr *c = &tk->ctr[node][ev->rec];
	if (ev->type == EMU_TK_CTR_WATCH) {
		if (ev->id > UINT32_MAX)
			return -EPROTO;
		free(c->level);
		free(c->xvt);
		c->level = NULL;
		c->xvt = NULL;
		c->nl = c->crossed = c->nset = 0;
		if (!ev->id)
			return 0;
		if (!(c->level = malloc(ev->id * sizeof(int64_t))) || !(c->xvt = malloc(ev->id * sizeof(torus_vt_t))))
			return -ENOMEM;
		c->nl = (uint32_t)ev->id;
		c->crossed = c->nl; /* none is pending until the levels are in */
		return 0;
	}
	/* in order, each below the one before (dma_counter_watch sends them
	 * so): a level out of order would leave one unset */
	if (ev->id >= c->nl || ev->id != c->nset || (ev->id && ev->delta >= c->level[ev->id - 1]))
		return -EPROTO;
	c->level[ev->id] = ev->delta;
	c->nset++;
	if (ev->id + 1 == c->nl) {
		/* marks the counter stands at were crossed when it last changed */
		c->crossed = 0;
		while (c->crossed < c->nl && c->value <= c->level[c->crossed])
			c->xvt[c->crossed++] = c->changed;
	}
	return 0;
}

/* Counter (node, id) changes by delta at t (alloc: it starts at 0). Zero
 * answers the cores of its node whose wait is blocked on it, and they run
 * from t; in_run: where the change comes from (CH_*). */
static void ctr_change(struct emu_tk *tk, uint32_t node, uint32_t id, int64_t delta, torus_vt_t t, int alloc,
		       int in_run)
{
	struct tk_ctr *c = &tk->ctr[node][id];
	if (alloc) {
		c->value = 0;
		c->hits = 0;
		c->changed = t;
		c->head = c->n = 0;
		c->nl = c->crossed = 0;
		return;
	}
	if (delta == 0)
		return; /* an empty message changes nothing, as on the DMA unit */
	c->value += delta;
	c->changed = t;
	if (delta < 0) {
		/* keep the last lookahead's decrements (value_at): before the
		 * event being simulated, not before the end of the last run
		 * (a long run kept hundreds of them per counter) */
		torus_vt_t o = tk->m->hdr->params.inj_overhead_ps, now = timesim_event_time(tk->ts);
		torus_vt_t floor = now > o + 1 ? now - o - 1 : 0;
		while (c->head < c->n && c->dec[c->head].t < floor)
			c->head++;
		if (c->head == c->n)
			c->head = c->n = 0;
		if (c->n == c->cap) {
			if (c->head > 0) {
				memmove(c->dec, c->dec + c->head, (c->n - c->head) * sizeof(*c->dec));
				c->n -= c->head;
				c->head = 0;
			} else {
				uint32_t nc = c->cap ? 2 * c->cap : 8;
				struct tk_dec *nd = realloc(c->dec, nc * sizeof(*nd));
				if (!nd) {
					tk->failed = -ENOMEM;
					timesim_stop(tk->ts);
					return;
				}
				c->dec = nd;
				c->cap = nc;
			}
		}
		/* in time order: a packet that finishes leaving (on_left) can be
		 * dated before one applied earlier, which left another link
		 * later but was shorter; value_at and zero_after read in order */
		uint32_t i = c->n++;
		for (; i > c->head && c->dec[i - 1].t > t; i--)
			c->dec[i] = c->dec[i - 1];
		c->dec[i] = (struct tk_dec){t, delta};
		if (c->crossed < c->nl && c->value <= c->level[c->crossed])
			marks_crossed(tk, node, id, c, t, in_run);
	}
	if (c->value != 0)
		return;
	c->hits++;
	for (uint32_t g = tk->first[node]; g < tk->first[node + 1]; g++) {
		struct tk_core *k = &tk->c[g];
		uint32_t which;
		if (k->waiting && (k->qtype == EMU_TKQ_CTR_WAIT || k->qtype == EMU_TKQ_CTR_OR_RECV) && k->blocked &&
		    waits_for(k, id, &which)) {
			if (in_run == CH_AHEAD) {
				defer(tk, k, t > k->qvt ? t : k->qvt, which, 0);
				continue;
			}
			k->a.which = which;
			answer(tk, k, 1, t > k->qvt ? t : k->qvt);
			if (in_run)
				timesim_stop(tk->ts);
		}
	}
}

static int counter_op(struct emu_tk *tk, uint32_t node, const struct emu_tk_ev *ev)
{
	if (ev->rec >= tk->cores[node] * tk->m->hdr->params.dma_counters)
		return -EPROTO;
	if (ev->type == EMU_TK_CTR_WATCH || ev->type == EMU_TK_CTR_LEVEL)
		return watch_op(tk, node, ev);
	/* a value no program reaches (2^62 bytes) is damage, not a count:
	 * refused before the sum can overflow (fuzz-tkevents) */
	int64_t v;
	if (ev->type == EMU_TK_CTR_ADD &&
	    (__builtin_add_overflow(tk->ctr[node][ev->rec].value, ev->delta, &v) || v > (1ll << 62) || v < -(1ll << 62)))
		return -EPROTO;
	ctr_change(tk, node, ev->rec, ev->delta, ev->ready, ev->type == EMU_TK_CTR_ALLOC, CH_OUTSIDE);
	return 0;
}

/* A local copy: its counter falls by len, len / copy_bw after ready. */
static int post_copy(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_ev *ev)
{
	const struct torus_params *p = &tk->m->hdr->params;
	if (ev->rec == NO_CTR || ev->len == 0)
		return 0;
	if (ev->rec >= tk->cores[k->node] * p->dma_counters || ev->len > INT64_MAX)
		return -EPROTO;
	torus_vt_t t = ev->ready + torus_copy_time(p, ev->len);
	return timer_push(tk, (struct tk_timer){.t = t, .node = k->node, .rec = ev->rec, .len = (int64_t)ev->len,
						.fcore = UINT32_MAX});
}

static void timer_pop(struct emu_tk *tk)
{
	struct tk_timer x = tk->timer[--tk->ntimer];
	size_t i = 0, n = tk->ntimer;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && timer_less(&tk->timer[c + 1], &tk->timer[c]))
			c++;
		if (!timer_less(&tk->timer[c], &x))
			break;
		tk->timer[i] = tk->timer[c];
		i = c;
	}
	if (n)
		tk->timer[i] = x;
}

/*
 * Simulate as far as is safe: up to the smallest core bound, and the local
 * copies completing before it, each once the network's events up to its
 * time are done (so the order at equal times is fixed). 0, or a negative
 * errno.
 */
static int advance(struct emu_tk *tk)
{
	for (;;) {
		torus_vt_t limit = tk->c[tk->tree[1]].lim, now = timesim_now(tk->ts);
		torus_vt_t tl = tk->ntimer ? tk->timer[0].t : TIMESIM_NEVER;
		torus_vt_t upto = tl < limit ? tl + 1 : limit;
		if (upto > now && (upto != TIMESIM_NEVER || timesim_next(tk->ts) != TIMESIM_NEVER)) {
			int rc = timesim_run(tk->ts, upto);
			if (rc || tk->failed)
				return rc ? rc : tk->failed;
		}
		if (tk->ntimer && tk->timer[0].t < tl && tk->timer[0].t < tk->c[tk->tree[1]].lim)
			continue; /* a fault the run just found (it stopped there): deliver it first */
		if (tl >= limit || timesim_now(tk->ts) < upto)
			return 0; /* no copy completes first, or a hook stopped the simulation */
		while (tk->ntimer && tk->timer[0].t == tl) {
			struct tk_timer x = tk->timer[0];
			timer_pop(tk);
			if (x.fcore == UINT32_MAX) {
				ctr_change(tk, x.node, x.rec, -x.len, x.t, 0, CH_OUTSIDE);
				continue;
			}
			struct emu_tk_arr a = {x.t, (uint64_t)(uint32_t)x.f.error << 32 | x.f.node, x.f.offset,
					       (uint64_t)x.f.region << 32 | x.f.len};
			arrive(tk, &tk->c[x.fcore], EMU_TK_Q_FAULT, &a, 0);
			if (tk->failed)
				return tk->failed;
		}
	}
}

/* Descriptor d (an xfer index, or TK_COPY_DONE | done time) joins FIFO f. */
static int fifo_add(struct emu_tk *tk, struct tk_fifo *f, uint64_t d)
{
	/* forget the done ones at the front that no query can still ask about */
	torus_vt_t o = tk->m->hdr->params.inj_overhead_ps, now = timesim_now(tk->ts);
	torus_vt_t floor = now > o + 1 ? now - o - 1 : 0;
	while (f->head < f->n) {
		uint64_t x = f->d[f->head];
		torus_vt_t done = x & TK_COPY_DONE ? x & ~TK_COPY_DONE : tk->xf[x].done;
		if (done >= floor)
			break;
		f->head++;
	}
	if (f->n == f->cap) {
		if (f->head > 0) {
			memmove(f->d, f->d + f->head, (f->n - f->head) * sizeof(*f->d));
			f->n -= f->head;
			f->head = 0;
		} else {
			uint32_t nc = f->cap ? 2 * f->cap : 16;
			uint64_t *nd = realloc(f->d, nc * sizeof(*nd));
			if (!nd)
				return -ENOMEM;
			f->d = nd;
			f->cap = nc;
		}
	}
	f->d[f->n++] = d;
	return 0;
}

/* Descriptors of FIFO f not fully injected by time q. */
static uint32_t fifo_pending(const struct emu_tk *tk, const struct tk_fifo *f, torus_vt_t q)
{
	uint32_t n = 0;
	for (uint32_t i = f->head; i < f->n; i++) {
		uint64_t x = f->d[i];
		n += (x & TK_COPY_DONE ? x & ~TK_COPY_DONE : tk->xf[x].done) > q;
	}
	return n;
}

static int post_dma(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_ev *ev)
{
	/* an unchecked descriptor: what its destination will refuse */
	const uint32_t rf = k->rf;
	const struct tk_refuse *r = rf ? &tk->rf[rf - 1] : NULL;
	k->rf = 0;
	if (ev->kind == EMU_TK_COPY) {
		/* a copy leaves its FIFO as it is posted */
		if (ev->fifo >= tk->m->hdr->params.inj_fifos)
			return -EPROTO;
		int rc = fifo_add(tk, &k->fifo[ev->fifo], TK_COPY_DONE | ev->ready);
		if (rc || !r)
			return rc ? rc : post_copy(tk, k, ev);
		/* refused whole as the unit takes it: nothing copied */
		struct tk_fault f = {r->all, k->node, r->region, (uint32_t)ev->len, r->off};
		return fault(tk, k->node, (uint32_t)(k - tk->c), &f, ev->ready);
	}
	struct tk_xfer *nx = grow(tk->xf, &tk->capxf, tk->nxf, sizeof(*nx), 1024);
	if (!nx)
		return -ENOMEM;
	tk->xf = nx;
	uint32_t per = tk->m->hdr->params.dma_counters;
	uint32_t rec_node = ev->kind == EMU_TK_GET ? k->node : ev->node;
	/* (a refused counter or core is never used) */
	uint32_t rec = ev->kind == EMU_TK_MEMFIFO || (r && (r->all || r->ctr)) ? NO_CTR : ev->rec;
	uint32_t dst_core = r && r->all ? 0 : ev->core;
	if (ev->node >= tk->m->hdr->nnodes || (ev->inj != NO_CTR && ev->inj >= tk->cores[k->node] * per) ||
	    (rec != NO_CTR && rec >= tk->cores[rec_node] * per) ||
	    (ev->kind == EMU_TK_MEMFIFO && dst_core >= tk->cores[ev->node]))
		return -EPROTO;
	if (ev->fifo >= tk->m->hdr->params.inj_fifos)
		return -EPROTO;
	/* (a memory-FIFO message is named by the sender's count, in delta) */
	tk->xf[tk->nxf] = (struct tk_xfer){ev->kind, k->node, ev->node, ev->inj, rec, (uint32_t)ev->id, k->core, dst_core,
					   ev->kind == EMU_TK_MEMFIFO ? (uint64_t)ev->delta : ev->ready,
					   ev->len, 0, TIMESIM_NEVER, rf};
	int rc = fifo_add(tk, &k->fifo[ev->fifo], tk->nxf);
	if (rc)
		return rc;
	static const uint32_t kinds[] = {[EMU_TK_PUT] = TIMESIM_PUT, [EMU_TK_GET] = TIMESIM_GET,
					 [EMU_TK_MEMFIFO] = TIMESIM_MEMFIFO};
	if (ev->kind < EMU_TK_PUT || ev->kind > EMU_TK_MEMFIFO)
		return -EPROTO;
	struct timesim_xfer x = {kinds[ev->kind], k->node, k->core, ev->fifo, ev->node,
				 ev->len, ev->ready, ev->hints, DMA_COOKIE | tk->nxf};
	tk->nxf++;
	return timesim_post(tk->ts, &x);
}

/* EMU_TK_REFUSE: for the core's next descriptor (errors come positive) */
static int post_refuse(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_ev *ev)
{
	const uint32_t most = 1u << 16;
	if (k->rf || ev->kind > most || ev->fifo > most || ev->inj > most || ev->rec > most)
		return -EPROTO;
	struct tk_refuse *nr = grow(tk->rf, &tk->caprf, tk->nrf, sizeof(*nr), 16);
	if (!nr)
		return -ENOMEM;
	tk->rf = nr;
	tk->rf[tk->nrf++] = (struct tk_refuse){-(int32_t)ev->kind, -(int32_t)ev->fifo, -(int32_t)ev->inj, -(int32_t)ev->rec,
					       ev->node, ev->core, ev->len, ev->id, (uint64_t)ev->delta};
	k->rf = (uint32_t)tk->nrf;
	return 0;
}

static int post(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_ev *ev)
{
	tk->events++;
	if (ev->type == EMU_TK_DMA) {
		int rc = post_dma(tk, k, ev);
		if (rc)
			fprintf(stderr, "torusrun: timekeeper: core %u of node %u posted a descriptor it cannot time (%s): kind %u to "
					"node %u, %llu bytes, ready at %llu ps (simulated up to %llu ps; its clock %llu ps; its last "
					"answer: query %u at %llu ps, when simulated up to %llu ps)\n",
				k->core, k->node, strerror(-rc), ev->kind, ev->node, (unsigned long long)ev->len,
				(unsigned long long)ev->ready, (unsigned long long)timesim_now(tk->ts),
				(unsigned long long)k->clock, k->last_qtype, (unsigned long long)k->last_vt,
				(unsigned long long)k->last_now);
		return rc;
	}
	if (ev->type == EMU_TK_REFUSE)
		return post_refuse(tk, k, ev);
	if (ev->type == EMU_TK_EXPECT) {
		k->expect = ev->len; /* its bound moves in round_once, after this look */
		return 0;
	}
	if (ev->type >= EMU_TK_CTR_ALLOC && ev->type <= EMU_TK_CTR_LEVEL)
		return counter_op(tk, k->node, ev);
	if (ev->type != EMU_TK_RAW)
		return -EPROTO;
	uint32_t global = (uint32_t)(k - tk->c);
	struct timesim_xfer x = {TIMESIM_RAW, k->node, k->core, 0, ev->node, ev->len, ev->ready, ev->hints,
				 raw_cookie(global, ev->core, (uint32_t)ev->id)};
	/* the destination core: the simulator knows nodes only, and the
	 * arrival goes to that core's queue (fuzz-tkevents found a write past
	 * the cores when it did not exist) */
	int rc = ev->node < tk->m->hdr->nnodes && ev->core < tk->cores[ev->node] ? timesim_post(tk->ts, &x) : -EINVAL;
	if (rc)
		fprintf(stderr, "torusrun: timekeeper: core %u of node %u sent an event it cannot time (%s): type %u to node %u "
				"core %u, %llu bytes, ready at %llu ps (simulated up to %llu ps)\n",
			k->core, k->node, strerror(-rc), ev->type, ev->node, ev->core, (unsigned long long)ev->len,
			(unsigned long long)ev->ready,
			(unsigned long long)timesim_now(tk->ts));
	return rc;
}

/* A plan that the timekeeper cannot follow (emu_core_declare_begin). */
static int plan_refused(const struct tk_core *k, const char *why)
{
	fprintf(stderr, "torusrun: timekeeper: core %u of node %u: the step it declared (emu_core_declare_begin) %s\n", k->core, k->node, why);
	return -EPROTO;
}

/* A core acted before the end of the work it promised (emu_core_lead). */
static void lead_broken(const struct tk_core *k, const char *what, torus_vt_t at)
{
	fprintf(stderr,
		"torusrun: timekeeper: core %u of node %u %s at %llu ps, before the end of the work it promised "
		"(emu_core_lead) after its answer: %llu ps\n",
		k->core, k->node, what, (unsigned long long)at, (unsigned long long)k->lead_until);
}

static int try_answer(struct emu_tk *tk, struct tk_core *k);

/* Node-wide counter ids of core k's node: below this. */
static uint32_t counters_of(const struct emu_tk *tk, const struct tk_core *k)
{
	return tk->cores[k->node] * tk->m->hdr->params.dma_counters;
}

/* No program's steps held for core k. */
static void prog_clear(struct tk_core *k)
{
	for (uint32_t s = 0; k->pst && s < EMU_TK_PLANS; s++)
		k->pst[s].n = k->pst[s].head = k->pst[s].handled = 0;
	k->npev = 0;
	k->fill = 0;
}

/* A step of core k's program (EMU_TK_STEP), or the next of its events. */
static int step_take(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_ev *ev)
{
	if (k->prog)
		return plan_refused(k, "came while its program ran");
	if (!k->pst && !(k->pst = calloc(EMU_TK_PLANS, sizeof(*k->pst))))
		return -ENOMEM;
	if (k->fill) {
		if (ev->type == EMU_TK_STEP || ev->type == EMU_TK_EXPECT)
			return plan_refused(k, "of a program is cut short");
		void *p = grow(k->pev, &k->cappev, k->npev + 1, sizeof(*k->pev), 256);
		if (!p)
			return -ENOMEM;
		k->pev = p;
		k->pev[k->npev++] = *ev;
		k->fill--;
		return 0;
	}
	uint32_t lim = counters_of(tk, k);
	if (ev->core >= EMU_TK_PLANS || ev->len > EMU_TK_STEP_EVS || (ev->id != UINT64_MAX && ev->id > UINT32_MAX) ||
	    (ev->id != UINT64_MAX && ev->rec >= lim))
		return plan_refused(k, "of a program is malformed");
	struct tk_stream *st = &k->pst[ev->core];
	void *p = grow(st->s, &st->cap, st->n + 1, sizeof(*st->s), 64);
	if (!p)
		return -ENOMEM;
	st->s = p;
	st->s[st->n++] = (struct tk_step){ev->id, ev->rec, (uint32_t)ev->len, ev->ready, k->npev};
	k->fill = (uint32_t)ev->len;
	return 0;
}

/* Take stream s's next step from `at`: its events, then its clock. */
static int step_apply(struct emu_tk *tk, struct tk_core *k, uint32_t s, torus_vt_t at)
{
	struct tk_stream *st = &k->pst[s];
	const struct tk_step *p = &st->s[st->head++];
	st->handled++;
	for (uint32_t i = 0; i < p->nev; i++) {
		struct emu_tk_ev ev = k->pev[p->ev + i];
		if (ev.type != EMU_TK_REFUSE)
			ev.ready = add_sat(ev.ready, at);
		int rc = post(tk, k, &ev);
		if (rc)
			return rc;
	}
	tk->planned++;
	k->clock = add_sat(at, p->end);
	return 0;
}

/* Run core k's program on from its clock, as the core serves its streams:
 * steps without a mark at once (the first in order of steps had, then of
 * stream), else a wait for the first mark crossed among the streams'
 * next steps (answered in publish); at the end, the program's query. */
static int prog_next(struct emu_tk *tk, struct tk_core *k)
{
	for (;;) {
		uint32_t order[EMU_TK_PLANS], n = 0, nw = 0;
		for (uint32_t s = 0; s < k->nprog; s++) {
			const struct tk_stream *st = &k->pst[s];
			if (st->head == st->n)
				continue;
			uint32_t at = n++;
			while (at > 0 && k->pst[order[at - 1]].handled > st->handled) {
				order[at] = order[at - 1];
				at--;
			}
			order[at] = s;
		}
		if (!n) {
			k->prog_done = 1;
			k->qtype = EMU_TKQ_PROGRAM;
			answer(tk, k, 1, k->clock);
			return 0;
		}
		int ready = -1;
		for (uint32_t i = 0; i < n && ready < 0; i++) {
			const struct tk_step *p = &k->pst[order[i]].s[k->pst[order[i]].head];
			if (p->mark == UINT64_MAX) {
				ready = (int)order[i];
			} else {
				k->qids[nw] = p->id;
				k->qmarks[nw] = (uint32_t)p->mark;
				k->porder[nw++] = order[i];
			}
		}
		if (ready >= 0) {
			int rc = step_apply(tk, k, (uint32_t)ready, k->clock);
			if (rc)
				return rc;
			continue;
		}
		k->qtype = EMU_TKQ_MARK_WAIT;
		k->qvt = k->clock;
		k->qn = nw;
		k->qlead = 0;
		k->qdeadline = 0;
		k->qkey = 0;
		k->blocked = 0;
		k->zero_at = TIMESIM_NEVER;
		k->waiting = 1;
		if (!try_answer(tk, k))
			rebound(tk, k);
		return 0;
	}
}

/* Core k waited for counter ev->rec to be zero and ran on (EMU_TK_WAITED):
 * as a counter wait it asked, but answered by rebasing what follows
 * (answer), not to the core. Its events behind it wait till then. */
static int waited(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_ev *ev)
{
	const char *bad = k->waiting || k->prog ? "while it waited for an answer"
			  : ev->kind > 2 ? "of no known kind"
			  : ev->kind == 0 && ev->rec >= counters_of(tk, k) ? "on a counter it does not have"
			  : ev->kind == 1 && (ev->len == 0 || ev->len > tk->ncores) ? "on a barrier of no possible size"
			  : ev->kind == 2 && !(ev->id & EMU_TK_MSG_ANY) ? "on a packet not sent in any order"
										   : NULL;
	if (bad) {
		fprintf(stderr, "torusrun: timekeeper: core %u of node %u: a deferred wait %s\n", k->core, k->node, bad);
		return -EPROTO;
	}
	/* as the question (the barrier is counted by round_once, as one asked) */
	k->qtype = ev->kind == 2 ? EMU_TKQ_PKT : ev->kind ? EMU_TKQ_BARRIER : EMU_TKQ_CTR_WAIT;
	k->qn = ev->kind == 1 ? (uint32_t)ev->len : 1;
	k->pkt_src = ev->rec;
	k->pkt_name = ev->id;
	k->pkt_index = ev->len;
	k->qids[0] = ev->rec;
	k->qvt = ev->ready;
	k->qdeadline = TIMESIM_NEVER;
	k->qlead = 0;
	k->qkey = ev->kind == 1 ? ev->id : 0;
	k->blocked = 0;
	k->arrived_bar = 0;
	k->zero_at = TIMESIM_NEVER;
	k->waiting = 1;
	k->defer_wait = 1;
	return 0;
}

/* Take what core k has said since the last look; 1 if anything. */
static int look(struct emu_tk *tk, struct tk_core *k, int *err)
{
	struct emu_tk_core *sh = k->sh;
	int moved = 0;
	if (k->done)
		return 0;
	/* the query number and clock first: the events before them are then
	 * in the ring (the core writes them in that order) */
	uint32_t q = atomic_load_explicit(&sh->qseq, memory_order_acquire);
	torus_vt_t clk = atomic_load_explicit(&sh->clock, memory_order_acquire);
	int done = atomic_load_explicit(&k->cs->state, memory_order_acquire) == EMU_CORE_DONE;
	uint32_t head = atomic_load_explicit(&sh->head, memory_order_acquire);
	uint32_t tail = atomic_load_explicit(&sh->tail, memory_order_relaxed);
	if (head - tail > EMU_TK_SLOTS) {
		/* more events than the ring holds: a damaged index, which would
		 * replay the ring for up to 2^32 events in one round */
		fprintf(stderr, "torusrun: timekeeper: core %u of node %u: its event ring's indices are damaged (%u events)\n",
			k->core, k->node, head - tail);
		*err = -EPROTO;
		return 1;
	}
	if (tail != head && k->declared) {
		/* between its plan's answer and the wait the plan declared */
		*err = plan_refused(k, "is not what it did: it posted before asking the wait the step named");
		return 1;
	}
	while (tail != head && !k->defer_wait) {
		const struct emu_tk_ev *pe = &sh->ev[tail % EMU_TK_SLOTS];
		if (k->fill || pe->type == EMU_TK_STEP) {
			/* a program's step, or one of its events */
			int rc = step_take(tk, k, pe);
			if (rc) {
				*err = rc;
				return 1;
			}
			tail++;
			moved = 1;
			continue;
		}
		/* a copy (the core may not change it, but it is shared memory):
		 * timed from its last deferred wait's answer if it says so */
		struct emu_tk_ev e = *pe;
		if (e.pad_ & EMU_TK_EV_REL)
			e.ready = add_sat(e.ready, k->base);
		/* (a refusal has no time: the descriptor after it has) */
		if (e.type != EMU_TK_REFUSE && e.ready < k->lead_until) {
			lead_broken(k, "posted an event", e.ready);
			*err = -EPROTO;
			return 1;
		}
		if (e.type != EMU_TK_REFUSE && e.ready > k->clock)
			k->clock = e.ready; /* it runs at least this far (its offsets tell no clock) */
		int rc = e.type == EMU_TK_WAITED ? waited(tk, k, &e) : post(tk, k, &e);
		if (rc) {
			*err = rc;
			return 1;
		}
		tail++;
		moved = 1;
	}
	if (moved) {
		atomic_store_explicit(&sh->tail, tail, memory_order_release);
		emu_bell_ring(&k->cs->bell); /* a core waiting for room */
	}
	if (k->declared) {
		if (q == k->qseen) {
			/* it asks the wait its plan declared: the same one? */
			if (sh->qtype != EMU_TKQ_MARK_WAIT || sh->qvt != k->qvt || sh->qn != k->qn || sh->qlead != k->qlead ||
			    memcmp(sh->qids, k->qids, k->qn * sizeof(uint32_t)) ||
			    memcmp(sh->qmarks, k->qmarks, k->qn * sizeof(uint32_t))) {
				*err = plan_refused(k, "named a wait that is not the one it asked");
				return 1;
			}
			k->declared = 0;
			if (k->held)
				pub_push(tk, k);
			k->held = 0;
			moved = 1;
		}
	} else if (q != k->qseen && !k->defer_wait && tail == head) {
		/* (a question comes after the events before it: behind a
		 * deferred wait not answered yet, it waits for a later look)
		 * a core asks only once its last question is answered
		 * (emu_core_tk_answer waits for it, and nothing is asked while
		 * its program runs): another question would be answered in the
		 * state of the first (fuzz-tkevents: a program's wait answered
		 * with a pair past the program's streams) */
		if (k->waiting || k->prog || sh->qtype < EMU_TKQ_RECV || sh->qtype > EMU_TKQ_PKT) {
			fprintf(stderr, "torusrun: timekeeper: core %u of node %u asked question %u (type %u) %s\n", k->core,
				k->node, q, sh->qtype, k->waiting || k->prog ? "before its last was answered" : "of no known type");
			*err = -EPROTO;
			return 1;
		}
		if (k->pst && !k->prog && sh->qtype != EMU_TKQ_PROGRAM)
			prog_clear(k); /* steps told for a program the core gave up: gone */
		k->qseen = q;
		k->qtype = sh->qtype;
		k->qvt = sh->qtype == EMU_TKQ_SYNC ? add_sat(sh->qvt, k->base) : sh->qvt;
		k->qlead = sh->qlead;
		if (k->qvt < k->lead_until) {
			lead_broken(k, "asked a question", k->qvt);
			*err = -EPROTO;
			return 1;
		}
		k->qdeadline = sh->qdeadline;
		k->qkey = sh->qkey;
		/* a barrier's member count, or the number of counter ids */
		k->qn = sh->qn;
		if (k->qtype == EMU_TKQ_CTR || k->qtype == EMU_TKQ_CTR_WAIT || k->qtype == EMU_TKQ_MARK ||
		    k->qtype == EMU_TKQ_MARK_WAIT || k->qtype == EMU_TKQ_CTR_OR_RECV) {
			if (k->qn > EMU_TKQ_MAX_IDS || k->qn == 0) {
				*err = -EPROTO;
				return 1;
			}
			memcpy(k->qids, sh->qids, k->qn * sizeof(uint32_t));
			uint32_t lim = counters_of(tk, k);
			for (uint32_t i = 0; i < k->qn; i++)
				if (k->qids[i] >= lim) {
					*err = -EPROTO;
					return 1;
				}
			if (k->qtype == EMU_TKQ_MARK || k->qtype == EMU_TKQ_MARK_WAIT)
				memcpy(k->qmarks, sh->qmarks, k->qn * sizeof(uint32_t));
		}
		if (k->qtype == EMU_TKQ_PKT) {
			k->pkt_src = sh->qids[0];
			k->pkt_index = sh->qids[1];
			k->pkt_name = sh->qkey;
			if (!(k->pkt_name & EMU_TK_MSG_ANY)) {
				*err = -EPROTO;
				return 1;
			}
		}
		if (k->qtype == EMU_TKQ_PROGRAM && (k->qn == 0 || k->qn > EMU_TK_PLANS || k->fill)) {
			*err = plan_refused(k, "(a program) is malformed");
			return 1;
		}
		if (((k->qtype == EMU_TKQ_RECV || k->qtype == EMU_TKQ_WAIT_RECV || k->qtype == EMU_TKQ_CTR_OR_RECV) &&
		     k->qkey >= EMU_TK_NQ) ||
			   (k->qtype == EMU_TKQ_PENDING && k->qkey >= tk->m->hdr->params.inj_fifos)) {
			*err = -EPROTO;
			return 1;
		}
		if (k->qtype == EMU_TKQ_PACE && k->qvt > k->clock)
			k->clock = k->qvt; /* it posts next, at its clock */
		k->blocked = 0;
		k->arrived_bar = 0;
		k->zero_at = TIMESIM_NEVER;
		k->waiting = 1;
		moved = 1;
	} else if (!k->waiting && clk > k->clock) {
		k->clock = clk;
		moved = 1;
	}
	if (done && k->declared) {
		*err = plan_refused(k, "named a wait that it never asked");
		return 1;
	}
	if (done && !k->waiting) {
		k->done = 1;
		moved = 1;
	}
	return moved;
}

/* Core k waits until the simulation reaches its qdeadline (EMU_TKQ_PACE). */
static void pace_push(struct emu_tk *tk, struct tk_core *k)
{
	uint32_t i = tk->npace++, g = (uint32_t)(k - tk->c);
	while (i && tk->c[tk->pace[(i - 1) / 2]].qdeadline > k->qdeadline) {
		tk->pace[i] = tk->pace[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	tk->pace[i] = g;
	k->in_pace = 1;
}

/* Answer core k's query if it can be answered now: 1 if it was, 2 if it
 * changed (a counter wait that blocks), 0 if not. */
static int try_answer(struct emu_tk *tk, struct tk_core *k)
{
	torus_vt_t now = timesim_now(tk->ts);
	if (!k->waiting)
		return 0;
	switch (k->qtype) {
	case EMU_TKQ_SYNC: /* its clock, once its deferred waits are answered (look) */
		answer(tk, k, 1, k->qvt);
		return 1;
	case EMU_TKQ_PKT: /* at the packet's arrival (arrive_any), if it has not come yet */
		return pkt_answer(tk, k);
	case EMU_TKQ_RECV:
		/* its ring holds every arrival up to qvt once all before it is final */
		if (k->qvt >= now && first_arrival(k, (uint32_t)k->qkey) > k->qvt)
			return 0;
		answer(tk, k, 1, k->qvt);
		return 1;
	case EMU_TKQ_WAIT_RECV: {
		torus_vt_t t = first_arrival(k, (uint32_t)k->qkey);
		/* (one past the deadline is a timeout: the core's clock moves
		 * to the deadline, and so must its bound) */
		if (t != TIMESIM_NEVER && t <= k->qdeadline) {
			/* an arrival it has not taken: it resumes at it, or now */
			answer(tk, k, 1, t > k->qvt ? t : k->qvt);
			return 1;
		}
		if (k->qdeadline != TIMESIM_NEVER && k->qdeadline < now) {
			answer(tk, k, 0, k->qdeadline);
			return 1;
		}
		return 0;
	}
	case EMU_TKQ_CTR: {
		if (k->qvt >= now)
			return 0;
		const struct tk_ctr *c = &tk->ctr[k->node][k->qids[0]];
		int64_t v = value_at(c, k->qvt);
		k->a.value = v;
		k->a.hits = c->hits;
		answer(tk, k, v == 0, k->qvt);
		return 1;
	}
	case EMU_TKQ_CTR_OR_RECV:
		if (k->blocked) {
			/* nothing arrived up to now, and a counter reaches zero by
			 * then, or none */
			if (k->zero_at < now && k->zero_at <= k->qdeadline) {
				k->a.which = k->zero_which;
				answer(tk, k, 1, k->zero_at);
				return 1;
			}
			if (k->qdeadline >= now)
				return 0;
			answer(tk, k, 0, k->qdeadline);
			return 1;
		}
		/* fall through */
	case EMU_TKQ_CTR_WAIT: {
		if (k->blocked && k->zero_at < now) {
			k->a.which = k->zero_which;
			answer(tk, k, 1, k->zero_at);
			return 1;
		}
		if (k->blocked || k->qvt >= now)
			return 0;
		/* zero at qvt, or the first of them to reach zero after it */
		torus_vt_t best = TIMESIM_NEVER;
		uint32_t which = 0;
		for (uint32_t i = 0; i < k->qn; i++) {
			const struct tk_ctr *c = &tk->ctr[k->node][k->qids[i]];
			torus_vt_t t = value_at(c, k->qvt) == 0 ? k->qvt : zero_after(c, k->qvt);
			if (t < best) {
				best = t;
				which = i;
			}
		}
		if (k->qtype == EMU_TKQ_CTR_OR_RECV) {
			/* an arrival not taken, final as every arrival up to now is */
			torus_vt_t a = first_arrival(k, (uint32_t)k->qkey);
			if (a != TIMESIM_NEVER && (a > k->qvt ? a : k->qvt) < best) {
				best = a > k->qvt ? a : k->qvt;
				which = k->qn;
			}
			if (best > k->qdeadline && k->qdeadline < now) {
				answer(tk, k, 0, k->qdeadline);
				return 1;
			}
		}
		if (best != TIMESIM_NEVER && best < now) {
			k->a.which = which;
			answer(tk, k, 1, best);
			return 1;
		}
		/* none has been zero since qvt, or one is, ahead of the
		 * simulation (a packet leaving): the first one to reach zero
		 * answers */
		k->blocked = 1;
		if (best != TIMESIM_NEVER)
			defer(tk, k, best, which, 0);
		rebound(tk, k);
		return 2;
	}
	case EMU_TKQ_PENDING:
		if (k->qvt >= now)
			return 0;
		k->a.value = fifo_pending(tk, &k->fifo[k->qkey], k->qvt);
		answer(tk, k, 1, k->qvt);
		return 1;
	case EMU_TKQ_MARK:
	case EMU_TKQ_MARK_WAIT: {
		if (k->blocked && k->zero_at < now) {
			k->a.which = k->zero_which;
			k->a.t = k->zero_xt;
			answer(tk, k, 1, k->zero_at);
			return 1;
		}
		if (k->blocked || k->qvt >= now)
			return 0;
		uint32_t which = 0;
		torus_vt_t t = 0;
		if (first_mark(tk, k, k->qvt, &which, &t)) {
			k->a.which = which;
			k->a.t = t;
			answer(tk, k, 1, k->qvt);
			return 1;
		}
		if (k->qtype == EMU_TKQ_MARK) {
			answer(tk, k, 0, k->qvt);
			return 1;
		}
		/* crossed since qvt, up to now (which can be a lookahead past
		 * it): the first of those answers, at its crossing */
		if (first_mark(tk, k, TIMESIM_NEVER, &which, &t) && t < now) {
			k->a.which = which;
			k->a.t = t;
			answer(tk, k, 1, t);
			return 1;
		}
		/* none crossed yet, or one ahead of the simulation: the first
		 * crossing answers (marks_crossed) */
		k->blocked = 1;
		if (first_mark(tk, k, TIMESIM_NEVER, &which, &t))
			defer(tk, k, t > k->qvt ? t : k->qvt, which, t);
		rebound(tk, k);
		return 2;
	}
	case EMU_TKQ_PROGRAM: {
		if (k->prog)
			return 0;
		/* it starts at its clock: the timekeeper runs it from here */
		k->prog = 1;
		/* no step told at all (nothing allocated): streams with no
		 * steps, which end at once (fuzz-tkevents found a null
		 * dereference here) */
		k->nprog = k->pst ? k->qn : 0;
		if (k->qvt > k->clock)
			k->clock = k->qvt;
		int rc = prog_next(tk, k);
		if (rc) {
			tk->prog_err = rc;
			timesim_stop(tk->ts);
		}
		return 2;
	}
	case EMU_TKQ_PACE:
		/* the heap answers it once it is there (pace_answer) */
		if (k->in_pace)
			return 0;
		if (k->qdeadline <= now) {
			answer(tk, k, 1, k->qvt);
			return 1;
		}
		pace_push(tk, k);
		return 0;
	default:
		return 0; /* a barrier: answered when its last member arrives */
	}
}

/* Core k's plan p, from its answer on: its posts and counter changes, then
 * the wait it declared (taken as asked), or its clock after them. */
static int follow(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_plan *p)
{
	torus_vt_t at = k->avt;
	if (p->nev > EMU_TK_PLAN_EVS || p->qn > EMU_TK_PLANS)
		return plan_refused(k, "is malformed");
	for (uint32_t i = 0; i < p->nev; i++) {
		struct emu_tk_ev ev = p->ev[i];
		if (ev.type == EMU_TK_EXPECT)
			return plan_refused(k, "makes a promise (emu_core_expect), which a step cannot");
		if (ev.type != EMU_TK_REFUSE) {
			ev.ready = add_sat(ev.ready, at);
			if (ev.ready < k->lead_until) {
				lead_broken(k, "declared an event", ev.ready);
				return -EPROTO;
			}
		}
		int rc = post(tk, k, &ev);
		if (rc)
			return rc;
	}
	tk->planned++;
	torus_vt_t end = add_sat(at, p->end);
	if (!p->qn) {
		if (end > k->clock)
			k->clock = end;
		rebound(tk, k);
		return 0;
	}
	if (end < k->lead_until) {
		lead_broken(k, "declared a question", end);
		return -EPROTO;
	}
	uint32_t lim = counters_of(tk, k);
	for (uint32_t i = 0; i < p->qn; i++)
		if (p->qids[i] >= lim)
			return plan_refused(k, "waits on a counter that does not exist");
	k->qseen++;
	k->qtype = EMU_TKQ_MARK_WAIT;
	k->qvt = end;
	k->qlead = p->qlead;
	k->qdeadline = 0;
	k->qkey = 0;
	k->qn = p->qn;
	memcpy(k->qids, p->qids, p->qn * sizeof(uint32_t));
	memcpy(k->qmarks, p->qmarks, p->qn * sizeof(uint32_t));
	k->blocked = 0;
	k->arrived_bar = 0;
	k->zero_at = TIMESIM_NEVER;
	k->waiting = 1;
	k->declared = 1;
	if (!try_answer(tk, k))
		rebound(tk, k);
	return 0;
}

/* Publish core k's answer; then follow its plan for it, if it made one
 * (copied first: once answered, the core writes its next plans). */
static int publish(struct emu_tk *tk, struct tk_core *k)
{
	struct emu_tk_core *sh = k->sh;
	if (k->prog && !k->prog_done) {
		/* the wait of its program: the stream whose mark came */
		if (!k->afound || k->a.which >= k->qn || k->a.which >= EMU_TK_PLANS || k->qtype != EMU_TKQ_MARK_WAIT)
			return plan_refused(k, "(a program) lost its way");
		int rc = step_apply(tk, k, k->porder[k->a.which], k->avt);
		return rc ? rc : prog_next(tk, k);
	}
	if (k->prog) {
		/* its end: the next program starts afresh */
		k->prog = k->prog_done = 0;
		prog_clear(k);
	}
	const struct emu_tk_plan *p = NULL;
	/* the plans came before the query (its release store of qseq); the
	 * count read once, as the core could change it meanwhile */
	const uint32_t nplan = sh->nplan;
	if (k->last_qtype == EMU_TKQ_MARK_WAIT && k->afound &&
	    atomic_load_explicit(&sh->plan_q, memory_order_relaxed) == k->qseen && k->a.which < nplan &&
	    nplan <= EMU_TK_PLANS && sh->plan[k->a.which].valid) {
		tk->plan = sh->plan[k->a.which];
		p = &tk->plan;
	}
	refill_all(k);
	sh->afound = k->afound;
	sh->avt = k->avt;
	sh->a_value = k->a.value;
	sh->a_hits = k->a.hits;
	sh->a_which = k->a.which;
	sh->a_t = k->a.t;
	/* pairs with the core's acquire load of aseq */
	atomic_store_explicit(&sh->aseq, k->qseen, memory_order_release);
	emu_bell_ring(&k->cs->bell);
	return p ? follow(tk, k, p) : 0;
}

/* Publish the answers found (after the simulator's run: a plan posts). An
 * answer to a declared wait the core has not asked yet is held until it
 * does (look). Following a plan answers a core at most once more here. */
static int flush(struct emu_tk *tk)
{
	for (uint32_t i = 0; i < tk->npub; i++) {
		struct tk_core *k = &tk->c[tk->pubq[i]];
		k->pub = 0;
		if (k->declared) {
			k->held = 1;
			continue;
		}
		int rc = publish(tk, k);
		if (rc)
			return rc;
	}
	tk->npub = 0;
	return tk->prog_err;
}

/* The cores the simulation has paced past: they may post again. */
static int pace_answer(struct emu_tk *tk, torus_vt_t now)
{
	int moved = 0;
	while (tk->npace && tk->c[tk->pace[0]].qdeadline <= now) {
		struct tk_core *k = &tk->c[tk->pace[0]];
		uint32_t x = tk->pace[--tk->npace], i = 0, n = tk->npace;
		for (;;) {
			uint32_t c = 2 * i + 1;
			if (c >= n)
				break;
			if (c + 1 < n && tk->c[tk->pace[c + 1]].qdeadline < tk->c[tk->pace[c]].qdeadline)
				c++;
			if (tk->c[tk->pace[c]].qdeadline >= tk->c[x].qdeadline)
				break;
			tk->pace[i] = tk->pace[c];
			i = c;
		}
		if (n)
			tk->pace[i] = x;
		k->in_pace = 0;
		answer(tk, k, 1, k->qvt);
		tk->paced++;
		moved = 1;
	}
	return moved;
}

/* Core k arrived at a barrier (its query): when it is the last, every
 * member leaves at the latest arrival plus the barrier latency. */
static int barrier_arrive(struct emu_tk *tk, struct tk_core *k)
{
	struct tk_barrier *b = NULL;
	for (size_t i = 0; i < tk->nbar && !b; i++)
		if (tk->bar[i].key == k->qkey)
			b = &tk->bar[i];
	if (!b) {
		struct tk_barrier *nb = grow(tk->bar, &tk->capbar, tk->nbar, sizeof(*nb), 8);
		if (!nb)
			return -ENOMEM;
		tk->bar = nb;
		b = &tk->bar[tk->nbar++];
		*b = (struct tk_barrier){k->qkey, k->qn, 0, 0, calloc(k->qn ? k->qn : 1, sizeof(uint32_t))};
		if (!b->members) {
			tk->nbar--;
			return -ENOMEM;
		}
	}
	if (b->n != k->qn || b->arrived >= b->n || b->n > tk->ncores)
		return -EPROTO; /* members disagree on the team, or it cannot be */
	b->members[b->arrived++] = (uint32_t)(k - tk->c);
	if (k->qvt > b->max)
		b->max = k->qvt;
	if (b->arrived < b->n)
		return 0;
	torus_vt_t t = b->max + tk->m->hdr->params.barrier_latency_ps;
	for (uint32_t i = 0; i < b->n; i++)
		answer(tk, &tk->c[b->members[i]], 1, t);
	free(b->members);
	*b = tk->bar[--tk->nbar];
	return 0;
}

/* Host time, for TORUS_TK_DEBUG's account of where the timekeeper's went. */
static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* For emu_tk_progress, from the timekeeper's own thread. */
static void progress_publish(struct emu_tk *tk)
{
	struct timesim_stats st;
	timesim_stats(tk->ts, &st);
	const struct tk_core *k = tk->tree[1] < tk->ncores ? &tk->c[tk->tree[1]] : NULL;
	int none = !k || k->done || k->lim == TIMESIM_NEVER;
	atomic_store_explicit(&tk->pub_now, timesim_now(tk->ts), memory_order_relaxed);
	atomic_store_explicit(&tk->pub_events, st.events, memory_order_relaxed);
	atomic_store_explicit(&tk->pub_hops, st.hops, memory_order_relaxed);
	atomic_store_explicit(&tk->pub_sim_ns, tk->sim_ns, memory_order_relaxed);
	atomic_store_explicit(&tk->pub_wait, none ? UINT32_MAX : tk->tree[1], memory_order_relaxed);
	atomic_store_explicit(&tk->pub_wait_query, none || !k->waiting ? 0 : k->qtype, memory_order_relaxed);
	atomic_store_explicit(&tk->pub_wait_vt, none ? 0 : k->waiting ? k->qvt : k->clock, memory_order_relaxed);
}

void emu_tk_progress(const struct emu_tk *tk, struct emu_tk_progress *out)
{
	if (!out)
		return;
	*out = (struct emu_tk_progress){.wait_node = UINT32_MAX, .wait_core = UINT32_MAX};
	if (!tk)
		return;
	out->now = atomic_load_explicit(&tk->pub_now, memory_order_relaxed);
	out->events = atomic_load_explicit(&tk->pub_events, memory_order_relaxed);
	out->hops = atomic_load_explicit(&tk->pub_hops, memory_order_relaxed);
	out->sim_ns = atomic_load_explicit(&tk->pub_sim_ns, memory_order_relaxed);
	uint32_t g = atomic_load_explicit(&tk->pub_wait, memory_order_relaxed);
	if (g < tk->ncores) {
		out->wait_node = tk->c[g].node; /* (fixed at the start) */
		out->wait_core = tk->c[g].core;
		out->wait_query = atomic_load_explicit(&tk->pub_wait_query, memory_order_relaxed);
		out->wait_vt = atomic_load_explicit(&tk->pub_wait_vt, memory_order_relaxed);
	}
}

/* One round: take the news of the cores that have some, simulate as far
 * as is safe, answer what that made answerable. */
static int round_once(struct emu_tk *tk, int *err)
{
	int moved = 0;
	tk->rounds++;
	_Atomic uint64_t *dirty = emu_shm_tk_dirty(tk->m);
	for (uint32_t w = 0; w < (tk->ncores + 63) / 64 && !*err; w++) {
		if (!atomic_load_explicit(&dirty[w], memory_order_relaxed))
			continue;
		/* acquire: pairs with the cores' release in tk_poke */
		uint64_t bits = atomic_exchange_explicit(&dirty[w], 0, memory_order_acquire);
		for (; bits && !*err; bits &= bits - 1) {
			const uint32_t g = w * 64 + (uint32_t)__builtin_ctzll(bits);
			if (g >= tk->ncores)
				continue; /* (a bit past the cores: nobody's) */
			struct tk_core *k = &tk->c[g];
			if (look(tk, k, err)) {
				/* news it refuses: nothing of it is used (a refused
				 * query's fields are not checked; fuzz-tkevents
				 * found its queue number used past the queues) */
				if (*err)
					return 1;
				moved = 1;
				refill_all(k);
				if (k->waiting && k->qtype == EMU_TKQ_BARRIER && !k->arrived_bar) {
					k->arrived_bar = 1;
					int rc = barrier_arrive(tk, k);
					if (rc) {
						*err = rc;
						return 1;
					}
				}
				if (!try_answer(tk, k))
					rebound(tk, k);
			} else if (k->q[0].narr || k->q[1].narr) {
				refill_all(k); /* it took arrivals: room for those waiting here */
			}
		}
	}
	if (!*err && (*err = flush(tk)))
		return 1;
	if (*err)
		return 1;
	torus_vt_t before = timesim_now(tk->ts);
	uint64_t t0 = mono_ns();
	int rc = advance(tk);
	tk->sim_ns += mono_ns() - t0;
	if (rc) {
		*err = rc;
		return 1;
	}
	torus_vt_t now = timesim_now(tk->ts);
	if (now != before) {
		moved = 1;
		/* pairs with the cores' acquire loads: their rings hold every
		 * arrival before it */
		atomic_store_explicit(&tk->m->hdr->tk_now, now, memory_order_release);
		if (pace_answer(tk, now))
			moved = 1;
	}
	/* the queries the simulation reached: waiters come first at ties */
	for (;;) {
		struct tk_core *k = &tk->c[tk->tree[1]];
		if (k->run || k->lim > now || !try_answer(tk, k))
			break;
		moved = 1; /* answered, or it blocks and its bound moved on */
	}
	if (tk->npub) {
		moved = 1;
		if ((*err = flush(tk)))
			return 1;
	}
	if (moved)
		progress_publish(tk);
	return moved;
}

static void tk_dump(struct emu_tk *tk)
{
	fprintf(stderr, "timekeeper: now %llu, next event %llu, bound %llu (core %u)\n",
		(unsigned long long)timesim_now(tk->ts), (unsigned long long)timesim_next(tk->ts),
		(unsigned long long)tk->c[tk->tree[1]].lim, tk->tree[1]);
	for (uint32_t i = 0; i < tk->ncores; i++) {
		const struct tk_core *k = &tk->c[i];
		if (k->done)
			continue;
		fprintf(stderr, "  core %u (node %u.%u): waiting %d type %u qvt %llu blocked %d qn %u id0 %u clock %llu lim %llu; "
				"deferred wait %d, base %llu; ring %u..%u, question %u (seen %u)\n", i,
			k->node, k->core, k->waiting, k->qtype, (unsigned long long)k->qvt, k->blocked, k->qn, k->qids[0],
			(unsigned long long)k->clock, (unsigned long long)k->lim, k->defer_wait, (unsigned long long)k->base,
			atomic_load(&k->sh->tail), atomic_load(&k->sh->head), atomic_load(&k->sh->qseq), k->qseen);
	}
	for (size_t b = 0; b < tk->nbar; b++)
		fprintf(stderr, "  barrier %llx: %u of %u\n", (unsigned long long)tk->bar[b].key, tk->bar[b].arrived,
			tk->bar[b].n);
}

static void *tk_main(void *arg)
{
	struct emu_tk *tk = arg;
	struct emu_bell *bell = &tk->m->hdr->tk_bell;
	int err = 0, idle = 0;
	while (!atomic_load_explicit(&tk->stop, memory_order_acquire)) {
		if (round_once(tk, &err)) {
			if (err)
				break;
			continue;
		}
		/* the core it waits for: the first by bound, if it runs (a
		 * waiter's answer may need anyone's news) */
		const struct tk_core *root = &tk->c[tk->tree[1]];
		atomic_store(&tk->m->hdr->tk_waits_for,
			     root->run && !root->done && !root->waiting ? tk->tree[1] : UINT32_MAX);
		uint32_t seq = emu_bell_prepare(bell);
		if (round_once(tk, &err)) {
			atomic_store(&tk->m->hdr->tk_waits_for, UINT32_MAX);
			emu_bell_cancel(bell);
			if (err)
				break;
			idle = 0;
			continue;
		}
		tk->sleeps++;
		if (++idle == 250 && getenv("TORUS_TK_DEBUG"))
			tk_dump(tk);
		uint64_t t0 = mono_ns();
		emu_bell_sleep(bell, seq, 20);
		atomic_store(&tk->m->hdr->tk_waits_for, UINT32_MAX);
		tk->sleep_ns += mono_ns() - t0;
	}
	/* a job that ended: what its cores' last news left to simulate (the
	 * links' busy times are in the report) */
	while (!err && !atomic_load(&tk->m->hdr->abort) && round_once(tk, &err))
		;
	if (err == -ECANCELED && atomic_load(&tk->m->hdr->abort))
		err = 0; /* emu_tk_stop, for a job torn down */
	if (err) {
		fprintf(stderr, "torusrun: the timekeeper failed: %s; stopping the job\n", strerror(-err));
		atomic_store(&tk->m->hdr->abort, 1);
		tk->failed = err;
	}
	struct timespec cpu;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		tk->cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
	return NULL;
}

int emu_tk_rounds(struct emu_tk *tk, uint32_t max_rounds, uint32_t *rounds)
{
	int err = 0;
	uint32_t n = 0;
	if (!tk || tk->threaded || !max_rounds)
		return -EINVAL;
	if (tk->rounds_err)
		return tk->rounds_err; /* as torusrun, which stops the job */
	while (n < max_rounds && round_once(tk, &err) && !err)
		n++;
	if (rounds)
		*rounds = n;
	tk->rounds_err = err;
	return err ? err : n == max_rounds ? -EBUSY : 0;
}

int emu_tk_start(struct emu_shm *m, int trace_fd, struct emu_tk **out, char *err, size_t errlen)
{
	struct emu_tk *tk;
	int rc = emu_tk_open(m, trace_fd, &tk, err, errlen);
	if (rc)
		return rc;
	if ((rc = pthread_create(&tk->thread, NULL, tk_main, tk))) {
		/* nothing simulated: free it without the stop's account (the
		 * links' counters, TORUS_TK_DEBUG), as before emu_tk_open */
		timesim_destroy(tk->ts);
		tk->ts = NULL;
		emu_tk_stop(tk);
		snprintf(err, errlen, "cannot start the timekeeper: %s", strerror(rc));
		return -rc;
	}
	tk->threaded = 1;
	*out = tk;
	return 0;
}

int emu_tk_open(struct emu_shm *m, int trace_fd, struct emu_tk **out, char *err, size_t errlen)
{
	const struct emu_shm_hdr *h = m->hdr;
	const uint32_t N = h->nnodes;
	struct emu_tk *tk = calloc(1, sizeof(*tk));
	uint32_t *cores = calloc(N, sizeof(uint32_t));
	if (tk)
		tk->cores = cores;
	if (!tk || !cores || !(tk->first = calloc(N + 1, sizeof(uint32_t))) ||
	    !(tk->c = calloc(h->total_cores, sizeof(*tk->c))) ||
	    !(tk->busy = calloc((size_t)N * NLINKS, sizeof(uint64_t))) ||
	    !(tk->free_at = calloc((size_t)N * NLINKS, sizeof(torus_vt_t))) ||
	    !(tk->link_cost = calloc((size_t)N * NLINKS, sizeof(*tk->link_cost))) ||
	    (h->nlinks && !(tk->costs = calloc(h->nlinks, sizeof(*tk->costs))))) {
		if (!tk)
			free(cores);
		emu_tk_stop(tk);
		snprintf(err, errlen, "out of memory for the timekeeper");
		return -ENOMEM;
	}
	tk->m = m;
	tk->ncores = h->total_cores;
	for (tk->P = 1; tk->P < tk->ncores; tk->P *= 2)
		;
	if (!(tk->tree = malloc(2 * (size_t)tk->P * sizeof(uint32_t))) ||
	    !(tk->pace = malloc((size_t)tk->ncores * sizeof(uint32_t)))) {
		emu_tk_stop(tk);
		snprintf(err, errlen, "out of memory for the timekeeper");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < 2 * tk->P; i++)
		tk->tree[i] = i >= tk->P && i - tk->P < tk->ncores ? i - tk->P : UINT32_MAX;
	for (uint32_t r = 0, g = 0; r < N; r++) {
		struct emu_node_shm *ns = emu_shm_node(m, r);
		cores[r] = ns->ncores;
		tk->first[r] = g;
		for (uint32_t c = 0; c < ns->ncores; c++, g++) {
			tk->c[g].sh = emu_shm_tk(m, g);
			tk->c[g].cs = emu_shm_core(m, ns, c);
			tk->c[g].node = r;
			tk->c[g].core = c;
			tk->c[g].zero_at = TIMESIM_NEVER;
			if (!(tk->c[g].fifo = calloc(h->params.inj_fifos ? h->params.inj_fifos : 1, sizeof(struct tk_fifo)))) {
				emu_tk_stop(tk);
				snprintf(err, errlen, "out of memory for the timekeeper");
				return -ENOMEM;
			}
		}
	}
	tk->first[N] = h->total_cores;
	if (!(tk->ctr = calloc(N, sizeof(*tk->ctr)))) {
		emu_tk_stop(tk);
		snprintf(err, errlen, "out of memory for the timekeeper");
		return -ENOMEM;
	}
	for (uint32_t r = 0; r < N; r++)
		if (!(tk->ctr[r] = calloc((size_t)cores[r] * h->params.dma_counters, sizeof(struct tk_ctr)))) {
			emu_tk_stop(tk);
			snprintf(err, errlen, "out of memory for the timekeeper's counters");
			return -ENOMEM;
		}
	for (uint32_t g = 0; g < tk->ncores; g++)
		rebound(tk, &tk->c[g]); /* every core runs from time 0 */
	for (uint32_t k = 0; k < h->nlinks; k++) {
		struct torus_params lp;
		torus_link_params(&h->params, &h->links[k], &lp);
		torus_cost_init(&tk->costs[k], &lp);
		tk->link_cost[(size_t)h->links[k].node * NLINKS + h->links[k].link] = &tk->costs[k];
	}
	if (trace_fd >= 0) {
		/* the records are ours (the engines time nothing): one writer
		 * per node, --trace-buffer's bytes in two buffers, written
		 * through io_uring (the simulation never waits for the disk) up
		 * to 256 nodes, plainly beyond (a ring and its fd per node) */
		if (!(tk->trace = calloc(N, sizeof(*tk->trace)))) {
			emu_tk_stop(tk);
			snprintf(err, errlen, "out of memory for the timekeeper's trace");
			return -ENOMEM;
		}
		for (uint32_t r = 0; r < N; r++)
			if (!(tk->trace[r] = emu_trace_writer(trace_fd, r, 2, h->trace_buf_bytes, !!(h->trace_flags & TORUS_TRACE_F_PACKETS),
							      &m->hdr->trace_off, N <= 256, err, errlen))) {
				emu_tk_stop(tk);
				return -ENOMEM;
			}
	}
	struct timesim_config cfg = {&h->shape, &h->params, cores, emu_node_unit.getreq_bytes, tk->link_cost, {.hop = on_hop, .deposit = on_deposit, .left = on_left, .request = on_request, .arg = tk}};
	int rc = timesim_create(&cfg, &tk->ts);
	if (rc) {
		emu_tk_stop(tk);
		snprintf(err, errlen, "timekeeper: %s", strerror(-rc));
		return rc;
	}
	*out = tk;
	return 0;
}

void emu_tk_stop(struct emu_tk *tk) { emu_tk_stop_report(tk, NULL); }

void emu_tk_stop_report(struct emu_tk *tk, struct emu_tk_progress *last)
{
	if (last)
		emu_tk_progress(NULL, last);
	if (!tk)
		return;
	if (tk->ts) {
		atomic_store_explicit(&tk->stop, 1, memory_order_release);
		/* a job torn down leaves no simulation to finish: 16x16x16
		 * torus-stress, stopped at 150 us, kept its timekeeper simulating
		 * what the cores had posted for 20 more minutes */
		if (atomic_load(&tk->m->hdr->abort))
			timesim_cancel(tk->ts);
		emu_bell_ring_slow(&tk->m->hdr->tk_bell);
		if (tk->threaded)
			pthread_join(tk->thread, NULL);
		/* the links' busy time and free_at are the timekeeper's */
		const struct emu_shm_hdr *h = tk->m->hdr;
		for (uint32_t r = 0; r < h->nnodes; r++)
			for (uint32_t d = 0; d < h->shape.ndims; d++)
				for (uint32_t dir = 0; dir < 2; dir++) {
					if (!torus_dim_has_links(&h->shape, d))
						continue;
					struct torus_link *l = emu_shm_link_out(tk->m, r, d, dir);
					size_t i = (size_t)r * NLINKS + 2 * d + dir;
					atomic_store(&l->busy_ps, tk->busy[i]);
					atomic_store(&l->free_at, tk->free_at[i]);
				}
		if (getenv("TORUS_TK_DEBUG")) {
			struct timesim_stats st;
			timesim_stats(tk->ts, &st);
			fprintf(stderr,
				"torusrun: timekeeper: %llu events, %llu queries answered (%llu paces), %llu declared steps followed, "
				"%llu rounds, %llu sleeps; "
				"%llu hops, %llu simulator events (%llu stale, heap of at most %llu); "
				"wall time simulating %.3f s, asleep %.3f s; thread CPU time %.3f s\n",
				(unsigned long long)tk->events, (unsigned long long)tk->queries,
				(unsigned long long)tk->paced, (unsigned long long)tk->planned, (unsigned long long)tk->rounds, (unsigned long long)tk->sleeps, (unsigned long long)st.hops,
				(unsigned long long)st.events, (unsigned long long)st.stale, (unsigned long long)st.heap_max,
				(double)tk->sim_ns / 1e9, (double)tk->sleep_ns / 1e9, (double)tk->cpu_ns / 1e9);
			fprintf(stderr, "torusrun: timekeeper: %llu deferred waits; queries by type (enum emu_tk_query):",
				(unsigned long long)tk->deferred);
			for (uint32_t q = 1; q < TK_QTYPES; q++)
				fprintf(stderr, " %u:%llu", q, (unsigned long long)tk->by_type[q]);
			fputc('\n', stderr);
		}
		progress_publish(tk);
		if (last)
			emu_tk_progress(tk, last);
		timesim_destroy(tk->ts);
	}
	for (uint32_t r = 0; tk->trace && r < tk->m->hdr->nnodes; r++) {
		uint64_t records = 0, bytes = 0, waits = 0;
		int rc = emu_trace_writer_close(tk->trace[r], &records, &bytes, &waits);
		if (tk->trace[r])
			emu_trace_publish(emu_shm_node(tk->m, r), records, bytes, waits, rc);
	}
	free(tk->trace);
	if (tk->c)
		for (uint32_t i = 0; i < tk->ncores; i++) {
			if (tk->c[i].pst)
				for (uint32_t st = 0; st < EMU_TK_PLANS; st++)
					free(tk->c[i].pst[st].s);
			free(tk->c[i].pst);
			free(tk->c[i].pev);
			free(tk->c[i].pkts.slot);
			for (uint32_t qi = 0; qi < EMU_TK_NQ; qi++)
				free(tk->c[i].q[qi].arr);
			for (uint32_t f = 0; tk->c[i].fifo && f < tk->m->hdr->params.inj_fifos; f++)
				free(tk->c[i].fifo[f].d);
			free(tk->c[i].fifo);
		}
	free(tk->c);
	free(tk->first);
	if (tk->ctr)
		for (uint32_t r = 0; r < tk->m->hdr->nnodes; r++) {
			for (uint32_t i = 0; tk->ctr[r] && i < tk->cores[r] * tk->m->hdr->params.dma_counters; i++) {
				free(tk->ctr[r][i].dec);
				free(tk->ctr[r][i].level);
				free(tk->ctr[r][i].xvt);
			}
			free(tk->ctr[r]);
		}
	free(tk->ctr);
	free(tk->xf);
	free(tk->timer);
	for (size_t i = 0; i < tk->nbar; i++)
		free(tk->bar[i].members);
	free(tk->bar);
	free(tk->rf);
	free(tk->cores);
	free(tk->tree);
	free(tk->pubq);
	free(tk->pace);
	free(tk->busy);
	free(tk->free_at);
	free(tk->link_cost);
	free(tk->costs);
	free(tk);
}
