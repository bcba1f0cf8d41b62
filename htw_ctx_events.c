// SPDX-License-Identifier: GPL-2.0
/*
 * A context's expiry work and event queue: read() and poll()
 *
 * Expiry work in the owner's context
 * ----------------------------------
 * A file's expiry work is done by the processes that use the file, in
 * process context, and nothing of it in interrupt context.  Its wheels are
 * deferred (HTW_WHEEL_DEFERRED): when timers of one are due, its hrtimer
 * only marks the wheel due (@due) and wakes the file's waiters
 * (htw_ctx_wake(): O(1) work of the file's own, no lock held across work a
 * user controls).  The work (buckets
 * moved down, due timers turned into events) is done by read(), by
 * HTW_IOC_INFO and by poll(), under ctx->lock, preemptible, one batch of
 * one wheel at a time with cond_resched() between batches (htw_ctx_run(),
 * the clocks taking turns), and so charged to the caller's CPU time and
 * cgroup; a fatal signal ends it between two batches, with the rest left
 * due and nothing lost.  A file nobody reads costs one hrtimer expiry,
 * then nothing: timerfd's rule for periodic timers (below), here for every
 * timer, and io_uring's rule that completion work runs in the submitter's
 * context (task_work).
 *
 * The callbacks (htw_utimer_fn(), run by htw_wheel_run() under the wheel's
 * lock, HTW_WHEEL_LOCKED_CALLBACKS, which spares a lock round trip per
 * timer) only queue the event, and wake no one: their caller is a reader.
 * The waiters, readers and pollers, are woken once per expiry of a wheel's
 * hrtimer, and once per read that made events it left queued (EPOLLET
 * needs a wake for each batch of new events), never once per timer: 1,024
 * timers due together in a file that 20,000 epoll items watch cost 20,000
 * wake calls, not 20 million, and those go through a chunk of pollers
 * at a time, the most in process context (htw_pollers.c).  Blocked
 * readers are not a herd: they wait
 * exclusively on a queue of their own (@rwq), so that new work wakes every
 * poller (and epoll item) and one reader, whatever exclusive epoll items
 * (EPOLLEXCLUSIVE) the pollers' queue holds, and each reader, as it
 * returns, whatever way it ends, wakes the next reader if work is left,
 * events queued or timers due (htw_ctx_pass_turn()), and no poller.  A timerfd wakes all of its
 * blocked readers, of whom one finds the expiry.
 *
 * A poll with a wheel marked due and no event queued does a few batches
 * itself, if it takes ctx->lock without waiting, so that readable means an
 * event to read.  It cannot always know: with the mutex taken, or timers
 * that only came closer (the start of a bucket of a higher level, whose
 * timers move down a level), the mark counts as readable, and a read finds
 * nothing, as after a spurious wake-up (a non-blocking one says EAGAIN).
 * A timer costs at most one such per level it comes down, a handful in its
 * life, and none within wheel_size ticks.
 *
 * A wheel's mark is set by its hrtimer and taken off by one function,
 * htw_ctx_unmark(), only while the wheel is not due: after a run that
 * left nothing due, and after an ioctl that may have cancelled the due
 * timers before any run (htw_ctx_unmark_stale()), so that the wheel's
 * next due timer marks it, and wakes the waiters, again.  Through a run
 * the mark stays on, so that a reader, blocking or not, never finds a
 * file with work unmarked.
 *
 * An event's @fired is when the kernel found the timer due: the time of the
 * hrtimer expiry that marked its wheel due, if the timer was due by then,
 * else the time the run found it, and never before its expiry.  So
 * lateness as reported includes the time the timer waited for a reader's
 * attention, as it should.  HTW_IOC_INFO runs what is due up to the
 * moment it was called, so that timers coming due faster than it runs
 * cannot keep it going.
 *
 */

#include <kunit/visibility.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/uio.h>

#include "htw_ctx_internal.h"

/* Batches of expiry work a poll does, at most, to find an event. */
#define HTW_CTX_POLL_BATCHES	4

static struct htw_utimer *htw_utimer_of_link(struct list_head *link)
{
	return container_of(htw_timer_from_link(link), struct htw_utimer, timer);
}

