// SPDX-License-Identifier: GPL-2.0
/*
 * Deliberate failures, to prove that the test rig reports them.
 *
 * Never part of a normal build: Kbuild adds this file to htw_kunit.ko only
 * when HTW_INJECT=kunit (a failing case) or HTW_INJECT=warn (a case that
 * passes but WARNs) is given, and "make check" asserts that each of them
 * turns its run red.
 */

#include <kunit/test.h>
#include <linux/bug.h>

#ifdef HTW_INJECT_KUNIT
static void htw_inject_case_fails(struct kunit *test)
{
	KUNIT_FAIL(test, "deliberate failure (HTW_INJECT=kunit)");
}
#endif

#ifdef HTW_INJECT_WARN
/* The case itself passes: only the kernel log shows what went wrong. */
static void htw_inject_kernel_warns(struct kunit *test)
{
	WARN(1, "htw: deliberate warning (HTW_INJECT=warn)\n");
}
#endif

static struct kunit_case htw_inject_test_cases[] = {
#ifdef HTW_INJECT_KUNIT
	KUNIT_CASE(htw_inject_case_fails),
#endif
#ifdef HTW_INJECT_WARN
	KUNIT_CASE(htw_inject_kernel_warns),
#endif
	{}
};

static struct kunit_suite htw_inject_test_suite = {
	.name = "htw_inject",
	.test_cases = htw_inject_test_cases,
};

kunit_test_suite(htw_inject_test_suite);
