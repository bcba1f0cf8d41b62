// SPDX-License-Identifier: GPL-2.0
/*
 * Lifetimes: the module while files are open, a file while a thread reads
 * it or another process holds it, and a kernel user of htw unloaded while
 * its callbacks run.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/klog.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define MS		NSEC_PER_MSEC
#define REFCNT		"/sys/module/htw/refcnt"

/*
 * Each open file holds a reference on the module, so that htw cannot be
 * unloaded under it; closing the last descriptor gives it back.
 */
TEST(module_is_held_while_a_file_is_open)
{
	long before = htw_read_number(REFCNT);
	int fd, fd2;

	ASSERT_LE(0, before);
	fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(before + 1, htw_read_number(REFCNT));
	EXPECT_NE(0, syscall(SYS_delete_module, "htw", O_NONBLOCK));
	EXPECT_EQ(EWOULDBLOCK, errno);
	fd2 = dup(fd);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(before + 1, htw_read_number(REFCNT));
	close(fd);
	EXPECT_EQ(before + 1, htw_read_number(REFCNT));
	close(fd2);
	EXPECT_EQ(before, htw_read_number(REFCNT));
}

struct blocked_read {
	int fd;
	long ret;
	struct htw_event ev;
};

static void *blocked_reader(void *arg)
{
	struct blocked_read *br = arg;

	br->ret = htw_read_events(br->fd, &br->ev, 1);
	return NULL;
}

/*
 * close() while another thread is blocked in read() of the same file: the
 * read holds the file, which lives until it returns with the event it was
 * waiting for; then the file goes, and its reference on the module.
 *
 * That the read had begun before the close, and that its event came after
 * it, is the order of two threads, which only a wait can make likely: an
 * attempt the host ran out of that order (the read failed with EBADF, or
 * its event came before the close) is tried again, waiting twice as long
 * for each, rather than decide anything.
 */
TEST(close_while_another_thread_reads)
{
	long before = htw_read_number(REFCNT);
	__u64 wait = 100 * MS, closing;
	struct blocked_read br;
	pthread_t thread;
	long id;

	for (;; wait *= 2) {
		br = (struct blocked_read){ .ret = 1 };
		br.fd = htw_open(O_CLOEXEC);
		ASSERT_LE(0, br.fd);
		id = htw_arm_id(br.fd, 0, 3 * wait, 0, 42);
		ASSERT_LT(0, id);
		ASSERT_EQ(0, pthread_create(&thread, NULL, blocked_reader,
					    &br));
		usleep(wait / 1000);
		closing = htw_now(CLOCK_MONOTONIC);
		ASSERT_EQ(0, close(br.fd));
		ASSERT_EQ(0, pthread_join(thread, NULL));
		if (br.ret != -EBADF && (br.ret != 1 || br.ev.fired > closing))
			break;
		TH_LOG("the read did not span the close (%ld): again", br.ret);
	}
	ASSERT_EQ(1, br.ret);
	EXPECT_EQ(id, br.ev.id);
	EXPECT_EQ(42, br.ev.user_data);
	EXPECT_EQ(before, htw_read_number(REFCNT));
}

static void on_signal(int sig)
{
}

/*
 * A reader blocked in a file that no descriptor names any more.  A read
 * that began only after the close (EBADF: the host held the thread back
 * that long) is tried again, waiting twice as long for it.
 */
TEST(signal_ends_a_read_of_a_closed_file)
{
	struct sigaction sa = { .sa_handler = on_signal };
	long before = htw_read_number(REFCNT);
	struct blocked_read br;
	__u64 wait = 100 * MS;
	pthread_t thread;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	for (;; wait *= 2) {
		br = (struct blocked_read){ .ret = 1 };
		br.fd = htw_open(O_CLOEXEC);
		ASSERT_LE(0, br.fd);
		ASSERT_EQ(0, pthread_create(&thread, NULL, blocked_reader,
					    &br));
		usleep(wait / 1000);
		ASSERT_EQ(0, close(br.fd));
		usleep(50000);
		ASSERT_EQ(0, pthread_kill(thread, SIGUSR1));
		ASSERT_EQ(0, pthread_join(thread, NULL));
		if (br.ret != -EBADF)
			break;
		TH_LOG("the read began after the close: again");
	}
	EXPECT_EQ(-EINTR, br.ret);
	EXPECT_EQ(before, htw_read_number(REFCNT));
}

/*
 * After fork() parent and child share the file: its timers are not the
 * parent's alone, and each event is read once, by whichever reads first.
 * The file outlives the parent's close() for as long as the child has it.
 */
