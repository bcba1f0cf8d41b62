// SPDX-License-Identifier: GPL-2.0
/*
 * The timers and event queue behind one open /dev/htw
 *
 * Each timer a file arms is a struct htw_utimer: a struct htw_timer on one
 * of the file's own wheels, the timer's id in the context's xarray, and the
 * record of its pending event.  The record lives in the timer, so a timer
 * has at most one event queued whatever its period, and the memory of a
 * context is bounded by the number of its timers.  A timer is queued as an
 * event only while it is off its wheel (it has expired, and a periodic one
 * is parked, see below), so the event queue links timers with the link
 * the wheel lends to idle timers (htw_timer_link()) and costs a timer no
 * link of its own; which makes a user timer 96 bytes.
 *
 * A wheel per file
 * ----------------
 * /dev/htw is open to every user.  A context creates its own wheel for a
 * clock when its first timer on that clock is armed, with its own lock and
 * hrtimer: one file's expiry work never queues in front of another's for
 * longer than one expiry run's budget, and files arming on different CPUs
 * never share a lock.  The wheels allocate their levels on demand
 * (HTW_WHEEL_LAZY_LEVELS), in process context before a timer is added, and
 * are charged to the opener's memory cgroup, so that a file with a few near
 * timers costs one level of buckets, not every level a wheel could need.
 *
 * What bounds a user across files is its account (htw_user.c), in bytes:
 * each timer counts its size, and each wheel, and each node of the id
 * xarray, the most memory it can take, so that the limit bounds memory
 * however the user spreads its timers over files and slots.  The expiry
 * work of all of a user's files is done by the user's own readers.
 *
 * Periodic timers are parked while unread
 * ---------------------------------------
 * The wheel only ever holds one-shot timers here.  When a periodic timer
 * expires, its callback queues the event and the timer stays off the wheel;
 * read() puts it back, at the first expiry E + k * P after the present, and
 * reports in the event's count the expiries that passed meanwhile, computed
 * from the clock as hrtimer_forward() would.  This is timerfd's rule
 * ("to avoid DoS attacks specifying a very short timer period"): a program
 * that stops reading costs no CPU at all, however many periodic timers it
 * holds and however short their periods, and the expiry work a file makes
 * is paced by its own reads.  The price is that a periodic timer's later
 * expiries are counted by the read, not delivered by the wheel: the event
 * says so with @fired, the time of that read.  Arming a periodic timer
 * takes every level of its wheel, so that the read that re-arms it needs
 * no memory and cannot fail (htw_ctx_prepare()).
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
 * wake calls, not 20 million.  Blocked readers are not a herd: they wait
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
 * Lifetime: a timer is freed when it is cancelled, when the event of a
 * one-shot timer is read (its id is released then: a one-shot timer has
 * exactly one event), or when its context is destroyed.  A timer whose
 * callback has queued its event is no longer armed, and the wheel does not
 * touch it again; every other timer is taken off its wheel with
 * htw_del_sync() before it is freed, so that no callback still runs on it,
 * or, when the context is destroyed, its wheel is stopped first
 * (htw_wheel_stop()), which no callback outlives either.
 * An id is a slot of the context's xarray, allocated lowest first so that
 * the xarray stays dense, and a generation in the bits above the slot,
 * bumped at every arm: a stale id finds its slot empty, or holding a timer
 * whose id differs, and gets -ENOENT rather than the timer that took its
 * place.
 *
 * Locking
 * -------
 * ctx->lock (a mutex) serialises everything that looks a timer up by id,
 * arms it or frees it: arm, modify, cancel, and read(), which takes events
 * off the queue, releases one-shot timers and re-arms periodic ones.
 * Holding it, a timer cannot disappear; it is never taken by the callbacks.
 * User memory is written under it (the id of a new timer, the results of
 * a batch's operations, the events), so nothing may take it with mmap_lock
 * held; a fault that stalls (a FUSE mapping) stalls only the users of this
 * file, and they wait killably.
 *
 * ctx->wqh.lock (the wait queue's spinlock, taken with interrupts disabled)
 * protects the event queue and each timer's event record; the callbacks
 * take it, as timerfd's do.  ctx->rwq.lock, the lock of the queue where
 * readers block, nests inside it, and only the scheduler's locks (of a
 * wake-up) inside itself.
 *
 * htw_wall_lock (a spinlock) protects changes to htw_wall_ctxs, the
 * contexts that have a wall-clock wheel, and each context's @wall_node in
 * it: a context joins the list with its wall-clock wheel, under ctx->lock,
 * and leaves it in htw_ctx_destroy(), each an O(1) hold of the lock.  The
 * work that follows a set of the wall clock walks the list under RCU, and
 * so holds no lock that a user's open, arm or close takes; a context is
 * freed a grace period after it left the list (kfree_rcu()).
 *
 * Lock order: ctx->lock, then htw_wall_lock or ctx->wqh.lock (never both),
 * then ctx->rwq.lock.  Creating and destroying a wheel under ctx->lock
 * takes the core's xarray lock (htw_core.c) after it.  The callbacks take
 * ctx->wqh.lock inside their wheel's lock, and htw_*() are never called
 * with ctx->wqh.lock held.  htw_del_sync() is called with ctx->lock held, and takes the
 * wheel's lock, which is safe because callbacks never take ctx->lock.
 * The file's ring timers (htw_ring.c) wake ctx->wqh through
 * htw_ctx_pollers(), holding their own ring->lock (or, from their wheel's
 * hrtimer, nothing): ctx->wqh.lock nests inside ring->lock, and no code of
 * the context's calls the ring timers.
 */

#include <kunit/visibility.h>
#include <linux/irq_work.h>
#include <linux/math64.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/pvclock_gtod.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "htw_core.h"
#include "htw_ctx.h"
#include "htw_user.h"

/*
 * A context's memory is charged to the memory cgroup of the process that
 * arms the timers, and over the cgroup's limit an allocation fails, after
 * what reclaim can do: arming says -ENOMEM, where the OOM killer would
 * otherwise have killed a process (most often the caller) to make room for
 * a timer.  __GFP_RETRY_MAYFAIL, not __GFP_NORETRY, which also fails under
 * passing memory pressure outside the cgroup.
 */
#define HTW_CTX_GFP	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL)

/*
 * Flags of struct htw_utimer, stable while the timer is armed: its clock,
 * whether a set of the wall clock cancels it, and whether one did.
 */
#define HTW_UT_BOOTTIME		BIT(0)
#define HTW_UT_REALTIME		BIT(1)
#define HTW_UT_CANCEL_ON_SET	BIT(2)
#define HTW_UT_CANCELED		BIT(3)

/* The xarray mark of wall-clock timers (XA_MARK_0 tracks free slots). */
#define HTW_XA_REALTIME		XA_MARK_1

/*
 * Bit of &htw_ctx.due beside those of the clocks: the wall clock was set,
 * or a wall-clock timer fired before its time, and the context's
 * wall-clock timers are to be placed again.
 */
