/*
 * The MPI front end (issue 16): torusmpicc builds ordinary MPI programs
 * (tests/mpi/), which run under torusrun one rank per node: mpi_check's
 * checks on several shapes and core maps; MPI_Abort and a fatal error stop
 * the job as a failed node does; a program not started by torusrun says
 * so; a function the front end lacks is a compile error naming it; a
 * traced MPI program shows its collectives by name in torus-trace.
 */
#include "cunit_main.h"
#include "job_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void build(const char *src, const char *out, const char *extra)
{
	struct result r = run("$B/torusmpicc -O2 -Wall -Wextra -Werror %s -o $T/%s %s/tests/mpi/%s", extra, out,
			      TORUS_SOURCE_DIR, src);
	EXPECT(r.status == 0, "torusmpicc %s: %d\n%.2000s", src, r.status, r.err);
	result_free(&r);
}

static void test_mpicc_show(void)
{
	struct result r = run("$B/torusmpicc -show -O2 -o x x.c");
	EXPECT(r.status == 0 && strstr(r.out, "-O2 -o x x.c") && strstr(r.out, "-ltorusmpi") && strstr(r.out, "/mpi/include"),
	       "-show: %.500s", r.out);
	result_free(&r);
	r = run("$B/torusmpicc -show -c x.c");
	EXPECT(r.status == 0 && !strstr(r.out, "-ltorusmpi"), "-show -c links nothing: %.500s", r.out);
	result_free(&r);
	r = run("$B/torusmpicc --help");
	EXPECT(r.status == 0 && strstr(r.out, "usage: torusmpicc"), "--help: %.500s", r.out);
	result_free(&r);
}

/*
 * C++: torusmpicxx builds a program with std::vector buffers, strings and
 * the standard algorithms (mpi.h from C++), which runs and checks its
 * results; -show and --help as torusmpicc's.
 */
static void test_mpicxx(void)
{
	struct result r = run("$B/torusmpicxx -show -O2 -o x x.cpp");
	EXPECT(r.status == 0 && strstr(r.out, "++") && strstr(r.out, "-O2 -o x x.cpp") && strstr(r.out, "-ltorusmpi"),
	       "-show: %.500s", r.out);
	result_free(&r);
	r = run("$B/torusmpicxx --help");
	EXPECT(r.status == 0 && strstr(r.out, "usage: torusmpicxx") && strstr(r.out, "C++"), "--help: %.500s", r.out);
	result_free(&r);
	r = run("TORUS_MPICXX_CXX=no-such-compiler++ $B/torusmpicxx -o $T/x x.cpp");
	EXPECT(r.status == 2 && strstr(r.err, "no C++ compiler 'no-such-compiler++'"), "no compiler: %d %.500s", r.status,
	       r.err);
	result_free(&r);
	r = run("$B/torusmpicxx -std=c++17 -O2 -Wall -Wextra -Werror -o $T/mpi_cxx %s/tests/mpi/mpi_cxx.cpp",
		TORUS_SOURCE_DIR);
	EXPECT(r.status == 0, "torusmpicxx mpi_cxx.cpp: %d\n%.2000s", r.status, r.err);
	result_free(&r);
	static const char *const shapes[] = {"--torus 1", "--torus 3", "--torus 2x2x2", "--torus 3 --cores-map 1,3,2"};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		r = run("$B/torusrun %s --timeout 60 -- $T/mpi_cxx", shapes[i]);
		EXPECT(r.status == 0 && strstr(r.out, "cxx: all passed:") && !strstr(r.out, "FAILED"),
		       "%s: status %d\n%.2000s\n%.1000s", shapes[i], r.status, r.out, r.err);
		result_free(&r);
	}
}

/* MPI-2's basics: buffers from MPI_Alloc_mem with and without hints, a
 * header of helpers declared with MPI_Info and MPI_Win, built at -O0 */
