/*
 * Node runtime internals: what one node process holds while its engine and
 * core threads run. Private to emu/.
 */
#ifndef EMU_NODE_H
#define EMU_NODE_H

#include "emu_internal.h"

#include <torus/trace.h>

/* Packets taken from one input (or one DMA job) before the next: rt->batch,
 * an eighth of a link FIFO within these bounds. 32 with the default 64
 * slots; 128 from 1024 slots, where each input's drain then carries four
 * times the packets for one publish and doorbell round (the 8x8x8
 * all-to-all with 1024 slots: BENCHMARKS.md as of commit 26917ce, "One 8x8x8 all-to-all against
 * SimGrid"). */
#define EMU_ENGINE_BATCH_MIN 32u
#define EMU_ENGINE_BATCH_MAX 128u
static inline uint32_t emu_engine_batch(uint32_t fifo_slots)
{
	uint32_t b = fifo_slots / 8;
	return b < EMU_ENGINE_BATCH_MIN ? EMU_ENGINE_BATCH_MIN : b > EMU_ENGINE_BATCH_MAX ? EMU_ENGINE_BATCH_MAX : b;
}
#define EMU_PUBLISH_EVERY 8u   /* publish FIFO indices at least this often, so the
				* two ends of a FIFO work in parallel (even small ones) */
#define EMU_SLEEP_SLICE_MS 100 /* sleeps re-check abort/shutdown this often */
/* The slice this process uses: EMU_SLEEP_SLICE_MS, longer in crowded jobs
 * (emu_node_setup), where thousands of threads waking every 100 ms keep
 * the host's run queue full (16x16x16: 80,000 context switches a second,
 * 65% system time, with nothing to do). A wake-up never waits for the
 * slice: bells and the teardown's ring_all wake sleepers at once. */
extern int emu_sleep_slice_ms;
#define EMU_LAUNCHER_CHECK_MS 10 /* an idle engine looks for torusrun's exit this often */
/*
 * Polls before sleeping: a doorbell costs a futex wake (a syscall) plus the
 * sleeper's wake-up, far more than a packet, so a thread that just ran dry
 * looks again a few microseconds before it sleeps. Bounded, so hundreds of
 * idle threads still sleep.
 */
#define EMU_SPIN_POLLS 128u
/* then polls between sched_yield()s: runnable, but ceding the CPU to any
 * other runnable thread, so busy jobs lose nothing to the pollers */
#define EMU_YIELD_POLLS 32u

/* Idle poll number i: pause, or yield the CPU once the pauses are spent. */
static inline void emu_idle_poll(uint32_t i);
/* With many more threads than CPUs a poller only steals time from the
 * thread it waits for: the pauses and yields are cut to 1/8 (emu_node_attach
 * sets emu_idle_polls and emu_spin_polls once per process). */
extern uint32_t emu_spin_polls, emu_idle_polls;

/* The engine's own idle polls: oversubscribed, no pauses at all, only
 * yields (a pausing engine holds a CPU that one of the job's many other
 * threads, the one it waits for, could use). */
extern uint32_t emu_engine_spin_polls, emu_engine_idle_polls;
#define EMU_ENGINE_YIELD_POLLS_CROWDED 16u
/* the longest nap of a parked engine (emu_engine_main) */
#define EMU_ENGINE_PARK_MAX_MS 8
/* ... and none under --exact beyond this many threads (emu_node_attach) */
#define EMU_ENGINE_EXACT_NO_YIELD 1024u
/* --exact up to this many threads: the nodes run nicer than torusrun */
#define EMU_EXACT_NICE_THREADS 512u

static inline void emu_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

#include <sched.h>
static inline void emu_idle_poll(uint32_t i)
{
	if (i < emu_spin_polls)
		emu_cpu_relax();
	else
		sched_yield();
}
#define EMU_IDLE_POLLS emu_idle_polls

struct emu_node_rt;
/* the unit's state (emu/unit.h: the DMA unit's), opaque to the engine */
struct dma_core_local;
struct dma_engine;

