/* torus-bench tests: being written */
#include "cunit_main.h"
#include "job_util.h"
static void test_placeholder(void) { CU_ASSERT_TRUE(0); }
int main(void)
{
	if (job_util_init())
		return 2;
	static const struct cunit_case c[] = {CUNIT_CASE(test_placeholder)};
	static const struct cunit_suite all[] = {{"bench", c, CUNIT_COUNT(c)}};
	int rc = cunit_main(all, CUNIT_COUNT(all));
	job_util_cleanup();
	return rc;
}
