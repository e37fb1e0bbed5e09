/* Shared CUnit runner: each suite file lists its tests in a table of
 * struct cunit_case and calls cunit_main() from main(). Exits non-zero if
 * anything failed. */
#ifndef CUNIT_MAIN_H
#define CUNIT_MAIN_H

#include <CUnit/Basic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>

struct cunit_case {
	const char *name;
	CU_TestFunc fn;
};

struct cunit_suite {
	const char *name;
	const struct cunit_case *cases;
	size_t ncases;
};

/* Does suite `name` answer to `want`? A name answers to itself and to each
 * of its dotted prefixes: "coll.links" selects "coll.links" and
 * "coll.links.light". */
static inline bool cunit_selected(const char *name, const char *want)
{
	size_t n = strlen(want);
	return !strncmp(name, want, n) && (name[n] == '\0' || name[n] == '.');
}

/* Run the suites that answer to one of the nwant names in want (none: all
 * of them); 2 if a name selects nothing, so that a misspelt ctest entry
 * fails instead of passing empty. */
static inline int cunit_main_only(const struct cunit_suite *suites, size_t nsuites, const char *const *want,
				  size_t nwant)
{
	for (size_t w = 0; w < nwant; w++) {
		size_t hits = 0;
		for (size_t s = 0; s < nsuites; s++)
			hits += cunit_selected(suites[s].name, want[w]);
		if (!hits) {
			fprintf(stderr, "no suite answers to \"%s\"\n", want[w]);
			return 2;
		}
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	for (size_t s = 0; s < nsuites; s++) {
		int picked = !nwant;
		for (size_t w = 0; w < nwant && !picked; w++)
			picked = cunit_selected(suites[s].name, want[w]);
		if (!picked)
			continue;
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

static inline int cunit_main(const struct cunit_suite *suites, size_t nsuites)
{
	return cunit_main_only(suites, nsuites, NULL, 0);
}

/*
 * expect(): one CUnit assertion with a formatted message. Passes are counted;
 * failures are recorded with their message, at most MAX_SHOWN per test so a
 * systematic bug does not bury the report (the test fails either way).
 */
#define MAX_SHOWN 25u
static CU_pTest shown_test __attribute__((unused));
static unsigned shown __attribute__((unused));

static inline bool expect_at(bool ok, const char *file, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static inline bool expect_at(bool ok, const char *file, unsigned line, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	if (ok) {
		CU_assertImplementation(CU_TRUE, line, "", file, "", CU_FALSE);
		return true;
	}
	if (CU_get_current_test() != shown_test) {
		shown_test = CU_get_current_test();
		shown = 0;
	}
	if (shown++ >= MAX_SHOWN)
		return false;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	CU_assertImplementation(CU_FALSE, line, msg, file, "", CU_FALSE);
	return false;
}
#define EXPECT(cond, ...) expect_at((cond), __FILE__, __LINE__, __VA_ARGS__)

#define CUNIT_CASE(fn) {#fn, fn}
#define CUNIT_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#endif