static void test_mpi2_basics(void)
{
	struct result r = run("$B/torusmpicc -O0 -g -Wall -Wextra -Werror -o $T/mpi_alloc %s/tests/mpi/mpi_alloc.c",
			      TORUS_SOURCE_DIR);
	EXPECT(r.status == 0, "torusmpicc -O0 mpi_alloc.c: %d\n%.2000s", r.status, r.err);
	result_free(&r);
	static const char *const shapes[] = {"--torus 1", "--torus 2x2", "--torus 3 --cores-map 1,3,2"};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		r = run("$B/torusrun %s --timeout 60 -- $T/mpi_alloc", shapes[i]);
		EXPECT(r.status == 0 && strstr(r.out, "mpi_alloc: all passed"), "%s: status %d\n%.2000s\n%.1000s", shapes[i],
		       r.status, r.out, r.err);
		result_free(&r);
	}
}

/* The emulated time a job ran ("emulated time X us" in torusrun's last
 * line), or -1. */
static double emulated_us(const char *err)
{
	const char *p = strstr(err, "emulated time ");
	return p ? atof(p + 14) : -1;
}

/*
 * One-sided communication (tests/mpi/mpi_rma.c): puts, gets and
 * accumulates through fence, PSCW and lock epochs, checked byte by byte on
 * 1 to 16 ranks; fence and PSCW epochs at the same emulated time under
 * chaos; a traced run names its one-sided traffic; and a put of 1 MiB to a
 * neighbour takes the model's time to the picosecond: its first packet
 * starts inj_overhead after the post, and its 4370 packets follow back to
 * back, each serialised at link_bw.
 */
static void test_mpi_rma(void)
{
	build("mpi_rma.c", "mpi_rma", "");
	const int light = getenv("TORUS_TEST_LIGHT") != NULL;
	static const char *const shapes[] = {"--torus 1", "--torus 2x2", "--torus 3 --cores-map 1,3,2", "--torus 4x4",
					     "--torus 2x2x2 --cores 2"};
	static const int shapes_light[] = {1, 1, 1, 0, 0};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		if (light && !shapes_light[i])
			continue;
		struct result r = run("$B/torusrun %s --timeout 60 --quiet -- $T/mpi_rma", shapes[i]);
		EXPECT(r.status == 0 && strstr(r.out, "rma: all passed:") && !strstr(r.out, "FAILED"),
		       "%s: status %d\n%.2000s\n%.1000s", shapes[i], r.status, r.out, r.err);
		result_free(&r);
	}
	/* exact: fence and PSCW epochs give one emulated time, whatever the
	 * host's scheduling */
	double t[3];
	for (int k = 0; k < 3; k++) {
		struct result r = run("$B/torusrun --torus %s --chaos %d --timeout 60 -- $T/mpi_rma fence pscw errors",
				      light ? "2x2" : "4x4", k + 1);
		t[k] = emulated_us(r.err);
		EXPECT(r.status == 0 && t[k] > 0, "chaos %d: status %d\n%.1000s", k + 1, r.status, r.err);
		result_free(&r);
	}
	EXPECT(t[0] == t[1] && t[1] == t[2], "fence and PSCW: %.3f, %.3f and %.3f us under chaos", t[0], t[1], t[2]);
	/* a lock never released: its waiter sleeps, and the hang detector
	 * stops the job (it must not spin on gets forever) */
	struct result h = run("$B/torusrun --torus 2 --timeout 2 -- $T/mpi_rma hang");
	EXPECT(h.status == 3 && strstr(h.err, "the job is hung") && !strstr(h.out, "given twice"),
	       "a lock never released: status %d\n%.500s", h.status, h.err);
	result_free(&h);
	/* traced: the one-sided traffic by name */
	struct result r = run("$B/torusrun --torus 2x2 --quiet --trace $T/rma.trace -- $T/mpi_rma >/dev/null && "
			      "$B/torus-trace $T/rma.trace");
	static const char *const names[] = {"\none-sided put ", "\none-sided get ", "\none-sided accumulate ",
					    "\none-sided sync "};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		EXPECT(r.status == 0 && strstr(r.out, names[i]), "trace has no %s:\n%.3000s", names[i] + 1, r.out);
	EXPECT(!strstr(r.out, "\nuntagged "), "untagged traffic:\n%.3000s", r.out);
	result_free(&r);
	/* a put of 1 MiB to the neighbour, packet by packet against the model
	 * (default parameters: 240 payload bytes a packet, 16 of header, 32-byte
	 * chunks, 14 bytes of acknowledgement, 425 MB/s, 100 ns to inject) */
	r = run("$B/torusrun --torus 2 --quiet --trace $T/put.trace --trace-packets -- $T/mpi_rma puttime 1048576 && "
		"$B/torus-trace $T/put.trace --packets 0:x+ | grep 'one-sided put'");
	const char *at = strstr(r.out, "posted at ");
	unsigned long long t0 = at ? strtoull(at + 10, NULL, 10) : 0, first = 0, prev = 0, end = 0, start, stop;
	unsigned long long n = 0, gaps = 0, bytes = 0, payload;
	for (const char *line = strstr(r.out, "\n0,"); line; line = strstr(line + 1, "\n0,")) {
		if (sscanf(line + 1, "0,\"(0)\",x+,1,%llu,%llu,1,%llu", &start, &stop, &payload) != 3)
			continue;
		if (!n++)
			first = start;
		else
			gaps += start != prev;
		prev = end = stop;
		bytes += payload;
	}
	/* serialisation: ceil(wire * 1e12 / 425e6) ps, wire = roundup(16 + x, 32) + 14 */
	const unsigned long long full = (270ull * 1000000000000ull + 424999999ull) / 425000000ull,
				 last = (46ull * 1000000000000ull + 424999999ull) / 425000000ull;
	EXPECT(r.status == 0 && t0 > 0 && n == 4370 && bytes == 1048576 && gaps == 0 && first == t0 + 100000 &&
		       end == first + 4369 * full + last,
	       "put of 1 MiB posted at %llu ps: %llu packets (%llu bytes, %llu gaps), first starts at %llu (model %llu), "
	       "last ends at %llu (model %llu)\n%.300s",
	       t0, n, bytes, gaps, first, t0 + 100000, end, t0 + 100000 + 4369 * full + last, r.err);
	result_free(&r);
}

