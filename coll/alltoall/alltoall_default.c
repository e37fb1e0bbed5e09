/*
 * The catalogue's default all-to-all (no --algo, no TORUS_COLL_ALLTOALL):
 * a rule on the block size, the team's shape and its core map, from the
 * measurements of bench/alltoall_sweep.py recorded in BENCHMARKS.md as of commit 26917ce
 * ("All-to-all: the default rule", under the old approximate timing):
 *
 *   blocks of at most 128 bytes (start-ups dominate: combine):
 *     every node in node order, one member each, on a torus of two or more
 *     dimensions with links: torus (the fastest, or within 10% of mesh2d,
 *     on 4x4, 3x3x2 and 4x4x4; up to 3.8 times faster than direct);
 *     else up to 16 members: ring (the fastest on a ring of 8 nodes and on
 *     10 cores of 4 nodes; within 8% of mesh2d on 10 cores of 2x2);
 *     else mesh2d (its counters: rows + columns);
 *   on a 1-D torus, up to 16 members and 512-byte blocks: still ring (8
 *     nodes: 19.8 us against direct's 21.4 us with 512-byte blocks);
 *   larger blocks (bandwidth dominates): direct, the fastest or within a
 *     few percent of it on every machine measured from 256-byte blocks on
 *     (every message in flight at once, on the injection FIFO of its first
 *     link; factor and torus take 1.06 to 3.3 times as long at 1 MiB); when
 *     the team is too large for its counters (p + 1 > dma_counters), mesh2d.
 * hierarchical_factor is never the default here: an emulated node is not
 * single-ported (2N links, and a DMA unit that serves a FIFO per link at
 * once), so serialising each node's inter-node traffic only costs (1 MiB:
 * 1.4 to 4.4 times direct's time on the six machines measured).
 * Whatever is chosen must fit the counters (messages received + 2 <=
 * dma_counters); the last resort is bruck (ceil(log2 p) + 2 counters).
 */
#include "../common/a2a.h"

#define A2A_SMALL 128u
#define A2A_RING_1D 512u

static int fits(const char *name, const struct a2a_geom *g, uint32_t counters)
{
	const struct a2a_algo *al = a2a_find(name);
	uint32_t msgs;
	const char *why;
	return al && al->fits(g, &msgs, &why) && msgs + 2 <= counters;
}

const char *coll_alltoall_default_rule(const struct a2a_geom *g, uint64_t block_bytes, uint32_t counters)
{
	uint32_t dims = 0;
	for (uint32_t d = 0; d < g->shape->ndims; d++)
		dims += torus_dim_has_links(g->shape, d) ? 1u : 0u;
	static const char *const small_torus[] = {"torus", "mesh2d", "bruck", "direct", NULL};
	static const char *const small_few[] = {"ring", "mesh2d", "bruck", "direct", NULL};
	static const char *const small_many[] = {"mesh2d", "bruck", "direct", NULL};
	static const char *const large[] = {"direct", "mesh2d", "bruck", NULL};
	const char *const *order = large;
	if (block_bytes <= A2A_SMALL)
		order = g->node_order && dims >= 2 ? small_torus : g->p <= 16 ? small_few : small_many;
	else if (block_bytes <= A2A_RING_1D && dims <= 1 && g->p <= 16)
		order = small_few;
	for (; *order; order++)
		if (fits(*order, g, counters))
			return *order;
	return "bruck";
}