/* Queue the event of an idle timer, at the tail of the queue. */
void __htw_utimer_queue(struct htw_ctx *ctx, struct htw_utimer *ut)
	__must_hold(&ctx->pollers.wqh.lock)
{
	lockdep_assert_held(&ctx->pollers.wqh.lock);

	list_add_tail(htw_timer_link(&ut->timer), &ctx->events);
	ut->queued = true;
	WRITE_ONCE(ctx->nr_queued, ctx->nr_queued + 1);
}

/*
 * The wheel's callback, in the context of the read that runs the wheel:
 * record the expiry in the timer's event and queue it, waking no one.
 */
void htw_utimer_fn(struct htw_timer *timer, u64 expired, u64 count)
{
	struct htw_utimer *ut = container_of(timer, struct htw_utimer, timer);
	struct htw_ctx *ctx = htw_timer_wheel_data(timer);
	enum htw_ctx_clock clock = htw_utimer_clock(ut);
	u64 now = htw_wheel_now(ctx->wheel[clock]), found;
	unsigned long flags;

	/*
	 * The wall clock was set back since the timer was placed: the run
	 * that ran this puts it back, for the wall clock's time.
	 */
	if ((ut->flags & HTW_UT_REALTIME) &&
	    htw_ctx_now(ctx, HTW_CTX_REALTIME) < ut->expires) {
		set_bit(HTW_CTX_WALL, &ctx->due);
		return;
	}

	spin_lock_irqsave(&ctx->pollers.wqh.lock, flags);
	/*
	 * Found due by the wheel's wake, or by this run; never before its
	 * expiry (a timer armed already due after the wake).
	 */
	found = ctx->woken[clock] && expired <= ctx->woken[clock] ?
		ctx->woken[clock] : now;
	found = max(found, expired);
	/* Once: the timer is one-shot on its wheel, and idle now. */
	if (!WARN_ON_ONCE(ut->queued || count != 1)) {
		ut->count = 1;
		/* A wall-clock timer holds its expiry on the wall clock already. */
		if (ut->flags & HTW_UT_REALTIME)
			found = max(htw_time_plus(found,
						  htw_ctx_real_offset(ctx)),
				    ut->expires);
		else
			ut->expires = expired;
		ut->fired = found;
		__htw_utimer_queue(ctx, ut);
	}
	spin_unlock_irqrestore(&ctx->pollers.wqh.lock, flags);
}

/* Drop the timer's queued event, if any. */
void __htw_utimer_unqueue(struct htw_ctx *ctx, struct htw_utimer *ut)
	__must_hold(&ctx->pollers.wqh.lock)
{
	lockdep_assert_held(&ctx->pollers.wqh.lock);

	if (ut->queued) {
		list_del(htw_timer_link(&ut->timer));
		ut->queued = false;
		WRITE_ONCE(ctx->nr_queued, ctx->nr_queued - 1);
	}
	ut->count = 0;
}

/*
 * Take up to @n events off the head of the queue, in order, onto @taken;
 * return how many.  Their timers are idle, and no callback touches a timer
 * that is idle and unqueued: their records can be read without the lock.
 */
static unsigned int htw_ctx_take(struct htw_ctx *ctx, struct list_head *taken,
				 unsigned int n)
	__must_hold(&ctx->lock)
{
	struct list_head *link;
	unsigned int i = 0;

	lockdep_assert_held(&ctx->lock);

	spin_lock_irq(&ctx->pollers.wqh.lock);
	list_for_each(link, &ctx->events) {
		if (i == n)
			break;
		htw_utimer_of_link(link)->queued = false;
		i++;
	}
	list_cut_before(taken, &ctx->events, link);
	WRITE_ONCE(ctx->nr_queued, ctx->nr_queued - i);
	spin_unlock_irq(&ctx->pollers.wqh.lock);
	return i;
}

