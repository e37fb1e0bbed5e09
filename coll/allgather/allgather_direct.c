/*
 * allgather "direct": the baseline issue 4 asks for (not an algorithm of
 * 003_b0aac8c3d10c7733.txt), against which the bucket algorithms are
 * measured.
 *
 * Steps: copy send to block i of recv; every member tells every other one
 * where its recv buffer is (one address exchange, then agreement); member
 * i puts its block straight into block i of every other member's recv, in
 * the order i+1, i+2, ... (so the members do not all start on member 0),
 * and waits for the p-1 blocks that come to it.
 *
 * Counters: one per source, not one armed with the total. Both give the
 * same virtual time (that of the last arrival), but per-source counters
 * share the set-up with reduce-scatter and allreduce, keep the catalogue's
 * one restriction for all three, and let the hang detector's counter dump
 * name the source that never came.
 *
 * Cost (n = p*count elements in bytes, h = mean hops between members):
 *   (p-1) alpha + (p-1)/p n beta
 * counting only what each member injects and receives. On a torus that is
 * optimistic: the put to a member h hops away occupies h links, so the
 * links carry (p-1) n h in all, and the busiest of the 2N links per node
 * carries at least about n h / 2N (n k/8 on a k^N torus with k even): h
 * times the lower bound of Fig. 2, and dimension-order routing spreads it
 * unevenly. Each call also sends p-1 address messages per member and one
 * agreement barrier.
 * Restrictions: team size <= dma_counters - 2 (a counter per source, two
 * more per call), else DMA_ERR_NOSPACE on every member.
 */
#include "../coll_internal.h"

#include <errno.h>
#include <string.h>

int coll_direct_allgather(coll_team_t *t, void *buf, const struct coll_blocks *b, enum coll_dtype dtype,
			  uint64_t check); /* common/direct.c */

int coll_allgather_direct(const struct coll_args *a)
{
	coll_team_t *t = a->team;
	size_t esz = coll_dtype_size(a->dtype);
	struct coll_blocks b;
	if (coll_blocks_init(&b, t->size, a->count * t->size, a->count))
		return -ENOMEM;
	if (a->count)
		memcpy((uint8_t *)a->recv + b.displs[t->rank] * esz, a->send, a->count * esz);
	int rc = coll_direct_allgather(t, a->recv, &b, a->dtype, a->check);
	coll_blocks_free(&b);
	return rc;
}