/*
 * --chaos SEED: every engine and core thread perturbs the host's
 * scheduling at the points where it moves or observes something (an
 * engine iteration, a send, a receive, a post, a wait): now and then a
 * yield, rarely a sleep of up to 200 us, drawn from its own generator
 * seeded by the job's seed, the node and the core. Nothing in virtual time
 * may depend on it; the tests run jobs with and without it.
 */
struct emu_chaos {
	uint64_t state;      /* xorshift64*; 0: off */
	_Atomic uint64_t *yields, *sleeps; /* the node's counters in shared memory */
};
void emu_chaos_init(struct emu_chaos *c, const struct emu_node_rt *rt, uint32_t seed, uint32_t stream);
void emu_chaos_slow(struct emu_chaos *c);
static inline void emu_chaos(struct emu_chaos *c)
{
	if (__builtin_expect(c->state != 0, 0))
		emu_chaos_slow(c);
}

/*
 * packets taken from a reception ring as they come in wall clock,
 * kept until the timekeeper names them (a core's raw packets, its memory
 * FIFO's). Every wait of the core drains its rings into its stashes, so no
 * engine is ever held up by a core that waits. A stash is indexed by the
 * packets' names (a hash of what the timekeeper names them by), so a take
 * costs the same with 4000 packets stashed as with one.
 */
typedef uint64_t (*emu_stash_name_fn)(const struct torus_packet *pkt, const struct torus_side *side);
struct emu_stash {
	struct torus_packet *pkt;
	struct torus_side *side;
	uint64_t *name;      /* each slot's name */
	uint32_t n, cap;
	/* slot + 1 of each packet, 0: empty; open addressing, linear probing,
	 * at least twice the packets */
	uint32_t *index, icap;
	emu_stash_name_fn name_of;
};
void emu_stash_init(struct emu_stash *s, emu_stash_name_fn name_of);
/* The name of a raw packet (a core's stash): its sender and send number. */
uint64_t emu_raw_name(const struct torus_packet *pkt, const struct torus_side *side);
/* Move every packet of ring v (the core's to consume) into s: how many, or
 * -ENOMEM. Rings the node's engine if it waits for room. */
int emu_stash_drain(struct emu_node_rt *rt, struct emu_stash *s, struct torus_ring_view *v);
/* The same, packets whose sideband's vt has `bit` going to alt instead. */
int emu_stash_drain_split(struct emu_node_rt *rt, struct emu_stash *main, struct emu_stash *alt, uint64_t bit,
			  struct torus_ring_view *v);
/* The slot of a packet named `name` for which is(s, slot, key) holds, or -1. */
int emu_stash_find(const struct emu_stash *s, uint64_t name,
		   int (*is)(const struct emu_stash *s, uint32_t slot, const void *key), const void *key);
/* Forget packet i (the last one takes its place). */
void emu_stash_remove(struct emu_stash *s, uint32_t i);
/* Forget the first k packets (k at most s->n): the rest keep their order,
 * which is the order they came in while nothing else was removed. */
void emu_stash_remove_front(struct emu_stash *s, uint32_t k);
void emu_stash_free(struct emu_stash *s);
/* A name from two words (for name_of and the lookups that match it). */
static inline uint64_t emu_stash_mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full;
	return h ^ h >> 29;
}

