/*
 * alltoallv "a3": the two-stage algorithm A3 of 002_7cde2a420b12b1bb.txt
 * on a sqrt(P) x sqrt(P) grid of members (P a perfect square, member u in
 * row u / q and column u % q, q = sqrt P): "a message from P_{i1,j1} to
 * P_{i2,j2} goes first to P_{i1,j2}", where it is combined with the other
 * messages from row i1 for column j2 and sent down the column.
 *
 * Steps:
 *   0. every member learns every member's counts (an allgather of the
 *      scounts rows) and checks what it will receive (-EPROTO on every
 *      member otherwise), then builds the plan;
 *   1. row stage: member (i1, j1) sends member (i1, j2) one message: its
 *      messages for every member of column j2, in row order (its own part
 *      it copies);
 *   2. column stage: member (i1, j2) sends member (i2, j2) one message:
 *      the messages for (i2, j2) from every member of row i1, in column
 *      order, which (i2, j2) unpacks into recv.
 *
 * Cost: 2 sqrt(P) start-ups per member (Table 3 of 002, the two copies to
 * itself included), 2 L_max bytes moved; nothing balances the load, so a
 * member whose row sends much to one column carries it all (002's hot
 * spots, which A4 spreads). Extra memory: the counts (8 P^2 bytes) and
 * both stages' packing and landing scratch (about 4 L_max).
 */
#include "alltoallv.h"

#include "../common/a2a.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct a2a_algo a3_algo = {"a3", TORUS_ALGO_OTHER, NULL, NULL, 0};

static uint32_t isqrt(uint32_t p)
{
	uint32_t q = 0;
	while ((uint64_t)(q + 1) * (q + 1) <= p)
		q++;
	return q;
}

int coll_a3_fits(const coll_team_t *t)
{
	uint32_t q = isqrt(t->size);
	return t->cores == 1 && q * q == t->size && 2 * q + 2 <= emu_params(t->core)->dma_counters &&
	       coll_v_counts_fit(t);
}

static int build(struct coll_plan *pl, size_t esz_, const int64_t *M, const int64_t *SD, const int64_t *RD)
{
	uint32_t p = pl->p, q = isqrt(p);
	uint64_t esz = esz_;
	uint32_t me = pl->only;
	/* land[i * q + c]: where i's row message for column c sits at (row(i), c) */
	uint64_t *land = malloc((size_t)p * q * sizeof(uint64_t));
	if (!land)
		return -ENOMEM;
	uint32_t st0 = a2a_step(pl, 0, 0), st1 = a2a_step(pl, 1, 0);
#define MB(i, j) ((uint64_t)M[(size_t)(i) * p + (j)] * esz)
	for (uint32_t i = 0; i < p; i++)
		for (uint32_t c = 0; c < q; c++) {
			uint32_t k = i / q * q + c;
			uint64_t len = 0;
			for (uint32_t r = 0; r < q; r++)
				len += MB(i, r * q + c);
			land[(size_t)i * q + c] = 0;
			if (!len)
				continue;
			uint64_t pack = i == k ? 0 : a2a_tmp(pl, i, len);
			uint64_t at = land[(size_t)i * q + c] = a2a_tmp(pl, k, len), acc = 0;
			for (uint32_t r = 0; (me == A2A_ALL || i == me) && r < q; r++) {
				uint32_t j = r * q + c;
				a2a_copy(pl, st0, 0, i, A2A_SEND, (uint64_t)SD[(size_t)i * p + j] * esz, A2A_TMP,
					 (i == k ? at : pack) + acc, MB(i, j));
				acc += MB(i, j);
			}
			if (i != k)
				a2a_put(pl, st0, i, k, A2A_TMP, pack, A2A_TMP, at, len, 0);
		}
	for (uint32_t k = 0; k < p; k++)
		for (uint32_t r2 = 0; r2 < q; r2++) {
			uint32_t j = r2 * q + k % q, row = k / q;
			uint64_t len = 0;
			for (uint32_t c1 = 0; c1 < q; c1++)
				len += MB(row * q + c1, j);
			if (!len)
				continue;
			uint64_t pack = k == j ? 0 : a2a_tmp(pl, k, len);
			uint64_t dst = k == j ? 0 : a2a_tmp(pl, j, len), acc = 0;
			for (uint32_t c1 = 0; c1 < q; c1++) {
				uint32_t i = row * q + c1;
				uint64_t n = MB(i, j);
				if (!n)
					continue;
				/* the piece for j in i's row message at k: after those for
				 * the rows above j's */
				uint64_t within = 0;
				for (uint32_t r = 0; r < r2; r++)
					within += MB(i, r * q + k % q);
				uint64_t src = land[(size_t)i * q + k % q] + within;
				uint64_t place = (uint64_t)RD[(size_t)j * p + i] * esz;
				if (k == j) {
					if (me == A2A_ALL || k == me)
						a2a_copy(pl, st1, 0, k, A2A_TMP, src, A2A_RECV, place, n);
				} else {
					if (me == A2A_ALL || k == me)
						a2a_copy(pl, st1, 0, k, A2A_TMP, src, A2A_TMP, pack + acc, n);
					if (me == A2A_ALL || j == me)
						a2a_copy(pl, st1, 1, j, A2A_TMP, dst + acc, A2A_RECV, place, n);
				}
				acc += n;
			}
			if (k != j)
				a2a_put(pl, st1, k, j, A2A_TMP, pack, A2A_TMP, dst, len, 0);
		}
#undef MB
	free(land);
	return 0;
}

/* the two messages to itself: its row message for its own column, and the
 * column message to itself */
static void self_bytes(const int64_t *M, uint32_t p, uint32_t me, uint64_t *n)
{
	uint32_t q = isqrt(p);
	for (uint32_t st = 0; st < 2; st++)
		for (uint32_t r = 0; r < q; r++)
			n[st] += (uint64_t)(st ? M[(size_t)(me / q * q + r) * p + me] : M[(size_t)me * p + r * q + me % q]);
}

const struct coll_v_algo coll_v_a3 = {&a3_algo, build, self_bytes, 2};

int coll_alltoallv_a3(const struct coll_args *a) { return coll_v_run(a, &coll_v_a3); }
