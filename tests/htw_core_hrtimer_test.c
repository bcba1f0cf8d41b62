// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for the wheel of htw_core.c on a real clock
 *
 * These cases let the wheel's own hrtimer drive it, with waits of a few
 * milliseconds.  "Never early" is exact here too; "at most one tick late"
 * is not, because the callback also waits for the softirq to run, which
 * under UML can take long: the upper bound is a generous second.
 *
 * No other verdict hangs on the speed of the host, which may take the CPU
 * from the whole (uniprocessor) guest for hundreds of ms at any moment: a
 * case waits for a callback it knows must come, for as long as only a
 * broken wheel would take, and what it counts holds by construction.
 */

#include <kunit/test.h>
#include <linux/bottom_half.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/time64.h>

#include "htw_test.h"

#define HTW_HR_TICK		NSEC_PER_MSEC
#define HTW_HR_SLACK		NSEC_PER_SEC
/* How long a case waits for a callback that must come. */
#define HTW_HR_WAIT		(60 * HZ)

struct htw_hr_case {
	const char *desc;
	clockid_t clockid;
	unsigned int flags;
};

/* Each case on each clock, and with the callbacks under the wheel's lock. */
static const struct htw_hr_case htw_hr_cases[] = {
	{ "CLOCK_MONOTONIC", CLOCK_MONOTONIC, 0 },
	{ "CLOCK_BOOTTIME", CLOCK_BOOTTIME, 0 },
	{ "CLOCK_MONOTONIC, locked callbacks", CLOCK_MONOTONIC,
	  HTW_WHEEL_LOCKED_CALLBACKS },
};

KUNIT_ARRAY_PARAM_DESC(htw_hr_cases, htw_hr_cases, desc);

static struct htw_wheel *htw_hr_wheel_tick(struct kunit *test, u64 tick_ns,
					   u32 budget)
{
	const struct htw_hr_case *p = test->param_value;
	struct htw_wheel_params params = {
		.tick_ns = tick_ns,
		.wheel_size = 64,
		.expire_budget = budget,
		.clockid = p->clockid,
		.flags = p->flags,
	};

	return htw_test_wheel_params(test, &params);
}

static struct htw_wheel *htw_hr_wheel(struct kunit *test)
{
	return htw_hr_wheel_tick(test, HTW_HR_TICK, 0);
}

/*
 * The completion the callbacks signal lives as long as the case's timers:
 * a case that gives up waiting leaves them armed until its .exit.
 */
static struct completion *htw_hr_done(struct kunit *test)
{
	struct htw_test *ctx = test->priv;
	struct completion *done;

	done = kunit_kzalloc(test, sizeof(*done), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, done);
	init_completion(done);
	ctx->priv = done;
	return done;
}

/* Completes ctx->priv once the timer has run @arg times. */
static void htw_hr_complete(struct htw_test_timer *t)
{
	if (t->fires == t->arg)
		complete(t->ctx->priv);
}

/* Timers a few ticks apart run in order, each at or after its expiry. */
static void htw_core_hrtimer_timers_run_never_early(struct kunit *test)
{
	const struct htw_hr_case *p = test->param_value;
	bool locked = !IS_ENABLED(CONFIG_PREEMPT_RT) &&
		      (p->flags & HTW_WHEEL_LOCKED_CALLBACKS);
	static const u64 delays_ms[] = { 1, 3, 3, 7, 20 };
	const unsigned int n = ARRAY_SIZE(delays_ms);
	struct completion *done;
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	unsigned int i;
	u64 start;

	done = htw_hr_done(test);
	wheel = htw_hr_wheel(test);
	t = htw_test_timers(test, wheel, n);
	t[n - 1].action = htw_hr_complete;
	t[n - 1].arg = 1;

	start = htw_wheel_now(wheel);
	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test, htw_add(&t[i].timer, start + delays_ms[i] *
					      NSEC_PER_MSEC, 0, HTW_MODE_ABS),
				0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(done, HTW_HR_WAIT),
			0);

	for (i = 0; i < n; i++) {
		u64 expires = start + delays_ms[i] * NSEC_PER_MSEC;

		KUNIT_EXPECT_EQ_MSG(test, t[i].fires, 1, "timer %u", i);
		KUNIT_EXPECT_EQ(test, t[i].expired, expires);
		KUNIT_EXPECT_GE_MSG(test, t[i].fired_at, expires,
				    "timer %u ran %llu ns early", i,
				    expires - t[i].fired_at);
		KUNIT_EXPECT_LT_MSG(test, t[i].fired_at, expires + HTW_HR_SLACK,
				    "timer %u", i);
		/* Under the wheel's lock, taken with interrupts off, or not. */
		KUNIT_EXPECT_EQ_MSG(test, t[i].irqs_off, locked, "timer %u", i);
		if (i && delays_ms[i] > delays_ms[i - 1])
			KUNIT_EXPECT_GT_MSG(test, t[i].seq, t[i - 1].seq,
					    "timer %u", i);
	}
}

