// SPDX-License-Identifier: GPL-2.0
/*
 * The timers and event queue behind one open /dev/htw
 *
 * Each timer a file arms is a struct htw_utimer: a struct htw_timer on one
 * of the shared wheels, the timer's id in the context's xarray, and the
 * record of its pending event.  The record lives in the timer, so a timer
 * has at most one event queued whatever its period, and the memory of a
 * context is bounded by the number of its timers: an expiry of a timer whose
 * event is still queued only raises the event's count, as timerfd's ticks.
 *
 * The wheel calls htw_utimer_fn() in softirq context.  It only records the
 * expiry and wakes readers, like timerfd_triggered(); everything else runs
 * in the context of the process.
 *
 * Lifetime: a timer is freed when it is cancelled, when the event of a
 * one-shot timer is read (its id is released then: a one-shot timer has
 * exactly one event), or when its context is destroyed.  A one-shot timer
 * whose callback has queued its event is no longer armed, and the wheel
 * does not touch it again; every other timer is taken off its wheel with
 * htw_del_sync() before it is freed, so that no callback still runs on it.
 *
 * Locking
 * -------
 * ctx->lock (a mutex) serialises everything that looks a timer up by id or
 * frees it: arm, modify, cancel, and the part of read() that takes events
 * off the queue and releases one-shot timers.  Holding it, a timer cannot
 * disappear; it is never taken by the callbacks.
 *
 * ctx->wqh.lock (the wait queue's spinlock, taken with interrupts disabled)
 * protects the event queue and each timer's event record; the callbacks
 * take it, as timerfd's do.
 *
 * Lock order: ctx->lock, then ctx->wqh.lock.  The wheels' locks never nest
 * with ctx->wqh.lock: callbacks run without them, and htw_*() are never
 * called with ctx->wqh.lock held.  htw_del_sync() is called with ctx->lock
 * held and waits for a callback, which is safe because callbacks never take
 * ctx->lock.
 */

#include <kunit/visibility.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "htw_core.h"
#include "htw_ctx.h"

/* Flags of struct htw_utimer, stable while the timer is armed. */
#define HTW_UT_PERIODIC		BIT(0)
#define HTW_UT_BOOTTIME		BIT(1)

/**
 * struct htw_utimer - a timer of user space
 * @timer: the timer on its wheel
 * @ctx: the context it belongs to
 * @user_data: the value its events carry
 * @event: in &htw_ctx.events while an event is queued, else empty
 * @count: expiries the queued event accounts for
 * @expires: the latest of them
 * @fired: when the wheel delivered it
 * @id: the timer's id in &htw_ctx.timers
 * @flags: %HTW_UT_PERIODIC, %HTW_UT_BOOTTIME
 *
 * @event, @count, @expires and @fired are protected by &htw_ctx.wqh.lock;
 * the other fields change only under &htw_ctx.lock, while the timer is not
 * armed.
 */
struct htw_utimer {
	struct htw_timer timer;
	struct htw_ctx *ctx;
	u64 user_data;
	struct list_head event;
	u64 count;
	u64 expires;
	u64 fired;
	u32 id;
	u32 flags;
};

/**
 * struct htw_ctx - one open /dev/htw
 * @params: its wheels and limits
 * @lock: see "Locking" above
 * @timers: id -> struct htw_utimer; changed under @lock
 * @nr_timers: timers in @timers; changed under @lock
 * @wqh: readers and pollers wait here; its lock protects the fields below
 * @events: timers with an event queued, in the order they were queued
 * @nr_queued: timers in @events
 */
struct htw_ctx {
	struct htw_ctx_params params;
	struct mutex lock;		/* see "Locking" above */
	struct xarray timers;
	u32 nr_timers;

	/* The following fields are protected by wqh.lock. */
	wait_queue_head_t wqh;
	struct list_head events;
	u32 nr_queued;
};

static struct kmem_cache *htw_utimer_cache;

/**
 * htw_ctx_init() - set up what all contexts share
 *
 * Context: Process context, at module load.
 * Return: 0 or -ENOMEM.
 */
