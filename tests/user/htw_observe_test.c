// SPDX-License-Identifier: GPL-2.0
/*
 * What htw shows of itself: its tracepoints, read through tracefs as
 * trace-cmd would (a known sequence of timers on /dev/htw, and each event
 * it must leave, with its fields; kernels without tracing, UML's, skip
 * that), the statistics of every wheel in debugfs, and a file's fdinfo.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/vfs.h>

#include <linux/magic.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define MS		NSEC_PER_MSEC
#define TRACEFS		"/sys/kernel/tracing"

/* The text after "@key=" in @line, up to a space, into @out. */
static bool field(const char *line, const char *key, char *out, size_t n)
{
	char pat[32];
	const char *p;
	size_t len;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(line, pat);
	if (!p)
		return false;
	p += strlen(pat);
	len = strcspn(p, "\n ");
	if (len >= n)
		return false;
	memcpy(out, p, len);
	out[len] = 0;
	return true;
}

static long long num(const char *line, const char *key)
{
	char v[32];

	return field(line, key, v, sizeof(v)) ? strtoll(v, NULL, 0) : -2;
}

/* The first line of event @event whose @key is @value, or NULL. */
static const char *find(char **lines, int n, const char *event,
			const char *key, long long value)
{
	char tag[64];
	int i;

	snprintf(tag, sizeof(tag), " %s: ", event);
	for (i = 0; i < n; i++)
		if (strstr(lines[i], tag) && num(lines[i], key) == value)
			return lines[i];
	return NULL;
}

FIXTURE(trace) {
	char *buf;
	char **lines;
	int nr_lines;
};

FIXTURE_SETUP(trace)
{
	if (access(TRACEFS "/events", F_OK))
		mount("tracefs", TRACEFS, "tracefs", 0, NULL);
	if (access(TRACEFS "/events", F_OK))
		SKIP(return, "no tracefs (a kernel without tracing)");
	/* With tracing, htw's events must be there. */
	ASSERT_EQ(0, access(TRACEFS "/events/htw/enable", F_OK));
	ASSERT_EQ(0, htw_write_file(TRACEFS "/tracing_on", "0"));
	ASSERT_EQ(0, htw_write_file(TRACEFS "/trace", ""));
	ASSERT_EQ(0, htw_write_file(TRACEFS "/events/htw/enable", "1"));
	ASSERT_EQ(0, htw_write_file(TRACEFS "/tracing_on", "1"));
}

FIXTURE_TEARDOWN(trace)
{
	htw_write_file(TRACEFS "/events/htw/enable", "0");
	free(self->lines);
	free(self->buf);
}

/* The whole of a file, or NULL. */
static char *slurp(const char *path)
{
	size_t size = 0, cap = 1 << 16, r;
	char *buf = malloc(cap + 1), *grown;
	FILE *f = fopen(path, "re");

	if (!f || !buf) {
		if (f)
			fclose(f);
		free(buf);
		return NULL;
	}
	while ((r = fread(buf + size, 1, cap - size, f)) > 0) {
		size += r;
		if (size < cap)
			continue;
		cap *= 2;
		grown = realloc(buf, cap + 1);
		if (!grown)
			break;
		buf = grown;
	}
	fclose(f);
	buf[size] = 0;
	return buf;
}

/*
 * Stop tracing and split what was traced into *@lines, in a buffer *@buf;
 * return the number of lines, or -1.
 */
static int collect(char **buf, char ***lines)
{
	size_t size;
	int n = 0;
	char *p;

	if (htw_write_file(TRACEFS "/tracing_on", "0"))
		return -1;
	*buf = slurp(TRACEFS "/trace");
	if (!*buf)
		return -1;
	size = strlen(*buf);
	*lines = calloc(size / 16 + 1, sizeof(char *));
	if (!*lines)
		return -1;
	for (p = strtok(*buf, "\n"); p; p = strtok(NULL, "\n"))
		(*lines)[n++] = p;
	return n;
}

/* The expiry of the next event of @fd, or 0 if none comes. */
static __u64 next_expiry(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct htw_event ev;

	if (poll(&pfd, 1, HTW_WAIT_MS) != 1 || htw_read_events(fd, &ev, 1) != 1)
		return 0;
	return ev.expires;
}

