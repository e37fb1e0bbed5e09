/*
 * Internals of emu/: the shared-memory layout of a job, doorbells, the engine,
 * and the launcher's configuration. Shared by torusrun and the node runtime;
 * never included by programs.
 */
#ifndef EMU_INTERNAL_H
#define EMU_INTERNAL_H

#include "torus/emu.h"
#include "torus/machine.h"
#include "../torus/torus_internal.h"

#include <pthread.h>
#include <stdbool.h>

#define EMU_SHM_MAGIC 0x54524f5553454d55ull /* "TORUSEMU" */
#define EMU_SHM_VERSION 4u
#define EMU_PAGE 4096u

/* --------------------------------------------------------------- doorbell */

/*
 * A sleeping thread's doorbell (a futex word in shared memory). Waiter:
 * snapshot seq, announce itself in sleepers, re-check its queues, then sleep
 * on seq. Ringer: publish work, then ring, which only costs a syscall when
 * somebody sleeps. The seq_cst fences on both sides make a lost wake-up
 * impossible (Dekker: each side stores, fences, then loads the other's word).
 */
struct emu_bell {
	alignas(64) _Atomic uint32_t seq;
	_Atomic uint32_t sleepers;
	/* a sleeper prepared since the last ring: the first ringer to clear
	 * it makes the system call, the others need not (under --exact 64
	 * cores that post while the timekeeper sleeps made 54,000 futex wakes
	 * on the 4 MiB allreduce, for 2,400 sleeps) */
	_Atomic uint32_t armed;
	uint8_t pad_[52];
};
_Static_assert(sizeof(struct emu_bell) == 64, "bell is one cache line");

void emu_bell_ring_slow(struct emu_bell *b);
static inline void emu_bell_ring(struct emu_bell *b)
{
	/* partner: the fence in emu_bell_prepare; acquire: a sleeper seen
	 * has armed the bell. A ringer that finds it disarmed follows one that
	 * disarmed it and rings: every sleeper's snapshot predates that ring. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&b->sleepers, memory_order_acquire) &&
	    atomic_exchange_explicit(&b->armed, 0, memory_order_acq_rel))
		emu_bell_ring_slow(b);
}
/* Returns the seq snapshot to pass to emu_bell_sleep after re-checking work. */
uint32_t emu_bell_prepare(struct emu_bell *b);
/* Sleep until rung or timeout_ms passes; always undoes emu_bell_prepare.
 * 0 if rung (before or during the sleep), -ETIMEDOUT, or -EINTR. */
int emu_bell_sleep(struct emu_bell *b, uint32_t seq, int timeout_ms);
/* Undo emu_bell_prepare without sleeping (work turned up). */
void emu_bell_cancel(struct emu_bell *b);

/* ------------------------------------------------------- shared memory */

enum emu_node_state {
	EMU_NODE_NEW = 0,      /* process not attached (yet, or not a torus program) */
	EMU_NODE_RUNNING = 1,  /* cores running */
	EMU_NODE_DONE = 2,     /* every core returned; engine still forwarding */
	EMU_NODE_EXITED = 3,   /* left after shutdown */
};

enum emu_core_state { EMU_CORE_RUNNING = 0, EMU_CORE_WAITING = 1, EMU_CORE_DONE = 2 };

/*
 * One barrier of the barrier network: slot 0 is the global barrier, the
 * others are claimed by teams (key = hash of the member list).
 */
struct emu_barrier_shm {
	alignas(64) _Atomic uint64_t key;
	_Atomic uint32_t arrived;
	_Atomic uint32_t generation;
	_Atomic uint64_t max_vt;
	_Atomic uint64_t release_vt;
	uint32_t members;
	_Atomic uint32_t max_in;     /* largest input of this episode (dma_barrier_team_max) */
	_Atomic uint32_t max_out;    /* the last episode's largest input, read by the leavers */
	_Atomic uint32_t inv_in;     /* largest ~input: the smallest input, complemented */
	_Atomic uint32_t inv_out;
	uint8_t pad_[12];
};
_Static_assert(sizeof(struct emu_barrier_shm) == 64, "barrier is one cache line");
#define EMU_BARRIER_SLOTS 128u

struct emu_shm_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t nnodes;
	uint64_t total_bytes;
	struct torus_shape shape;
	struct torus_params params;
	uint32_t total_cores;
	uint32_t max_cores;
	uint64_t off_node_table;   /* uint64_t[nnodes]: offset of each node's emu_node_shm */
	/* uint32_t[nnodes + 1]: global rank of each node's core 0, then
	 * total_cores. Dense, so that a node process that needs every node's
	 * core count touches a few pages, not one per node (on 16x16x16 that
	 * was 874 page-table pages per process: 14 GB of page tables) */
	uint64_t off_first_core;
	/* the slot area: every node's slot block (emu_node_shm.off_slot_block),
	 * the packets of its rings, apart from the tables every node reads */
	uint64_t off_slots, slots_bytes;
	alignas(64) _Atomic uint32_t shutdown; /* torusrun: every node done, network drained */
	_Atomic uint32_t abort;                /* torusrun: tearing the job down */
	/* --trace: the file's end, where the next chunk goes; buffers per node */
	alignas(64) _Atomic uint64_t trace_off;
	uint32_t trace_nbuf, trace_buf_bytes, trace_flags;
	uint32_t chaos_seed;                   /* --chaos: 0 off */
	uint32_t nlinks;                       /* per-link settings (--link) */
	struct torus_link_set links[TORUS_MAX_LINK_SETS];
	struct emu_barrier_shm barrier[EMU_BARRIER_SLOTS];
	/* the timekeeper (time/timekeeper.c) and its channel per core */
	uint32_t exact;
	uint32_t pad_;
	uint64_t off_tk;                       /* emu_tk_core[total_cores], by global core rank */
	uint64_t off_tk_dirty;                 /* _Atomic uint64_t[(total_cores + 63) / 64]: a bit per
						* core with news for the timekeeper */
	struct emu_bell tk_bell;               /* the timekeeper sleeps here */
	alignas(64) _Atomic uint64_t tk_now;   /* everything before it is final (the timekeeper's) */
	/* the core (global rank) whose news the timekeeper waits for as it
	 * sleeps, UINT32_MAX: anyone's. The others' posts, deferred waits and
	 * clocks cannot let it go on, so they do not wake it (emu_core_tk_nudge) */
	_Atomic uint32_t tk_waits_for;
};

