/*
 * alltoall "xor": pairwise exchange (001_4167629ecc6cc32a.txt: "Instead of
 * pairing processor j with processor (i - j) mod p in iteration i, we can
 * also use the exclusive-or of j and i ... This approach requires p to be a
 * power of two").
 *
 * Steps: rounds i = 1 .. p-1; in round i member u exchanges blocks with
 * u XOR i (direct puts into recv) and waits for the partner's. Every round
 * is a perfect matching without self-loops; the own block is copied in
 * round 1.
 *
 * Cost (m bytes per block): (p-1)(alpha + m beta). On a torus whose sizes
 * are powers of two, u XOR i differs from u in the coordinates of the bits
 * of i, so low rounds are near neighbours and high rounds cross the torus.
 * Restrictions: p a power of two. Counters: p - 1, reused batch after batch
 * by a member with fewer (a2a_exec.c, a2a.h: reuse).
 */
#include "../common/a2a.h"

static int fits(const struct a2a_geom *g, uint32_t *msgs, const char **why)
{
	*msgs = g->p - 1;
	if (g->p & (g->p - 1)) {
		*why = "the team size must be a power of two";
		return 0;
	}
	return 1;
}

static int build(struct coll_plan *pl, const struct a2a_geom *g)
{
	uint32_t p = g->p;
	if (p == 1) {
		a2a_direct(pl, a2a_step(pl, 0, 0), 0, 0);
		return 0;
	}
	for (uint32_t i = 1; i < p; i++) {
		uint32_t st = a2a_step(pl, 0, i - 1);
		for (uint32_t u = 0; u < p; u++) {
			if (i == 1)
				a2a_direct(pl, st, u, u);
			a2a_direct(pl, st, u, u ^ i);
		}
	}
	return 0;
}

const struct a2a_algo a2a_xor_algo = {"xor", TORUS_ALGO_XOR, fits, build, 1};
