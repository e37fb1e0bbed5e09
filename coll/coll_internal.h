/*
 * Internals of coll/: teams, the address exchange between ring neighbours,
 * and the ring bucket building blocks shared by the algorithms.
 */
#ifndef COLL_INTERNAL_H
#define COLL_INTERNAL_H

#include "torus/coll.h"
#include "torus/trace.h"

#define COLL_DISPATCH 250u /* memory-FIFO dispatch id of address messages */

struct coll_team {
	emu_core_t *core;
	uint32_t size, rank;
	uint32_t *node, *cpu;           /* node and (first) core of each member */
	uint32_t cores, sub;            /* cores per member (node teams), and which one this is */
	uint32_t *members, nmembers;    /* global rank of every core of the team (barriers) */
	uint32_t *leads;                /* global rank of each member's first core */
	const uint32_t *part;           /* the cores taking part in this call: members or leads */
	uint32_t npart;
	uint64_t key;                   /* hash of the member list */
	uint32_t seq;                   /* exchanges so far (tags messages) */
	uint32_t tag_coll;              /* the call in progress, for trace tags (enum torus_tag_coll) */
	uint32_t tag_force;             /* coll_team_set_trace_tag, 0 if none */
	struct coll_v_stats vstats;     /* the last coll_alltoallv's counts */
	int64_t vnow;                   /* bytes it holds allocated now */
	void *scratch;                  /* this core's scratch buffer, kept between calls */
	size_t scratch_cap, scratch_mapped;
	struct mc_plan *mc_plan;        /* multicolor's set-up, kept for the next identical call */
};

/* Free the multicolor set-up the team keeps, if any (its counters and
 * regions go back to the core); coll/common/multicolor_keep.c. */
void coll_multicolor_release(coll_team_t *t);

/* This core's scratch buffer of the team, at least `bytes` long; NULL if out
 * of memory. One call uses it at a time; it stays until a larger one is
 * needed or coll_team_free. Large ones on transparent huge pages. */
void *coll_scratch_get(coll_team_t *t, size_t bytes);
void coll_scratch_release(coll_team_t *t);

/* Where a peer wants our data: its region and first step counter. */
struct coll_addr {
	uint32_t region;
	uint32_t counter0;
	uint64_t check;                 /* the peer's coll_args.check (0: its set-up failed) */
	uint64_t offset;                /* where in the region (multicolor: the phase's scratch) */
	uint32_t region2;               /* a second region (multicolor: the result buffer) */
	uint32_t pad_;
};

/* One address exchange with a neighbour: send `mine` to core (to_node,
 * to_core), which will put into us; receive `theirs` from team member
 * `from` (whom we put into). tag tells apart the exchanges of one call. */
struct coll_xchg {
	uint32_t to_node, to_core, from, tag;
	struct coll_addr mine, theirs;
};

/* x[i].to_node or x[i].from: nothing to send, or to receive, in entry i */
#define COLL_XCHG_NONE UINT32_MAX

/*
 * Send every x[i].mine, then wait for every x[i].theirs, for collective
 * call `seq`. Returns -EPROTO if a peer's check differs from ours (it was
 * called differently, or its set-up failed), else 0 or a DMA error. Always
 * sends, so that no neighbour waits for us in vain.
 */
int coll_exchange_many(coll_team_t *t, uint32_t seq, struct coll_xchg *x, size_t n);

/* A member's injection FIFOs, one per first link of a route (modulo
 * inj_fifos; within the node the last), so that messages to different
 * links go out side by side rather than one after another. */
struct coll_fifos {
	dma_injfifo_t *f[32];
	uint8_t *route; /* first link from this node to each node */
	uint32_t n;
};
int coll_fifos_open(emu_core_t *c, struct coll_fifos *fs);
dma_injfifo_t *coll_fifo_to(const struct coll_fifos *fs, uint32_t node);
void coll_fifos_close(struct coll_fifos *fs);
/* Register this core's address handler (team creation does it; the first
 * call on a team then waits for every member, so all handlers exist). */
int coll_exchange_init(emu_core_t *c);
int coll_exchange(coll_team_t *t, uint32_t to, uint32_t from, uint32_t seq, const struct coll_addr *mine,
		  struct coll_addr *theirs);
/*
 * Every core taking part leaves with the worst error any of them had
 * (on the barrier network, before data moves): a member that failed, or
 * saw a mismatch, makes every member fail alike instead of hanging.
 */
int coll_agree(coll_team_t *t, int rc);

/* Blocks of a vector split over p members: counts[b] elements at displs[b]. */
struct coll_blocks {
	size_t *counts, *displs, max;
};
int coll_blocks_init(struct coll_blocks *b, uint32_t p, size_t total, size_t per_member);
void coll_blocks_free(struct coll_blocks *b);

/*
 * Ring bucket over the team in rank order (section 2.2 of
 * 003_b0aac8c3d10c7733.txt): after coll_ring_reduce_scatter, block `rank`
 * of buf holds the reduction over all members; coll_ring_allgather fills
 * every other block of buf from the one each member holds.
 */
int coll_ring_reduce_scatter(coll_team_t *t, void *buf, const struct coll_blocks *b, enum coll_dtype dtype,
			     enum coll_op op, uint64_t count_check);
int coll_ring_allgather(coll_team_t *t, void *buf, const struct coll_blocks *b, enum coll_dtype dtype,
			uint64_t count_check);

/* alltoallv's statistics (coll/alltoallv/alltoallv.c): a message sent in
 * a stage, and scratch memory held. */
void coll_v_note_sent(coll_team_t *t, uint32_t stage, uint64_t bytes);
void coll_v_note_scratch(coll_team_t *t, uint64_t bytes);

/* Virtual time of a local copy of `bytes` on the core (copy_bw). */
void coll_charge_copy(emu_core_t *c, uint64_t bytes);

/* Virtual time of reducing `bytes` (machine parameter reduce_bw). */
void coll_charge_reduce(emu_core_t *c, size_t bytes);
/* What coll_charge_reduce charges for `bytes`. */
torus_vt_t coll_reduce_cost(const emu_core_t *c, size_t bytes);

#endif