/* The event a timer taken off the queue reports. */
static void htw_utimer_event(const struct htw_utimer *ut, struct htw_event *ev)
{
	*ev = (struct htw_event) {
		.id = ut->id,
		.user_data = ut->user_data,
		.count = ut->count,
		.expires = ut->expires,
		.fired = ut->fired,
	};
	if (!ut->period)
		ev->flags |= HTW_EVENT_LAST;
	/* Expiries before a set are discarded, as a timerfd's ticks are. */
	if (ut->flags & HTW_UT_CANCELED) {
		ev->flags |= HTW_EVENT_LAST | HTW_EVENT_CANCELED;
		ev->count = 0;
	}
	if (ut->flags & HTW_UT_BOOTTIME)
		ev->flags |= HTW_EVENT_BOOTTIME;
	if (ut->flags & HTW_UT_REALTIME)
		ev->flags |= HTW_EVENT_REALTIME;
}

/*
 * Give back events taken and not read: those left on @taken, at the head
 * of the queue, in their order.  Their timers are off the wheel, so nothing
 * has queued another event of them meanwhile.
 */
static void htw_ctx_give_back(struct htw_ctx *ctx, struct list_head *taken,
			      unsigned int nr_taken)
	__must_hold(&ctx->lock)
{
	struct list_head *link;

	lockdep_assert_held(&ctx->lock);

	if (!nr_taken)
		return;
	spin_lock_irq(&ctx->pollers.wqh.lock);
	list_for_each(link, taken)
		htw_utimer_of_link(link)->queued = true;
	list_splice_init(taken, &ctx->events);
	WRITE_ONCE(ctx->nr_queued, ctx->nr_queued + nr_taken);
	spin_unlock_irq(&ctx->pollers.wqh.lock);
	/* A poller may have found the queue empty meanwhile, and slept. */
	htw_ctx_wake_up(ctx);
}

/*
 * The event of a parked periodic timer is being read: count in @ev the
 * expiries that have passed since the one it holds, and set *@next to the
 * first expiry after the present.  E <= now < 2^63 and P < 2^63, so
 * nothing here overflows.
 */
static void htw_utimer_count_overruns(struct htw_ctx *ctx,
				      struct htw_utimer *ut,
				      struct htw_event *ev, u64 *next)
	__must_hold(&ctx->lock)
{
	enum htw_ctx_clock clock = htw_utimer_clock(ut);
	u64 now = htw_ctx_now(ctx, clock);
	u64 missed;

	if (now >= ev->expires && now - ev->expires >= ut->period) {
		missed = div64_u64(now - ev->expires, ut->period);
		ev->count += missed;
		ev->expires += missed * ut->period;
		/* Those expiries are delivered by this read. */
		ev->fired = now;
	}
	*next = ev->expires + ut->period;
}

/*
 * A time of @clock as the context reports it: shifted by the clock's
 * offset, and never below zero (an expiry from before a time namespace's
 * clock began).
 */
static u64 htw_ctx_report_time(const struct htw_ctx *ctx,
			       enum htw_ctx_clock clock, u64 t)
{
	return htw_time_plus(t, ctx->params.time_offset[clock]);
}

/*
 * Make in @ev the event of a timer taken off the queue, its times as the
 * context reports them, and in @r what reading it leaves to do.  The
 * timer's record is left as it was, so that an event that is not copied
 * out can be given back as it was taken: counted forward, its expiry would
 * no longer match the place of a wall-clock timer, which would then look
 * moved by a set of the clock.
 */
static void htw_ctx_read_event(struct htw_ctx *ctx, struct htw_utimer *ut,
			       struct htw_event *ev, struct htw_ctx_reading *r)
	__must_hold(&ctx->lock)
{
	enum htw_ctx_clock clock = htw_utimer_clock(ut);
	bool canceled = false;

	/*
	 * The wall clock was set since a cancel-on-set timer was placed, and
	 * the work has not told it yet (the timer may even have fired by the
	 * step forward): the set cancels it, and this event says so.
	 */
	if ((ut->flags & (HTW_UT_CANCEL_ON_SET | HTW_UT_CANCELED)) ==
	    HTW_UT_CANCEL_ON_SET &&
	    !htw_utimer_placed_for(ut, htw_ctx_real_offset(ctx))) {
		ut->flags |= HTW_UT_CANCELED;
		canceled = true;
	}
	htw_utimer_event(ut, ev);
	if (canceled)
		ev->fired = htw_ctx_now(ctx, HTW_CTX_REALTIME);
	r->ut = ut;
	r->next = 0;
	if (!(ev->flags & HTW_EVENT_LAST))
		htw_utimer_count_overruns(ctx, ut, ev, &r->next);
	ev->expires = htw_ctx_report_time(ctx, clock, ev->expires);
	ev->fired = htw_ctx_report_time(ctx, clock, ev->fired);
}