/*
 * The program's own work in emulated time (tests/mpi/mpi_stream.c, a STREAM
 * triad): free by default (only the clock reads cost), and with
 * --compute-speed F the CPU time the rank measured around the kernel over
 * the emulated time it saw is F (2% and 20 us), so the rate it reports is
 * finite and scales with F; --compute-cpi runs where the host counts
 * instructions and is refused in one line where it cannot; bad values are
 * refused.
 */
static void test_mpi_compute(void)
{
	build("mpi_stream.c", "mpi_stream", "");
	const char *n = getenv("TORUS_TEST_LIGHT") ? "200000" : "2000000";
	static const char *const speeds[] = {"0", "1", "4", "0.25"};
	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++) {
		char opt[64] = "";
		if (strcmp(speeds[i], "0"))
			snprintf(opt, sizeof(opt), "--compute-speed %s", speeds[i]);
		struct result r = run("$B/torusrun --torus 2x2 %s --timeout 60 -- $T/mpi_stream %s %s", opt, speeds[i], n);
		const char *rate = strstr(r.out, "rate ");
		double mbs = rate ? atof(rate + 5) : -1;
		EXPECT(r.status == 0 && strstr(r.out, "stream: charged as given") && mbs > 0 &&
			       (!strcmp(speeds[i], "0") ? mbs > 1e6 : mbs < 1e6),
		       "speed %s: status %d, %.1f MB/s\n%.1000s\n%.1000s", speeds[i], r.status, mbs, r.out, r.err);
		EXPECT(!opt[0] || strstr(r.err, "emulated times vary from run to run"), "speed %s: no warning:\n%.500s",
		       speeds[i], r.err);
		result_free(&r);
	}
	/* instructions: where the host counts them */
	struct result r = run("$B/torusrun --torus 2 --compute-cpi 1@1GHz --timeout 60 -- $T/mpi_stream 0 %s", n);
	if (r.status == 2)
		EXPECT(strstr(r.err, "--compute-cpi: cannot count instructions here: ") && count_lines(r.err, NULL) == 1,
		       "no counters, said how: %.500s", r.err);
	else
		EXPECT(r.status == 1 && strstr(r.out, "stream: FAILED") && strstr(r.err, "s emulated for"),
		       "counted instructions: the triad took time (it is no speed the check knows): %d\n%.500s\n%.500s",
		       r.status, r.out, r.err);
	result_free(&r);
	static const char *const bad[][2] = {
		{"--compute-speed 0", "bad --compute-speed '0'"},   {"--compute-speed abc", "bad --compute-speed 'abc'"},
		{"--compute-speed -2", "bad --compute-speed '-2'"}, {"--compute-speed 1e9", "bad --compute-speed '1e9'"},
		{"--compute-cpi 1@850XHz", "bad --compute-cpi '1@850XHz'"}, {"--compute-cpi 0@1GHz", "bad --compute-cpi"},
		{"--compute-speed 1 --compute-cpi 1@1GHz", "give one of them"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = run("$B/torusrun --torus 2 %s -- $T/mpi_stream 1", bad[i][0]);
		EXPECT(r.status == 2 && strstr(r.err, bad[i][1]) && count_lines(r.err, NULL) == 1, "%s: %d %.300s", bad[i][0],
		       r.status, r.err);
		result_free(&r);
	}
}

