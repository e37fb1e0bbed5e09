/*
 * The torus-bench fuzz targets' common part: apps/torus_bench.c compiled
 * in (its main renamed), its parse state made fresh before each input, and
 * their invariant check.
 */
#ifndef FUZZ_BENCH_H
#define FUZZ_BENCH_H

#include "fuzz_args.h"

#define main torus_bench_main
#include "../apps/torus_bench.c"
#undef main

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
