/*
 * allreduce "ring": reduce-scatter then allgather with the 1-D bucket
 * algorithm (section 2.2 of 003_b0aac8c3d10c7733.txt). The vector is split
 * into p blocks whose sizes differ by at most one element, so any count
 * works. Cost: 2(p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma.
 * Restrictions: team size <= dma_counters - 1.
 */
#include "../coll_internal.h"

#include <errno.h>
#include <string.h>

int coll_allreduce_ring(const struct coll_args *a)
{
	coll_team_t *t = a->team;
	size_t esz = coll_dtype_size(a->dtype);
	struct coll_blocks b;
	if (coll_blocks_init(&b, t->size, a->count, 0))
		return -ENOMEM;
	if (a->recv != a->send)
		memcpy(a->recv, a->send, a->count * esz);
	int rc = coll_ring_reduce_scatter(t, a->recv, &b, a->dtype, a->op, a->check);
	if (!rc)
		rc = coll_ring_allgather(t, a->recv, &b, a->dtype, a->check);
	coll_blocks_free(&b);
	return rc;
}