#define HTW_CTX_WALL		HTW_CTX_NR_CLOCKS

#define HTW_TIMER_FLAGS		(HTW_TIMER_ABSTIME | HTW_TIMER_BOOTTIME | \
				 HTW_TIMER_REALTIME | HTW_TIMER_CANCEL_ON_SET)

/**
 * struct htw_utimer - a timer of user space
 * @timer: the timer on its wheel, always one-shot; the context it belongs
 *	to is its wheel's data (htw_timer_wheel_data()), not a field here.
 *	While an event is queued, its link is in &htw_ctx.events
 * @user_data: the value its events carry
 * @period: 0, or the ns between its expiries
 * @expires: the expiry the queued event reports; for a wall-clock timer,
 *	also its expiry on the wall clock while it is armed
 * @fired: when it was delivered
 * @id: the timer's id in &htw_ctx.timers
 * @flags: %HTW_UT_BOOTTIME, %HTW_UT_REALTIME, %HTW_UT_CANCEL_ON_SET,
 *	%HTW_UT_CANCELED
 * @queued: an event is queued, in &htw_ctx.events
 * @count: expiries the queued event accounts for: 1, or 0 for the event of
 *	a cancel by a set of the wall clock.  Never more: the wheel holds the
 *	timer as a one-shot timer, which expires once, and a periodic timer's
 *	later expiries are counted by the read that re-arms it
 *
 * @queued, @count, @expires and @fired are protected by &htw_ctx.wqh.lock,
 * but for a wall-clock timer's @expires while it is armed: that changes
 * only under &htw_ctx.lock while the timer is idle and unqueued, and its
 * callback reads it without a lock.  A timer that is idle and unqueued
 * (its event taken off the queue by a read, or its callback waited for by
 * htw_del_sync()) is touched by no callback: the holder of &htw_ctx.lock
 * may then read and write them without the queue's lock.  The other fields
 * change only under &htw_ctx.lock, while the timer is not armed; but
 * @user_data and @period, which no callback reads, may change while it
 * is (htw_utimer_move()).
 */
struct htw_utimer {
	struct htw_timer timer;
	u64 user_data;
	u64 period;
	u64 expires;
	u64 fired;
	u32 id;
	u16 flags;
	bool queued;
	u8 count;
};

/*
 * Events a read takes off the queue under one hold of the queue's lock, and
 * copies out with one copy.
 */
#define HTW_CTX_TAKE		8U

/*
 * An event being read: its timer, and the expiry a periodic timer is
 * re-armed for once the event is copied out (0: the timer is released).
 */
struct htw_ctx_reading {
	struct htw_utimer *ut;
	u64 next;
};

/**
 * struct htw_ctx - one open /dev/htw
 * @params: its limits, and what its wheels are made of
 * @lock: see "Locking" above
 * @wheel: its wheel of each clock, or NULL before the clock's first timer;
 *	set once, under @lock, with smp_store_release().  Read without it by
 *	htw_ctx_now() (smp_load_acquire()), by the timers' callbacks (a timer
 *	is armed on a wheel only after the wheel was set, and the wheel's lock
 *	orders the two) and by htw_ctx_destroy() (nothing else uses the
 *	context then)
 * @timers: slot -> struct htw_utimer; changed under @lock
 * @slot_bits: bits of an id that are its slot; the bits above count arms
 * @generation: the arms so far, for the next id; under @lock
 * @nr_timers: timers in @timers; changed under @lock
 * @slots_charged: the slots of @timers whose xarray nodes are charged to
 *	the user, from 0: whole nodes of XA_CHUNK_SIZE; under @lock
 * @charged: the bytes the wheels and nodes are charged to the user; under
 *	@lock
 * @real_offset: of a context on manual wheels, the offset of its wall clock
 *	from its monotonic one; tests set it (READ_ONCE()/WRITE_ONCE(), no
 *	lock)
 * @wall_node: in htw_wall_ctxs, under htw_wall_lock, once the context has
 *	a wall-clock wheel
 * @rcu: frees it, a grace period after it left htw_wall_ctxs
 * @due: bit c: the wheel of clock c has work due, from its hrtimer's wake
 *	until a run, or an ioctl, finds it has none (htw_ctx_unmark());
 *	%HTW_CTX_WALL: the wall-clock timers are to be placed again (atomic
 *	bit operations: htw_ctx_mark() sets them under @wqh.lock, the runs
 *	clear them under @lock)
 * @woken: of each clock, when its wheel's hrtimer last marked it due, not
 *	having been so; under @wqh.lock
 * @wakeups: times the context woke its pollers (and, for new work, a
 *	blocked reader); under @wqh.lock
 * @rwq: readers blocked in read() wait here, exclusively (see "Expiry work
 *	in the owner's context")
 * @next_clock: the clock whose wheel htw_ctx_run() looks at first; under
 *	@lock
 * @read_out: the events a read is copying out, under @lock; here rather
 *	than on the reader's kernel stack
 * @reading: what each of them leaves to do, under @lock
 * @wqh: pollers (and epoll) wait here; its lock protects the fields below
 * @events: timers with an event queued, in the order they were queued
 * @nr_queued: timers in @events
 */
struct htw_ctx {
	struct htw_ctx_params params;
	struct mutex lock;		/* see "Locking" above */
	struct htw_wheel *wheel[HTW_CTX_NR_CLOCKS];
	struct xarray timers;
	unsigned int slot_bits;
	u32 generation;
	u32 nr_timers;
	u32 slots_charged;
	unsigned long charged;
	s64 real_offset;
	struct list_head wall_node;
	struct rcu_head rcu;
	struct htw_event read_out[HTW_CTX_TAKE];
	struct htw_ctx_reading reading[HTW_CTX_TAKE];

	unsigned long due;
	int next_clock;

	wait_queue_head_t rwq;

	/* The following fields are protected by wqh.lock. */
	wait_queue_head_t wqh;
	u64 woken[HTW_CTX_NR_CLOCKS];
	u64 wakeups;
	struct list_head events;
	u32 nr_queued;
};

static struct kmem_cache *htw_utimer_cache;

/* Wake the file's pollers, and count it (fdinfo's wakeups). */
static void __htw_ctx_wake_pollers(struct htw_ctx *ctx)
	__must_hold(&ctx->wqh.lock)
{
	lockdep_assert_held(&ctx->wqh.lock);

	ctx->wakeups++;
	wake_up_locked_poll(&ctx->wqh, EPOLLIN | EPOLLRDNORM);
}

/* New work: wake the file's pollers and one of its blocked readers. */
static void __htw_ctx_wake_up(struct htw_ctx *ctx)
	__must_hold(&ctx->wqh.lock)
{
	__htw_ctx_wake_pollers(ctx);
	wake_up(&ctx->rwq);
}

/*
 * Something to read: a wheel due that may make events, or events queued.
 * In that order, without a lock: a run queues its events before it takes
 * the mark off (htw_ctx_unmark()), so a mark seen gone means its events
 * are seen queued.
 */
