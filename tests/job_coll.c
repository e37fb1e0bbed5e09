/*
 * coll-check: every algorithm of the catalogue x collective x datatype x
 * operation x count, on the whole job's team (and a team of one core per
 * node), checked against a sequential reference computed from every
 * member's input. Inputs are small integers, so float sums are exact in any
 * order. Also checks the bad calls a member can see locally.
 *
 *   torusrun --torus 3x3x2 -- coll-check 1 7 1000
 *   torusrun --torus 4x4x4 -- coll-check --repeat 12 1000   (kept set-ups)
 */
#include "torus/coll.h"
#include "coll_internal.h" /* coll_multicolor_release: a member that lost its kept set-up */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t counts[8];
static int ncounts;
static const char *only; /* --only ALGO: just that algorithm */
static int only_dtype = -1; /* --dtype D: just that datatype */
static int failures;

static void fail(emu_core_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(emu_core_t *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "coll-check: core %u: %s\n", emu_core_global(c), msg);
	__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
}

static _Thread_local uint32_t salt; /* --repeat: every round's inputs differ (per core) */

/* Member m's element i, as a small integer (1..3 for products). */
static int64_t value(uint32_t m, size_t i, enum coll_op op)
{
	uint64_t h = (m + 1 + salt) * 2654435761u ^ (i + 7) * 40503u;
	if (op == COLL_PROD)
		return 1 + (int64_t)(h % 2); /* products stay exact for many members */
	return (int64_t)(h % 97) - 48;
}

static void store(void *buf, enum coll_dtype t, size_t i, int64_t v)
{
	switch (t) {
	case COLL_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case COLL_INT64: ((int64_t *)buf)[i] = v; break;
	case COLL_FLOAT: ((float *)buf)[i] = (float)v; break;
	default: ((double *)buf)[i] = (double)v; break;
	}
}

static void fill(void *buf, enum coll_dtype t, enum coll_op op, uint32_t m, size_t from, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store(buf, t, i, value(m, from + i, op));
}

/* A node team's cores share one set of buffers (node-local barriers). */
static uint8_t *shared_send, *shared_recv;

static int run_one(emu_core_t *c, coll_team_t *t, const struct coll_algorithm *al, enum coll_dtype dt,
		   enum coll_op op, size_t count, int in_place)
{
	enum coll_kind kind = al->kind;
	const char *algo = al->name;
	uint32_t p = coll_team_size(t), me = coll_team_rank(t), k = coll_team_cores(t);
	int lead = emu_core_index(c) == 0 || k == 1;
	size_t esz = coll_dtype_size(dt);
	size_t sn = kind == COLL_REDUCE_SCATTER || kind == COLL_ALLTOALL ? count * p : count;
	size_t rn = kind == COLL_ALLGATHER || kind == COLL_ALLTOALL ? count * p : count;
	uint8_t *send = NULL, *recv = NULL, *ref = malloc(rn * esz + 1), *tmp = malloc(rn * esz + 1);
	int rc = 1;
	if (lead) {
		send = malloc(sn * esz + 1);
		recv = in_place ? send : malloc(rn * esz + 1);
		/* reduce-scatter: member m's input is elements [0, p*count); allreduce:
		 * [0, count); allgather: member m contributes its own count elements */
		if (send && recv) {
			fill(send, dt, op, me, 0, sn);
			if (!in_place)
				memset(recv, 0xA5, rn * esz);
		}
	}
	if (k > 1) {
		if (lead) {
			shared_send = send;
			shared_recv = recv;
		}
		if (dma_barrier_node(c, k, 0, NULL))
			goto out;
		send = shared_send;
		recv = shared_recv;
	}
	if (!send || !recv || !ref || !tmp)
		goto out;
	int fits = coll_team_fits(t, al);
	if (kind == COLL_REDUCE_SCATTER)
		rc = coll_reduce_scatter(t, send, recv, count, dt, op, algo);
	else if (kind == COLL_ALLGATHER)
		rc = coll_allgather(t, send, recv, count, dt, algo);
	else if (kind == COLL_ALLTOALL)
		rc = coll_alltoall(t, send, recv, count, dt, algo);
	else
		rc = coll_allreduce(t, send, recv, count, dt, op, algo);
	if (!fits) {
		/* a team the algorithm does not fit: a clear error, no hang */
		if (rc != -ENOTSUP)
			fail(c, "%s/%s on a team it does not fit gave %d, not -ENOTSUP", coll_kind_name(kind), algo, rc);
		rc = 0;
		goto out;
	}
	if (rc) {
		fail(c, "%s/%s %s %s count %zu%s: %s", coll_kind_name(kind), algo, coll_dtype_name(dt), coll_op_name(op),
		     count, in_place ? " in place" : "", dma_strerror(rc));
		goto out;
	}
	if (!lead)
		goto out; /* core 0 of the node checks the node's result */
	/* the sequential reference */
	if (kind == COLL_ALLTOALL) {
		/* block m of recv: member m's block for us */
		for (uint32_t m = 0; m < p; m++)
			fill(ref + m * count * esz, dt, op, m, (size_t)me * count, count);
	} else if (kind == COLL_ALLGATHER) {
		for (uint32_t m = 0; m < p; m++)
			fill(ref + m * count * esz, dt, op, m, 0, count);
	} else {
		size_t from = kind == COLL_REDUCE_SCATTER ? me * count : 0;
		fill(ref, dt, op, 0, from, rn);
		for (uint32_t m = 1; m < p; m++) {
			fill(tmp, dt, op, m, from, rn);
			coll_reduce_local(dt, op, ref, tmp, rn);
		}
	}
	if (memcmp(ref, recv, rn * esz)) {
		size_t bad = 0;
		while (bad < rn * esz && ref[bad] == recv[bad])
			bad++;
		fail(c, "%s/%s %s %s count %zu%s on %u members x %u cores: wrong result (first bad byte %zu)",
		     coll_kind_name(kind), algo, coll_dtype_name(dt), coll_op_name(op), count, in_place ? " in place" : "",
		     p, k, bad);
		rc = 1;
	}
out:
	/* nobody frees the node's buffers while another core still uses them */
	if (k > 1)
		dma_barrier_node(c, k, 0, NULL);
	if (lead) {
		if (recv != send)
			free(recv);
		free(send);
	}
	free(ref);
	free(tmp);
	return rc;
}

