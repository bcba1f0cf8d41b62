// SPDX-License-Identifier: GPL-2.0
/*
 * One limit per person: the uids of a namespace, however many its owner
 * maps, hold together at most the owner's limit, and the owner's account
 * shows what they hold; a kuid has one limit in every namespace it is
 * mapped into; a uid 0 without capabilities gets no more by making
 * namespaces.  The tests run as root and play newuidmap: they write the
 * namespaces' maps themselves.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define OWNER			60010
#define BASE			300000	/* the owner's subordinate range */
#define NR_UIDS			8
#define LIMIT			4000
#define PERSON			300100	/* a kuid two containers share */
#define NR_UNSHARES		16

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

/*
 * A child that enters a user namespace (@enter), opens the device there,
 * arms timers until its account is full, sends how many to @out, and
 * holds its file until the test closes @hold[1].  @go hears 'u' once it
 * unshared, or 'e' if it could not; @mapped, if not -1, is waited on
 * before it opens, for its maps.
 */
static pid_t spawn_filler(int (*enter)(void), int go, int mapped,
			  const int hold[2], int out)
{
	pid_t pid = fork();
	char c;
	long n;
	int fd;

	if (pid)
		return pid;
	/* Only the test may hold the end whose close lets it go. */
	close(hold[1]);
	c = enter() ? 'e' : 'u';
	if (write(go, &c, 1) != 1 || c == 'e')
		_exit(1);
	if (mapped >= 0 && read(mapped, &c, 1) != 1)
		_exit(2);
	if (mapped >= 0 && setresuid(0, 0, 0))
		_exit(3);
	fd = htw_open(O_CLOEXEC);
	n = fd < 0 ? -1 : fill(fd);
	if (write(out, &n, sizeof(n)) != sizeof(n))
		_exit(4);
	/* Until the test has looked. */
	if (read(hold[0], &c, 1) < 0)
		_exit(5);
	_exit(0);
}

static int enter_userns(void)
{
	return unshare(CLONE_NEWUSER);
}

/* Root's own process without a capability, then a namespace of its own. */
static int enter_userns_capless(void)
{
	struct __user_cap_header_struct head = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = {};
	int cap;

	for (cap = 0; cap <= CAP_LAST_CAP; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno != EINVAL)
			return -1;
	if (syscall(SYS_capset, &head, data))
		return -1;
	/* None left: it is uid 0 and nothing more. */
	if (syscall(SYS_capget, &head, data) || data[0].permitted ||
	    data[1].permitted || geteuid())
		_exit(6);
	return unshare(CLONE_NEWUSER);
}

/* Map uid and gid 0 of @pid's namespace to kuid @kuid. */
static int map_root_to(pid_t pid, int kuid)
{
	char map[64];

	snprintf(map, sizeof(map), "0 %d 1\n", kuid);
	return write_file(pid, "uid_map", map) ?:
	       write_file(pid, "gid_map", map);
}

TEST_F(userns, one_kuid_has_one_limit_in_two_root_made_namespaces)
{
	int go[2], mapped[2], hold[2], out[2], k;
	long held[2] = { -1, -1 };
	pid_t pid[2];
	char c;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(hold));
	ASSERT_EQ(0, pipe(out));
	for (k = 0; k < 2; k++) {
		ASSERT_EQ(0, pipe(mapped));
		pid[k] = spawn_filler(enter_userns, go[1], mapped[0], hold,
				      out[1]);
		ASSERT_LE(0, pid[k]);
		close(mapped[0]);
		ASSERT_EQ(1, read(go[0], &c, 1));
		if (c == 'e') {
			close(hold[1]);
			while (wait(NULL) > 0)
				;
			SKIP(return, "no user namespace for root");
		}
		/* Both containers' root is the same person. */
		ASSERT_EQ(0, map_root_to(pid[k], PERSON));
		ASSERT_EQ(1, write(mapped[1], "m", 1));
		close(mapped[1]);
		/* The first holds its timers while the second tries. */
		ASSERT_EQ(sizeof(held[k]), read(out[0], &held[k], sizeof(held[k])));
	}
	close(hold[1]);
	while (wait(NULL) > 0)
		;

	TH_LOG("kuid %d held %ld timers in one namespace, then %ld in another",
	       PERSON, held[0], held[1]);
	EXPECT_LT(0, held[0]);
	EXPECT_GE(LIMIT, held[0]);
	EXPECT_EQ(0, held[1]);
}

TEST_F(userns, capless_root_gets_one_limit_however_many_namespaces)
{
	int go[2], hold[2], out[2], k, made = 0;
	long n, total = 0, first = -1;
	char c;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(hold));
	ASSERT_EQ(0, pipe(out));
	for (k = 0; k < NR_UNSHARES; k++) {
		ASSERT_LE(0, spawn_filler(enter_userns_capless, go[1], -1,
					  hold, out[1]));
		ASSERT_EQ(1, read(go[0], &c, 1));
		if (c == 'e')
			break;
		made++;
		ASSERT_EQ(sizeof(n), read(out[0], &n, sizeof(n)));
		ASSERT_LE(0, n);
		if (first < 0)
			first = n;
		total += n;
	}
	close(hold[1]);
	while (wait(NULL) > 0)
		;
	if (!made)
		SKIP(return, "no user namespace for a uid 0 without capabilities");

	TH_LOG("%d namespaces of a capless uid 0 held %ld timers (limit %d)",
	       made, total, LIMIT);
	EXPECT_EQ(NR_UNSHARES, made);
	EXPECT_LT(0, first);
	EXPECT_GE(LIMIT, total);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
