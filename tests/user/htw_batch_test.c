// SPDX-License-Identifier: GPL-2.0
/*
 * HTW_IOC_BATCH: many operations in one ioctl, each with its own result.
 */
#include <stdlib.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define FAR	(1000 * NSEC_PER_SEC)

FIXTURE(htw) {
	int fd;
};

FIXTURE_SETUP(htw)
{
	self->fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(htw)
{
	close(self->fd);
}

static struct htw_op arm_op(__u32 flags, __u64 expires, __u64 period)
{
	return (struct htw_op){
		.op = HTW_OP_ARM,
		.result = 1,
		.spec = { .flags = flags, .expires = expires, .period = period },
	};
}

static struct htw_op id_op(__u32 op, __u32 id)
{
	return (struct htw_op){ .op = op, .result = 1, .spec.id = id };
}

TEST_F(htw, batch_arms_every_timer_and_returns_their_ids)
{
	struct htw_op ops[8];
	struct htw_info info;
	int i;

	for (i = 0; i < 8; i++)
		ops[i] = arm_op(0, FAR, 0);
	ASSERT_EQ(8, htw_batch(self->fd, ops, 8));
	for (i = 0; i < 8; i++) {
		EXPECT_EQ(0, ops[i].result);
		EXPECT_LT(0, ops[i].spec.id);
		EXPECT_EQ(0, htw_cancel(self->fd, ops[i].spec.id));
	}
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(0, info.nr_timers);
}

TEST_F(htw, batch_failed_operation_does_not_stop_the_others)
{
	struct htw_op ops[6];
	struct htw_info info;

	ops[0] = arm_op(0, FAR, 0);
	ops[1] = id_op(HTW_OP_CANCEL, 54321);		/* no such timer */
	ops[2] = arm_op(1U << 31, FAR, 0);		/* unknown flag */
	ops[3] = id_op(0, 0);				/* unknown operation */
	ops[4] = arm_op(0, UINT64_MAX, 0);		/* expiry overflows */
	ops[5] = arm_op(0, FAR, 0);

	ASSERT_EQ(6, htw_batch(self->fd, ops, 6));
	EXPECT_EQ(0, ops[0].result);
	EXPECT_EQ(-ENOENT, ops[1].result);
	EXPECT_EQ(-EINVAL, ops[2].result);
	EXPECT_EQ(-EINVAL, ops[3].result);
	EXPECT_EQ(-EINVAL, ops[4].result);
	EXPECT_EQ(0, ops[5].result);
	EXPECT_NE(ops[0].spec.id, ops[5].spec.id);
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(2, info.nr_timers);
}

TEST_F(htw, batch_runs_operations_in_array_order)
{
	struct htw_op ops[3];
	long id = htw_arm_id(self->fd, 0, FAR, 0, 0);

	ASSERT_LT(0, id);
	ops[0] = id_op(HTW_OP_CANCEL, id);
	ops[1] = id_op(HTW_OP_CANCEL, id);
	ops[2] = id_op(HTW_OP_MODIFY, id);
	ops[2].spec.expires = FAR;
	ASSERT_EQ(3, htw_batch(self->fd, ops, 3));
	EXPECT_EQ(0, ops[0].result);
	EXPECT_EQ(-ENOENT, ops[1].result);
	EXPECT_EQ(-ENOENT, ops[2].result);
}

TEST_F(htw, batch_modify_rearms_a_timer)
{
	struct htw_op op;
	struct htw_event ev;
	long id = htw_arm_id(self->fd, 0, FAR, 0, 0);

	ASSERT_LT(0, id);
	op = id_op(HTW_OP_MODIFY, id);
	op.spec.user_data = 99;
	ASSERT_EQ(1, htw_batch(self->fd, &op, 1));
	EXPECT_EQ(0, op.result);
	ASSERT_EQ(1, htw_read_events(self->fd, &ev, 1));
	EXPECT_EQ(id, ev.id);
	EXPECT_EQ(99, ev.user_data);
}

TEST_F(htw, batch_cancel_with_other_fields_set_is_einval)
{
	struct htw_op op;
	long id = htw_arm_id(self->fd, 0, FAR, 0, 0);

	ASSERT_LT(0, id);
	op = id_op(HTW_OP_CANCEL, id);
	op.spec.expires = 1;
	ASSERT_EQ(1, htw_batch(self->fd, &op, 1));
	EXPECT_EQ(-EINVAL, op.result);
	EXPECT_EQ(0, htw_cancel(self->fd, id));
}

TEST_F(htw, batch_of_zero_operations_does_nothing)
{
	EXPECT_EQ(0, htw_batch(self->fd, NULL, 0));
}

/* Operations before a fault ran and are answered; the rest did not run. */
TEST_F(htw, batch_fault_stops_before_the_faulting_operation)
{
	long page = getpagesize();
	struct htw_op *ops;
	struct htw_info info;
	char *map;
	int i;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, mprotect(map + page, page, PROT_NONE));
	/* Three operations fit before the inaccessible page. */
	ops = (struct htw_op *)(map + page) - 3;
	for (i = 0; i < 3; i++)
		ops[i] = arm_op(0, FAR, 0);

	ASSERT_EQ(3, htw_batch(self->fd, ops, 5));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, ops[i].result);
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(3, info.nr_timers);
	munmap(map, 2 * page);
}

