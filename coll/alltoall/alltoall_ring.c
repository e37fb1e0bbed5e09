/*
 * alltoall "ring": store and forward around the ring of members, in both
 * directions (001_4167629ecc6cc32a.txt, "Ring": "a processor sends a
 * message of size m(p-1) to one of its neighbors ... extracts the part that
 * belongs to it and forwards the remainder", improved "when half of the
 * messages are sent in one and the other half in the other direction").
 *
 * Steps: the blocks for the next h+ = floor(p/2) members go up the ring
 * (u -> u+1), those for the h- = floor((p-1)/2) members before u go down.
 * Round k = 1 .. max(h+, h-): u sends up, in one message, the blocks from
 * member u-k+1 for members u+1 .. (u-k+1)+h+ that it still holds (its own
 * in round 1; afterwards what came up to it in round k-1, minus the block
 * that was for it), h+ - k + 1 blocks; and down likewise. It waits for the
 * two messages of the round, keeps the first block of each (it is for u)
 * and forwards the rest next round, straight from where it landed.
 *
 * Cost (m bytes per block): about (p/2)(2 alpha) + (p^2/8) m beta per
 * direction: each round's message shrinks by one block. Neighbour links
 * only, but (p^2 - 1)/8 blocks cross each link direction, against the
 * (p-1) m h / 2N of direct.
 * Memory: every message lands in fresh scratch (h+(h+ + 1) + h-(h- + 1))/2
 * blocks per member: about p^2/4 blocks, so this is for small teams.
 * Counters: p - 1 (two messages a round); a member with fewer reuses them
 * batch after batch (a2a_exec.c, a2a.h: reuse).
 */
#include "../common/a2a.h"

#include <errno.h>
#include <stdlib.h>

static int fits(const struct a2a_geom *g, uint32_t *msgs, const char **why)
{
	*msgs = g->p - 1;
	if (g->p > 256) {
		*why = "at most 256 members (its scratch grows as p^2)";
		return 0;
	}
	return 1;
}

static int build(struct coll_plan *pl, const struct a2a_geom *g)
{
	uint32_t p = g->p, up = p / 2, down = (p - 1) / 2, rounds = up > down ? up : down;
	uint32_t *ids = malloc((p ? p : 1) * sizeof(uint32_t));
	if (!ids || a2a_mv_init(pl)) {
		free(ids);
		return -ENOMEM;
	}
	uint32_t last = 0;
	if (!rounds)
		last = a2a_step(pl, 0, 0);
	for (uint32_t k = 1; k <= rounds; k++) {
		uint32_t st = last = a2a_step(pl, 0, k - 1);
		for (uint32_t u = 0; u < p; u++) {
			uint32_t n = 0, s = (u + p - (k - 1)) % p;
			for (uint32_t d = k; d <= up; d++)
				ids[n++] = s * p + (s + d) % p;
			a2a_mv_send(pl, st, u, (u + 1) % p, ids, n);
			n = 0;
			s = (u + k - 1) % p;
			for (uint32_t d = k; d <= down; d++)
				ids[n++] = s * p + (s + p - d) % p;
			a2a_mv_send(pl, st, u, (u + p - 1) % p, ids, n);
		}
	}
	a2a_mv_finish(pl, last);
	free(ids);
	return 0;
}

const struct a2a_algo a2a_ring_algo = {"ring", TORUS_ALGO_RING, fits, build, 1};