/*
 * what a core tells the timekeeper, and what it answers.
 *
 * Events (core -> timekeeper, a single-producer ring): what the core puts
 * on the network, at its virtual time. Queries (one at a time): the core
 * asks what it can observe at its clock, and sleeps until the answer.
 * `clock` is the core's lower bound on its next event: a running core
 * publishes it as it moves, so the timekeeper can simulate up to it.
 */
enum emu_tk_ev_type {
	EMU_TK_RAW = 1,          /* a raw packet: node, core, len, ready, id (send number), hints */
	EMU_TK_DMA = 2,          /* a descriptor: kind, fifo, node, len, ready, hints, inj, rec */
	EMU_TK_CTR_ALLOC = 3,    /* counter rec (node-wide id) starts at 0, at ready */
	EMU_TK_CTR_ADD = 4,      /* counter rec changes by delta, at ready */
	EMU_TK_CTR_WATCH = 5,    /* counter rec gets id watermarks (0: none), levels to follow */
	EMU_TK_CTR_LEVEL = 6,    /* watermark id of counter rec is level delta */
	EMU_TK_REFUSE = 7,       /* the next EMU_TK_DMA (an unchecked post) is refused, in part or whole */
	EMU_TK_EXPECT = 8,       /* emu_core_expect (node EMU_TK_Q_RAW) or dma_recfifo_expect (node
				  * EMU_TK_Q_MEMFIFO): no event until the core's arrivals in that
				  * queue total len */
	EMU_TK_STEP = 9,         /* a step of a program (emu_core_step_end): stream core, after mark id of
				  * counter rec (id UINT64_MAX: none), its clock ready after the len events
				  * that follow (times from the step's start) */
	EMU_TK_WAITED = 10,      /* the core waited, at ready, and ran on (a deferred wait): kind 0 for
				  * counter rec to be zero, kind 1 for the barrier named id of len
				  * members, kind 2 for the memory-FIFO packet index len of message id
				  * from node rec, sent in any order, kind 3 for the end of its program
				  * of len streams (the steps told before it, EMU_TKQ_PROGRAM); its events
				  * after this one are timed from when it was over (EMU_TK_EV_REL) */
};
/*
 * A memory-FIFO message's name: its sender's count of memory-FIFO messages
 * (its packets carry it in the sideband's vt, the timekeeper in the
 * event's delta). Messages sent in any order (DMA_F_ANY_ORDER) have the top
 * bit: the timekeeper keeps their arrivals by name for the receiver's
 * deferred waits (EMU_TK_WAITED kind 2, EMU_TKQ_PKT) instead of queueing them; their
 * names are the sender's keys, unique per sending node and receiving core.
 */
