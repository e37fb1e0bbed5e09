/*
 * The coll layer's suite: every algorithm of every collective's catalogue x
 * datatype x operation x count (1, a prime, 1000), on the whole job and on
 * a team of one core per node, over shapes from 1-D to 4-D with even and
 * uneven cores, against a sequential reference (coll-check).
 */
#include "cunit_main.h"
#include "job_util.h"

static void check(const char *opts)
{
	struct result r = run("$B/torusrun %s --timeout 120 -- $B/coll-check 1 7 1000", opts);
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "all results match the reference"));
	if (r.status)
		fprintf(stderr, "\n[%s]\n%.3000s\n", opts, r.err);
	result_free(&r);
}

static void test_ring_1d(void) { check("--torus 5"); }
static void test_ring_2x2_two_cores(void) { check("--torus 2x2 --cores 2"); }
static void test_ring_figure5_3x3x2(void) { check("--torus 3x3x2"); }
static void test_ring_4d(void) { check("--torus 2x2x2x2"); }
static void test_ring_uneven_cores(void) { check("--torus 3 --cores-map 1,3,2"); }
static void test_ring_2x4x8(void) { check("--torus 2x4x8 --param dma_counters=128"); }

static void test_team_too_large(void)
{
	/* 64 members need 65 counters for the ring: -ENOTSUP on every member
	 * (checked by coll-check), the other algorithms still run */
	struct result r = run("$B/torusrun --torus 4x4x4 --timeout 60 -- $B/coll-check 7");
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_PTR_NULL(strstr(r.err, "hung"));
	result_free(&r);
}

int main(void)
{
	if (job_util_init())
		return 2;
	static const struct cunit_case ring[] = {
		CUNIT_CASE(test_ring_1d), CUNIT_CASE(test_ring_2x2_two_cores), CUNIT_CASE(test_ring_figure5_3x3x2),
		CUNIT_CASE(test_ring_4d), CUNIT_CASE(test_ring_uneven_cores), CUNIT_CASE(test_ring_2x4x8),
		CUNIT_CASE(test_team_too_large)};
	static const struct cunit_suite all[] = {{"coll.ring", ring, CUNIT_COUNT(ring)}};
	int rc = cunit_main(all, CUNIT_COUNT(all));
	job_util_cleanup();
	return rc;
}