/* An event was copied out: re-arm its periodic timer, or release it. */
static void htw_ctx_read_done(struct htw_ctx_batch *batch,
			      const struct htw_ctx_reading *r)
	__must_hold(&batch->ctx->lock)
{
	struct htw_utimer *ut = r->ut;
	enum htw_ctx_clock clock = htw_utimer_clock(ut);

	if (!r->next) {
		htw_utimer_release(batch, ut);
		return;
	}
	/* Taken and idle: no callback reads it meanwhile. */
	if (ut->flags & HTW_UT_REALTIME)
		ut->expires = r->next;
	/* Every level is there (htw_ctx_prepare()): this cannot fail. */
	WARN_ON_ONCE(htw_add(&ut->timer,
			     htw_ctx_wheel_time(batch->ctx, clock, r->next),
			     0, HTW_MODE_ABS));
}

/*
 * Run one batch of a wheel marked due, the clocks taking turns: turn its
 * due timers into events; or, after a set of the wall clock, place the
 * wall-clock timers again.  Return false if nothing was due.  The mark
 * stays on through the batch, and comes off only if the batch left
 * nothing due (htw_ctx_unmark()).
 */
bool htw_ctx_run(struct htw_ctx *ctx)
	__must_hold(&ctx->lock)
{
	unsigned int i;
	bool left;
	int clock;

	lockdep_assert_held(&ctx->lock);

	/*
	 * The wall clock was set: its timers first, which may come due.  This
	 * mark comes off first, so that a set during the placing marks again.
	 */
	if (test_and_clear_bit(HTW_CTX_WALL, &ctx->due)) {
		__htw_ctx_clock_was_set(ctx);
		return true;
	}
	for (i = 0; i < HTW_CTX_NR_CLOCKS; i++) {
		clock = (ctx->next_clock + i) % HTW_CTX_NR_CLOCKS;
		if (!test_bit(clock, &ctx->due))
			continue;
		htw_wheel_run(ctx->wheel[clock], U64_MAX, &left);
		if (!left)
			htw_ctx_unmark(ctx, clock);
		/* A flood on one clock does not hold the others back. */
		ctx->next_clock = (clock + 1) % HTW_CTX_NR_CLOCKS;
		return true;
	}
	return false;
}

/**
 * htw_ctx_run_due() - turn all of a context's due timers into events
 * @ctx: the context
 *
 * What a read does first, to the end, a batch at a time: for
 * HTW_IOC_INFO, whose count of queued events then counts what a read would
 * find.  The work is the caller's, as a read's is.
 *
 * Context: Process context; may sleep.
 * Return: 0, or -EINTR if a fatal signal came first (the rest stays due).
 */
