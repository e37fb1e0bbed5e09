/*
 * coll_alltoallv (MPI_Alltoallv): the checks every member can make by
 * itself, the dispatch, and the statistics a call leaves behind
 * (coll_alltoallv_stats, for torus-bench alltoallv).
 */
#include "alltoallv.h"

#include "../common/a2a.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Sizes are kept below 2^62 bytes, so sums of two never overflow. */
#define V_MAX_BYTES (1ull << 62)

struct range {
	uint64_t lo, hi;
};

static int by_lo(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The non-empty ranges [displ, displ + count) * esz of a count list, sorted;
 * -EINVAL for a negative entry or a size past V_MAX_BYTES. */
static int ranges_of(const int64_t *counts, const int64_t *displs, uint32_t p, size_t esz, struct range *out,
		     uint32_t *n)
{
	*n = 0;
	for (uint32_t j = 0; j < p; j++) {
		if (counts[j] < 0 || displs[j] < 0)
			return -EINVAL;
		uint64_t c = (uint64_t)counts[j], d = (uint64_t)displs[j];
		if (c > V_MAX_BYTES / esz || d > V_MAX_BYTES / esz)
			return -EINVAL;
		if (c)
			out[(*n)++] = (struct range){d * esz, (d + c) * esz};
	}
	if (*n > 1)
		qsort(out, *n, sizeof(*out), by_lo);
	return 0;
}

int coll_v_check(const struct coll_args *a, uint32_t p)
{
	size_t esz = coll_dtype_size(a->dtype);
	if (!esz || !a->scounts || !a->sdispls || !a->rcounts || !a->rdispls)
		return -EINVAL;
	struct range *s = malloc((size_t)p * sizeof(*s)), *r = malloc((size_t)p * sizeof(*r));
	uint32_t ns = 0, nr = 0;
	int rc = s && r ? 0 : -ENOMEM;
	if (!rc)
		rc = ranges_of(a->scounts, a->sdispls, p, esz, s, &ns);
	if (!rc)
		rc = ranges_of(a->rcounts, a->rdispls, p, esz, r, &nr);
	if (!rc && ((ns && !a->send) || (nr && !a->recv)))
		rc = -EINVAL;
	/* two sources may not land on the same bytes */
	for (uint32_t i = 1; !rc && i < nr; i++)
		if (r[i].lo < r[i - 1].hi)
			rc = -EINVAL;
	/* nor may anything land on what is being sent (sorted: a merge) */
	for (uint32_t i = 0, k = 0; !rc && i < ns && k < nr;) {
		const uint8_t *sb = (const uint8_t *)a->send, *rb = (const uint8_t *)a->recv;
		uintptr_t slo = (uintptr_t)(sb + s[i].lo), shi = (uintptr_t)(sb + s[i].hi);
		uintptr_t rlo = (uintptr_t)(rb + r[k].lo), rhi = (uintptr_t)(rb + r[k].hi);
		if (slo < rhi && rlo < shi)
			rc = -EINVAL;
		else if (shi <= rhi)
			i++;
		else
			k++;
	}
	free(s);
	free(r);
	return rc;
}

uint64_t coll_v_extent(const int64_t *counts, const int64_t *displs, uint32_t p, size_t esz)
{
	uint64_t hi = 0;
	for (uint32_t j = 0; j < p; j++)
		if (counts[j] > 0 && (uint64_t)(displs[j] + counts[j]) * esz > hi)
			hi = (uint64_t)(displs[j] + counts[j]) * esz;
	return hi;
}

void coll_v_account(coll_team_t *t, int64_t bytes)
{
	t->vnow += bytes;
	if (bytes > 0 && (uint64_t)t->vnow > t->vstats.extra_bytes)
		t->vstats.extra_bytes = (uint64_t)t->vnow;
}

void *coll_v_alloc(coll_team_t *t, size_t bytes)
{
	void *x = malloc(bytes ? bytes : 1);
	if (x)
		coll_v_account(t, (int64_t)bytes);
	return x;
}

void coll_v_free(coll_team_t *t, void *x, size_t bytes)
{
	if (x) {
		free(x);
		coll_v_account(t, -(int64_t)bytes);
	}
}

void coll_v_sent(coll_team_t *t, uint32_t stage, uint64_t bytes)
{
	struct coll_v_stats *st = &t->vstats;
	if (stage >= COLL_V_MAX_STAGES)
		return;
	if (stage + 1 > st->stages)
		st->stages = stage + 1;
	st->startups[stage]++;
	if (bytes > st->longest[stage])
		st->longest[stage] = bytes;
}

int coll_alltoallv_stats(const coll_team_t *t, struct coll_v_stats *out)
{
	if (!t || !out)
		return -EINVAL;
	*out = t->vstats;
	return 0;
}

void coll_v_note_sent(coll_team_t *t, uint32_t stage, uint64_t bytes) { coll_v_sent(t, stage, bytes); }

void coll_v_note_scratch(coll_team_t *t, uint64_t bytes)
{
	/* held for the whole call: counted in, then out */
	coll_v_account(t, (int64_t)bytes);
	coll_v_account(t, -(int64_t)bytes);
}

int coll_v_counts(coll_team_t *t, const struct coll_args *a, const int64_t **out)
{
	uint32_t p = t->size, me = t->rank;
	size_t mbytes = (size_t)p * p * sizeof(int64_t);
	int64_t *M = malloc(mbytes);
	*out = NULL;
	int rc = coll_agree(t, M ? 0 : -ENOMEM);
	if (!rc) {
		/* a collective inside a collective: it sets the team's call
		 * state (and statistics), which this call goes on with */
		const uint32_t *part = t->part;
		uint32_t npart = t->npart, tag = t->tag_coll;
		rc = coll_allgather(t, a->scounts, M, p, COLL_INT64, NULL);
		t->part = part;
		t->npart = npart;
		t->tag_coll = tag;
	}
	memset(&t->vstats, 0, sizeof(t->vstats));
	t->vnow = 0;
	if (!M)
		return rc;
	coll_v_account(t, (int64_t)mbytes);
	*out = M;
	/* what every member will send us is what we expect */
	for (uint32_t j = 0; !rc && j < p; j++)
		if (M[(size_t)j * p + me] != a->rcounts[j])
			rc = -EPROTO;
	return rc;
}

void coll_v_counts_free(coll_team_t *t, const int64_t *M)
{
	if (M) {
		free((void *)(uintptr_t)M);
		coll_v_account(t, -(int64_t)((size_t)t->size * t->size * sizeof(int64_t)));
	}
}

int coll_v_counts_fit(const coll_team_t *t)
{
	size_t n;
	const struct coll_algorithm *al = coll_catalogue(COLL_ALLGATHER, &n);
	for (size_t i = 0; i < n; i++)
		if (coll_team_fits(t, &al[i]))
			return 1;
	return 0;
}

int coll_v_build_mine(struct coll_plan *pl, const struct coll_args *a, const int64_t *M,
		      int (*build)(struct coll_plan *, size_t, const int64_t *, const int64_t *, const int64_t *))
{
	coll_team_t *t = a->team;
	uint32_t p = t->size, me = t->rank;
	size_t bytes = (size_t)p * p * sizeof(int64_t);
	/* the displacements of every member, of which this one knows its own:
	 * the plan's parts for the others are not kept */
	int64_t *SD = coll_v_alloc(t, bytes), *RD = coll_v_alloc(t, bytes);
	int rc = SD && RD ? 0 : -ENOMEM;
	if (!rc) {
		memset(SD, 0, bytes);
		memset(RD, 0, bytes);
		memcpy(SD + (size_t)me * p, a->sdispls, p * sizeof(int64_t));
		memcpy(RD + (size_t)me * p, a->rdispls, p * sizeof(int64_t));
		rc = build(pl, coll_dtype_size(a->dtype), M, SD, RD);
	}
	coll_v_free(t, SD, SD ? bytes : 0);
	coll_v_free(t, RD, RD ? bytes : 0);
	return rc;
}

int coll_v_run(const struct coll_args *a, const struct coll_v_algo *al)
{
	coll_team_t *t = a->team;
	uint32_t p = t->size, me = t->rank;
	size_t esz = coll_dtype_size(a->dtype);
	const int64_t *M = NULL;
	struct coll_plan *pl = NULL;
	int rc = coll_v_counts(t, a, &M);
	t->vstats.stages = al->stages;
	if (!rc && !(pl = a2a_plan_new(p, t->node, emu_shape(t->core), esz, me)))
		rc = -ENOMEM;
	if (!rc) {
		pl->algo = al->tag;
		pl->recv_bytes = coll_v_extent(a->rcounts, a->rdispls, p, esz);
		pl->vstats = 1;
		rc = coll_v_build_mine(pl, a, M, al->build);
		if (!rc)
			rc = a2a_plan_done(pl);
	}
	rc = coll_agree(t, rc);
	if (!rc)
		rc = a2a_execute(t, pl, a->send, a->recv, a->check);
	/* the messages to itself count as start-ups too (002, Table 3) */
	uint64_t self[COLL_V_MAX_STAGES] = {0};
	if (!rc)
		al->self_bytes(M, p, me, self);
	for (uint32_t st = 0; !rc && st < al->stages; st++)
		if (self[st])
			coll_v_sent(t, st, self[st] * esz);
	coll_plan_free(pl);
	coll_v_counts_free(t, M);
	return rc;
}

int coll_v_plan(const struct coll_v_algo *al, uint32_t p, const uint32_t *node, const struct torus_shape *s,
		size_t esz, const int64_t *M, const int64_t *SD, const int64_t *RD, struct coll_plan **out)
{
	struct coll_plan *pl = a2a_plan_new(p, node, s, esz, A2A_ALL);
	*out = NULL;
	if (!pl)
		return -ENOMEM;
	pl->algo = al->tag;
	int rc = al->build(pl, esz, M, SD, RD);
	if (!rc)
		rc = a2a_plan_done(pl);
	if (rc)
		coll_plan_free(pl);
	else
		*out = pl;
	return rc;
}
