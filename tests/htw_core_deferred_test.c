// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for wheels their owner runs (HTW_WHEEL_DEFERRED)
 *
 * The wheel's hrtimer only wakes the owner; the case, as the owner, runs
 * the wheel with htw_wheel_run().  No verdict hangs on the host's speed:
 * the timers of a burst are armed with bottom halves off, within level 0's
 * span of the wheel's clock, so that they all lie in one bucket and its
 * hrtimer expires once, after every one of them is armed, however slow the
 * host; a case waits for the wake it knows must come; and what it counts
 * after a sleep is what nothing may change.
 */

#include <kunit/test.h>
#include <linux/bottom_half.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/jiffies.h>

#include "htw_test.h"

#define HTW_DF_TICK		NSEC_PER_MSEC
#define HTW_DF_TIMERS		1000
#define HTW_DF_BUDGET		16
/* How long a case waits for a wake that must come. */
#define HTW_DF_WAIT		(60 * HZ)

/* The owner's side of a deferred wheel: the wakes it got. */
struct htw_df {
	struct completion woken;
	atomic_t wakes;
	u64 woken_at;
};

static void htw_df_wake(struct htw_wheel *wheel, u64 now)
{
	struct htw_df *df = htw_wheel_data(wheel);

	WRITE_ONCE(df->woken_at, now);
	atomic_inc(&df->wakes);
	complete(&df->woken);
}

static struct htw_wheel *htw_df_wheel(struct kunit *test, struct htw_df **dfp)
{
	struct htw_wheel_params params = {
		.tick_ns = HTW_DF_TICK,
		.wheel_size = 64,
		.expire_budget = HTW_DF_BUDGET,
		.clockid = CLOCK_MONOTONIC,
		.flags = HTW_WHEEL_DEFERRED,
		.wake = htw_df_wake,
	};
	struct htw_df *df;

	df = kunit_kzalloc(test, sizeof(*df), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, df);
	init_completion(&df->woken);
	params.data = df;
	*dfp = df;
	return htw_test_wheel_params(test, &params);
}

/*
 * Arm @n timers due together @ticks ahead (fewer than a level's buckets),
 * with bottom halves off; return their expiry.  A relative arm first
 * brings the wheel's clock to the present.
 */
static u64 htw_df_burst(struct kunit *test, struct htw_wheel *wheel,
			struct htw_test_timer *t, unsigned int n, u64 ticks)
{
	unsigned int i;
	u64 expires;
	int ret = 0;

	KUNIT_ASSERT_EQ(test, htw_add(&t[0].timer, NSEC_PER_SEC, 0,
				      HTW_MODE_REL), 0);
	KUNIT_ASSERT_TRUE(test, htw_del(&t[0].timer));
	expires = htw_wheel_now(wheel) + ticks * HTW_DF_TICK;
	/* No assertion with bottom halves off: it would leave them so. */
	local_bh_disable();
	for (i = 0; i < n && !ret; i++)
		ret = htw_add(&t[i].timer, expires, 0, HTW_MODE_ABS);
	local_bh_enable();
	KUNIT_ASSERT_EQ(test, ret, 0);
	return expires;
}

/*
 * A burst due together wakes the owner once, and nothing runs until the
 * owner runs the wheel, however long that takes: then every callback runs,
 * once, in the owner's context, batch by batch, and the batches that leave
 * work wake no one.
 */
static void htw_core_deferred_burst_wakes_once_and_waits(struct kunit *test)
{
	struct htw_wheel_stats stats;
	struct htw_test_timer *t;
	struct htw_wheel *wheel;
	unsigned int i, ran, batches = 0;
	struct htw_df *df;
	bool left;
	u64 expires;

	wheel = htw_df_wheel(test, &df);
	t = htw_test_timers(test, wheel, HTW_DF_TIMERS);
	expires = htw_df_burst(test, wheel, t, HTW_DF_TIMERS, 4);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&df->woken,
							  HTW_DF_WAIT), 0);
	KUNIT_EXPECT_GE(test, READ_ONCE(df->woken_at), expires);

	/* A file nobody reads: nothing more happens. */
	msleep(20);
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.fired, 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&df->wakes), 1);

	/* One batch leaves work, and arms nothing. */
	ran = htw_wheel_run(wheel, U64_MAX, &left);
	KUNIT_EXPECT_EQ(test, ran, HTW_DF_BUDGET);
	KUNIT_EXPECT_TRUE(test, left);
	msleep(20);
	KUNIT_EXPECT_EQ(test, atomic_read(&df->wakes), 1);

	while (left) {
		ran += htw_wheel_run(wheel, U64_MAX, &left);
		batches++;
	}
	KUNIT_EXPECT_EQ(test, ran, HTW_DF_TIMERS);
	KUNIT_EXPECT_GE(test, batches, HTW_DF_TIMERS / HTW_DF_BUDGET - 1);
	for (i = 0; i < HTW_DF_TIMERS; i++) {
		KUNIT_EXPECT_EQ_MSG(test, t[i].fires, 1, "timer %u", i);
		KUNIT_EXPECT_TRUE_MSG(test, t[i].in_task, "timer %u", i);
		KUNIT_EXPECT_GE_MSG(test, t[i].fired_at, expires, "timer %u", i);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&df->wakes), 1);
}