int htw_ctx_init(void)
{
	htw_utimer_cache = KMEM_CACHE(htw_utimer, SLAB_ACCOUNT);
	return htw_utimer_cache ? 0 : -ENOMEM;
}

/**
 * htw_ctx_exit() - undo htw_ctx_init(), once every context is destroyed
 *
 * Context: Process context, at module unload.
 */
void htw_ctx_exit(void)
{
	kmem_cache_destroy(htw_utimer_cache);
}

static enum htw_ctx_clock htw_utimer_clock(const struct htw_utimer *ut)
{
	return ut->flags & HTW_UT_BOOTTIME ? HTW_CTX_BOOTTIME : HTW_CTX_MONOTONIC;
}

/* The wheel's callback: record the expiry in the timer's event, queue it. */
static void htw_utimer_fn(struct htw_timer *timer, u64 expired, u64 count)
{
	struct htw_utimer *ut = container_of(timer, struct htw_utimer, timer);
	struct htw_ctx *ctx = ut->ctx;
	u64 now = htw_wheel_now(ctx->params.wheel[htw_utimer_clock(ut)]);
	unsigned long flags;

	spin_lock_irqsave(&ctx->wqh.lock, flags);
	ut->count += count;
	ut->expires = expired;
	ut->fired = now;
	if (list_empty(&ut->event)) {
		list_add_tail(&ut->event, &ctx->events);
		WRITE_ONCE(ctx->nr_queued, ctx->nr_queued + 1);
	}
	wake_up_locked_poll(&ctx->wqh, EPOLLIN | EPOLLRDNORM);
	spin_unlock_irqrestore(&ctx->wqh.lock, flags);
}

/* Drop the timer's queued event, if any. */
static void __htw_utimer_unqueue(struct htw_ctx *ctx, struct htw_utimer *ut)
	__must_hold(&ctx->wqh.lock)
{
	lockdep_assert_held(&ctx->wqh.lock);

	if (!list_empty(&ut->event)) {
		list_del_init(&ut->event);
		WRITE_ONCE(ctx->nr_queued, ctx->nr_queued - 1);
	}
	ut->count = 0;
}

/*
 * Check a timer spec and turn its expiry into an absolute time on its clock.
 * Validation comes before any lock: flags, then the period, then the expiry.
 */
static int htw_spec_check(const struct htw_ctx *ctx,
			  const struct htw_timer_spec *spec, u64 *expires)
{
	enum htw_ctx_clock clock;
	u64 now;

	if (spec->flags & ~(HTW_TIMER_ABSTIME | HTW_TIMER_BOOTTIME))
		return -EINVAL;
	if (spec->period && (spec->period < ctx->params.min_period_ns ||
			     spec->period > HTW_TIME_MAX))
		return -EINVAL;

	*expires = spec->expires;
	if (!(spec->flags & HTW_TIMER_ABSTIME)) {
		clock = spec->flags & HTW_TIMER_BOOTTIME ? HTW_CTX_BOOTTIME :
							    HTW_CTX_MONOTONIC;
		now = htw_wheel_now(ctx->params.wheel[clock]);
		if (check_add_overflow(now, spec->expires, expires))
			return -EINVAL;
	}
	return *expires > HTW_TIME_MAX ? -EINVAL : 0;
}

/* Put an idle timer on its wheel as @spec says; @expires is absolute. */
static void htw_utimer_start(struct htw_ctx *ctx, struct htw_utimer *ut,
			     const struct htw_timer_spec *spec, u64 expires)
	__must_hold(&ctx->lock)
{
	lockdep_assert_held(&ctx->lock);

	ut->user_data = spec->user_data;
	ut->flags = 0;
	if (spec->period)
		ut->flags |= HTW_UT_PERIODIC;
	if (spec->flags & HTW_TIMER_BOOTTIME)
		ut->flags |= HTW_UT_BOOTTIME;
	htw_timer_init(&ut->timer, ctx->params.wheel[htw_utimer_clock(ut)],
		       htw_utimer_fn);
	/* Cannot fail: the timer is idle and the expiry absolute. */
	WARN_ON_ONCE(htw_add(&ut->timer, expires, spec->period, HTW_MODE_ABS));
}

