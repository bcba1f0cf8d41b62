// SPDX-License-Identifier: GPL-2.0
/*
 * The benchmarks' smoke runs: "make bench" is never part of "make check",
 * so its programs run here once, on a hundred timers a measure, to prove
 * they still work and still say what they measured.
 */
#include <stdio.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "htw_user.h"

/* Measures that count what must never happen: their htw figure is 0. */
static const char * const must_be_zero[] = {
	"ring_early", "ring_lost", "ring_duplicates",
};

/* A "bench user <measure> <htw> ..." line of a must-be-zero measure, not 0. */
static bool counts_a_failure(const char *line)
{
	unsigned int i;
	size_t len;

	for (i = 0; i < ARRAY_SIZE(must_be_zero); i++) {
		len = strlen(must_be_zero[i]);
		if (!strncmp(line + 11, must_be_zero[i], len) &&
		    line[11 + len] == ' ')
			return strtod(line + 12 + len, NULL) != 0;
	}
	return false;
}

/*
 * Run @cmd, and expect a "bench user <measure> ..." line of each of
 * @measures: with figures, or "skipped" (htw_ringbench, where the kernel
 * has no io_uring); and none that counts an early, lost or doubled event.
 */
static void smoke_run(struct __test_metadata *_metadata, const char *cmd,
		      const char * const *measures, unsigned int nr)
{
	char line[256], seen[32] = {};
	unsigned int i;
	FILE *p;

	ASSERT_GE(ARRAY_SIZE(seen), nr);
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	while (fgets(line, sizeof(line), p)) {
		TH_LOG("%s", line);
		if (!strncmp(line, "bench user ", 11))
			EXPECT_FALSE(counts_a_failure(line)) TH_LOG("%s", line);
		for (i = 0; i < nr; i++)
			if (!strncmp(line, "bench user ", 11) &&
			    !strncmp(line + 11, measures[i], strlen(measures[i])) &&
			    line[11 + strlen(measures[i])] == ' ')
				seen[i] = 1;
	}
	ASSERT_EQ(0, pclose(p));
	for (i = 0; i < nr; i++) {
		if (!seen[i])
			fprintf(stderr, "# no line for %s\n", measures[i]);
		EXPECT_TRUE(seen[i]);
	}
}

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

	smoke_run(_metadata, "htw_bench --smoke", measures,
		  ARRAY_SIZE(measures));
}

/* The benchmark of ring timers, at 100 and 1,000 timers (its --smoke). */
TEST(ringbench_smoke_run_reports_every_measure)
{
	static const char * const measures[] = {
		"extend_timerfd_1000", "extend_ioctl_1000",
		"extend_batch_1000", "extend_ring_1000",
		"extend_libevent_heap_1000", "extend_libevent_common_1000",
		"extend_io_uring_1000", "extend_ring_vs_libevent_common_1000",
		"arm_cancel_ring", "arm_cancel_ring_vs_libevent",
		"arm_cancel_io_uring_100", "arm_cancel_io_uring_1000",
		"ring_expiries_over_100ms_epoll", "ring_early", "ring_lost",
		"ring_duplicates", "ring_kernel_memory_per_timer",
	};

	smoke_run(_metadata, "htw_ringbench --smoke", measures,
		  ARRAY_SIZE(measures));
}

/*
 * Request timeouts, libhtw's against htw's own and the anchors, at 100 and
 * 1,000 in flight (its --smoke); it exits 1 if an expiry of htw's came
 * early, was lost, or came after its stop.
 */
TEST(purgatory_smoke_run_reports_every_measure)
{
	static const char * const measures[] = {
		"purgatory_cpu_vs_heap_100", "purgatory_cpu_vs_common_100",
		"purgatory_cpu_vs_io_uring_100", "purgatory_cpu_vs_ring_100",
		"purgatory_cpu_vs_heap_1000", "purgatory_cpu_vs_common_1000",
		"purgatory_cpu_vs_io_uring_1000", "purgatory_cpu_vs_ring_1000",
		"purgatory_net_cpu_vs_heap_100", "purgatory_net_cpu_vs_ring_100",
		"purgatory_net_cpu_vs_heap_1000",
		"purgatory_net_cpu_vs_ring_1000",
	};

	smoke_run(_metadata, "htw_purgatory --smoke", measures,
		  ARRAY_SIZE(measures));
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