int htw_ctx_run_due(struct htw_ctx *ctx)
{
	struct htw_wheel *wheel;
	int clock, ret = 0;
	bool left;
	u64 until;

	if (mutex_lock_killable(&ctx->lock))
		return -EINTR;
	if (test_and_clear_bit(HTW_CTX_WALL, &ctx->due))
		__htw_ctx_clock_was_set(ctx);
	for (clock = 0; clock < HTW_CTX_NR_CLOCKS && !ret; clock++) {
		if (!test_bit(clock, &ctx->due))
			continue;
		wheel = ctx->wheel[clock];
		/* Up to now: timers that keep coming due do not keep it going. */
		until = htw_wheel_now(wheel);
		do {
			if (fatal_signal_pending(current)) {
				ret = -EINTR;
				break;
			}
			htw_wheel_run(wheel, until, &left);
			cond_resched();
		} while (left);
		/* Left by a fatal signal, or due since @until: still marked. */
		if (!left)
			htw_ctx_unmark(ctx, clock);
	}
	mutex_unlock(&ctx->lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_run_due);

/*
 * Turn due timers into events, as many as @to has room for, then copy out
 * as many queued events as it has room for, releasing one-shot timers and
 * putting periodic ones back on their wheel.  Return the bytes copied, 0 if
 * there was nothing to read (another reader was first, or the due timers
 * were cancelled), or an error if no event could be read (each stays
 * queued, and the due timers due).
 */
static ssize_t htw_ctx_drain(struct htw_ctx *ctx, struct iov_iter *to,
			     bool nowait)
{
	size_t room = iov_iter_count(to) / sizeof(struct htw_event);
	struct htw_ctx_batch batch = { .ctx = ctx };
	struct htw_event *out = ctx->read_out;
	struct htw_ctx_reading *r = ctx->reading;
	unsigned int n, i, copied;
	LIST_HEAD(taken);
	ssize_t done = 0;
	bool made = false;
	int ret = 0;
	u32 left;

	if (nowait) {
		if (!mutex_trylock(&ctx->lock))
			return -EAGAIN;
	} else if (mutex_lock_interruptible(&ctx->lock)) {
		return -ERESTARTSYS;
	}
	/*
	 * The due timers first, a batch at a time: a read may find a million
	 * of them.  A batch may make more events than there is room for; they
	 * wait for the next read.
	 */
	while (READ_ONCE(ctx->nr_queued) < room && READ_ONCE(ctx->due)) {
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto out;
		}
		made |= htw_ctx_run(ctx);
		cond_resched();
	}
	/*
	 * Then only the events queued now: a periodic timer re-armed by this
	 * read may expire again before it ends, and is left for the next one.
	 */
	left = READ_ONCE(ctx->nr_queued);
	while (left && iov_iter_count(to) >= sizeof(out[0])) {
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		n = min_t(size_t, min(left, HTW_CTX_TAKE),
			  iov_iter_count(to) / sizeof(out[0]));
		n = htw_ctx_take(ctx, &taken, n);
		if (!n)
			break;
		left -= n;
		for (i = 0; i < n; i++) {
			htw_ctx_read_event(ctx, htw_utimer_of_link(taken.next),
					   &out[i], &r[i]);
			list_del(taken.next);
		}
		copied = copy_to_iter(out, n * sizeof(out[0]), to) / sizeof(out[0]);
		for (i = 0; i < copied; i++)
			htw_ctx_read_done(&batch, &r[i]);
		done += copied * sizeof(out[0]);
		if (copied < n) {
			/* Those not copied go back first, in their order. */
			for (i = n; i-- > copied;)
				list_add(htw_timer_link(&r[i].ut->timer), &taken);
			htw_ctx_give_back(ctx, &taken, n - copied);
			ret = -EFAULT;
			break;
		}
		/* A read may copy out a million events. */
		cond_resched();
	}
out:
	/* What this read made and left, the pollers hear of, once. */
	if (made && htw_ctx_has_work(ctx))
		htw_ctx_wake_pollers(ctx);
	htw_ctx_batch_end(&batch);
	return done ?: ret;
}

/*
 * Wait for something to read, behind the other blocked readers, on a queue
 * of their own: a wake of new work wakes every poller and one reader (see
 * the opening comment).  Whatever brings work (a mark, events given back)
 * does so before it takes rwq.lock to wake, and
 * the condition is looked at under that lock: no wake is lost.  A run
 * that turns due timers into events makes no new work: the mark it
 * found stays on until the events are queued (htw_ctx_has_work()).
 */
static int htw_ctx_wait(struct htw_ctx *ctx)
{
	int ret;

	spin_lock_irq(&ctx->rwq.lock);
	ret = wait_event_interruptible_exclusive_locked_irq(ctx->rwq,
							    htw_ctx_has_work(ctx));
	spin_unlock_irq(&ctx->rwq.lock);
	return ret;
}