static bool htw_ctx_has_work(struct htw_ctx *ctx)
{
	if (READ_ONCE(ctx->due))
		return true;
	/* The mark before the events; pairs with htw_ctx_unmark()'s. */
	smp_rmb();
	return READ_ONCE(ctx->nr_queued);
}

/*
 * Mark the context for its users to do @bit's work, a wheel's due timers
 * or the wall-clock timers to place again, and wake its waiters.  For a
 * wheel's, @now is when its timers were found due (see @woken), kept from
 * the first mark of those that no run has taken yet.
 */
static void htw_ctx_mark(struct htw_ctx *ctx, int bit, u64 now)
{
	unsigned long flags;

	spin_lock_irqsave(&ctx->wqh.lock, flags);
	if (!test_and_set_bit(bit, &ctx->due) && bit < HTW_CTX_NR_CLOCKS)
		ctx->woken[bit] = now;
	__htw_ctx_wake_up(ctx);
	spin_unlock_irqrestore(&ctx->wqh.lock, flags);
}

/*
 * Wake the file's pollers: a read made events it left queued, which
 * EPOLLET must hear of (the read itself passes the turn to a reader).
 */
static void htw_ctx_wake_pollers(struct htw_ctx *ctx)
{
	spin_lock_irq(&ctx->wqh.lock);
	__htw_ctx_wake_pollers(ctx);
	spin_unlock_irq(&ctx->wqh.lock);
}

/*
 * Take the mark off the wheel of @clock, unless it is due: the one way a
 * wheel's mark comes off, after a run that left nothing due, or an ioctl
 * that may have cancelled the due timers.  A mark stays on while its
 * wheel has work, through the runs, so that no reader looking meanwhile
 * takes a due wheel for one with nothing to read; and a wheel that comes
 * due as the mark comes off is marked again, with a wake.
 */
static void htw_ctx_unmark(struct htw_ctx *ctx, int clock)
	__must_hold(&ctx->lock)
{
	struct htw_wheel *wheel = ctx->wheel[clock];

	lockdep_assert_held(&ctx->lock);

	/* Not due: armed again for its next event, which marks it again. */
	if (htw_wheel_settle(wheel))
		return;
	/* The events the run queued before the clear: htw_ctx_has_work(). */
	smp_mb__before_atomic();
	clear_bit(clock, &ctx->due);
	/* The clear before the look; pairs with htw_ctx_mark()'s. */
	smp_mb__after_atomic();
	if (htw_wheel_due(wheel))
		htw_ctx_mark(ctx, clock, htw_wheel_now(wheel));
}

/*
 * The wheels marked due whose due timers were all cancelled since have
 * their mark taken off, so that their next due timer marks them, and
 * wakes the waiters, again.
 */
static void htw_ctx_unmark_stale(struct htw_ctx *ctx)
	__must_hold(&ctx->lock)
{
	int clock;

	lockdep_assert_held(&ctx->lock);

	for (clock = 0; clock < HTW_CTX_NR_CLOCKS; clock++)
		if (test_bit(clock, &ctx->due))
			htw_ctx_unmark(ctx, clock);
}

/*
 * The contexts with a wall-clock wheel, told when the wall clock is set;
 * see "Locking" above.
 */
static LIST_HEAD(htw_wall_ctxs);
static DEFINE_SPINLOCK(htw_wall_lock);

