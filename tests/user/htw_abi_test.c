// SPDX-License-Identifier: GPL-2.0
/*
 * The ABI of /dev/htw: the device, its info, and one test per error path,
 * each with otherwise valid input and the exact errno.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <stdio.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "htw_user.h"

/* The ring timers' structures: their sizes, with no implicit padding. */
static_assert(sizeof(struct htw_ring_setup) == HTW_RING_SETUP_SIZE_VER0,
	      "struct htw_ring_setup");
static_assert(sizeof(struct htw_ring_offsets) == 32, "struct htw_ring_offsets");
static_assert(sizeof(struct htw_sqe) == 24, "struct htw_sqe");
static_assert(sizeof(struct htw_cqe) == 24, "struct htw_cqe");
static_assert(sizeof(struct htw_ring_enter) == HTW_RING_ENTER_SIZE_VER0,
	      "struct htw_ring_enter");

FIXTURE(htw) {
	int fd;
	struct htw_info info;
	void *fault_page;
};

FIXTURE_SETUP(htw)
{
	self->fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, htw_get_info(self->fd, &self->info));
	self->fault_page = mmap(NULL, getpagesize(), PROT_NONE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->fault_page);
}

FIXTURE_TEARDOWN(htw)
{
	munmap(self->fault_page, getpagesize());
	close(self->fd);
}

/* A command number of ARM's type and number, with another size. */
#define HTW_IOC_ARM_SIZED(size) \
	_IOC(_IOC_READ | _IOC_WRITE, HTW_IOC_MAGIC, 0x01, (size))

TEST(device_is_a_char_device_open_to_all)
{
	struct stat st;

	ASSERT_EQ(0, stat(HTW_DEV, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0666, st.st_mode & 0777);
}

TEST_F(htw, info_reports_abi_and_limits)
{
	EXPECT_EQ(HTW_ABI_VERSION, self->info.version);
	EXPECT_LT(0, self->info.tick_ns);
	EXPECT_LE(2, self->info.wheel_size);
	EXPECT_LE(self->info.tick_ns, self->info.min_period_ns);
	EXPECT_LT(0, self->info.max_timers);
	EXPECT_EQ(HTW_BATCH_MAX, self->info.batch_max);
	EXPECT_LT(0, self->info.expire_budget);
	EXPECT_EQ(sizeof(struct htw_event), self->info.event_size);
	EXPECT_EQ(0, self->info.nr_timers);
	EXPECT_EQ(0, self->info.nr_queued);
}

/* One timer's event queued, the other's an hour away, whatever the host. */
TEST_F(htw, info_counts_timers_and_queued_events)
{
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	struct htw_info info;

	ASSERT_LT(0, htw_arm_id(self->fd, 0, 0, 0, 0));
	ASSERT_LT(0, htw_arm_id(self->fd, 0, 3600 * NSEC_PER_SEC, 0, 0));
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(2, info.nr_timers);
	EXPECT_EQ(1, info.nr_queued);
}

TEST_F(htw, fdinfo_shows_counts)
{
	char path[64], buf[512];
	ssize_t n;
	int fd;

	ASSERT_LT(0, htw_arm_id(self->fd, 0, 3600 * NSEC_PER_SEC, 0, 0));
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", self->fd);
	fd = open(path, O_RDONLY);
	ASSERT_LE(0, fd);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ASSERT_LT(0, n);
	buf[n] = '\0';
	EXPECT_NE(NULL, strstr(buf, "timers:\t1\n"));
	EXPECT_NE(NULL, strstr(buf, "queued:\t0\n"));
}

TEST_F(htw, unknown_command_is_enotty)
{
	EXPECT_EQ(-1, ioctl(self->fd, _IO(HTW_IOC_MAGIC, 0x3f)));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_F(htw, other_magic_is_enotty)
{
	struct htw_info info;

	EXPECT_EQ(-1, ioctl(self->fd, _IOR('x', 0x00, struct htw_info), &info));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_F(htw, wrong_direction_is_enotty)
{
	struct htw_info info;

	EXPECT_EQ(-1, ioctl(self->fd, _IOW(HTW_IOC_MAGIC, 0x00, struct htw_info),
			    &info));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_F(htw, info_bad_pointer_is_efault)
{
	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_INFO, self->fault_page));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(htw, arm_bad_pointer_is_efault)
{
	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_ARM, self->fault_page));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_ARM, NULL));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(htw, arm_read_only_spec_is_efault_and_arms_nothing)
{
	struct htw_timer_spec *spec;
	struct htw_info info;

	spec = mmap(NULL, getpagesize(), PROT_READ,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, spec);
	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_ARM, spec));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(0, info.nr_timers);
	munmap(spec, getpagesize());
}