static void bad_calls(emu_core_t *c, coll_team_t *t)
{
	double x[8] = {0}, y[64] = {0};
	if (coll_allreduce(t, x, y, 4, COLL_DOUBLE, COLL_BAND, NULL) != -EINVAL)
		fail(c, "band on doubles accepted");
	if (coll_allreduce(t, NULL, y, 4, COLL_DOUBLE, COLL_SUM, NULL) != -EINVAL)
		fail(c, "NULL send accepted");
	if (coll_allreduce(t, x, y, 4, COLL_DOUBLE, COLL_SUM, "no-such-algorithm") != -ENOENT)
		fail(c, "unknown algorithm accepted");
	if (coll_allgather(t, y, y + 1, 2, COLL_DOUBLE, NULL) != -EINVAL)
		fail(c, "overlapping buffers accepted");
	if (coll_allreduce(t, x, y, 4, (enum coll_dtype)9, COLL_SUM, NULL) != -EINVAL)
		fail(c, "bad dtype accepted");
	if (coll_allreduce(NULL, x, y, 4, COLL_DOUBLE, COLL_SUM, NULL) != -EINVAL)
		fail(c, "NULL team accepted");
}

/* Member 1 is called with one element more than the others: every member
 * must get -EPROTO from every algorithm that fits the team, and no hang. */
static void mismatch(emu_core_t *c, coll_team_t *t)
{
	static double *shared; /* a node team's cores share one buffer */
	uint32_t k = coll_team_cores(t), p = coll_team_size(t);
	double *buf = NULL;
	if (p < 2)
		return;
	if (emu_core_index(c) == 0 || k == 1)
		buf = calloc(4 * 8 * (p + 1), sizeof(double));
	if (k > 1) {
		if (emu_core_index(c) == 0)
			shared = buf;
		dma_barrier_node(c, k, 0, NULL);
		buf = shared;
	}
	if (!buf)
		return;
	double *send = buf, *recv = buf + 2 * 8 * (p + 1);
	size_t count = coll_team_rank(t) == 1 ? 6 : 5;
	for (int kind = 0; kind < COLL_ALLTOALLV; kind++) {
		size_t na;
		const struct coll_algorithm *al = coll_catalogue((enum coll_kind)kind, &na);
		for (size_t i = 0; i < na; i++) {
			if (!coll_team_fits(t, &al[i]))
				continue;
			int rc = kind == COLL_REDUCE_SCATTER ? coll_reduce_scatter(t, send, recv, count, COLL_DOUBLE, COLL_SUM, al[i].name)
				 : kind == COLL_ALLGATHER    ? coll_allgather(t, send, recv, count, COLL_DOUBLE, al[i].name)
				 : kind == COLL_ALLTOALL     ? coll_alltoall(t, send, recv, count, COLL_DOUBLE, al[i].name)
							     : coll_allreduce(t, send, recv, count, COLL_DOUBLE, COLL_SUM, al[i].name);
			if (rc != -EPROTO)
				fail(c, "%s/%s with counts that disagree gave %d, not -EPROTO", coll_kind_name((enum coll_kind)kind),
				     al[i].name, rc);
		}
	}
	/* one member alone sees its call is bad: every member gets its error */
	int odd = coll_team_rank(t) == 1;
	int rc = coll_allreduce(t, send, odd ? NULL : recv, 5, COLL_DOUBLE, COLL_SUM, NULL);
	if (rc != -EINVAL)
		fail(c, "one member's NULL buffer gave %d here, not -EINVAL", rc);
	rc = coll_allreduce(t, send, recv, 5, COLL_DOUBLE, COLL_SUM, odd ? "no-such-algorithm" : NULL);
	if (rc != -ENOENT)
		fail(c, "one member's unknown algorithm gave %d here, not -ENOENT", rc);
	if (k > 1)
		dma_barrier_node(c, k, 0, NULL);
	if (emu_core_index(c) == 0 || k == 1)
		free(buf);
}

/* ------------------------------------------------------------ alltoallv */

