/*
 * dma/ — the emulated Blue Gene/P DMA unit: the only way collectives move
 * data between nodes (docs/architecture.md, "The layers"; 003_b0aac8c3d10c7733.txt
 * section 5.1).
 *
 * A core registers memory regions and allocates byte counters, opens one
 * of its injection FIFOs, and posts descriptors; posting returns at once and
 * the node's engine packetises the message into 240-byte-payload packets:
 *
 *   memory FIFO  payload lands in a reception FIFO of the destination core,
 *                with a dispatch id (a registered handler, or polled) and a
 *                16-bit user header;
 *   direct put   payload lands at (region, offset) of the destination node
 *                and decrements a reception counter there;
 *   remote get   a request that makes the remote engine direct-put data back;
 *   local copy   a copy inside the node, by the engine.
 *
 * Counters hold "bytes still to come": arm a reception counter with the
 * expected bytes (dma_counter_add), deposits decrement it, and it hits zero
 * once. An injection counter given to a descriptor is decremented as the
 * engine injects its bytes. Waiting on a counter advances the core's virtual
 * clock to the virtual time the counter hit zero.
 *
 * Every function validates its arguments and returns 0 (or a count) or a
 * negative error: -EINVAL for malformed arguments, -EAGAIN where there is
 * nothing (yet) to take, or one of enum dma_error.
 * Descriptors are validated when posted, against the destination's tables.
 */
#ifndef TORUS_DMA_H
#define TORUS_DMA_H

#include "torus/emu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Errors specific to the DMA unit (negative, below the errno range). */
enum dma_error {
	DMA_ERR_DEST = -1001,     /* destination node or core does not exist */
	DMA_ERR_REGION = -1002,   /* region not registered at its node */
	DMA_ERR_RANGE = -1003,    /* offset + length outside the region */
	DMA_ERR_HANDLER = -1004,  /* no handler registered for the dispatch id */
	DMA_ERR_COUNTER = -1005,  /* counter not allocated at its node */
	DMA_ERR_FIFO = -1006,     /* no such injection FIFO */
	DMA_ERR_NOSPACE = -1007,  /* no free region / counter / barrier slot */
};
/* Text for a DMA or errno error code. */
const char *dma_strerror(int err);

#define DMA_NO_COUNTER UINT32_MAX

/* ------------------------------------------------------ registered memory */

/* Register [base, base+len) for remote deposits and gets; region ids are
 * node-wide (they encode the core). The memory must stay valid while
 * traffic may touch it: until dma_mem_deregister returns, or the core's
 * function has returned and the unit closed its regions. A buffer on the
 * core function's own stack is gone the moment it returns, before that
 * close: wait on counters for all traffic into or out of it first. */
int dma_mem_register(emu_core_t *c, void *base, size_t len, uint32_t *region);
int dma_mem_deregister(emu_core_t *c, uint32_t region);
/* Point registered region `region` of this core at [base, base+len), under
 * the same id, so that peers that know the id need not be told. Deposits
 * in progress finish first, as in dma_mem_deregister; the caller makes sure
 * that none targets the region from now until it is used again (a
 * collective that keeps its set-up between calls: coll/common/multicolor_keep.c). */
int dma_mem_rebind(emu_core_t *c, uint32_t region, void *base, size_t len);

/* --------------------------------------------------------------- counters */

int dma_counter_alloc(emu_core_t *c, uint32_t *id);
int dma_counter_free(emu_core_t *c, uint32_t id);
/* n counters with consecutive ids first .. first+n-1 (one per step of a
 * pipelined algorithm), and their release. */
