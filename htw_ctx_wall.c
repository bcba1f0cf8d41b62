// SPDX-License-Identifier: GPL-2.0
/*
 * A context's wall-clock timers, across sets of the wall clock
 *
 * Wall-clock timers
 * -----------------
 * A CLOCK_REALTIME timer lives on a wheel of its own that runs on
 * CLOCK_MONOTONIC: its wall-clock expiry W is placed at W - offset, the
 * offset of the wall clock from CLOCK_MONOTONIC when it was placed, and
 * kept in the timer (@expires) to report.  A wheel on CLOCK_REALTIME itself
 * would not do: a wheel's time only moves forward, and after the wall clock
 * was set back, a timer armed for a wall time between the new present and
 * the wheel's time would be taken as due, early by the wall clock.
 *
 * When the wall clock is set, the context moves each of its wall-clock
 * timers whose placement used another offset (htw_ctx_clock_was_set()):
 * the work is that of its wall-clock timers, which an xarray mark finds,
 * not of all its timers, and it is done in process context, where levels
 * can be allocated.  The kernel tells its own timers of a set through
 * clock_was_set(), which a module cannot hook; it tells modules through the
 * pvclock_gtod notifier, which runs at every update of the timekeeper,
 * with the timekeeper's lock held, and says whether the clock was set.
 * Holding that lock nothing may wake a task (a wake-up can read the clock
 * and wait for the lock), so the notifier raises an irq_work, which queues
 * a work, which marks each context with wall-clock timers (%HTW_CTX_WALL
 * in @due) and wakes its readers, O(1) a context; the readers move the
 * timers, in their own context, as they run the wheels (htw_ctx_run()).
 * Until then, a timer placed with the old offset may fire while the wall
 * clock reads less than W (it was set back): its callback then queues
 * nothing and marks the context, so that the same run puts it back.  A
 * timer armed with %HTW_TIMER_CANCEL_ON_SET is not moved: it gets an event
 * of %HTW_EVENT_CANCELED and is released when that is read.  As a set
 * discards a timerfd's ticks, a set after such a timer was armed cancels
 * it whatever it did meanwhile: an event it queued before the set, or one
 * it queued because a step forward took it past its expiry before it
 * was moved, is read as the cancel, with a count of 0.  Whether a set
 * came is told by the offset the timer was placed for
 * (htw_utimer_placed_for()), which every set of the clock changes, and
 * which a read compares with the present one, so that no read reports an
 * expiry that a set has cancelled.  (Sets that undo one another to the
 * nanosecond before the context looks go unseen, which timerfd, told of
 * each set at once, would not miss: a count of sets in each timer would
 * cost the bytes the timer does not have.)
 *
 * A relative expiry on the wall clock is a duration, as POSIX has it: such
 * a timer runs on CLOCK_MONOTONIC and reports that clock's times, as
 * hrtimer_init() turns a relative CLOCK_REALTIME hrtimer into a
 * CLOCK_MONOTONIC one.
 *
 * So no work of the kernel's ever waits for a context's mutex, which a
 * user may hold across a fault that never ends (a read into a stalled FUSE
 * mapping), and the work a set of the clock costs a user is paid by that
 * user's readers.  The wheel of wall-clock timers has all its levels from
 * the start, charged as every wheel's footprint is: moving a timer never
 * needs memory.
 *
 */

#include <kunit/visibility.h>
#include <linux/irq_work.h>
#include <linux/pvclock_gtod.h>
#include <linux/sched.h>
#include <linux/workqueue.h>

#include "htw_ctx_internal.h"

/*
 * The contexts with a wall-clock wheel, told when the wall clock is set;
 * see "Locking" in htw_ctx.c.
 */
static LIST_HEAD(htw_wall_ctxs);
static DEFINE_SPINLOCK(htw_wall_lock);

/*
 * Mark each context with wall-clock timers, one a hold of htw_wall_lock:
 * the cursor, in the list after the context last marked, is where the walk
 * goes on, whoever joined or left meanwhile.  The work item never runs
 * twice at once, so one cursor is all the list ever holds; it is a bare
 * list_head, not a context, and this is the one walk of the list.
 */
static void htw_wall_set_fn(struct work_struct *work)
{
	struct list_head cursor;
	struct htw_ctx *ctx;

	spin_lock(&htw_wall_lock);
	list_add(&cursor, &htw_wall_ctxs);
	while (!list_is_last(&cursor, &htw_wall_ctxs)) {
		ctx = list_entry(cursor.next, struct htw_ctx, wall_node);
		list_move(&cursor, &ctx->wall_node);
		htw_ctx_mark(ctx, HTW_CTX_WALL, 0);
		spin_unlock(&htw_wall_lock);
		cond_resched();
		spin_lock(&htw_wall_lock);
	}
	list_del(&cursor);
	spin_unlock(&htw_wall_lock);
}

static DECLARE_WORK(htw_wall_set_work, htw_wall_set_fn);

static void htw_wall_set_irq_fn(struct irq_work *work)
{
	schedule_work(&htw_wall_set_work);
}

static DEFINE_IRQ_WORK(htw_wall_set_irq, htw_wall_set_irq_fn);

/* Every update of the timekeeper, with its lock held: see above. */
static int htw_wall_notify(struct notifier_block *nb, unsigned long was_set,
			   void *priv)
{
	if (was_set)
		irq_work_queue(&htw_wall_set_irq);
	return NOTIFY_DONE;
}

static struct notifier_block htw_wall_nb = {
	.notifier_call = htw_wall_notify,
};

/*
 * A set of the wall clock cancelled an idle timer: queue its last event.
 * The caller wakes the waiters, once for all it cancelled.
 */
