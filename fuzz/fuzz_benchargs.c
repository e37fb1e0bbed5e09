/*
 * torus-bench's command line (parse_args in apps/bench/bench_opts.c,
 * compiled into this target). The input is the arguments,
 * separated by NUL bytes (at most 16 of at most 63 bytes each).
 *
 * Invariants (abort() when one breaks):
 *  - parsing gives 1 (--help), 0 or -1;
 *  - on -1 the error is one non-empty line;
 *  - on 0: a known collective, dtype, op and pattern; 1 to 64 sizes from 1
 *    byte to 1 TiB, each twice the one before; an --algo that the
 *    collective's catalogue has; --members cores only for alltoall and
 *    alltoallv, --explain only for alltoall; 1 .. 1000 timed calls.
 */
#include "fuzz_bench.h"

#define CHECK(x) BENCH_CHECK("fuzz-benchargs", x)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bench_fresh();
	struct fuzz_args a;
	fuzz_args_split(&a, "torus-bench", data, size);
	int rc = parse_args(a.argc, a.argv);
	CHECK(rc == 1 || rc == 0 || rc == -1);
	if (rc == -1) {
		CHECK(opt.error[0] && !strchr(opt.error, '\n'));
		return 0;
	}
	if (rc == 1)
		return 0;
	CHECK((unsigned)opt.kind < COLL_KIND_COUNT && coll_dtype_size(opt.dtype) && (unsigned)opt.op < COLL_OP_COUNT);
	CHECK(opt.pattern >= 0 && opt.pattern < V_NPATTERNS);
	CHECK(opt.nsizes >= 1 && opt.nsizes <= MAX_SIZES);
	for (unsigned k = 0; k < opt.nsizes; k++) {
		CHECK(opt.sizes[k] >= 1 && opt.sizes[k] <= MAX_BYTES);
		CHECK(k == 0 || opt.sizes[k] == 2 * opt.sizes[k - 1]);
	}
	if (opt.algo) {
		size_t n, found = 0;
		const struct coll_algorithm *al = coll_catalogue(opt.kind, &n);
		for (size_t i = 0; i < n; i++)
			found += !strcmp(al[i].name, opt.algo);
		CHECK(found == 1);
	}
	CHECK(!opt.members_cores || opt.kind == COLL_ALLTOALL || opt.kind == COLL_ALLTOALLV);
	CHECK(!opt.explain || opt.kind == COLL_ALLTOALL);
	CHECK(opt.reps >= 1 && opt.reps <= MAX_REPS && opt.warmup <= MAX_REPS);
	return 0;
}
