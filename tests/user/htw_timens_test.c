// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/htw in a time namespace (CLONE_NEWTIME), beside timerfd.
 *
 * The test moves its children into a namespace whose CLOCK_MONOTONIC and
 * CLOCK_BOOTTIME run a day ahead of the kernel's.  There, an absolute
 * expiry is a time as clock_gettime() reads it in the namespace, and the
 * times of the events are the namespace's too, for a file opened there; a
 * file opened outside keeps reporting the kernel's times, whoever reads it.
 *
 * Kernels without time namespaces (UML's) skip it.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define MS		NSEC_PER_MSEC
#define DAY		(86400 * NSEC_PER_SEC)
#define DUE		(50 * MS)

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME	0x00000080
#endif

/* In a child: report a failed check on stderr and exit with its line. */
#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
		_exit(__LINE__ & 0xff ?: 1);				\
	}								\
} while (0)

/*
 * Enter a new time namespace a day ahead; false if the kernel has none (or
 * with errno EPERM: the test may not make one).
 */
static bool enter_timens(void)
{
	static const char offsets[] = "monotonic 86400 0\nboottime 86400 0\n";
	int fd;
	bool ok;

	if (unshare(CLONE_NEWTIME))
		return false;
	fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ok = write(fd, offsets, strlen(offsets)) == (ssize_t)strlen(offsets);
	close(fd);
	return ok;
}

/* Wait for one event of @fd, at most @ms. */
static bool wait_event(int fd, struct htw_event *ev, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1 && htw_read_events(fd, ev, 1) == 1;
}

/* An absolute timerfd on @clock at @expires; whether it fires within @ms. */
static bool timerfd_fires(clockid_t clock, __u64 expires, int ms)
{
	struct itimerspec its = {
		.it_value = { .tv_sec = expires / NSEC_PER_SEC,
			      .tv_nsec = expires % NSEC_PER_SEC },
	};
	struct pollfd pfd = { .events = POLLIN };
	bool fired;

	pfd.fd = timerfd_create(clock, TFD_CLOEXEC);
	if (pfd.fd < 0)
		return false;
	fired = !timerfd_settime(pfd.fd, TFD_TIMER_ABSTIME, &its, NULL) &&
		poll(&pfd, 1, ms) == 1;
	close(pfd.fd);
	return fired;
}

/* Checks run in the namespace; @host_fd was opened outside it. */
static void in_namespace(int host_fd)
{
	static const struct { clockid_t clock; __u32 flags; } clocks[] = {
		{ CLOCK_MONOTONIC, 0 },
		{ CLOCK_BOOTTIME, HTW_TIMER_BOOTTIME },
	};
	struct htw_event ev;
	__u64 now, t;
	unsigned int c;
	int fd;

	/* The namespace is a day ahead of the kernel, as the test set it. */
	CHECK(htw_now(CLOCK_MONOTONIC) > DAY);
	fd = htw_open(O_CLOEXEC);
	CHECK(fd >= 0);
	for (c = 0; c < 2; c++) {
		clockid_t clock = clocks[c].clock;
		__u32 abs = clocks[c].flags | HTW_TIMER_ABSTIME;

		/* Absolute, as clock_gettime() reads it here: on time. */
		t = htw_now(clock) + DUE;
		CHECK(htw_arm_id(fd, abs, t, 0, 1) > 0);
		CHECK(timerfd_fires(clock, t, HTW_WAIT_MS));
		CHECK(wait_event(fd, &ev, HTW_WAIT_MS));
		CHECK(ev.user_data == 1 && ev.expires == t);
		now = htw_now(clock);
		CHECK(ev.fired >= t && ev.fired <= now);

		/* In the past: at once. */
		t = htw_now(clock) - NSEC_PER_SEC;
		CHECK(htw_arm_id(fd, abs, t, 0, 2) > 0);
		CHECK(wait_event(fd, &ev, HTW_WAIT_MS));
		CHECK(ev.user_data == 2 && ev.expires == t);

		/* Relative: from the present, reported in the namespace. */
		t = htw_now(clock);
		CHECK(htw_arm_id(fd, clocks[c].flags, DUE, 0, 3) > 0);
		CHECK(wait_event(fd, &ev, HTW_WAIT_MS));
		now = htw_now(clock);
		CHECK(ev.user_data == 3 && ev.expires >= t + DUE);
		CHECK(ev.fired >= ev.expires && ev.fired <= now);

		/* Periodic: the counted expiries are on the namespace's grid. */
		t = htw_now(clock) + DUE;
		CHECK(htw_arm_id(fd, abs, t, 10 * MS, 4) > 0);
		CHECK(wait_event(fd, &ev, HTW_WAIT_MS));
		CHECK(ev.user_data == 4 && (ev.expires - t) % (10 * MS) == 0);
		CHECK(ev.fired >= ev.expires && ev.fired <= htw_now(clock));
		CHECK(!htw_cancel(fd, ev.id));

		/*
		 * A file opened outside: armed from here, in this namespace's
		 * time; its events in the kernel's time, the opener's.
		 */
		t = htw_now(clock) + DUE;
		CHECK(htw_arm_id(host_fd, abs, t, 0, 5) > 0);
		CHECK(wait_event(host_fd, &ev, HTW_WAIT_MS));
		CHECK(ev.user_data == 5 && ev.expires == t - DAY);
	}
	close(fd);
	_exit(0);
}