/* Elements member i sends member j (pattern `pat`): 0 .. m, with member 1
 * sending nothing and member 2 receiving nothing (when p > 3); pattern 1:
 * one spike of m per member, 1 element elsewhere. */
static int64_t v_count(int pat, uint32_t p, uint32_t i, uint32_t j, uint32_t m)
{
	if (pat == 1)
		return j == (i * 7 + 3) % p ? m : 1;
	if (p > 3 && (i == 1 || j == 2))
		return 0;
	uint64_t h = ((uint64_t)i * 2654435761u ^ (uint64_t)j * 40503u ^ (uint64_t)m * 977u) % 1000003u;
	return (int64_t)(h % (m + 1));
}

/* One alltoallv of pattern pat on team t, checked; sdispls leave a gap of
 * one element after every message, rdispls place the sources in reverse
 * order (so a wrong offset or source shows). Returns 0 or 1 (failure). */
static int run_v(emu_core_t *c, coll_team_t *t, const char *algo, enum coll_dtype dt, int pat, uint32_t m)
{
	static uint8_t *shared_s, *shared_r;
	uint32_t p = coll_team_size(t), me = coll_team_rank(t), k = coll_team_cores(t);
	int lead = emu_core_index(c) == 0 || k == 1, rc = 1;
	size_t esz = coll_dtype_size(dt);
	int64_t *sc = malloc(4 * p * sizeof(int64_t)), *sd = sc + p, *rcn = sc + 2 * p, *rd = sc + 3 * p;
	int64_t stot = 0, rtot = 0;
	for (uint32_t j = 0; j < p; j++) {
		sc[j] = v_count(pat, p, me, j, m);
		sd[j] = stot;
		stot += sc[j] + 1;
	}
	for (uint32_t jj = p; jj-- > 0;) {
		rcn[jj] = v_count(pat, p, jj, me, m);
		rd[jj] = rtot;
		rtot += rcn[jj];
	}
	uint8_t *send = NULL, *recv = NULL;
	if (lead) {
		send = malloc((size_t)stot * esz + 1);
		recv = malloc((size_t)rtot * esz + 1);
		for (uint32_t j = 0; send && j < p; j++)
			fill(send + sd[j] * esz, dt, COLL_SUM, me * 1000 + j, 0, (size_t)sc[j]);
		if (recv)
			memset(recv, 0xA5, (size_t)rtot * esz);
	}
	if (k > 1) {
		if (lead) {
			shared_s = send;
			shared_r = recv;
		}
		dma_barrier_node(c, k, 0, NULL);
		send = shared_s;
		recv = shared_r;
	}
	int r = send && recv ? coll_alltoallv(t, send, sc, sd, recv, rcn, rd, dt, algo) : -ENOMEM;
	size_t na;
	const struct coll_algorithm *al = coll_catalogue(COLL_ALLTOALLV, &na);
	for (size_t ai = 0; ai < na; ai++)
		if (!strcmp(al[ai].name, algo) && !coll_team_fits(t, &al[ai])) {
			/* a team the algorithm does not fit: a clear error */
			if (r != -ENOTSUP)
				fail(c, "alltoallv/%s on a team it does not fit gave %d, not -ENOTSUP", algo, r);
			r = -ENOTSUP;
			rc = 0;
		}
	if (r == -ENOTSUP && !rc) {
		/* checked above */
	} else if (r) {
		fail(c, "alltoallv/%s pattern %d m %u %s: %s", algo, pat, m, coll_dtype_name(dt), dma_strerror(r));
	} else if (lead) {
		uint8_t *ref = malloc((size_t)(m + 2) * esz);
		rc = 0;
		for (uint32_t i = 0; ref && i < p && !rc; i++) {
			fill(ref, dt, COLL_SUM, i * 1000 + me, 0, (size_t)rcn[i]);
			if (memcmp(ref, recv + rd[i] * esz, (size_t)rcn[i] * esz)) {
				fail(c, "alltoallv/%s pattern %d m %u %s on %u members: wrong data from %u", algo, pat, m,
				     coll_dtype_name(dt), p, i);
				rc = 1;
			}
		}
		free(ref);
	} else {
		rc = 0;
	}
	struct coll_v_stats st;
	if (!r && lead && !coll_alltoallv_stats(t, &st) && st.stages < 1)
		fail(c, "alltoallv/%s: no stage counted", algo);
	if (k > 1)
		dma_barrier_node(c, k, 0, NULL);
	if (lead) {
		free(send);
		free(recv);
	}
	free(sc);
	return rc;
}

/* In place: pattern 0 symmetric (i sends j what j sends i, MPI_IN_PLACE's
 * rule: every member's totals match, members' totals differ; member 1
 * sends and receives nothing), pattern 1 circulant (a count per distance
 * (j - i) mod p: every member's N alike, as bitonic needs). */
static int64_t vi_count(int pat, uint32_t p, uint32_t i, uint32_t j, uint32_t m)
{
	if (pat == 1) {
		uint64_t d = (j + p - i) % p;
		return (int64_t)((d * 2654435761u ^ (uint64_t)m * 977u) % 1000003u % (m + 1));
	}
	uint32_t a = i < j ? i : j, b = i < j ? j : i;
	if (p > 3 && a == 1)
		return 0;
	return (int64_t)(((uint64_t)a * 2654435761u ^ (uint64_t)b * 40503u ^ (uint64_t)m * 977u) % 1000003u % (m + 1));
}

