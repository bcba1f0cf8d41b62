// SPDX-License-Identifier: GPL-2.0
/*
 * The memory of a file's timers is charged to the memory cgroup of the
 * process that arms them, as memory a process makes the kernel hold should
 * be.  A child moves itself into a cgroup of its own, arms timers there, and
 * reports how much slab memory the cgroup gained.
 */
#include <errno.h>
#include <limits.h>
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

/* The smallest a timer of /dev/htw can cost: its own record (64-bit). */
#define TIMER_BYTES	96

/*
 * The number after @key in a flat-keyed file of the cgroup, or the file's
 * only number if @key is NULL; -1 if there is none.
 */
static long long cg_value(const char *file, const char *key)
{
	long long v = -1, n;
	char path[128], name[64];
	FILE *f;

	snprintf(path, sizeof(path), CG "/%s", file);
	if (!key)
		return htw_read_number(path);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", name, &n) == 2) {
		if (!strcmp(name, key)) {
			v = n;
			break;
		}
	}
	fclose(f);
	return v;
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
	if (htw_write_file(CG_ROOT "/cgroup.subtree_control", "+memory"))
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

	if (!ops || htw_write_file(CG "/cgroup.procs", "0"))
		return -1;
	fd = htw_open(O_CLOEXEC);
	if (fd < 0)
		return -1;
	for (i = 0; i < NR_TIMERS; i++)
		ops[i] = (struct htw_op){ .op = HTW_OP_ARM,
					  .spec.expires = FAR };
	b.ops = (uintptr_t)ops;

	before = cg_value("memory.stat", "slab");
	if (ioctl(fd, HTW_IOC_BATCH, &b) != NR_TIMERS)
		return -1;
	after = cg_value("memory.stat", "slab");
	close(fd);
	return before < 0 || after < 0 ? -1 : after - before;
}

/*
 * Run @fn in a child; return what it returned (LLONG_MIN if it could not
 * tell), and its exit status in *@status.
 */
static long long run_in_child(long long (*fn)(void), int *status)
{
	long long v = LLONG_MIN;
	int pipefd[2];
	pid_t pid;

	*status = -1;
	if (pipe(pipefd))
		return v;
	pid = fork();
	if (!pid) {
		v = fn();
		_exit(write(pipefd[1], &v, sizeof(v)) != sizeof(v));
	}
	/* A child that dies without a word leaves the read an end of file. */
	close(pipefd[1]);
	if (pid < 0 || waitpid(pid, status, 0) != pid ||
	    read(pipefd[0], &v, sizeof(v)) != sizeof(v))
		v = LLONG_MIN;
	close(pipefd[0]);
	return v;
}

TEST(timers_are_charged_to_the_callers_memory_cgroup)
{
	const char *why = make_cgroup();
	long long charged;
	int status;

	if (why)
		SKIP(return, "%s", why);
	charged = run_in_child(arm_in_cgroup, &status);
	EXPECT_EQ(0, status);
	rmdir(CG);

	ASSERT_LE(0, charged);
	TH_LOG("%d timers: %lld bytes of slab charged to the cgroup",
	       NR_TIMERS, charged);
	EXPECT_LE((long long)NR_TIMERS * TIMER_BYTES, charged);
}

/*
 * In the child: open a file, join the cgroup, and limit it to @room bytes
 * more than it holds.  Return the file, or -2 or -3 if that failed.
 */
static int open_in_cgroup_with_room(long long room)
{
	long long current;
	char limit[32];
	int fd;

	fd = htw_open(O_CLOEXEC);
	if (fd < 0 || htw_write_file(CG "/cgroup.procs", "0"))
		return -2;
	current = cg_value("memory.current", NULL);
	snprintf(limit, sizeof(limit), "%lld", current + room);
	if (current < 0 || htw_write_file(CG "/memory.max", limit))
		return -3;
	return fd;
}

/*
 * In the child, in a cgroup that allows 2 MiB more than it holds: arm until
 * an operation fails; return its result (or 1 if none failed).  Memory the
 * child touches is faulted in before it joins, so that only htw's
 * allocations meet the limit; the file is closed before the child reports,
 * so that the report's own memory (a pipe's page) is not over the limit.
 */
static long long arm_until_full(void)
{
	static struct htw_op ops[256];
	int fd, i, n, ret = 1;

	memset(ops, 0, sizeof(ops));
	fd = open_in_cgroup_with_room(2 << 20);
	if (fd < 0)
		return -fd;
	for (n = 0; n < 10000 && ret == 1; n++) {
		for (i = 0; i < 256; i++)
			ops[i] = (struct htw_op){ .op = HTW_OP_ARM,
						  .spec.expires = FAR };
		if (htw_batch(fd, ops, 256) != 256) {
			ret = 4;
			break;
		}
		for (i = 0; i < 256 && ret == 1; i++)
			if (ops[i].result)
				ret = ops[i].result;
	}
	close(fd);
	return ret;
}

/*
 * Run @fill in a child in the cgroup, and expect ENOMEM from it, with the
 * child alive to tell and no OOM kill: the caller is told, rather than
 * killed by the cgroup's OOM killer.
 */
static void expect_enomem_not_oom(struct __test_metadata *_metadata,
				  long long (*fill)(void))
{
	const char *why = make_cgroup();
	long long result, kills;
	int status;

	if (why)
		SKIP(return, "%s", why);
	/* The cgroup may be one an earlier run left behind. */
	kills = cg_value("memory.events", "oom_kill");
	result = run_in_child(fill, &status);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("the child did not live to tell: status %#x", status);
	EXPECT_EQ(-ENOMEM, result);
	EXPECT_EQ(kills, cg_value("memory.events", "oom_kill"));
	htw_write_file(CG "/memory.max", "max");
	rmdir(CG);
}

TEST(arming_over_the_cgroup_limit_is_enomem_not_oom)
{
	expect_enomem_not_oom(_metadata, arm_until_full);
}

/*
 * In the child: a limit 1 MiB above what the cgroup holds, then ring
 * timers that need about 5 MiB: the setup's result.
 */
static long long ring_setup_in_cgroup(void)
{
	struct htw_ring_setup s = { .nr_slots = 50000, .sq_entries = 64 };
	long long ret;
	int fd = open_in_cgroup_with_room(1 << 20);

	if (fd < 0)
		return -fd;
	ret = ioctl(fd, HTW_IOC_RING_SETUP, &s) ? -errno : 0;
	close(fd);
	return ret;
}

/* Ring timers too: over the cgroup's limit, their setup says ENOMEM. */
TEST(ring_setup_over_the_cgroup_limit_is_enomem_not_oom)
{
	expect_enomem_not_oom(_metadata, ring_setup_in_cgroup);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