#define EMU_TK_MSG_ANY (1ull << 63)
/* In an event's flags (pad_): its ready is an offset from the answer to the
 * core's last EMU_TK_WAITED, which the core does not know (a deferred wait). */
#define EMU_TK_EV_REL 1u
/*
 * What the destination will refuse of an unchecked descriptor, worked out
 * by the core at post from the same tables the destination checks (errors
 * as positive enum dma_error values; 0: none):
 *   all      every packet (put, a get's reply: the region; memory FIFO: the
 *            core or handler; copy: anything), or a get's request (req);
 *   ctr      put and a get's reply: the packets inside the region, whose
 *            counter does not exist;
 *   limit    put and a get's reply: the region's size; a packet past it is
 *            refused (DMA_ERR_RANGE).
 * In the event: kind = all, fifo = ctr, inj = req, rec = the error of a
 * packet past the limit, node = region, core = req_region, len = limit,
 * id = the data's offset, delta = req_offset.
 */
enum { EMU_TK_PUT = 1, EMU_TK_GET = 2, EMU_TK_MEMFIFO = 3, EMU_TK_COPY = 4 /* rec falls by len, len/copy_bw after ready */ };
struct emu_tk_ev {
	uint32_t type;
	uint32_t node, core;     /* destination */
	uint32_t fifo, kind;     /* DMA: injection FIFO, EMU_TK_PUT, _GET or _MEMFIFO (to core) */
	uint32_t inj, rec;       /* DMA: injection counter, reception (or reply) counter */
	uint16_t hints;
	uint16_t pad_;
	uint64_t len;            /* bytes */
	torus_vt_t ready;        /* when it may start (the core's clock after posting); a counter op's time */
	uint64_t id;             /* raw: the core's send number; DMA: the descriptor's trace tag */
	int64_t delta;           /* a counter add */
};
_Static_assert(sizeof(struct emu_tk_ev) == 64, "event is one cache line");
#define EMU_TK_SLOTS 256u

enum emu_tk_query {
	EMU_TKQ_RECV = 1,        /* answered once every arrival up to vt is in the arrival ring */
	EMU_TKQ_WAIT_RECV = 2,   /* answered at the first raw arrival (in the ring), or at deadline */
	EMU_TKQ_CTR = 3,         /* counter qids[0]'s value and hits at vt */
	EMU_TKQ_CTR_WAIT = 4,    /* the first time at or after vt that one of qids[0..qn) is zero */
	EMU_TKQ_BARRIER = 5,     /* a barrier of qn members named qkey: max arrival + barrier_latency */
	EMU_TKQ_MARK = 6,        /* marks qmarks[i] of counters qids[i]: the earliest crossed by vt */
	EMU_TKQ_MARK_WAIT = 7,   /* the same, or the first crossing after vt */
	EMU_TKQ_PENDING = 8,     /* descriptors of injection FIFO qkey not fully injected by vt */
	EMU_TKQ_CTR_OR_RECV = 9, /* CTR_WAIT, or the first arrival in queue qkey (a_which = qn), or
				  * deadline (afound 0), whichever comes first */
	EMU_TKQ_PACE = 10,       /* answered once the simulation is at or past deadline (a core that
				  * ran too far ahead: tk_now + exact_lead); it stays a running core */
	EMU_TKQ_PROGRAM = 11,    /* run the qn streams of steps sent before (EMU_TK_STEP): answered at
				  * the end of the last step */
	EMU_TKQ_SYNC = 12,       /* the core's clock: qvt is an offset from its last EMU_TK_WAITED's
				  * answer, answered (absolute) once that is known */
	EMU_TKQ_PKT = 13,        /* the arrival of packet qids[1] of message qkey from node qids[0],
				  * sent in any order: answered at the later of it and vt
				  * (EMU_TK_WAITED kind 2, asked) */
};
/* Arrival queues (RECV and WAIT_RECV name one in qkey): raw packets, and
 * memory-FIFO packets (the DMA unit's) */