/* One coll_alltoallv_inplace, checked; 0 or 1 (failure). */
static int run_vi(emu_core_t *c, coll_team_t *t, const char *algo, enum coll_dtype dt, int pat, uint32_t m)
{
	uint32_t p = coll_team_size(t), me = coll_team_rank(t);
	size_t esz = coll_dtype_size(dt);
	int64_t *sc = malloc(2 * p * sizeof(int64_t)), *rcn = sc + p, n = 0, nmax = 0;
	for (uint32_t j = 0; j < p; j++) {
		sc[j] = vi_count(pat, p, me, j, m);
		rcn[j] = vi_count(pat, p, j, me, m);
		n += sc[j];
	}
	for (uint32_t i = 0; i < p; i++) {
		int64_t ni = 0;
		for (uint32_t j = 0; j < p; j++)
			ni += vi_count(pat, p, i, j, m);
		nmax = ni > nmax ? ni : nmax;
	}
	int unequal = 0;
	for (uint32_t i = 0; i < p && !unequal; i++) {
		int64_t ni = 0;
		for (uint32_t j = 0; j < p; j++)
			ni += vi_count(pat, p, i, j, m);
		unequal = ni != nmax;
	}
	uint8_t *buf = malloc((size_t)n * esz + 1);
	for (uint32_t j = 0, o = 0; buf && j < p; o += (uint32_t)sc[j], j++)
		fill(buf + (size_t)o * esz, dt, COLL_SUM, me * 1000 + j, 0, (size_t)sc[j]);
	int r = buf ? coll_alltoallv_inplace(t, buf, sc, rcn, dt, algo) : -ENOMEM, rc = 0;
	if (!strcmp(algo, "bitonic") && unequal) {
		/* members' N differ: bitonic refuses, on every member */
		if (r != -ENOTSUP) {
			fail(c, "alltoallv in place/bitonic with unequal totals gave %d, not -ENOTSUP", r);
			rc = 1;
		}
	} else if (r) {
		fail(c, "alltoallv in place/%s pattern %d m %u %s on %u members: %s", algo, pat, m, coll_dtype_name(dt), p,
		     dma_strerror(r));
		rc = 1;
	} else {
		uint8_t *ref = malloc((size_t)(m + 1) * esz);
		size_t o = 0;
		for (uint32_t i = 0; ref && i < p && !rc; o += (size_t)rcn[i], i++) {
			fill(ref, dt, COLL_SUM, i * 1000 + me, 0, (size_t)rcn[i]);
			if (memcmp(ref, buf + o * esz, (size_t)rcn[i] * esz)) {
				fail(c, "alltoallv in place/%s pattern %d m %u %s on %u members: wrong data from %u", algo, pat,
				     m, coll_dtype_name(dt), p, i);
				rc = 1;
			}
		}
		free(ref);
		struct coll_v_stats st;
		/* O(P) memory: the bounce buffer and tables, whatever m */
		if (!coll_alltoallv_stats(t, &st) && st.extra_bytes > 4096 + 1024 + 512 * (uint64_t)p) {
			fail(c, "alltoallv in place/%s on %u members: %llu extra bytes", algo, p,
			     (unsigned long long)st.extra_bytes);
			rc = 1;
		}
	}
	free(buf);
	free(sc);
	return rc;
}

