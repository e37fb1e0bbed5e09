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
 * two messages of the round, copies the block that is for it into place
 * and forwards the rest next round, straight from where it landed. A
 * message of one block is the receiver's alone: it lands in place.
 *
 * Cost (m bytes per block): about (p/2)(2 alpha) + (p^2/8) m beta per
 * direction: each round's message shrinks by one block. Neighbour links
 * only, but (p^2 - 1)/8 blocks cross each link direction, against the
 * (p-1) m h / 2N of direct.
 *
 * Memory: 3 (p - 1) blocks of scratch per member, more for none: the
 * messages of round k land in landing area k mod 3 of their direction
 * (an up message keeps its blocks in the order of their distance, so that
 * the receiver's block comes first; a down message in the reverse order,
 * so that it comes last: either way what is forwarded is contiguous), and
 * a member that would send its first message in two pieces (the members it
 * is for wrap around the team) packs it first (h+ or h- blocks more).
 * An area is landed in again 3 rounds later. That is safe because a member
 * waits for its own earlier puts to leave before it sends (the plan's
 * inj_order): u - 1 lands in u's area in round k + 3 only after receiving
 * u's down message of round k + 2, which u sent after its round k + 1
 * forward from that area had left and after it copied its block out in
 * round k; likewise down. (Round k + 2's message exists whenever round
 * k + 3's does: h+ - h- <= 1.)
 *
 * Counters: p - 1 (two messages a round); a member with fewer reuses them
 * batch after batch (a2a_exec.c, a2a.h: reuse).
 */
#include "../common/a2a.h"

#include <errno.h>
#include <stdlib.h>

static int fits(const struct a2a_geom *g, uint32_t *msgs, const char **why)
{
	(void)why;
	*msgs = g->p - 1;
	return 1;
}

/* The layout of every member's scratch, in blocks. */
struct ring {
	uint32_t p, up, down, nland;
	uint64_t B;
};

static uint64_t land_up(const struct ring *r, uint32_t k) { return (uint64_t)(k % r->nland) * r->up * r->B; }

static uint64_t land_down(const struct ring *r, uint32_t k)
{
	return ((uint64_t)r->nland * r->up + (uint64_t)(k % r->nland) * r->down) * r->B;
}

/* the pack areas, after the landing areas (only members that pack have them) */
static uint64_t pack_up(const struct ring *r) { return (uint64_t)r->nland * (r->up + r->down) * r->B; }

/* u's first message holds the blocks for the n members from first on: do
 * they wrap around the end of its send buffer? */
static int wraps(const struct ring *r, uint32_t first, uint32_t n) { return first + n > r->p; }

/*
 * Round 1: u's first message each way, from its send buffer: the blocks for
 * the `n` members from `first` on (mod p), in place if they do not wrap,
 * else packed at `pack`. Lands at `at` of peer (in its recv if n is 1).
 */
static void first_send(struct coll_plan *pl, const struct ring *r, uint32_t u, uint32_t peer, uint32_t first,
		       uint32_t n, uint64_t pack, uint64_t at)
{
	uint64_t B = r->B;
	enum a2a_buf sbuf = A2A_SEND;
	uint64_t soff = (uint64_t)first * B;
	if (wraps(r, first, n)) {
		uint32_t head = r->p - first;
		a2a_copy(pl, 0, 0, u, A2A_SEND, soff, A2A_TMP, pack, (uint64_t)head * B);
		a2a_copy(pl, 0, 0, u, A2A_SEND, 0, A2A_TMP, pack + (uint64_t)head * B, (uint64_t)(n - head) * B);
		sbuf = A2A_TMP;
		soff = pack;
	}
	if (n == 1)
		a2a_put(pl, 0, u, peer, sbuf, soff, A2A_RECV, (uint64_t)u * B, B, 1);
	else
		a2a_put(pl, 0, u, peer, sbuf, soff, A2A_TMP, at, (uint64_t)n * B, n);
}

static int build(struct coll_plan *pl, const struct a2a_geom *g)
{
	struct ring r = {.p = g->p, .up = g->p / 2, .down = (g->p - 1) / 2, .B = pl->block};
	uint32_t p = r.p, rounds = r.up > r.down ? r.up : r.down;
	uint64_t B = r.B;
	r.nland = rounds < 3 ? (rounds ? rounds : 1) : 3;
	pl->inj_order = 1;
	for (uint32_t u = 0; u < p; u++) {
		uint64_t need = pack_up(&r) / B;
		if (wraps(&r, (u + 1) % p, r.up) || wraps(&r, (u + p - r.down) % p, r.down))
			need += r.up + r.down;
		a2a_tmp(pl, u, need * B);
	}
	uint64_t pdown = pack_up(&r) + (uint64_t)r.up * B;
	uint32_t st = a2a_step(pl, 0, 0);
	for (uint32_t u = 0; u < p; u++) {
		a2a_copy(pl, st, 0, u, A2A_SEND, (uint64_t)u * B, A2A_RECV, (uint64_t)u * B, B);
		if (r.up)
			first_send(pl, &r, u, (u + 1) % p, (u + 1) % p, r.up, pack_up(&r), land_up(&r, 1));
		if (r.down)
			first_send(pl, &r, u, (u + p - 1) % p, (u + p - r.down) % p, r.down, pdown, land_down(&r, 1));
	}
	for (uint32_t k = 1; k <= rounds; k++) {
		if (k > 1) {
			st = a2a_step(pl, 0, k - 1);
			/* forward what came in round k - 1, less the block that was
			 * for u: up, blocks from u-k+1 (the first was u's); down,
			 * from u+k-1 (the last was u's) */
			for (uint32_t u = 0; u < p; u++) {
				if (k <= r.up) {
					uint32_t n = r.up - k + 1, s = (u + p - (k - 1)) % p, v = (u + 1) % p;
					uint64_t from = land_up(&r, k - 1) + B;
					if (n == 1)
						a2a_put(pl, st, u, v, A2A_TMP, from, A2A_RECV, (uint64_t)s * B, B, 1);
					else
						a2a_put(pl, st, u, v, A2A_TMP, from, A2A_TMP, land_up(&r, k), (uint64_t)n * B, n);
				}
				if (k <= r.down) {
					uint32_t n = r.down - k + 1, s = (u + k - 1) % p, v = (u + p - 1) % p;
					uint64_t from = land_down(&r, k - 1);
					if (n == 1)
						a2a_put(pl, st, u, v, A2A_TMP, from, A2A_RECV, (uint64_t)s * B, B, 1);
					else
						a2a_put(pl, st, u, v, A2A_TMP, from, A2A_TMP, land_down(&r, k), (uint64_t)n * B, n);
				}
			}
		}
		/* what came in round k: u's block to its place (a message of one
		 * block landed there) */
		for (uint32_t u = 0; u < p; u++) {
			if (k <= r.up && r.up - k + 1 > 1)
				a2a_copy(pl, st, 1, u, A2A_TMP, land_up(&r, k), A2A_RECV, (uint64_t)((u + p - k) % p) * B, B);
			if (k <= r.down && r.down - k + 1 > 1)
				a2a_copy(pl, st, 1, u, A2A_TMP, land_down(&r, k) + (uint64_t)(r.down - k) * B, A2A_RECV,
					 (uint64_t)((u + k) % p) * B, B);
		}
	}
	return 0;
}

const struct a2a_algo a2a_ring_algo = {"ring", TORUS_ALGO_RING, fits, build, 1};