/*
 * One timer fires within level 0's span (wheel_size ticks), one is
 * cancelled, one is far enough to start on level 1 and move down: their
 * arm, cancel, cascade, callback entry and exit events, and the expiry
 * runs.  The two that fire are relative, each the first timer of a file
 * of its own, so that each is placed by its distance from the present,
 * however long the host held the test before the arm; their expiries come
 * back in their events.  (The wheel brings its clock up to the coarse
 * clock, which may lag the present by a jiffy or two: A is one tick away,
 * far inside level 0.)
 */
TEST_F(trace, events_of_a_known_sequence)
{
	const char *arm_a, *arm_c, *line;
	char timer[32], wheel[32], tag[64];
	__u64 a, b, c, span;
	struct htw_info info;
	int fa, fc, i;
	long id_b;

	fa = htw_open(O_CLOEXEC);
	fc = htw_open(O_CLOEXEC);
	ASSERT_LE(0, fa);
	ASSERT_LE(0, fc);
	ASSERT_EQ(0, htw_get_info(fa, &info));
	span = info.tick_ns * info.wheel_size;
	ASSERT_LT(0, htw_arm_id(fa, 0, info.tick_ns, 0, 1));
	b = htw_now(CLOCK_MONOTONIC) + 100 * span;
	id_b = htw_arm_id(fa, HTW_TIMER_ABSTIME, b, 0, 2);
	ASSERT_LT(0, id_b);
	ASSERT_EQ(0, htw_cancel(fa, id_b));
	ASSERT_LT(0, htw_arm_id(fc, 0, 4 * span, 0, 3));
	a = next_expiry(fa);
	c = next_expiry(fc);
	ASSERT_NE(0, a);
	ASSERT_NE(0, c);
	close(fa);
	close(fc);
	self->nr_lines = collect(&self->buf, &self->lines);
	ASSERT_LE(0, self->nr_lines);
	TH_LOG("%d lines traced", self->nr_lines);

	arm_a = find(self->lines, self->nr_lines, "htw_timer_arm", "expires", a);
	ASSERT_NE(NULL, arm_a) TH_LOG("no htw_timer_arm of expires=%llu", a);
	EXPECT_EQ(0, num(arm_a, "period"));
	EXPECT_EQ(0, num(arm_a, "level"));
	ASSERT_TRUE(field(arm_a, "timer", timer, sizeof(timer)));
	ASSERT_TRUE(field(arm_a, "wheel", wheel, sizeof(wheel)));
	EXPECT_NE(NULL, strstr(arm_a, "function=htw_utimer_fn"));

	EXPECT_NE(NULL, find(self->lines, self->nr_lines, "htw_timer_arm",
			     "expires", b));
	EXPECT_NE(NULL, find(self->lines, self->nr_lines, "htw_timer_cancel",
			     "expires", b));
	arm_c = find(self->lines, self->nr_lines, "htw_timer_arm", "expires", c);
	ASSERT_NE(NULL, arm_c);
	EXPECT_EQ(1, num(arm_c, "level"));
	line = find(self->lines, self->nr_lines, "htw_timer_cascade", "expires", c);
	ASSERT_NE(NULL, line) TH_LOG("no htw_timer_cascade of expires=%llu", c);
	EXPECT_NE(NULL, strstr(line, "level 1 -> "));

	/* A's callback: entry with its expiry, then exit, then a run. */
	line = find(self->lines, self->nr_lines, "htw_timer_expire_entry",
		    "expired", a);
	ASSERT_NE(NULL, line);
	EXPECT_EQ(1, num(line, "count"));
	EXPECT_LE((long long)a, num(line, "now"));
	EXPECT_NE(NULL, find(self->lines, self->nr_lines,
			     "htw_timer_expire_entry", "expired", c));
	snprintf(tag, sizeof(tag), "htw_timer_expire_exit: timer=%s", timer);
	for (i = 0; i < self->nr_lines && self->lines[i] != line; i++)
		;
	for (; i < self->nr_lines && !strstr(self->lines[i], tag); i++)
		;
	EXPECT_LT(i, self->nr_lines) TH_LOG("no %s after the entry", tag);
	snprintf(tag, sizeof(tag), "htw_run: wheel=%s", wheel);
	for (; i < self->nr_lines && !strstr(self->lines[i], tag); i++)
		;
	ASSERT_LT(i, self->nr_lines) TH_LOG("no %s after the callback", tag);
	EXPECT_LE(1, num(self->lines[i], "ran"));
}

