/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Hierarchical timing wheel: the kernel API
 *
 * A wheel holds any number of timers and runs each one's callback once its
 * expiry has passed.  The promise, for a wheel of tick T:
 *
 *	expiry <= time the callback starts < expiry + T (+ scheduling latency)
 *
 * A timer is never early and at most one tick late, wherever it sits in the
 * wheel and however far away its expiry was when it was armed (up to 2^64 ns
 * on the wheel's clock: there is no clamping).
 *
 * Under a burst, "the callback starts" is the start of the expiry work: the
 * callbacks of timers due at one tick run one after another, in the order
 * they became due, batch after batch (see HTW_RUN_NS), so the k-th of a
 * burst starts about k callbacks after the first.  (One exception to the
 * order: a timer armed already due while a crowded bucket of the present
 * tick is still being emptied runs before the rest of that bucket.)  And a
 * bucket of a higher level is moved down when its start passes, before its
 * timers are due, in batches too: a timer due at that start waits for the
 * moves of the timers ahead of it in the bucket.  (In UML, with a 1 ms
 * tick, 100,000 timers due at one instant: the first callback 0.4 to 1.1 ms
 * after the expiry, the last 5.4 to 6.1 ms; timer_list's, 12 to 16 and 15
 * to 20 ms.)  Arming and
 * cancelling are O(1) and never allocate (on a wheel that allocates its
 * levels on demand, htw_wheel_reserve() does, beforehand).  See the design
 * notes at the top of htw_core.c.
 */
#ifndef _HTW_CORE_H
#define _HTW_CORE_H

#include <linux/list.h>
#include <linux/seq_file.h>
#include <linux/time.h>
#include <linux/types.h>

struct htw_wheel;
struct htw_timer;

/**
 * typedef htw_func_t - a timer's callback
 * @timer: the timer that expired
 * @expired: the expiry being reported, in ns on the wheel's clock (for a
 *	periodic timer that missed periods, the latest one that passed)
 * @count: how many expiries this call accounts for: 1, plus the periods a
 *	periodic timer missed (its overruns)
 *
 * Called in softirq context (or, for a manual wheel, in the context of
 * htw_advance(), and for a wheel of %HTW_WHEEL_DEFERRED, in that of
 * htw_wheel_run()) without the wheel's lock held (but see
 * %HTW_WHEEL_LOCKED_CALLBACKS).  It may add, modify or delete any timer of
 * the wheel, including @timer, but must not sleep.
 * When it runs, a periodic @timer is already armed for its next expiry.
 * A one-shot @timer is idle when its callback starts, and the wheel does
 * not touch it after calling @func: unless re-armed, it may be freed by the
 * callback or by whoever the callback hands it to.
 */
typedef void (*htw_func_t)(struct htw_timer *timer, u64 expired, u64 count);

/**
 * struct htw_timer - one timer, embedded in its user's structure
 *
 * All fields are private to htw_core.c; use the functions below.  The
 * fields that change are protected by the lock of @wheel; @expires and
 * @slot are also read without it (htw_expires(), htw_pending()), so they
 * are written with WRITE_ONCE().
 *
 * The link (@entry) belongs to the wheel only while the timer is armed.
 * While it is idle, the wheel neither reads nor writes it, and lends it to
 * the timer's owner (htw_timer_link()), which may keep the timer on a list
 * of its own with it: /dev/htw queues its expired timers as events so, and
 * saves a link in each of millions of timers.
 */
struct htw_timer {
	struct list_head entry;
	u64 expires;
	u64 period;
	htw_func_t func;
	struct htw_wheel *wheel;
	u32 slot;
};

/**
 * enum htw_mode - how htw_add() and htw_mod() read an expiry
 * @HTW_MODE_ABS: absolute time in ns on the wheel's clock
 * @HTW_MODE_REL: ns from the wheel's current time
 */
enum htw_mode {
	HTW_MODE_ABS = 0,
	HTW_MODE_REL = 1,
};

/*
 * HTW_WHEEL_MANUAL: the wheel arms no hrtimer; its time moves only through
 * htw_advance().  Meant for deterministic tests and simulations.
 *
 * HTW_WHEEL_LAZY_LEVELS: the wheel allocates no level at creation; each
 * expiry's levels are allocated by htw_wheel_reserve() before the timer is
 * added.  Such a wheel takes one-shot timers only (a periodic re-arm, made
 * in softirq context, could need a level that nobody reserved).
 *
 * HTW_WHEEL_ACCOUNT: the wheel's memory is charged to the memory cgroup of
 * whoever creates it or reserves its levels; over the cgroup's limit, its
 * allocations fail with -ENOMEM rather than invoke the OOM killer.
 *
 * HTW_WHEEL_LOCKED_CALLBACKS: the callbacks run with the wheel's lock held
 * (interrupts off but on PREEMPT_RT), HTW_LOCKED_CALLBACKS of them in one
 * hold of it, which spares a lock round trip per callback.  They must not
 * call htw_*() on any wheel, nor take a lock that is held around such a
 * call; htw_wheel_now() and htw_timer_wheel_data() are safe.  In return,
 * htw_del_sync() never waits: no callback runs while it holds the lock.
 * For short callbacks that hand the expiry on (queue an event, wake a
 * reader).
 *
 * HTW_WHEEL_DEFERRED: the wheel's hrtimer runs nothing: it tells the owner
 * that timers are due, through the wheel's @wake, and the owner runs the
 * wheel in its own context with htw_wheel_run(), when it likes.  For
 * expiry work that must be paid for by whoever the timers serve.
 */
#define HTW_WHEEL_MANUAL		BIT(0)
#define HTW_WHEEL_LAZY_LEVELS		BIT(1)
#define HTW_WHEEL_ACCOUNT		BIT(2)
#define HTW_WHEEL_LOCKED_CALLBACKS	BIT(3)
#define HTW_WHEEL_DEFERRED		BIT(4)
#define HTW_WHEEL_FLAGS		(HTW_WHEEL_MANUAL | HTW_WHEEL_LAZY_LEVELS | \
				 HTW_WHEEL_ACCOUNT | HTW_WHEEL_LOCKED_CALLBACKS | \
				 HTW_WHEEL_DEFERRED)