TEST_F(htw, modify_bad_pointer_is_efault)
{
	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_MODIFY, self->fault_page));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(htw, cancel_bad_pointer_is_efault)
{
	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_CANCEL, self->fault_page));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(htw, batch_bad_pointer_is_efault)
{
	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_BATCH, self->fault_page));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(htw, batch_bad_ops_pointer_is_efault)
{
	struct htw_batch b = {
		.ops = (uintptr_t)self->fault_page,
		.count = 1,
		.op_size = sizeof(struct htw_op),
	};

	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_BATCH, &b));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(htw, read_bad_buffer_is_efault_and_keeps_event)
{
	struct htw_event ev;

	ASSERT_LT(0, htw_arm_id(self->fd, 0, 0, 0, 0));
	EXPECT_EQ(-1, read(self->fd, self->fault_page, sizeof(ev)));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(1, htw_read_events(self->fd, &ev, 1));
}

/*
 * A read that may not block (preadv2()'s RWF_NOWAIT, as io_uring tries
 * first) fails with EAGAIN on a blocking file with no event queued, and
 * reads one that is.
 */
TEST_F(htw, nowait_read_without_event_is_eagain)
{
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	struct htw_event ev;
	struct iovec iov = { .iov_base = &ev, .iov_len = sizeof(ev) };

	EXPECT_EQ(-1, preadv2(self->fd, &iov, 1, -1, RWF_NOWAIT));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_LT(0, htw_arm_id(self->fd, 0, 0, 0, 7));
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	EXPECT_EQ(sizeof(ev), preadv2(self->fd, &iov, 1, -1, RWF_NOWAIT));
	EXPECT_EQ(7, ev.user_data);
}

TEST_F(htw, arm_unknown_flag_is_einval)
{
	EXPECT_EQ(-EINVAL, htw_arm_id(self->fd, 1U << 31, 0, 0, 0));
}

TEST_F(htw, modify_unknown_flag_is_einval)
{
	long id = htw_arm_id(self->fd, 0, 10 * NSEC_PER_SEC, 0, 0);

	ASSERT_LT(0, id);
	EXPECT_EQ(-EINVAL, htw_modify_id(self->fd, id, 1U << 31, 0, 0));
}

TEST_F(htw, cancel_nonzero_flags_is_einval)
{
	long id = htw_arm_id(self->fd, 0, 10 * NSEC_PER_SEC, 0, 0);
	struct htw_cancel c = { .id = id, .flags = 1 };

	ASSERT_LT(0, id);
	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_CANCEL, &c));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(htw, batch_nonzero_flags_is_einval)
{
	struct htw_op op = { .op = HTW_OP_ARM };
	struct htw_batch b = {
		.ops = (uintptr_t)&op,
		.count = 1,
		.op_size = sizeof(op),
		.flags = 1,
	};

	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_BATCH, &b));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(htw, batch_nonzero_reserved_is_einval)
{
	struct htw_op op = { .op = HTW_OP_ARM };
	struct htw_batch b = {
		.ops = (uintptr_t)&op,
		.count = 1,
		.op_size = sizeof(op),
		.reserved = 1,
	};

	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_BATCH, &b));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(htw, batch_op_size_below_first_version_is_einval)
{
	struct htw_op op = { .op = HTW_OP_ARM };
	struct htw_batch b = {
		.ops = (uintptr_t)&op,
		.count = 1,
		.op_size = HTW_OP_SIZE_VER0 - 8,
	};

	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_BATCH, &b));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(htw, batch_op_size_above_page_size_is_einval)
{
	struct htw_op op = { .op = HTW_OP_ARM };
	struct htw_batch b = {
		.ops = (uintptr_t)&op,
		.count = 1,
		.op_size = getpagesize() + 8,
	};
	struct htw_info info;

	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_BATCH, &b));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(0, info.nr_timers);
}

