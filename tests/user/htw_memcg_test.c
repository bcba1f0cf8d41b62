// SPDX-License-Identifier: GPL-2.0
/*
 * The memory of a file's timers is charged to the memory cgroup of the
 * process that arms them, as memory a process makes the kernel hold should
 * be.  A child moves itself into a cgroup of its own, arms timers there, and
 * reports how much slab memory the cgroup gained.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define CG_ROOT		"/sys/fs/cgroup"
#define CG		CG_ROOT "/htw_memcg_test"
#define NR_TIMERS	50000
#define FAR		(1000 * NSEC_PER_SEC)

/* The smallest a timer of /dev/htw can cost: its own record. */
#define TIMER_BYTES	128

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n < 0 ? -errno : 0;
}

/* The value of @key in memory.stat of the cgroup, or -1. */
static long long memory_stat(const char *key)
{
	char name[64];
	long long v;
	FILE *f;

	f = fopen(CG "/memory.stat", "re");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", name, &v) == 2) {
		if (!strcmp(name, key)) {
			fclose(f);
			return v;
		}
	}
	fclose(f);
	return -1;
}

/* A cgroup with the memory controller, or a reason why there is none. */
static const char *make_cgroup(void)
{
	char buf[256] = "";
	FILE *f;

	if (geteuid())
		return "needs root";
	if (access(CG_ROOT "/cgroup.controllers", F_OK) &&
	    mount("cgroup2", CG_ROOT, "cgroup2", 0, NULL))
		return "no cgroup2 file system";
	f = fopen(CG_ROOT "/cgroup.controllers", "re");
	if (!f || !fgets(buf, sizeof(buf), f) || !strstr(buf, "memory")) {
		if (f)
			fclose(f);
		return "no memory controller";
	}
	fclose(f);
	if (write_file(CG_ROOT "/cgroup.subtree_control", "+memory"))
		return "cannot enable the memory controller";
	if (mkdir(CG, 0755) && errno != EEXIST)
		return "cannot create a cgroup";
	return NULL;
}

/* In the child: join the cgroup, arm the timers, report the slab they took. */
static long long arm_in_cgroup(void)
{
	struct htw_op *ops = calloc(NR_TIMERS, sizeof(*ops));
	struct htw_batch b = {
		.count = NR_TIMERS,
		.op_size = sizeof(*ops),
	};
	long long before, after;
	int fd, i;

	if (!ops || write_file(CG "/cgroup.procs", "0"))
		return -1;
	fd = htw_open();
	if (fd < 0)
		return -1;
	for (i = 0; i < NR_TIMERS; i++)
		ops[i] = (struct htw_op){ .op = HTW_OP_ARM,
					  .spec.expires = FAR };
	b.ops = (uintptr_t)ops;

	before = memory_stat("slab");
	if (ioctl(fd, HTW_IOC_BATCH, &b) != NR_TIMERS)
		return -1;
	after = memory_stat("slab");
	close(fd);
	return before < 0 || after < 0 ? -1 : after - before;
}

TEST(timers_are_charged_to_the_callers_memory_cgroup)
{
	const char *why = make_cgroup();
	long long charged;
	int pipefd[2], status;
	pid_t pid;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		charged = arm_in_cgroup();
		_exit(write(pipefd[1], &charged, sizeof(charged)) !=
		      sizeof(charged));
	}
	ASSERT_EQ(sizeof(charged), read(pipefd[0], &charged, sizeof(charged)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	rmdir(CG);

	ASSERT_LE(0, charged);
	TH_LOG("%d timers: %lld bytes of slab charged to the cgroup",
	       NR_TIMERS, charged);
	EXPECT_LE((long long)NR_TIMERS * TIMER_BYTES, charged);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
