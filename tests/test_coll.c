/*
 * The coll layer's suite: every algorithm of every collective's catalogue
 * (the all-to-all family included) x datatype x operation x count (0 for
 * the all-to-all, 1, primes, 1000, a large prime), on the whole job, on a
 * team of one core per node, on a sub-team of every other core and on the
 * node team of every core, over shapes from 1-D to 4-D (Figure 5's 3x3x2, 2x4x8, 4x4x4) with
 * even and uneven cores, against a sequential reference (coll-check); in
 * place, bad calls, counts that disagree, teams an algorithm does not fit;
 * and section 4's per-link byte counts.
 */
#include "cunit_main.h"
#include "job_util.h"

static void check(const char *opts)
{
	struct result r = run("$B/torusrun --timeout 300 %s", opts);
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "all results match the reference"));
	if (r.status)
		fprintf(stderr, "\n[%s]\n%.3000s\n", opts, r.err);
	result_free(&r);
}

/* Every algorithm of the catalogue, on the whole job (a core team), on core
 * 0 of each node, and on the node team of all cores when nodes have several
 * (one color per core with --cores N, one stream per core with 2N). */
static void test_1d(void) { check("--torus 5 -- $B/coll-check 1 7 1000"); }
static void test_2x2_two_cores(void) { check("--torus 2x2 --cores 2 -- $B/coll-check 1 7 1000"); }
static void test_figure5_3x3x2_three_cores(void) { check("--torus 3x3x2 --cores 3 -- $B/coll-check 1 7 1000"); }
static void test_2x4x8(void) { check("--torus 2x4x8 --param dma_counters=128 -- $B/coll-check 1 13"); }
static void test_4x4x4_three_cores(void) { check("--torus 4x4x4 --cores 3 -- $B/coll-check 1 11"); }
static void test_2x2x2_six_cores(void) { check("--torus 2x2x2 --cores 6 -- $B/coll-check 1 7 1000"); }
static void test_4d_four_cores(void) { check("--torus 2x2x2x2 --cores 4 -- $B/coll-check 1 7 1000"); }
static void test_uneven_cores(void) { check("--torus 3 --cores-map 1,3,2 -- $B/coll-check 1 7 1000"); }
/* prime team sizes (the all-to-all's odd factor rounds, mesh2d's 1 x p grid) */
static void test_prime_7(void) { check("--torus 7 -- $B/coll-check 1 7 1000"); }
static void test_prime_13(void) { check("--torus 13 -- $B/coll-check 1 7 100"); }
/* under exact time the address exchanges' receivers expect their messages
 * before they wait for them: a first design, which named them only once
 * taken, hung here (13 nodes; 12 did not) */
static void test_exact_13(void) { check("--torus 13 -- $B/coll-check --only ring 1 7"); }
/* uneven nodes on a 2-D torus: the all-to-all's hierarchical factor with
 * nodes of 1 to 4 members (and every other algorithm on 10 cores) */
static void test_uneven_2d(void) { check("--torus 2x2 --cores-map 1,4,2,3 -- $B/coll-check 1 7 300"); }
/* 004's in-place algorithms on every team of 2 to 20 nodes (primes, 18),
 * both patterns (members' totals unequal; equal) */
static void test_inplace_sweep(void)
{
	struct result r = run("$B/torusrun --torus 4x5 --timeout 300 -- $B/coll-check --inplace-sweep 6");
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_EQUAL(count_lines(r.out, "in place on every team of 2 to 20 nodes: all results match"), 1);
	if (r.status)
		fprintf(stderr, "\n%.3000s\n", r.err);
	result_free(&r);
	/* a 64-byte bounce buffer: swaps in many rounds of 32 bytes, rotations
	 * by block swaps (larger than the buffer on both sides) */
	r = run("TORUS_COLL_INPLACE_BOUNCE=64 $B/torusrun --torus 2x3 --timeout 300 -- $B/coll-check --inplace-sweep 40");
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_EQUAL(count_lines(r.out, "in place on every team of 2 to 6 nodes: all results match"), 1);
	if (r.status)
		fprintf(stderr, "\n%.3000s\n", r.err);
	result_free(&r);
}
static void test_asymmetric_large_prime(void)
{
	/* a large prime count on an asymmetric torus, multicolor only */
	check("--torus 3x3x2 --cores 3 -- $B/coll-check --only multicolor --dtype double 100003");
}

/* Section 4 on a symmetric torus: every link direction carries exactly
 * (p-1)/p n / 2N bytes of data, from the link counters. Every color, as
 * the section has it: by default a short vector takes fewer, and the
 * count-0 call that measures the address messages is the shortest. */