/*
 * Take a timer off its wheel, wait for its callback, and drop its event:
 * once this returns, the timer queues nothing more until it is re-armed.
 */
static void htw_utimer_stop(struct htw_ctx *ctx, struct htw_utimer *ut)
	__must_hold(&ctx->lock)
{
	lockdep_assert_held(&ctx->lock);

	htw_del_sync(&ut->timer);
	spin_lock_irq(&ctx->wqh.lock);
	__htw_utimer_unqueue(ctx, ut);
	spin_unlock_irq(&ctx->wqh.lock);
}

/* Forget a timer that is off its wheel and has no event queued. */
static void htw_utimer_release(struct htw_ctx *ctx, struct htw_utimer *ut)
	__must_hold(&ctx->lock)
{
	lockdep_assert_held(&ctx->lock);

	xa_erase(&ctx->timers, ut->id);
	WRITE_ONCE(ctx->nr_timers, ctx->nr_timers - 1);
	kmem_cache_free(htw_utimer_cache, ut);
}

/**
 * htw_ctx_create() - create a context with no timers
 * @params: its wheels and limits, copied
 *
 * Context: Process context; may sleep.  Memory is charged to the caller's
 * memory cgroup.
 * Return: the context, or ERR_PTR(-ENOMEM).
 */
struct htw_ctx *htw_ctx_create(const struct htw_ctx_params *params)
{
	struct htw_ctx *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx)
		return ERR_PTR(-ENOMEM);

	ctx->params = *params;
	mutex_init(&ctx->lock);
	xa_init_flags(&ctx->timers, XA_FLAGS_ALLOC1);
	init_waitqueue_head(&ctx->wqh);
	INIT_LIST_HEAD(&ctx->events);
	return ctx;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_create);

/**
 * htw_ctx_destroy() - cancel every timer of a context and free it
 * @ctx: the context; nothing else may use it any more
 *
 * Safe while the timers are expiring: each is taken off its wheel, and its
 * callback waited for, before any is freed.
 *
 * Context: Process context; may sleep.
 */
void htw_ctx_destroy(struct htw_ctx *ctx)
{
	struct htw_utimer *ut;
	unsigned long id;

	/* Callbacks of the timers not yet stopped may still queue events. */
	xa_for_each(&ctx->timers, id, ut) {
		htw_del_sync(&ut->timer);
		cond_resched();
	}
	/* None runs now, so the queue can be dropped without its lock. */
	xa_for_each(&ctx->timers, id, ut) {
		kmem_cache_free(htw_utimer_cache, ut);
		cond_resched();
	}
	xa_destroy(&ctx->timers);
	mutex_destroy(&ctx->lock);
	kfree(ctx);
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_destroy);

/**
 * htw_ctx_arm() - arm a new timer
 * @ctx: the context
 * @spec: the timer; its @id is set on success
 *
 * Context: Process context; may sleep.
 * Return: 0; -EINVAL for an unknown flag, a period out of range, or an
 * expiry beyond %HTW_TIME_MAX; -ENOSPC if @ctx holds its maximum of timers;
 * -ENOMEM.
 */