/*
 * debugfs lists every wheel with its statistics: a file's wheel with 777
 * far timers and 3 callbacks run shows them, and its callbacks by lateness.
 */
TEST(debugfs_shows_each_wheel)
{
	struct pollfd pfd = { .events = POLLIN };
	char *text, *p, *end;
	unsigned long long late, sum = 0;
	struct htw_event ev;
	struct statfs sfs;
	int i, got = 0, n;

	if (access("/sys/kernel/debug/htw", F_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	if (statfs("/sys/kernel/debug", &sfs) || sfs.f_type != DEBUGFS_MAGIC)
		SKIP(return, "no debugfs");
	/* With debugfs, htw's file must be there. */
	ASSERT_EQ(0, access("/sys/kernel/debug/htw/wheels", R_OK));
	pfd.fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, pfd.fd);
	for (i = 0; i < 777; i++)
		ASSERT_LT(0, htw_arm_id(pfd.fd, 0, 3600 * NSEC_PER_SEC, 0, 0));
	for (i = 0; i < 3; i++)
		ASSERT_LT(0, htw_arm_id(pfd.fd, 0, MS, 0, 1));
	while (got < 3) {
		ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
		ASSERT_EQ(1, htw_read_events(pfd.fd, &ev, 1));
		got++;
	}

	text = slurp("/sys/kernel/debug/htw/wheels");
	close(pfd.fd);
	ASSERT_NE(NULL, text);
	p = strstr(text, "  pending 777 due 0 ");
	ASSERT_NE(NULL, p) TH_LOG("no wheel with 777 timers in:\n%s", text);
	end = strstr(p, "\nwheel ");
	if (end)
		*end = 0;
	EXPECT_NE(NULL, strstr(p, " callbacks 3 ")) TH_LOG("%s", p);
	p = strstr(p, "late_ticks_log2");
	ASSERT_NE(NULL, p);
	p += strlen("late_ticks_log2");
	while (sscanf(p, " %llu%n", &late, &n) == 1) {
		sum += late;
		p += n;
	}
	EXPECT_EQ(3, sum);
	free(text);
}

/* fdinfo: the file's timers and events, and the limits they count against. */
TEST(fdinfo_shows_counts_and_limits)
{
	char path[64], *text;
	struct htw_info info;
	int fd = htw_open(O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_LT(0, htw_arm_id(fd, 0, 3600 * NSEC_PER_SEC, 0, 0));
	ASSERT_EQ(0, htw_get_info(fd, &info));
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	text = slurp(path);
	ASSERT_NE(NULL, text);
	snprintf(path, sizeof(path), "max_timers:\t%u\n", info.max_timers);
	EXPECT_NE(NULL, strstr(text, path)) TH_LOG("%s", text);
	snprintf(path, sizeof(path), "user_bytes:\t%llu\n",
		 (unsigned long long)info.user_bytes);
	EXPECT_NE(NULL, strstr(text, path)) TH_LOG("%s", text);
	snprintf(path, sizeof(path), "max_user_bytes:\t%llu\n",
		 (unsigned long long)info.max_user_bytes);
	EXPECT_NE(NULL, strstr(text, path)) TH_LOG("%s", text);
	snprintf(path, sizeof(path), "user_timers:\t%u\n", info.user_timers);
	EXPECT_NE(NULL, strstr(text, path)) TH_LOG("%s", text);
	snprintf(path, sizeof(path), "max_user_timers:\t%u\n",
		 info.max_user_timers);
	EXPECT_NE(NULL, strstr(text, path)) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "timers:\t1\nqueued:\t0\n"));
	free(text);
	close(fd);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
