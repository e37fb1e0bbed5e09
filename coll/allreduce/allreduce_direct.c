/*
 * allreduce "direct": the baseline issue 4 asks for (not an algorithm of
 * 003_b0aac8c3d10c7733.txt): direct reduce-scatter, then direct allgather
 * of the reduced blocks (both in common/direct.c).
 *
 * Steps: split the count elements into p blocks whose sizes differ by at
 * most one (so any count works; with count < p some blocks are empty and
 * are not sent); member i reduces block i from the p-1 puts it receives
 * (into recv, whose other blocks are not touched yet), then puts it into
 * every other member's recv. In place (send == recv) is allowed: phase 1
 * only reads the other blocks, and they are overwritten only in phase 2,
 * after every put of phase 1 has left.
 *
 * Cost (n = count elements in bytes, h = mean hops between members):
 *   2(p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma
 * counting only what each member injects and receives. On a torus that is
 * optimistic: a put to a member h hops away occupies h links, so in each
 * phase the busiest of the 2N links per node carries at least about
 * n h / 2N (n k/8 on a k^N torus with k even): h times the lower bound of
 * Fig. 2. Each phase also sends p-1 address messages per member and one
 * agreement barrier. Memory: a scratch of p-1 blocks.
 * Restrictions: team size <= dma_counters - 2 (a counter per source, two
 * more per call), else DMA_ERR_NOSPACE on every member.
 */
#include "../coll_internal.h"

#include <errno.h>
#include <string.h>

/* common/direct.c */
int coll_direct_reduce_scatter(coll_team_t *t, const void *send, void *own, const struct coll_blocks *b,
			       enum coll_dtype dtype, enum coll_op op, uint64_t check);
int coll_direct_allgather(coll_team_t *t, void *buf, const struct coll_blocks *b, enum coll_dtype dtype,
			  uint64_t check);

int coll_allreduce_direct(const struct coll_args *a)
{
	coll_team_t *t = a->team;
	size_t esz = coll_dtype_size(a->dtype);
	struct coll_blocks b;
	if (coll_blocks_init(&b, t->size, a->count, 0))
		return -ENOMEM;
	size_t at = b.displs[t->rank] * esz, bytes = b.counts[t->rank] * esz;
	uint8_t *own = (uint8_t *)a->recv + at;
	if (a->recv != a->send && bytes)
		memcpy(own, (const uint8_t *)a->send + at, bytes);
	int rc = coll_direct_reduce_scatter(t, a->send, own, &b, a->dtype, a->op, a->check);
	if (!rc)
		rc = coll_direct_allgather(t, a->recv, &b, a->dtype, a->check);
	coll_blocks_free(&b);
	return rc;
}