int htw_ctx_arm(struct htw_ctx *ctx, struct htw_timer_spec *spec)
{
	struct htw_utimer *ut;
	u64 expires;
	u32 id;
	int ret;

	ret = htw_spec_check(ctx, spec, &expires);
	if (ret)
		return ret;

	ut = kmem_cache_zalloc(htw_utimer_cache, GFP_KERNEL_ACCOUNT);
	if (!ut)
		return -ENOMEM;
	ut->ctx = ctx;
	INIT_LIST_HEAD(&ut->event);

	mutex_lock(&ctx->lock);
	ret = xa_alloc(&ctx->timers, &id, ut,
		       XA_LIMIT(1, ctx->params.max_timers), GFP_KERNEL_ACCOUNT);
	if (ret) {
		/* xa_alloc() says -EBUSY when every id in the limit is taken. */
		if (ret == -EBUSY)
			ret = -ENOSPC;
		goto out_free;
	}
	ut->id = id;
	WRITE_ONCE(ctx->nr_timers, ctx->nr_timers + 1);
	htw_utimer_start(ctx, ut, spec, expires);
	mutex_unlock(&ctx->lock);

	spec->id = id;
	return 0;

out_free:
	mutex_unlock(&ctx->lock);
	kmem_cache_free(htw_utimer_cache, ut);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_arm);

/**
 * htw_ctx_modify() - re-arm a timer with a new expiry, period and value
 * @ctx: the context
 * @spec: the timer's id, and how to arm it
 *
 * The timer may be armed or have expired; its queued event, if any, is
 * dropped, and no event of its old schedule is queued after this returns.
 *
 * Context: Process context; may sleep.
 * Return: 0; -EINVAL as for htw_ctx_arm(); -ENOENT if @ctx has no such timer.
 */
int htw_ctx_modify(struct htw_ctx *ctx, const struct htw_timer_spec *spec)
{
	struct htw_utimer *ut;
	u64 expires;
	int ret;

	ret = htw_spec_check(ctx, spec, &expires);
	if (ret)
		return ret;

	mutex_lock(&ctx->lock);
	ut = xa_load(&ctx->timers, spec->id);
	if (ut) {
		htw_utimer_stop(ctx, ut);
		htw_utimer_start(ctx, ut, spec, expires);
	}
	mutex_unlock(&ctx->lock);
	return ut ? 0 : -ENOENT;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_modify);

/**
 * htw_ctx_cancel() - cancel a timer and release its id
 * @ctx: the context
 * @id: the timer
 *
 * The timer's queued event, if any, is dropped, and none is queued after
 * this returns.
 *
 * Context: Process context; may sleep.
 * Return: 0, or -ENOENT if @ctx has no such timer.
 */
int htw_ctx_cancel(struct htw_ctx *ctx, u32 id)
{
	struct htw_utimer *ut;

	mutex_lock(&ctx->lock);
	ut = xa_load(&ctx->timers, id);
	if (ut) {
		htw_utimer_stop(ctx, ut);
		htw_utimer_release(ctx, ut);
	}
	mutex_unlock(&ctx->lock);
	return ut ? 0 : -ENOENT;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_cancel);

/* Take the first queued event off the queue; return its timer or NULL. */
static struct htw_utimer *htw_ctx_pop(struct htw_ctx *ctx,
				      struct htw_event *ev)
	__must_hold(&ctx->lock)
{
	struct htw_utimer *ut;

	lockdep_assert_held(&ctx->lock);

	spin_lock_irq(&ctx->wqh.lock);
	ut = list_first_entry_or_null(&ctx->events, struct htw_utimer, event);
	if (ut) {
		*ev = (struct htw_event) {
			.id = ut->id,
			.user_data = ut->user_data,
			.count = ut->count,
			.expires = ut->expires,
			.fired = ut->fired,
		};
		if (!(ut->flags & HTW_UT_PERIODIC))
			ev->flags |= HTW_EVENT_LAST;
		if (ut->flags & HTW_UT_BOOTTIME)
			ev->flags |= HTW_EVENT_BOOTTIME;
		__htw_utimer_unqueue(ctx, ut);
	}
	spin_unlock_irq(&ctx->wqh.lock);
	return ut;
}

/* Give back an event that could not be copied, at the head of the queue. */
static void htw_ctx_unpop(struct htw_ctx *ctx, struct htw_utimer *ut,
			  const struct htw_event *ev)
	__must_hold(&ctx->lock)
{
	lockdep_assert_held(&ctx->lock);

	spin_lock_irq(&ctx->wqh.lock);
	if (list_empty(&ut->event)) {
		ut->expires = ev->expires;
		ut->fired = ev->fired;
		list_add(&ut->event, &ctx->events);
		WRITE_ONCE(ctx->nr_queued, ctx->nr_queued + 1);
	}
	/* A periodic timer may have expired again meanwhile. */
	ut->count += ev->count;
	spin_unlock_irq(&ctx->wqh.lock);
}