static void test_mpi_check(void)
{
	build("mpi_check.c", "mpi_check", "");
	/* sanitized builds (ten times slower) run the runs marked 1 only */
	const int light = getenv("TORUS_TEST_LIGHT") != NULL;
	static const char *const shapes[] = {"--torus 1", "--torus 2x2", "--torus 3x3", "--torus 2x2x2 --cores 2",
					     "--torus 3 --cores-map 1,3,2", "--torus 4x4"};
	static const int shapes_light[] = {0, 1, 0, 1, 1, 0};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		if (light && !shapes_light[i])
			continue;
		struct result r = run("$B/torusrun %s --timeout 60 -- $T/mpi_check", shapes[i]);
		EXPECT(r.status == 0 && strstr(r.out, "all passed:") && !strstr(r.out, "FAILED"),
		       "%s: status %d\n%.2000s\n%.1000s", shapes[i], r.status, r.out, r.err);
		result_free(&r);
	}
	/* rendezvous for (nearly) everything: every message over 16 bytes,
	 * the collectives' own included (a smaller limit would deadlock the
	 * program's deliberately unsafe exchanges of small messages, as MPI
	 * allows); a bad limit is refused */
	static const char *const rzv[] = {"--torus 2x2", "--torus 3 --cores-map 1,3,2"};
	for (size_t i = 0; i < (light ? 1 : sizeof(rzv) / sizeof(rzv[0])); i++) {
		struct result r = run("TORUS_MPI_EAGER_LIMIT=16 $B/torusrun %s --timeout 60 -- $T/mpi_check", rzv[i]);
		EXPECT(r.status == 0 && strstr(r.out, "all passed:") && !strstr(r.out, "FAILED"),
		       "eager limit 16, %s: status %d\n%.2000s\n%.1000s", rzv[i], r.status, r.out, r.err);
		result_free(&r);
	}
	/* the node's other cores in every collective that can use them (the
	 * threshold at 0 bytes), uneven nodes included, and with chaos */
	static const char *const mc[] = {"--chaos 4 --torus 2x2 --cores 3", "--torus 2x2 --cores-map 2,3,3,4",
					 "--torus 2x2 --cores 3"};
	for (size_t i = 0; i < (light ? 2 : sizeof(mc) / sizeof(mc[0])); i++) {
		struct result r = run("TORUS_MPI_MULTICORE_BYTES=0 $B/torusrun %s --timeout 60 -- $T/mpi_check", mc[i]);
		EXPECT(r.status == 0 && strstr(r.out, "all passed:") && !strstr(r.out, "FAILED"),
		       "multicore, %s: status %d\n%.2000s\n%.1000s", mc[i], r.status, r.out, r.err);
		result_free(&r);
	}
	struct result bad = run("TORUS_MPI_EAGER_LIMIT=12k $B/torusrun --torus 2 --timeout 60 -- $T/mpi_check");
	EXPECT(bad.status == 1 && strstr(bad.err, "TORUS_MPI_EAGER_LIMIT=12k is not a number of bytes"),
	       "a bad eager limit: status %d\n%.1000s", bad.status, bad.err);
	result_free(&bad);
	bad = run("TORUS_MPI_MULTICORE_BYTES=-1 $B/torusrun --torus 2 --cores 2 --timeout 60 -- $T/mpi_check");
	EXPECT(bad.status == 1 && strstr(bad.err, "TORUS_MPI_MULTICORE_BYTES=-1 is not a number of bytes"),
	       "a bad multicore threshold: status %d\n%.1000s", bad.status, bad.err);
	result_free(&bad);
	/* with chaos: everything passes, and every seed gives rank 0
	 * the same emulated time (a send completes when its counter is zero in
	 * virtual time, not at the next arrival or 1 ms later) */
	char *first = NULL;
	for (int seed = 1; seed <= 2; seed++) {
		struct result r = run("$B/torusrun --chaos %d --torus 2x2 --timeout 60 -- $T/mpi_check", seed);
		const char *p = strstr(r.out, "all passed:");
		EXPECT(r.status == 0 && p && !strstr(r.out, "FAILED"), "chaos seed %d: status %d\n%.2000s\n%.1000s", seed,
		       r.status, r.out, r.err);
		if (p && !first)
			first = strndup(p, strcspn(p, "\n"));
		else if (p)
			EXPECT(!strncmp(first, p, strlen(first)), "chaos seed %d: '%.100s', seed 1: '%s'", seed, p, first);
		result_free(&r);
	}
	free(first);
	struct result r = run("$T/mpi_check");
	EXPECT(r.status == 2 && strstr(r.err, "not started by torusrun"), "bare: %d %.500s", r.status, r.err);
	result_free(&r);
	/* traced, its collectives show by name, and its point-to-point too */
	r = run("$B/torusrun --torus 2x2 --quiet --trace $T/mpi.trace -- $T/mpi_check >/dev/null && "
		"$B/torus-trace $T/mpi.trace");
	static const char *const names[] = {"\nallreduce ", "\nallgather ", "\nalltoall ", "\nalltoallv ",
					    "\nreduce-scatter ", "\nbcast ", "\nreduce ", "\ngather ",
					    "\nscatter ", "\nscan ", "\npoint-to-point "};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		EXPECT(r.status == 0 && strstr(r.out, names[i]), "trace has no %s:\n%.3000s", names[i] + 1, r.out);
	EXPECT(!strstr(r.out, "\nuntagged "), "untagged traffic:\n%.3000s", r.out);
	result_free(&r);
}