/*
 * A periodic timer runs until htw_del_sync(), which finds it pending and,
 * once it returns, leaves no callback running or to come.
 */
static void htw_core_hrtimer_del_sync_stops_periodic_timer(struct kunit *test)
{
	const u64 period = 2 * HTW_HR_TICK;
	struct htw_wheel_stats stats;
	struct completion *done;
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	unsigned int fires;
	u64 first;

	done = htw_hr_done(test);
	wheel = htw_hr_wheel(test);
	t = htw_test_timers(test, wheel, 1);
	t->action = htw_hr_complete;
	t->arg = 5;

	first = htw_wheel_now(wheel) + period;
	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, first, period, HTW_MODE_ABS),
			0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(done, HTW_HR_WAIT),
			0);
	KUNIT_EXPECT_EQ(test, htw_del_sync(&t->timer), 1);
	fires = READ_ONCE(t->fires);
	KUNIT_EXPECT_GE(test, t->expired, first + 4 * period);
	KUNIT_EXPECT_GE(test, t->fired_at, t->expired);

	msleep(20);
	KUNIT_EXPECT_EQ(test, READ_ONCE(t->fires), fires);
	KUNIT_EXPECT_FALSE(test, htw_pending(&t->timer));
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.pending, 0);
}

/* A wheel with no timer arms no hrtimer: it never runs, however long. */
static void htw_core_hrtimer_empty_wheel_never_runs(struct kunit *test)
{
	struct htw_wheel_stats stats;
	struct htw_wheel *wheel;

	wheel = htw_hr_wheel(test);
	msleep(20);
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.runs, 0);
}

/*
 * The wheel sleeps until its next non-empty bucket, not from tick to tick:
 * a timer 5000 ticks away, on level 2 of a 64-bucket wheel, costs one run
 * per level it comes down through and one for its callback, not 5000.  A
 * run that comes late only does the work of several (one timer is never
 * more than a batch), so a slow host can make it fewer, never more.
 */
#define HTW_HR_FAR_TICK		(10 * NSEC_PER_USEC)
#define HTW_HR_FAR_TICKS	5000

static void htw_core_hrtimer_far_timer_takes_a_run_per_level(struct kunit *test)
{
	struct htw_wheel_stats stats;
	struct completion *done;
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	int ret;

	done = htw_hr_done(test);
	wheel = htw_hr_wheel_tick(test, HTW_HR_FAR_TICK, 0);
	t = htw_test_timers(test, wheel, 1);
	t->action = htw_hr_complete;
	t->arg = 1;

	/*
	 * Its level-2 bucket may start 9 ms after the arm: with bottom halves
	 * off, no run moves it down before the case has seen where it went,
	 * however long the host holds the case in between.
	 */
	local_bh_disable();
	ret = htw_add(&t->timer, HTW_HR_FAR_TICKS * HTW_HR_FAR_TICK, 0,
		      HTW_MODE_REL);
	htw_wheel_get_stats(wheel, &stats);
	local_bh_enable();
	KUNIT_ASSERT_EQ(test, ret, 0);
	KUNIT_EXPECT_EQ(test, stats.level[2], 1);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(done, HTW_HR_WAIT),
			0);

	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_GE(test, stats.runs, 1);
	KUNIT_EXPECT_LE(test, stats.runs, 3);
	KUNIT_EXPECT_EQ(test, stats.fired, 1);
}

