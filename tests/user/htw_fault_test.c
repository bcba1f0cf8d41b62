// SPDX-License-Identifier: GPL-2.0
/*
 * Fault injection: every allocation and user copy on the paths of open,
 * arm, batch, modify and read fails in turn, and each failure must be a
 * clean, documented error that loses nothing: no half-armed timer, no
 * event lost, nothing left charged to the user, a file that still works.
 *
 * It uses the kernel's per-task fault injection (/proc/thread-self/fail-nth,
 * as syzkaller does): writing n there makes the n-th fault site the task
 * reaches fail: a slab allocation (failslab), a page allocation
 * (fail_page_alloc) or a copy from or to user memory (fail_usercopy).  For
 * n = 1, 2, ... the same call is made afresh until a run reaches no n-th
 * site, so every site on the call's path fails once.  The failslab and
 * fail_page_alloc filters are opened to sleeping allocations of any order,
 * which is what htw makes.
 *
 * The rig's UML kernels have fault injection; Debian's do not, and skip.
 * Leaks the checks below cannot see, kmemleak reports in the debug tier.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define MS		NSEC_PER_MSEC
#define DEBUGFS		"/sys/kernel/debug"
#define MAX_NTH		2000

FIXTURE(fault) {
	int nth;		/* /proc/thread-self/fail-nth */
	__u64 base_user;	/* the uid's user_bytes before the test */
	unsigned int injected, sites;
};

FIXTURE_SETUP(fault)
{
	static const char *const knobs[][2] = {
		{ DEBUGFS "/failslab/ignore-gfp-wait", "N" },
		{ DEBUGFS "/failslab/verbose", "0" },
		{ DEBUGFS "/fail_page_alloc/ignore-gfp-wait", "N" },
		{ DEBUGFS "/fail_page_alloc/ignore-gfp-highmem", "N" },
		{ DEBUGFS "/fail_page_alloc/min-order", "0" },
		{ DEBUGFS "/fail_page_alloc/verbose", "0" },
		{ DEBUGFS "/fail_usercopy/verbose", "0" },
	};
	unsigned int i;

	self->nth = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	if (self->nth < 0)
		SKIP(return, "no fault injection in this kernel");
	if (access(DEBUGFS "/failslab", F_OK))
		mount("debugfs", DEBUGFS, "debugfs", 0, NULL);
	for (i = 0; i < ARRAY_SIZE(knobs); i++) {
		const char *knob = knobs[i][0];

		ASSERT_EQ(0, htw_write_file(knob, knobs[i][1]))
			TH_LOG("cannot set %s", knob);
	}
	self->base_user = htw_user_bytes();
}

FIXTURE_TEARDOWN(fault)
{
	if (self->nth < 0)
		return;
	close(self->nth);
	TH_LOG("%u calls, %u of them with a fault injected", self->sites,
	       self->injected);
	/* Everything the failed calls allocated went back. */
	EXPECT_EQ(self->base_user, htw_user_bytes());
}

/*
 * Make the @n-th fault site from now on fail (0: none).  Writing the count
 * copies it from user memory, itself a fault site while a count is armed:
 * disarming may fail once that way, and is tried again.
 */
static void arm_fault(int nth, int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%d", n), tries;

	for (tries = 0; tries < 3; tries++)
		if (pwrite(nth, buf, len, 0) == len)
			return;
	abort();
}

/*
 * Whether the call since arm_fault() met its n-th site.  Reading the count
 * back is itself a user copy, which fails when the count was 1, and so is
 * disarming it: then the call met no n-th site either.
 */
static bool fault_injected(int nth)
{
	char buf[16] = "";
	ssize_t r = pread(nth, buf, sizeof(buf) - 1, 0);

	arm_fault(nth, 0);
	return r > 0 && atoi(buf) == 0;
}

static __u32 nr_timers(int fd)
{
	struct htw_info info = { 0 };

	htw_get_info(fd, &info);
	return info.nr_timers;
}

/* The file still works: a new timer's event comes. */
static bool file_works(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct htw_event ev;
	long id = htw_arm_id(fd, 0, MS, 0, 0xfeed);

	if (id <= 0 || poll(&pfd, 1, HTW_WAIT_MS) != 1)
		return false;
	while (htw_read_events(fd, &ev, 1) == 1)
		if (ev.user_data == 0xfeed)
			return ev.id == (__u32)id;
	return false;
}

