/*
 * alltoall "torus": dimension by dimension, the torus generalisation of
 * the mesh algorithm of 001_4167629ecc6cc32a.txt (its "Mesh" section: one
 * all-to-all per dimension with messages grouped by destination row).
 *
 * Phase d (one per dimension with links, lowest first): every node sends
 * each other node of its ring along d, in one message, the p / k_d blocks
 * it holds for destinations with that node's coordinate d; nearest first,
 * alternating directions (+1, -1, +2, -2, ...), so both ring directions
 * work at once and every put travels the short way along the ring only.
 * A local regroup between phases (coll/common/a2a_grid.c).
 *
 * Cost (m bytes per block, p nodes, rings of k): per phase (k-1) alpha +
 * (k-1)(p/k) m beta injected per node; each message stays in its ring, so
 * the busiest link direction of a phase carries about (k^2/8)(p/k) m.
 * Summed over N phases of k = p^(1/N): about p k m / 8 per link direction,
 * against direct's p k N m / 8 on the same links.
 * Restrictions: a team of every node in node order, one member per node
 * (a node team, or one core per node); rings of at most 64; sum over the
 * dimensions of (k - 1) + 2 <= dma_counters.
 */
#include "../common/a2a.h"

int a2a_grid_build(struct coll_plan *pl, uint32_t ndims, const uint32_t *dims);

static int fits(const struct a2a_geom *g, uint32_t *msgs, const char **why)
{
	*msgs = 0;
	if (!g->node_order) {
		*why = "a team of every node in node order, one member per node";
		return 0;
	}
	for (uint32_t d = 0; d < g->shape->ndims; d++) {
		if (g->shape->dims[d] > 64) {
			*why = "rings of at most 64 nodes";
			return 0;
		}
		*msgs += g->shape->dims[d] - 1;
	}
	return 1;
}

static int build(struct coll_plan *pl, const struct a2a_geom *g)
{
	return a2a_grid_build(pl, g->shape->ndims, g->shape->dims);
}

const struct a2a_algo a2a_torus_algo = {"torus", TORUS_ALGO_TORUS, fits, build, 0};