static void htw_wall_set_fn(struct work_struct *work)
{
	struct htw_ctx *ctx;

	rcu_read_lock();
	list_for_each_entry_rcu(ctx, &htw_wall_ctxs, wall_node)
		htw_ctx_mark(ctx, HTW_CTX_WALL, 0);
	rcu_read_unlock();
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

/**
 * htw_ctx_init() - set up what all contexts share
 *
 * Context: Process context, at module load.
 * Return: 0 or -ENOMEM.
 */
int htw_ctx_init(void)
{
	int ret;

	htw_utimer_cache = KMEM_CACHE(htw_utimer, SLAB_ACCOUNT);
	if (!htw_utimer_cache)
		return -ENOMEM;
	ret = pvclock_gtod_register_notifier(&htw_wall_nb);
	if (ret)
		kmem_cache_destroy(htw_utimer_cache);
	return ret;
}

/**
 * htw_ctx_exit() - undo htw_ctx_init(), once every context is destroyed
 *
 * Context: Process context, at module unload.
 */
void htw_ctx_exit(void)
{
	pvclock_gtod_unregister_notifier(&htw_wall_nb);
	irq_work_sync(&htw_wall_set_irq);
	flush_work(&htw_wall_set_work);
	kmem_cache_destroy(htw_utimer_cache);
}

/**
 * htw_ctx_timer_cost() - the memory one timer of a context pins
 *
 * What the user's account is charged for a timer; a wheel, or a node of
 * the id xarray, is charged the most memory it can take.
 *
 * Context: Any context.
 * Return: bytes.
 */
size_t htw_ctx_timer_cost(void)
{
	return sizeof(struct htw_utimer);
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_timer_cost);

/* Charge the user for what the context allocates beside its timers. */
static int htw_ctx_charge(struct htw_ctx *ctx, size_t bytes)
	__must_hold(&ctx->lock)
{
	int ret;

	lockdep_assert_held(&ctx->lock);

	if (!ctx->params.user)
		return 0;
	ret = htw_user_charge(ctx->params.user, bytes,
			      READ_ONCE(*ctx->params.max_user_bytes));
	if (!ret)
		ctx->charged += bytes;
	return ret;
}

/*
 * Charge the xarray node that @slot brought into use, if it is the first
 * of its node: ids are dense, but a user who cancels all but one timer of
 * every 64 keeps a node a timer.  Nodes are charged until the file closes.
 */
static int htw_ctx_charge_slot(struct htw_ctx *ctx, u32 slot)
	__must_hold(&ctx->lock)
{
	int ret;

	if (slot < ctx->slots_charged)
		return 0;
	ret = htw_ctx_charge(ctx, sizeof(struct xa_node));
	if (!ret)
		ctx->slots_charged = round_up(slot + 1, XA_CHUNK_SIZE);
	return ret;
}

/**
 * htw_ctx_user() - the account a context charges its timers to
 * @ctx: the context
 *
 * Context: Any context.
 * Return: &htw_ctx_params.user, as the context was created with it.
 */
struct htw_user *htw_ctx_user(struct htw_ctx *ctx)
{
	return ctx->params.user;
}

/*
 * The clock a timer runs on.  A relative expiry on the wall clock is a
 * duration, as POSIX has it and hrtimer_init() makes it: such a timer runs
 * on CLOCK_MONOTONIC, where no set of the wall clock moves it (and no step
 * of decades makes a 1 ms periodic timer count 10^12 expiries at once).
 */
static enum htw_ctx_clock htw_spec_clock(const struct htw_timer_spec *spec)
{
	if (spec->flags & HTW_TIMER_REALTIME)
		return spec->flags & HTW_TIMER_ABSTIME ? HTW_CTX_REALTIME :
							 HTW_CTX_MONOTONIC;
	return spec->flags & HTW_TIMER_BOOTTIME ? HTW_CTX_BOOTTIME :
						  HTW_CTX_MONOTONIC;
}

static enum htw_ctx_clock htw_utimer_clock(const struct htw_utimer *ut)
{
	if (ut->flags & HTW_UT_REALTIME)
		return HTW_CTX_REALTIME;
	return ut->flags & HTW_UT_BOOTTIME ? HTW_CTX_BOOTTIME : HTW_CTX_MONOTONIC;
}

static bool htw_ctx_manual(const struct htw_ctx *ctx)
{
	return ctx->params.wheel.flags & HTW_WHEEL_MANUAL;
}

/* The offset of the context's wall clock from its monotonic clock. */
static s64 htw_ctx_real_offset(struct htw_ctx *ctx)
{
	if (htw_ctx_manual(ctx))
		return READ_ONCE(ctx->real_offset);
	return ktime_to_ns(ktime_mono_to_real(0));
}

/* The present on a clock, as the context's wheel of that clock sees it. */
static u64 htw_ctx_now(struct htw_ctx *ctx, enum htw_ctx_clock clock)
{
	struct htw_wheel *wheel;
	u64 now;

	if (!htw_ctx_manual(ctx)) {
		switch (clock) {
		case HTW_CTX_BOOTTIME:
			return ktime_get_boottime_ns();
		case HTW_CTX_REALTIME:
			return ktime_get_real_ns();
		default:
			return ktime_get_ns();
		}
	}
	/* A manual wheel's time starts at start_ns and moves by htw_advance(). */
	wheel = smp_load_acquire(&ctx->wheel[clock]);
	now = wheel ? htw_wheel_now(wheel) : ctx->params.wheel.start_ns;
	if (clock == HTW_CTX_REALTIME)
		now = htw_time_plus(now, htw_ctx_real_offset(ctx));
	return now;
}

/*
 * A wheel's hrtimer found its timers due (softirq context): mark the wheel
 * due and wake the file's waiters.  Its readers do the rest.  A woken
 * wheel arms its hrtimer no more until a run (htw_wheel_run()) or a look
 * that finds it not due (htw_wheel_settle()): one wake per expiry, and no
 * expiry per arm of a due timer meanwhile.
 */
static void htw_ctx_wake(struct htw_wheel *wheel, u64 now)
{
	struct htw_ctx *ctx = htw_wheel_data(wheel);
	int clock;

	for (clock = 0; clock < HTW_CTX_NR_CLOCKS; clock++)
		if (READ_ONCE(ctx->wheel[clock]) == wheel)
			break;
	if (!WARN_ON_ONCE(clock == HTW_CTX_NR_CLOCKS))
		htw_ctx_mark(ctx, clock, now);
}

/* The context's wheel of @clock, created on first use. */
static struct htw_wheel *__htw_ctx_wheel(struct htw_ctx *ctx,
					 enum htw_ctx_clock clock)
	__must_hold(&ctx->lock)
{
	struct htw_wheel_params wp = ctx->params.wheel;
	struct htw_wheel *wheel;
	int ret;

	lockdep_assert_held(&ctx->lock);

	if (ctx->wheel[clock])
		return ctx->wheel[clock];
	/* The callbacks find the context from the wheel. */
	wp.data = ctx;
	wp.flags |= HTW_WHEEL_LOCKED_CALLBACKS;
	/* Its readers run it: see "Expiry work in the owner's context". */
	if (!htw_ctx_manual(ctx)) {
		wp.flags |= HTW_WHEEL_DEFERRED;
		wp.wake = htw_ctx_wake;
	}
	/* Wall-clock timers are placed on CLOCK_MONOTONIC: see above. */
	wp.clockid = clock == HTW_CTX_BOOTTIME ? CLOCK_BOOTTIME : CLOCK_MONOTONIC;
	/* Moving wall-clock timers must never need memory: all levels now. */
	if (clock != HTW_CTX_REALTIME)
		wp.flags |= HTW_WHEEL_LAZY_LEVELS;
	wheel = htw_wheel_create(&wp);
	if (IS_ERR(wheel))
		return wheel;

	/* The wheel as the most memory it can take, all its levels. */
	ret = htw_ctx_charge(ctx, htw_wheel_footprint(wheel));
	if (ret) {
		htw_wheel_destroy(wheel);
		return ERR_PTR(ret);
	}
	/* htw_ctx_now() reads it without the lock. */
	smp_store_release(&ctx->wheel[clock], wheel);
	if (clock == HTW_CTX_REALTIME) {
		spin_lock(&htw_wall_lock);
		list_add_rcu(&ctx->wall_node, &htw_wall_ctxs);
		spin_unlock(&htw_wall_lock);
	}
	return wheel;
}

/**
 * htw_ctx_wheel() - a context's wheel of a clock, created if need be
 * @ctx: the context
 * @clock: the clock
 *
 * For tests, which move the time of manual wheels.
 *
 * Context: Process context; may sleep.
 * Return: the wheel, or an ERR_PTR() as from htw_wheel_create().
 */
struct htw_wheel *htw_ctx_wheel(struct htw_ctx *ctx, enum htw_ctx_clock clock)
{
	struct htw_wheel *wheel;

	mutex_lock(&ctx->lock);
	wheel = __htw_ctx_wheel(ctx, clock);
	mutex_unlock(&ctx->lock);
	return wheel;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_wheel);

/* Where on its wheel a timer of @clock due at @expires goes. */
static u64 htw_ctx_wheel_time(struct htw_ctx *ctx, enum htw_ctx_clock clock,
			      u64 expires)
{
	if (clock != HTW_CTX_REALTIME)
		return expires;
	return htw_time_minus(expires, htw_ctx_real_offset(ctx));
}

/*
 * Make room for a timer due at @expires on @clock: the wheel, and the level
 * the expiry needs; *@when is where on the wheel the timer goes.  After
 * this, arming such a timer at *@when cannot fail.
 *
 * A periodic timer gets every level of its wheel now: the read that re-arms
 * it then never needs memory, and never fails for want of it.  A read that
 * failed so would leave the event queued, and a level-triggered epoll user
 * would find it readable and fail again, for as long as memory is short.
 * What those levels cost is charged to the user with the wheel already
 * (htw_wheel_footprint()); the memory cgroup is charged here, where an
 * %ENOMEM is an error of the arm, that loses nothing.
 */
static int htw_ctx_prepare(struct htw_ctx *ctx, enum htw_ctx_clock clock,
			   u64 expires, u64 period, u64 *when)
	__must_hold(&ctx->lock)
{
	struct htw_wheel *wheel = __htw_ctx_wheel(ctx, clock);

	if (IS_ERR(wheel))
		return PTR_ERR(wheel);
	*when = htw_ctx_wheel_time(ctx, clock, expires);
	return htw_wheel_reserve(wheel, period ? U64_MAX : *when);
}

static struct htw_utimer *htw_utimer_of_link(struct list_head *link)
{
	return container_of(htw_timer_from_link(link), struct htw_utimer, timer);
}

/* Queue the event of an idle timer, at the tail of the queue. */
static void __htw_utimer_queue(struct htw_ctx *ctx, struct htw_utimer *ut)
	__must_hold(&ctx->wqh.lock)
{
	lockdep_assert_held(&ctx->wqh.lock);

	list_add_tail(htw_timer_link(&ut->timer), &ctx->events);
	ut->queued = true;
	WRITE_ONCE(ctx->nr_queued, ctx->nr_queued + 1);
}

/*
 * The wheel's callback, in the context of the read that runs the wheel:
 * record the expiry in the timer's event and queue it, waking no one.
 */
static void htw_utimer_fn(struct htw_timer *timer, u64 expired, u64 count)
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

	spin_lock_irqsave(&ctx->wqh.lock, flags);
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
	spin_unlock_irqrestore(&ctx->wqh.lock, flags);
}