struct emu_core {
	alignas(64) struct emu_node_rt *node;
	struct emu_core_shm *shm;
	uint32_t index;
	struct torus_ring_view inj; /* producer side */
	struct torus_ring_view rx;  /* consumer side */
	torus_vt_t vt;
	uint64_t progress, sent, received;
	uint64_t expect;            /* emu_core_expect: nothing posted until received reaches this */
	uint64_t mf_taken;          /* memory-FIFO packets taken (exact time) */
	uint64_t mf_expect;         /* dma_recfifo_expect: nothing posted until mf_taken reaches this */
	emu_core_fn fn;
	void *arg;
	int status;
	pthread_t thread;
	struct dma_core_local *dma;
	uint32_t global;            /* rank among all cores of the job */
	struct emu_chaos chaos;
	/* the channel to the timekeeper, and raw packets taken from
	 * the reception FIFO before the timekeeper said they had arrived */
	struct emu_tk_core *tk;
	uint32_t tk_q, tk_sent;
	/* deferred waits (emu_core_defer_wait): may it defer (--exact,
	 * without exact_lead or TORUS_DEFER=0), and is its clock now an
	 * offset from the answer to its last one (emu_core_sync ends that) */
	int defer, rel;
	uint64_t tk_src, tk_id;     /* the arrival being taken */
	struct emu_stash stash;   /* raw packets taken from rx, not yet received */
	/* a program's step being recorded (emu_core_step_begin): its posts
	 * are written down, not made, and its clock runs from 0 (plan_vt: the
	 * clock put aside); plan_ok: it fits */
	int plan_rec, plan_ok;
	torus_vt_t plan_vt;
	/* a program (emu_core_program_start): its steps, and while it runs the
	 * events its posts would tell (counted, not told) */
	int program;
	int prog_defer;               /* its end is a deferred wait: the core runs on from it */
	uint32_t prog_q, prog_s;      /* the program's query; the stream of the step being made */
	uint64_t prog_told, prog_events;
	struct emu_tk_ev *prog_ev;    /* every step's events, as told */
	size_t prog_nev, prog_cap;
	struct {
		struct { size_t first; uint32_t nev; } *step;
		size_t n, cap, next;  /* steps told; the next one to make */
	} prog_st[EMU_TK_PLANS];
	const struct emu_tk_ev *prog_cur; /* the step being made: its events, how many made */
	uint32_t prog_cur_n, prog_pos;
	torus_vt_t prog_base;
	uint32_t step_nev;            /* events of the step being recorded (after prog_nev) */
};

/* emu_core_expect's or dma_recfifo_expect's promise holds: the core may
 * tell the timekeeper nothing (posts and counter changes fail with -EBUSY,
 * before they change anything) */
static inline int emu_core_promised(const emu_core_t *c)
{
	return c->tk && (c->received < c->expect || c->mf_taken < c->mf_expect);
}
/* emu_core_expect (queue EMU_TK_Q_RAW) and dma_recfifo_expect
 * (EMU_TK_Q_MEMFIFO): the core acts on nothing before it has taken
 * `packets` more from the queue */
int emu_core_promise(emu_core_t *c, uint32_t q, uint64_t packets);

/* Recording a program's step (emu_core_step_begin): the DMA unit writes its
 * posts and counter changes down for the timekeeper and changes nothing else. */
static inline int emu_core_planning(const emu_core_t *c)
{
	return c->plan_rec;
}

struct emu_engine_in {
	struct torus_link *link;
	struct torus_ring_view vc[2]; /* consumer side */
	struct emu_bell *producer_bell;
	uint32_t dim, dir;
};

struct emu_engine_out {
	struct torus_link *link;
	struct torus_ring_view vc[2]; /* producer side */
	struct emu_bell *consumer_bell;
	int wrap;                     /* this hop crosses the dateline */
	int valid;
	const struct torus_cost *cost; /* the node's, or the link's own (--link) */
};

struct emu_engine_core {
	struct torus_ring_view inj; /* consumer side */
	struct torus_ring_view rx;  /* producer side */
	struct emu_core_shm *shm;
};

/* An output ring with commits not yet published, and whom to tell. */
struct emu_dirty {
	struct torus_ring_view *v;
	struct emu_bell *bell;
};

