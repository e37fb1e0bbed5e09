/*
 * The timekeeper's private state, shared by its files: timekeeper.c (the
 * thread, its rounds, start and stop, the arrivals it publishes),
 * tk_net.c (what the network does: packets, transfers, counters, marks,
 * timers, faults, posts) and tk_answer.c (the cores' questions, deferred
 * waits, programs, barriers).
 */
#ifndef TORUS_TK_INTERNAL_H
#define TORUS_TK_INTERNAL_H

#include "../emu/emu_internal.h"
#include "../emu/node.h" /* emu_stash_mix */
#include "../torus/timesim.h"
#include "../emu/unit.h"
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
	torus_vt_t answered_at; /* its last answer, or its last deferred wait's end: it acts no earlier */
	/* emu_core_expect: it acts on nothing before its raw arrivals number
	 * `expect` (dma_recfifo_expect: its memory-FIFO arrivals mf_expect);
	 * until then a running core sets no bound, and a waiter answered by
	 * an arrival does not stop the simulation */
	uint64_t raw_arrived, expect, mf_arrived, mf_expect;
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
	struct tk_xfer *xf;   /* records in use and free ones (a list from xf_free) */
	size_t nxf, capxf, xf_free, xf_live;
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
	uint64_t pk_left;            /* its packets (a get: its reply's) not deposited yet; free: the next free record */
	uint32_t rf;                 /* unchecked and (partly) refused: index + 1 into tk->rf */
	uint32_t holds;              /* XF_IN_FIFO | XF_IN_SIM: who still reads it; 0: free, to be reused */
};
#define XF_IN_FIFO 1u  /* its injection FIFO's list (tk_fifo) names it */
#define XF_IN_SIM 2u   /* the simulator still has packets of it, or it has not fully left */
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


static inline uint64_t raw_cookie(uint32_t src_global, uint32_t dst_core, uint32_t id)
{
	return (uint64_t)src_global << 40 | (uint64_t)(dst_core & 0xFF) << 32 | id;
}

static inline torus_vt_t add_sat(torus_vt_t a, torus_vt_t b) { return a > TIMESIM_NEVER - b ? TIMESIM_NEVER : a + b; }

/* Room for one more element in arr (n used of *cap, elem bytes each):
 * arr, or arr doubled (from `first`), or NULL if out of memory (arr stays). */
static inline void *grow(void *arr, size_t *cap, size_t n, size_t elem, size_t first)
{
	if (n < *cap)
		return arr;
	size_t nc = *cap ? 2 * *cap : first;
	void *na = realloc(arr, nc * elem);
	if (na)
		*cap = nc;
	return na;
}

/* Shared between the timekeeper's files. */
int tk_advance(struct emu_tk *tk);
int tk_barrier_arrive(struct emu_tk *tk, struct tk_core *k);
int tk_first_mark(const struct emu_tk *tk, const struct tk_core *k, torus_vt_t q, uint32_t *which, torus_vt_t *t);
int tk_flush(struct emu_tk *tk);
int tk_look(struct emu_tk *tk, struct tk_core *k, int *err);
int tk_on_request(void *arg, uint32_t node, uint64_t cookie, torus_vt_t t);
int tk_pace_answer(struct emu_tk *tk, torus_vt_t now);
int tk_pkt_answer(struct emu_tk *tk, struct tk_core *k);
int tk_post(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_ev *ev);
int tk_try_answer(struct emu_tk *tk, struct tk_core *k);
int64_t tk_value_at(const struct tk_ctr *c, torus_vt_t q);
torus_vt_t tk_first_arrival(const struct tk_core *k, uint32_t qi);
torus_vt_t tk_zero_after(const struct tk_ctr *c, torus_vt_t q);
uint32_t tk_fifo_pending(const struct emu_tk *tk, const struct tk_fifo *f, torus_vt_t q);
void tk_answer(struct emu_tk *tk, struct tk_core *k, int found, torus_vt_t vt);
void tk_ctr_change(struct emu_tk *tk, uint32_t node, uint32_t id, int64_t delta, torus_vt_t t, int alloc, int in_run);
void tk_defer(struct emu_tk *tk, struct tk_core *k, torus_vt_t at, uint32_t which, torus_vt_t xt);
void tk_on_deposit(void *arg, uint32_t node, uint64_t cookie, uint64_t index, uint32_t len, torus_vt_t t);
void tk_on_left(void *arg, uint32_t node, uint64_t cookie, uint32_t len, torus_vt_t t);
void tk_pub_push(struct emu_tk *tk, struct tk_core *k);
void tk_rebound(struct emu_tk *tk, struct tk_core *k);
void tk_refill(struct tk_core *k, uint32_t qi);
void tk_refill_all(struct tk_core *k);

#endif
