/*
 * alltoallv "a2": the two-stage algorithm A2 of 002_7cde2a420b12b1bb.txt
 * (after Ranka and Bader): "the data for each P_j is evenly divided into P
 * slices"; slice k of every message goes to member k in stage 1, and
 * member k forwards everything it got for j to j in stage 2. Both stages
 * are direct exchanges of messages about L/P long, so the longest message
 * is bounded by the senders' and receivers' loads rather than by the
 * largest single message.
 *
 * Steps:
 *   0. every member learns every member's counts (an allgather of the
 *      scounts rows, P^2 numbers: a put layer needs the sizes before the
 *      data), checks that what each member will send it is what it
 *      expects (-EPROTO on every member otherwise), and builds the plan;
 *   1. stage 1: for each k, member i packs slice k of its message to every
 *      j (elements [k e / P, (k+1) e / P) of the e elements for j) into
 *      one message and puts it into k's scratch; its own slice it copies;
 *   2. stage 2: member k packs, for each j, slice k of every i's message to
 *      j into one message for j; j unpacks the slices into their places in
 *      recv.
 * The slices are contiguous runs of elements rather than 002's element
 * round robin (Bader's scan): the same sizes, and a put layer moves runs.
 *
 * Cost: 2P start-ups per member (Table 3 of 002, the two copies to itself
 * included), 2 L_max bytes moved; every stage-1 message holds
 * sum_j M_ij / P, every stage-2 message sum_i M_ij / P.
 * Extra memory: the counts (8 P^2 bytes), the packing and landing scratch
 * of both stages (about 4 L_max), the address tables.
 */
#include "alltoallv.h"

#include "../common/a2a.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct a2a_algo a2_algo = {"a2", TORUS_ALGO_OTHER, NULL, NULL, 0};

/* Slice k of e elements among p: its first element and its length. */
static inline uint64_t s_off(uint64_t e, uint32_t k, uint32_t p) { return e * k / p; }
static inline uint64_t s_len(uint64_t e, uint32_t k, uint32_t p) { return e * (k + 1) / p - e * k / p; }

static int build(struct coll_plan *pl, size_t esz_, const int64_t *M, const int64_t *SD, const int64_t *RD)
{
	uint32_t p = pl->p;
	uint64_t esz = esz_;
	uint32_t me = pl->only;
	uint64_t *land = malloc((size_t)p * p * sizeof(uint64_t)); /* land[i * p + k]: i's slices at k */
	if (!land)
		return -ENOMEM;
	uint32_t st0 = a2a_step(pl, 0, 0), st1 = a2a_step(pl, 1, 0);
	for (uint32_t i = 0; i < p; i++)
		for (uint32_t k = 0; k < p; k++) {
			uint64_t len = 0;
			for (uint32_t j = 0; j < p; j++)
				len += s_len((uint64_t)M[(size_t)i * p + j], k, p) * esz;
			land[(size_t)i * p + k] = UINT64_MAX;
			if (!len)
				continue;
			uint64_t pack = i == k ? 0 : a2a_tmp(pl, i, len);
			uint64_t at = land[(size_t)i * p + k] = a2a_tmp(pl, k, len), acc = 0;
			for (uint32_t j = 0; (me == A2A_ALL || i == me) && j < p; j++) {
				uint64_t e = (uint64_t)M[(size_t)i * p + j], n = s_len(e, k, p) * esz;
				a2a_copy(pl, st0, 0, i, A2A_SEND, ((uint64_t)SD[(size_t)i * p + j] + s_off(e, k, p)) * esz, A2A_TMP,
					 (i == k ? at : pack) + acc, n);
				acc += n;
			}
			if (i != k)
				a2a_put(pl, st0, i, k, A2A_TMP, pack, A2A_TMP, at, len, 0);
		}
	for (uint32_t k = 0; k < p; k++)
		for (uint32_t j = 0; j < p; j++) {
			uint64_t len = 0;
			for (uint32_t i = 0; i < p; i++)
				len += s_len((uint64_t)M[(size_t)i * p + j], k, p) * esz;
			if (!len)
				continue;
			uint64_t pack = k == j ? 0 : a2a_tmp(pl, k, len);
			uint64_t dst = k == j ? 0 : a2a_tmp(pl, j, len);
			uint64_t acc = 0, acc2 = 0;
			for (uint32_t i = 0; i < p; i++) {
				uint64_t e = (uint64_t)M[(size_t)i * p + j], n = s_len(e, k, p) * esz;
				if (!n)
					continue;
				/* where slice (i, j, k) sits in k's landing area from i */
				uint64_t within = 0;
				for (uint32_t jj = 0; jj < j; jj++)
					within += s_len((uint64_t)M[(size_t)i * p + jj], k, p) * esz;
				uint64_t src = land[(size_t)i * p + k] + within;
				uint64_t place = ((uint64_t)RD[(size_t)j * p + i] + s_off(e, k, p)) * esz;
				if (k == j) {
					if (me == A2A_ALL || k == me) /* our own slices: straight into recv */
						a2a_copy(pl, st1, 0, k, A2A_TMP, src, A2A_RECV, place, n);
				} else {
					if (me == A2A_ALL || k == me)
						a2a_copy(pl, st1, 0, k, A2A_TMP, src, A2A_TMP, pack + acc, n);
					if (me == A2A_ALL || j == me)
						a2a_copy(pl, st1, 1, j, A2A_TMP, dst + acc2, A2A_RECV, place, n);
				}
				acc += n;
				acc2 += n;
			}
			if (k != j)
				a2a_put(pl, st1, k, j, A2A_TMP, pack, A2A_TMP, dst, len, 0);
		}
	free(land);
	return 0;
}

/* the two messages to itself: its slice of its own messages, the slices
 * of everyone's messages to it that it forwards to itself */
static void self_bytes(const int64_t *M, uint32_t p, uint32_t me, uint64_t *n)
{
	for (uint32_t st = 0; st < 2; st++)
		for (uint32_t j = 0; j < p; j++)
			n[st] += s_len((uint64_t)M[st ? (size_t)j * p + me : (size_t)me * p + j], me, p);
}

const struct coll_v_algo coll_v_a2 = {&a2_algo, build, self_bytes, 2};

int coll_alltoallv_a2(const struct coll_args *a) { return coll_v_run(a, &coll_v_a2); }