struct emu_node_rt {
	struct emu_shm shm;
	struct emu_shm_hdr *hdr;
	struct emu_node_shm *me;
	const struct torus_params *params;
	struct torus_cost cost;
	struct torus_cost *link_cost[2 * TORUS_MAX_DIMS]; /* --link: this node's links with their own */
	uint32_t rank, ncores;
	uint32_t batch;             /* EMU_ENGINE_BATCH_MIN..MAX */
	uint32_t coords[TORUS_MAX_DIMS];
	uint8_t *route;
	struct emu_engine_in in[2 * TORUS_MAX_DIMS];
	uint32_t nin;
	struct emu_engine_out out[2 * TORUS_MAX_DIMS];
	struct emu_engine_core *ecore;
	struct emu_core **cores;
	uint64_t delivered, orphaned, moved;
	struct emu_dirty dirty[4 * TORUS_MAX_DIMS + TORUS_MAX_CORES];
	uint32_t ndirty;
	uint32_t *first_core;       /* global rank of each node's core 0; [nnodes] = total */
	_Atomic uint64_t epoch;     /* engine iterations started (see emu_engine_quiesce) */
	int launcher_fd;            /* pidfd of torusrun, -1 if unknown */
	int64_t launcher_checked_ms; /* CLOCK_MONOTONIC_COARSE of the engine's last look */
	_Atomic int launcher_gone;  /* torusrun died: tear this node down */
	struct dma_engine *dma;
	struct emu_chaos chaos;     /* the engine's */
	int exact;                  /* a timekeeper times the job (every torusrun job; not a hand-driven harness) */
	pthread_t engine;
	pthread_mutex_t pass_lock;  /* held for every engine pass, by the engine or a core */
	int core_passes;            /* cores run passes themselves (emu_engine_try_pass) */
	/* the engine parks while cores run its passes (emu_engine_main) */
	_Atomic uint64_t core_pass_seq;  /* emu_engine_try_pass calls */
	_Atomic uint64_t park_veto;      /* core_pass_seq when a core last stopped passing */
	struct emu_bell park;            /* the parked engine sleeps here */
	_Atomic int backlog;             /* the last pass left work waiting for room (or moved some) */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t cores_finished;
	int failed_core;
};

/*
 * Every wait of a core goes through emu_core_block: poll `ready` a few
 * microseconds, then announce on the core's doorbell, `arm` (e.g. ask the
 * engine to ring when a FIFO drains), re-check, and sleep in slices that
 * also watch for the job being torn down; `disarm` undoes `arm`. Whoever
 * makes `ready` true rings the core's bell after doing so (Dekker pairing in
 * emu_bell_prepare / emu_bell_ring). Returns what `ready` returned (> 0 done,
 * < 0 error), 0 when timeout_ms (>= 0) passed, or -ECANCELED.
 */
struct emu_wait {
	int (*ready)(void *arg);
	void (*arm)(void *arg);
	void (*disarm)(void *arg);
	void *arg;
};
int emu_core_block(emu_core_t *c, const struct emu_wait *w, int timeout_ms);

/* tell the timekeeper the core has news (events, a query, its
 * clock, its end), after writing it. */
void emu_core_tk_poke(emu_core_t *c);
/* Publish the core's clock (its shm copy, for the timekeeper and the hang
 * detector), counting it as progress (emu/core.c). */
void emu_core_publish(emu_core_t *c);
/* Tell the timekeeper the core has news without waking it unless it waits
 * for this core (emu/core.c). */
void emu_core_tk_nudge(emu_core_t *c);
/* Drain what the core receives into its stashes, raw and the unit's
 * (time/client.c): 0 or a negative errno. */
int emu_core_tk_drain(emu_core_t *c);
/* tell the timekeeper what the core sends (0, or a negative errno). */
int emu_core_tk_event(emu_core_t *c, const struct emu_tk_ev *ev);
/* wait while the core's clock is more than exact_lead ahead of
 * the simulation (before a post moves the clock); 0 or a negative errno */
int emu_core_tk_pace(emu_core_t *c);
/* ask (fill c->tk's query fields qn, qids, qkey first; the query
 * is at the core's clock); returns its number. Then wait for the answer. */
