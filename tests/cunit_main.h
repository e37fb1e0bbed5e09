/* Shared CUnit runner: each suite file lists its tests in a table of
 * struct cunit_case and calls cunit_main() from main(). Exits non-zero if
 * anything failed. */
#ifndef CUNIT_MAIN_H
#define CUNIT_MAIN_H

#include <CUnit/Basic.h>
#include <stddef.h>

struct cunit_case {
	const char *name;
	CU_TestFunc fn;
};

struct cunit_suite {
	const char *name;
	const struct cunit_case *cases;
	size_t ncases;
};

static inline int cunit_main(const struct cunit_suite *suites, size_t nsuites)
{
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	for (size_t s = 0; s < nsuites; s++) {
		CU_pSuite suite = CU_add_suite(suites[s].name, NULL, NULL);
		if (!suite) {
			CU_cleanup_registry();
			return 2;
		}
		for (size_t c = 0; c < suites[s].ncases; c++) {
			if (!CU_add_test(suite, suites[s].cases[c].name, suites[s].cases[c].fn)) {
				CU_cleanup_registry();
				return 2;
			}
		}
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}

#define CUNIT_CASE(fn) {#fn, fn}
#define CUNIT_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#endif