/*
 * HTW_HR_BURST timers due at once: all run once, in the order they were
 * armed, none early.  Whatever the host's speed, that order is the one of
 * their bucket.  The expiry is within level 0's span of clk, so that every
 * timer goes to that one bucket (or all, armed late, to the due list),
 * however far clk moves while they are armed (a relative arm first brings
 * clk to the present: an absolute one reads the coarse clock, which lags
 * it by as long as the host kept the guest's tick from running).  And they
 * are armed with bottom halves off, so that no expiry run (a softirq of
 * this CPU, where the first arm starts the wheel's hrtimer) starts before
 * all are, however long that takes: a timer armed while its bucket is
 * being emptied would run before the rest of it.  Fill in @stats; return
 * the time from before the first arm to the last callback.
 */
#define HTW_HR_BURST		5000
#define HTW_HR_BURST_TICKS	32	/* of a wheel of 64 buckets */
#define HTW_HR_SLOW_US		20

/* Busy for HTW_HR_SLOW_US by the clock an expiry run measures itself by. */
static void htw_hr_slow(struct htw_test_timer *t)
{
	u64 end = ktime_get_ns() + HTW_HR_SLOW_US * NSEC_PER_USEC;

	while (ktime_get_ns() < end)
		cpu_relax();
}

static void htw_hr_slow_complete(struct htw_test_timer *t)
{
	htw_hr_slow(t);
	htw_hr_complete(t);
}

static u64 htw_hr_burst(struct kunit *test, u32 budget, bool slow,
			struct htw_wheel_stats *stats)
{
	struct completion *done;
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	u64 start, expires, last = 0;
	unsigned int i;
	int ret = 0;

	done = htw_hr_done(test);
	wheel = htw_hr_wheel_tick(test, HTW_HR_TICK, budget);
	t = htw_test_timers(test, wheel, HTW_HR_BURST);
	for (i = 0; slow && i < HTW_HR_BURST; i++)
		t[i].action = htw_hr_slow;
	t[HTW_HR_BURST - 1].action = slow ? htw_hr_slow_complete :
					    htw_hr_complete;
	t[HTW_HR_BURST - 1].arg = 1;

	start = htw_wheel_now(wheel);
	expires = start + HTW_HR_BURST_TICKS * HTW_HR_TICK;
	/* clk to the present, past start. */
	KUNIT_ASSERT_EQ(test, htw_add(&t[0].timer, NSEC_PER_SEC, 0,
				      HTW_MODE_REL), 0);
	KUNIT_ASSERT_TRUE(test, htw_del(&t[0].timer));
	/* No assertion with bottom halves off: it would leave them so. */
	local_bh_disable();
	for (i = 0; i < HTW_HR_BURST && !ret; i++)
		ret = htw_add(&t[i].timer, expires, 0, HTW_MODE_ABS);
	local_bh_enable();
	KUNIT_ASSERT_EQ(test, ret, 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(done, HTW_HR_WAIT),
			0);

	htw_wheel_get_stats(wheel, stats);
	KUNIT_EXPECT_EQ(test, stats->fired, HTW_HR_BURST);
	for (i = 0; i < HTW_HR_BURST; i++) {
		KUNIT_EXPECT_EQ_MSG(test, t[i].fires, 1, "timer %u", i);
		KUNIT_EXPECT_EQ_MSG(test, t[i].seq, i, "timer %u", i);
		KUNIT_EXPECT_GE_MSG(test, t[i].fired_at, expires, "timer %u", i);
		last = max(last, t[i].fired_at);
	}
	return last - start;
}

/*
 * A run goes on past its budget: with a budget of one callback, a burst of
 * quick ones is run batch after batch, and a run leaves work to the next
 * only once it has lasted HTW_RUN_NS.  Such runs do not overlap, and all
 * lie between the first arm and the last callback: no more of them fit
 * there than HTW_RUN_NS does.  Runs that stopped after each batch would be
 * thousands in a few ms; a host that takes the CPU away ends runs sooner,
 * but makes the burst last as much longer.  The one other run made the
 * last callbacks.
 */
static void htw_core_hrtimer_run_goes_on_past_its_budget(struct kunit *test)
{
	struct htw_wheel_stats stats;
	u64 elapsed;

	elapsed = htw_hr_burst(test, 1, false, &stats);
	KUNIT_EXPECT_LE(test, stats.budget_stops,
			div64_u64(elapsed, HTW_RUN_NS));
	KUNIT_EXPECT_LE(test, stats.runs, stats.budget_stops + 1);
}