uint32_t emu_core_tk_ask(emu_core_t *c, uint32_t type, torus_vt_t deadline);
int emu_core_tk_answer(emu_core_t *c, uint32_t q);
/* arrival queue q (EMU_TK_Q_*) of the core.
 *   head: its earliest arrival not taken, as published now (1 and *a, or 0);
 *   next: its earliest arrival at or before the core's clock (1 and *a, not
 *         taken), 0 if there is none, final (it may ask the timekeeper);
 *   take: the head is taken;
 *   wait_arrival: sleep, in virtual time, for its next arrival, until the
 *         deadline: 1 and *a (the clock moves to it), 0 at the deadline
 *         (the clock moves there); emu_core_tk_deadline converts a
 *         timeout in (virtual) milliseconds, < 0 meaning none. */
int emu_core_tk_head(emu_core_t *c, uint32_t q, struct emu_tk_arr *a);
int emu_core_tk_next(emu_core_t *c, uint32_t q, struct emu_tk_arr *a);
void emu_core_tk_take(emu_core_t *c, uint32_t q);
torus_vt_t emu_core_tk_deadline(const emu_core_t *c, int timeout_ms);
/* The clock moves on (to at least `to`) because a look found nothing (a
 * poll's cost) or a wait timed out: virtual time passed, and nothing else.
 * Unlike emu_core_compute, this is not progress for the hang detector: a
 * program that only polls and waits in a loop that times out (an MPI
 * deadlock) is hung, however far its clock runs. */
void emu_core_idle(emu_core_t *c, torus_vt_t to);
/* A look that found nothing: the clock moves on by poll_cost (idle). */
void emu_core_missed(emu_core_t *c);
/*
 * --exact, deferred waits. A wait whose outcome the program fixes (one
 * counter reaching zero) needs no answer from the timekeeper: the core
 * calls emu_core_defer_wait, which tells the timekeeper in its event ring,
 * then waits for it physically and runs on. Its clock is then an
 * offset from when, in virtual time, the wait was over, which the
 * timekeeper works out behind it; the events it tells carry such offsets.
 * Before it observes anything whose outcome depends on virtual time (its
 * clock, a poll, a receive, any question), emu_core_sync asks for its
 * clock. emu_core_can_defer: 1 if a wait may be deferred now (not inside
 * a plan, a program or a promise, nor with TORUS_DEFER=0), 0 if not,
 * -EINVAL for a TORUS_DEFER other than 0 or 1 (said once). The others
 * return 0 or a negative errno.
 */
int emu_core_can_defer(const emu_core_t *c);
int emu_core_defer_wait(emu_core_t *c, uint32_t counter);
/* The same for a barrier (the timekeeper's key, n members). */
int emu_core_defer_barrier(emu_core_t *c, uint64_t key, uint32_t n);
/* The program will take memory-FIFO packet index of message name (sent in
 * any order, EMU_TK_MSG_ANY) from node src: its clock moves to the packet's
 * arrival if that is later, deferred where it can be, else asked
 * (EMU_TKQ_PKT). */
int emu_core_wait_packet(emu_core_t *c, uint32_t src, uint64_t name, uint32_t index);
int emu_core_sync(emu_core_t *c);
int emu_core_tk_wait_arrival(emu_core_t *c, uint32_t q, torus_vt_t deadline, struct emu_tk_arr *a);

void *emu_engine_main(void *arg);
/* One iteration of the engine's loop, never sleeping; returns packets and
 * jobs moved. For a process that drives engines by hand instead of running
 * their threads (the DMA fuzz target). */
uint32_t emu_engine_step(struct emu_node_rt *rt);
int emu_engine_try_pass(struct emu_node_rt *rt);
/* A core stops running passes (it goes to sleep, or ends): the parked
 * engine takes over at once. */
void emu_engine_unpark(struct emu_node_rt *rt);
/* Apply the counter decrements and publish the rings that deposits made
 * outside emu_engine_step left pending (a hand-driven engine's). */
void emu_engine_publish(struct emu_node_rt *rt);

/* Remember an output ring with unpublished packets; the engine publishes it
 * and rings its consumer at the end of the batch. */
