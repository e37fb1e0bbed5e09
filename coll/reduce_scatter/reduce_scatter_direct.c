/*
 * reduce_scatter "direct": the baseline issue 4 asks for (not an algorithm
 * of 003_b0aac8c3d10c7733.txt), against which the bucket algorithms are
 * measured.
 *
 * Steps: every member tells every other one where its scratch is (one
 * address exchange, then agreement); member i puts its block j straight
 * into member j's scratch slot for i, in the order j = i+1, i+2, ... (so
 * the members do not all start on member 0), one reception counter per
 * source; member i then reduces the p-1 blocks it receives into its own,
 * in the order they were sent (i-1 first).
 *
 * Cost (n = p*count elements in bytes, h = mean hops between members):
 *   (p-1) alpha + (p-1)/p n beta + (p-1)/p n gamma
 * counting only what each member injects and receives. On a torus that is
 * optimistic: the put to a member h hops away occupies h links, so the
 * links carry (p-1) n h in all, and the busiest of the 2N links per node
 * carries at least about n h / 2N (n k/8 on a k^N torus with k even): h
 * times the lower bound of Fig. 2, and dimension-order routing spreads it
 * unevenly. Members that share a node exchange without links. Each call
 * also sends p-1 address messages per member and one agreement barrier.
 * Memory: a scratch of p-1 blocks.
 * Restrictions: team size <= dma_counters - 2 (a counter per source, two
 * more per call), else DMA_ERR_NOSPACE on every member.
 */
#include "../coll_internal.h"

#include <errno.h>
#include <string.h>

int coll_direct_reduce_scatter(coll_team_t *t, const void *send, void *own, const struct coll_blocks *b,
			       enum coll_dtype dtype, enum coll_op op, uint64_t check); /* common/direct.c */

int coll_reduce_scatter_direct(const struct coll_args *a)
{
	coll_team_t *t = a->team;
	size_t esz = coll_dtype_size(a->dtype);
	struct coll_blocks b;
	if (coll_blocks_init(&b, t->size, a->count * t->size, a->count))
		return -ENOMEM;
	if (a->count)
		memcpy(a->recv, (const uint8_t *)a->send + b.displs[t->rank] * esz, a->count * esz);
	int rc = coll_direct_reduce_scatter(t, a->send, a->recv, &b, a->dtype, a->op, a->check);
	coll_blocks_free(&b);
	return rc;
}
