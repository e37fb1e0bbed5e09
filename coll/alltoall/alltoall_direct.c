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
 * Blocks of at least two parts of 8 full packets (1920 bytes by default)
 * go in parts, part k to every member before part k+1 to any, all parts of
 * a block on one counter: each injection FIFO (one per first link) then
 * interleaves its destinations finely, so the links a message turns onto
 * are fed all along instead of in bursts, as Blue Gene/L's all-to-all
 * sprays packets. On 4x4x4 with 16 to 64 KiB blocks this took the time
 * from 1.33-1.36 to 1.04-1.08 of the link-load bound (parts of 16 packets:
 * 1.06-1.08, 32: 1.09-1.16; 4 packets: more descriptors, no better).
 * TORUS_A2A_PART_BYTES=N sets the part size (0: whole blocks).
 *
 * Cost (m bytes per block): (p-1) alpha + (p-1) m beta injected per member;
 * on the torus the links carry every block over its h hops, so the busiest
 * link direction carries about (p-1) m h / 2N, h the mean hop count.
 * Counters: one reception counter for all p - 1 blocks (the member waits
 * for all of them anyway), so direct fits any team: with one counter per
 * source, 4x4x4 needed 65 of the default 64 and fell back to mesh2d at 2.5
 * times the time (osu_alltoall at 1 MiB).
 */
#include "../common/a2a.h"

#include <errno.h>
#include <stdlib.h>

/* packets per part of a large block */
#define A2A_PART_PACKETS 8u

static int fits(const struct a2a_geom *g, uint32_t *msgs, const char **why)
{
	(void)why;
	*msgs = g->p > 1 ? 1 : 0;
	return 1;
}

static int build(struct coll_plan *pl, const struct a2a_geom *g)
{
	uint32_t st = a2a_step(pl, 0, 0);
	uint32_t p = g->p;
	uint64_t B = pl->block, part = (uint64_t)A2A_PART_PACKETS * g->payload;
	const char *env = getenv("TORUS_A2A_PART_BYTES");
	if (env)
		part = strtoull(env, NULL, 10); /* 0: whole blocks */
	uint32_t nparts = part && B >= 2 * part ? (uint32_t)((B + part - 1) / part) : 1;
	for (uint32_t u = 0; u < p; u++) {
		/* a member running the plan needs its own messages and those to
		 * it only: with 512 members the rest is 99.6% of the work */
		int mine = pl->only == A2A_ALL || u == pl->only;
		if (mine)
			a2a_direct(pl, st, u, u);
		else if (pl->only >= p)
			continue; /* (no member of this plan) */
		for (uint32_t k = 0; k < nparts; k++) {
			/* +1, -1, +2, -2, ...: every other member once. Another
			 * member's message to `only` is its step j = 2d - 1 (d
			 * ahead) or 2(p - d) (p - d behind), found at once: the
			 * loop over every j took 134 million turns per call on
			 * 8x8x8, 4% of the job's CPU */
			uint32_t d = mine ? 0 : (pl->only + p - u) % p;
			uint32_t j0 = mine ? 1 : d <= p / 2 ? 2 * d - 1 : 2 * (p - d), j1 = mine ? p : j0 + 1;
			for (uint32_t j = j0; j < j1; j++) {
				uint32_t off = (j + 1) / 2, v = j % 2 ? (u + off) % p : (u + p - off) % p;
				uint64_t at = (uint64_t)k * part, len = k + 1 == nparts ? B - at : part;
				a2a_put_part(pl, st, u, v, 0, A2A_SEND, (uint64_t)v * B + at, A2A_RECV,
					     (uint64_t)u * B + at, len);
			}
		}
	}
	for (uint32_t v = 0; v < p; v++)
		pl->nslots[v] = p > 1 ? 1 : 0;
	return 0;
}

const struct a2a_algo a2a_direct_algo = {"direct", TORUS_ALGO_DIRECT, fits, build, 0};