static void htw_utimer_cancel_by_set(struct htw_ctx *ctx,
				     struct htw_utimer *ut)
	__must_hold(&ctx->lock)
{
	u64 now = htw_ctx_now(ctx, HTW_CTX_REALTIME);

	lockdep_assert_held(&ctx->lock);

	ut->flags |= HTW_UT_CANCELED;
	spin_lock_irq(&ctx->pollers.wqh.lock);
	ut->count = 0;
	ut->fired = now;
	__htw_utimer_queue(ctx, ut);
	spin_unlock_irq(&ctx->pollers.wqh.lock);
}

void __htw_ctx_clock_was_set(struct htw_ctx *ctx)
	__must_hold(&ctx->lock)
{
	struct htw_wheel *wheel = ctx->wheel[HTW_CTX_REALTIME];
	bool cancelled = false;
	struct htw_utimer *ut;
	unsigned long slot;
	s64 offset;

	lockdep_assert_held(&ctx->lock);

	if (!wheel)
		return;
	offset = htw_ctx_real_offset(ctx);
	xa_for_each_marked(&ctx->timers, slot, ut, HTW_XA_REALTIME) {
		cond_resched();
		/*
		 * Its event waits to be read: a periodic timer is placed anew
		 * when it is.  But a set of the clock cancels a cancel-on-set
		 * timer whatever it queued before, as it discards a timerfd's
		 * ticks: that event reports the cancel, and is its last.  The
		 * flag keeps the cancel should the clock be set back to the
		 * offset it was placed for before the event is read.
		 */
		if (htw_utimer_queued(ctx, ut)) {
			if ((ut->flags & HTW_UT_CANCEL_ON_SET) &&
			    !htw_utimer_placed_for(ut, offset))
				ut->flags |= HTW_UT_CANCELED;
			continue;
		}
		if (htw_pending(&ut->timer) && htw_utimer_placed_for(ut, offset))
			continue;
		/* Armed for another offset, or fired early and left idle. */
		htw_del_sync(&ut->timer);
		/* It fired meanwhile, on time by the wall clock. */
		if (htw_utimer_queued(ctx, ut))
			continue;
		if (ut->flags & HTW_UT_CANCEL_ON_SET) {
			htw_utimer_cancel_by_set(ctx, ut);
			cancelled = true;
			continue;
		}
		/* The wheel has every level: this cannot fail. */
		WARN_ON_ONCE(htw_add(&ut->timer, htw_time_minus(ut->expires, offset),
				     0, HTW_MODE_ABS));
	}
	if (cancelled)
		htw_ctx_wake_up(ctx);
}

/**
 * htw_ctx_clock_was_set() - move a context's wall-clock timers to the clock
 * @ctx: the context
 *
 * Each wall-clock timer that was placed for another offset of the wall
 * clock from CLOCK_MONOTONIC than the present one, or that fired while the
 * wall clock read less than its expiry, is placed again for the present
 * offset; one armed with %HTW_TIMER_CANCEL_ON_SET is cancelled instead, and
 * its event queued.  A timer whose event is queued is left alone: a
 * periodic one is placed anew when that is read, or, armed with
 * %HTW_TIMER_CANCEL_ON_SET, released then.
 *
 * Context: Process context; may sleep.  Tests call it; after a set of the
 * wall clock, the context's readers run it (htw_ctx_run()).
 */
void htw_ctx_clock_was_set(struct htw_ctx *ctx)
{
	mutex_lock(&ctx->lock);
	__htw_ctx_clock_was_set(ctx);
	mutex_unlock(&ctx->lock);
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_clock_was_set);

/**
 * htw_ctx_set_real_offset() - set the wall clock of a context on manual wheels
 * @ctx: the context, created with %HTW_WHEEL_MANUAL
 * @offset: the new offset of its wall clock from its monotonic clock
 *
 * For tests, which then call htw_ctx_clock_was_set() as a set of the wall
 * clock would.
 *
 * Context: Any context.
 */
void htw_ctx_set_real_offset(struct htw_ctx *ctx, s64 offset)
{
	WRITE_ONCE(ctx->real_offset, offset);
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_set_real_offset);

/**
 * htw_ctx_wall_join() - have a context told of sets of the wall clock
 * @ctx: the context, as its wall-clock wheel is made
 *
 * Context: Process context, under &htw_ctx.lock.
 */
void htw_ctx_wall_join(struct htw_ctx *ctx)
{
	spin_lock(&htw_wall_lock);
	list_add_tail(&ctx->wall_node, &htw_wall_ctxs);
	spin_unlock(&htw_wall_lock);
}

/**
 * htw_ctx_wall_leave() - tell a context of sets of the wall clock no more
 * @ctx: the context, as it is destroyed; once this returns, no walk marks it
 *
 * Context: Process context.
 */
void htw_ctx_wall_leave(struct htw_ctx *ctx)
{
	spin_lock(&htw_wall_lock);
	list_del(&ctx->wall_node);
	spin_unlock(&htw_wall_lock);
}

/**
 * htw_ctx_wall_init() - listen for sets of the wall clock
 *
 * Context: Process context, at module load.
 * Return: 0, or an error of pvclock_gtod_register_notifier().
 */
int htw_ctx_wall_init(void)
{
	return pvclock_gtod_register_notifier(&htw_wall_nb);
}

/**
 * htw_ctx_wall_exit() - undo htw_ctx_wall_init(), its work done
 *
 * Context: Process context, at module unload.
 */
void htw_ctx_wall_exit(void)
{
	pvclock_gtod_unregister_notifier(&htw_wall_nb);
	irq_work_sync(&htw_wall_set_irq);
	flush_work(&htw_wall_set_work);
}
