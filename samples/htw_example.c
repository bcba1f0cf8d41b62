// SPDX-License-Identifier: GPL-2.0
/*
 * How another module uses the htw timing wheel
 *
 * A user embeds struct htw_timer in its own objects, creates a wheel with
 * the tick (the precision) it needs, arms one-shot and periodic timers, and
 * on unload cancels each with htw_del_sync() before destroying the wheel:
 * once htw_del_sync() returns, the callback is neither running nor armed.
 *
 * Loading this module is also a test of the exported API: init waits for
 * its timers and fails if one ran before its expiry, ran twice, or did not
 * run at all within a few seconds.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/err.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/time64.h>

#include "../htw_core.h"

#define EXAMPLE_TICK_NS		NSEC_PER_MSEC
#define EXAMPLE_PERIOD_NS	(10 * NSEC_PER_MSEC)
#define EXAMPLE_PERIODS		3
#define EXAMPLE_WAIT		(5 * HZ)

/**
 * struct example_timer - one of this module's timers
 * @timer: the wheel's timer, embedded
 * @name: what the log calls it
 * @delay_ns: how far ahead it is armed
 * @period_ns: its period, 0 for a one-shot timer
 * @expires: the first expiry it was armed for
 * @fired_at: the wheel's time in its last callback
 * @last_expired: the expiry its last callback reported
 * @expiries: expiries reported so far, overruns included
 * @calls: callbacks so far
 * @early: a callback ran before the expiry it reported
 * @done: completed at the callback that makes @calls reach @wait_calls
 * @wait_calls: the callbacks init waits for
 */
struct example_timer {
	struct htw_timer timer;
	const char *name;
	u64 delay_ns;
	u64 period_ns;
	u64 expires;
	u64 fired_at;
	u64 last_expired;
	u64 expiries;
	unsigned int calls;
	bool early;
	struct completion done;
	unsigned int wait_calls;
};

static struct htw_wheel *example_wheel;

static struct example_timer example_timers[] = {
	{ .name = "one-shot 1 ms", .delay_ns = 1 * NSEC_PER_MSEC },
	{ .name = "one-shot 2 ms", .delay_ns = 2 * NSEC_PER_MSEC },
	{ .name = "one-shot 5 ms", .delay_ns = 5 * NSEC_PER_MSEC },
	{ .name = "periodic 10 ms", .delay_ns = EXAMPLE_PERIOD_NS,
	  .period_ns = EXAMPLE_PERIOD_NS },
	/* Left running until the module is unloaded. */
	{ .name = "ticker 10 ms", .delay_ns = EXAMPLE_PERIOD_NS,
	  .period_ns = EXAMPLE_PERIOD_NS },
};

#define EXAMPLE_CHECKED		(ARRAY_SIZE(example_timers) - 1)

/* Runs in softirq context: it only records, it never sleeps. */
static void example_fn(struct htw_timer *timer, u64 expired, u64 count)
{
	struct example_timer *et = container_of(timer, struct example_timer,
						timer);
	u64 now = htw_wheel_now(example_wheel);

	if (now < expired)
		et->early = true;
	et->fired_at = now;
	et->last_expired = expired;
	et->expiries += count;
	if (++et->calls == et->wait_calls)
		complete(&et->done);
}

static void example_cancel_all(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(example_timers); i++)
		htw_del_sync(&example_timers[i].timer);
}

/* Whether timer @et, now stopped, behaved as the API promises. */
static int example_check(struct example_timer *et)
{
	u64 last = et->expires + (et->expiries - 1) * et->period_ns;

	if (et->early) {
		pr_err("%s ran before its expiry\n", et->name);
		return -EIO;
	}
	if (!et->period_ns && et->calls != 1) {
		pr_err("%s ran %u times\n", et->name, et->calls);
		return -EIO;
	}
	if (et->last_expired != last || et->fired_at < last) {
		pr_err("%s reported expiry %llu at %llu, expected %llu\n",
		       et->name, et->last_expired, et->fired_at, last);
		return -EIO;
	}
	pr_info("%s ran %u times, last %llu us after its expiry\n", et->name,
		et->calls, div_u64(et->fired_at - last, NSEC_PER_USEC));
	return 0;
}

static int __init example_init(void)
{
	struct htw_wheel_params params = {
		.tick_ns = EXAMPLE_TICK_NS,
		.wheel_size = 64,
		.clockid = CLOCK_MONOTONIC,
	};
	struct example_timer *ticker = &example_timers[EXAMPLE_CHECKED];
	struct example_timer *et;
	unsigned int i;
	u64 now;
	int ret;

	example_wheel = htw_wheel_create(&params);
	if (IS_ERR(example_wheel))
		return PTR_ERR(example_wheel);

	now = htw_wheel_now(example_wheel);
	for (i = 0; i < ARRAY_SIZE(example_timers); i++) {
		et = &example_timers[i];
		init_completion(&et->done);
		et->wait_calls = et->period_ns ? EXAMPLE_PERIODS : 1;
		et->expires = now + et->delay_ns;
		htw_timer_init(&et->timer, example_wheel, example_fn);
		ret = htw_add(&et->timer, et->expires, et->period_ns,
			      HTW_MODE_ABS);
		if (ret) {
			pr_err("arming %s failed: %d\n", et->name, ret);
			goto err_cancel;
		}
	}

	/* A pending timer is armed once: arming it again is refused. */
	ret = htw_add(&ticker->timer, now, 0, HTW_MODE_ABS);
	if (ret != -EBUSY) {
		pr_err("second arming of a pending timer returned %d\n", ret);
		ret = -EIO;
		goto err_cancel;
	}

	for (i = 0; i < ARRAY_SIZE(example_timers); i++) {
		et = &example_timers[i];
		if (!wait_for_completion_timeout(&et->done, EXAMPLE_WAIT)) {
			pr_err("%s did not run within %u ms\n", et->name,
			       jiffies_to_msecs(EXAMPLE_WAIT));
			ret = -ETIMEDOUT;
			goto err_cancel;
		}
	}

	for (i = 0; i < EXAMPLE_CHECKED; i++) {
		et = &example_timers[i];
		if (htw_del_sync(&et->timer) != !!et->period_ns) {
			pr_err("%s: htw_del_sync() disagrees on pending\n",
			       et->name);
			ret = -EIO;
			goto err_cancel;
		}
		ret = example_check(et);
		if (ret)
			goto err_cancel;
	}
	return 0;

err_cancel:
	example_cancel_all();
	htw_wheel_destroy(example_wheel);
	return ret;
}

static void __exit example_exit(void)
{
	struct example_timer *ticker = &example_timers[EXAMPLE_CHECKED];

	example_cancel_all();
	if (ticker->early)
		pr_err("%s ran before its expiry\n", ticker->name);
	pr_info("%s ran %u times\n", ticker->name, ticker->calls);
	htw_wheel_destroy(example_wheel);
}

module_init(example_init);
module_exit(example_exit);

MODULE_DESCRIPTION("Example user of the htw timing wheel");
MODULE_LICENSE("GPL");