/* Bad alltoallv calls: one member's error reaches every member. */
static void bad_v(emu_core_t *c, coll_team_t *t)
{
	static uint8_t shared[2][64 * 8 * 64];
	uint32_t p = coll_team_size(t), me = coll_team_rank(t), k = coll_team_cores(t);
	if (p < 2 || p > 64)
		return;
	int64_t sc[64], sd[64], rcn[64], rd[64];
	for (uint32_t j = 0; j < p; j++) {
		sc[j] = rcn[j] = 2;
		sd[j] = rd[j] = 2 * j;
	}
	uint8_t *send = shared[0], *recv = shared[1];
	(void)k;
	/* member 1 sends 3 elements to member 0, which expects 2: -EPROTO everywhere */
	if (me == 1)
		sc[0] = 3, sd[0] = 2 * p;
	int r = coll_alltoallv(t, send, sc, sd, recv, rcn, rd, COLL_INT32, NULL);
	if (r != -EPROTO)
		fail(c, "alltoallv with counts that disagree gave %d, not -EPROTO", r);
	if (me == 1)
		sc[0] = 2, sd[0] = 0;
	/* member 0 passes a negative count: -EINVAL everywhere */
	if (me == 0)
		sc[1] = -1;
	r = coll_alltoallv(t, send, sc, sd, recv, rcn, rd, COLL_INT32, NULL);
	if (r != -EINVAL)
		fail(c, "alltoallv with a negative count (member 0) gave %d, not -EINVAL", r);
	if (me == 0)
		sc[1] = 2;
	/* the last member's receive ranges overlap: -EINVAL everywhere */
	if (me == p - 1)
		rd[1] = rd[0] + 1;
	r = coll_alltoallv(t, send, sc, sd, recv, rcn, rd, COLL_INT32, NULL);
	if (r != -EINVAL)
		fail(c, "alltoallv with overlapping receive ranges gave %d, not -EINVAL", r);
	if (me == p - 1)
		rd[1] = 2;
	/* send and receive ranges overlap */
	r = coll_alltoallv(t, send, sc, sd, send + 4, rcn, rd, COLL_INT32, NULL);
	if (r != -EINVAL)
		fail(c, "alltoallv with overlapping send and receive buffers gave %d, not -EINVAL", r);
	r = coll_alltoallv(t, send, sc, sd, recv, rcn, rd, COLL_INT32, "no-such-algorithm");
	if (r != -ENOENT)
		fail(c, "alltoallv with an unknown algorithm gave %d, not -ENOENT", r);
	/* in place: each mistake an error on every member */
	int32_t buf[128]; /* 2 p elements each way; this core's own */
	if (me == 1)
		sc[0] = 3, sc[1] = 1; /* its totals still match, member 0 expects 2 */
	r = coll_alltoallv_inplace(t, buf, sc, rcn, COLL_INT32, NULL);
	if (r != -EPROTO)
		fail(c, "alltoallv in place with counts that disagree gave %d, not -EPROTO", r);
	if (me == 1)
		sc[0] = sc[1] = 2;
	if (me == 0)
		sc[1] = -1;
	r = coll_alltoallv_inplace(t, buf, sc, rcn, COLL_INT32, NULL);
	if (r != -EINVAL)
		fail(c, "alltoallv in place with a negative count (member 0) gave %d, not -EINVAL", r);
	if (me == 0)
		sc[1] = 2;
	if (me == p - 1)
		sc[0] = 3; /* sends more than it receives */
	r = coll_alltoallv_inplace(t, buf, sc, rcn, COLL_INT32, "pairwise");
	if (r != -EINVAL)
		fail(c, "alltoallv in place with unequal totals (last member) gave %d, not -EINVAL", r);
	if (me == p - 1)
		sc[0] = 2;
	r = coll_alltoallv_inplace(t, buf, sc, rcn, COLL_INT32, "a1");
	if (r != -ENOTSUP)
		fail(c, "alltoallv in place with an out-of-place algorithm gave %d, not -ENOTSUP", r);
	r = coll_alltoallv(t, send, sc, sd, recv, rcn, rd, COLL_INT32, "pairwise");
	if (r != -ENOTSUP)
		fail(c, "alltoallv out of place with an in-place algorithm gave %d, not -ENOTSUP", r);
	/* and a good call after all that */
	for (uint32_t j = 0; j < 2 * p; j++)
		buf[j] = (int32_t)(me * 1000 + j);
	r = coll_alltoallv_inplace(t, buf, sc, rcn, COLL_INT32, NULL);
	for (uint32_t j = 0; !r && j < 2 * p; j++)
		if (buf[j] != (int32_t)((j / 2) * 1000 + 2 * me + j % 2)) {
			fail(c, "alltoallv in place after bad calls: element %u is %d", j, buf[j]);
			break;
		}
	if (r)
		fail(c, "alltoallv in place after bad calls: %s", dma_strerror(r));
}

static void run_v_all(emu_core_t *c, coll_team_t *t)
{
	size_t na;
	const struct coll_algorithm *al = coll_catalogue(COLL_ALLTOALLV, &na);
	for (size_t ai = 0; ai < na; ai++) {
		if (only && strcmp(only, al[ai].name))
			continue;
		if (al[ai].flags & COLL_F_INPLACE) {
			/* one core per member: node teams of several cores refuse */
			if (!coll_team_fits(t, &al[ai])) {
				int64_t z[256] = {0};
				if (coll_team_size(t) <= 256) {
					int r = coll_alltoallv_inplace(t, z, z, z, COLL_INT32, al[ai].name);
					if (r != -ENOTSUP)
						fail(c, "alltoallv in place/%s on a team it does not fit gave %d", al[ai].name, r);
				}
				continue;
			}
			for (int pat = 0; pat < 2; pat++)
				for (int ci = 0; ci < ncounts; ci++)
					if (coll_team_size(t) <= 64 || ci == 0)
						run_vi(c, t, al[ai].name, pat ? COLL_DOUBLE : COLL_INT32, pat, (uint32_t)counts[ci]);
			run_vi(c, t, al[ai].name, COLL_INT32, 1, 0); /* every message empty */
			continue;
		}
		/* 4- and 8-byte elements (the algorithms only see sizes); teams
		 * beyond 64 members once (the same code, and slow to exchange) */
		static const enum coll_dtype dts[] = {COLL_INT32, COLL_DOUBLE};
		for (int d = 0; d < 2; d++)
			for (int pat = 0; pat < 2; pat++)
				for (int ci = 0; ci < ncounts; ci++)
					if (coll_team_size(t) <= 64 || (d == 0 && pat == 0 && ci == 0))
						run_v(c, t, al[ai].name, dts[d], pat, (uint32_t)counts[ci]);
		run_v(c, t, al[ai].name, COLL_INT32, 0, 0); /* every message empty */
	}
	if (coll_team_cores(t) == 1)
		bad_v(c, t);
}