static inline void emu_engine_mark_dirty(struct emu_node_rt *rt, struct torus_ring_view *v, struct emu_bell *bell)
{
	for (uint32_t i = 0; i < rt->ndirty; i++)
		if (rt->dirty[i].v == v)
			return;
	rt->dirty[rt->ndirty].v = v;
	rt->dirty[rt->ndirty].bell = bell;
	rt->ndirty++;
}
/*
 * The first hop of packets injected here for node `dest` (not this node)
 * with routing hints `hints`: the same for all of them, so a DMA transfer
 * looks it up once and then, per packet, reserves a slot on it
 * (emu_route_reserve), writes the packet there and sends it
 * (emu_route_send); after the last one, emu_route_done.
 */
struct emu_route {
	struct emu_engine_out *out;
	struct torus_ring_view *v;
	uint32_t vc;
};
static inline void emu_engine_route(struct emu_node_rt *rt, uint32_t dest, uint16_t hints, struct emu_route *r)
{
	r->out = &rt->out[torus_route_apply_hints(rt->route[dest], hints)];
	r->vc = r->out->wrap ? 1 : 0; /* injected: VC 0, unless this hop crosses the dateline */
	r->v = &r->out->vc[r->vc];
}
/* A slot for the next packet, or NULL if the link FIFO is full (its
 * consumer rings the engine when it drains). */
static inline struct torus_packet *emu_route_reserve(struct emu_route *r, struct torus_side **side)
{
	struct torus_packet *dst = torus_ring_reserve(r->v, side);
	if (!dst && torus_ring_mark_full(r->v))
		dst = torus_ring_reserve(r->v, side);
	return dst;
}
/* The packet written into the reserved slot leaves: count it on the link,
 * pass its sideband on (vt: its post time or its message's name; the
 * timekeeper times it), commit. */
static inline void emu_route_send(struct emu_route *r, struct torus_packet *pkt, struct torus_side *side,
				  torus_vt_t vt, uint32_t tag, uint32_t aux)
{
	torus_pkt_set_vc(&pkt->hdr, r->vc);
	torus_link_count_traffic(r->out->link, pkt->hdr.len, r->out->cost->wire[pkt->hdr.len]);
	side->vt = vt;
	side->tag = tag;
	side->aux = aux;
	torus_ring_commit(r->v);
}
/* After the packets sent on the route: publish them at the batch's end. */
static inline void emu_route_done(struct emu_node_rt *rt, struct emu_route *r)
{
	emu_engine_mark_dirty(rt, r->v, r->out->consumer_bell);
	torus_ring_prefetch_next(r->v);
}

/*
 * Emit one packet from this node: hdr (dest, len, kind, hints, sw) plus
 * len payload bytes read from `payload`, ready at `ready`. Routed like any
 * injected packet (to a link, or delivered here). Returns 1 and sets
 * *left_at (when it finished leaving the node), or 0 if the first FIFO is
 * full (the engine is rung when it drains).
 */
int emu_engine_emit(struct emu_node_rt *rt, const struct torus_pkt_hdr *hdr, const void *payload, torus_vt_t vt,
		    uint32_t tag, uint32_t aux);
/*
 * Wait until the engine has finished every deposit that might have begun
 * before the caller's last seq_cst store (e.g. a region's valid flag): the
 * engine bumps `epoch` at the start of each iteration and before sleeping.
 */
int emu_engine_quiesce(struct emu_node_rt *rt);
/* Map a global core rank to (node, core); -EINVAL if out of range. */
int emu_rt_locate(const struct emu_node_rt *rt, uint32_t global, uint32_t *node, uint32_t *core);
int emu_node_setup(struct emu_node_rt *rt, int fd, uint32_t rank, char *err, size_t errlen);
void emu_node_teardown(struct emu_node_rt *rt);

static inline int emu_job_aborting(const struct emu_node_rt *rt)
{
	return atomic_load_explicit(&rt->hdr->abort, memory_order_relaxed) != 0 ||
	       atomic_load_explicit(&rt->launcher_gone, memory_order_relaxed) != 0;
}
/* Engine: has torusrun exited? (sets launcher_gone) */
int emu_launcher_check(struct emu_node_rt *rt);

#endif
