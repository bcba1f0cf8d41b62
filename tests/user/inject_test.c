// SPDX-License-Identifier: GPL-2.0
/*
 * A deliberately failing user-space test, to prove that the test rig
 * reports failures.  Built only with HTW_INJECT=user; "make check" asserts
 * that it turns its run red.
 */
#include "kselftest_harness.h"

TEST(deliberate_failure)
{
	EXPECT_EQ(0, 1) TH_LOG("HTW_INJECT=user");
}

TEST_HARNESS_MAIN
