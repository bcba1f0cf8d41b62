/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers the user-space tests of /dev/htw share.
 *
 * Include after kselftest_harness.h.  Each test binary's main() calls
 * htw_test_main(), which skips the whole binary when /dev/htw is missing.
 * The tests reach the device through libhtw, but for those of the ABI
 * itself, which make their ioctl()s raw.
 */
#ifndef _HTW_USER_H
#define _HTW_USER_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/htw.h>

#include "libhtw.h"

#define HTW_DEV		HTW_DEVICE_PATH
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL

/*
 * Upper bound on lateness the tests accept: emulated guests (QEMU without
 * KVM) are slow and their vCPUs get descheduled.  Earliness has no slack.
 */
#define HTW_SLACK_NS	(5 * NSEC_PER_SEC)

/*
 * How long a test waits for an event that must come.  It only bounds a
 * test of a broken device: a loaded host (one that takes the guest's CPU
 * away for hundreds of ms at a time) delays an event by far less, and no
 * verdict may hang on how fast it came.  The harness's own timeout of a
 * test, 30 s, would cut such a wait short: here it lasts two waits.
 */
#define HTW_WAIT_MS	60000

#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT	(2 * HTW_WAIT_MS / 1000)

static inline __u64 htw_now(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (__u64)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* Arm a timer; return its id, or -errno. */
static inline long htw_arm_id(int fd, __u32 flags, __u64 expires,
			      __u64 period, __u64 user_data)
{
	struct htw_timer_spec spec = {
		.flags = flags,
		.expires = expires,
		.period = period,
		.user_data = user_data,
	};
	int ret = htw_arm(fd, &spec);

	return ret ? ret : (long)spec.id;
}

/* Re-arm timer @id; 0 or -errno. */
static inline int htw_modify_id(int fd, __u32 id, __u32 flags,
				__u64 expires, __u64 period)
{
	struct htw_timer_spec spec = {
		.id = id,
		.flags = flags,
		.expires = expires,
		.period = period,
	};

	return htw_modify(fd, &spec);
}

/* Run a batch; return what the ioctl returned, or -errno. */
static inline long htw_batch(int fd, struct htw_op *ops, __u32 count)
{
	struct htw_batch b = {
		.ops = (uintptr_t)ops,
		.count = count,
		.op_size = sizeof(*ops),
	};
	long ret = ioctl(fd, HTW_IOC_BATCH, &b);

	return ret < 0 ? -errno : ret;
}

/*
 * What the calling uid holds (HTW_IOC_INFO's user_bytes), by a file of its
 * own; ~0 if none opens.
 */
static inline __u64 htw_user_bytes(void)
{
	struct htw_info info = { 0 };
	int fd = htw_open(O_CLOEXEC);

	if (fd < 0)
		return ~0ULL;
	htw_get_info(fd, &info);
	close(fd);
	return info.user_bytes;
}

/*
 * Start @name, a program of the rig's tools on $PATH, reading its output;
 * NULL if it is not there (the rig fails a run that could not build it).
 */
static inline FILE *htw_tool_open(const char *name)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null", name);
	if (system(cmd))
		return NULL;
	return popen(name, "r");
}

/* Write @s to a knob of sysfs, debugfs or tracefs; 0 or -errno. */
static inline int htw_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -errno;
	close(fd);
	return ret;
}

/* Write the number @v to a knob of sysfs; 0 or -errno. */
static inline int htw_write_number(const char *path, unsigned long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu\n", v);
	return htw_write_file(path, buf);
}