TEST(fork_shares_the_file_and_each_event_is_read_once)
{
	int fd = htw_open(O_CLOEXEC), pipefd[2], status, i, n = 200;
	unsigned char seen[200] = { 0 };
	struct htw_event ev[16];
	__u32 got = 0, theirs;
	pid_t pid;
	long r, k;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(pipefd));
	for (i = 0; i < n; i++)
		ASSERT_LT(0, htw_arm_id(fd, 0, (50 + i % 50) * MS, 0, i));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* The child reads half, and tells which, then leaves. */
		__u32 mine;

		for (mine = 0; mine < n / 2; mine++) {
			r = htw_read_events(fd, ev, 1);
			if (r != 1 || ev[0].user_data >= (__u64)n)
				_exit(1);
			theirs = ev[0].user_data;
			if (write(pipefd[1], &theirs, sizeof(theirs)) !=
			    sizeof(theirs))
				_exit(2);
		}
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	for (i = 0; i < n / 2; i++) {
		ASSERT_EQ(sizeof(theirs), read(pipefd[0], &theirs, sizeof(theirs)));
		ASSERT_EQ(0, seen[theirs]++) TH_LOG("timer %u read twice", theirs);
	}
	theirs = n / 2;
	while (got + theirs < (__u32)n) {
		r = htw_read_events(fd, ev, 16);
		ASSERT_LT(0, r);
		for (k = 0; k < r; k++) {
			ASSERT_GT(n, ev[k].user_data);
			ASSERT_EQ(0, seen[ev[k].user_data]++);
		}
		got += r;
	}
	EXPECT_EQ(n / 2, theirs);
	EXPECT_EQ(n - n / 2, got);
	close(pipefd[0]);
	close(pipefd[1]);
	close(fd);
}

/* The child keeps the file the parent closed, and gets all its events. */
TEST(file_lives_in_a_child_after_the_parent_closes_it)
{
	int fd = htw_open(O_CLOEXEC), status, i;
	struct htw_event ev;
	pid_t pid;

	ASSERT_LE(0, fd);
	for (i = 0; i < 10; i++)
		ASSERT_LT(0, htw_arm_id(fd, 0, 100 * MS, 0, i));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		usleep(50000);
		for (i = 0; i < 10; i++)
			if (htw_read_events(fd, &ev, 1) != 1)
				_exit(1);
		_exit(0);
	}
	close(fd);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
}

/* Where the rig's plan put htw_lifetime.ko, or NULL. */
static char *lifetime_module(void)
{
	char *mods = getenv("HTW_MODULES"), *p;

	if (!mods)
		return NULL;
	mods = strdup(mods);
	for (p = strtok(mods, " "); p; p = strtok(NULL, " "))
		if (strstr(p, "/htw_lifetime.ko"))
			return p;
	return NULL;
}

/* Sum what htw_lifetime logged at its unloads. */
static void lifetime_totals(struct __test_metadata *_metadata)
{
	unsigned long timers, calls, raced, n = 0, sum_calls = 0, sum_raced = 0;
	int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf, *p;

	if (len <= 0)
		return;
	buf = calloc(1, len + 1);
	len = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, len);
	for (p = buf; len > 0 && (p = strstr(p, "htw_lifetime: ")); p++) {
		if (sscanf(p, "htw_lifetime: %lu timers, %lu callbacks, %lu cancelled",
			   &timers, &calls, &raced) == 3) {
			n++;
			sum_calls += calls;
			sum_raced += raced;
		}
	}
	TH_LOG("%lu unloads logged: %lu callbacks, %lu timers cancelled with a callback running",
	       n, sum_calls, sum_raced);
	free(buf);
}

/*
 * A kernel user unloaded while its callbacks run on other CPUs: it cancels
 * each timer with htw_del_sync(), one-shot timers that re-arm themselves
 * included, then destroys its wheel.  A callback run after that, or a
 * wheel destroyed with timers armed, is what the kernel log would show.
 */
/* Only fixtures have timeouts. */
FIXTURE(unload) {
	int unused;
};

FIXTURE_SETUP(unload)
{
}

FIXTURE_TEARDOWN(unload)
{
}

TEST_F_TIMEOUT(unload, kernel_user_unloads_while_its_timers_run, 600)
{
	int rounds = getenv("HTW_FULL") && !strcmp(getenv("HTW_FULL"), "1") ? 200 : 20;
	char *path = lifetime_module();
	char params[32];
	int i, fd;

	if (!path || htw_read_number("/sys/module/htw_lifetime/refcnt") < 0)
		SKIP(return, "htw_lifetime.ko is not loaded");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	srand(getpid());
	for (i = 0; i < rounds; i++) {
		ASSERT_EQ(0, syscall(SYS_delete_module, "htw_lifetime", O_NONBLOCK))
			TH_LOG("round %d: %s", i, strerror(errno));
		snprintf(params, sizeof(params), "timers=%d", 16 << (i % 3));
		ASSERT_EQ(0, syscall(SYS_finit_module, fd, params, 0))
			TH_LOG("round %d: %s", i, strerror(errno));
		usleep(rand() % 20000);
	}
	/* Leave it loaded, as the rig loaded it: idle. */
	ASSERT_EQ(0, syscall(SYS_delete_module, "htw_lifetime", O_NONBLOCK));
	ASSERT_EQ(0, syscall(SYS_finit_module, fd, "", 0));
	close(fd);
	lifetime_totals(_metadata);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