/* Every algorithm x dtype x op x count on one team. */
static void run_all(emu_core_t *c, coll_team_t *t)
{
	for (int k = 0; k < COLL_KIND_COUNT; k++) {
		size_t na;
		if (k == COLL_ALLTOALLV) {
			run_v_all(c, t);
			continue;
		}
		const struct coll_algorithm *al = coll_catalogue((enum coll_kind)k, &na);
		for (size_t ai = 0; ai < na; ai++)
			for (int dt = 0; dt < COLL_DTYPE_COUNT && (!only || !strcmp(only, al[ai].name)); dt++) {
				if (only_dtype >= 0 && dt != only_dtype)
					continue;
				for (int op = 0; op < COLL_OP_COUNT; op++) {
					if ((k == COLL_ALLGATHER || k == COLL_ALLTOALL) && op)
						continue; /* no operation */
					if (!coll_op_valid((enum coll_dtype)dt, (enum coll_op)op))
						continue;
					for (int ci = 0; ci < ncounts; ci++)
						run_one(c, t, &al[ai], (enum coll_dtype)dt, (enum coll_op)op, counts[ci], 0);
				}
			}
		/* an empty all-to-all, once per algorithm */
		for (size_t ai = 0; k == COLL_ALLTOALL && ai < na; ai++)
			if (!only || !strcmp(only, al[ai].name))
				run_one(c, t, &al[ai], COLL_INT32, COLL_SUM, 0, 0);
		/* in place (allreduce only), once per algorithm */
		for (size_t ai = 0; k == COLL_ALLREDUCE && ai < na; ai++)
			run_one(c, t, &al[ai], COLL_INT64, COLL_SUM, counts[ncounts - 1], 1);
	}
	mismatch(c, t);
}

static int core_main(emu_core_t *c, void *arg)
{
	(void)arg;
	coll_team_t *world, *nodes = NULL, *node_team = NULL;
	if (coll_team_world(c, &world))
		return 1;
	bad_calls(c, world);
	/* one core per node: core 0 of each node */
	uint32_t nn = emu_node_count(c), *m = malloc(nn * sizeof(uint32_t)), uniform = 1;
	for (uint32_t n = 0, g = 0; n < nn; g += emu_cores_of(c, n), n++) {
		m[n] = g;
		uniform &= emu_cores_of(c, n) == emu_cores_of(c, 0);
	}
	if (emu_core_index(c) == 0 && coll_team_create(c, m, nn, &nodes))
		return 1;
	free(m);
	run_all(c, world);
	if (nodes)
		run_all(c, nodes);
	/* one core per node, a different core on each node where they can */
	{
		coll_team_t *diag = NULL;
		uint32_t *dm = malloc(nn * sizeof(uint32_t)), mine = UINT32_MAX;
		for (uint32_t n = 0, g = 0; n < nn; g += emu_cores_of(c, n), n++) {
			dm[n] = g + n % emu_cores_of(c, n);
			if (dm[n] == emu_core_global(c))
				mine = n;
		}
		if (mine != UINT32_MAX && coll_team_create(c, dm, nn, &diag) == 0) {
			size_t na;
			for (int k = 0; k < COLL_ALLTOALLV; k++) {
				const struct coll_algorithm *al = coll_catalogue((enum coll_kind)k, &na);
				for (int ci = 0; ci < ncounts; ci++)
					run_one(c, diag, &al[0], COLL_INT64, COLL_SUM, counts[ci], 0); /* multicolor */
			}
			coll_team_free(diag);
		}
		free(dm);
	}
	/* a sub-team: the cores of even global rank (all-to-all only) */
	if (emu_core_total(c) >= 3) {
		coll_team_t *sub = NULL;
		uint32_t ns = (emu_core_total(c) + 1) / 2, *sm = malloc(ns * sizeof(uint32_t));
		for (uint32_t i = 0; i < ns; i++)
			sm[i] = 2 * i;
		if (emu_core_global(c) % 2 == 0 && coll_team_create(c, sm, ns, &sub) == 0) {
			size_t na;
			const struct coll_algorithm *al = coll_catalogue(COLL_ALLTOALL, &na);
			for (size_t ai = 0; ai < na; ai++)
				if (!only || !strcmp(only, al[ai].name))
					for (int ci = 0; ci < ncounts; ci++)
						run_one(c, sub, &al[ai], COLL_INT32, COLL_SUM, counts[ci], 0);
			coll_team_free(sub);
		}
		free(sm);
	}
	/* a node team: every core of each node works on the node's one vector */
	if (uniform && emu_cores_of(c, 0) > 1) {
		if (coll_team_nodes(c, 0, &node_team))
			return 1;
		run_all(c, node_team);
	}
	coll_team_free(world);
	coll_team_free(nodes);
	coll_team_free(node_team);
	if (emu_core_global(c) == 0)
		printf("coll-check: %u cores, %s\n", emu_core_total(c), failures ? "FAILED" : "all results match the reference");
	return __atomic_load_n(&failures, __ATOMIC_RELAXED) ? 1 : 0;
}

/* ---------------------------------------------------------------- --links */

static size_t links_n; /* elements of the paper's n */