/* The number a file of sysfs or procfs holds, or -1. */
static inline long long htw_read_number(const char *path)
{
	FILE *f = fopen(path, "re");
	long long v;

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* The value of @key in /proc/meminfo, in bytes, or -1. */
static inline long long htw_meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "re");
	long long v, ret = -1;
	char name[64];

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld kB\n", name, &v) == 2) {
		if (!strncmp(name, key, strlen(key)) && name[strlen(key)] == ':') {
			ret = v * 1024;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* The number in environment variable @name, or @def. */
static inline __u64 htw_env_u64(const char *name, __u64 def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : def;
}

/* xorshift64: reproducible from the seed a test prints. */
static inline __u64 htw_rand(__u64 *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

static inline __u64 htw_rand_below(__u64 *state, __u64 n)
{
	return htw_rand(state) % n;
}

/* Run the binary's tests, or skip them all when the device is missing. */
static inline int htw_test_main(int argc, char **argv)
{
	if (access(HTW_DEV, F_OK))
		ksft_exit_skip(HTW_DEV " is missing (htw.ko not loaded)\n");
	return test_harness_run(argc, argv);
}

/*
 * For the tests that play other users (they run as root) and count what a
 * user holds: the per-user limit, in bytes and, as versions 2 and 3 had
 * it, in timers.
 */
#define HTW_PARAM_USER_BYTES	"/sys/module/htw/parameters/max_user_bytes"
#define HTW_PARAM_USER_TIMERS	"/sys/module/htw/parameters/max_user_timers"

/*
 * For a fixture that leaves the per-user limit as it found it: save it
 * before each case (and, with @timers not 0, start the case with a limit
 * of that many timers), and put it back after, pass or fail.  Return the
 * limit saved.
 */
static inline long long htw_limit_save(struct __test_metadata *_metadata,
				       unsigned long timers)
{
	long long limit = htw_read_number(HTW_PARAM_USER_BYTES);

	ASSERT_LE(0, limit);
	if (timers)
		ASSERT_EQ(0, htw_write_number(HTW_PARAM_USER_TIMERS, timers));
	return limit;
}

static inline void htw_limit_restore(long long limit)
{
	if (limit >= 0)
		htw_write_number(HTW_PARAM_USER_BYTES, limit);
}

/*
 * Become @uid, group and user, for good (root's setgid() and setuid() set
 * the real, effective and saved ids); exit with 100 if not allowed.
 */
static inline void htw_become(uid_t uid)
{
	if (setgid(uid) || setuid(uid))
		_exit(100);
}

/* The number on the line "@key:..." of the file at @path, or -1. */
static inline long long htw_proc_value(const char *path, const char *key)
{
	char line[256];
	size_t len = strlen(key);
	long long v = -1;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ':')
			v = strtoll(line + len + 1, NULL, 10);
	fclose(f);
	return v;
}

/* A number from the fdinfo of @fd, the line "@key:\t...", or -1. */
static inline long long htw_fdinfo_value(int fd, const char *key)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	return htw_proc_value(path, key);
}

/* A number from /proc/@tid/status, the line "@key:\t...", or -1. */
static inline long long htw_task_status(pid_t tid, const char *key)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	return htw_proc_value(path, key);
}

/* The state of task @tid, from /proc/@tid/stat ('S': asleep); 0 if gone. */
static inline char htw_task_state(pid_t tid)
{
	char path[64], line[256], *p;
	char state = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f)) {
		p = strrchr(line, ')');
		if (p && p[1] == ' ')
			state = p[2];
	}
	fclose(f);
	return state;
}

/*
 * Arm @n timers of @expires, @period and @flags through batches of 4,096:
 * how many were armed, or the error of the first if none was.
 */
static inline long htw_arm_many(int fd, __u32 n, __u64 expires,
				__u64 period, __u32 flags)
{
	static struct htw_op ops[4096];
	long armed = 0;
	__u32 i, chunk;

	while (armed < n) {
		chunk = n - armed < 4096 ? n - armed : 4096;
		for (i = 0; i < chunk; i++)
			ops[i] = (struct htw_op) {
				.op = HTW_OP_ARM,
				.spec = { .flags = flags, .expires = expires,
					  .period = period },
			};
		if (htw_batch(fd, ops, chunk) != chunk)
			return -EIO;
		for (i = 0; i < chunk; i++) {
			if (ops[i].result)
				return armed ? armed : ops[i].result;
			armed++;
		}
	}
	return armed;
}

#endif /* _HTW_USER_H */