int dma_counter_alloc_n(emu_core_t *c, uint32_t n, uint32_t *first);
int dma_counter_free_n(emu_core_t *c, uint32_t first, uint32_t n);
/* Add (arm with) bytes; negative values are allowed. */
int dma_counter_add(emu_core_t *c, uint32_t id, int64_t bytes);
int dma_counter_get(emu_core_t *c, uint32_t id, int64_t *value);
/* Times the counter reached zero since it was allocated. */
int dma_counter_hits(emu_core_t *c, uint32_t id, uint64_t *hits);
/* *zero = 1 if the counter is zero (the clock advances to when it hit), 0 if not. */
int dma_counter_test(emu_core_t *c, uint32_t id, int *zero);
/* Sleep until the counter is zero; the clock advances to when it hit. */
int dma_counter_wait(emu_core_t *c, uint32_t id);
/* Sleep until one of ids[0..n) is zero; *which gets its index. */
int dma_counter_wait_any(emu_core_t *c, const uint32_t *ids, size_t n, size_t *which);

/*
 * Watermarks, for pipelines that stream several parts through one counter:
 * levels[0] > levels[1] > ... are values the counter will fall to as the
 * parts arrive (arm the counter with the total first). Mark k is crossed
 * by the deposit that takes the counter to levels[k] or below; the engine
 * records that deposit's virtual time. Parts must arrive in order (one
 * sender, one injection FIFO, one route), only deposits may change the
 * counter while marks are pending, and the marks must be set before any
 * deposit can arrive (before the sender learns the counter). n = 0 removes the marks; freeing the
 * counter does too.
 */
int dma_counter_watch(emu_core_t *c, uint32_t id, const int64_t *levels, uint32_t n);
/* *crossed = 1 and *vt = when mark k was crossed (the clock does not move), 0 if not yet
 * by the core's clock (a look that finds it not crossed costs poll_cost). */
int dma_counter_mark(emu_core_t *c, uint32_t id, uint32_t mark, torus_vt_t *vt, int *crossed);
/* Sleep until, for some i, mark marks[i] of counter ids[i] is crossed (n <= 64);
 * *which (may be NULL) gets the i crossed earliest in virtual time (ties: the
 * lowest). The clock moves to the crossing if that is later (the core
 * waited until then). */
int dma_counter_wait_marks(emu_core_t *c, const uint32_t *ids, const uint32_t *marks, size_t n, size_t *which);

/* ------------------------------------------------------- reception FIFOs */

struct dma_recv_info {
	uint32_t src_node, src_core;
	uint32_t dispatch;
	uint16_t user;        /* the sender's user header */
	uint64_t offset;      /* of this packet's payload within the message */
	uint32_t len;         /* payload bytes in this packet */
	int last;             /* last packet of the message */
	torus_vt_t arrival;   /* 0 for a message sent in any order */
	uint64_t key;         /* a message sent in any order: its name (struct
			       * dma_desc); else 0 */
	uint32_t index;       /* this packet's index in the message */
};
/* Called for each memory-FIFO packet of its dispatch id; return 0, or a
 * negative value that dma_recfifo_poll passes back. */
typedef int (*dma_recv_fn)(emu_core_t *c, const struct dma_recv_info *info, const void *payload, void *arg);

/* Dispatch ids 1..255 (0 means "polled, no handler"). */
int dma_handler_register(emu_core_t *c, uint32_t dispatch, dma_recv_fn fn, void *arg);
/* Handle up to max waiting packets; *handled says how many were. */
int dma_recfifo_poll(emu_core_t *c, unsigned max, unsigned *handled);
/* Take the next packet without a handler: 0 and fills info/buf, -EAGAIN if none. */
int dma_recfifo_next(emu_core_t *c, struct dma_recv_info *info, void *buf, size_t cap);
/* Sleep until the reception FIFO holds a packet (timeout_ms < 0: no limit;
 * -ETIMEDOUT when it passed). */
int dma_recfifo_wait(emu_core_t *c, int timeout_ms);
/*
 * A promise, for speed: this core posts nothing and changes no counter
 * before it has taken `packets` more reception-FIFO packets (by
 * dma_recfifo_poll or dma_recfifo_next; messages sent in any order do not
 * count). The timekeeper then need not stop at each of those arrivals for
 * fear of what the core might do next: a receiver taking a long message
 * asks it one question, not one per packet. The caller must be sure that
 * the packets come (the rest of a message whose first packet it has), and
 * its handlers must not post meanwhile. The promise changes no emulated
 * time. 0 (packets 0 promises nothing; without a timekeeper there is
 * nothing to promise); -EINVAL for a bad core; -EBUSY if a promise still
 * holds. While it holds, DMA posts and counter changes fail with -EBUSY.
 */