/* Payload bytes on this node's outgoing links since the job began. */
static int read_links(emu_core_t *c, uint64_t *out, uint32_t *nl)
{
	const struct torus_shape *s = emu_shape(c);
	*nl = 0;
	for (uint32_t d = 0; d < s->ndims; d++)
		for (uint32_t dir = 0; torus_dim_has_links(s, d) && dir < 2; dir++) {
			struct torus_link_counters k;
			if (emu_link_read(c, d, dir, &k))
				return -1;
			out[(*nl)++] = k.payload_bytes;
		}
	return 0;
}

/* One multicolor call of each collective on the node team, link bytes
 * before and after: every link direction must carry (p-1)/p n / 2N bytes
 * of data (section 4 on a symmetric torus), the same on every link. The
 * address messages are measured by a call with count 0 and subtracted. */
static int links_main(emu_core_t *c, void *arg)
{
	(void)arg;
	coll_team_t *t;
	if (coll_team_nodes(c, 0, &t))
		return 1;
	uint32_t p = coll_team_size(t), k = coll_team_cores(t), N = 0, nl;
	const struct torus_shape *sh = emu_shape(c);
	for (uint32_t d = 0; d < sh->ndims; d++)
		N += (uint32_t)torus_dim_has_links(sh, d);
	int lead = emu_core_index(c) == 0;
	size_t n = links_n;
	static double *send, *recv;
	if (lead) {
		send = calloc(n, sizeof(double));
		recv = calloc(n, sizeof(double));
	}
	dma_barrier_node(c, k, 0, NULL);
	/* the bucket collectives of section 4 (not the all-to-all) */
	for (int kind = 0; kind <= COLL_ALLREDUCE; kind++) {
		uint64_t l0[12], l1[12], l2[12];
		size_t count = kind == COLL_ALLREDUCE ? n : n / p;
		int rc = 0;
		for (int pass = 0; pass < 2 && !rc; pass++) {
			size_t cnt = pass ? count : 0;
			if (lead)
				read_links(c, pass ? l1 : l0, &nl);
			dma_barrier(c);
			if (kind == COLL_REDUCE_SCATTER)
				rc = coll_reduce_scatter(t, send, recv, cnt, COLL_DOUBLE, COLL_SUM, "multicolor");
			else if (kind == COLL_ALLGATHER)
				rc = coll_allgather(t, send, recv, cnt, COLL_DOUBLE, "multicolor");
			else
				rc = coll_allreduce(t, send, recv, cnt, COLL_DOUBLE, COLL_SUM, "multicolor");
			dma_barrier(c); /* every deposit of the call is in */
		}
		if (rc) {
			fail(c, "%s: %s", coll_kind_name((enum coll_kind)kind), dma_strerror(rc));
			continue;
		}
		if (!lead)
			continue;
		read_links(c, l2, &nl);
		/* (p-1)/p * n / 2N bytes per link direction, twice for allreduce */
		double want = (double)(p - 1) / p * (double)n * sizeof(double) / (2.0 * N);
		if (kind == COLL_ALLREDUCE)
			want *= 2;
		for (uint32_t i = 0; i < nl; i++) {
			uint64_t data = (l2[i] - l1[i]) - (l1[i] - l0[i]);
			if ((double)data != want)
				fail(c, "%s: link %u of node %u carried %llu data bytes, section 4 says %.0f",
				     coll_kind_name((enum coll_kind)kind), i, emu_node_rank(c), (unsigned long long)data,
				     want);
		}
		if (emu_node_rank(c) == 0)
			printf("links: %s: every link direction carried %.0f data bytes\n",
			       coll_kind_name((enum coll_kind)kind), want);
	}
	dma_barrier(c);
	if (lead) {
		free(send);
		free(recv);
	}
	coll_team_free(t);
	return __atomic_load_n(&failures, __ATOMIC_RELAXED) ? 1 : 0;
}

/*
 * --inplace-sweep M: the in-place algorithms on teams of the first P nodes
 * (core 0 of each), for every P from 2 to the node count, both patterns
 * with largest message M; the others wait at the barrier.
 */
static int sweep_main(emu_core_t *c, void *arg)
{
	uint32_t m = *(const uint32_t *)arg, nn = emu_node_count(c), *mem = malloc(nn * sizeof(uint32_t));
	for (uint32_t n = 0, g = 0; n < nn; g += emu_cores_of(c, n), n++)
		mem[n] = g;
	int in = emu_core_index(c) == 0;
	size_t na;
	const struct coll_algorithm *al = coll_catalogue(COLL_ALLTOALLV, &na);
	for (uint32_t p = 2; p <= nn; p++) {
		coll_team_t *t = NULL;
		if (in && emu_node_rank(c) < p) {
			if (coll_team_create(c, mem, p, &t)) {
				fail(c, "team of %u nodes", p);
				break;
			}
			for (size_t ai = 0; ai < na; ai++)
				if (al[ai].flags & COLL_F_INPLACE)
					for (int pat = 0; pat < 2; pat++)
						run_vi(c, t, al[ai].name, COLL_INT32, pat, m);
			coll_team_free(t);
		}
		dma_barrier(c);
	}
	free(mem);
	if (emu_node_rank(c) == 0 && in && !__atomic_load_n(&failures, __ATOMIC_RELAXED))
		printf("coll-check: in place on every team of 2 to %u nodes: all results match\n", nn);
	return __atomic_load_n(&failures, __ATOMIC_RELAXED) ? 1 : 0;
}

