/*
 * The timing simulator: the exact time model of docs/model.md
 * as an incremental, sequential discrete-event simulation, fast enough to
 * time a whole job (docs/exact-engine-plan.md).
 *
 * It is the model that tests/refsim.c states, event for event: the same
 * ports, the same round-robin arbitration, the same order at equal times
 * (deliveries before departures; then by node, then port or link). Where
 * refsim scans the whole machine for the earliest event at every step,
 * this keeps the candidates in a heap, so one event costs O(log n) plus
 * one scan of the ports of the link it serves. test_timesim holds it equal
 * to refsim, hop for hop, on random traffic.
 *
 * Incremental: transfers are posted as they become known, and the
 * simulation advances only as far as it is told (timesim_run), so a
 * driver can hold it behind the slowest core it has not heard from.
 * Posting a transfer ready before the time already simulated is an error
 * (-ERANGE): the past is final.
 *
 * Private to the emulator (not installed).
 */
#ifndef TORUS_TIMESIM_H
#define TORUS_TIMESIM_H

#include "torus_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TIMESIM_NEVER UINT64_MAX

enum timesim_kind { TIMESIM_RAW = 1, TIMESIM_PUT = 2, TIMESIM_GET = 3, TIMESIM_MEMFIFO = 4 };

struct timesim_xfer {
	uint32_t kind;
	uint32_t src_node, src_core;  /* who posts it */
	uint32_t fifo;                /* DMA injection FIFO of src_core (RAW: unused) */
	uint32_t dst_node;            /* GET: the node read; its data comes back to src_node */
	uint64_t len;                 /* bytes (RAW: at most one payload) */
	torus_vt_t ready;             /* when it may start: the poster's clock after its overhead */
	uint16_t hints;
	uint64_t cookie;              /* the caller's name for it, passed to the hooks */
};

/* What the simulation reports, in the order it happens. */
struct timesim_hooks {
	/* a packet on a link direction: leaving `node` by link 2 * dim + dir
	 * (request: a remote get's request packet, not data) */
	void (*hop)(void *arg, uint32_t node, uint32_t link, torus_vt_t start, torus_vt_t end, uint32_t wire,
		    uint32_t payload, uint64_t cookie, int request);
	/* a data packet deposited at `node` at time t: packet `index` of the
	 * transfer (of a GET: of its reply, at the requester); len payload bytes */
	void (*deposit)(void *arg, uint32_t node, uint64_t cookie, uint64_t index, uint32_t len, torus_vt_t t);
	/* a packet of a DMA transfer finished leaving its origin node at t (the
	 * end of its serialisation on the first link; for a transfer to the
	 * node itself, its deposit): what an injection counter counts. A GET's
	 * request reports len 0; its reply, sent by the target, is not reported. */
	void (*left)(void *arg, uint32_t node, uint64_t cookie, uint32_t len, torus_vt_t t);
	/* optional: a GET's request at its target at t; nonzero: the target
	 * refuses it, and no reply is sent */
	int (*request)(void *arg, uint32_t node, uint64_t cookie, torus_vt_t t);
	void *arg;
};

struct timesim_config {
	const struct torus_shape *shape;
	const struct torus_params *params;
	const uint32_t *cores;                    /* per node */
	uint32_t getreq_bytes;                    /* payload of a remote get's request packet */
	/* optional: per node and link (node * 2 * TORUS_MAX_DIMS + link), the
	 * link's own cost table (--link); NULL entries take the params' */
	const struct torus_cost *const *link_cost;
	struct timesim_hooks hooks;
};

struct timesim;

struct timesim_stats {
	uint64_t events;    /* deliveries and departures */
	uint64_t hops;      /* packets sent on links */
	uint64_t deposits;  /* packets deposited */
	uint64_t stale;     /* heap entries found out of date (a measure of the heap's overhead) */
	uint64_t heap_max;  /* the most entries the heap held at once */
	uint64_t beyond;    /* entries pushed past the timing wheel's span (to the radix heap) */
};

/* 0, -EINVAL (a missing or inconsistent argument) or -ENOMEM. The arrays
 * the config points to (cores, link_cost) must outlive the simulator. */
int timesim_create(const struct timesim_config *cfg, struct timesim **out);
void timesim_destroy(struct timesim *s);
/*
 * Add a transfer. RAW: one packet, queued at its core's raw port; DMA
 * kinds: queued behind the transfers of its injection FIFO. 0, -EINVAL (a
 * node, core or FIFO that does not exist, a raw packet too long), -ERANGE
 * (ready before the time already simulated) or -ENOMEM.
 */
int timesim_post(struct timesim *s, const struct timesim_xfer *x);
/* Process every event earlier than `limit` (TIMESIM_NEVER: all). 0 or -ENOMEM. */
int timesim_run(struct timesim *s, torus_vt_t limit);
/* From a hook: timesim_run returns after the event being processed (at
 * time t; events at t may remain, and timesim_now is t). */
void timesim_stop(struct timesim *s);
/* From any thread: timesim_run returns -ECANCELED before its next event,
 * now and every time after (a job torn down mid-run). */
void timesim_cancel(struct timesim *s);
/* The time of the earliest pending event, TIMESIM_NEVER if there is none. */
torus_vt_t timesim_next(struct timesim *s);
/* Everything before this time is final. */
torus_vt_t timesim_now(const struct timesim *s);
/* From a hook: the time of the event being processed (everything before
 * it is final, and timesim_now may lag behind it until timesim_run
 * returns); elsewhere timesim_now. */
torus_vt_t timesim_event_time(const struct timesim *s);
void timesim_stats(const struct timesim *s, struct timesim_stats *out);

#ifdef __cplusplus
}
#endif
#endif