/* Drop the timer's queued event, if any. */
static void __htw_utimer_unqueue(struct htw_ctx *ctx, struct htw_utimer *ut)
	__must_hold(&ctx->wqh.lock)
{
	lockdep_assert_held(&ctx->wqh.lock);

	if (ut->queued) {
		list_del(htw_timer_link(&ut->timer));
		ut->queued = false;
		WRITE_ONCE(ctx->nr_queued, ctx->nr_queued - 1);
	}
	ut->count = 0;
}

/*
 * Check a timer spec and turn its expiry into an absolute time on its clock:
 * flags, then the period, then the expiry.  htw_ctx_check() does it before
 * a batch takes any lock; the batch's operations check again, which for an
 * absolute expiry reads no clock.
 */
static int htw_spec_check(struct htw_ctx *ctx,
			  const struct htw_timer_spec *spec, u64 *expires)
{
	if (spec->flags & ~HTW_TIMER_FLAGS)
		return -EINVAL;
	if ((spec->flags & HTW_TIMER_BOOTTIME) &&
	    (spec->flags & HTW_TIMER_REALTIME))
		return -EINVAL;
	if ((spec->flags & HTW_TIMER_CANCEL_ON_SET) &&
	    !((spec->flags & HTW_TIMER_REALTIME) &&
	      (spec->flags & HTW_TIMER_ABSTIME)))
		return -EINVAL;
	if (spec->period && (spec->period < ctx->params.min_period_ns ||
			     spec->period > HTW_TIME_MAX))
		return -EINVAL;

	*expires = spec->expires;
	if (!(spec->flags & HTW_TIMER_ABSTIME) &&
	    check_add_overflow(htw_ctx_now(ctx, htw_spec_clock(spec)),
			       spec->expires, expires))
		return -EINVAL;
	return *expires > HTW_TIME_MAX ? -EINVAL : 0;
}

static u32 htw_id_slot(const struct htw_ctx *ctx, u32 id)
{
	return ctx->slot_bits < 32 ? id & (BIT(ctx->slot_bits) - 1) : id;
}

/*
 * Put an idle timer on its wheel as @spec says: due at @expires on its
 * clock, at @when on its wheel, where htw_ctx_prepare() has made room.
 */
static void htw_utimer_start(struct htw_ctx *ctx, struct htw_utimer *ut,
			     const struct htw_timer_spec *spec, u64 expires,
			     u64 when)
	__must_hold(&ctx->lock)
{
	enum htw_ctx_clock clock = htw_spec_clock(spec);
	u32 slot = htw_id_slot(ctx, ut->id);
	/* A new slot has no mark: xa_erase() cleared it. */
	bool was_real = ut->flags & HTW_UT_REALTIME;

	lockdep_assert_held(&ctx->lock);

	ut->user_data = spec->user_data;
	ut->period = spec->period;
	ut->flags = 0;
	if (clock == HTW_CTX_BOOTTIME)
		ut->flags |= HTW_UT_BOOTTIME;
	if (clock == HTW_CTX_REALTIME) {
		ut->flags |= HTW_UT_REALTIME;
		if (spec->flags & HTW_TIMER_CANCEL_ON_SET)
			ut->flags |= HTW_UT_CANCEL_ON_SET;
		/* Idle and unqueued: no callback reads it meanwhile. */
		ut->expires = expires;
		xa_set_mark(&ctx->timers, slot, HTW_XA_REALTIME);
	} else if (was_real) {
		xa_clear_mark(&ctx->timers, slot, HTW_XA_REALTIME);
	}
	htw_timer_init(&ut->timer, ctx->wheel[clock], htw_utimer_fn);
	WARN_ON_ONCE(htw_add(&ut->timer, when, 0, HTW_MODE_ABS));
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
	/*
	 * No callback of it runs now, and only holders of ctx->lock queue its
	 * event: @queued can be read without the queue's lock.  Unqueued, its
	 * @count is read by nobody until an event is queued again.
	 */
	if (!ut->queued)
		return;
	spin_lock_irq(&ctx->wqh.lock);
	__htw_utimer_unqueue(ctx, ut);
	spin_unlock_irq(&ctx->wqh.lock);
}

/* The timer of @id, or NULL: an empty slot, or one reused since. */
static struct htw_utimer *htw_ctx_find(struct htw_ctx *ctx, u32 id)
	__must_hold(&ctx->lock)
{
	struct htw_utimer *ut;

	lockdep_assert_held(&ctx->lock);

	ut = xa_load(&ctx->timers, htw_id_slot(ctx, id));
	return ut && ut->id == id ? ut : NULL;
}

/* Free the timers @batch released. */
static void htw_ctx_batch_flush(struct htw_ctx_batch *batch)
{
	kmem_cache_free_bulk(htw_utimer_cache, batch->nr_dead, batch->dead);
	batch->nr_dead = 0;
}

/* Free a timer with the others @batch released, HTW_CTX_BATCH_MAX at once. */
static void htw_ctx_batch_free(struct htw_ctx_batch *batch,
			       struct htw_utimer *ut)
{
	if (batch->nr_dead == ARRAY_SIZE(batch->dead))
		htw_ctx_batch_flush(batch);
	batch->dead[batch->nr_dead++] = ut;
}

/*
 * Forget a timer that is off its wheel and has no event queued, and give
 * its user the room back at once, so that an arm after it in the same
 * batch finds it; its memory goes with the others @batch released, at the
 * latest when the batch ends.
 */
static void htw_utimer_release(struct htw_ctx_batch *batch,
			       struct htw_utimer *ut)
	__must_hold(&batch->ctx->lock)
{
	struct htw_ctx *ctx = batch->ctx;

	lockdep_assert_held(&ctx->lock);

	xa_erase(&ctx->timers, htw_id_slot(ctx, ut->id));
	WRITE_ONCE(ctx->nr_timers, ctx->nr_timers - 1);
	if (ctx->params.user)
		htw_user_uncharge(ctx->params.user, htw_ctx_timer_cost());
	htw_ctx_batch_free(batch, ut);
}

