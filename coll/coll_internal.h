/*
 * Internals of coll/: teams, the address exchange between ring neighbours,
 * and the ring bucket building blocks shared by the algorithms.
 */
#ifndef COLL_INTERNAL_H
#define COLL_INTERNAL_H

#include "torus/coll.h"

#define COLL_DISPATCH 250u /* memory-FIFO dispatch id of address messages */

struct coll_team {
	emu_core_t *core;
	uint32_t size, rank;
	uint32_t *members, *node, *cpu; /* global rank, node and core of each member */
	uint64_t key;                   /* hash of the member list */
	uint32_t seq;                   /* collective calls so far (tags messages) */
};

/* Where a peer wants our data: its region and first step counter. */
struct coll_addr {
	uint32_t region;
	uint32_t counter0;
	uint64_t count;                 /* elements the peer was called with */
};

/*
 * Send our address to member `to` (who will put into us) and receive the
 * address of member `from` (whom we put into), for collective call `seq`.
 * Fails with -EPROTO if the peer was called with a different count.
 */
int coll_exchange(coll_team_t *t, uint32_t to, uint32_t from, uint32_t seq, const struct coll_addr *mine,
		  struct coll_addr *theirs);

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

/* Virtual time of reducing `bytes` (machine parameter reduce_bw). */
void coll_charge_reduce(emu_core_t *c, size_t bytes);

#endif