TEST_F_TIMEOUT(fault, open, 300)
{
	bool hit;
	int n, fd;

	/* Each n until a call meets no n-th site; @hit: this one did. */
	for (n = 1, hit = true; hit && n < MAX_NTH; n++, self->sites++) {
		arm_fault(self->nth, n);
		fd = htw_open(O_CLOEXEC);
		hit = fault_injected(self->nth);
		self->injected += hit;
		if (fd < 0) {
			ASSERT_TRUE(hit);
			/* The path's copy from user memory may be what failed. */
			ASSERT_TRUE(fd == -ENOMEM || fd == -EFAULT)
				TH_LOG("n=%d: %s", n, strerror(-fd));
			continue;
		}
		ASSERT_TRUE(file_works(fd)) TH_LOG("n=%d", n);
		close(fd);
	}
	ASSERT_LT(n, MAX_NTH);
}

/*
 * The first timer of a file on a clock creates its wheel; a far one needs
 * more levels; either may fail, and a failed arm holds nothing.
 */
TEST_F_TIMEOUT(fault, arm, 300)
{
	static const __u64 delays[] = { 10 * MS, 3600 * NSEC_PER_SEC };
	unsigned int d;
	bool hit;
	int n, fd;
	long id;

	for (d = 0; d < 2; d++) {
		for (n = 1, hit = true; hit && n < MAX_NTH; n++, self->sites++) {
			fd = htw_open(O_CLOEXEC);
			ASSERT_LE(0, fd);
			if (d)
				ASSERT_LT(0, htw_arm_id(fd, 0, 10 * MS, 0, 0));
			arm_fault(self->nth, n);
			id = htw_arm_id(fd, 0, delays[d], 0, 7);
			hit = fault_injected(self->nth);
			self->injected += hit;
			if (id < 0) {
				ASSERT_TRUE(hit);
				ASSERT_TRUE(id == -ENOMEM || id == -EFAULT)
					TH_LOG("n=%d: %ld", n, id);
				ASSERT_EQ(d, nr_timers(fd));
			} else {
				ASSERT_EQ(d + 1, nr_timers(fd));
			}
			ASSERT_TRUE(file_works(fd)) TH_LOG("n=%d", n);
			close(fd);
		}
		ASSERT_LT(n, MAX_NTH);
	}
}

/* A batch: each operation that failed holds nothing, the others run. */
TEST_F_TIMEOUT(fault, batch, 300)
{
	struct htw_op ops[64];
	__u32 ok, i;
	bool hit;
	long ret;
	int n, fd;

	for (n = 1, hit = true; hit && n < MAX_NTH; n++, self->sites++) {
		fd = htw_open(O_CLOEXEC);
		ASSERT_LE(0, fd);
		for (i = 0; i < 64; i++)
			ops[i] = (struct htw_op){
				.op = HTW_OP_ARM, .result = 1,
				.spec.expires = (i % 2 ? 3600 * NSEC_PER_SEC : 10 * MS) << (i % 8),
			};
		arm_fault(self->nth, n);
		ret = htw_batch(fd, ops, 64);
		hit = fault_injected(self->nth);
		self->injected += hit;
		ASSERT_TRUE(ret == 64 ||
			    (hit && (ret == -EFAULT || (ret >= 0 && ret < 64))))
			TH_LOG("n=%d: %ld", n, ret);
		for (i = 0, ok = 0; ret > 0 && i < ret; i++) {
			ASSERT_TRUE(ops[i].result == 0 || ops[i].result == -ENOMEM)
				TH_LOG("n=%d: op %u: %d", n, i, ops[i].result);
			ok += !ops[i].result;
		}
		/* An operation not run says so: its result is as it was. */
		for (; ret >= 0 && i < 64; i++)
			ASSERT_EQ(1, ops[i].result);
		ASSERT_EQ(ok, nr_timers(fd)) TH_LOG("n=%d", n);
		ASSERT_TRUE(file_works(fd)) TH_LOG("n=%d", n);
		close(fd);
	}
	ASSERT_LT(n, MAX_NTH);
}