static void check_links(const char *opts)
{
	struct result r = run("TORUS_MC_COLORS=6 $B/torusrun --timeout 300 %s -- $B/coll-check --links 24576", opts);
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_EQUAL(count_lines(r.out, "every link direction carried"), 3);
	if (r.status)
		fprintf(stderr, "\n[%s]\n%.3000s\n", opts, r.err);
	result_free(&r);
}
static void test_links_4x4x4(void) { check_links("--torus 4x4x4 --cores 3"); }
static void test_links_2x2x2_six_cores(void) { check_links("--torus 2x2x2 --cores 6"); }

/* Under the sanitizers (ten times slower): the same checks on smaller
 * shapes and fewer counts; every algorithm, team kind and variant still runs. */
static void light_1d(void) { check("--torus 5 -- $B/coll-check 1 7 1000"); }
static void light_2x2_two_cores(void) { check("--torus 2x2 --cores 2 -- $B/coll-check 1 7"); }
/* the two largest sanitized jobs take one datatype each (the others run
 * every datatype): under TSan 57 s each with all four, 28 and 40 s so */
static void light_figure5_three_cores(void) { check("--torus 3x3x2 --cores 3 -- $B/coll-check --dtype double 7"); }
static void light_2x2x2_six_cores(void) { check("--torus 2x2x2 --cores 6 -- $B/coll-check --dtype int64 1 13"); }
static void light_uneven_cores(void) { check("--torus 3 --cores-map 1,3,2 -- $B/coll-check 1 7"); }
static void light_team_too_large(void)
{
	/* 8 members need 9 counters for the ring: -ENOTSUP, checked by coll-check */
	check("--torus 2x2x2 --param dma_counters=8 -- $B/coll-check 7");
}
static void test_links_8x8_single_core(void) { check_links("--torus 8x8"); }

/* Fewer colors for short vectors (multicolor_geom.c, choose_colors): each
 * color count on its own gives the reference results, and under --exact
 * (repeatable to the picosecond) the default's choice for a 1 KiB
 * allreduce on one core per node beats every color. */
static void test_colors_forced(void)
{
	check("--torus 3x3x2 --cores 3 -- env TORUS_MC_COLORS=1 $B/coll-check --only multicolor 1 7 1000");
	check("--torus 2x2x2x2 --cores 4 -- env TORUS_MC_COLORS=2 $B/coll-check --only multicolor 1 7 1000");
	check("--torus 4x4x4 --cores 3 -- env TORUS_MC_COLORS=3 $B/coll-check --only multicolor 1 11");
}
static uint64_t bench_emulated_ps(const char *env)
{
	struct result r = run("%s $B/torusrun --quiet --torus 4x4x4 -- $B/torus-bench allreduce --algo multicolor "
			      "--sizes 1K --json",
			      env);
	CU_ASSERT_EQUAL(r.status, 0);
	const char *at = strstr(r.out, "\"emulated_ps\": ");
	uint64_t ps = at ? strtoull(at + 15, NULL, 10) : 0;
	CU_ASSERT(ps > 0);
	result_free(&r);
	return ps;
}
/* A bad TORUS_MC_COLORS or TORUS_MC_PLAN fails the call on every member,
 * and the job (no hang); so does a bad TORUS_CORE_PASS, naming it. */
static void test_colors_bad_env(void)
{
	struct result r = run("TORUS_MC_COLORS=0 $B/torusrun --quiet --timeout 60 --torus 2x2 -- $B/torus-bench allreduce "
			      "--algo multicolor --sizes 1K");
	CU_ASSERT_NOT_EQUAL(r.status, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "allreduce (multicolor) of 1024 bytes failed: Invalid argument"));
	result_free(&r);
	r = run("TORUS_MC_PLAN=yes $B/torusrun --quiet --timeout 60 --torus 2x2 -- $B/torus-bench allreduce "
		"--algo multicolor --sizes 1K");
	CU_ASSERT_NOT_EQUAL(r.status, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "allreduce (multicolor) of 1024 bytes failed: Invalid argument"));
	result_free(&r);
	r = run("TORUS_CORE_PASS=yes $B/torusrun --quiet --timeout 60 --torus 2x2 -- $B/torus-bench allreduce --sizes 1K");
	CU_ASSERT_NOT_EQUAL(r.status, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "TORUS_CORE_PASS=yes: 0 (engine thread only) or 1"));
	result_free(&r);
}
static void test_colors_short_vector(void)
{
	uint64_t chosen = bench_emulated_ps(""), every = bench_emulated_ps("TORUS_MC_COLORS=3");
	CU_ASSERT(chosen > 0 && chosen < every);
	if (!(chosen < every))
		fprintf(stderr, "\n1 KiB allreduce: default %llu ps, every color %llu ps\n", (unsigned long long)chosen,
			(unsigned long long)every);
}

/* Identical calls in a row keep multicolor's set-up (counters re-armed at
 * the end of a call, the result region moved to each call's buffer): new
 * inputs every round, buffers that come and go, and other calls in between
 * (coll-check --repeat); with one core, with a node team of three, and
 * under --exact; six teams in turn, which cannot all keep theirs (every
 * color: 19 counters each of a core's 64). A set-up kept without re-arming
 * its counters, or without moving its region, fails here, and so do kept
 * set-ups that take every counter. */