/*
 * A run that leaves nothing due arms the hrtimer for the next event: a
 * timer armed later, or already waiting, wakes the owner again.
 */
static void htw_core_deferred_run_arms_the_next_wake(struct kunit *test)
{
	struct htw_test_timer *t;
	struct htw_wheel *wheel;
	struct htw_df *df;
	bool left;
	u64 second;

	wheel = htw_df_wheel(test, &df);
	t = htw_test_timers(test, wheel, 2);
	htw_df_burst(test, wheel, t, 1, 2);
	second = htw_wheel_now(wheel) + 30 * HTW_DF_TICK;
	KUNIT_ASSERT_EQ(test, htw_add(&t[1].timer, second, 0, HTW_MODE_ABS),
			0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&df->woken,
							  HTW_DF_WAIT), 0);
	do {
		htw_wheel_run(wheel, U64_MAX, &left);
	} while (left);
	KUNIT_EXPECT_EQ(test, t[0].fires, 1);

	/* Unless a slow host made it due by the first run too. */
	if (!t[1].fires) {
		/* Counts wakes: one that came already is not lost. */
		KUNIT_ASSERT_GT(test, wait_for_completion_timeout(&df->woken,
								  HTW_DF_WAIT),
				0);
		KUNIT_EXPECT_GE(test, READ_ONCE(df->woken_at), second);
		KUNIT_EXPECT_EQ(test, htw_wheel_run(wheel, U64_MAX, &left), 1);
		KUNIT_EXPECT_FALSE(test, left);
	}
	KUNIT_EXPECT_EQ(test, t[1].fires, 1);
	KUNIT_EXPECT_EQ(test, htw_wheel_run(wheel, U64_MAX, &left), 0);
	KUNIT_EXPECT_FALSE(test, left);
}

/* A stopped wheel wakes no one after htw_wheel_stop() returns. */
static void htw_core_deferred_stopped_wheel_wakes_no_one(struct kunit *test)
{
	struct htw_test_timer *t;
	struct htw_wheel *wheel;
	struct htw_df *df;
	u64 expires, stopped;
	bool left;

	wheel = htw_df_wheel(test, &df);
	t = htw_test_timers(test, wheel, 1);
	expires = htw_df_burst(test, wheel, t, 1, 2);
	htw_wheel_stop(wheel);
	stopped = htw_wheel_now(wheel);
	/* Past the expiry, by as long as the sleep took. */
	msleep(20);
	if (atomic_read(&df->wakes))
		KUNIT_EXPECT_LE(test, READ_ONCE(df->woken_at), stopped);
	KUNIT_EXPECT_LE(test, atomic_read(&df->wakes), 1);
	KUNIT_EXPECT_EQ(test, htw_wheel_run(wheel, U64_MAX, &left), 0);
	KUNIT_EXPECT_EQ(test, t[0].fires, 0);
	KUNIT_EXPECT_GT(test, htw_wheel_now(wheel), expires);
}

/* Parameters a deferred wheel needs, and refuses. */
static void htw_core_deferred_params_are_checked(struct kunit *test)
{
	struct htw_wheel_params params = {
		.tick_ns = HTW_DF_TICK,
		.wheel_size = 64,
		.clockid = CLOCK_MONOTONIC,
		.flags = HTW_WHEEL_DEFERRED,
	};

	/* A deferred wheel needs a wake; no other wheel takes one. */
	KUNIT_EXPECT_EQ(test, PTR_ERR(htw_wheel_create(&params)), -EINVAL);
	params.flags = 0;
	params.wake = htw_df_wake;
	KUNIT_EXPECT_EQ(test, PTR_ERR(htw_wheel_create(&params)), -EINVAL);
	/* A manual wheel has no hrtimer to wake anyone. */
	params.flags = HTW_WHEEL_DEFERRED | HTW_WHEEL_MANUAL;
	KUNIT_EXPECT_EQ(test, PTR_ERR(htw_wheel_create(&params)), -EINVAL);
}

static struct kunit_case htw_core_deferred_test_cases[] = {
	KUNIT_CASE(htw_core_deferred_params_are_checked),
	KUNIT_CASE(htw_core_deferred_burst_wakes_once_and_waits),
	KUNIT_CASE(htw_core_deferred_run_arms_the_next_wake),
	KUNIT_CASE(htw_core_deferred_stopped_wheel_wakes_no_one),
	{}
};

static struct kunit_suite htw_core_deferred_test_suite = {
	.name = "htw_core_deferred",
	.init = htw_test_init,
	.exit = htw_test_exit,
	.test_cases = htw_core_deferred_test_cases,
};

kunit_test_suite(htw_core_deferred_test_suite);