enum { EMU_TK_Q_RAW = 0, EMU_TK_Q_MEMFIFO = 1, EMU_TK_Q_FAULT = 2, EMU_TK_NQ = 3 };
#define EMU_TKQ_MAX_IDS 64u
/* A raw packet's arrival, as the timekeeper publishes it to the receiving
 * core: in the order of arrival, which is virtual-time order. */
struct emu_tk_arr {
	torus_vt_t t;
	uint64_t src;            /* sending node << 8 | core; a fault: (uint32_t)error << 32 | node */
	uint64_t id;             /* raw: its send number; memory FIFO: its message's post time; a fault: offset */
	uint64_t index;          /* memory FIFO: the packet's index in its message; a fault: region << 32 | len */
};
#define EMU_TK_ARR_SLOTS 256u
/* An arrival queue: the timekeeper appends, the core takes; arrivals that
 * did not fit wait at the timekeeper (over says how many) */
struct emu_tk_aq {
	alignas(64) _Atomic uint32_t head;   /* timekeeper writes */
	_Atomic uint32_t over;
	alignas(64) _Atomic uint32_t tail;   /* core writes */
	alignas(64) struct emu_tk_arr arr[EMU_TK_ARR_SLOTS];
};
#define EMU_TK_PLANS 12u      /* streams of a program (EMU_PROGRAM_STREAMS) */
#define EMU_TK_STEP_EVS 256u  /* events of one step of a program (EMU_TK_STEP) */
struct emu_tk_core {
	alignas(64) _Atomic uint32_t head;   /* core writes */
	alignas(64) _Atomic uint32_t tail;   /* timekeeper writes */
	alignas(64) _Atomic uint64_t clock;  /* core: lower bound on its next event */
	_Atomic uint32_t want;               /* timekeeper: tell me when clock moves or the ring drains */
	_Atomic uint32_t qseq;               /* core: number of its last query (fields below) */
	uint32_t qtype, qn;
	torus_vt_t qvt, qdeadline;
	uint64_t qkey;
	uint32_t qids[EMU_TKQ_MAX_IDS];
	uint32_t qmarks[EMU_TKQ_MAX_IDS];    /* EMU_TKQ_MARK*: the mark of each counter */
	alignas(64) _Atomic uint32_t aseq;   /* timekeeper: number of the last query answered */
	uint32_t afound;
	torus_vt_t avt;                      /* the core's clock after the query */
	int64_t a_value;                     /* EMU_TKQ_CTR: the counter's value */
	uint64_t a_hits;                     /* and its hits */
	uint32_t a_which;                    /* EMU_TKQ_CTR_WAIT, _MARK*, _CTR_OR_RECV: which counter */
	torus_vt_t a_t;                      /* EMU_TKQ_MARK*: when that mark was crossed */
	alignas(64) struct emu_tk_ev ev[EMU_TK_SLOTS];
	struct emu_tk_aq aq[EMU_TK_NQ];
};

