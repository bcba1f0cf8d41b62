// SPDX-License-Identifier: GPL-2.0
/*
 * tools/htw_server.c, small: a TCP server over loopback whose timers run
 * on each way in turn (htw, libevent, io_uring, timerfd, and none), with
 * 1,000 connections and a load of a second (2,000 requests), judged.
 * Each run must show every connection closed for idleness and none early,
 * every stalled request's timeout fired and no other, none reported after
 * its answer, and the load generator's counts equal to the server's.
 *
 * The program judges all that itself and exits 1 if anything is wrong; the
 * test checks its verdict line key by key as well, so that a run that did
 * not reach its case (no requests, no stalls, no idle close) fails too.
 * It exits 4 (skip) where the kernel has no IPv4 (UML) or no io_uring.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define CONNS	1000

/* The value of " @key=" in @line, or -1 if it has none. */
static long long field(const char *line, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(line, pat);
	return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static void run_way(struct __test_metadata *_metadata, const char *way)
{
	char cmd[128], line[2048], server[2048] = "";
	int status;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "htw_server --way %s --conns %d --seconds 1 --idle-ms 2000 --timeout-ms 200 2>&1",
		 way, CONNS);
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	while (fgets(line, sizeof(line), p)) {
		TH_LOG("%s", line);
		if (!strncmp(line, "server ", 7))
			snprintf(server, sizeof(server), "%s", line);
	}
	status = pclose(p);
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == KSFT_SKIP)
		SKIP(return, "htw_server cannot run this way here (see its output)");
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_NE(0, server[0]) TH_LOG("no server line");

	/* The run reached its case: requests, and (but for none) stalls. */
	EXPECT_LT(500, field(server, "requests"));
	EXPECT_EQ(field(server, "requests"), field(server, "gen_sent"));
	EXPECT_EQ(field(server, "answered"), field(server, "gen_ok"));
	EXPECT_EQ(0, field(server, "gen_wrong"));
	EXPECT_EQ(0, field(server, "gen_left_open"));
	EXPECT_EQ(0, field(server, "gen_in_flight_closed"));
	/* The load reached every connection before its idle deadline. */
	EXPECT_EQ(0, field(server, "gen_starved"));
	if (!strcmp(way, "none")) {
		EXPECT_EQ(CONNS, field(server, "peer_closed"));
		EXPECT_EQ(0, field(server, "timed_out"));
		return;
	}
	/* Every stalled request timed out, and no other. */
	EXPECT_LT(0, field(server, "gen_stalls"));
	EXPECT_EQ(field(server, "gen_stalls"), field(server, "timed_out"));
	EXPECT_EQ(field(server, "gen_stalls"), field(server, "gen_timeouts"));
	EXPECT_EQ(0, field(server, "after_answer"));
	/* Every connection closed for idleness, none early, on both sides. */
	EXPECT_EQ(CONNS, field(server, "idle_closed"));
	EXPECT_EQ(CONNS, field(server, "gen_closed"));
	EXPECT_EQ(0, field(server, "early"));
	EXPECT_EQ(0, field(server, "gen_early"));
	/* Late only as a loaded emulator makes anything late. */
	EXPECT_GE(HTW_SLACK_NS / 1000, field(server, "idle_late_max_us"));
	EXPECT_GE(HTW_SLACK_NS / 1000, field(server, "req_late_max_us"));
	EXPECT_NE(NULL, strstr(server, " verdict=ok"));
}

TEST(server_on_htw)
{
	run_way(_metadata, "htw");
}

TEST(server_on_libevent)
{
	run_way(_metadata, "libevent");
}

TEST(server_on_io_uring)
{
	run_way(_metadata, "io_uring");
}

TEST(server_on_timerfd)
{
	run_way(_metadata, "timerfd");
}

TEST(server_without_timers)
{
	run_way(_metadata, "none");
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
