/*
 * allgather "ring": the 1-D bucket algorithm (section 2.2 of
 * 003_b0aac8c3d10c7733.txt, the reduce-scatter's reverse without
 * computation). In step s member i puts block (i-s) straight into member
 * i+1's receive buffer; p-1 steps.
 * Cost: (p-1) alpha + (p-1)/p n beta.
 * Restrictions: team size <= dma_counters - 1.
 */
#include "../coll_internal.h"

#include <errno.h>
#include <string.h>

int coll_allgather_ring(const struct coll_args *a)
{
	coll_team_t *t = a->team;
	size_t esz = coll_dtype_size(a->dtype);
	struct coll_blocks b;
	if (coll_blocks_init(&b, t->size, a->count * t->size, a->count))
		return -ENOMEM;
	memmove((uint8_t *)a->recv + b.displs[t->rank] * esz, a->send, a->count * esz);
	int rc = coll_ring_allgather(t, a->recv, &b, a->dtype, a->check);
	coll_blocks_free(&b);
	return rc;
}