struct emu_core_shm {
	struct emu_bell bell;                  /* the core sleeps here */
	alignas(64) _Atomic uint64_t vt;       /* published clock (core writes) */
	_Atomic uint64_t progress;             /* bumped on every call that moves something */
	_Atomic uint64_t sent;                 /* packets committed to the injection FIFO */
	_Atomic uint64_t received;
	_Atomic uint32_t state;
	_Atomic int32_t status;                /* what the core function returned */
	uint64_t off_dma;                      /* struct dma_core_shm of this core */
	_Atomic uint64_t posted;               /* DMA descriptors posted */
	_Atomic int32_t tid;                   /* the core's thread (the hang detector looks at it) */
	uint8_t pad_[4];
	struct torus_ring inj;                 /* core -> engine */
	struct torus_ring rx;                  /* engine -> core */
};
_Static_assert(sizeof(struct emu_core_shm) == 128 + 2 * 192, "core block");

struct emu_node_shm {
	struct emu_bell bell;                  /* the engine sleeps here */
	alignas(64) _Atomic uint64_t progress; /* engine: packets moved */
	_Atomic uint64_t delivered;            /* packets deposited in a reception FIFO */
	_Atomic uint64_t orphaned;             /* arrived after the node's cores finished */
	_Atomic uint64_t final_vt;             /* max core clock at the end */
	_Atomic uint64_t emitted;              /* packets the DMA unit sent */
	_Atomic uint64_t desc_done;            /* descriptors fully injected */
	_Atomic uint64_t jobs_pending;         /* remote gets and faults still to send */
	_Atomic uint64_t trace_records, trace_bytes, trace_waits; /* --trace, at the end */
	_Atomic int32_t trace_status;          /* 1 written, < 0 -errno, 0 not traced */
	_Atomic uint32_t state;
	_Atomic int32_t pid;
	_Atomic int32_t engine_tid;            /* the engine's thread (the hang detector looks at it) */
	_Atomic uint64_t chaos_yields, chaos_sleeps; /* --chaos: what its threads did */
	uint32_t rank;
	uint32_t ncores;
	uint64_t off_cores;                    /* emu_core_shm[ncores] */
	uint64_t off_links_in;                 /* torus_link[2*ndims], incoming, by (dim,dir of travel) */
	uint64_t region_bytes;                 /* whole page-aligned region of this node */
	/* its page-aligned block in the slot area: the slots of its incoming
	 * link rings, then of each core's injection and reception rings */
	uint64_t off_slot_block, slot_block_bytes;
};
_Static_assert(sizeof(struct emu_node_shm) % 64 == 0, "node block is whole cache lines");

struct emu_shm {
	void *base;
	size_t bytes;
	struct emu_shm_hdr *hdr;
	const uint64_t *node_off;
	const uint32_t *first_core; /* the header's table (off_first_core) */
};

static inline struct emu_node_shm *emu_shm_node(const struct emu_shm *m, uint32_t rank)
{
	return (struct emu_node_shm *)((char *)m->base + m->node_off[rank]);
}
static inline struct emu_core_shm *emu_shm_core(const struct emu_shm *m, struct emu_node_shm *n,
						 uint32_t core)
{
	return (struct emu_core_shm *)((char *)m->base + n->off_cores) + core;
}
/* Incoming link of node `rank` for packets travelling along (dim, dir). */
static inline struct torus_link *emu_shm_link_in(const struct emu_shm *m, uint32_t rank, uint32_t dim,
						  uint32_t dir)
{
	struct emu_node_shm *n = emu_shm_node(m, rank);
	return (struct torus_link *)((char *)m->base + n->off_links_in) + 2 * dim + dir;
}
/* Outgoing link of node `rank` along (dim, dir): the neighbour's incoming one. */
static inline struct torus_link *emu_shm_link_out(const struct emu_shm *m, uint32_t rank,
						   uint32_t dim, uint32_t dir)
{
	uint32_t to = torus_neighbor(&m->hdr->shape, rank, dim, (enum torus_dir)dir);
	return emu_shm_link_in(m, to, dim, dir);
}

/* Call fn (may be NULL) for every link direction of the job, in report
 * order (node, dimension, direction; dimensions with links only), with its
 * counters; returns how many there are. */
typedef void (*emu_link_fn)(void *arg, uint32_t node, uint32_t dim, uint32_t dir, const struct torus_link *l,
			    const struct torus_link_counters *c);