static bool htw_utimer_queued(struct htw_ctx *ctx, struct htw_utimer *ut)
{
	bool queued;

	spin_lock_irq(&ctx->wqh.lock);
	queued = ut->queued;
	spin_unlock_irq(&ctx->wqh.lock);
	return queued;
}

/* A set of the wall clock cancelled an idle timer: queue its last event. */
static void htw_utimer_cancel_by_set(struct htw_ctx *ctx,
				     struct htw_utimer *ut)
	__must_hold(&ctx->lock)
{
	u64 now = htw_ctx_now(ctx, HTW_CTX_REALTIME);

	lockdep_assert_held(&ctx->lock);

	ut->flags |= HTW_UT_CANCELED;
	spin_lock_irq(&ctx->wqh.lock);
	ut->count = 0;
	ut->fired = now;
	__htw_utimer_queue(ctx, ut);
	__htw_ctx_wake_up(ctx);
	spin_unlock_irq(&ctx->wqh.lock);
}

/* Whether a wall-clock timer was placed for the wall clock's @offset. */
static bool htw_utimer_placed_for(struct htw_utimer *ut, s64 offset)
{
	return htw_expires(&ut->timer) == htw_time_minus(ut->expires, offset);
}

static void __htw_ctx_clock_was_set(struct htw_ctx *ctx)
	__must_hold(&ctx->lock)
{
	struct htw_wheel *wheel = ctx->wheel[HTW_CTX_REALTIME];
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
			continue;
		}
		/* The wheel has every level: this cannot fail. */
		WARN_ON_ONCE(htw_add(&ut->timer, htw_time_minus(ut->expires, offset),
				     0, HTW_MODE_ABS));
	}
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
 * htw_ctx_create() - create a context with no timers
 * @params: its limits and wheels, copied
 *
 * The context has no wheel yet: each is created with its clock's first
 * timer.
 *
 * Context: Process context; may sleep.  Memory is charged to the caller's
 * memory cgroup.
 * Return: the context, or ERR_PTR(-ENOMEM).
 */
struct htw_ctx *htw_ctx_create(const struct htw_ctx_params *params)
{
	struct htw_ctx *ctx;

	ctx = kzalloc(sizeof(*ctx), HTW_CTX_GFP);
	if (!ctx)
		return ERR_PTR(-ENOMEM);

	ctx->params = *params;
	ctx->slot_bits = fls(params->max_timers);
	mutex_init(&ctx->lock);
	xa_init_flags(&ctx->timers, XA_FLAGS_ALLOC1 | XA_FLAGS_ACCOUNT);
	init_waitqueue_head(&ctx->wqh);
	init_waitqueue_head(&ctx->rwq);
	INIT_LIST_HEAD(&ctx->events);
	INIT_LIST_HEAD(&ctx->wall_node);
	return ctx;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_create);

/**
 * htw_ctx_destroy() - cancel every timer of a context and free it
 * @ctx: the context; nothing else may use it any more
 *
 * Safe while the timers are expiring: each wheel is stopped, its callbacks
 * waited for, before any timer is freed.  Stopping a wheel abandons its
 * timers rather than cancelling them one by one, so that closing a file
 * of millions of timers costs a free of each and no more.
 *
 * Context: Process context; may sleep.
 */
void htw_ctx_destroy(struct htw_ctx *ctx)
{
	struct htw_ctx_batch batch = { .ctx = ctx };
	struct htw_utimer *ut;
	unsigned long id;
	int i;

	/* A set of the clock may still mark it, until a grace period. */
	if (ctx->wheel[HTW_CTX_REALTIME]) {
		spin_lock(&htw_wall_lock);
		list_del_rcu(&ctx->wall_node);
		spin_unlock(&htw_wall_lock);
	}

	/* Nor may a wheel wake it once this is done. */
	for (i = 0; i < HTW_CTX_NR_CLOCKS; i++)
		if (ctx->wheel[i])
			htw_wheel_stop(ctx->wheel[i]);
	/*
	 * None runs now, so the queue can be dropped without its lock.  The
	 * ids are erased one by one, each under the xarray's lock for a
	 * moment, where xa_destroy() would walk a million of them with
	 * interrupts off.
	 */
	xa_for_each(&ctx->timers, id, ut) {
		xa_erase(&ctx->timers, id);
		htw_ctx_batch_free(&batch, ut);
		/* Freed in the next call: a file may hold millions. */
		if (batch.nr_dead == ARRAY_SIZE(batch.dead))
			cond_resched();
	}
	htw_ctx_batch_flush(&batch);
	if (ctx->params.user)
		htw_user_uncharge(ctx->params.user,
				  ctx->nr_timers * htw_ctx_timer_cost() +
				  ctx->charged);
	for (i = 0; i < HTW_CTX_NR_CLOCKS; i++)
		htw_wheel_destroy(ctx->wheel[i]);
	mutex_destroy(&ctx->lock);
	kfree_rcu(ctx, rcu);
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_destroy);

/**
 * htw_ctx_check() - check a timer spec before its batch begins
 * @ctx: the context
 * @spec: the spec; a relative expiry is made absolute on its clock, and
 *	%HTW_TIMER_ABSTIME set
 *
 * What htw_ctx_batch_arm() and htw_ctx_batch_modify() refuse with -EINVAL,
 * refused before the batch takes a lock or allocates, as the device's
 * ioctls promise; and a relative expiry counted from the present as the
 * call began, not as its batch got the context.
 *
 * Context: Any context.
 * Return: 0, or -EINVAL.
 */
int htw_ctx_check(struct htw_ctx *ctx, struct htw_timer_spec *spec)
{
	u64 expires;
	int ret;

	ret = htw_spec_check(ctx, spec, &expires);
	if (ret)
		return ret;
	/* A relative expiry on the wall clock is a duration: htw_spec_clock(). */
	if (!(spec->flags & HTW_TIMER_ABSTIME))
		spec->flags &= ~HTW_TIMER_REALTIME;
	spec->expires = expires;
	spec->flags |= HTW_TIMER_ABSTIME;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_check);

/**
 * htw_ctx_batch_begin() - hold a context for a batch of operations
 * @ctx: the context
 * @batch: the batch, to pass to the operations and to htw_ctx_batch_end()
 * @nr_arms: how many of them arm a timer, at most %HTW_CTX_BATCH_MAX
 *
 * A batch takes the context's mutex once for all its operations, allocates
 * the timers of its arms with one kmem_cache_alloc_bulk(), and frees those
 * its cancels and reads release with one kmem_cache_free_bulk(), once the
 * mutex is let go (or, past %HTW_CTX_BATCH_MAX of them, that many at a
 * time as they come).  Memory the bulk allocation could not find is
 * allocated by each arm in turn, which can then fail alone with -ENOMEM.
 *
 * Context: Process context; may sleep.  The batch holds the context's mutex
 * until htw_ctx_batch_end(): nothing the caller does meanwhile may take
 * mmap_lock and then wait for another user of the context.
 * Return: 0, or -EINTR if a fatal signal came while it waited for the
 * mutex; then there is no batch to end.
 */