/*
 * The conformance suite (tests/mpi/mpi_conform.c): zero counts with NULL
 * and MPI_BOTTOM buffers, MPI_IN_PLACE and ignored arguments, persistent
 * and inactive requests, Get_count and Get_elements on derived types,
 * probes of bursts of unexpected messages and cancel, every error class;
 * on 1 to 16 ranks and on uneven core maps.
 */
static void test_mpi_conform(void)
{
	build("mpi_conform.c", "mpi_conform", "");
	const int light = getenv("TORUS_TEST_LIGHT") != NULL;
	static const char *const shapes[] = {"--torus 1",
					     "--torus 2",
					     "--torus 3 --cores-map 1,3,2",
					     "--torus 2x2 --cores-map 2,1,3,1",
					     "--torus 4x4",
					     "TORUS_MPI_EAGER_LIMIT=16 --torus 2x2"};
	static const int shapes_light[] = {1, 0, 1, 1, 0, 0};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		if (light && !shapes_light[i])
			continue;
		const char *args = shapes[i];
		char env[64] = "";
		if (!strncmp(args, "TORUS_", 6)) {
			const char *sp = strchr(args, ' ');
			snprintf(env, sizeof(env), "%.*s", (int)(sp - args), args);
			args = sp + 1;
		}
		struct result r = run("%s $B/torusrun %s --quiet --timeout 60 -- $T/mpi_conform", env, args);
		EXPECT(r.status == 0 && strstr(r.out, "conform: all passed:") && !strstr(r.out, "FAILED"),
		       "%s: status %d\n%.3000s\n%.1000s", shapes[i], r.status, r.out, r.err);
		result_free(&r);
	}
}

