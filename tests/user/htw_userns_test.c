// SPDX-License-Identifier: GPL-2.0
/*
 * Accounts follow user namespaces: the uids of a namespace, however many
 * its owner maps, hold together at most the owner's limit, and the owner's
 * account shows what they hold.  The test runs as root and plays
 * newuidmap: it writes the namespace's maps itself.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define OWNER			60010
#define BASE			300000	/* the owner's subordinate range */
#define NR_UIDS			8
#define LIMIT			4000

FIXTURE(userns) {
	long long user_limit;
};

FIXTURE_SETUP(userns)
{
	self->user_limit = htw_limit_save(_metadata, LIMIT);
}

FIXTURE_TEARDOWN(userns)
{
	htw_limit_restore(self->user_limit);
}

/* Arm timers an hour away until the account is full; return how many. */
static long fill(int fd)
{
	long n = 0;

	while (htw_arm_id(fd, 0, 3600 * NSEC_PER_SEC, 0, 0) > 0)
		n++;
	return n;
}

static int write_file(pid_t pid, const char *name, const char *text)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	return htw_write_file(path, text);
}

/*
 * In the namespace, as uid 0 of it: a process per uid fills an account,
 * and holds its file until @hold closes; the sum goes to @out.
 */
static void in_namespace(int hold, int out)
{
	int sums[2];
	long total = 0, n;
	pid_t pid;
	int k;

	if (setresuid(0, 0, 0) || pipe(sums))
		_exit(10);
	for (k = 0; k < NR_UIDS; k++) {
		pid = fork();
		if (pid < 0)
			_exit(11);
		if (!pid) {
			int fd;
			char c;

			if (setresuid(k, k, k))
				_exit(12);
			fd = htw_open(O_CLOEXEC);
			n = fd < 0 ? -1 : fill(fd);
			if (write(sums[1], &n, sizeof(n)) != sizeof(n))
				_exit(13);
			/* Until the parent has looked. */
			if (read(hold, &c, 1) < 0)
				_exit(14);
			_exit(0);
		}
	}
	for (k = 0; k < NR_UIDS; k++) {
		if (read(sums[0], &n, sizeof(n)) != sizeof(n) || n < 0)
			_exit(15);
		total += n;
	}
	if (write(out, &total, sizeof(total)) != sizeof(total))
		_exit(16);
	while (wait(NULL) > 0)
		;
	_exit(0);
}

/* What the owner's own file says its account holds. */
static long owner_view(void)
{
	struct htw_info info;
	int sums[2], status;
	long v = -1;
	pid_t pid;

	if (pipe(sums))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		int fd;

		htw_become(OWNER);
		fd = htw_open(O_CLOEXEC);
		v = fd < 0 || htw_get_info(fd, &info) ? -1 : info.user_timers;
		_exit(write(sums[1], &v, sizeof(v)) != sizeof(v));
	}
	if (read(sums[0], &v, sizeof(v)) != sizeof(v))
		v = -1;
	waitpid(pid, &status, 0);
	close(sums[0]);
	close(sums[1]);
	return v;
}

TEST_F(userns, namespace_uids_share_their_owner_limit)
{
	int go[2], hold[2], out[2], status;
	char map[64], c;
	long total, owner;
	pid_t pid;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(hold));
	ASSERT_EQ(0, pipe(out));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(hold[1]);
		htw_become(OWNER);
		c = unshare(CLONE_NEWUSER) ? 'e' : 'u';
		if (write(go[1], &c, 1) != 1 || c == 'e')
			_exit(1);
		/* The maps are written. */
		if (read(hold[0], &c, 1) != 1)
			_exit(2);
		in_namespace(hold[0], out[1]);
	}
	close(out[1]);
	ASSERT_EQ(1, read(go[0], &c, 1));
	if (c == 'e') {
		waitpid(pid, &status, 0);
		SKIP(return, "no user namespace for uid %d", OWNER);
	}
	snprintf(map, sizeof(map), "0 %d %d\n", BASE, NR_UIDS);
	ASSERT_EQ(0, write_file(pid, "uid_map", map));
	ASSERT_EQ(0, write_file(pid, "gid_map", map));
	ASSERT_EQ(1, write(hold[1], "m", 1));

	ASSERT_EQ(sizeof(total), read(out[0], &total, sizeof(total)));
	owner = owner_view();
	close(hold[1]);
	waitpid(pid, &status, 0);

	TH_LOG("%d uids of one namespace held %ld timers;", NR_UIDS, total);
	TH_LOG("their owner's account %ld (limit %d)", owner, LIMIT);
	EXPECT_LT(0, total);
	EXPECT_GE(LIMIT, total);
	/* The owner's account holds theirs, and their wheels and nodes. */
	EXPECT_LE(total, owner);
	EXPECT_GE(LIMIT, owner);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
