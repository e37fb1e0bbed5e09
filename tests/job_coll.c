/*
 * coll-check: every algorithm of the catalogue x collective x datatype x
 * operation x count, on the whole job's team (and a team of one core per
 * node), checked against a sequential reference computed from every
 * member's input. Inputs are small integers, so float sums are exact in any
 * order. Also checks the bad calls a member can see locally.
 *
 *   torusrun --torus 3x3x2 -- coll-check 1 7 1000
 */
#include "torus/coll.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t counts[8];
static int ncounts;
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

/* Member m's element i, as a small integer (1..3 for products). */
static int64_t value(uint32_t m, size_t i, enum coll_op op)
{
	uint64_t h = (m + 1) * 2654435761u ^ (i + 7) * 40503u;
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

static int run_one(emu_core_t *c, coll_team_t *t, enum coll_kind kind, const char *algo, enum coll_dtype dt,
		   enum coll_op op, size_t count)
{
	uint32_t p = coll_team_size(t), me = coll_team_rank(t);
	size_t esz = coll_dtype_size(dt);
	size_t sn = kind == COLL_REDUCE_SCATTER ? count * p : count;
	size_t rn = kind == COLL_ALLGATHER ? count * p : count;
	uint8_t *send = malloc(sn * esz + 1), *recv = malloc(rn * esz + 1), *ref = malloc(rn * esz + 1),
		*tmp = malloc(rn * esz + 1);
	int rc = 1;
	if (!send || !recv || !ref || !tmp)
		goto out;
	/* reduce-scatter: member m's input is elements [0, p*count); allreduce:
	 * [0, count); allgather: member m contributes its own count elements */
	fill(send, dt, op, me, 0, sn);
	memset(recv, 0xA5, rn * esz);
	if (kind == COLL_REDUCE_SCATTER)
		rc = coll_reduce_scatter(t, send, recv, count, dt, op, algo);
	else if (kind == COLL_ALLGATHER)
		rc = coll_allgather(t, send, recv, count, dt, algo);
	else
		rc = coll_allreduce(t, send, recv, count, dt, op, algo);
	if (rc) {
		fail(c, "%s/%s %s %s count %zu: %s", coll_kind_name(kind), algo, coll_dtype_name(dt), coll_op_name(op),
		     count, dma_strerror(rc));
		goto out;
	}
	/* the sequential reference */
	if (kind == COLL_ALLGATHER) {
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
		fail(c, "%s/%s %s %s count %zu on %u members: wrong result (first bad byte %zu)", coll_kind_name(kind),
		     algo, coll_dtype_name(dt), coll_op_name(op), count, p, bad);
		rc = 1;
	}
out:
	free(send);
	free(recv);
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

static int core_main(emu_core_t *c, void *arg)
{
	(void)arg;
	coll_team_t *world, *nodes = NULL;
	if (coll_team_world(c, &world))
		return 1;
	bad_calls(c, world);
	/* one core per node: core 0 of each node */
	uint32_t nn = emu_node_count(c), *m = malloc(nn * sizeof(uint32_t)), node, core;
	for (uint32_t n = 0, g = 0; n < nn; g += emu_cores_of(c, n), n++)
		m[n] = g;
	emu_core_locate(c, emu_core_global(c), &node, &core);
	if (core == 0 && coll_team_create(c, m, nn, &nodes))
		return 1;
	free(m);
	for (int k = 0; k < COLL_KIND_COUNT; k++) {
		size_t na;
		const struct coll_algorithm *al = coll_catalogue((enum coll_kind)k, &na);
		for (size_t ai = 0; ai < na; ai++)
			for (int dt = 0; dt < COLL_DTYPE_COUNT; dt++)
				for (int op = 0; op < COLL_OP_COUNT; op++) {
					if (k == COLL_ALLGATHER && op)
						continue; /* no operation */
					if (!coll_op_valid((enum coll_dtype)dt, (enum coll_op)op))
						continue;
					for (int ci = 0; ci < ncounts; ci++) {
						run_one(c, world, (enum coll_kind)k, al[ai].name, (enum coll_dtype)dt,
							(enum coll_op)op, counts[ci]);
						if (nodes)
							run_one(c, nodes, (enum coll_kind)k, al[ai].name, (enum coll_dtype)dt,
								(enum coll_op)op, counts[ci]);
					}
				}
	}
	coll_team_free(world);
	coll_team_free(nodes);
	if (emu_core_global(c) == 0)
		printf("coll-check: %u cores, %s\n", emu_core_total(c), failures ? "FAILED" : "all results match the reference");
	return __atomic_load_n(&failures, __ATOMIC_RELAXED) ? 1 : 0;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc && ncounts < 8; i++)
		counts[ncounts++] = strtoull(argv[i], NULL, 10);
	if (!ncounts) {
		printf("usage: torusrun ... -- coll-check COUNT...\n");
		return 2;
	}
	return emu_job_main(argc, argv, core_main, NULL);
}