static void test_mpi_failures(void)
{
	build("mpi_fail.c", "mpi_fail", "");
	/* mismatched collective calls are an error, not a silent success: in
	 * the call when a message of one is taken by the other, else at
	 * MPI_Finalize (messages nobody took) */
	for (int n = 2; n <= 3; n++) {
		struct result r = run("$B/torusrun --torus %d --quiet --timeout 60 -- $T/mpi_fail ops-mismatch", n);
		EXPECT(r.status == 1 && strstr(r.err, "MPI_Allreduce: mismatched collective calls: rank ") &&
			       strstr(r.err, "is in MPI_Allreduce with another operation") && !strstr(r.out, "allreduce gave"),
		       "allreduce with other operations, %d ranks: %d\n%.1000s\n%.500s", n, r.status, r.err, r.out);
		result_free(&r);
		r = run("$B/torusrun --torus %d --quiet --timeout 60 -- $T/mpi_fail bcast-reduce", n);
		EXPECT(r.status == 1 && strstr(r.err, "MPI_Finalize: mismatched collective calls: ") &&
			       strstr(r.err, "were never received"),
		       "bcast against reduce, %d ranks: %d\n%.1000s", n, r.status, r.err);
		result_free(&r);
	}
	/* a truncation names the message's size and the buffer's */
	static const char *const trunc[] = {"truncate", "truncate-wait"};
	for (int k = 0; k < 2; k++) {
		struct result r = run("$B/torusrun --torus 2 --quiet --timeout 60 -- $T/mpi_fail %s", trunc[k]);
		EXPECT(r.status == 1 && strstr(r.err, k ? "MPI_Wait" : "MPI_Recv") &&
			       strstr(r.err, "a message of 400 bytes for a buffer of 40"),
		       "%s: %d\n%.1000s", trunc[k], r.status, r.err);
		result_free(&r);
	}
	struct result r = run("$B/torusrun --torus 4 --timeout 60 -- $T/mpi_fail abort");
	EXPECT(r.status == 1 && strstr(r.err, "MPI_Abort: rank 1 aborts the job with code 5") &&
		       !strstr(r.out, "rank 1 got past"),
	       "abort: %d\n%.1000s", r.status, r.err);
	result_free(&r);
	r = run("$B/torusrun --torus 4 --timeout 60 -- $T/mpi_fail fatal");
	EXPECT(r.status == 1 && strstr(r.err, "MPI error on rank 0: MPI_Send: rank 102 is not in the communicator") &&
		       strstr(r.err, "invalid rank"),
	       "fatal: %d\n%.1000s", r.status, r.err);
	result_free(&r);
	r = run("$B/torusrun --torus 2 --timeout 60 -- $T/mpi_fail");
	EXPECT(r.status == 0 && count_lines(r.out, "got past the failure") == 2, "none: %d\n%.1000s", r.status, r.err);
	result_free(&r);
	/* MPI_Wtime: emulated by default, the host's clock with --wtime wall */
	r = run("$B/torusrun --torus 2 --timeout 60 -- $T/mpi_fail wtime && "
		"$B/torusrun --torus 2 --timeout 60 --wtime wall -- $T/mpi_fail wtime");
	EXPECT(r.status == 0 && count_lines(r.out, "wtime emulated") == 2 && count_lines(r.out, "wtime wall") == 2,
	       "wtime: %d\n%.1000s", r.status, r.out);
	result_free(&r);
	r = run("$B/torusrun --torus 2 --wtime sundial -- $T/mpi_fail");
	EXPECT(r.status == 2 && strstr(r.err, "bad --wtime 'sundial'"), "bad wtime: %d %.300s", r.status, r.err);
	result_free(&r);
	/* what the front end lacks does not build, and the error names it */
	r = run("$B/torusmpicc -DMISSING -o $T/missing %s/tests/mpi/mpi_fail.c", TORUS_SOURCE_DIR);
	EXPECT(r.status != 0 && strstr(r.err, "MPI_Intercomm_create"), "missing: %d\n%.1000s", r.status, r.err);
	result_free(&r);
}