uint64_t emu_shm_each_link(const struct emu_shm *m, emu_link_fn fn, void *arg);

/* Bytes the job needs; fills the offsets of node regions (node_off) and
 * of their slot blocks (slot_off) where not NULL. The regions come first,
 * one after another; then the slot area, the blocks one after another. */
uint64_t emu_shm_layout(const struct torus_shape *s, const struct torus_params *p,
			const uint32_t *cores, uint64_t *node_off, uint64_t *slot_off);
/* torusrun: create the shared memory (a memfd, owner-only, no name on any
 * file system, freed when the last process holding it exits); exact: with
 * the timekeeper's channels. */
int emu_shm_create(const struct torus_shape *s, const struct torus_params *p, const uint32_t *cores,
		   const int *numa_of_node, int exact, struct emu_shm *out, int *fd_out, char *err, size_t errlen);
static inline struct emu_tk_core *emu_shm_tk(const struct emu_shm *m, uint32_t global)
{
	return (struct emu_tk_core *)((char *)m->base + m->hdr->off_tk) + global;
}
static inline _Atomic uint64_t *emu_shm_tk_dirty(const struct emu_shm *m)
{
	return (_Atomic uint64_t *)((char *)m->base + m->hdr->off_tk_dirty);
}

/* torusrun's timekeeper thread (time/timekeeper.c). */
struct emu_tk;
/* trace_fd: the job's trace file (--trace), which the timekeeper writes
 * under --exact instead of the engines; -1 for none. */
int emu_tk_start(struct emu_shm *m, int trace_fd, struct emu_tk **out, char *err, size_t errlen);
/* The same without its thread, for tests and fuzzing: the caller runs
 * its rounds (emu_tk_rounds), and stops it with emu_tk_stop. */
int emu_tk_open(struct emu_shm *m, int trace_fd, struct emu_tk **out, char *err, size_t errlen);
/* Rounds until one moves nothing, at most max_rounds: 0, the timekeeper's
 * error (negative errno: -EPROTO for news it refuses, -ENOMEM), -EBUSY if
 * it still moved after max_rounds, -EINVAL if it has a thread. The number
 * run in *rounds if not NULL. After an error every later call returns it
 * and runs nothing, as torusrun stops the job. */
int emu_tk_rounds(struct emu_tk *tk, uint32_t max_rounds, uint32_t *rounds);
/* Stop it; write what the links did (busy time, free_at) into their counters. */
void emu_tk_stop(struct emu_tk *tk);
/* What the timekeeper has done so far, safe to read from another thread
 * while it runs (torusrun's progress line and hang detector): the time
 * simulated, the simulator's events (packet deliveries and departures:
 * progress even when every packet has physically arrived), its wall time
 * simulating, and the core it waits for (the smallest bound: a running
 * core, whose next post or question it needs, or a core whose question it
 * has not answered yet). */
struct emu_tk_progress {
	torus_vt_t now;
	uint64_t events, hops, sim_ns;
	uint32_t wait_node, wait_core; /* UINT32_MAX: none */
	uint32_t wait_query;           /* 0: it runs (the timekeeper needs its next post or question);
					* else the question (enum emu_tk_query) it waits on */
	torus_vt_t wait_vt;            /* its clock, or its question's time */
};
void emu_tk_progress(const struct emu_tk *tk, struct emu_tk_progress *out);
/* emu_tk_stop, with what it did in the end in *last (zeroed for tk NULL). */
void emu_tk_stop_report(struct emu_tk *tk, struct emu_tk_progress *last);
/* node: map the job's shared memory from an inherited fd and check it. */
int emu_shm_attach(int fd, struct emu_shm *out, char *err, size_t errlen);
void emu_shm_detach(struct emu_shm *m);
/* node `rank`: unmap the slot area but for its own block and the rings of
 * its outgoing links (their receivers' blocks), leaving the range
 * reserved (PROT_NONE): 0, or -EINVAL (damaged ring offsets, err says
 * which) or mmap's error. */
int emu_shm_trim(struct emu_shm *m, uint32_t rank, char *err, size_t errlen);
/* Everything the hang detector prints: every non-empty FIFO and node state. */
void emu_shm_dump(const struct emu_shm *m, FILE *out);

