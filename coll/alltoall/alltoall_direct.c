/*
 * alltoall "direct": the baseline (001_4167629ecc6cc32a.txt calls it the
 * naive algorithm, "poor ... due to congestion arising because of the
 * bisection width of the network"), against which the others are measured.
 *
 * Steps (one step, one phase, one round): member u copies its own block,
 * then posts its p-1 puts at once, to u+1, u-1, u+2, u-2, ... (mod p),
 * each straight from its send buffer into block u of the receiver's recv:
 * the members do not all start on member 0, and on a ring of members both
 * directions carry traffic from the start (measured on a ring of 8 with
 * 32 KiB blocks: 1078 us against 1192 us for u+1, u+2, ...); then it waits
 * for the p-1 blocks that come to it.
 *
 * Cost (m bytes per block): (p-1) alpha + (p-1) m beta injected per member;
 * on the torus the links carry every block over its h hops, so the busiest
 * link direction carries about (p-1) m h / 2N, h the mean hop count.
 * Counters: p - 1 reception counters (one per source), so p + 1 <=
 * dma_counters.
 */
#include "../common/a2a.h"

static int fits(const struct a2a_geom *g, uint32_t *msgs, const char **why)
{
	(void)why;
	*msgs = g->p - 1;
	return 1;
}

static int build(struct coll_plan *pl, const struct a2a_geom *g)
{
	uint32_t st = a2a_step(pl, 0, 0);
	uint32_t p = g->p;
	for (uint32_t u = 0; u < p; u++) {
		a2a_direct(pl, st, u, u);
		for (uint32_t j = 1; j < p; j++) {
			/* +1, -1, +2, -2, ...: every other member once */
			uint32_t off = (j + 1) / 2;
			a2a_direct(pl, st, u, j % 2 ? (u + off) % p : (u + p - off) % p);
		}
	}
	return 0;
}

const struct a2a_algo a2a_direct_algo = {"direct", TORUS_ALGO_DIRECT, fits, build};