int htw_ctx_batch_begin(struct htw_ctx *ctx, struct htw_ctx_batch *batch,
			unsigned int nr_arms)
{
	batch->ctx = ctx;
	batch->nr_spare = 0;
	batch->nr_dead = 0;
	nr_arms = min_t(unsigned int, nr_arms, ARRAY_SIZE(batch->spare));
	/*
	 * All or nothing: older kernels return the count allocated or 0, newer
	 * ones (7.2) true or false; either is non-zero when all were.
	 */
	if (nr_arms && kmem_cache_alloc_bulk(htw_utimer_cache, HTW_CTX_GFP,
					     nr_arms, batch->spare))
		batch->nr_spare = nr_arms;
	if (mutex_lock_killable(&ctx->lock)) {
		kmem_cache_free_bulk(htw_utimer_cache, batch->nr_spare,
				     batch->spare);
		return -EINTR;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_batch_begin);

/**
 * htw_ctx_batch_end() - let go of the context and free what the batch released
 * @batch: the batch htw_ctx_batch_begin() began
 *
 * Context: Process context; may sleep.
 */
void htw_ctx_batch_end(struct htw_ctx_batch *batch)
{
	/* Its cancels and modifies may have taken the due timers away. */
	if (READ_ONCE(batch->ctx->due))
		htw_ctx_unmark_stale(batch->ctx);
	mutex_unlock(&batch->ctx->lock);
	kmem_cache_free_bulk(htw_utimer_cache, batch->nr_spare, batch->spare);
	htw_ctx_batch_flush(batch);
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_batch_end);

/*
 * A new timer, idle and unqueued: one the batch allocated ahead, or one
 * allocated now.  Not zeroed: the rest of it is written before it is read.
 */
static struct htw_utimer *htw_ctx_batch_alloc(struct htw_ctx_batch *batch)
{
	struct htw_utimer *ut;

	if (batch->nr_spare)
		ut = batch->spare[--batch->nr_spare];
	else
		ut = kmem_cache_alloc(htw_utimer_cache, HTW_CTX_GFP);
	if (ut) {
		ut->flags = 0;
		ut->queued = false;
	}
	return ut;
}

/*
 * Give back a timer htw_ctx_batch_alloc() gave and that was not used.
 * There is room for it: it was a spare, or there was none left.
 */
static void htw_ctx_batch_unalloc(struct htw_ctx_batch *batch,
				  struct htw_utimer *ut)
{
	batch->spare[batch->nr_spare++] = ut;
}

/**
 * htw_ctx_batch_arm() - arm a new timer
 * @batch: the batch the operation is part of
 * @spec: the timer; its @id is set on success
 * @id_out: where in user memory to write the new id, or NULL
 *
 * The id is written to @id_out before the timer is armed: if that faults,
 * nothing is armed and no id is taken.
 *
 * Context: Process context, in a batch; may sleep.
 * Return: 0; -EINVAL for an unknown flag, a period out of range, or an
 * expiry beyond %HTW_TIME_MAX; -ENOSPC if the context holds its maximum of
 * timers, or its user does; -ENOMEM; -EFAULT if @id_out is not writable.
 */
int htw_ctx_batch_arm(struct htw_ctx_batch *batch, struct htw_timer_spec *spec,
		      u32 __user *id_out)
	__must_hold(&batch->ctx->lock)
{
	struct htw_ctx *ctx = batch->ctx;
	struct htw_user *user = ctx->params.user;
	struct htw_utimer *ut;
	u64 expires, when;
	u32 id, slot;
	int ret;

	lockdep_assert_held(&ctx->lock);

	ret = htw_spec_check(ctx, spec, &expires);
	if (ret)
		return ret;
	ut = htw_ctx_batch_alloc(batch);
	if (!ut)
		return -ENOMEM;
	if (user) {
		ret = htw_user_charge(user, htw_ctx_timer_cost(),
				      READ_ONCE(*ctx->params.max_user_bytes));
		if (ret)
			goto out_unalloc;
	}
	ret = htw_ctx_prepare(ctx, htw_spec_clock(spec), expires,
			      spec->period, &when);
	if (ret)
		goto out_uncharge;
	ret = xa_alloc(&ctx->timers, &slot, ut,
		       XA_LIMIT(1, ctx->params.max_timers), HTW_CTX_GFP);
	if (ret) {
		/* xa_alloc() says -EBUSY when every slot is taken. */
		if (ret == -EBUSY)
			ret = -ENOSPC;
		goto out_uncharge;
	}
	ret = htw_ctx_charge_slot(ctx, slot);
	if (ret) {
		xa_erase(&ctx->timers, slot);
		goto out_uncharge;
	}
	id = slot;
	if (ctx->slot_bits < 32)
		id |= ctx->generation++ << ctx->slot_bits;
	if (id_out && put_user(id, id_out)) {
		xa_erase(&ctx->timers, slot);
		ret = -EFAULT;
		goto out_uncharge;
	}
	ut->id = id;
	WRITE_ONCE(ctx->nr_timers, ctx->nr_timers + 1);
	htw_utimer_start(ctx, ut, spec, expires, when);
	spec->id = id;
	return 0;

out_uncharge:
	if (user)
		htw_user_uncharge(user, htw_ctx_timer_cost());
out_unalloc:
	htw_ctx_batch_unalloc(batch, ut);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_batch_arm);

/*
 * The common modify, a timeout pushed later: a timer armed, on a deferred
 * wheel, staying on its clock (not the wall clock's, whose timers carry
 * more).  It has no event queued, and no run can make one while ctx->lock
 * is held (only its holders run a deferred wheel), so htw_mod() moves it
 * in one hold of the wheel's lock, without a list touched if the new
 * expiry falls in its bucket.  Return false, having done nothing, if the
 * timer is not such a one.
 */
static bool htw_utimer_move(struct htw_ctx *ctx, struct htw_utimer *ut,
			    const struct htw_timer_spec *spec, u64 when)
	__must_hold(&ctx->lock)
{
	enum htw_ctx_clock clock = htw_spec_clock(spec);

	lockdep_assert_held(&ctx->lock);

	if (htw_ctx_manual(ctx) || clock == HTW_CTX_REALTIME ||
	    clock != htw_utimer_clock(ut) || !htw_pending(&ut->timer))
		return false;
	/* The callback reads neither. */
	ut->user_data = spec->user_data;
	ut->period = spec->period;
	return !WARN_ON_ONCE(htw_mod(&ut->timer, when, 0, HTW_MODE_ABS) != 1);
}

/**
 * htw_ctx_batch_modify() - re-arm a timer with a new expiry, period and value
 * @batch: the batch the operation is part of
 * @spec: the timer's id, and how to arm it
 *
 * The timer may be armed or have expired; its queued event, if any, is
 * dropped, and no event of its old schedule is queued after this returns.
 *
 * Context: Process context, in a batch; may sleep.
 * Return: 0; -EINVAL as for htw_ctx_batch_arm(); -ENOENT if the context
 * has no such timer; -ENOSPC or -ENOMEM, leaving the timer as it was.
 */
int htw_ctx_batch_modify(struct htw_ctx_batch *batch,
			 const struct htw_timer_spec *spec)
	__must_hold(&batch->ctx->lock)
{
	struct htw_ctx *ctx = batch->ctx;
	struct htw_utimer *ut;
	u64 expires, when;
	int ret;

	lockdep_assert_held(&ctx->lock);

	ret = htw_spec_check(ctx, spec, &expires);
	if (ret)
		return ret;
	ut = htw_ctx_find(ctx, spec->id);
	if (!ut)
		return -ENOENT;
	ret = htw_ctx_prepare(ctx, htw_spec_clock(spec), expires,
			      spec->period, &when);
	if (ret)
		return ret;
	if (htw_utimer_move(ctx, ut, spec, when))
		return 0;
	htw_utimer_stop(ctx, ut);
	htw_utimer_start(ctx, ut, spec, expires, when);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_batch_modify);

/**
 * htw_ctx_batch_cancel() - cancel a timer and release its id
 * @batch: the batch the operation is part of
 * @id: the timer
 *
 * The timer's queued event, if any, is dropped, and none is queued after
 * this returns.
 *
 * Context: Process context, in a batch; may sleep.
 * Return: 0, or -ENOENT if the context has no such timer.
 */
int htw_ctx_batch_cancel(struct htw_ctx_batch *batch, u32 id)
	__must_hold(&batch->ctx->lock)
{
	struct htw_ctx *ctx = batch->ctx;
	struct htw_utimer *ut;

	lockdep_assert_held(&ctx->lock);

	ut = htw_ctx_find(ctx, id);
	if (!ut)
		return -ENOENT;
	htw_utimer_stop(ctx, ut);
	htw_utimer_release(batch, ut);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_batch_cancel);

/* Arm a new timer, or re-arm one, as a batch of one; @spec is a copy. */
static int htw_ctx_one(struct htw_ctx *ctx, struct htw_timer_spec *spec,
		       u32 __user *id_out, bool arm)
{
	struct htw_ctx_batch batch;
	int ret;

	ret = htw_ctx_check(ctx, spec);
	if (ret)
		return ret;
	ret = htw_ctx_batch_begin(ctx, &batch, arm);
	if (ret)
		return ret;
	ret = arm ? htw_ctx_batch_arm(&batch, spec, id_out) :
		    htw_ctx_batch_modify(&batch, spec);
	htw_ctx_batch_end(&batch);
	return ret;
}

/**
 * htw_ctx_arm() - arm a new timer, as a batch of one
 * @ctx: the context
 * @spec: as for htw_ctx_batch_arm()
 * @id_out: as for htw_ctx_batch_arm()
 *
 * Context: Process context; may sleep.
 * Return: as htw_ctx_batch_arm(), or -EINTR.
 */
int htw_ctx_arm(struct htw_ctx *ctx, struct htw_timer_spec *spec,
		u32 __user *id_out)
{
	struct htw_timer_spec abs = *spec;
	int ret;

	ret = htw_ctx_one(ctx, &abs, id_out, true);
	if (!ret)
		spec->id = abs.id;
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_arm);

/**
 * htw_ctx_modify() - re-arm a timer, as a batch of one
 * @ctx: the context
 * @spec: as for htw_ctx_batch_modify()
 *
 * Context: Process context; may sleep.
 * Return: as htw_ctx_batch_modify(), or -EINTR.
 */
int htw_ctx_modify(struct htw_ctx *ctx, const struct htw_timer_spec *spec)
{
	struct htw_timer_spec abs = *spec;

	return htw_ctx_one(ctx, &abs, NULL, false);
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_modify);

/**
 * htw_ctx_cancel() - cancel a timer, as a batch of one
 * @ctx: the context
 * @id: the timer
 *
 * Context: Process context; may sleep.
 * Return: as htw_ctx_batch_cancel(), or -EINTR.
 */
int htw_ctx_cancel(struct htw_ctx *ctx, u32 id)
{
	struct htw_ctx_batch batch;
	int ret;

	ret = htw_ctx_batch_begin(ctx, &batch, 0);
	if (ret)
		return ret;
	ret = htw_ctx_batch_cancel(&batch, id);
	htw_ctx_batch_end(&batch);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_cancel);

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

	spin_lock_irq(&ctx->wqh.lock);
	list_for_each(link, &ctx->events) {
		if (i == n)
			break;
		htw_utimer_of_link(link)->queued = false;
		i++;
	}
	list_cut_before(taken, &ctx->events, link);
	WRITE_ONCE(ctx->nr_queued, ctx->nr_queued - i);
	spin_unlock_irq(&ctx->wqh.lock);
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
	spin_lock_irq(&ctx->wqh.lock);
	list_for_each(link, taken)
		htw_utimer_of_link(link)->queued = true;
	list_splice_init(taken, &ctx->events);
	WRITE_ONCE(ctx->nr_queued, ctx->nr_queued + nr_taken);
	/* A poller may have found the queue empty meanwhile, and slept. */
	__htw_ctx_wake_up(ctx);
	spin_unlock_irq(&ctx->wqh.lock);
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
static bool htw_ctx_run(struct htw_ctx *ctx)
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
 * "Expiry work in the owner's context" above).  Whatever brings work (a
 * mark, events given back) does so before it takes rwq.lock to wake, and
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

