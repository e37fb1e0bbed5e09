/*
 * reduce_scatter "ring": the 1-D bucket algorithm, section 2.2 and eq. (1)
 * of 003_b0aac8c3d10c7733.txt, over the team in rank order.
 *
 * Steps: copy send to a work vector; p-1 steps, in step s member i puts its
 * partial block (i-1-s) to member i+1 and reduces the block (i-2-s) that
 * arrives from i-1; after the last step block i is complete.
 * Cost: (p-1) alpha + (p-1)/p n beta + (p-1)/p n gamma (n = p*count
 * elements in bytes). On a 1-D torus the ring uses each link once.
 * Restrictions: team size <= dma_counters - 1 (a counter per step and two
 * for the call), else DMA_ERR_NOSPACE on every member.
 */
#include "../coll_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int coll_reduce_scatter_ring(const struct coll_args *a)
{
	coll_team_t *t = a->team;
	size_t esz = coll_dtype_size(a->dtype), n = a->count * t->size;
	struct coll_blocks b;
	uint8_t *work = malloc(n * esz + 1);
	int rc = coll_blocks_init(&b, t->size, n, a->count);
	if (rc || !work) {
		free(work);
		coll_blocks_free(&b);
		return -ENOMEM;
	}
	memcpy(work, a->send, n * esz);
	rc = coll_ring_reduce_scatter(t, work, &b, a->dtype, a->op, a->check);
	if (!rc)
		memcpy(a->recv, work + b.displs[t->rank] * esz, a->count * esz);
	free(work);
	coll_blocks_free(&b);
	return rc;
}
