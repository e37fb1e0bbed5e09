/*
 * alltoall "factor": the 1-factor algorithm (001_4167629ecc6cc32a.txt, "1
 * factor algorithm"; 000_a0e9749300f48338.txt, Lemma 1).
 *
 * Steps: one round per factor, each a perfect matching of the members, in
 * which partners exchange their blocks for each other (direct puts into
 * recv) and wait for the partner's before the next round.
 *   p odd:  p rounds; factor i pairs u with (i - u) mod p; the one member
 *           with 2u = i (mod p) is paired with itself (a self-loop: it
 *           copies its own block, or idles).
 *   p even: p - 1 rounds; members 0..p-2 follow the odd construction on
 *           p - 1, and the one that would be paired with itself,
 *           idle = (p/2) i mod (p-1), is paired with member p - 1 instead.
 *   Own block: copied in the self-loop round (odd p), in round 0 (even p).
 *
 * Cost (m bytes per block): (p-1)(alpha + m beta) for even p, p(alpha + m
 * beta) for odd p, one message each way per round; on the torus a round's
 * pairs are h hops apart and share links.
 * Counters: p - 1 reception counters (one per partner); a member with fewer
 * reuses them batch after batch (a2a_exec.c, a2a.h: reuse).
 */
#include "../common/a2a.h"

/* u's partner in factor i of p members (itself: a self-loop) */
uint32_t a2a_factor_partner(uint32_t p, uint32_t i, uint32_t u)
{
	if (p % 2)
		return (uint32_t)(((int64_t)i - u) % p + p) % p;
	uint32_t q = p - 1, idle = (uint32_t)((uint64_t)(p / 2) * i % q);
	if (u == p - 1)
		return idle;
	if (u == idle)
		return p - 1;
	return (uint32_t)(((int64_t)i - u) % q + q) % q;
}

uint32_t a2a_factor_rounds(uint32_t p) { return p == 1 ? 1 : p % 2 ? p : p - 1; }

static int fits(const struct a2a_geom *g, uint32_t *msgs, const char **why)
{
	(void)why;
	*msgs = g->p - 1;
	return 1;
}

static int build(struct coll_plan *pl, const struct a2a_geom *g)
{
	uint32_t p = g->p;
	for (uint32_t i = 0; i < a2a_factor_rounds(p); i++) {
		uint32_t st = a2a_step(pl, 0, i);
		for (uint32_t u = 0; u < p; u++) {
			uint32_t v = a2a_factor_partner(p, i, u);
			if (v != u)
				a2a_direct(pl, st, u, v);
			else if (p % 2)
				a2a_direct(pl, st, u, u); /* the self-loop: its own block */
			if (p % 2 == 0 && i == 0)
				a2a_direct(pl, st, u, u);
		}
	}
	return 0;
}

const struct a2a_algo a2a_factor_algo = {"factor", TORUS_ALGO_FACTOR, fits, build, 1};
