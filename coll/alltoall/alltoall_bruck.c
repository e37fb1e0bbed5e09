/*
 * alltoall "bruck": the log p algorithm with combining (the hypercube idea
 * of 001_4167629ecc6cc32a.txt, "combine messages belonging to the same
 * subcube, and then distribute them", in Bruck et al.'s form for any p,
 * the reference [1] of 001 for the ceil(log2 p) rounds lower bound).
 *
 * Steps: a block from s for v has d = (v - s) mod p hops of the ring of
 * members to go. Round k = 0 .. ceil(log2 p) - 1: member u sends to
 * u + 2^k, in one message, every block it holds whose d has bit k set
 * (ordered by d, then source), and waits for the one message it receives.
 * After the last round every block is at its member, which copies it into
 * place.
 *
 * Cost (m bytes per block): ceil(log2 p) alpha + (p/2) m beta per round,
 * so ceil(log2 p)(alpha + (p/2) m beta): few start-ups, p/2 log p blocks
 * moved instead of p - 1. For short messages.
 * Memory: packing and landing scratch per round, about p log p blocks.
 * Counters: ceil(log2 p) + 2 <= dma_counters.
 */
#include "../common/a2a.h"

#include <errno.h>
#include <stdlib.h>

static uint32_t rounds_of(uint32_t p)
{
	uint32_t k = 0;
	while ((1ull << k) < p)
		k++;
	return k;
}

static int fits(const struct a2a_geom *g, uint32_t *msgs, const char **why)
{
	(void)why;
	*msgs = rounds_of(g->p);
	return 1;
}

static int build(struct coll_plan *pl, const struct a2a_geom *g)
{
	uint32_t p = g->p, K = rounds_of(p);
	uint32_t *ids = malloc((size_t)p * p * sizeof(uint32_t)), *n = calloc(p, sizeof(uint32_t));
	if (!ids || !n || a2a_mv_init(pl)) {
		free(ids);
		free(n);
		return -ENOMEM;
	}
	uint32_t last = 0;
	if (!K)
		last = a2a_step(pl, 0, 0);
	for (uint32_t k = 0; k < K; k++) {
		uint32_t st = last = a2a_step(pl, 0, k), mask = (1u << k) - 1;
		for (uint32_t u = 0; u < p; u++)
			n[u] = 0;
		/* by distance, then source: the holder of (s, v) has moved it by
		 * the low k bits of its distance so far */
		for (uint32_t d = 1; d < p; d++) {
			if (!(d >> k & 1))
				continue;
			for (uint32_t s = 0; s < p; s++) {
				uint32_t u = (s + (d & mask)) % p;
				ids[(size_t)u * p + n[u]++] = s * p + (s + d) % p;
			}
		}
		for (uint32_t u = 0; u < p; u++)
			a2a_mv_send(pl, st, u, (u + (1u << k)) % p, ids + (size_t)u * p, n[u]);
	}
	a2a_mv_finish(pl, last);
	free(ids);
	free(n);
	return 0;
}

const struct a2a_algo a2a_bruck_algo = {"bruck", TORUS_ALGO_BRUCK, fits, build, 0};