/* A deadlocked MPI program is hung: its progress loop waits 1 ms of
 * virtual time, times out and looks again, so its clock runs on, but
 * nothing moves; the detector says so. */
static void test_mpi_deadlocks(void)
{
	static const char *const kinds[] = {"recv-first", "ssend-first", "coll-mismatch"};
	build("mpi_fail.c", "mpi_fail", "");
	for (size_t k = 0; k < CUNIT_COUNT(kinds); k++) {
		struct result r = run("$B/torusrun --torus 2 --timeout 1 -- $T/mpi_fail %s", kinds[k]);
		EXPECT(r.status == 3 && strstr(r.err, "the job is hung") && !strstr(r.out, "got past") &&
			       strstr(r.err, "only poll and wait in loops that time out"),
		       "%s: %d\n%.2000s", kinds[k], r.status, r.err);
		result_free(&r);
	}
	/* the collectives' short messages are waited for in wall-clock time:
	 * a mismatch leaves the ranks asleep, which the detector stops too */
	struct result r = run("$B/torusrun --torus 2 --timeout 1 -- $T/mpi_fail coll-mismatch-short");
	EXPECT(r.status == 3 && strstr(r.err, "the job is hung") && !strstr(r.out, "got past"), "coll-mismatch-short: %d\n%.2000s",
	       r.status, r.err);
	result_free(&r);
}

/* Small collectives (recursive doubling, binomial trees, the scan's
 * chain) send in any order: right results, and no rank asks the timekeeper
 * about a receive or a counter while it waits for them */
static void test_mpi_small_collectives(void)
{
	build("mpi_fail.c", "mpi_fail", "");
	struct result r = run("TORUS_TK_DEBUG=1 $B/torusrun --torus 2x2x2 --timeout 60 -- $T/mpi_fail small-colls");
	EXPECT(r.status == 0 && count_lines(r.out, "small collectives: 0 wrong") == 8 &&
		       strstr(r.err, "queries by type (enum emu_tk_query): 1:0 2:0 3:0 4:0 5:0 6:0 7:0 8:0 9:0 "),
	       "small-colls: %d\n%.2000s\n%.3000s", r.status, r.out, r.err);
	result_free(&r);
}

/* A receive taking a long eager message promises the timekeeper the rest of
 * its packets (dma_recfifo_expect), so that the simulation runs on past
 * them: right bytes, the same emulated time as the receive from any source
 * (which makes no promise), and far fewer questions about arrivals (one
 * per packet without it: 16 x 64). With a rendezvous from a third rank
 * meanwhile, its work waits for the promise, and the bytes are right. */
/* The timekeeper's count of questions of one type (TORUS_TK_DEBUG), or -1. */
static long questions(const char *err, int type)
{
	const char *q = strstr(err, "queries by type (enum emu_tk_query): ");
	char key[16];
	snprintf(key, sizeof(key), " %d:", type);
	const char *w = q ? strstr(q, key) : NULL;
	return w ? strtol(w + strlen(key), NULL, 10) : -1;
}

/*
 * A receive taking a long eager message promises the rest of its packets:
 * 16 messages of 16 KiB (64 packets each) ask a few arrival questions
 * (WAIT_RECV, type 2), not one per packet, naming the source or not, and
 * in the same emulated time. On 3 ranks a rendezvous receive's data come
 * by a get meanwhile: the receive still promises (the get's data are seen
 * when the promise is kept), so the counter questions (CTR 3, CTR_OR_RECV
 * 9) are a few dozen, not one or two per packet (3,367 before), and the
 * emulated time is the same either way. "promise-other": a receive that
 * finishes while its wait promised another message's packets keeps the
 * promise before it returns, so that the send right after it is not refused.
 */