/*
 * The kernel reads, runs and answers a batch some operations at a time: a
 * fault far into the array, in an operation only partly readable, runs
 * every operation before it, each answered, and no other.
 */
TEST_F(htw, batch_fault_far_into_the_array_runs_each_operation_before_it)
{
	const unsigned int n = 100;
	long page = getpagesize();
	struct htw_info info;
	struct htw_op *ops;
	unsigned int i;
	char *map;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, munmap(map + page, page));
	/* Operation n has its first 24 bytes before the hole. */
	ops = (struct htw_op *)(map + page - 24) - n;
	for (i = 0; i < n; i++)
		ops[i] = arm_op(0, FAR, 0);
	memset(&ops[n], 0, 24);

	ASSERT_EQ(n, htw_batch(self->fd, ops, n + 7));
	for (i = 0; i < n; i++) {
		EXPECT_EQ(0, ops[i].result);
		EXPECT_LT(0, ops[i].spec.id);
	}
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(n, info.nr_timers);
	munmap(map, page);
}

TEST_F(htw, batch_read_only_array_is_efault_and_arms_nothing)
{
	struct htw_info info;
	struct htw_op *ops;

	ops = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ops);
	ops[0] = arm_op(0, FAR, 0);
	ASSERT_EQ(0, mprotect(ops, getpagesize(), PROT_READ));
	EXPECT_EQ(-EFAULT, htw_batch(self->fd, ops, 1));
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(0, info.nr_timers);
	munmap(ops, getpagesize());
}

/* An operation whose result cannot be written back does not run. */
TEST_F(htw, batch_read_only_array_is_efault_and_cancels_nothing)
{
	struct htw_op *ops;
	long id;

	id = htw_arm_id(self->fd, 0, FAR, 0, 0);
	ASSERT_LT(0, id);
	ops = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ops);
	ops[0] = (struct htw_op){ .op = HTW_OP_CANCEL, .spec.id = id };
	ASSERT_EQ(0, mprotect(ops, getpagesize(), PROT_READ));
	EXPECT_EQ(-EFAULT, htw_batch(self->fd, ops, 1));
	EXPECT_EQ(0, htw_cancel(self->fd, id));
	munmap(ops, getpagesize());
}

struct big_op {
	struct htw_op op;
	__u64 next_version;
};

static long batch_big(int fd, struct big_op *ops, __u32 count)
{
	struct htw_batch b = {
		.ops = (uintptr_t)ops,
		.count = count,
		.op_size = sizeof(*ops),
	};
	long ret = ioctl(fd, HTW_IOC_BATCH, &b);

	return ret < 0 ? -errno : ret;
}

TEST_F(htw, batch_longer_operations_are_read_by_op_size)
{
	struct big_op ops[2] = {
		{ .op = arm_op(0, FAR, 0) },
		{ .op = arm_op(0, FAR, 0), .next_version = 1 },
	};

	ASSERT_EQ(2, batch_big(self->fd, ops, 2));
	EXPECT_EQ(0, ops[0].op.result);
	EXPECT_LT(0, ops[0].op.spec.id);
	EXPECT_EQ(-EINVAL, ops[1].op.result);
}

TEST_F(htw, batch_arms_100000_timers_in_two_calls)
{
	__u32 n = 100000, done = 0, i, chunk;
	struct htw_info info;
	struct htw_op *ops;
	int calls = 0;

	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	if (info.max_timers < n)
		SKIP(return, "max_timers=%u is below %u", info.max_timers, n);
	ops = calloc(n, sizeof(*ops));
	ASSERT_NE(NULL, ops);
	for (i = 0; i < n; i++)
		ops[i] = arm_op(0, FAR, 0);
	while (done < n) {
		chunk = n - done < HTW_BATCH_MAX ? n - done : HTW_BATCH_MAX;
		ASSERT_EQ(chunk, htw_batch(self->fd, ops + done, chunk));
		done += chunk;
		calls++;
	}
	EXPECT_EQ(2, calls);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, ops[i].result);
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(n, info.nr_timers);
	free(ops);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