TEST(times_are_the_time_namespace_s)
{
	int host_fd, status;
	pid_t pid;

	host_fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, host_fd);
	if (!enter_timens())
		SKIP(return, "no time namespace: %s", strerror(errno));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		in_namespace(host_fd);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("the check at line %d (mod 256) failed", WEXITSTATUS(status));
	close(host_fd);
}

/*
 * A file opened in the namespace and taken out of it (pidfd_getfd(), which
 * needs no socket): the process outside reads the namespace's times, those
 * of the file's opener.
 */
TEST(a_file_speaks_its_opener_s_time)
{
	struct htw_event ev;
	int pipefd[2], status, fd, child_fd, pidfd;
	__u64 t;
	pid_t pid;

	if (!enter_timens())
		SKIP(return, "no time namespace: %s", strerror(errno));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		fd = htw_open(O_CLOEXEC);
		t = htw_now(CLOCK_MONOTONIC) + DUE;
		CHECK(fd >= 0 && htw_arm_id(fd, HTW_TIMER_ABSTIME, t, 0, 6) > 0);
		CHECK(write(pipefd[1], &t, sizeof(t)) == sizeof(t));
		CHECK(write(pipefd[1], &fd, sizeof(fd)) == sizeof(fd));
		/* Keep the file until the parent has its own. */
		pause();
		_exit(0);
	}
	/* A child that fails a check leaves the read an end of file. */
	close(pipefd[1]);
	ASSERT_EQ(sizeof(t), read(pipefd[0], &t, sizeof(t)));
	ASSERT_EQ(sizeof(child_fd), read(pipefd[0], &child_fd, sizeof(child_fd)));
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	ASSERT_LE(0, pidfd);
	fd = syscall(SYS_pidfd_getfd, pidfd, child_fd, 0);
	ASSERT_LE(0, fd) TH_LOG("pidfd_getfd: %s", strerror(errno));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	close(pidfd);
	ASSERT_TRUE(wait_event(fd, &ev, HTW_WAIT_MS));
	/* The child's time, a day ahead of this process's clock. */
	EXPECT_EQ(t, ev.expires);
	EXPECT_LT(htw_now(CLOCK_MONOTONIC) + DAY / 2, ev.expires);
	close(fd);
	close(pipefd[0]);
}

/* In the namespace: ring timers speak its time, stored words included. */
static void ring_in_namespace(void)
{
	struct htw_cqe cqes[2];
	struct htw_ring r;
	int fd = htw_open(O_CLOEXEC);
	__u64 t = htw_now(CLOCK_MONOTONIC), got = 0, end = t + HTW_WAIT_MS * MS;

	CHECK(fd >= 0 && !htw_ring_map(fd, 4, 4, &r));
	/* Pushed later by a store, in the namespace's time. */
	CHECK(!htw_ring_arm(&r, 0, 1, t + DUE));
	htw_ring_extend(&r, 0, t + 2 * DUE);
	/* Before the namespace's clock began: taken, and told, as its start. */
	CHECK(!htw_ring_arm(&r, 1, 1, 1));
	CHECK(htw_ring_submit(&r, 0) == 2);
	while (got < 2) {
		CHECK(htw_now(CLOCK_MONOTONIC) < end);
		got += htw_ring_reap(&r, cqes + got, 2 - got);
		if (got < 2)
			CHECK(htw_ring_submit(&r, 1) >= 0);
	}
	CHECK(cqes[0].slot == 1 && cqes[0].deadline == DAY);
	CHECK(cqes[1].slot == 0 && cqes[1].deadline == t + 2 * DUE);
	CHECK(htw_now(CLOCK_MONOTONIC) >= t + 2 * DUE);
	_exit(0);
}

TEST(ring_timers_are_the_time_namespace_s)
{
	int status;
	pid_t pid;

	if (!enter_timens())
		SKIP(return, "no time namespace: %s", strerror(errno));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		ring_in_namespace();
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("the check at line %d (mod 256) failed", WEXITSTATUS(status));
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