static void test_mpi_eager_promise(void)
{
	build("mpi_fail.c", "mpi_fail", "");
	for (int ranks = 2; ranks <= 3; ranks++) {
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "TORUS_TK_DEBUG=1 $B/torusrun --torus %d --timeout 60 -- $T/mpi_fail eager-named",
			 ranks);
		struct result named = run(cmd);
		snprintf(cmd, sizeof(cmd), "TORUS_TK_DEBUG=1 $B/torusrun --torus %d --timeout 60 -- $T/mpi_fail eager-any",
			 ranks);
		struct result any = run(cmd);
		const char *tn = strstr(named.err, "emulated time "), *ta = strstr(any.err, "emulated time ");
		long qn = questions(named.err, 2), qa = questions(any.err, 2);
		long cn = questions(named.err, 3) + questions(named.err, 9), ca = questions(any.err, 3) + questions(any.err, 9);
		EXPECT(named.status == 0 && any.status == 0 && strstr(named.out, "eager stream: 0 wrong") &&
			       strstr(any.out, "eager stream: 0 wrong") && tn && ta && strcspn(tn, ",") == strcspn(ta, ",") &&
			       !strncmp(tn, ta, strcspn(tn, ",")) && qa >= 0 && qa <= 16 * 4 && qn >= 0 && qn <= 16 * 4 &&
			       cn >= 0 && cn <= 200 && ca >= 0 && ca <= 200,
		       "%d ranks: named: %d, %ld arrival and %ld counter questions\n%.2000s\nany: %d, %ld and %ld\n%.2000s",
		       ranks, named.status, qn, cn, tn ? tn : named.err, any.status, qa, ca, ta ? ta : any.err);
		result_free(&named);
		result_free(&any);
	}
	/* a receive finished while its wait promised another message's
	 * packets keeps the promise before it returns: the send right after
	 * it is not refused */
	struct result r = run("$B/torusrun --torus 3 --timeout 60 -- $T/mpi_fail promise-other");
	EXPECT(r.status == 0 && strstr(r.out, "rank 1 stream beside answers: 0 wrong") &&
		       strstr(r.out, "rank 2 answers: 0 wrong"),
	       "promise-other: %d\n%.2000s\n%.2000s", r.status, r.out, r.err);
	result_free(&r);
}

/* mpi_check on 64 ranks, 4x4x4 (test_mpi --64: the ctest mpi-64, label
 * stress, to keep the default suite and its sanitizer passes short; 5 s
 * of wall time on 2 CPUs) */
static void test_mpi_check_64(void)
{
	build("mpi_check.c", "mpi_check", "");
	struct result r = run("$B/torusrun --torus 4x4x4 --timeout 600 -- $T/mpi_check");
	EXPECT(r.status == 0 && strstr(r.out, "rank 0 of 64") && strstr(r.out, "all passed:") && !strstr(r.out, "FAILED"),
	       "4x4x4: status %d\n%.2000s\n%.1000s", r.status, r.out, r.err);
	result_free(&r);
}

int main(int argc, char **argv)
{
	if (job_util_init())
		return 2;
	static const struct cunit_case cases[] = {CUNIT_CASE(test_mpicc_show), CUNIT_CASE(test_mpicxx), CUNIT_CASE(test_mpi2_basics),
						  CUNIT_CASE(test_mpi_rma), CUNIT_CASE(test_mpi_compute),
						  CUNIT_CASE(test_mpi_check), CUNIT_CASE(test_mpi_conform),
						  CUNIT_CASE(test_mpi_failures), CUNIT_CASE(test_mpi_deadlocks),
						  CUNIT_CASE(test_mpi_small_collectives),
						  CUNIT_CASE(test_mpi_eager_promise)};
	static const struct cunit_case big[] = {CUNIT_CASE(test_mpi_check_64)};
	static const struct cunit_suite all[] = {{"mpi", cases, CUNIT_COUNT(cases)}};
	static const struct cunit_suite large[] = {{"mpi-64", big, CUNIT_COUNT(big)}};
	if (argc == 2 && !strcmp(argv[1], "--64"))
		return cunit_main(large, CUNIT_COUNT(large));
	if (argc > 1) {
		fprintf(stderr, "usage: test_mpi [--64]\n");
		return 2;
	}
	return cunit_main(all, CUNIT_COUNT(all));
}
