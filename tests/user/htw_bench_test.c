// SPDX-License-Identifier: GPL-2.0
/*
 * The benchmark's smoke run: "make bench" is never part of "make check",
 * so its program runs here once, on a hundred timers a measure, to prove it
 * still works and still says what it measured.
 */
#include <stdio.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "htw_user.h"

TEST(bench_smoke_run_reports_every_measure)
{
	static const char * const measures[] = {
		"arm_cancel_ioctl", "arm_cancel_batch",
		"arm_cancel_two_files_vs_one", "expiries_over_1s_epoll",
		"expiries_over_100ms_epoll",
		"expiry_lateness_p99", "kernel_memory_per_timer",
		"close_with_timers", "close_with_10x_timers",
		"close_with_100x_timers",
	};
	char line[256], seen[ARRAY_SIZE(measures)] = {};
	unsigned int i;
	FILE *p;

	p = popen("htw_bench --smoke", "r");
	ASSERT_NE(NULL, p);
	while (fgets(line, sizeof(line), p)) {
		TH_LOG("%s", line);
		for (i = 0; i < ARRAY_SIZE(measures); i++)
			if (!strncmp(line, "bench user ", 11) &&
			    !strncmp(line + 11, measures[i], strlen(measures[i])) &&
			    line[11 + strlen(measures[i])] == ' ')
				seen[i] = 1;
	}
	ASSERT_EQ(0, pclose(p));
	for (i = 0; i < ARRAY_SIZE(measures); i++) {
		if (!seen[i])
			fprintf(stderr, "# no line for %s\n", measures[i]);
		EXPECT_TRUE(seen[i]);
	}
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
