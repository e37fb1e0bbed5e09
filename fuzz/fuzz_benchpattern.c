/*
 * torus-bench alltoallv's sizes, patterns and seeds: the pattern generator
 * and the buffer sizing (apps/bench/bench_opts.c and bench_ref.c, compiled
 * into this target), run as a member does, without a job. The input's first
 * byte gives the number of members p (1 to 64), its second this member's
 * rank; the rest is the command line after "alltoallv", arguments
 * separated by NUL bytes (at most 16 of at most 63 bytes each), e.g.
 * "--pattern\0random\0--seed\0005\0--sizes\0008K:16K".
 *
 * Invariants (abort() when one breaks; AddressSanitizer catches a write
 * past a buffer):
 *  - at every size of the run the member's totals fit the buffers sized
 *    for the whole run, and filling them stays inside (sizes whose buffers
 *    exceed 1 MiB are sized, not filled);
 *  - counts and displacements are non-negative, the displacements their
 *    prefix sums, the totals their sums;
 *  - in place (--inplace), random and skewed give every member equal
 *    totals.
 */
#include "fuzz_bench.h"

#define CHECK(x) BENCH_CHECK("fuzz-benchpattern", x)

#define FILL_MAX ((uint64_t)1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint32_t p = data[0] % 64u + 1, me = data[1] % p;
	bench_fresh();
	/* the command line: "alltoallv" and the input's arguments */
	static const uint8_t kind[] = "alltoallv";
	uint8_t line[sizeof(kind) + 16 * 64];
	size_t n = size - 2 < sizeof(line) - sizeof(kind) ? size - 2 : sizeof(line) - sizeof(kind);
	memcpy(line, kind, sizeof(kind));
	memcpy(line + sizeof(kind), data + 2, n);
	struct fuzz_args a;
	fuzz_args_split(&a, "torus-bench", line, sizeof(kind) + n);
	if (parse_args(a.argc, a.argv) != 0 || opt.kind != COLL_ALLTOALLV)
		return 0;

	/* every member's vc is its own (thread-local in the tool): start afresh for this p */
	free(vc.sc);
	vc.sc = NULL;
	size_t esz = coll_dtype_size(opt.dtype);
	uint64_t smax, rmax;
	CHECK(v_most(me, p, &smax, &rmax) == 0);
	int filled = smax * esz + 1 <= FILL_MAX && rmax * esz + 1 <= FILL_MAX;
	void *send = filled ? malloc(smax * esz + 1) : NULL, *recv = filled ? malloc(rmax * esz + 1) : NULL;
	if (filled && (!send || !recv)) {
		free(send);
		free(recv);
		return 0;
	}
	struct ref ref;
	ref_init(&ref, p);
	for (unsigned s = 0; s < opt.nsizes; s++) {
		uint64_t count = opt.sizes[s] / esz;
		CHECK(v_setup(me, p, count) == 0);
		CHECK(vc.stot <= smax && vc.rtot <= rmax);
		uint64_t st = 0, rt = 0;
		for (uint32_t j = 0; j < p; j++) {
			CHECK(vc.sc[j] >= 0 && vc.rc[j] >= 0 && vc.sd[j] == (int64_t)st && vc.rd[j] == (int64_t)rt);
			st += (uint64_t)vc.sc[j];
			rt += (uint64_t)vc.rc[j];
		}
		CHECK(st == vc.stot && rt == vc.rtot);
		if (opt.inplace && (opt.pattern == V_RANDOM || opt.pattern == V_SKEWED))
			CHECK(vc.stot == vc.rtot);
		if (filled)
			fill(send, recv, me, p, (size_t)count, &ref);
	}
	free(send);
	free(recv);
	return 0;
}