/* ------------------------------------------------------------- NUMA */

/*
 * Spread torus nodes over NUMA nodes in contiguous rank blocks (neighbours in
 * dimension 0 and most of the others share a block). out[rank] = NUMA node.
 * Pure function: the test drives it with simulated layouts.
 */
void emu_numa_plan(uint32_t nnodes, uint32_t numa_nodes, int *out);

/* ----------------------------------------------------------- launcher */

struct emu_job_config {
	struct torus_shape shape;
	struct torus_params params;
	uint32_t *cores;            /* per node */
	uint32_t default_cores;
	double timeout_s;           /* hang detector; 0 = off */
	const char *report_path;
	const char *trace_path;     /* --trace */
	uint32_t trace_buf_bytes;   /* per node */
	int trace_packets;
	uint32_t chaos_seed;        /* --chaos SEED: perturb host scheduling; 0 off */
	struct torus_link_set links[TORUS_MAX_LINK_SETS]; /* --link / "link =": per-link settings */
	uint32_t nlinks;
	char **argv;                /* program and its arguments */
	int argc;
	int quiet;
	int wtime_wall;             /* --wtime wall: MPI_Wtime reads the host's clock */
	uint32_t np;                /* -np N (nodes), or 0 */
	const char *np_opt;         /* the option as given: -np, -n or --np */
	int np_chose_shape;         /* no torus was given: the shape is -np's choice */
	/* an MPI program's own computation (TORUS_MPI_COMPUTE): free (both 0),
	 * --compute-speed F (its measured CPU time / F), or --compute-cpi C@HZ
	 * (instructions retired * C / HZ) */
	double compute_speed, compute_cpi;
	uint64_t compute_hz;
	int report_owned;
	char program_path[4096];
};

/*
 * Parse torusrun's command line (and --config FILE) into cfg; validates
 * everything that can be checked before starting anything. Returns 0, 1 for
 * --help (printed), or -EINVAL with a one-line reason in err.
 */
int emu_config_parse(int argc, char **argv, struct emu_job_config *cfg, char *err, size_t errlen);
void emu_config_free(struct emu_job_config *cfg);
/* Does the job fit this machine (threads, processes, memory)? */
/* Open an output file of torusrun's (what: "trace", "report") for writing,
 * created or truncated, without blocking on a FIFO that nobody reads
 * (refused, as a FIFO is at all if offsets: the trace writes at offsets).
 * The descriptor, or -errno with err set. */
int emu_open_output(const char *path, const char *what, int offsets, char *err, size_t errlen);
int emu_config_check_limits(const struct emu_job_config *cfg, char *err, size_t errlen);

/* What one source (the command line, or a --config file) sets besides the
 * machine parameters, parsed and range-checked; bit 1 << EMU_SET_x of given
 * says it is there. cores_map is checked against the node count later. */
enum emu_setting { EMU_SET_TORUS, EMU_SET_CORES, EMU_SET_CORES_MAP, EMU_SET_TIMEOUT, EMU_SET_REPORT, EMU_SET_COUNT };
struct emu_settings {
	unsigned given;
	size_t line[EMU_SET_COUNT]; /* config file: the line that set it */
	struct torus_shape shape;
	uint32_t cores;
	uint32_t *cores_map;        /* owned */
	uint32_t ncores_map;
	double timeout_s;
	char *report;               /* owned, never empty */
	char *link[TORUS_MAX_LINK_SETS]; /* "link =" lines (owned), parsed once the shape is known */
	size_t link_line[TORUS_MAX_LINK_SETS];
	uint32_t nlink;
};
#define EMU_CONFIG_MAX_BYTES (1u << 20) /* a --config file */
/*
 * Parse a config file's text (name only labels messages: "name:LINE: ...").
 * Applies its machine parameters to *params and fills *out; on failure
 * changes neither (out is left empty) and err names the line. A key given
 * twice, a NUL byte, or an empty value is an error.
 */
int emu_config_read_buf(const char *name, const char *text, size_t len, struct emu_settings *out,
			struct torus_params *params, char *err, size_t errlen);