TEST_F(htw, struct_shorter_than_first_version_is_einval)
{
	struct htw_timer_spec spec = { .expires = 0 };

	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_ARM_SIZED(16), &spec));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(htw, longer_struct_with_zero_tail_is_accepted)
{
	struct {
		struct htw_timer_spec spec;
		__u64 next_version;
	} big = { .spec.expires = 10 * NSEC_PER_SEC };

	EXPECT_EQ(0, ioctl(self->fd, HTW_IOC_ARM_SIZED(sizeof(big)), &big));
	EXPECT_LT(0, big.spec.id);
}

TEST_F(htw, longer_struct_with_nonzero_tail_is_einval)
{
	struct {
		struct htw_timer_spec spec;
		__u64 next_version;
	} big = { .spec.expires = 10 * NSEC_PER_SEC, .next_version = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_ARM_SIZED(sizeof(big)), &big));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(htw, longer_info_gets_zeroed_tail)
{
	struct {
		struct htw_info info;
		__u64 next_version;
	} big;

	memset(&big, 0xff, sizeof(big));
	EXPECT_EQ(0, ioctl(self->fd, _IOC(_IOC_READ, HTW_IOC_MAGIC, 0x00,
					  sizeof(big)), &big));
	EXPECT_EQ(HTW_ABI_VERSION, big.info.version);
	EXPECT_EQ(0, big.next_version);
}

/*
 * A program built for version 1 asks with the 48 bytes it knows, one for
 * versions 2 and 3 with 56, and each gets them, the rest of its memory
 * untouched; the 72 of version 4 hold the per-user limit and count in
 * bytes too, the same as in timers.
 */
TEST_F(htw, info_of_every_size_ever)
{
	struct {
		struct htw_info info;
		__u64 after;
	} old, now;

	ASSERT_EQ(HTW_INFO_SIZE_VER2, sizeof(struct htw_info));
	memset(&old, 0xa5, sizeof(old));
	EXPECT_EQ(0, ioctl(self->fd, _IOC(_IOC_READ, HTW_IOC_MAGIC, 0x00,
					  HTW_INFO_SIZE_VER0), &old));
	EXPECT_EQ(HTW_ABI_VERSION, old.info.version);
	EXPECT_EQ(0xa5a5a5a5U, old.info.max_user_timers);
	memset(&old, 0xa5, sizeof(old));
	EXPECT_EQ(0, ioctl(self->fd, _IOC(_IOC_READ, HTW_IOC_MAGIC, 0x00,
					  HTW_INFO_SIZE_VER1), &old));
	EXPECT_NE(0xa5a5a5a5U, old.info.max_user_timers);
	EXPECT_EQ(0xa5a5a5a5a5a5a5a5ULL, old.info.max_user_bytes);
	EXPECT_EQ(0xa5a5a5a5a5a5a5a5ULL, old.after);

	ASSERT_EQ(0, htw_get_info(self->fd, &now.info));
	EXPECT_EQ(old.info.max_user_timers, now.info.max_user_timers);
	EXPECT_LT(now.info.max_user_timers, now.info.max_user_bytes);
	EXPECT_LE(now.info.user_bytes, now.info.max_user_bytes);
	EXPECT_LE(now.info.user_timers, now.info.max_user_timers);
}

TEST_F(htw, relative_expiry_overflow_is_einval)
{
	EXPECT_EQ(-EINVAL, htw_arm_id(self->fd, 0, UINT64_MAX, 0, 0));
}

TEST_F(htw, relative_expiry_past_time_max_is_einval)
{
	EXPECT_EQ(-EINVAL, htw_arm_id(self->fd, 0, HTW_TIME_MAX, 0, 0));
}

TEST_F(htw, absolute_expiry_past_time_max_is_einval)
{
	EXPECT_EQ(-EINVAL, htw_arm_id(self->fd, HTW_TIMER_ABSTIME,
				      HTW_TIME_MAX + 1, 0, 0));
}

TEST_F(htw, absolute_expiry_at_time_max_is_accepted)
{
	EXPECT_LT(0, htw_arm_id(self->fd, HTW_TIMER_ABSTIME, HTW_TIME_MAX, 0, 0));
}