/* Batches of expiry work a poll does, at most, to find an event. */
#define HTW_CTX_POLL_BATCHES	4

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

	poll_wait(file, &ctx->wqh, wait);

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

/**
 * htw_ctx_pollers() - the queue a context's poll registers its pollers on
 * @ctx: the context
 *
 * For the file's other sources of readiness (its ring timers), which wake
 * the same pollers.
 *
 * Context: Any context.
 * Return: the queue.
 */
wait_queue_head_t *htw_ctx_pollers(struct htw_ctx *ctx)
{
	return &ctx->wqh;
}

/**
 * htw_ctx_wakes() - how many times a context's wheels woke it, and it
 *	woke its pollers
 * @ctx: the context
 * @wakeups: set to how many times the context woke its pollers (and a
 *	blocked reader, but for a read's): for each wake of a wheel, a read
 *	that left events it made, events given back, a cancel by a set of
 *	the wall clock
 *
 * Context: Any context; the counts may be stale as soon as they are read.
 * Return: the wakes of its wheels (htw_wheel_wakes()), summed.
 */
u64 htw_ctx_wakes(struct htw_ctx *ctx, u64 *wakeups)
{
	struct htw_wheel *wheel;
	u64 wakes = 0;
	int clock;

	spin_lock_irq(&ctx->wqh.lock);
	*wakeups = ctx->wakeups;
	spin_unlock_irq(&ctx->wqh.lock);
	for (clock = 0; clock < HTW_CTX_NR_CLOCKS; clock++) {
		/* Pairs with the release in __htw_ctx_wheel(). */
		wheel = smp_load_acquire(&ctx->wheel[clock]);
		if (wheel)
			wakes += htw_wheel_wakes(wheel);
	}
	return wakes;
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
