/*
 * The torus-bench fuzz targets' common part: apps/bench/bench_opts.c and
 * bench_ref.c compiled in (fuzz/CMakeLists.txt), their parse state made
 * fresh before each input, and their invariant check.
 */
#ifndef FUZZ_BENCH_H
#define FUZZ_BENCH_H

#include "fuzz_args.h"

#include "../apps/bench/bench.h"

#include <stdlib.h>
#include <string.h>

/* abort() with the target's name and the line when x is false */
#define BENCH_CHECK(target, x)                                                                         \
	do {                                                                                           \
		if (!(x)) {                                                                            \
			fprintf(stderr, target ": invariant broken at line %d: %s\n", __LINE__, #x);   \
			abort();                                                                       \
		}                                                                                      \
	} while (0)

/* The options and the patterns' state as torus-bench starts them. */
static void bench_fresh(void)
{
	static struct opts fresh;
	static int saved;
	if (!saved) {
		fresh = opt;
		saved = 1;
	}
	opt = fresh;
	v_symmetric = 0;
}

#endif
