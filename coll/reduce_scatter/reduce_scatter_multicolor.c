/*
 * reduce_scatter "multicolor": the N-dimensional multicolor bucket
 * algorithm, section 4 and Algorithm 1 of 003_b0aac8c3d10c7733.txt (the
 * engine and its layout: coll/common/multicolor.c).
 *
 * Steps: split every node's block into 2N chunks (node
 * distribution-respecting); stream (color c, direction) runs N phases, a
 * ring bucket reduce-scatter along dimension pi_c(i) = E[(i+c) mod N] in
 * phase i, over the plus or the minus ring; the phases of different colors
 * never share a dimension. Parts are pipelined so reductions overlap the
 * transfers.
 * Cost (eq. 2; eq. 3 for a symmetric torus d^N):
 *   2N sum_i (d_i - 1) alpha  +  (p-1)/p n gamma
 *   + (d_l - 1)/d_l * n beta / 2N * (d_s^N - 1)/d_s^N * d_s/(d_s - 1)
 * which is (p-1)/p n beta / 2N, the bidirectional lower bound, on a
 * symmetric torus; gamma is shared by the node team's cores (one color, or
 * one color and direction, per core).
 * Restrictions: a team of every node in node order; node teams of any core
 * count (k cores share the 2N streams, stream s on core s*k/2N); up to
 * dma_counters - 2 phases x streams per core.
 */
#include "../common/multicolor.h"

int coll_reduce_scatter_multicolor(const struct coll_args *a)
{
	coll_team_t *t = a->team;
	struct coll_blocks b;
	if (coll_blocks_init(&b, t->size, a->count * t->size, a->count))
		return -ENOMEM;
	struct mc_job job = {COLL_REDUCE_SCATTER, a->dtype, a->op, a->check, &b, a->send, a->recv, NULL, 0, NULL};
	int rc = coll_multicolor(t, &job);
	coll_blocks_free(&b);
	return rc;
}
