// SPDX-License-Identifier: GPL-2.0
/*
 * A kernel user of htw that is unloaded while its callbacks run
 *
 * Loading it arms @timers timers on a wheel of its own, in 8 phases a
 * tick apart: half periodic at one tick, half one-shot timers whose
 * callback arms them again.  With the default of none it does nothing.
 * Unloading cancels each with htw_del_sync(), as a user must before its
 * callbacks' code goes away, while the others keep firing on other CPUs,
 * then destroys the wheel.  The user-space lifetime test loads and unloads
 * it again and again; what can go wrong is what the kernel reports by
 * itself (a callback run after its module is gone, a wheel destroyed with
 * timers armed) or what this module checks and WARNs about: a callback
 * after htw_del_sync() returned.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/time64.h>

#include "../htw_core.h"

#define LIFETIME_TICK_NS	NSEC_PER_MSEC

/* Loaded by the rig with the other modules, it stays idle. */
static unsigned int timers;
module_param(timers, uint, 0444);
MODULE_PARM_DESC(timers, "timers to arm (0 to 256)");

/**
 * struct lifetime_timer - one timer of this module
 * @timer: the wheel's timer
 * @calls: callbacks so far
 * @stopped: htw_del_sync() returned for it; no callback may follow
 * @periodic: periodic, else one-shot re-armed by its callback
 */
struct lifetime_timer {
	struct htw_timer timer;
	atomic_t calls;
	bool stopped;
	bool periodic;
};

static struct htw_wheel *lifetime_wheel;
static struct lifetime_timer *lifetime_timers;
static atomic_t lifetime_running = ATOMIC_INIT(0);
static atomic_long_t lifetime_calls = ATOMIC_LONG_INIT(0);
static DECLARE_COMPLETION(lifetime_started);

static void lifetime_fn(struct htw_timer *timer, u64 expired, u64 count)
{
	struct lifetime_timer *lt = container_of(timer, struct lifetime_timer,
						 timer);

	atomic_inc(&lifetime_running);
	WARN(READ_ONCE(lt->stopped), "htw_lifetime: callback after htw_del_sync()\n");
	atomic_inc(&lt->calls);
	if (atomic_long_inc_return(&lifetime_calls) == timers)
		complete(&lifetime_started);
	/* Long enough that unloading often finds a callback running. */
	udelay(5);
	if (!lt->periodic)
		htw_add(timer, expired + LIFETIME_TICK_NS, 0, HTW_MODE_ABS);
	atomic_dec(&lifetime_running);
}

static void lifetime_stop(void)
{
	unsigned int i, raced = 0;

	for (i = 0; i < timers; i++) {
		struct lifetime_timer *lt = &lifetime_timers[i];

		raced += atomic_read(&lifetime_running) > 0;
		htw_del_sync(&lt->timer);
		WARN(htw_pending(&lt->timer),
		     "htw_lifetime: timer armed after htw_del_sync()\n");
		WRITE_ONCE(lt->stopped, true);
	}
	htw_wheel_destroy(lifetime_wheel);
	pr_info("%u timers, %ld callbacks, %u cancelled with a callback running\n",
		timers, atomic_long_read(&lifetime_calls), raced);
	kfree(lifetime_timers);
}

static int __init lifetime_init(void)
{
	struct htw_wheel_params params = {
		.tick_ns = LIFETIME_TICK_NS,
		.wheel_size = 64,
		.clockid = CLOCK_MONOTONIC,
	};
	unsigned int i;
	u64 now;
	int ret;

	if (timers > 256)
		return -EINVAL;
	if (!timers)
		return 0;
	lifetime_timers = kcalloc(timers, sizeof(*lifetime_timers), GFP_KERNEL);
	if (!lifetime_timers)
		return -ENOMEM;
	lifetime_wheel = htw_wheel_create(&params);
	if (IS_ERR(lifetime_wheel)) {
		kfree(lifetime_timers);
		return PTR_ERR(lifetime_wheel);
	}

	now = htw_wheel_now(lifetime_wheel);
	for (i = 0; i < timers; i++) {
		struct lifetime_timer *lt = &lifetime_timers[i];

		lt->periodic = i % 2;
		htw_timer_init(&lt->timer, lifetime_wheel, lifetime_fn);
		ret = htw_add(&lt->timer, now + (i % 8) * LIFETIME_TICK_NS,
			      lt->periodic ? LIFETIME_TICK_NS : 0, HTW_MODE_ABS);
		if (ret) {
			timers = i;
			lifetime_stop();
			return ret;
		}
	}
	/*
	 * Return once they are running, so that unloading finds them so.  The
	 * wait only ends a load on a broken wheel: a loaded host delays the
	 * first callbacks by far less.
	 */
	if (!wait_for_completion_timeout(&lifetime_started, 60 * HZ)) {
		lifetime_stop();
		return -ETIMEDOUT;
	}
	return 0;
}

static void __exit lifetime_exit(void)
{
	if (timers)
		lifetime_stop();
}

module_init(lifetime_init);
module_exit(lifetime_exit);

MODULE_DESCRIPTION("htw test: a kernel user unloaded while its timers run");
MODULE_LICENSE("GPL");