int dma_recfifo_expect(emu_core_t *c, uint64_t packets);
/* Does a promise of dma_recfifo_expect (or emu_core_expect) still hold? */
int dma_recfifo_expecting(const emu_core_t *c);
/* Sleep until the reception FIFO holds a packet or counter id is zero,
 * whichever comes first (timeout_ms as above): 0, and *zero (may be NULL)
 * = 1 if it was the counter (the clock then moves to when it hit, as
 * dma_counter_wait's does), or -ETIMEDOUT. For a progress loop that
 * handles arrivals while its sends complete: it wakes at the earlier of the
 * two in virtual time, where a poll with a timeout would wake only at the
 * timeout. */
int dma_recfifo_wait_counter(emu_core_t *c, uint32_t id, int timeout_ms, int *zero);

/*
 * Messages sent in any order (DMA_F_ANY_ORDER, named by the sender's key):
 * for a receiver that files what it gets and takes out what it expects by
 * name. Such a packet is handled as soon as it is in the
 * reception FIFO, not in arrival order, and costs its receiver no time
 * there. The receiver calls dma_recv_expect for each packet it will take,
 * before it waits for it: its clock then moves to the packet's arrival
 * (if later), worked out behind it, and it never waits for the
 * timekeeper. A handler of such packets must only file them: they come in
 * no set order.
 *
 * dma_recfifo_poll_any_order: handle up to max such packets that are here
 * (dma_recfifo_poll handles them too, first, without counting them).
 * dma_recfifo_wait_any_order: sleep until one is here (timeout_ms < 0: no
 * limit; in wall-clock time, since nothing here is timed). dma_recv_expect: the program will take packet `index` of the
 * message named key from node src_node. Each returns 0 or a negative
 * errno.
 */
int dma_recfifo_poll_any_order(emu_core_t *c, unsigned max, unsigned *handled);
int dma_recfifo_wait_any_order(emu_core_t *c, int timeout_ms);
int dma_recv_expect(emu_core_t *c, uint32_t src_node, uint64_t key, uint32_t index);

/* ------------------------------------------------------- injection FIFOs */

enum dma_kind { DMA_MEMFIFO = 1, DMA_PUT = 2, DMA_GET = 3, DMA_COPY = 4 };

#define DMA_F_UNCHECKED 1u  /* skip post-time checks (to test the destination's) */
#define DMA_F_ANY_ORDER 2u  /* memory FIFO: a message its receiver files (dma_recv_expect) */

/* A descriptor; fill it with one of the dma_desc_* helpers: 0, or -EINVAL
 * for a NULL descriptor (nothing filled) or a NULL source with bytes to
 * send (filled all the same, and refused when posted). What the fields
 * mean at the destination is checked when it is posted. */
struct dma_desc {
	uint32_t kind;
	uint32_t flags;
	uint32_t node;          /* destination (PUT, MEMFIFO) or target (GET) node */
	uint32_t core;          /* MEMFIFO: destination core */
	uint32_t dispatch;      /* MEMFIFO */
	uint16_t user;          /* MEMFIFO user header */
	uint16_t hints;         /* torus direction hints */
	uint64_t len;
	const void *src;        /* PUT, MEMFIFO, COPY: local source */
	uint32_t region;        /* PUT, COPY: destination region; GET: region read at the target */
	uint64_t offset;
	uint32_t counter;       /* PUT, GET reply: reception counter at the receiving node */
	uint32_t reply_region;  /* GET: where the data lands here */
	uint64_t reply_offset;
	uint32_t inj_counter;   /* decremented as bytes are injected, or DMA_NO_COUNTER */
	uint32_t tag;           /* trace tag: TORUS_TAG(...) of torus/trace.h, or 0 */
	uint64_t key;           /* MEMFIFO with DMA_F_ANY_ORDER: the message's name, below 2^63,
				 * unique among the messages from this node to that core */
};