/* Wheel sizes are powers of two from 2 to 64 buckets per level. */
#define HTW_WHEEL_SIZE_MIN	2
#define HTW_WHEEL_SIZE_MAX	64

/* Most levels any wheel can have (tick 1 ns, 2 buckets a level). */
#define HTW_MAX_LEVELS		64

/*
 * Callbacks of a wheel of HTW_WHEEL_LOCKED_CALLBACKS run in one hold of its
 * lock, interrupts off: the longest its expiry run keeps them off.
 */
#define HTW_LOCKED_CALLBACKS	8

/* Callbacks one batch of an expiry run makes when the caller does not choose. */
#define HTW_DEFAULT_BUDGET	128

/*
 * How long the expiry runs of one pass of a CPU's hrtimer softirq go on,
 * batch after batch, before they leave the rest to the next pass: the most
 * they keep the CPU from other work, however many wheels are due, give or
 * take one batch.
 */
#define HTW_RUN_NS		(250 * NSEC_PER_USEC)

/*
 * Moving a timer out of an expired bucket costs a fraction of a callback:
 * one batch moves at most this many timers per callback of its budget.
 */
#define HTW_MOVES_PER_CALLBACK	16

/**
 * typedef htw_wake_t - a wheel of %HTW_WHEEL_DEFERRED has timers due
 * @wheel: the wheel
 * @now: when its hrtimer found them due, in ns on the wheel's clock
 *
 * Called in softirq context, without the wheel's lock, at most once per
 * expiry of the wheel's hrtimer, and never once htw_wheel_stop() has
 * returned.  It should only record that the wheel is due and wake whoever
 * runs it (htw_wheel_run()).
 */
typedef void (*htw_wake_t)(struct htw_wheel *wheel, u64 now);

/**
 * struct htw_wheel_params - what a wheel is made of
 * @tick_ns: width of a level-0 bucket in ns, at least 1; need not be a
 *	power of two.  It is the precision promise: at most one tick late.
 * @wheel_size: buckets per level, a power of two in
 *	[%HTW_WHEEL_SIZE_MIN, %HTW_WHEEL_SIZE_MAX]
 * @expire_budget: most callbacks one batch of an expiry run makes; 0 means
 *	%HTW_DEFAULT_BUDGET.  It also bounds the timers a batch moves out of
 *	expired buckets, at %HTW_MOVES_PER_CALLBACK times as many.  A run makes
 *	batches for at most %HTW_RUN_NS, and leaves the rest to a new run at
 *	once; a manual wheel's run (htw_advance()) is one batch.
 * @clockid: %CLOCK_MONOTONIC or %CLOCK_BOOTTIME
 * @flags: %HTW_WHEEL_MANUAL, %HTW_WHEEL_LAZY_LEVELS, %HTW_WHEEL_ACCOUNT,
 *	%HTW_WHEEL_LOCKED_CALLBACKS, %HTW_WHEEL_DEFERRED
 * @start_ns: a manual wheel's initial time; must be 0 otherwise
 * @data: the owner's, for its callbacks (htw_timer_wheel_data()); the
 *	wheel never touches it
 * @wake: of a wheel of %HTW_WHEEL_DEFERRED, and only of one: called when
 *	its timers are due
 */
struct htw_wheel_params {
	u64 tick_ns;
	u32 wheel_size;
	u32 expire_budget;
	clockid_t clockid;
	u32 flags;
	u64 start_ns;
	void *data;
	htw_wake_t wake;
};

/* Lateness histogram buckets: 0 ticks late, 1, 2-3, 4-7, ..., 2^14 and up. */
#define HTW_LATE_BUCKETS	16