/*
 * Copy out as many queued events as @to has room for.  A non-blocking
 * reader does not wait for the lock either: another reader holds it.
 */
static ssize_t htw_ctx_drain(struct htw_ctx *ctx, struct iov_iter *to,
			     bool nonblock)
{
	struct htw_utimer *ut;
	struct htw_event ev;
	ssize_t done = 0;

	if (!nonblock)
		mutex_lock(&ctx->lock);
	else if (!mutex_trylock(&ctx->lock))
		return -EAGAIN;
	while (iov_iter_count(to) >= sizeof(ev)) {
		ut = htw_ctx_pop(ctx, &ev);
		if (!ut)
			break;
		if (copy_to_iter(&ev, sizeof(ev), to) != sizeof(ev)) {
			htw_ctx_unpop(ctx, ut, &ev);
			if (!done)
				done = -EFAULT;
			break;
		}
		done += sizeof(ev);
		if (ev.flags & HTW_EVENT_LAST)
			htw_utimer_release(ctx, ut);
	}
	mutex_unlock(&ctx->lock);
	return done;
}

/**
 * htw_ctx_read() - read queued events
 * @ctx: the context
 * @to: where to copy them: as many whole struct htw_event as fit
 * @nonblock: return -EAGAIN rather than wait for an event, or for another
 *	reader to finish
 *
 * Reading the event of a one-shot timer releases the timer and its id.  An
 * event that cannot be copied stays queued.
 *
 * Context: Process context; may sleep.
 * Return: the bytes copied; -EINVAL if @to cannot hold one event; -EAGAIN;
 * -ERESTARTSYS if a signal interrupted the wait; -EFAULT.
 */
ssize_t htw_ctx_read(struct htw_ctx *ctx, struct iov_iter *to, bool nonblock)
{
	ssize_t ret;

	if (iov_iter_count(to) < sizeof(struct htw_event))
		return -EINVAL;

	/* Another reader may take the events between the wait and the drain. */
	do {
		spin_lock_irq(&ctx->wqh.lock);
		if (!list_empty(&ctx->events))
			ret = 0;
		else if (nonblock)
			ret = -EAGAIN;
		else
			ret = wait_event_interruptible_locked_irq(ctx->wqh,
								  !list_empty(&ctx->events));
		spin_unlock_irq(&ctx->wqh.lock);
		if (ret)
			return ret;

		ret = htw_ctx_drain(ctx, to, nonblock);
	} while (!ret);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_read);

/**
 * htw_ctx_poll() - poll a context's event queue
 * @ctx: the context
 * @file: its file
 * @wait: the poll table
 *
 * Context: Process context.
 * Return: EPOLLIN | EPOLLRDNORM while an event is queued, else 0.
 */
__poll_t htw_ctx_poll(struct htw_ctx *ctx, struct file *file,
		      struct poll_table_struct *wait)
{
	__poll_t events = 0;

	poll_wait(file, &ctx->wqh, wait);

	spin_lock_irq(&ctx->wqh.lock);
	if (!list_empty(&ctx->events))
		events = EPOLLIN | EPOLLRDNORM;
	spin_unlock_irq(&ctx->wqh.lock);
	return events;
}

/**
 * htw_ctx_counts() - how many timers a context holds and events it queues
 * @ctx: the context
 * @nr_timers: its timers
 * @nr_queued: its queued events
 *
 * Context: Any context; the counts may be stale as soon as they are read.
 */
void htw_ctx_counts(struct htw_ctx *ctx, u32 *nr_timers, u32 *nr_queued)
{
	*nr_timers = READ_ONCE(ctx->nr_timers);
	*nr_queued = READ_ONCE(ctx->nr_queued);
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_counts);
