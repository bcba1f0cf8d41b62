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
 * The pollers' lock, ctx->pollers.wqh.lock (the poll queue's spinlock,
 * taken with interrupts disabled), protects the event queue and each
 * timer's event record; the callbacks take it, as timerfd's do.  A wake
 * of the pollers goes through a chunk of them a hold of it (htw_pollers.c):
 * a mark's, in the hrtimer's softirq, the first chunk, and a work item the
 * rest; a call's, all of them, in the caller's context, after the events
 * are queued and the lock let go.  So no user's epoll items hold a CPU
 * in the softirq, and the walks a user's calls make are that user's.
 * ctx->rwq.lock, the lock of the queue where readers block, nests inside
 * it, and only the scheduler's locks (of a wake-up) inside itself.
 *
 * htw_wall_lock (a spinlock) protects changes to htw_wall_ctxs, the
 * contexts that have a wall-clock wheel, and each context's @wall_node in
 * it: a context joins the list with its wall-clock wheel, under ctx->lock,
 * and leaves it in htw_ctx_destroy(), each an O(1) hold of the lock.  The
 * work that follows a set of the wall clock walks the list with a cursor
 * of its own, a context a hold of the lock, with the scheduler looked at
 * between (htw_wall_set_fn()): however many files users make, the walk
 * holds the CPU and the lock for one context's mark at a time (a chunk of
 * its pollers), and a context that leaves the list meanwhile is never
 * reached.
 *
 * Lock order: ctx->lock, then htw_wall_lock or the pollers' lock; the walk
 * takes the pollers' lock inside htw_wall_lock, never ctx->lock; then
 * ctx->rwq.lock.  Creating and destroying a wheel under ctx->lock takes
 * the core's xarray lock (htw_core.c) after it.  The callbacks take the
 * pollers' lock inside their wheel's lock, and htw_*() are never called
 * with the pollers' lock held.  htw_del_sync() is called with ctx->lock
 * held, and takes the wheel's lock, which is safe because callbacks never
 * take ctx->lock.  The file's ring timers (htw_ring.c) wake the pollers
 * through htw_ctx_pollers(), holding their own ring->lock (or, from their
 * wheel's hrtimer, nothing): the pollers' lock nests inside ring->lock,
 * and no code of the context's calls the ring timers.
 *
 * The rest is in files of their own, each opening with its part of the
 * design: timers armed, moved and cancelled (htw_ctx_timers.c); the
 * expiry work done in the owner's context, the event queue, read() and
 * poll() (htw_ctx_events.c); wall-clock timers across sets of the clock
 * (htw_ctx_wall.c).
 */

#include <kunit/visibility.h>
#include <linux/math64.h>
#include <linux/sched.h>
#include <linux/uaccess.h>

#include "htw_ctx_internal.h"

#include "htw_user.h"

struct kmem_cache *htw_utimer_cache;

/*
 * Ids a close erases under one hold of the xarray's lock: a few
 * microseconds, where a lock each costs as much as the erase.
 */
#define HTW_CTX_ERASE_CHUNK	256U

/*
 * New work, from a mark (the hrtimer's softirq, or the walk after a set of
 * the wall clock): wake the file's pollers, those past the first chunk in
 * a work item, and one of its blocked readers; count it (fdinfo's
 * wakeups).
 */
static void __htw_ctx_wake_up(struct htw_ctx *ctx)
	__must_hold(&ctx->pollers.wqh.lock)
{
	lockdep_assert_held(&ctx->pollers.wqh.lock);

	ctx->wakeups++;
	wake_up(&ctx->rwq);
	__htw_pollers_wake(&ctx->pollers);
}

/*
 * Wake the file's pollers, all of them here, in the caller's context, which
 * made the work and pays for the walk; and, for new work (@reader), one of
 * its blocked readers.
 */
static void htw_ctx_wake_here(struct htw_ctx *ctx, bool reader)
{
	spin_lock_irq(&ctx->pollers.wqh.lock);
	ctx->wakeups++;
	spin_unlock_irq(&ctx->pollers.wqh.lock);
	if (reader)
		wake_up(&ctx->rwq);
	htw_pollers_wake_sync(&ctx->pollers);
}

/**
 * htw_ctx_wake_up() - new work from a call: wake the pollers and a reader
 * @ctx: the context
 *
 * Events given back, or queued by a set of the wall clock, made after they
 * are queued, under no spinlock.
 *
 * Context: Process context; may sleep.
 */
void htw_ctx_wake_up(struct htw_ctx *ctx)
{
	htw_ctx_wake_here(ctx, true);
}

/*
 * Mark the context for its users to do @bit's work, a wheel's due timers
 * or the wall-clock timers to place again, and wake its waiters.  For a
 * wheel's, @now is when its timers were found due (see @woken), kept from
 * the first mark of those that no run has taken yet.
 */
void htw_ctx_mark(struct htw_ctx *ctx, int bit, u64 now)
{
	unsigned long flags;

	spin_lock_irqsave(&ctx->pollers.wqh.lock, flags);
	if (!test_and_set_bit(bit, &ctx->due) && bit < HTW_CTX_NR_CLOCKS)
		ctx->woken[bit] = now;
	__htw_ctx_wake_up(ctx);
	spin_unlock_irqrestore(&ctx->pollers.wqh.lock, flags);
}

/*
 * Wake the file's pollers: a read made events it left queued, which
 * EPOLLET must hear of (the read itself passes the turn to a reader).
 */
void htw_ctx_wake_pollers(struct htw_ctx *ctx)
{
	htw_ctx_wake_here(ctx, false);
}

/*
 * Take the mark off the wheel of @clock, unless it is due: the one way a
 * wheel's mark comes off, after a run that left nothing due, or an ioctl
 * that may have cancelled the due timers.  A mark stays on while its
 * wheel has work, through the runs, so that no reader looking meanwhile
 * takes a due wheel for one with nothing to read; and a wheel that comes
 * due as the mark comes off is marked again, with a wake.
 */
void htw_ctx_unmark(struct htw_ctx *ctx, int clock)
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
void htw_ctx_unmark_stale(struct htw_ctx *ctx)
	__must_hold(&ctx->lock)
{
	int clock;

	lockdep_assert_held(&ctx->lock);

	for (clock = 0; clock < HTW_CTX_NR_CLOCKS; clock++)
		if (test_bit(clock, &ctx->due))
			htw_ctx_unmark(ctx, clock);
}

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
	ret = htw_ctx_wall_init();
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
	htw_ctx_wall_exit();
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
int htw_ctx_charge_slot(struct htw_ctx *ctx, u32 slot)
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

/* The present on a clock, as the context's wheel of that clock sees it. */
u64 htw_ctx_now(struct htw_ctx *ctx, enum htw_ctx_clock clock)
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
	/* Its readers run it: see htw_ctx_events.c. */
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
	if (clock == HTW_CTX_REALTIME)
		htw_ctx_wall_join(ctx);
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
u64 htw_ctx_wheel_time(struct htw_ctx *ctx, enum htw_ctx_clock clock,
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
int htw_ctx_prepare(struct htw_ctx *ctx, enum htw_ctx_clock clock,
		    u64 expires, u64 period, u64 *when)
	__must_hold(&ctx->lock)
{
	struct htw_wheel *wheel = __htw_ctx_wheel(ctx, clock);

	if (IS_ERR(wheel))
		return PTR_ERR(wheel);
	*when = htw_ctx_wheel_time(ctx, clock, expires);
	return htw_wheel_reserve(wheel, period ? U64_MAX : *when);
}

/* Free the timers @batch released. */
void htw_ctx_batch_flush(struct htw_ctx_batch *batch)
{
	kmem_cache_free_bulk(htw_utimer_cache, batch->nr_dead, batch->dead);
	batch->nr_dead = 0;
}

/* Free a timer with the others @batch released, HTW_CTX_BATCH_MAX at once. */
void htw_ctx_batch_free(struct htw_ctx_batch *batch,
			struct htw_utimer *ut)
{
	if (batch->nr_dead == ARRAY_SIZE(batch->dead))
		htw_ctx_batch_flush(batch);
	batch->dead[batch->nr_dead++] = ut;
}

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
	htw_pollers_init(&ctx->pollers);
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
	XA_STATE(xas, &ctx->timers, 0);
	struct htw_utimer *ut;
	unsigned int erased;
	int i;

	/* Off the list, no walk after a set of the clock marks it. */
	if (ctx->wheel[HTW_CTX_REALTIME])
		htw_ctx_wall_leave(ctx);

	/* Nor may a wheel wake it once this is done. */
	for (i = 0; i < HTW_CTX_NR_CLOCKS; i++)
		if (ctx->wheel[i])
			htw_wheel_stop(ctx->wheel[i]);
	/* Nor a wake of its pollers go on. */
	htw_pollers_exit(&ctx->pollers);
	/*
	 * None runs now, so the queue can be dropped without its lock.  The
	 * ids are erased in one walk, HTW_CTX_ERASE_CHUNK under each hold of
	 * the xarray's lock, with the scheduler looked at between: where
	 * xa_destroy() would walk millions with interrupts off, and an erase
	 * of each id would walk down from the root, and lock, for each.
	 */
	do {
		erased = 0;
		xas_lock(&xas);
		xas_for_each(&xas, ut, ULONG_MAX) {
			xas_store(&xas, NULL);
			/* No timer: the XA_ZERO_ENTRY of a reserved index. */
			if (!xa_is_zero(ut))
				htw_ctx_batch_free(&batch, ut);
			/*
			 * Go on from the next index: not xas_pause(), which,
			 * after a store that freed the node, steps from its
			 * parent, and in some kernels (6.12) past the next
			 * node's first indices.
			 */
			if (++erased == HTW_CTX_ERASE_CHUNK) {
				xas_set(&xas, xas.xa_index + 1);
				break;
			}
		}
		xas_unlock(&xas);
		cond_resched();
	} while (erased == HTW_CTX_ERASE_CHUNK);
	htw_ctx_batch_flush(&batch);
	if (ctx->params.user)
		htw_user_uncharge(ctx->params.user,
				  ctx->nr_timers * htw_ctx_timer_cost() +
				  ctx->charged);
	for (i = 0; i < HTW_CTX_NR_CLOCKS; i++)
		htw_wheel_destroy(ctx->wheel[i]);
	mutex_destroy(&ctx->lock);
	kfree(ctx);
}
EXPORT_SYMBOL_IF_KUNIT(htw_ctx_destroy);

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
struct htw_pollers *htw_ctx_pollers(struct htw_ctx *ctx)
{
	return &ctx->pollers;
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

	spin_lock_irq(&ctx->pollers.wqh.lock);
	*wakeups = ctx->wakeups;
	spin_unlock_irq(&ctx->pollers.wqh.lock);
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