void emu_settings_free(struct emu_settings *s);

/* --trace, torusrun's side (emu/trace.c): create the file with its header
 * before the nodes start (their fd is inherited), and append the end chunk
 * (every link's counters) after they are gone. */
int emu_trace_create(const struct emu_job_config *cfg, struct emu_shm *m, int *fd_out, char *err, size_t errlen);
/* A trace writer of node `node` into the job's trace file fd (which it
 * does not close): nbuf buffers of buf_bytes, io_uring if `uring` and the
 * kernel allows it; NULL and a message on failure. The timekeeper has one
 * per node. */
struct emu_trace;
struct emu_trace *emu_trace_writer(int fd, uint32_t node, uint32_t nbuf, uint32_t buf_bytes, int packets,
				   _Atomic uint64_t *file_off, int uring, char *err, size_t errlen);
/* One packet on link `link` (2 * dim + dir) of the writer's node, serialised
 * from start to end: it extends the link's open run (back to back, same
 * tag and kind, unless one record per packet) or starts a new one. */
void emu_trace_packet(struct emu_trace *t, uint32_t link, torus_vt_t start, torus_vt_t end, uint32_t payload,
		      uint32_t wire, uint32_t kind, uint32_t tag);
/* Flush, wait for every write and free: 0 or the first write error, and the
 * counters (each may be NULL). */
int emu_trace_writer_close(struct emu_trace *t, uint64_t *records, uint64_t *bytes, uint64_t *waits);
/* A node's trace counters and status (1: flushed cleanly), for torusrun. */
void emu_trace_publish(struct emu_node_shm *me, uint64_t records, uint64_t bytes, uint64_t waits, int rc);
int emu_trace_finish(const struct emu_job_config *cfg, struct emu_shm *m, int fd, uint32_t status, double wall_s,
		     torus_vt_t vt, int quiet, char *err, size_t errlen);

/* The hang detector's second look (emu/stall.c): what each engine and
 * working core thread of a stalled job is doing. */
struct emu_thread_obs {
	uint32_t node;
	int32_t core;             /* -1: the node's engine */
	int32_t tid;              /* 0: not started yet */
	int asleep_on_bell;       /* its doorbell counts it as a sleeper */
	char state;               /* /proc/TID/stat state letter, '?' if unreadable */
	uint64_t run_ns, wait_ns; /* /proc/TID/schedstat: time run, time waiting for a CPU */
};
enum emu_stall_kind {
	EMU_STALL_STARVED, /* runnable threads wait for a CPU: the host is overloaded */
	EMU_STALL_BUSY,    /* threads run without moving anything: a livelock */
	EMU_STALL_ASLEEP,  /* every thread sleeps: a lost wake-up or a deadlock */
	EMU_STALL_STOPPED, /* a node's threads are stopped (SIGSTOP, a debugger): it holds the others */
};
struct emu_stall_verdict {
	enum emu_stall_kind kind;
	uint32_t threads, starved, busy, asleep, other, stopped;
	uint32_t stopped_node;     /* the first stopped thread's node */
};
/* Observe the engines of the nodes not yet exited (a node's process pid[r]
 * until its engine starts) and their started cores not yet done, at most
 * cap of them; returns how many there are (may exceed cap). */
size_t emu_stall_sample(const struct emu_shm *m, const int32_t *pid, const uint8_t *exited, struct emu_thread_obs *out,
			size_t cap);
/* Judge two looks at the same threads, window_ns apart. */
int emu_stall_classify(const struct emu_thread_obs *before, const struct emu_thread_obs *after, size_t n,
		       uint64_t window_ns, struct emu_stall_verdict *v);

/* Launch, monitor and tear down a job; returns torusrun's exit status. */
int emu_job_run(struct emu_job_config *cfg);

/* JSON report of a finished (or failed) job. */
int emu_report_write(const char *path, const struct emu_job_config *cfg, const struct emu_shm *m,
		     const char *status, double wall_s, char *err, size_t errlen);

/* Wall-clock seconds from CLOCK_MONOTONIC. */
double emu_wall_now(void);

#endif