/*
 * And is bounded in time: a run starts a batch only while it has lasted
 * less than HTW_RUN_NS, and each callback here lasts HTW_HR_SLOW_US by the
 * run's clock (longer if the CPU is taken away meanwhile, which ends runs
 * sooner), so a run makes at most HTW_RUN_NS / HTW_HR_SLOW_US callbacks
 * before its last batch, and a batch of 4 more: HTW_HR_BURST of them take
 * at least some 300 runs, however slow the host.  No bound would make one
 * run; a bound ten times as long, some 40.  Each batch also moves at most
 * 64 timers out of their bucket, so the bucket is emptied over many
 * batches too.
 */
#define HTW_HR_BUDGET		4

static void htw_core_hrtimer_run_is_bounded_in_time(struct kunit *test)
{
	const u64 per_run = div64_u64(HTW_RUN_NS,
				      HTW_HR_SLOW_US * NSEC_PER_USEC) +
			    HTW_HR_BUDGET;
	struct htw_wheel_stats stats;

	htw_hr_burst(test, HTW_HR_BUDGET, true, &stats);
	KUNIT_EXPECT_GE(test, stats.runs, div64_u64(HTW_HR_BURST, per_run));
}

/*
 * Wheels due at one instant share their CPU's HTW_RUN_NS, and take turns,
 * half of them on CLOCK_BOOTTIME (all, in the case of that clock).  Their
 * timers are armed, and their expiries left to pass, with bottom halves
 * off: the pass of the hrtimer softirq that runs once they are on again
 * finds every wheel's hrtimer expired, CLOCK_MONOTONIC's first.  One
 * wheel's work, HTW_HR_SHARED slow callbacks, lasts longer than two of its
 * passes' HTW_RUN_NS by the clock the runs read (a host that takes the
 * CPU away only makes a run's callbacks fewer), so the first wheel spends
 * the pass and the three others yield in it; each wheel's bound alone
 * would let all run in it and none yield.  And the wheel that waited
 * longest runs next, so every wheel has run its first callback before any
 * has run its last: the order the softirq finds the hrtimers in
 * (CLOCK_MONOTONIC's before CLOCK_BOOTTIME's) would run the first wheel
 * of each pass to its end first.
 */
#define HTW_HR_SHARED		32

static void htw_core_hrtimer_wheels_share_the_cpu_bound(struct kunit *test)
{
	const struct htw_hr_case *p = test->param_value;
	struct htw_test_timer *t[HTW_TEST_MAX_WHEELS];
	struct htw_wheel *wheel[HTW_TEST_MAX_WHEELS];
	u64 expires[HTW_TEST_MAX_WHEELS], yields = 0, firsts = 0;
	u64 lasts = U64_MAX;
	struct htw_wheel_stats stats;
	struct completion *done;
	unsigned int w, i;
	bool waiting;
	int ret = 0;

	BUILD_BUG_ON(HTW_HR_SHARED * HTW_HR_SLOW_US * NSEC_PER_USEC <=
		     2 * HTW_RUN_NS);
	done = htw_hr_done(test);
	for (w = 0; w < ARRAY_SIZE(wheel); w++) {
		struct htw_wheel_params params = {
			.tick_ns = HTW_HR_TICK,
			.wheel_size = 64,
			.expire_budget = HTW_HR_BUDGET,
			/* Half on each clock, the case's own first. */
			.clockid = w & 1 ? CLOCK_BOOTTIME : p->clockid,
			.flags = p->flags,
		};

		wheel[w] = htw_test_wheel_params(test, &params);
		t[w] = htw_test_timers(test, wheel[w], HTW_HR_SHARED);
		for (i = 0; i < HTW_HR_SHARED; i++)
			t[w][i].action = htw_hr_slow;
		t[w][HTW_HR_SHARED - 1].action = htw_hr_slow_complete;
		t[w][HTW_HR_SHARED - 1].arg = 1;
	}
	/* No assertion with bottom halves off: it would leave them so. */
	local_bh_disable();
	for (w = 0; w < ARRAY_SIZE(wheel); w++) {
		expires[w] = htw_wheel_now(wheel[w]) + 2 * HTW_HR_TICK;
		for (i = 0; i < HTW_HR_SHARED && !ret; i++)
			ret = htw_add(&t[w][i].timer, expires[w], 0,
				      HTW_MODE_ABS);
	}
	/* Until every hrtimer, set for its expiry's tick, has expired. */
	do {
		waiting = false;
		for (w = 0; w < ARRAY_SIZE(wheel); w++)
			waiting |= htw_wheel_now(wheel[w]) <=
				   expires[w] + HTW_HR_TICK;
		cpu_relax();
	} while (waiting && !ret);
	local_bh_enable();
	KUNIT_ASSERT_EQ(test, ret, 0);
	for (w = 0; w < ARRAY_SIZE(wheel); w++)
		KUNIT_ASSERT_GT(test, wait_for_completion_timeout(done,
								  HTW_HR_WAIT),
				0);
	for (w = 0; w < ARRAY_SIZE(wheel); w++) {
		htw_wheel_get_stats(wheel[w], &stats);
		KUNIT_EXPECT_EQ(test, stats.fired, HTW_HR_SHARED);
		kunit_info(test, "wheel %u (%s): %llu runs, %llu yields", w,
			   w & 1 ? "CLOCK_BOOTTIME" : p->desc, stats.runs,
			   stats.yields);
		yields += stats.yields;
		firsts = max(firsts, t[w][0].seq);
		lasts = min(lasts, t[w][HTW_HR_SHARED - 1].seq);
	}
	KUNIT_EXPECT_GE(test, yields, ARRAY_SIZE(wheel) - 1);
	KUNIT_EXPECT_LT(test, firsts, lasts);
}