/* A modify that fails leaves the timer as it was, event and all. */
TEST_F_TIMEOUT(fault, modify_to_a_new_clock, 300)
{
	struct pollfd pfd = { .events = POLLIN };
	struct htw_timer_spec spec;
	struct htw_event ev;
	bool hit;
	int n, ret;
	long id;

	for (n = 1, hit = true; hit && n < MAX_NTH; n++, self->sites++) {
		pfd.fd = htw_open(O_CLOEXEC);
		ASSERT_LE(0, pfd.fd);
		id = htw_arm_id(pfd.fd, 0, 20 * MS, 0, 1);
		ASSERT_LT(0, id);
		spec = (struct htw_timer_spec){
			.id = id, .flags = HTW_TIMER_BOOTTIME,
			.expires = 30 * MS, .user_data = 2,
		};
		arm_fault(self->nth, n);
		ret = ioctl(pfd.fd, HTW_IOC_MODIFY, &spec) ? -errno : 0;
		hit = fault_injected(self->nth);
		self->injected += hit;
		ASSERT_TRUE(!ret || (hit && (ret == -ENOMEM || ret == -EFAULT)))
			TH_LOG("n=%d: %d", n, ret);
		ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
		ASSERT_EQ(1, htw_read_events(pfd.fd, &ev, 1));
		EXPECT_EQ(id, ev.id);
		EXPECT_EQ(ret ? 1 : 2, ev.user_data) TH_LOG("n=%d", n);
		EXPECT_EQ(ret ? 0 : HTW_EVENT_BOOTTIME,
			  ev.flags & HTW_EVENT_BOOTTIME);
		ASSERT_EQ(0, nr_timers(pfd.fd));
		close(pfd.fd);
	}
	ASSERT_LT(n, MAX_NTH);
}

/*
 * A read that re-arms a periodic timer a level up (a 10-minute period)
 * needs no memory, the arm took every level: it can only fail to copy the
 * event out, and then the event stays queued, and the next read gets it.
 */
TEST_F_TIMEOUT(fault, read_that_rearms, 300)
{
	struct pollfd pfd = { .events = POLLIN };
	struct htw_event ev;
	bool hit;
	long ret;
	int n;

	for (n = 1, hit = true; hit && n < MAX_NTH; n++, self->sites++) {
		pfd.fd = htw_open(O_CLOEXEC);
		ASSERT_LE(0, pfd.fd);
		ASSERT_LT(0, htw_arm_id(pfd.fd, 0, MS, 600 * NSEC_PER_SEC, 5));
		ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
		arm_fault(self->nth, n);
		ret = htw_read_events(pfd.fd, &ev, 1);
		hit = fault_injected(self->nth);
		self->injected += hit;
		if (ret != 1) {
			ASSERT_TRUE(hit && ret == -EFAULT)
				TH_LOG("n=%d: %ld", n, ret);
			ASSERT_EQ(1, htw_read_events(pfd.fd, &ev, 1));
		}
		EXPECT_EQ(5, ev.user_data);
		EXPECT_EQ(1, ev.count);
		ASSERT_EQ(1, nr_timers(pfd.fd));
		ASSERT_TRUE(file_works(pfd.fd)) TH_LOG("n=%d", n);
		close(pfd.fd);
	}
	ASSERT_LT(n, MAX_NTH);
}

/*
 * Ring timers' setup allocates a wheel, pages and slots; any may fail, and
 * a failed setup holds nothing and leaves the file able to try again.
 */
TEST_F_TIMEOUT(fault, ring_setup, 300)
{
	struct htw_ring_setup s;
	bool hit;
	int n, fd, ret;

	for (n = 1, hit = true; hit && n < MAX_NTH; n++, self->sites++) {
		fd = htw_open(O_CLOEXEC);
		ASSERT_LE(0, fd);
		s = (struct htw_ring_setup) { .nr_slots = 1000, .sq_entries = 64 };
		arm_fault(self->nth, n);
		ret = ioctl(fd, HTW_IOC_RING_SETUP, &s) ? -errno : 0;
		hit = fault_injected(self->nth);
		self->injected += hit;
		if (ret) {
			ASSERT_TRUE(hit && (ret == -ENOMEM || ret == -EFAULT))
				TH_LOG("n=%d: %s", n, strerror(-ret));
			ASSERT_EQ(0, ioctl(fd, HTW_IOC_RING_SETUP, &s));
		}
		ASSERT_EQ(-1, ioctl(fd, HTW_IOC_RING_SETUP, &s));
		ASSERT_EQ(EBUSY, errno);
		/* The ring timers that were made work, and so does the file. */
		ASSERT_EQ(0, ioctl(fd, HTW_IOC_RING_ENTER,
				   &(struct htw_ring_enter){ 0 }));
		ASSERT_TRUE(file_works(fd)) TH_LOG("n=%d", n);
		close(fd);
	}
	ASSERT_LT(n, MAX_NTH);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
