/*
 * alltoall "mesh2d": the 2-D mesh algorithm (001_4167629ecc6cc32a.txt,
 * "Mesh": "each processors groups the messages into sqrt(p) groups ...
 * Messages are in the same group, if their destined processors share the
 * same row. Next, an all-to-all operation among rows ... After another
 * all-to-all operation, this time in respect to columns"), on any r x c
 * factorisation of p.
 *
 * The members form an r x c grid in rank order (member u in row u / c,
 * column u % c), r the largest divisor of p not above sqrt(p) (the most
 * square; TORUS_A2A_MESH_ROWS=R picks another divisor). Phase 0 (the row
 * phase): u sends each other member of its row, in one message, its r
 * blocks for that member's column. A local regroup. Phase 1 (the column
 * phase): u sends each other member of its column the c blocks for it that
 * came from u's row (landing straight in recv). coll/common/a2a_grid.c has
 * the details.
 *
 * Cost (m bytes per block): (c-1)(alpha + r m beta) + (r-1)(alpha + c m
 * beta) plus the regrouping copies; for r = c = sqrt(p):
 * 2 (sqrt(p) - 1)(alpha + sqrt(p) m beta), as in 001.
 * Memory: p blocks of scratch per phase. Counters: r + c - 2 + 2 <=
 * dma_counters. A prime p gives r = 1: the direct algorithm, in one phase.
 */
#include "../common/a2a.h"

#include <stdlib.h>

int a2a_grid_build(struct coll_plan *pl, uint32_t ndims, const uint32_t *dims);

static uint32_t rows_of(uint32_t p)
{
	const char *e = getenv("TORUS_A2A_MESH_ROWS");
	if (e) {
		unsigned long r = strtoul(e, NULL, 10);
		if (r >= 1 && r <= p && p % r == 0)
			return (uint32_t)r;
	}
	uint32_t r = 1;
	for (uint32_t x = 1; (uint64_t)x * x <= p; x++)
		if (p % x == 0)
			r = x;
	return r;
}

static int fits(const struct a2a_geom *g, uint32_t *msgs, const char **why)
{
	uint32_t r = rows_of(g->p), c = g->p / r;
	*msgs = r - 1 + c - 1;
	if (c > 64 || r > 64) {
		*why = "rows and columns of at most 64 members";
		return 0;
	}
	return 1;
}

static int build(struct coll_plan *pl, const struct a2a_geom *g)
{
	uint32_t r = rows_of(g->p), dims[2] = {g->p / r, r};
	return a2a_grid_build(pl, 2, dims);
}

const struct a2a_algo a2a_mesh2d_algo = {"mesh2d", TORUS_ALGO_MESH2D, fits, build, 0};
