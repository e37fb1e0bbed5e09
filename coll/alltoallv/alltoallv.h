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

int coll_alltoallv_a1(const struct coll_args *a);
int coll_alltoallv_a2(const struct coll_args *a);

#endif
