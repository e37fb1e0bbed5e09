/* Internals of coll_alltoallv (coll/alltoallv/). */
#ifndef COLL_ALLTOALLV_H
#define COLL_ALLTOALLV_H

#include "../coll_internal.h"

/* The member's own checks (-EINVAL, -ENOMEM): see coll_alltoallv. */
int coll_v_check(const struct coll_args *a, uint32_t p);
/* The bytes a count list reaches: max over j of (displ + count) * esz. */
uint64_t coll_v_extent(const int64_t *counts, const int64_t *displs, uint32_t p, size_t esz);
/* Memory the algorithm allocates, counted into extra_bytes (measured). */
void *coll_v_alloc(coll_team_t *t, size_t bytes);
void coll_v_free(coll_team_t *t, void *x, size_t bytes);
void coll_v_account(coll_team_t *t, int64_t bytes);
/* A message of `bytes` sent in stage `stage` (start-ups, longest). */
void coll_v_sent(coll_team_t *t, uint32_t stage, uint64_t bytes);

/* Every member's counts (M[i * p + j]: member i's scounts[j]), by an
 * allgather of the rows (a put layer needs sizes before data; the team's
 * statistics start over); -EPROTO if what a member will send us is not
 * what we expect. Free with coll_v_counts_free (M may be set on errors). */
int coll_v_counts(coll_team_t *t, const struct coll_args *a, const int64_t **M);
void coll_v_counts_free(coll_team_t *t, const int64_t *M);
/* Does an allgather algorithm fit the team (coll_v_counts needs one)? */
int coll_v_counts_fit(const coll_team_t *t);

struct coll_plan;
/* Build this member's part of a plan (SD, RD: every member's displacements,
 * SD[i * p + j] member i's sdispls[j], RD[j * p + i] member j's rdispls[i];
 * here only its own are known, and only its own part is kept). */
int coll_v_build_mine(struct coll_plan *pl, const struct coll_args *a, const int64_t *M,
		      int (*build)(struct coll_plan *, size_t, const int64_t *, const int64_t *, const int64_t *));
/* A two-stage algorithm built as a plan from the allgathered counts. */
struct a2a_algo;
struct coll_v_algo {
	const struct a2a_algo *tag; /* its name and trace tag */
	int (*build)(struct coll_plan *pl, size_t esz, const int64_t *M, const int64_t *SD, const int64_t *RD);
	/* elements of member me's message to itself in each stage: n[stages] */
	void (*self_bytes)(const int64_t *M, uint32_t p, uint32_t me, uint64_t *n);
	uint32_t stages;
};
extern const struct coll_v_algo coll_v_a2, coll_v_a3, coll_v_a4, coll_v_a4b, coll_v_a4d;
/* Run it: the counts, this member's plan, the executor, the statistics. */
int coll_v_run(const struct coll_args *a, const struct coll_v_algo *al);
/* Its whole plan for every member, from every member's counts and
 * displacements (the tests execute it on bytes). */
int coll_v_plan(const struct coll_v_algo *al, uint32_t p, const uint32_t *node, const struct torus_shape *s,
		size_t esz, const int64_t *M, const int64_t *SD, const int64_t *RD, struct coll_plan **out);

int coll_a3_fits(const coll_team_t *t);
int coll_a4_fits(const coll_team_t *t);
int coll_alltoallv_a4(const struct coll_args *a);
int coll_alltoallv_a4_blocking(const struct coll_args *a);
int coll_alltoallv_a4_dual(const struct coll_args *a);
int coll_alltoallv_a1(const struct coll_args *a);
int coll_alltoallv_a3(const struct coll_args *a);
int coll_alltoallv_a2(const struct coll_args *a);
/* 004's in-place algorithms (alltoallv_inplace.c) */
int coll_alltoallv_bitonic(const struct coll_args *a);
int coll_alltoallv_pairwise(const struct coll_args *a);
int coll_alltoallv_inplace_auto(const struct coll_args *a);
int coll_inplace_fits(const coll_team_t *t);
/* The member's own checks of an in-place call (-EINVAL). */
int coll_vi_check(const struct coll_args *a, uint32_t p);
/* auto's choice: 1 pairwise, 0 bitonic (n_max: a member's N, m_max: the
 * largest message, n_equal: every member's N alike). */
int coll_alltoallv_inplace_pick(uint32_t p, double n_max, int n_equal, double m_max);

#endif
