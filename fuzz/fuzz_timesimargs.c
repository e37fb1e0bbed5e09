/*
 * torus-timesim's command line (parse in apps/torus_timesim.c, compiled
 * into this target with its main renamed). The input is the arguments,
 * separated by NUL bytes (at most 16 of at most 63 bytes each).
 *
 * Invariants (abort() when one breaks):
 *  - parsing gives 1 (--help), 0 or -1;
 *  - on 0: a shape of 1..6 dimensions whose node count is their product;
 *    cores 1..64; a known pattern; packets 1..2^20; a size of -1 (varying)
 *    or 0..the packet payload; bytes at most 2^40; parameters that
 *    torus_params_check accepts.
 */
#include "fuzz_args.h"

#define main torus_timesim_main
#include "../apps/torus_timesim.c"
#undef main

#define CHECK(x)                                                                                     \
	do {                                                                                         \
		if (!(x)) {                                                                          \
			fprintf(stderr, "fuzz-timesimargs: invariant broken at line %d: %s\n", __LINE__, #x); \
			abort();                                                                     \
		}                                                                                    \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_args a;
	fuzz_args_split(&a, "torus-timesim", data, size);
	struct options o;
	int rc = parse(a.argc, a.argv, &o);
	CHECK(rc == 1 || rc == 0 || rc == -1);
	if (rc)
		return 0;
	uint64_t nodes = 1;
	CHECK(o.shape.ndims >= 1 && o.shape.ndims <= TORUS_MAX_DIMS);
	for (uint32_t d = 0; d < o.shape.ndims; d++)
		nodes *= o.shape.dims[d];
	CHECK(nodes == o.shape.nnodes);
	CHECK(o.cores >= 1 && o.cores <= TORUS_MAX_CORES);
	CHECK(!strcmp(o.pattern, "stress") || !strcmp(o.pattern, "alltoall") || !strcmp(o.pattern, "hotspot"));
	CHECK(o.packets >= 1 && o.packets <= (1u << 20));
	CHECK(o.size == -1 || (o.size >= 0 && o.size <= (int)torus_params_payload(&o.params)));
	CHECK(o.bytes <= (1ull << 40));
	char err[256];
	CHECK(torus_params_check(&o.params, err, sizeof(err)) == 0);
	return 0;
}