/*
 * A reader returns, whatever way it ends (events read, none left to it, a
 * signal, a fault): if work is left, the next blocked reader's turn.  The
 * wake that woke this reader may have been for that work too.  Readers
 * only: the pollers were told of the work when it came.
 */
static void htw_ctx_pass_turn(struct htw_ctx *ctx)
{
	if (htw_ctx_has_work(ctx))
		wake_up(&ctx->rwq);
}

/**
 * htw_ctx_read() - read queued events
 * @ctx: the context
 * @to: where to copy them: as many whole struct htw_event as fit
 * @flags: %HTW_CTX_READ_NONBLOCK: return -EAGAIN rather than wait for an
 *	event; %HTW_CTX_READ_NOWAIT: nor for the context's lock
 *
 * First turns the file's due timers into events, in the caller's context,
 * a batch at a time, up to as many as @to has room for; a fatal signal
 * ends that with the rest left due.  Reading the event of a one-shot timer
 * releases the timer and its id; reading that of a periodic timer re-arms
 * it, which never needs memory.  An event that cannot be copied stays
 * queued.  A non-blocking read (O_NONBLOCK) fails with -EAGAIN at once
 * when no event is queued and no timer is due; with one queued or due, it
 * waits for another thread that holds the context (an ioctl, or a read
 * copying out), as a pipe's does.  One that may not block at all
 * (IOCB_NOWAIT: RWF_NOWAIT, or io_uring's first try) fails with -EAGAIN
 * then too.
 *
 * Context: Process context; may sleep unless %HTW_CTX_READ_NOWAIT.
 * Return: the bytes copied; -EINVAL if @to cannot hold one event; -EAGAIN;
 * -ERESTARTSYS if a signal interrupted a wait; -EFAULT; -EINTR if a fatal
 * signal came before any event was copied.
 */
ssize_t htw_ctx_read(struct htw_ctx *ctx, struct iov_iter *to,
		     unsigned int flags)
{
	bool nowait = flags & HTW_CTX_READ_NOWAIT;
	ssize_t ret;

	if (iov_iter_count(to) < sizeof(struct htw_event))
		return -EINVAL;

	/* Another reader may take the events between the wait and the drain. */
	do {
		if (htw_ctx_has_work(ctx))
			ret = 0;
		else if (flags & (HTW_CTX_READ_NONBLOCK | HTW_CTX_READ_NOWAIT))
			ret = -EAGAIN;
		else
			ret = htw_ctx_wait(ctx);
		if (ret)
			break;
		ret = htw_ctx_drain(ctx, to, nowait);
	} while (!ret);
	htw_ctx_pass_turn(ctx);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_read);

/**
 * htw_ctx_poll() - poll a context's event queue
 * @ctx: the context
 * @file: its file
 * @wait: the poll table
 *
 * A poller is a user of the file too: with a wheel marked due and no event
 * queued, it turns due timers into events itself, a few batches at most,
 * if it gets the context's mutex without waiting, so that readable means
 * an event to read (a wheel whose due timers were cancelled, or whose
 * timers only came closer, is not readable).  If the mutex is taken, or
 * those batches made nothing while work is left, a marked wheel counts as
 * readable: a read finds out.
 *
 * Context: Process context.
 * Return: EPOLLIN | EPOLLRDNORM while an event is queued or a timer due,
 * else 0.
 */
__poll_t htw_ctx_poll(struct htw_ctx *ctx, struct file *file,
		      struct poll_table_struct *wait)
{
	unsigned int i;

	poll_wait(file, &ctx->pollers.wqh, wait);

	if (!htw_ctx_has_work(ctx))
		return 0;
	if (READ_ONCE(ctx->nr_queued) || !mutex_trylock(&ctx->lock))
		return EPOLLIN | EPOLLRDNORM;
	for (i = 0; i < HTW_CTX_POLL_BATCHES && !READ_ONCE(ctx->nr_queued); i++)
		if (!htw_ctx_run(ctx))
			break;
	mutex_unlock(&ctx->lock);
	return htw_ctx_has_work(ctx) ? EPOLLIN | EPOLLRDNORM : 0;
}