TEST_F(htw, period_below_minimum_is_einval)
{
	EXPECT_EQ(-EINVAL, htw_arm_id(self->fd, 0, NSEC_PER_SEC,
				      self->info.min_period_ns - 1, 0));
}

TEST_F(htw, period_above_time_max_is_einval)
{
	EXPECT_EQ(-EINVAL, htw_arm_id(self->fd, 0, NSEC_PER_SEC,
				      HTW_TIME_MAX + 1, 0));
}

TEST_F(htw, modify_period_below_minimum_is_einval)
{
	long id = htw_arm_id(self->fd, 0, 10 * NSEC_PER_SEC, 0, 0);

	ASSERT_LT(0, id);
	EXPECT_EQ(-EINVAL, htw_modify_id(self->fd, id, 0, NSEC_PER_SEC,
					 self->info.min_period_ns - 1));
}

TEST_F(htw, cancel_unknown_id_is_enoent)
{
	EXPECT_EQ(-ENOENT, htw_cancel(self->fd, 0));
	EXPECT_EQ(-ENOENT, htw_cancel(self->fd, 12345));
}

TEST_F(htw, cancel_twice_is_enoent)
{
	long id = htw_arm_id(self->fd, 0, 10 * NSEC_PER_SEC, 0, 0);

	ASSERT_LT(0, id);
	EXPECT_EQ(0, htw_cancel(self->fd, id));
	EXPECT_EQ(-ENOENT, htw_cancel(self->fd, id));
}

TEST_F(htw, modify_unknown_id_is_enoent)
{
	EXPECT_EQ(-ENOENT, htw_modify_id(self->fd, 12345, 0, NSEC_PER_SEC, 0));
}

TEST_F(htw, batch_count_over_max_is_e2big)
{
	struct htw_op op = { .op = HTW_OP_ARM };
	struct htw_batch b = {
		.ops = (uintptr_t)&op,
		.count = HTW_BATCH_MAX + 1,
		.op_size = sizeof(op),
	};

	EXPECT_EQ(-1, ioctl(self->fd, HTW_IOC_BATCH, &b));
	EXPECT_EQ(E2BIG, errno);
}

/* Needs htw.ko loaded with a max_timers small enough to reach quickly. */
TEST_F_TIMEOUT(htw, arm_past_max_timers_is_enospc, 120)
{
	__u32 max = self->info.max_timers, done = 0, i, n;
	struct htw_op *ops;

	if (max > 300000)
		SKIP(return, "max_timers=%u is too many to fill here", max);
	ops = calloc(HTW_BATCH_MAX, sizeof(*ops));
	ASSERT_NE(NULL, ops);
	while (done < max) {
		n = max - done < HTW_BATCH_MAX ? max - done : HTW_BATCH_MAX;
		for (i = 0; i < n; i++)
			ops[i] = (struct htw_op){ .op = HTW_OP_ARM,
				.spec.expires = 1000 * NSEC_PER_SEC };
		ASSERT_EQ(n, htw_batch(self->fd, ops, n));
		for (i = 0; i < n; i++)
			ASSERT_EQ(0, ops[i].result);
		done += n;
	}
	EXPECT_EQ(-ENOSPC, htw_arm_id(self->fd, 0, 1000 * NSEC_PER_SEC, 0, 0));
	/* A cancelled timer makes room for one more. */
	EXPECT_EQ(0, htw_cancel(self->fd, ops[0].spec.id));
	EXPECT_LT(0, htw_arm_id(self->fd, 0, 1000 * NSEC_PER_SEC, 0, 0));
	free(ops);
}

TEST_F(htw, read_shorter_than_an_event_is_einval)
{
	char buf[sizeof(struct htw_event) - 1];

	ASSERT_LT(0, htw_arm_id(self->fd, 0, 0, 0, 0));
	usleep(10000);
	EXPECT_EQ(-1, read(self->fd, buf, sizeof(buf)));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(htw, nonblocking_read_without_events_is_eagain)
{
	struct htw_event ev;
	int fd = open(HTW_DEV, O_RDWR | O_NONBLOCK | O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_LT(0, htw_arm_id(fd, 0, 3600 * NSEC_PER_SEC, 0, 0));
	EXPECT_EQ(-EAGAIN, htw_read_events(fd, &ev, 1));
	close(fd);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