/*
 * --repeat R COUNT: multicolor keeps a call's set-up for the next identical
 * call (coll/common/multicolor.c). R rounds of the same calls, each with
 * new inputs (a stale result shows), into buffers that come and go (the
 * result region follows them), with an in-place call, another algorithm
 * and another count now and then in between (each drops the kept set-up),
 * on the whole job's team and on the node team; with one core per node,
 * also six teams in turn, more than a core's counters could keep. Now and
 * then the first core alone drops its set-up, as a call that failed on it
 * midway would leave it: the next call must set up afresh everywhere, not
 * hang.
 */
static uint32_t repeat_rounds;
static const struct coll_algorithm *find_algo(enum coll_kind k, const char *name)
{
	size_t na;
	const struct coll_algorithm *al = coll_catalogue(k, &na);
	for (size_t i = 0; i < na; i++)
		if (!strcmp(al[i].name, name))
			return &al[i];
	return NULL;
}
static void repeat_on(emu_core_t *c, coll_team_t *t)
{
	const struct coll_algorithm *mc[3] = {find_algo(COLL_ALLREDUCE, "multicolor"),
					      find_algo(COLL_REDUCE_SCATTER, "multicolor"),
					      find_algo(COLL_ALLGATHER, "multicolor")},
				    *ring = find_algo(COLL_ALLREDUCE, "ring");
	size_t n = counts[0];
	for (int k = 0; k < 3; k++) {
		if (!mc[k])
			continue;
		enum coll_dtype dt = k == 1 ? COLL_DOUBLE : COLL_INT64;
		for (uint32_t r = 0; r < repeat_rounds; r++) {
			salt = r * 1009;
			run_one(c, t, mc[k], dt, COLL_SUM, n, 0);
			if (r % 5 == 1 && k == 0)
				run_one(c, t, mc[k], dt, COLL_SUM, n, 1); /* in place */
			if (r % 5 == 2 && ring)
				run_one(c, t, ring, COLL_INT64, COLL_SUM, n, 0);
			if (r % 5 == 3)
				run_one(c, t, mc[k], dt, COLL_SUM, n + 1, 0);
			if (r % 5 == 4 && emu_core_global(c) == 0)
				coll_multicolor_release(t);
		}
	}
	salt = 0;
}
static int repeat_main(emu_core_t *c, void *arg)
{
	(void)arg;
	coll_team_t *world = NULL, *node_team = NULL;
	const struct coll_algorithm *mc = find_algo(COLL_ALLREDUCE, "multicolor");
	if (coll_team_world(c, &world))
		return 1;
	repeat_on(c, world);
	uint32_t uniform = 1;
	for (uint32_t nd = 0; nd < emu_node_count(c); nd++)
		uniform &= emu_cores_of(c, nd) == emu_cores_of(c, 0);
	if (uniform && emu_cores_of(c, 0) > 1) {
		if (coll_team_nodes(c, 0, &node_team))
			return 1;
		repeat_on(c, node_team);
	}
	if (uniform && emu_cores_of(c, 0) == 1 && mc) {
		/* six teams in turn, each keeping its set-up while there is room:
		 * more than a core's counters if all kept (with every color) */
		coll_team_t *many[6] = {NULL};
		for (int i = 0; i < 6; i++)
			if (coll_team_world(c, &many[i]))
				return 1;
		for (uint32_t r = 0; r < repeat_rounds; r++) {
			salt = r * 7;
			for (int i = 0; i < 6; i++)
				run_one(c, many[i], mc, COLL_INT64, COLL_SUM, counts[0], 0);
		}
		salt = 0;
		for (int i = 0; i < 6; i++)
			coll_team_free(many[i]);
	}
	coll_team_free(world);
	coll_team_free(node_team);
	if (emu_core_global(c) == 0)
		printf("coll-check: %u rounds of repeated calls on %u cores, %s\n", repeat_rounds, emu_core_total(c),
		       failures ? "FAILED" : "all results match the reference");
	return __atomic_load_n(&failures, __ATOMIC_RELAXED) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--repeat")) {
		repeat_rounds = (uint32_t)strtoul(argv[2], NULL, 10);
		counts[0] = strtoull(argv[3], NULL, 10);
		ncounts = 1;
		return emu_job_main(argc, argv, repeat_main, NULL);
	}
	if (argc == 3 && !strcmp(argv[1], "--inplace-sweep")) {
		static uint32_t m;
		m = (uint32_t)strtoul(argv[2], NULL, 10);
		return emu_job_main(argc, argv, sweep_main, &m);
	}
	if (argc == 3 && !strcmp(argv[1], "--links")) {
		links_n = strtoull(argv[2], NULL, 10);
		return emu_job_main(argc, argv, links_main, NULL);
	}
	for (int i = 1; i < argc && ncounts < 8; i++) {
		if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
			enum coll_dtype d;
			if (coll_dtype_parse(argv[++i], &d))
				return 2;
			only_dtype = (int)d;
		}
		else
			counts[ncounts++] = strtoull(argv[i], NULL, 10);
	}
	if (!ncounts) {
		printf("usage: torusrun ... -- coll-check COUNT...\n");
		return 2;
	}
	return emu_job_main(argc, argv, core_main, NULL);
}
