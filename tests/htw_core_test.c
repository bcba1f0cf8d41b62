// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for the wheel of htw_core.c
 */

#include <kunit/test.h>
#include <linux/bits.h>
#include <linux/log2.h>
#include <linux/module.h>

#include "../htw_core.h"

/* A level's occupancy map is one u64, so a level may hold 64 buckets. */
static void htw_core_size_max_fits_bitmap(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, is_power_of_2(HTW_WHEEL_SIZE_MAX));
	KUNIT_EXPECT_LE(test, HTW_WHEEL_SIZE_MAX, BITS_PER_TYPE(u64));
}

static struct kunit_case htw_core_test_cases[] = {
	KUNIT_CASE(htw_core_size_max_fits_bitmap),
	{}
};

static struct kunit_suite htw_core_test_suite = {
	.name = "htw_core",
	.test_cases = htw_core_test_cases,
};

kunit_test_suite(htw_core_test_suite);

MODULE_DESCRIPTION("KUnit tests for the htw timing wheel");
MODULE_LICENSE("GPL");
