/*
 * The catalogue: one typed table per collective. Selection, the command
 * line (torus-bench --algo) and the tests all read it.
 */
#include "coll_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int coll_reduce_scatter_ring(const struct coll_args *a);
int coll_allgather_ring(const struct coll_args *a);
int coll_allreduce_ring(const struct coll_args *a);

static const struct coll_algorithm reduce_scatter[] = {
	{"ring", COLL_REDUCE_SCATTER, coll_reduce_scatter_ring, "team size <= dma_counters - 1 (a counter per step, two more per call)",
	 "1-D bucket over the team in rank order (003_b0aac8c3d10c7733.txt section 2.2, eq. 1)"},
};
static const struct coll_algorithm allgather[] = {
	{"ring", COLL_ALLGATHER, coll_allgather_ring, "team size <= dma_counters - 1 (a counter per step, two more per call)",
	 "1-D bucket over the team in rank order (section 2.2, reverse of reduce-scatter)"},
};
static const struct coll_algorithm allreduce[] = {
	{"ring", COLL_ALLREDUCE, coll_allreduce_ring, "team size <= dma_counters - 1 (a counter per step, two more per call)",
	 "ring reduce-scatter then ring allgather (section 2.2); any count"},
};

static const struct {
	const char *name;
	const struct coll_algorithm *algos;
	size_t n;
} kinds[COLL_KIND_COUNT] = {
	{"reduce_scatter", reduce_scatter, sizeof(reduce_scatter) / sizeof(reduce_scatter[0])},
	{"allgather", allgather, sizeof(allgather) / sizeof(allgather[0])},
	{"allreduce", allreduce, sizeof(allreduce) / sizeof(allreduce[0])},
};

const struct coll_algorithm *coll_catalogue(enum coll_kind kind, size_t *n)
{
	if ((unsigned)kind >= COLL_KIND_COUNT) {
		if (n)
			*n = 0;
		return NULL;
	}
	if (n)
		*n = kinds[kind].n;
	return kinds[kind].algos;
}

const char *coll_kind_name(enum coll_kind kind)
{
	return (unsigned)kind < COLL_KIND_COUNT ? kinds[kind].name : "?";
}

/* Do [a, a+an) and [b, b+bn) overlap? */
static int overlap(const void *a, size_t an, const void *b, size_t bn)
{
	const char *x = a, *y = b;
	return an && bn && x < y + bn && y < x + an;
}

static int run(enum coll_kind kind, const char *algo, const struct coll_args *a, size_t send_bytes,
	       size_t recv_bytes, int needs_op)
{
	if (!a->team || (send_bytes && !a->send) || (recv_bytes && !a->recv) || !coll_dtype_size(a->dtype))
		return -EINVAL;
	if (needs_op && !coll_op_valid(a->dtype, a->op))
		return -EINVAL;
	/* in place only where MPI allows it: allreduce with send == recv */
	if (!(kind == COLL_ALLREDUCE && a->send == a->recv) && overlap(a->send, send_bytes, a->recv, recv_bytes))
		return -EINVAL;
	size_t n;
	const struct coll_algorithm *list = coll_catalogue(kind, &n);
	const char *want = algo;
	if (!want) {
		char env[64];
		snprintf(env, sizeof(env), "TORUS_COLL_%s", kinds[kind].name);
		for (char *p = env; *p; p++)
			*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
		want = getenv(env);
	}
	for (size_t i = 0; i < n; i++)
		if (!want || !strcmp(want, list[i].name))
			return list[i].run(a);
	return -ENOENT; /* no such algorithm */
}

int coll_reduce_scatter(coll_team_t *t, const void *send, void *recv, size_t count, enum coll_dtype dtype,
			enum coll_op op, const char *algo)
{
	struct coll_args a = {t, send, recv, count, dtype, op};
	size_t esz = coll_dtype_size(dtype);
	return run(COLL_REDUCE_SCATTER, algo, &a, t ? count * t->size * esz : 0, count * esz, 1);
}

int coll_allgather(coll_team_t *t, const void *send, void *recv, size_t count, enum coll_dtype dtype,
		   const char *algo)
{
	struct coll_args a = {t, send, recv, count, dtype, COLL_SUM};
	size_t esz = coll_dtype_size(dtype);
	return run(COLL_ALLGATHER, algo, &a, count * esz, t ? count * t->size * esz : 0, 0);
}

int coll_allreduce(coll_team_t *t, const void *send, void *recv, size_t count, enum coll_dtype dtype,
		   enum coll_op op, const char *algo)
{
	struct coll_args a = {t, send, recv, count, dtype, op};
	size_t esz = coll_dtype_size(dtype);
	return run(COLL_ALLREDUCE, algo, &a, count * esz, count * esz, 1);
}