static atomic_t htw_hr_started, htw_hr_finished;
static DECLARE_COMPLETION(htw_hr_first_started);

/*
 * Each callback takes 1 ms, so that htw_wheel_stop() may meet one running
 * (on another CPU) or others due; the first tells the case that callbacks
 * have begun.
 */
static void htw_hr_busy_fn(struct htw_timer *timer, u64 expired, u64 count)
{
	u64 end = ktime_get_ns() + NSEC_PER_MSEC;

	if (atomic_inc_return(&htw_hr_started) == 1)
		complete(&htw_hr_first_started);
	while (ktime_get_ns() < end)
		cpu_relax();
	atomic_inc(&htw_hr_finished);
}

/*
 * Stopped while its timers come due, 1 ms apart, an hrtimer wheel makes no
 * callback once htw_wheel_stop() returns, none is still running then, and
 * it is destroyed with the rest of its timers in it.  The stop comes once
 * the first callback has begun, and only the first HTW_HR_STOP_NEAR timers
 * are near, the others an hour away: some ran and not all, whether the
 * host let the case run again at once or only after every near one.
 */
#define HTW_HR_STOPPED		1000
#define HTW_HR_STOP_NEAR	100
#define HTW_HR_STOP_FAR		(3600 * NSEC_PER_SEC)