static void test_kept_setup(void)
{
	check("--torus 4x4x4 -- $B/coll-check --repeat 12 1000");
	check("--torus 4x4x4 -- env TORUS_MC_COLORS=3 $B/coll-check --repeat 4 1000");
	check("--torus 3x3x2 --cores 3 -- $B/coll-check --repeat 12 1000");
	check("--torus 2x3x2 --cores 2 -- $B/coll-check --repeat 8 300");
	check("--torus 3x2 -- env TORUS_MC_PLAN=0 $B/coll-check --repeat 6 1000");
}
static void light_kept_setup(void) { check("--torus 2x2x2 --cores 2 -- $B/coll-check --repeat 6 500"); }

static void test_team_too_large(void)
{
	/* 64 members need 65 counters for the ring: -ENOTSUP on every member
	 * (checked by coll-check), the other algorithms still run */
	struct result r = run("$B/torusrun --torus 4x4x4 --timeout 120 -- $B/coll-check 7");
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_PTR_NULL(strstr(r.err, "hung"));
	result_free(&r);
}

/* Arguments, if given: run only the suites they name (cunit_selected), so
 * that ctest runs the catalogue's two halves side by side (under TSan the
 * longest test: 110 s in one piece) */
int main(int argc, char **argv)
{
	if (job_util_init())
		return 2;
	static const struct cunit_case ring_a[] = {
		CUNIT_CASE(test_1d), CUNIT_CASE(test_2x2_two_cores), CUNIT_CASE(test_figure5_3x3x2_three_cores),
		CUNIT_CASE(test_uneven_cores),
		CUNIT_CASE(test_asymmetric_large_prime), CUNIT_CASE(test_team_too_large), CUNIT_CASE(test_prime_7)};
	static const struct cunit_case ring_b[] = {
		CUNIT_CASE(test_2x2x2_six_cores), CUNIT_CASE(test_4d_four_cores), CUNIT_CASE(test_prime_13), CUNIT_CASE(test_exact_13),
		CUNIT_CASE(test_uneven_2d), CUNIT_CASE(test_inplace_sweep), CUNIT_CASE(test_colors_forced),
		CUNIT_CASE(test_colors_short_vector), CUNIT_CASE(test_colors_bad_env), CUNIT_CASE(test_kept_setup)};
	/* the catalogue on 64 nodes: 92 and 73 s of wall time on the 2-CPU
	 * host, so the ctest entry coll-large (label stress) runs them */
	static const struct cunit_case large[] = {CUNIT_CASE(test_2x4x8), CUNIT_CASE(test_4x4x4_three_cores)};
	static const struct cunit_case links[] = {CUNIT_CASE(test_links_4x4x4), CUNIT_CASE(test_links_8x8_single_core),
						  CUNIT_CASE(test_links_2x2x2_six_cores)};
	/* under a sanitizer: 3x3x2 with 3 cores and 2x2x2 with 6 take about
	 * 40 s each there, one in each half */
	static const struct cunit_case light_a[] = {CUNIT_CASE(light_1d), CUNIT_CASE(light_figure5_three_cores),
						    CUNIT_CASE(light_uneven_cores), CUNIT_CASE(light_team_too_large)};
	static const struct cunit_case light_b[] = {CUNIT_CASE(light_2x2_two_cores), CUNIT_CASE(light_2x2x2_six_cores),
						    CUNIT_CASE(test_inplace_sweep), CUNIT_CASE(light_kept_setup), CUNIT_CASE(test_exact_13)};
	static const struct cunit_case light_links[] = {CUNIT_CASE(test_links_8x8_single_core),
							CUNIT_CASE(test_links_2x2x2_six_cores)};
	static const struct cunit_suite all[] = {{"coll.catalogue.a", ring_a, CUNIT_COUNT(ring_a)},
						 {"coll.catalogue.b", ring_b, CUNIT_COUNT(ring_b)},
						 {"coll.links", links, CUNIT_COUNT(links)},
						 {"coll.large", large, CUNIT_COUNT(large)}};
	static const struct cunit_suite sanitized[] = {{"coll.catalogue.a.light", light_a, CUNIT_COUNT(light_a)},
						       {"coll.catalogue.b.light", light_b, CUNIT_COUNT(light_b)},
						       {"coll.links.light", light_links, CUNIT_COUNT(light_links)}};
	int light = getenv("TORUS_TEST_LIGHT") != NULL;
	int rc = cunit_main_only(light ? sanitized : all, light ? CUNIT_COUNT(sanitized) : CUNIT_COUNT(all),
				 (const char *const *)argv + 1, argc > 1 ? (size_t)(argc - 1) : 0);
	job_util_cleanup();
	return rc;
}