int dma_desc_memfifo(struct dma_desc *d, uint32_t node, uint32_t core, uint32_t dispatch, uint16_t user,
		      const void *buf, size_t len, uint32_t inj_counter);
int dma_desc_put(struct dma_desc *d, uint32_t node, const void *src, size_t len, uint32_t region,
		  uint64_t offset, uint32_t counter, uint32_t inj_counter);
/* Read len bytes at (target node, region, offset) into (local reply_region,
 * reply_offset), decrementing the local reply counter. */
int dma_desc_get(struct dma_desc *d, uint32_t node, uint32_t region, uint64_t offset, size_t len,
		  uint32_t reply_region, uint64_t reply_offset, uint32_t reply_counter);
int dma_desc_copy(struct dma_desc *d, const void *src, size_t len, uint32_t region, uint64_t offset,
		   uint32_t counter);

typedef struct dma_injfifo dma_injfifo_t;
/* Injection FIFO `index` (0 .. inj_fifos-1) of the calling core. */
int dma_injfifo_open(emu_core_t *c, uint32_t index, dma_injfifo_t **out);

#define DMA_POST_WAIT 1u /* accepted; every post waits for room (below) */
/* Validate and post; returns once the descriptor is in the FIFO (the engine
 * does the rest). The core's clock advances by the per-descriptor injection
 * overhead. A full FIFO is the host's matter (the model's buffers are
 * unbounded): the post waits for room in wall-clock time only, and never
 * returns -EAGAIN, so the ring depth inj_slots changes no result. */
int dma_injfifo_post(dma_injfifo_t *f, const struct dma_desc *d, unsigned flags);
/* Descriptors posted and not yet fully injected. */
int dma_injfifo_pending(dma_injfifo_t *f, uint32_t *n);

/* ---------------------------------------------------------------- errors */

/* A deposit the destination refused (reported back to the sender's core). */
struct dma_fault {
	int error;             /* enum dma_error */
	uint32_t node;         /* the node that refused */
	uint32_t region;
	uint64_t offset;
	uint32_t len;
};
/* 0 and fills *f if a fault was reported to this core, -EAGAIN if none. */
int dma_fault_next(emu_core_t *c, struct dma_fault *f);
/* Sleep until a fault is reported (timeout_ms < 0: no limit): 0 and fills
 * *f, or -ETIMEDOUT. */
int dma_fault_wait(emu_core_t *c, struct dma_fault *f, int timeout_ms);

/* --------------------------------------------------------------- barriers */

/* Global barrier of every core of the job, on the separate barrier network:
 * every clock leaves at max(arrival clocks) + barrier_latency. */
int dma_barrier(emu_core_t *c);
/* Barrier over a team: global core ranks (emu_core_global) members[0..n),
 * the same list on every member; the caller must be a member. */
int dma_barrier_team(emu_core_t *c, const uint32_t *members, size_t n);
/* The same barrier, combining a word from every member as Blue Gene's
 * collective network does: every member leaves with *out = the largest of
 * all members' `in` (out may be NULL). Collectives use it to agree, before
 * any data moves, that every member was called alike. */
int dma_barrier_team_max(emu_core_t *c, const uint32_t *members, size_t n, uint32_t in, uint32_t *out);
/* The same, leaving with both the largest and the smallest `in` (either
 * pointer may be NULL): equal only if every member gave the same value. */
int dma_barrier_team_range(emu_core_t *c, const uint32_t *members, size_t n, uint32_t in, uint32_t *max,
			   uint32_t *min);
/* The node's lockbox: a barrier of cores 0..ncores-1 of the calling node
 * (the caller must be one of them), combining `in` as above; leaves at
 * max(clocks) + barrier_latency. Teams of different ncores never share one. */
int dma_barrier_node(emu_core_t *c, uint32_t ncores, uint32_t in, uint32_t *out);

#ifdef __cplusplus
}
#endif
#endif