static void htw_core_hrtimer_stop_ends_callbacks(struct kunit *test)
{
	const struct htw_hr_case *p = test->param_value;
	struct htw_wheel_params params = {
		.tick_ns = HTW_HR_TICK, .wheel_size = 64, .expire_budget = 1,
		.clockid = p->clockid, .flags = p->flags,
	};
	struct htw_wheel *wheel;
	unsigned int i, started;
	struct htw_timer *t;
	u64 start, expires;

	t = kunit_kcalloc(test, HTW_HR_STOPPED, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	wheel = htw_wheel_create(&params);
	KUNIT_ASSERT_FALSE(test, IS_ERR(wheel));
	atomic_set(&htw_hr_started, 0);
	atomic_set(&htw_hr_finished, 0);
	reinit_completion(&htw_hr_first_started);
	start = htw_wheel_now(wheel);
	/* No ASSERT from here on: the wheel must be stopped before @t goes. */
	for (i = 0; i < HTW_HR_STOPPED; i++) {
		expires = i < HTW_HR_STOP_NEAR ? (i + 1) * HTW_HR_TICK :
						 HTW_HR_STOP_FAR;
		htw_timer_init(&t[i], wheel, htw_hr_busy_fn);
		KUNIT_EXPECT_EQ(test, htw_add(&t[i], start + expires, 0,
					      HTW_MODE_ABS), 0);
	}
	KUNIT_EXPECT_GT(test, wait_for_completion_timeout(&htw_hr_first_started,
							  HTW_HR_WAIT), 0);
	htw_wheel_stop(wheel);
	started = atomic_read(&htw_hr_started);
	KUNIT_EXPECT_EQ(test, atomic_read(&htw_hr_finished), started);
	/* A slow host only makes the sleep longer, and the check stronger. */
	msleep(20);
	KUNIT_EXPECT_EQ(test, atomic_read(&htw_hr_started), started);
	/* Some ran, so that the stop had callbacks to end; not all could. */
	KUNIT_EXPECT_GT(test, started, 0);
	KUNIT_EXPECT_LE(test, started, HTW_HR_STOP_NEAR);
	htw_wheel_destroy(wheel);
}

static u64 htw_hr_programs(struct htw_wheel *wheel)
{
	struct htw_wheel_stats st;

	htw_wheel_get_stats(wheel, &st);
	return st.programs;
}

/*
 * A cancel of the earliest timer leaves the hrtimer as it is, as timer.c
 * leaves its clock event (a spurious run costs less than a re-arm per
 * cancel); an arm earlier still then re-arms it, and runs in time.  The
 * timers before it are far, so that no run comes between the looks.
 */
static void htw_core_hrtimer_cancel_of_earliest_is_lazy(struct kunit *test)
{
	struct completion *done;
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	u64 start, programs;

	done = htw_hr_done(test);
	wheel = htw_hr_wheel(test);
	t = htw_test_timers(test, wheel, 3);
	t[2].action = htw_hr_complete;
	t[2].arg = 1;

	start = htw_wheel_now(wheel);
	KUNIT_ASSERT_EQ(test, htw_add(&t[0].timer, start + 1800 * NSEC_PER_SEC,
				      0, HTW_MODE_ABS), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t[1].timer, start + 3600 * NSEC_PER_SEC,
				      0, HTW_MODE_ABS), 0);
	programs = htw_hr_programs(wheel);
	KUNIT_EXPECT_TRUE(test, htw_del(&t[0].timer));
	KUNIT_EXPECT_EQ_MSG(test, htw_hr_programs(wheel), programs,
			    "the cancel of the earliest re-armed the hrtimer");
	/* Earlier still: only a re-armed hrtimer runs it within the wait. */
	start = htw_wheel_now(wheel);
	KUNIT_ASSERT_EQ(test, htw_add(&t[2].timer, start + 5 * NSEC_PER_MSEC,
				      0, HTW_MODE_ABS), 0);
	KUNIT_ASSERT_GT(test, wait_for_completion_timeout(done, HTW_HR_WAIT),
			0);
	KUNIT_EXPECT_GE(test, t[2].fired_at, start + 5 * NSEC_PER_MSEC);
	/* The cancelled one is gone, the far one still waits. */
	KUNIT_EXPECT_FALSE(test, htw_pending(&t[0].timer));
	KUNIT_EXPECT_TRUE(test, htw_pending(&t[1].timer));
	KUNIT_EXPECT_EQ(test, t[0].fires, 0);
}

/*
 * A group of operations under one hold of the wheel (htw_wheel_lock())
 * arms the hrtimer once, at the unlock, however many of them would have
 * re-armed it alone; the timers it moved and armed run in time, and those
 * it cancelled never.  The first group is far, so that no run comes
 * before the count; the second brings half the timers near.
 */
#define HTW_HR_GROUP	16