/**
 * struct htw_wheel_stats - a snapshot of a wheel, for tests and debugging
 * @tick_ns: the wheel's tick
 * @wheel_size: its buckets per level
 * @nr_levels: levels in use: one more than the highest level holding a timer
 * @nr_reserved: levels whose buckets are allocated
 * @pending: timers armed (in a bucket or due and waiting for their callback)
 * @due: timers whose expiry has passed and whose callback has not started
 * @level: timers in the buckets of each level
 * @runs: expiry runs so far
 * @fired: callbacks started so far
 * @cascaded: timers re-inserted into a lower level so far
 * @budget_stops: expiry runs that left work for the next one: on a manual
 *	or deferred wheel, their batch's budget spent; else, the %HTW_RUN_NS
 *	of their CPU's pass (see @yields)
 * @wakes: of a deferred wheel, the times its hrtimer woke the owner
 * @yields: of a wheel run by its hrtimer, the expiries that ran nothing,
 *	left to a later pass of the CPU's hrtimer softirq: other wheels had
 *	spent its %HTW_RUN_NS, or it was another wheel's turn
 * @programs: of a wheel not manual, the times its hrtimer was armed
 *	(hrtimer_start())
 * @late: callbacks by lateness, in whole ticks past their expiry's tick:
 *	bucket 0 for none, then one per power of two
 */
struct htw_wheel_stats {
	u64 tick_ns;
	u32 wheel_size;
	u32 nr_levels;
	u32 nr_reserved;
	u64 pending;
	u64 due;
	u64 level[HTW_MAX_LEVELS];
	u64 runs;
	u64 fired;
	u64 cascaded;
	u64 budget_stops;
	u64 wakes;
	u64 yields;
	u64 programs;
	u64 late[HTW_LATE_BUCKETS];
};

struct htw_wheel *htw_wheel_create(const struct htw_wheel_params *params);
void htw_wheel_stop(struct htw_wheel *wheel);
void htw_wheel_destroy(struct htw_wheel *wheel);
int htw_wheel_reserve(struct htw_wheel *wheel, u64 expires);
size_t htw_wheel_footprint(const struct htw_wheel *wheel);
u64 htw_wheel_now(struct htw_wheel *wheel);
unsigned int htw_advance(struct htw_wheel *wheel, u64 now);
unsigned int htw_wheel_run(struct htw_wheel *wheel, u64 until, bool *left);
u64 htw_wheel_wakes(struct htw_wheel *wheel);
bool htw_wheel_due(struct htw_wheel *wheel);
bool htw_wheel_settle(struct htw_wheel *wheel);
void *htw_wheel_data(const struct htw_wheel *wheel);
void htw_wheel_get_stats(struct htw_wheel *wheel, struct htw_wheel_stats *stats);
extern const struct seq_operations htw_wheels_sops;

void htw_timer_init(struct htw_timer *timer, struct htw_wheel *wheel,
		    htw_func_t func);
void *htw_timer_wheel_data(const struct htw_timer *timer);
int htw_add(struct htw_timer *timer, u64 expires, u64 period,
	    enum htw_mode mode);
int htw_mod(struct htw_timer *timer, u64 expires, u64 period,
	    enum htw_mode mode);
bool htw_del(struct htw_timer *timer);
int htw_del_sync(struct htw_timer *timer);
bool htw_pending(const struct htw_timer *timer);
void htw_wheel_lock(struct htw_wheel *wheel, unsigned long *flags);
void htw_wheel_unlock(struct htw_wheel *wheel, unsigned long flags);
int htw_mod_locked(struct htw_timer *timer, u64 expires, u64 period,
		   enum htw_mode mode);
bool htw_del_locked(struct htw_timer *timer);
u64 htw_expires(const struct htw_timer *timer);

/**
 * htw_timer_link() - the link of an idle timer, lent to its owner
 * @timer: the timer: idle, and not on a stopped wheel
 *
 * From the moment a timer is idle (its one-shot callback is called, or
 * htw_del() or htw_del_sync() disarmed it) until it is armed again, its
 * owner may put its link on a list of its own; it must take it off before
 * it arms the timer again, or passes it to htw_timer_init().  A timer that
 * a stopped wheel abandoned, or that htw_del() made idle on one, may still
 * be linked where the wheel had it: its link is not lent.
 *
 * Context: Any context; serialised by the owner against arming the timer.
 * Return: the link, for list_add() and the like.
 */
static inline struct list_head *htw_timer_link(struct htw_timer *timer)
{
	return &timer->entry;
}

/**
 * htw_timer_from_link() - the timer whose link htw_timer_link() lent
 * @link: the link, as found on the owner's list
 *
 * Context: Any context.
 * Return: the timer.
 */
static inline struct htw_timer *htw_timer_from_link(struct list_head *link)
{
	return container_of(link, struct htw_timer, entry);
}

#endif /* _HTW_CORE_H */