static void htw_core_hrtimer_group_arms_the_hrtimer_once(struct kunit *test)
{
	unsigned long flags, until;
	struct htw_wheel_stats st;
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	u64 start, programs;
	unsigned int i;

	wheel = htw_hr_wheel(test);
	t = htw_test_timers(test, wheel, HTW_HR_GROUP);

	start = htw_wheel_now(wheel);
	programs = htw_hr_programs(wheel);
	htw_wheel_lock(wheel, &flags);
	/* Each earlier than the last: alone, each would re-arm the hrtimer. */
	for (i = 0; i < HTW_HR_GROUP; i++)
		KUNIT_EXPECT_EQ(test, htw_mod_locked(&t[i].timer, start +
						     (3600 - i) * NSEC_PER_SEC,
						     0, HTW_MODE_ABS), 0);
	/* An armed timer moved says so; a bad mode changes nothing. */
	KUNIT_EXPECT_EQ(test, htw_mod_locked(&t[0].timer, start + 7200 *
					     NSEC_PER_SEC, 0, HTW_MODE_ABS), 1);
	KUNIT_EXPECT_EQ(test, htw_mod_locked(&t[0].timer, 0, 0, 7), -EINVAL);
	htw_wheel_unlock(wheel, flags);
	KUNIT_EXPECT_EQ(test, htw_hr_programs(wheel), programs + 1);

	start = htw_wheel_now(wheel);
	htw_wheel_lock(wheel, &flags);
	for (i = 1; i < HTW_HR_GROUP / 2; i++)
		KUNIT_EXPECT_EQ(test, htw_mod_locked(&t[i].timer, start +
						     (20 - i) * NSEC_PER_MSEC,
						     0, HTW_MODE_ABS), 1);
	for (i = HTW_HR_GROUP / 2; i < HTW_HR_GROUP; i++)
		KUNIT_EXPECT_TRUE(test, htw_del_locked(&t[i].timer));
	KUNIT_EXPECT_FALSE(test, htw_del_locked(&t[HTW_HR_GROUP - 1].timer));
	KUNIT_EXPECT_TRUE(test, htw_del_locked(&t[0].timer));
	htw_wheel_unlock(wheel, flags);

	/* Every timer brought near runs, in whatever order a slow host lets. */
	until = jiffies + HTW_HR_WAIT;
	for (i = 1; i < HTW_HR_GROUP / 2; i++)
		while (!READ_ONCE(t[i].fires) && time_before(jiffies, until))
			usleep_range(1000, 2000);
	for (i = 0; i < HTW_HR_GROUP; i++) {
		u64 expires = start + (20 - i) * NSEC_PER_MSEC;
		bool near = i && i < HTW_HR_GROUP / 2;

		KUNIT_EXPECT_EQ_MSG(test, READ_ONCE(t[i].fires), near,
				    "timer %u", i);
		KUNIT_EXPECT_FALSE_MSG(test, htw_pending(&t[i].timer),
				       "timer %u", i);
		if (near)
			KUNIT_EXPECT_GE_MSG(test, t[i].fired_at, expires,
					    "timer %u", i);
	}
	/* Nothing is left in the wheel: the cancelled ones are gone. */
	htw_wheel_get_stats(wheel, &st);
	KUNIT_EXPECT_EQ(test, st.pending, 0);
}

static struct kunit_case htw_core_hrtimer_test_cases[] = {
	KUNIT_CASE_PARAM(htw_core_hrtimer_empty_wheel_never_runs,
			 htw_hr_cases_gen_params),
	KUNIT_CASE_PARAM(htw_core_hrtimer_far_timer_takes_a_run_per_level,
			 htw_hr_cases_gen_params),
	KUNIT_CASE_PARAM(htw_core_hrtimer_run_goes_on_past_its_budget,
			 htw_hr_cases_gen_params),
	KUNIT_CASE_PARAM(htw_core_hrtimer_run_is_bounded_in_time,
			 htw_hr_cases_gen_params),
	KUNIT_CASE_PARAM(htw_core_hrtimer_wheels_share_the_cpu_bound,
			 htw_hr_cases_gen_params),
	KUNIT_CASE_PARAM(htw_core_hrtimer_stop_ends_callbacks,
			 htw_hr_cases_gen_params),
	KUNIT_CASE_PARAM(htw_core_hrtimer_timers_run_never_early,
			 htw_hr_cases_gen_params),
	KUNIT_CASE_PARAM(htw_core_hrtimer_cancel_of_earliest_is_lazy,
			 htw_hr_cases_gen_params),
	KUNIT_CASE_PARAM(htw_core_hrtimer_group_arms_the_hrtimer_once,
			 htw_hr_cases_gen_params),
	KUNIT_CASE_PARAM(htw_core_hrtimer_del_sync_stops_periodic_timer,
			 htw_hr_cases_gen_params),
	{}
};

static struct kunit_suite htw_core_hrtimer_test_suite = {
	.name = "htw_core_hrtimer",
	.init = htw_test_init,
	.exit = htw_test_exit,
	.test_cases = htw_core_hrtimer_test_cases,
};

kunit_test_suite(htw_core_hrtimer_test_suite);
