// SPDX-License-Identifier: GPL-2.0
/*
 * A hierarchical timing wheel
 *
 * The model
 * ---------
 * This is the wheel of Varghese and Lauck, in the form Kafka's TimingWheel
 * gave it.  Time is counted in ticks of the wheel's tick T since the wheel's
 * origin (its clock's value when it was created).  A timer expiring at E ns
 * is due at tick
 *
 *	when = ceil((E - origin) / T)
 *
 * the first tick boundary at or after E: a timer is never early, and the
 * boundary is less than one tick after E.  That rounding is the whole
 * precision promise of htw_core.h; everything below only has to run each
 * timer once the wheel's clock has reached its when.
 *
 * Level k has N = wheel_size buckets of N^k ticks each, so its span, N^(k+1)
 * ticks, is the tick of level k+1.  N is a power of two, N = 1 << shift, so
 * a tick count is split into levels by shifts and masks: a timer on level k
 * lies in the bucket of "virtual id" v = when >> (k * shift), which is slot
 * v & (N - 1) of that level.  With clk the wheel's clock in ticks (every
 * timer with when <= clk has been made due), a timer goes to the lowest
 * level k at which
 *
 *	(when >> (k * shift)) - (clk >> (k * shift)) < N
 *
 * which is Kafka's "within this level's span from its current time".  The
 * left side is at most one more than (when - clk) >> (k * shift), so the
 * level is found from fls64(when - clk) in O(1) and one comparison, with no
 * loop over levels.  That rule keeps the ids on a level within
 * [(clk >> k*shift) + 1, (clk >> k*shift) + N - 1]: N - 1 consecutive ids,
 * so no two share a slot, and the slot of the current id is always empty.
 *
 * A bucket "expires" when clk reaches its start, v << (k * shift).  Its
 * timers are then re-inserted by the rule above; they land on a lower level
 * (their when lies within one bucket of clk now), or, from level 0, on the
 * due list.  A timer thus moves down at most once per level and reaches the
 * due list exactly when clk reaches its when.
 *
 * Why cascade at all?  timer_list's wheel (kernel/time/timer.c) never moves
 * a timer: it rounds a far expiry up to its level's granularity and accepts
 * being up to 12.5% late, which suits timeouts that are almost always
 * cancelled.  htw promises one tick to every timer whatever its distance,
 * and pays for that with at most one move per level in a timer's life, each
 * an O(1) list operation done by the expiry run, never by the caller.
 *
 * Levels on demand.  Kafka creates an overflow wheel for the first timer
 * that needs it.  A wheel can need up to 64 / shift levels of N buckets;
 * by default the buckets of every one of them are allocated when the wheel
 * is created, so that adding a timer never allocates and never fails for
 * lack of memory, as add_timer() cannot.  A wheel created with
 * HTW_WHEEL_LAZY_LEVELS starts with none: htw_wheel_reserve(), in process
 * context, allocates the levels an expiry needs before the timer is added,
 * so that a wheel holding only near timers costs one level.  Levels are
 * allocated from level 0 up and kept until the wheel is destroyed.  The
 * level a timer needs only falls as clk moves on (its distance from clk
 * shrinks), so a reservation made before an add holds for that add and for
 * every cascade after it; a periodic timer, whose re-arm the wheel makes on
 * its own in softirq context, could need a level nobody reserved, so lazy
 * wheels take one-shot timers only.  A level is in use only while it holds
 * timers (@level_map), and the levels not in use cost no work.
 *
 * Wheels their owner runs
 * -----------------------
 * A wheel of HTW_WHEEL_DEFERRED runs no callback in interrupt context.  Its
 * hrtimer still fires at its next event, but only tells the owner (@wake,
 * O(1)); the owner runs the wheel in its own context, when it likes, with
 * htw_wheel_run(): one batch a call, expiring buckets up to the present and
 * running at most the budget's callbacks, in process context.  A call that
 * leaves nothing due arms the hrtimer for the next event; one that leaves
 * work arms nothing, since its caller knows there is more (the call says
 * so), and a wake per batch would wake the owner's waiters once a batch.
 * Once it has woken its owner, a deferred wheel arms its hrtimer no more
 * until the owner has run it (or found it not due, htw_wheel_settle()):
 * timers armed meanwhile, due already or not, cost no expiry and no wake,
 * since the owner, told, finds them when it runs the wheel.  Else each arm
 * of a due timer on a wheel nobody runs would bring an expiry, and a wake
 * of every waiter of the owner's.
 *
 * So a wheel's expiry work can be charged to whoever its timers serve, as
 * timerfd charges a periodic timer's re-arm to its reader and io_uring its
 * completions to the submitter (task_work): /dev/htw has each file's
 * readers run its wheels, and a file nobody reads costs one hrtimer
 * expiry, then nothing.  Calls for one wheel must not run concurrently: the
 * owner serialises them, as a manual wheel's caller does htw_advance().
 *
 * Each wheel's tick grid is aligned on its clock: tick 0 starts at a
 * multiple of the tick.  Wheels of the same tick then have the same tick
 * boundaries, and their hrtimers, due at the same instants, expire in one
 * hrtimer interrupt: a thousand files with a 10 ms periodic timer each
 * make one wake-up every 10 ms, not a thousand.  (Slack on the hrtimer
 * would merge more, but the promise is one tick from the expiry, not from
 * the boundary: a timer due just after a boundary leaves the boundary of
 * its tick no room.)
 *
 * Four things move a wheel's time, each with a verb of its own: an expiry
 * run expires buckets up to the present (__htw_expire_to()); an arm skips
 * clk over idle ticks (__htw_skip_idle()); a periodic timer is re-armed a
 * whole number of periods on (__htw_rearm_period()); and the caller of a
 * manual wheel advances its present (htw_advance()).
 *
 * Finding the next expiry
 * -----------------------
 * Each level keeps a 64-bit occupancy map, one bit a bucket.  The next
 * bucket start on a level is the first set bit after the current slot, in
 * circular order; the wheel's next event is the earliest of those over the
 * levels in use.  One hrtimer per wheel is armed for that tick (origin +
 * tick * T), and not at all while the wheel is empty: an idle wheel, or a
 * wheel whose timers are far away, takes no interrupt per tick.  When the
 * hrtimer fires, clk moves to the current tick, expiring each non-empty
 * bucket whose start it passes, in order.  Deleting a timer does not
 * re-program the hrtimer (a spurious expiry run is cheaper than a
 * re-programming per delete) unless the wheel became empty.
 *
 * Running callbacks
 * -----------------
 * Due timers wait on the wheel's due list, in the order they became due.
 * An expiry run works in batches: each makes at most expire_budget
 * callbacks and moves at most HTW_MOVES_PER_CALLBACK times as many timers
 * out of expired buckets.  The run goes on, batch after batch, while work
 * remains and its pass of the softirq (below) has lasted less than
 * HTW_RUN_NS; then, if timers remain due or a bucket is left half emptied,
 * the hrtimer is re-armed for "now" and the next run, a new softirq,
 * continues where this one stopped.
 *
 * The bound is in time because what a run must not do is keep the CPU from
 * everything else for long, and that is a time.  A bound in callbacks
 * alone cost throughput: every run pays for a softirq and for programming
 * the hrtimer (under emulation, most of its cost), and with 128 callbacks a
 * run, a million timers due over a second made some 7,800 runs more than
 * needed.  A manual wheel's run (htw_advance()) is one batch: its caller
 * paces it.
 *
 * And the bound is the CPU's, not the wheel's: every wheel whose hrtimer
 * expires in one pass of a CPU's hrtimer softirq shares one HTW_RUN_NS, so
 * that F wheels due at one instant keep the CPU HTW_RUN_NS, not F times
 * that.  The pass is told by the CPU's count of HRTIMER_SOFTIRQ runs, which
 * changes from one pass to the next; a wheel whose hrtimer finds the pass's
 * time spent runs nothing, and re-arms its hrtimer for the next pass (a
 * "yield").
 *
 * The wheels take turns, whatever order the hrtimer softirq finds them in
 * (all expired timers of CLOCK_MONOTONIC come before CLOCK_BOOTTIME's,
 * say): until the wheel that waited longest has run in a pass, a wheel
 * runs only if no wheel that yielded in the previous pass last ran before
 * it (@last_run, a count of all runs), else it yields too; once that one
 * has run, the others run while the pass has time.  So the wheel that
 * waited longest runs next, and each of F wheels with more work than a
 * pass runs once in F passes.  A pass in which no wheel may run (the one
 * that may was cancelled meanwhile) leaves the next pass to the
 * longest-waiting of those that yielded in it.  A yield costs a lock and
 * an hrtimer re-arm, not counted against the pass: the wheels run by their
 * hrtimer are made by kernel code, a handful at a time, where a user's
 * wheels are run by their owner (above).
 *
 * A callback runs without the wheel's lock, with the wheel's @running
 * pointing at its timer (or, on a wheel of HTW_WHEEL_LOCKED_CALLBACKS,
 * with the lock held); a periodic timer is re-armed at (previous expiry +
 * period) before its callback, skipping (and counting as overruns) the
 * periods that have already passed, as hrtimer_forward() does.
 *
 * Locking
 * -------
 * wheel->lock (a spinlock taken with interrupts disabled, so that timers
 * can be armed from any context) protects the buckets, the maps, the due
 * list, clk, and each timer's @entry, @expires, @period and @slot.
 * A timer's place is only ever changed under that lock, so a cancel sees
 * the timer either in a bucket, on the due list, or idle, never in between:
 * a cascade moves the timer under the same lock the cancel takes.
 *
 * Nested inside wheel->lock are the hrtimer's base lock (through
 * hrtimer_start() and hrtimer_try_to_cancel()) and the lock of @wq (and the
 * scheduler's, through wake_up_all()); the hrtimer callback takes
 * wheel->lock itself.  Callbacks are called with no lock held, so they may
 * take their own locks and re-enter the wheel.
 *
 * But on a wheel of HTW_WHEEL_LOCKED_CALLBACKS, the callbacks are called
 * with wheel->lock held, HTW_LOCKED_CALLBACKS of them in one hold: they
 * may take no lock that is ever held around a call of htw_*() on any
 * wheel, and call htw_*() on none.  Dropping and taking the lock around
 * each callback, and telling htw_del_sync() which one runs, costs about as
 * much as a callback that only queues an event and wakes a reader, which
 * is what /dev/htw's do.  htw_del_sync() on such a wheel never waits: no
 * callback runs while it holds the lock.  Such wheels' locks are a lockdep
 * class of their own, since the locks their callbacks take nest inside
 * them, where other wheels' callbacks may hold their own locks around
 * htw_*().  wheel->lock is a spinlock_t: on PREEMPT_RT it sleeps, and
 * timers cannot be armed from hard interrupt context there.
 *
 * The expiry run drops the lock now and then: around each callback (every
 * HTW_LOCKED_CALLBACKS of them, on a wheel of HTW_WHEEL_LOCKED_CALLBACKS),
 * and every HTW_MOVE_BATCH timers it moves, so that interrupts are never
 * off for long however many timers share a bucket.  Only one expiry run is
 * in progress at a time (@expiring), and what it has not yet moved stays
 * where a cancel can find it.
 *
 * A caller with many operations for one wheel holds its lock once for a
 * group of them (htw_wheel_lock(), then htw_mod_locked() and
 * htw_del_locked(), then htw_wheel_unlock()), and the hrtimer is re-armed
 * once, at the unlock, for all of them: that is what a submission ring of
 * /dev/htw does with each group of its entries.  The group is the caller's
 * to bound, since interrupts are off for all of it.
 *
 * htw_del_sync() waits, on @wq, until the timer's callback is no longer
 * running (on a wheel of HTW_WHEEL_LOCKED_CALLBACKS, taking the lock is
 * the wait); a callback asking to wait for itself would wait forever and
 * is refused.
 *
 * Every wheel has an id in htw_wheels, an xarray, for its statistics in
 * debugfs: creating and destroying a wheel take the xarray's lock for the
 * insert or the erase alone, so no lock common to all wheels is held for
 * work that a wheel's owner controls.  The statistics are read under RCU,
 * a wheel at a time, each found from the last id in O(log n), with the
 * wheel's lock taken inside; a wheel is freed a grace period after its
 * erase (kfree_rcu()), and a reader that found it before reads only the
 * fields of the wheel itself, not its buckets, which go at once.  A
 * caller's own locks (a /dev/htw file's mutex) come before wheel->lock.
 */

#include <linux/atomic.h>
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/export.h>
#include <linux/hrtimer.h>
#include <linux/interrupt.h>
#include <linux/kernel_stat.h>
#include <linux/ktime.h>
#include <linux/limits.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "htw_compat.h"
#include "htw_core.h"

#define CREATE_TRACE_POINTS
#include "htw_trace.h"

/*
 * A timer's @slot says where it is: idle, on the due list, or in the bucket
 * of that number, (level << shift) | index.
 */
#define HTW_SLOT_IDLE		U32_MAX
#define HTW_SLOT_DUE		(U32_MAX - 1)

/*
 * "No tick": an unarmed hrtimer, or an empty wheel's next event.  A wheel of
 * tick 1 can also have a bucket at tick U64_MAX; as the next event, that is
 * the same "nothing before the end of time" to everything but htw_advance(),
 * which asks __htw_next_event() which of the two it is.
 */
#define HTW_NEVER		U64_MAX

struct htw_level {
	u64 pending;	/* bit i set: bucket i of this level holds timers */
	u64 nr_timers;
	struct list_head *buckets;	/* wheel_size of them, or NULL */
};

struct htw_wheel {
	/* Set at creation and read-only after. */
	u64 tick;			/* ns per level-0 bucket */
	u64 tick_inv;			/* U64_MAX / tick, see htw_div_tick() */
	u64 origin;			/* clock value of tick 0, ns */
	unsigned int shift;		/* wheel_size == 1 << shift */
	unsigned int max_levels;	/* levels the wheel may need */
	unsigned int budget;		/* callbacks per batch of a run */
	unsigned int move_budget;	/* timers moved per batch of a run */
	unsigned int flags;		/* HTW_WHEEL_* */
	clockid_t clockid;
	void *data;			/* the owner's (htw_wheel_params) */
	htw_wake_t wake;		/* a deferred wheel's (htw_wheel_params) */
	u8 level_of[BITS_PER_LONG_LONG + 1];	/* fls64(when - clk) -> level */
#ifdef CONFIG_LOCKDEP
	struct lockdep_map lockdep_map;	/* "a callback of this wheel runs" */
#endif
	struct hrtimer hrtimer;
	wait_queue_head_t wq;		/* htw_del_sync() waits for @running */

	spinlock_t lock;			/* see "Locking" above */
	/* The following fields are protected by @lock. */
	u64 clk;			/* ticks; all timers with when <= clk are due */
	u64 present;			/* the tick an expiry run moves clk to */
	u64 clk_next_ns;		/* clock value at which clk + 1 begins */
	u64 next;			/* earliest bucket start, or a lower bound */
	u64 armed;			/* tick the hrtimer is set for, or HTW_NEVER */
	u64 now;			/* a manual wheel's time, ns */
	u64 coarse_ns;			/* see __htw_clock_coarse() */
	unsigned long coarse_jiffies;
	u64 nr_pending;			/* timers in buckets or on @due */
	u64 nr_due;
	unsigned int nr_reserved;	/* levels 0..nr_reserved-1 have buckets */
	struct list_head due;		/* timers whose callback is to run */
	struct htw_timer *running;	/* timer whose callback runs now */
	struct task_struct *running_task;	/* context that runs it */
	bool expiring;			/* an expiry run is in progress */
	bool draining;			/* a run left a bucket half emptied */
	bool stopped;			/* htw_wheel_stop(): no run, no new timer */
	bool told;			/* a deferred wheel woke its owner, no run since */
	bool moved;			/* a group of operations moved a timer */
	DECLARE_BITMAP(level_map, HTW_MAX_LEVELS);	/* levels in use */
	u64 runs, fired, cascaded, budget_stops, wakes, yields, programs; /* statistics */
	u64 last_run;			/* htw_run_seq at its last run by its hrtimer */
	u64 late[HTW_LATE_BUCKETS];	/* callbacks by lateness in ticks */

	u32 id;				/* in htw_wheels */
	struct rcu_head rcu;		/* frees it, a grace period after its erase */
	/* The buckets are @lock's; each level's pointer is set once. */
	struct htw_level levels[];
};

/*
 * The time the expiry runs of one pass of a CPU's hrtimer softirq have
 * taken, which every wheel in that pass shares, and whose turn it is (see
 * "Running callbacks" above): @pass is the CPU's HRTIMER_SOFTIRQ count in
 * it; @waited, one more than the earliest &htw_wheel.last_run of the
 * wheels that yielded in the previous pass (0 if none did, the state the
 * CPU starts in, or once the first of them has run in this pass), and
 * @waiting the same of this pass, so far.  Only softirq context on the CPU
 * touches it, one pass at a time.
 */
struct htw_cpu_pass {
	unsigned int pass;
	u64 spent;
	u64 waited;
	u64 waiting;
};

static DEFINE_PER_CPU(struct htw_cpu_pass, htw_cpu_pass);

/* Runs by hrtimer of all wheels, in order: &htw_wheel.last_run. */
static atomic64_t htw_run_seq;

/* The lockdep class of the lock of wheels whose callbacks run under it. */
static struct lock_class_key htw_locked_wheel_key;

/* Every wheel by its id, for htw_wheels_sops; see "Locking" above. */
static DEFINE_XARRAY_ALLOC(htw_wheels);

static inline bool htw_manual(const struct htw_wheel *wheel)
{
	return wheel->flags & HTW_WHEEL_MANUAL;
}

static inline bool htw_deferred(const struct htw_wheel *wheel)
{
	return wheel->flags & HTW_WHEEL_DEFERRED;
}

static inline u64 htw_size(const struct htw_wheel *wheel)
{
	return 1ULL << wheel->shift;
}

static inline u64 htw_mask(const struct htw_wheel *wheel)
{
	return htw_size(wheel) - 1;
}

static inline unsigned int htw_slot_level(const struct htw_wheel *wheel, u32 slot)
{
	return slot >> wheel->shift;
}

/* The level of an armed timer's @slot, or -1 for the due list (tracing). */
static inline int htw_trace_level(const struct htw_wheel *wheel, u32 slot)
{
	return slot == HTW_SLOT_DUE ? -1 : htw_slot_level(wheel, slot);
}

static inline struct list_head *htw_bucket(const struct htw_wheel *wheel, u32 slot)
{
	return &wheel->levels[htw_slot_level(wheel, slot)].buckets[slot & htw_mask(wheel)];
}

/*
 * htw_del_sync() waits for a callback; lockdep is told, as timer.c tells it
 * for timer_delete_sync(), so that it reports a wait under a lock the
 * callback takes.  The wait is told only when it is about to happen: a
 * callback may sync-delete another timer of its wheel, which never waits.
 * Manual and deferred wheels run their callbacks in process context, the
 * others in softirq context: two classes, or lockdep would see one class
 * used both ways.
 */
#ifdef CONFIG_LOCKDEP
static struct lock_class_key htw_callback_key, htw_manual_callback_key;

static void htw_lockdep_init(struct htw_wheel *wheel)
{
	lockdep_init_map(&wheel->lockdep_map, "htw_callback",
			 wheel->flags & (HTW_WHEEL_MANUAL | HTW_WHEEL_DEFERRED) ?
			 &htw_manual_callback_key : &htw_callback_key, 0);
}

static void htw_lockdep_callback(struct htw_wheel *wheel, bool start)
{
	if (start)
		lock_map_acquire(&wheel->lockdep_map);
	else
		lock_map_release(&wheel->lockdep_map);
}

static void htw_lockdep_wait(struct htw_wheel *wheel)
{
	unsigned long flags;

	local_irq_save(flags);
	lock_map_acquire(&wheel->lockdep_map);
	lock_map_release(&wheel->lockdep_map);
	local_irq_restore(flags);
}
#else
static inline void htw_lockdep_init(struct htw_wheel *wheel) {}
static inline void htw_lockdep_callback(struct htw_wheel *wheel, bool start) {}
static inline void htw_lockdep_wait(struct htw_wheel *wheel) {}
#endif

/*
 * GFP flags for the wheel's own memory.  An accounted wheel is memory user
 * space asked for: over its cgroup's limit it fails (__GFP_RETRY_MAYFAIL:
 * reclaim as hard as may help, then fail) rather than have the OOM killer
 * make room.
 */
static inline gfp_t htw_gfp(unsigned int flags)
{
	return flags & HTW_WHEEL_ACCOUNT ? GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL :
					   GFP_KERNEL;
}

/*
 * @d / tick and its remainder, without a division: every arm and every
 * expiry run converts a time to ticks, and a 64-bit divide costs more than
 * the rest of an arm.  With 2^64 - 1 = m * tick + s (0 <= s < tick), the
 * estimate q = floor(d * m / 2^64) is below d / tick by
 * d * (s + 1) / (tick * 2^64), which is under 1 for any 64-bit d: q is the
 * quotient or one less, which the remainder shows and one step puts right.
 */
static u64 htw_div_tick(const struct htw_wheel *wheel, u64 d, u64 *rem)
{
	u64 q = mul_u64_u64_shr(d, wheel->tick_inv, 64);
	u64 r = d - q * wheel->tick;

	while (r >= wheel->tick) {
		q++;
		r -= wheel->tick;
	}
	*rem = r;
	return q;
}

/* ceil(ns / tick) after the origin: the first tick boundary at or after ns. */
static u64 htw_ns_to_when(const struct htw_wheel *wheel, u64 ns)
{
	u64 rem, q;

	if (ns <= wheel->origin)
		return 0;
	q = htw_div_tick(wheel, ns - wheel->origin, &rem);
	return q + !!rem;
}

/* floor(ns / tick) after the origin: the last tick boundary at or before ns. */
static u64 htw_ns_to_tick(const struct htw_wheel *wheel, u64 ns)
{
	u64 rem;

	if (ns <= wheel->origin)
		return 0;
	return htw_div_tick(wheel, ns - wheel->origin, &rem);
}

/* The clock value at which tick @t begins, saturated at U64_MAX. */
static u64 htw_tick_to_ns(const struct htw_wheel *wheel, u64 t)
{
	u64 ns;

	if (check_mul_overflow(t, wheel->tick, &ns) ||
	    check_add_overflow(ns, wheel->origin, &ns))
		return U64_MAX;
	return ns;
}

static u64 htw_clock_now(const struct htw_wheel *wheel)
{
	if (wheel->clockid == CLOCK_BOOTTIME)
		return ktime_get_boottime_ns();
	return ktime_get_ns();
}

/*
 * The clock as of the last timekeeping update: never ahead of the present,
 * and no clocksource read.  Enough to bring clk forward before an arm of an
 * absolute expiry (clk must only never pass the present); a relative
 * expiry needs the present itself.  The arm's trace reports the time the
 * arm used, so that tracing changes nothing.
 *
 * The timekeeping update that moves the coarse clock is the tick that moves
 * jiffies, so the wheel keeps the value it read last and reads the clock
 * again only once jiffies has moved: one load instead of the timekeeper's
 * seqcount loop on every arm.  A value read between the two updates of a
 * tick lags by a tick more, which at worst leaves clk behind, never ahead.
 */
static u64 __htw_clock_coarse(struct htw_wheel *wheel)
	__must_hold(&wheel->lock)
{
	unsigned long j = READ_ONCE(jiffies);

	if (j != wheel->coarse_jiffies) {
		wheel->coarse_jiffies = j;
		wheel->coarse_ns = wheel->clockid == CLOCK_BOOTTIME ?
				   ktime_get_coarse_boottime_ns() :
				   ktime_get_coarse_ns();
	}
	return wheel->coarse_ns;
}

static void __htw_set_clk(struct htw_wheel *wheel, u64 clk)
	__must_hold(&wheel->lock)
{
	wheel->clk = clk;
	wheel->clk_next_ns = clk == U64_MAX ? U64_MAX :
					      htw_tick_to_ns(wheel, clk + 1);
}

/*
 * The bucket for a timer due at @when, and the tick that bucket expires at;
 * HTW_SLOT_DUE if @when has passed.  Level k is the lowest whose span from
 * its current bucket reaches @when (see "The model" above): the level whose
 * span first covers when - clk, or the one above it when the distance
 * crosses a bucket boundary of that level.
 */
static u32 __htw_slot(const struct htw_wheel *wheel, u64 when, u64 *start)
	__must_hold(&wheel->lock)
{
	unsigned int level, s;
	u64 v;

	if (when <= wheel->clk)
		return HTW_SLOT_DUE;

	level = wheel->level_of[fls64(when - wheel->clk)];
	s = level * wheel->shift;
	if ((when >> s) - (wheel->clk >> s) >= htw_size(wheel)) {
		level++;
		s += wheel->shift;
	}
	v = when >> s;
	*start = v << s;
	return (level << wheel->shift) | (v & htw_mask(wheel));
}

/*
 * Whether the level a timer due at @when goes to has its buckets: always,
 * on a wheel that has all its levels (every wheel but a lazy one), which
 * spares the arm a second placement.
 */
static bool __htw_reserved(const struct htw_wheel *wheel, u64 when)
	__must_hold(&wheel->lock)
{
	u64 start;
	u32 slot;

	if (wheel->nr_reserved == wheel->max_levels)
		return true;
	slot = __htw_slot(wheel, when, &start);

	return slot == HTW_SLOT_DUE ||
	       htw_slot_level(wheel, slot) < wheel->nr_reserved;
}

/*
 * Put @timer where @when, its expiry's tick, belongs; its place must be
 * empty.  The tick is not kept in the timer, to keep timers small: a move
 * down finds it again, at the cost of a multiplication.
 */
static void __htw_enqueue(struct htw_wheel *wheel, struct htw_timer *timer,
			  u64 when)
	__must_hold(&wheel->lock)
{
	unsigned int level;
	u64 start;
	u32 slot;

	lockdep_assert_held(&wheel->lock);

	slot = __htw_slot(wheel, when, &start);
	WRITE_ONCE(timer->slot, slot);
	if (slot == HTW_SLOT_DUE) {
		list_add_tail(&timer->entry, &wheel->due);
		wheel->nr_due++;
		return;
	}

	list_add_tail(&timer->entry, htw_bucket(wheel, slot));
	level = htw_slot_level(wheel, slot);
	wheel->levels[level].pending |= BIT_ULL(slot & htw_mask(wheel));
	wheel->levels[level].nr_timers++;
	__set_bit(level, wheel->level_map);
	wheel->next = min(wheel->next, start);
}

/*
 * Take @timer out of its bucket or the due list; it must be in one.  Its
 * @slot still names that place: the caller either puts the timer somewhere
 * else or makes it idle, so that a lockless htw_pending() never sees an
 * armed timer idle while it moves.
 */
static void __htw_unlink(struct htw_wheel *wheel, struct htw_timer *timer)
	__must_hold(&wheel->lock)
{
	struct htw_level *lvl;
	unsigned int level;
	u32 slot = timer->slot;

	lockdep_assert_held(&wheel->lock);

	list_del(&timer->entry);
	if (slot == HTW_SLOT_DUE) {
		wheel->nr_due--;
		return;
	}

	level = htw_slot_level(wheel, slot);
	lvl = &wheel->levels[level];
	lvl->nr_timers--;
	if (list_empty(htw_bucket(wheel, slot))) {
		lvl->pending &= ~BIT_ULL(slot & htw_mask(wheel));
		if (!lvl->pending)
			__clear_bit(level, wheel->level_map);
	}
}

/*
 * Set *@next to the earliest bucket start over the levels in use and return
 * true, or return false if no bucket holds a timer.  On each level it is
 * the first occupied bucket after the current one, in circular order (the
 * current one is always empty, see "The model").
 */
static bool __htw_next_event(const struct htw_wheel *wheel, u64 *next)
	__must_hold(&wheel->lock)
{
	unsigned int level;

	*next = HTW_NEVER;
	for_each_set_bit(level, wheel->level_map, wheel->max_levels) {
		unsigned int s = level * wheel->shift;
		u64 pending = wheel->levels[level].pending;
		u64 cur = (wheel->clk >> s) & htw_mask(wheel);
		u64 ahead = pending & (~1ULL << cur);
		u64 dist;

		if (ahead)
			dist = __ffs64(ahead) - cur;
		else
			dist = __ffs64(pending) + htw_size(wheel) - cur;
		*next = min(*next, ((wheel->clk >> s) + dist) << s);
	}
	return !bitmap_empty(wheel->level_map, wheel->max_levels);
}

/*
 * clk has just reached a bucket start: empty every bucket that starts at
 * clk.  Level-0 timers become due; the others move down, to a lower level
 * or, if due at clk, to the due list.
 *
 * One bucket may hold any number of timers, so the work is bounded twice.
 * Every HTW_MOVE_BATCH timers the lock is dropped for a moment, to let
 * interrupts in and other CPUs arm and cancel; and once *@moves reaches the
 * wheel's move budget the run stops, leaving the rest to the next run.  The
 * bucket being emptied is the current one of its level, where nothing new
 * is ever put, and its timers stay in it, each with its slot, until moved:
 * a cancel meanwhile finds them there.  Return false if a bucket is left
 * half emptied (the wheel is then "draining").
 */
#define HTW_MOVE_BATCH		256

static bool __htw_expire_buckets(struct htw_wheel *wheel, unsigned long *flags,
				 unsigned int *moves)
	__must_hold(&wheel->lock)
{
	unsigned int level;

	for_each_set_bit(level, wheel->level_map, wheel->max_levels) {
		unsigned int s = level * wheel->shift;
		u64 idx = (wheel->clk >> s) & htw_mask(wheel);
		struct list_head *bucket;

		bucket = &wheel->levels[level].buckets[idx];
		while (!list_empty(bucket)) {
			struct htw_timer *timer;

			if (*moves >= wheel->move_budget)
				return false;
			timer = list_first_entry(bucket, struct htw_timer, entry);
			__htw_unlink(wheel, timer);
			__htw_enqueue(wheel, timer,
				      htw_ns_to_when(wheel, timer->expires));
			if (level) {
				wheel->cascaded++;
				trace_htw_timer_cascade(wheel, timer, timer->expires,
							level,
							htw_trace_level(wheel, timer->slot));
			}

			if (++*moves % HTW_MOVE_BATCH == 0) {
				spin_unlock_irqrestore(&wheel->lock, *flags);
				spin_lock_irqsave(&wheel->lock, *flags);
				/* See __htw_run_due(). */
				if (wheel->stopped)
					return false;
			}
		}
	}
	return true;
}

/*
 * Move clk to @target, expiring the buckets it passes, in order, first
 * finishing any bucket an earlier run left half emptied.  Only the wheel's
 * expiry run calls this (wheel->expiring), so clk moves in one context at a
 * time even while the lock is dropped.  Return false, with wheel->draining
 * set, if the move budget ran out before clk reached @target.  *@moves
 * counts the timers moved.
 */
static bool __htw_expire_to(struct htw_wheel *wheel, u64 target,
			    unsigned long *flags, unsigned int *moved)
	__must_hold(&wheel->lock)
{
	unsigned int moves = 0;
	bool complete = false;

	lockdep_assert_held(&wheel->lock);

	wheel->present = max(wheel->present, target);
	wheel->draining = false;
	if (!__htw_expire_buckets(wheel, flags, &moves))
		goto out;

	for (;;) {
		u64 next;

		if (!__htw_next_event(wheel, &next) || next > target) {
			if (target > wheel->clk)
				__htw_set_clk(wheel, target);
			wheel->next = next;
			complete = true;
			goto out;
		}
		__htw_set_clk(wheel, next);
		if (!__htw_expire_buckets(wheel, flags, &moves))
			goto out;
	}

out:
	*moved += moves;
	if (!complete) {
		/* The bucket left half emptied starts at clk: nothing is earlier. */
		wheel->draining = true;
		wheel->next = wheel->clk;
	}
	return complete;
}

/*
 * Before arming a timer on an hrtimer-driven wheel, bring clk up to the
 * present if no bucket is due in between, so that the timer is placed by
 * its distance from now rather than from the last expiry run.  Moving clk
 * forward over empty buckets keeps every occupied bucket ahead of it.  An
 * expiry run in progress, or one to come that must finish emptying the
 * current bucket, moves clk itself, and is left alone.
 */
static void __htw_skip_idle(struct htw_wheel *wheel, u64 now)
	__must_hold(&wheel->lock)
{
	u64 t;

	if (htw_manual(wheel) || wheel->expiring || wheel->draining ||
	    now < wheel->clk_next_ns)
		return;
	t = htw_ns_to_tick(wheel, now);
	if (t < wheel->next)
		__htw_set_clk(wheel, t);
}

/*
 * Arm the hrtimer for tick @t.  A tick at or before clk means timers are
 * due: the hrtimer is then set just past the present, which is after the
 * start of the hrtimer run in progress (even on a coarse clock), so that
 * the next expiry run is a new one and other work runs in between.
 */
static void __htw_program(struct htw_wheel *wheel, u64 t)
	__must_hold(&wheel->lock)
{
	u64 ns;

	lockdep_assert_held(&wheel->lock);

	if (htw_manual(wheel) || wheel->stopped || t == wheel->armed)
		return;
	if (t == HTW_NEVER) {
		if (hrtimer_try_to_cancel(&wheel->hrtimer) >= 0)
			wheel->armed = HTW_NEVER;
		return;
	}
	if (t <= wheel->clk)
		ns = htw_clock_now(wheel) + 1;
	else
		ns = min_t(u64, htw_tick_to_ns(wheel, t), KTIME_MAX);
	hrtimer_start(&wheel->hrtimer, ns_to_ktime(ns), HRTIMER_MODE_ABS_SOFT);
	wheel->armed = t;
	wheel->programs++;
}

/*
 * Re-arm the hrtimer after the wheel changed, unless an expiry run is in
 * progress: that run re-arms it when it ends.  Due timers, or a bucket
 * left half emptied, want a run at once; otherwise only an earlier event
 * needs it, and a later one leaves a spurious expiry run, which is cheaper.
 */
static void __htw_update(struct htw_wheel *wheel)
	__must_hold(&wheel->lock)
{
	/* A deferred wheel's owner, told, runs it before anything is due. */
	if (wheel->expiring || wheel->told)
		return;
	if (wheel->nr_due || wheel->draining)
		__htw_program(wheel, wheel->clk);
	else if (!wheel->nr_pending)
		__htw_program(wheel, HTW_NEVER);
	else if (wheel->next < wheel->armed ||
		 /* A deferred wheel's stale tick would only wake its owner. */
		 (htw_deferred(wheel) && wheel->armed <= wheel->clk))
		__htw_program(wheel, wheel->next);
}

/*
 * Arm an idle @timer; @expires and @period are already validated.  Relative
 * expiries count from the wheel's present time; an absolute one needs only
 * the coarse clock (and no clock at all on a manual wheel).
 */
static int __htw_arm(struct htw_wheel *wheel, struct htw_timer *timer,
		     u64 expires, u64 period, enum htw_mode mode)
	__must_hold(&wheel->lock)
{
	u64 now, when;

	if (htw_manual(wheel))
		now = wheel->now;
	else if (mode == HTW_MODE_REL)
		now = htw_clock_now(wheel);
	else
		now = __htw_clock_coarse(wheel);

	if (mode == HTW_MODE_REL && check_add_overflow(now, expires, &expires))
		return -ERANGE;

	__htw_skip_idle(wheel, now);
	when = htw_ns_to_when(wheel, expires);
	if (!__htw_reserved(wheel, when))
		return -ENOMEM;
	/* htw_expires() reads it without the lock. */
	WRITE_ONCE(timer->expires, expires);
	timer->period = period;
	__htw_enqueue(wheel, timer, when);
	wheel->nr_pending++;
	trace_htw_timer_arm(wheel, timer, expires, period, now,
			    htw_trace_level(wheel, timer->slot));
	return 0;
}

static void __htw_disarm(struct htw_wheel *wheel, struct htw_timer *timer)
	__must_hold(&wheel->lock)
{
	__htw_unlink(wheel, timer);
	WRITE_ONCE(timer->slot, HTW_SLOT_IDLE);
	wheel->nr_pending--;
	if (!wheel->nr_pending)
		wheel->next = HTW_NEVER;
}

/*
 * Make an armed @timer idle, for the cancels below and htw_del_locked().  On
 * a stopped wheel, the timers beside it in its list may be freed already
 * (their owner abandoned them): it is only made idle, never unlinked.
 */
static void __htw_drop(struct htw_wheel *wheel, struct htw_timer *timer)
	__must_hold(&wheel->lock)
{
	trace_htw_timer_cancel(wheel, timer, timer->expires);
	if (unlikely(wheel->stopped)) {
		WRITE_ONCE(timer->slot, HTW_SLOT_IDLE);
		return;
	}
	__htw_disarm(wheel, timer);
}

/* Cancel an armed @timer, for htw_del() and htw_del_sync(). */
static void __htw_cancel(struct htw_wheel *wheel, struct htw_timer *timer)
	__must_hold(&wheel->lock)
{
	__htw_drop(wheel, timer);
	__htw_update(wheel);
}

/*
 * A periodic timer has expired at its @expires, and clk has reached at
 * least its when.  Return how many of its expiries E + kP have passed (those
 * at or before the present tick's start, at least the one at E: clk may lag
 * the present while a run empties a large bucket) and set *@expired to the
 * last of them.  Move the timer to the expiry after that and return true, or
 * return false if that would not fit in 64 bits: the timer then ends.
 */
static bool __htw_rearm_period(struct htw_wheel *wheel, struct htw_timer *timer,
			       u64 *expired, u64 *count)
	__must_hold(&wheel->lock)
{
	u64 clk_ns = htw_tick_to_ns(wheel, max(wheel->clk, wheel->present));
	u64 n = 1, next;

	if (timer->expires < clk_ns && clk_ns - timer->expires >= timer->period)
		n = div64_u64(clk_ns - timer->expires, timer->period) + 1;

	/* (n - 1) * P <= clk_ns - E: neither can overflow. */
	*expired = timer->expires + (n - 1) * timer->period;
	*count = n;
	if (check_add_overflow(*expired, timer->period, &next))
		return false;
	WRITE_ONCE(timer->expires, next);
	return true;
}

/*
 * Run up to the wheel's budget of due callbacks, dropping the lock around
 * each, or after every HTW_LOCKED_CALLBACKS on a wheel whose callbacks run
 * under it.  A periodic timer is put back into the wheel before its
 * callback, so that the callback may cancel or move it like any armed
 * timer.  Return the number of callbacks run.
 */
static unsigned int __htw_run_due(struct htw_wheel *wheel, unsigned long *flags)
	__must_hold(&wheel->lock)
{
	unsigned int done = 0;

	lockdep_assert_held(&wheel->lock);

	wheel->running_task = current;
	/*
	 * A wheel stopped while the lock was dropped is left at once: its
	 * owner may have made a timer of these lists idle where it lies
	 * (htw_del() on a stopped wheel unlinks nothing), and may free the
	 * rest once htw_wheel_stop() returns.
	 */
	while (done < wheel->budget && !wheel->stopped &&
	       !list_empty(&wheel->due)) {
		u64 expired = 0, count = 1, late, when;
		struct htw_timer *timer;
		htw_func_t func;

		timer = list_first_entry(&wheel->due, struct htw_timer, entry);
		when = htw_ns_to_when(wheel, timer->expires);
		late = max(wheel->clk, wheel->present);
		late = late > when ? late - when : 0;
		wheel->late[min_t(unsigned int, fls64(late),
				  HTW_LATE_BUCKETS - 1)]++;
		__htw_unlink(wheel, timer);
		if (timer->period &&
		    __htw_rearm_period(wheel, timer, &expired, &count)) {
			__htw_enqueue(wheel, timer,
				      htw_ns_to_when(wheel, timer->expires));
		} else {
			if (!timer->period)
				expired = timer->expires;
			WRITE_ONCE(timer->slot, HTW_SLOT_IDLE);
			wheel->nr_pending--;
		}

		func = timer->func;
		wheel->fired++;
		done++;
		trace_htw_timer_expire_entry(wheel, timer, expired, count,
					     htw_tick_to_ns(wheel, max(wheel->clk,
								       wheel->present)));
		if (wheel->flags & HTW_WHEEL_LOCKED_CALLBACKS) {
			func(timer, expired, count);
			trace_htw_timer_expire_exit(timer);
			/* No callback runs while the lock is dropped. */
			if (!(done % HTW_LOCKED_CALLBACKS)) {
				spin_unlock_irqrestore(&wheel->lock, *flags);
				spin_lock_irqsave(&wheel->lock, *flags);
			}
			continue;
		}
		wheel->running = timer;
		spin_unlock_irqrestore(&wheel->lock, *flags);

		htw_lockdep_callback(wheel, true);
		func(timer, expired, count);
		htw_lockdep_callback(wheel, false);
		trace_htw_timer_expire_exit(timer);

		spin_lock_irqsave(&wheel->lock, *flags);
		wheel->running = NULL;
		if (wq_has_sleeper(&wheel->wq))
			wake_up_all(&wheel->wq);
	}
	wheel->running_task = NULL;
	if (!wheel->nr_pending)
		wheel->next = HTW_NEVER;
	return done;
}

/* The end of an expiry run that moved @moved timers and ran @ran callbacks. */
static void __htw_run_done(struct htw_wheel *wheel, unsigned int moved,
			   unsigned int ran)
	__must_hold(&wheel->lock)
{
	bool left = wheel->draining || !list_empty(&wheel->due);

	wheel->budget_stops += left;
	trace_htw_run(wheel, wheel->clk, moved, ran, left);
}

/*
 * A deferred wheel's hrtimer: tell the owner, outside the lock, unless the
 * wheel is stopped (htw_wheel_stop() waits for this to return).
 */
static enum hrtimer_restart htw_hrtimer_wake_fn(struct hrtimer *hrtimer)
{
	struct htw_wheel *wheel = container_of(hrtimer, struct htw_wheel, hrtimer);
	unsigned long flags;
	bool stopped;

	spin_lock_irqsave(&wheel->lock, flags);
	wheel->armed = HTW_NEVER;
	stopped = wheel->stopped;
	wheel->told = !stopped;
	/* htw_wheel_wakes() reads it without the lock. */
	WRITE_ONCE(wheel->wakes, wheel->wakes + !stopped);
	spin_unlock_irqrestore(&wheel->lock, flags);
	if (!stopped)
		wheel->wake(wheel, htw_clock_now(wheel));
	return HRTIMER_NORESTART;
}

/*
 * The time the runs of this CPU's hrtimer softirq pass have taken so far;
 * a new pass starts from none.
 */
static struct htw_cpu_pass *htw_cpu_pass_get(void)
{
	struct htw_cpu_pass *cp = this_cpu_ptr(&htw_cpu_pass);
	unsigned int pass = kstat_softirqs_cpu(HRTIMER_SOFTIRQ,
					       smp_processor_id());

	if (cp->pass != pass) {
		cp->pass = pass;
		cp->spent = 0;
		cp->waited = cp->waiting;
		cp->waiting = 0;
	}
	return cp;
}

static enum hrtimer_restart htw_hrtimer_fn(struct hrtimer *hrtimer)
{
	struct htw_wheel *wheel = container_of(hrtimer, struct htw_wheel, hrtimer);
	struct htw_cpu_pass *cp = htw_cpu_pass_get();
	u64 start = htw_clock_now(wheel), now = start, spent;
	unsigned int moved = 0, ran = 0;
	unsigned long flags;

	spin_lock_irqsave(&wheel->lock, flags);
	wheel->armed = HTW_NEVER;
	/* The pass is spent, or another wheel has waited longer: the next. */
	if (cp->spent >= HTW_RUN_NS ||
	    (cp->waited && wheel->last_run >= cp->waited)) {
		if (!cp->waiting || wheel->last_run < cp->waiting)
			cp->waiting = wheel->last_run + 1;
		wheel->yields++;
		__htw_program(wheel, wheel->clk);
		spin_unlock_irqrestore(&wheel->lock, flags);
		return HRTIMER_NORESTART;
	}
	/* Its turn: the others may run while the pass has time. */
	if (cp->waited)
		cp->waited = 0;
	wheel->last_run = atomic64_inc_return(&htw_run_seq);
	wheel->expiring = true;
	wheel->runs++;
	/*
	 * Batches, each bounded by the budget, until the pass has run for
	 * HTW_RUN_NS by the clock each batch reads anyway.
	 */
	for (;;) {
		__htw_expire_to(wheel, htw_ns_to_tick(wheel, now), &flags, &moved);
		ran += __htw_run_due(wheel, &flags);
		now = htw_clock_now(wheel);
		/* A clock set back counts as no time; forward, as all of it. */
		spent = now >= start ? now - start : 0;
		if ((!wheel->draining && list_empty(&wheel->due)) ||
		    wheel->stopped || cp->spent + spent >= HTW_RUN_NS)
			break;
	}
	cp->spent += min_t(u64, spent, HTW_RUN_NS);
	__htw_run_done(wheel, moved, ran);
	wheel->expiring = false;
	__htw_update(wheel);
	spin_unlock_irqrestore(&wheel->lock, flags);

	return HRTIMER_NORESTART;
}

/* A level's buckets, empty; NULL if out of memory. */
static struct list_head *htw_buckets_alloc(const struct htw_wheel *wheel)
{
	struct list_head *buckets;
	u64 i;

	buckets = kmalloc_array(htw_size(wheel), sizeof(*buckets),
				htw_gfp(wheel->flags));
	if (buckets)
		for (i = 0; i < htw_size(wheel); i++)
			INIT_LIST_HEAD(&buckets[i]);
	return buckets;
}

static void htw_wheel_free_levels(struct htw_wheel *wheel)
{
	unsigned int level;

	for (level = 0; level < wheel->nr_reserved; level++)
		kfree(wheel->levels[level].buckets);
}

/* A wheel no reader can have found: not yet in htw_wheels. */
static void htw_wheel_free(struct htw_wheel *wheel)
{
	htw_wheel_free_levels(wheel);
	kfree(wheel);
}

/**
 * htw_wheel_create() - create a timing wheel
 * @params: its tick, size, budget, clock and flags
 *
 * Allocates the buckets of every level the wheel may need, so that arming a
 * timer never allocates; with %HTW_WHEEL_LAZY_LEVELS, none (see
 * htw_wheel_reserve()).
 *
 * Context: Process context; may sleep.
 * Return: the wheel, ERR_PTR(-EINVAL) for parameters out of range (see
 * struct htw_wheel_params), or ERR_PTR(-ENOMEM).
 */
struct htw_wheel *htw_wheel_create(const struct htw_wheel_params *params)
{
	unsigned int shift, nr_levels, level, f;
	struct htw_wheel *wheel;
	u64 max_when, rem;

	if (!params->tick_ns ||
	    !is_power_of_2(params->wheel_size) ||
	    params->wheel_size < HTW_WHEEL_SIZE_MIN ||
	    params->wheel_size > HTW_WHEEL_SIZE_MAX ||
	    (params->clockid != CLOCK_MONOTONIC &&
	     params->clockid != CLOCK_BOOTTIME) ||
	    (params->flags & ~HTW_WHEEL_FLAGS) ||
	    (params->start_ns && !(params->flags & HTW_WHEEL_MANUAL)) ||
	    !(params->flags & HTW_WHEEL_DEFERRED) != !params->wake ||
	    ((params->flags & HTW_WHEEL_DEFERRED) &&
	     (params->flags & HTW_WHEEL_MANUAL)))
		return ERR_PTR(-EINVAL);

	shift = ilog2(params->wheel_size);
	/* The latest tick any timer can be due at, and the levels it needs. */
	max_when = div64_u64_rem(U64_MAX, params->tick_ns, &rem) + !!rem;
	nr_levels = DIV_ROUND_UP(fls64(max_when), shift);

	wheel = kzalloc(struct_size(wheel, levels, nr_levels),
			htw_gfp(params->flags));
	if (!wheel)
		return ERR_PTR(-ENOMEM);
	wheel->max_levels = nr_levels;
	wheel->tick = params->tick_ns;
	wheel->tick_inv = div64_u64(U64_MAX, params->tick_ns);
	wheel->shift = shift;
	wheel->flags = params->flags;
	if (!(wheel->flags & HTW_WHEEL_LAZY_LEVELS)) {
		for (level = 0; level < nr_levels; level++) {
			wheel->levels[level].buckets = htw_buckets_alloc(wheel);
			if (!wheel->levels[level].buckets) {
				htw_wheel_free(wheel);
				return ERR_PTR(-ENOMEM);
			}
			wheel->nr_reserved++;
		}
	}

	wheel->budget = params->expire_budget ?: HTW_DEFAULT_BUDGET;
	if (check_mul_overflow(wheel->budget, HTW_MOVES_PER_CALLBACK,
			       &wheel->move_budget))
		wheel->move_budget = UINT_MAX;
	wheel->clockid = params->clockid;
	wheel->data = params->data;
	wheel->wake = params->wake;
	for (f = 1; f < ARRAY_SIZE(wheel->level_of); f++)
		wheel->level_of[f] = min(DIV_ROUND_UP(f, shift), nr_levels) - 1;

	spin_lock_init(&wheel->lock);
	if (params->flags & HTW_WHEEL_LOCKED_CALLBACKS)
		lockdep_set_class(&wheel->lock, &htw_locked_wheel_key);
	init_waitqueue_head(&wheel->wq);
	htw_lockdep_init(wheel);
	INIT_LIST_HEAD(&wheel->due);
	wheel->next = HTW_NEVER;
	wheel->armed = HTW_NEVER;
	if (htw_manual(wheel)) {
		wheel->origin = params->start_ns;
		wheel->now = params->start_ns;
	} else {
		/* On the clock's grid of the tick: see "Wheels their owner runs". */
		wheel->origin = htw_clock_now(wheel);
		div64_u64_rem(wheel->origin, wheel->tick, &rem);
		wheel->origin -= rem;
		hrtimer_setup(&wheel->hrtimer,
			      htw_deferred(wheel) ? htw_hrtimer_wake_fn :
						    htw_hrtimer_fn,
			      wheel->clockid, HRTIMER_MODE_ABS_SOFT);
	}
	__htw_set_clk(wheel, 0);

	/* The xarray's nodes are everyone's: no user's memory cgroup's. */
	if (xa_alloc(&htw_wheels, &wheel->id, wheel, xa_limit_32b,
		     GFP_KERNEL | __GFP_RETRY_MAYFAIL)) {
		htw_wheel_free(wheel);
		return ERR_PTR(-ENOMEM);
	}
	return wheel;
}
EXPORT_SYMBOL_GPL(htw_wheel_create);

/**
 * htw_wheel_reserve() - allocate the levels a timer due at @expires needs
 * @wheel: the wheel
 * @expires: an absolute expiry, in ns on the wheel's clock
 *
 * On a wheel created with %HTW_WHEEL_LAZY_LEVELS, makes sure that a timer
 * armed later with this expiry, or any earlier one, finds its level's
 * buckets (the level a given expiry needs never rises as time passes).
 * Levels are kept until the wheel is destroyed.  On other wheels, every
 * level is there from the start and this does nothing.
 *
 * Context: Process context; may sleep.  Memory is charged to the caller's
 * memory cgroup if the wheel was created with %HTW_WHEEL_ACCOUNT.
 * Return: 0, or -ENOMEM.
 */
int htw_wheel_reserve(struct htw_wheel *wheel, u64 expires)
{
	struct list_head *buckets;
	unsigned long flags;
	unsigned int level;
	bool done;

	might_sleep();
	for (;;) {
		spin_lock_irqsave(&wheel->lock, flags);
		/* Measure from the present, as the add will, not an old clk. */
		__htw_skip_idle(wheel, htw_manual(wheel) ? wheel->now :
							 htw_clock_now(wheel));
		done = __htw_reserved(wheel, htw_ns_to_when(wheel, expires));
		level = wheel->nr_reserved;
		spin_unlock_irqrestore(&wheel->lock, flags);
		if (done)
			return 0;

		buckets = htw_buckets_alloc(wheel);
		if (!buckets)
			return -ENOMEM;
		spin_lock_irqsave(&wheel->lock, flags);
		if (wheel->nr_reserved == level) {
			wheel->levels[level].buckets = buckets;
			wheel->nr_reserved++;
			buckets = NULL;
		}
		spin_unlock_irqrestore(&wheel->lock, flags);
		kfree(buckets);
	}
}
EXPORT_SYMBOL_GPL(htw_wheel_reserve);

/**
 * htw_wheel_footprint() - the most memory a wheel can come to
 * @wheel: the wheel
 *
 * Its structure and the buckets of every level it may need, whether they
 * are allocated yet or not: for callers that account for wheels.
 *
 * Context: Any context.
 * Return: bytes.
 */
size_t htw_wheel_footprint(const struct htw_wheel *wheel)
{
	return struct_size(wheel, levels, wheel->max_levels) +
	       wheel->max_levels * htw_size(wheel) * sizeof(struct list_head);
}
EXPORT_SYMBOL_GPL(htw_wheel_footprint);

/**
 * htw_wheel_stop() - stop a wheel for good, with the timers in it
 * @wheel: the wheel
 *
 * No expiry run starts after this, and a run in progress makes no callback
 * after the one it may be running.  On a wheel that runs on its clock, the
 * run in progress is waited for (hrtimer_cancel()), with its callback: no
 * callback of the wheel runs once this returns, and a deferred wheel's
 * wake has returned and comes no more.  A manual or deferred wheel's run
 * is its caller's htw_advance() or htw_wheel_run(), which this does not
 * wait for: a callback of such a run in progress on another CPU may still
 * be running when this returns (unless the wheel is of
 * %HTW_WHEEL_LOCKED_CALLBACKS, whose callbacks run under the lock this
 * takes), and that run still uses the wheel until it returns, which its
 * caller must wait for before freeing the timers or the wheel.
 *
 * The timers still armed stay where they are, never to expire: their
 * owner may free them without htw_del(), and must then destroy the wheel
 * with htw_wheel_destroy(), which takes a stopped wheel with timers in it.
 * htw_del() and htw_del_sync() of a timer left in it make it idle without
 * touching the others.  So a wheel of n timers is torn down in O(1) work
 * of the wheel's, where a htw_del_sync() of each takes n round trips of
 * its lock.  A stopped wheel takes no new timer (htw_add() and htw_mod()
 * fail with -ESHUTDOWN).
 *
 * Context: Process context; may sleep.  Not from one of the wheel's
 * callbacks, but on a manual wheel, whose htw_advance() in progress then
 * ends once the callback returns.
 */
void htw_wheel_stop(struct htw_wheel *wheel)
{
	unsigned long flags;

	spin_lock_irqsave(&wheel->lock, flags);
	wheel->stopped = true;
	spin_unlock_irqrestore(&wheel->lock, flags);

	/* A run in progress stops at once; its callbacks are done. */
	if (!htw_manual(wheel))
		hrtimer_cancel(&wheel->hrtimer);
}
EXPORT_SYMBOL_GPL(htw_wheel_stop);

/**
 * htw_wheel_destroy() - destroy a timing wheel
 * @wheel: the wheel, or NULL
 *
 * Waits for a running expiry run of the wheel's hrtimer to finish; a manual
 * wheel must not be destroyed while htw_advance() runs on it.  The wheel
 * must hold no timer once that run is over, unless htw_wheel_stop() stopped
 * it: destroying one that does is a bug in the caller, reported with a
 * warning; the wheel is then left allocated (and never fires again), so
 * that the caller's later use of its timers does not touch freed memory.
 *
 * Context: Process context; may sleep.  Not from one of the wheel's callbacks.
 */
void htw_wheel_destroy(struct htw_wheel *wheel)
{
	unsigned long flags;
	bool abandoned;
	u64 pending;

	if (!wheel)
		return;

	/* Timers left in a wheel its owner stopped are no bug. */
	spin_lock_irqsave(&wheel->lock, flags);
	abandoned = wheel->stopped;
	spin_unlock_irqrestore(&wheel->lock, flags);

	/* A run in progress may still re-arm a periodic timer: wait for it. */
	htw_wheel_stop(wheel);

	spin_lock_irqsave(&wheel->lock, flags);
	pending = wheel->nr_pending;
	spin_unlock_irqrestore(&wheel->lock, flags);

	if (WARN(pending && !abandoned,
		 "htw: wheel destroyed with %llu timers armed; leaking it\n",
		 pending))
		return;

	xa_erase(&htw_wheels, wheel->id);
	htw_wheel_free_levels(wheel);
	/* A reader of the statistics may still look at it; see "Locking". */
	kfree_rcu(wheel, rcu);
}
EXPORT_SYMBOL_GPL(htw_wheel_destroy);

/**
 * htw_wheel_now() - the present time on a wheel's clock
 * @wheel: the wheel
 *
 * Context: Any context.
 * Return: the clock's value in ns; for a manual wheel, the time of its
 * latest htw_advance() (or its start time).
 */
u64 htw_wheel_now(struct htw_wheel *wheel)
{
	if (!htw_manual(wheel))
		return htw_clock_now(wheel);
	/* No lock: a callback of HTW_WHEEL_LOCKED_CALLBACKS may ask. */
	return READ_ONCE(wheel->now);
}
EXPORT_SYMBOL_GPL(htw_wheel_now);

/*
 * One batch of an expiry run in the caller's context, up to @now: a manual
 * wheel's new present (if later than its present), or a deferred wheel's
 * clock.  *@left says whether work is left due; a wheel left with none is
 * re-armed for its next event (which a manual wheel never arms): see
 * "Wheels their owner runs".
 */
static unsigned int htw_run_batch(struct htw_wheel *wheel, u64 now,
				  bool *left)
{
	unsigned int done, moved = 0;
	unsigned long flags;
	bool complete;

	spin_lock_irqsave(&wheel->lock, flags);
	if (WARN_ON_ONCE(wheel->expiring) || wheel->stopped) {
		spin_unlock_irqrestore(&wheel->lock, flags);
		return 0;
	}
	if (htw_manual(wheel)) {
		now = max(wheel->now, now);
		WRITE_ONCE(wheel->now, now);
	}
	wheel->expiring = true;
	wheel->runs++;
	/*
	 * A manual run that only moved timers would look to its caller like
	 * the end; a deferred one says so in *@left, and is one batch of
	 * moves, whatever it moved.
	 */
	do {
		complete = __htw_expire_to(wheel, htw_ns_to_tick(wheel, now),
					   &flags, &moved);
		done = __htw_run_due(wheel, &flags);
	} while (!complete && !done && htw_manual(wheel) && !wheel->stopped);
	__htw_run_done(wheel, moved, done);
	wheel->expiring = false;
	*left = wheel->draining || !list_empty(&wheel->due);
	if (!*left) {
		wheel->told = false;
		__htw_update(wheel);
	}
	spin_unlock_irqrestore(&wheel->lock, flags);
	return done;
}

/**
 * htw_advance() - move a manual wheel's time forward and run what is due
 * @wheel: a wheel created with %HTW_WHEEL_MANUAL
 * @now: the new time in ns; a time before the wheel's present is ignored
 *
 * Expires the buckets up to @now and runs the due callbacks, at most the
 * wheel's expire_budget of them, in the caller's context, with the wheel's
 * bounds on the timers moved per run as on a real clock.  Calls for one
 * wheel must not run concurrently.
 *
 * Context: Any context the callbacks accept.
 * Return: the number of callbacks run; 0 once nothing is due at @now, or
 * on a stopped wheel.  A caller that got any calls again to run the rest.
 */
unsigned int htw_advance(struct htw_wheel *wheel, u64 now)
{
	bool left;

	if (WARN_ON_ONCE(!htw_manual(wheel)))
		return 0;
	return htw_run_batch(wheel, now, &left);
}
EXPORT_SYMBOL_GPL(htw_advance);

/**
 * htw_wheel_run() - run one batch of a deferred wheel's due timers
 * @wheel: a wheel created with %HTW_WHEEL_DEFERRED
 * @until: run what is due up to this time on the wheel's clock (a time
 *	later than the present is the present)
 * @left: set to whether work is left due by @until, for another call
 *
 * Expires the buckets up to @until and runs the due callbacks, at most the
 * wheel's expire_budget of them, and moves at most its move budget of
 * timers, in the caller's context.  Once nothing is left due, arms the
 * wheel's hrtimer for its next event, whose expiry calls the wheel's wake
 * again; while work is left, arms nothing, and the caller calls again or
 * remembers that the wheel is due.  A caller that stops at a fixed @until
 * ends however fast timers come due.  Calls for one wheel must not run
 * concurrently.
 *
 * Context: Any context the callbacks accept.
 * Return: the number of callbacks run (none on a stopped wheel).
 */
unsigned int htw_wheel_run(struct htw_wheel *wheel, u64 until, bool *left)
{
	*left = false;
	if (WARN_ON_ONCE(!htw_deferred(wheel)))
		return 0;
	return htw_run_batch(wheel, min(until, htw_clock_now(wheel)), left);
}
EXPORT_SYMBOL_GPL(htw_wheel_run);

/* What a run of the wheel would find to do at the present. */
static bool __htw_due(struct htw_wheel *wheel)
	__must_hold(&wheel->lock)
{
	lockdep_assert_held(&wheel->lock);

	return wheel->nr_due || wheel->draining ||
	       (wheel->nr_pending &&
		wheel->next <= htw_ns_to_tick(wheel, htw_clock_now(wheel)));
}

/**
 * htw_wheel_settle() - whether a deferred wheel has work due; if not, arm it
 * @wheel: a wheel created with %HTW_WHEEL_DEFERRED
 *
 * As htw_wheel_due(), for an owner that was woken and found the wheel's
 * due timers gone (cancelled before any run): the wheel, which arms its
 * hrtimer no more once it has woken its owner, until the owner runs it,
 * is armed again for its next event, whose expiry wakes the owner again.
 *
 * Context: Any context but under a lock the callbacks take.
 * Return: true if htw_wheel_run() has work.
 */
bool htw_wheel_settle(struct htw_wheel *wheel)
{
	unsigned long flags;
	bool due;

	spin_lock_irqsave(&wheel->lock, flags);
	due = __htw_due(wheel);
	if (!due && wheel->told) {
		wheel->told = false;
		__htw_update(wheel);
	}
	spin_unlock_irqrestore(&wheel->lock, flags);
	return due;
}
EXPORT_SYMBOL_GPL(htw_wheel_settle);

/**
 * htw_wheel_due() - whether a wheel has work due at the present
 * @wheel: a wheel created with %HTW_WHEEL_DEFERRED
 *
 * What a run would find: timers due, a bucket left half emptied, or a
 * bucket whose start has passed (whose timers may only move down a level:
 * then a run finds nothing to call).  Never false while a timer is due.
 *
 * Context: Any context but under a lock the callbacks take.
 * Return: true if htw_wheel_run() has work.
 */
bool htw_wheel_due(struct htw_wheel *wheel)
{
	unsigned long flags;
	bool due;

	spin_lock_irqsave(&wheel->lock, flags);
	due = __htw_due(wheel);
	spin_unlock_irqrestore(&wheel->lock, flags);
	return due;
}
EXPORT_SYMBOL_GPL(htw_wheel_due);

/**
 * htw_wheel_wakes() - how many times a deferred wheel woke its owner
 * @wheel: the wheel
 *
 * Context: Any context; the count may be stale as soon as it is read.
 * Return: &htw_wheel_stats.wakes.
 */
u64 htw_wheel_wakes(struct htw_wheel *wheel)
{
	return READ_ONCE(wheel->wakes);
}
EXPORT_SYMBOL_GPL(htw_wheel_wakes);

/**
 * htw_wheel_data() - the @data its owner gave a wheel
 * @wheel: the wheel
 *
 * For a deferred wheel's wake, which is given the wheel.
 *
 * Context: Any context.
 * Return: &htw_wheel_params.data of @wheel.
 */
void *htw_wheel_data(const struct htw_wheel *wheel)
{
	return wheel->data;
}
EXPORT_SYMBOL_GPL(htw_wheel_data);

/**
 * htw_wheel_get_stats() - take a snapshot of a wheel's state
 * @wheel: the wheel
 * @stats: where to write it
 *
 * Context: Any context.
 */
void htw_wheel_get_stats(struct htw_wheel *wheel, struct htw_wheel_stats *stats)
{
	unsigned long flags;
	unsigned int level;

	memset(stats, 0, sizeof(*stats));
	stats->tick_ns = wheel->tick;
	stats->wheel_size = htw_size(wheel);

	spin_lock_irqsave(&wheel->lock, flags);
	for_each_set_bit(level, wheel->level_map, wheel->max_levels) {
		stats->level[level] = wheel->levels[level].nr_timers;
		stats->nr_levels = level + 1;
	}
	stats->nr_reserved = wheel->nr_reserved;
	stats->pending = wheel->nr_pending;
	stats->due = wheel->nr_due;
	stats->runs = wheel->runs;
	stats->fired = wheel->fired;
	stats->cascaded = wheel->cascaded;
	stats->budget_stops = wheel->budget_stops;
	stats->yields = wheel->yields;
	stats->programs = wheel->programs;
	stats->wakes = wheel->wakes;
	memcpy(stats->late, wheel->late, sizeof(stats->late));
	spin_unlock_irqrestore(&wheel->lock, flags);
}
EXPORT_SYMBOL_GPL(htw_wheel_get_stats);

/*
 * Every wheel's statistics, through a seq_file whose position is a wheel's
 * id: each wheel is found from the last one's id, in O(log n), under RCU
 * from start to stop (see "Locking" above).  m->private holds a struct
 * htw_wheel_stats from start to stop.
 */
static void *htw_wheels_find(loff_t *pos)
{
	unsigned long id = *pos;
	void *wheel = NULL;

	if (*pos <= U32_MAX)
		wheel = xa_find(&htw_wheels, &id, U32_MAX, XA_PRESENT);
	*pos = wheel ? id : (loff_t)U32_MAX + 1;
	return wheel;
}

static void *htw_wheels_start(struct seq_file *m, loff_t *pos)
	__acquires(RCU)
{
	struct htw_wheel_stats *st = kmalloc(sizeof(*st), GFP_KERNEL);

	/* Stop follows, even after an error. */
	rcu_read_lock();
	m->private = st;
	if (!st)
		return ERR_PTR(-ENOMEM);
	return htw_wheels_find(pos);
}

static void *htw_wheels_next(struct seq_file *m, void *v, loff_t *pos)
{
	++*pos;
	return htw_wheels_find(pos);
}

static void htw_wheels_stop(struct seq_file *m, void *v)
	__releases(RCU)
{
	rcu_read_unlock();
	kfree(m->private);
	m->private = NULL;
}

static int htw_wheels_seq_show(struct seq_file *m, void *v)
{
	struct htw_wheel *wheel = v;
	struct htw_wheel_stats *st = m->private;
	unsigned int i;

	htw_wheel_get_stats(wheel, st);
	seq_printf(m, "wheel %u clock %d tick_ns %llu size %u levels %u/%u\n",
		   wheel->id, wheel->clockid, st->tick_ns, st->wheel_size,
		   st->nr_levels, st->nr_reserved);
	seq_printf(m, "  pending %llu due %llu runs %llu callbacks %llu cascaded %llu budget_stops %llu wakes %llu yields %llu programs %llu\n",
		   st->pending, st->due, st->runs, st->fired, st->cascaded,
		   st->budget_stops, st->wakes, st->yields, st->programs);
	seq_puts(m, "  per_level");
	for (i = 0; i < st->nr_levels; i++)
		seq_printf(m, " %llu", st->level[i]);
	seq_puts(m, "\n  late_ticks_log2");
	for (i = 0; i < HTW_LATE_BUCKETS; i++)
		seq_printf(m, " %llu", st->late[i]);
	seq_putc(m, '\n');
	return 0;
}

/*
 * htw_wheels_sops - every wheel's statistics, for debugfs
 *
 * One paragraph a wheel, in the order of their ids: its id, its clock,
 * tick and size, its levels (in use/allocated), its timers (armed, due, per
 * level), its expiry runs, callbacks, cascades, budget stops and wakes of
 * its owner, and its callbacks by lateness.  For seq_open().
 */
const struct seq_operations htw_wheels_sops = {
	.start	= htw_wheels_start,
	.next	= htw_wheels_next,
	.stop	= htw_wheels_stop,
	.show	= htw_wheels_seq_show,
};

/**
 * htw_timer_init() - prepare a timer for use on a wheel
 * @timer: the timer
 * @wheel: the wheel it will be armed on
 * @func: its callback
 *
 * Context: Any context; @timer must not be armed.
 */
void htw_timer_init(struct htw_timer *timer, struct htw_wheel *wheel,
		    htw_func_t func)
{
	INIT_LIST_HEAD(&timer->entry);
	timer->expires = 0;
	timer->period = 0;
	timer->func = func;
	timer->wheel = wheel;
	timer->slot = HTW_SLOT_IDLE;
}
EXPORT_SYMBOL_GPL(htw_timer_init);

/**
 * htw_timer_wheel_data() - the @data its owner gave the wheel of a timer
 * @timer: the timer
 *
 * So that a callback finds its owner's state from the wheel, not from a
 * pointer kept in each of many timers.
 *
 * Context: Any context.
 * Return: &htw_wheel_params.data of @timer's wheel.
 */
void *htw_timer_wheel_data(const struct htw_timer *timer)
{
	return timer->wheel->data;
}
EXPORT_SYMBOL_GPL(htw_timer_wheel_data);

/**
 * htw_add() - arm an idle timer
 * @timer: the timer
 * @expires: its expiry: ns on the wheel's clock, or ns from now
 * @period: 0 for a one-shot timer, else the ns between its expiries
 * @mode: whether @expires is absolute or relative
 *
 * An expiry already past makes the timer due at once: its callback runs in
 * the wheel's next expiry run.
 *
 * Context: Any context.
 * Return: 0; -EBUSY if @timer is already armed; -ERANGE if a relative
 * @expires overflows the clock; -EINVAL for an unknown @mode, or a
 * @period on a wheel with %HTW_WHEEL_LAZY_LEVELS; -ENOMEM if the level the
 * timer needs was not reserved (only on such a wheel); -ESHUTDOWN if the
 * wheel was stopped (htw_wheel_stop()).
 */
int htw_add(struct htw_timer *timer, u64 expires, u64 period,
	    enum htw_mode mode)
{
	struct htw_wheel *wheel = timer->wheel;
	unsigned long flags;
	int ret;

	if ((mode != HTW_MODE_ABS && mode != HTW_MODE_REL) ||
	    (period && (wheel->flags & HTW_WHEEL_LAZY_LEVELS)))
		return -EINVAL;

	spin_lock_irqsave(&wheel->lock, flags);
	if (unlikely(wheel->stopped)) {
		ret = -ESHUTDOWN;
	} else if (timer->slot != HTW_SLOT_IDLE) {
		ret = -EBUSY;
	} else {
		ret = __htw_arm(wheel, timer, expires, period, mode);
		if (!ret)
			__htw_update(wheel);
	}
	spin_unlock_irqrestore(&wheel->lock, flags);
	return ret;
}
EXPORT_SYMBOL_GPL(htw_add);

/*
 * htw_mod() with the lock held; set *@placed if the timer was put in a new
 * place, so that the hrtimer may need to follow it.
 */
static int __htw_mod(struct htw_wheel *wheel, struct htw_timer *timer,
		     u64 expires, u64 period, enum htw_mode mode, bool *placed)
	__must_hold(&wheel->lock)
{
	u64 when, start;
	int ret;

	lockdep_assert_held(&wheel->lock);

	*placed = false;
	if ((mode != HTW_MODE_ABS && mode != HTW_MODE_REL) ||
	    (period && (wheel->flags & HTW_WHEEL_LAZY_LEVELS)))
		return -EINVAL;
	if (unlikely(wheel->stopped))
		return -ESHUTDOWN;
	if (mode == HTW_MODE_REL) {
		u64 now = htw_manual(wheel) ? wheel->now : htw_clock_now(wheel);

		if (check_add_overflow(now, expires, &expires))
			return -ERANGE;
		mode = HTW_MODE_ABS;
	}

	when = htw_ns_to_when(wheel, expires);
	if (!__htw_reserved(wheel, when))
		return -ENOMEM;

	ret = timer->slot != HTW_SLOT_IDLE;
	if (ret && timer->slot != HTW_SLOT_DUE &&
	    __htw_slot(wheel, when, &start) == timer->slot) {
		WRITE_ONCE(timer->expires, expires);
		timer->period = period;
		/* No clock read on this path unless it is traced. */
		if (trace_htw_timer_arm_enabled())
			trace_htw_timer_arm(wheel, timer, expires, period,
					    htw_manual(wheel) ? wheel->now :
								htw_clock_now(wheel),
					    htw_trace_level(wheel, timer->slot));
		return ret;
	}
	if (ret)
		__htw_disarm(wheel, timer);
	/* Cannot fail: the expiry is absolute and its level is reserved. */
	WARN_ON_ONCE(__htw_arm(wheel, timer, expires, period, mode));
	*placed = true;
	return ret;
}

/**
 * htw_mod() - move a timer to a new expiry, armed or not
 * @timer: the timer
 * @expires: its new expiry: ns on the wheel's clock, or ns from now
 * @period: its new period, 0 for one-shot
 * @mode: whether @expires is absolute or relative
 *
 * Equivalent to htw_del() followed by htw_add(), but atomic, and without
 * touching any list when the new expiry falls in the timer's bucket.
 *
 * Context: Any context.
 * Return: 1 if @timer was armed, 0 if it was idle; -ERANGE if a relative
 * @expires overflows the clock, -EINVAL, -ENOMEM and -ESHUTDOWN as for
 * htw_add() (in each case the timer is left as it was).
 */
int htw_mod(struct htw_timer *timer, u64 expires, u64 period,
	    enum htw_mode mode)
{
	struct htw_wheel *wheel = timer->wheel;
	unsigned long flags;
	bool placed;
	int ret;

	spin_lock_irqsave(&wheel->lock, flags);
	ret = __htw_mod(wheel, timer, expires, period, mode, &placed);
	if (placed)
		__htw_update(wheel);
	spin_unlock_irqrestore(&wheel->lock, flags);
	return ret;
}
EXPORT_SYMBOL_GPL(htw_mod);

/**
 * htw_del() - disarm a timer
 * @timer: the timer
 *
 * Does not wait for the timer's callback if it is running now; see
 * htw_del_sync().
 *
 * Context: Any context; never sleeps.
 * Return: true if @timer was armed, false if it was idle.
 */
bool htw_del(struct htw_timer *timer)
{
	struct htw_wheel *wheel = timer->wheel;
	unsigned long flags;
	bool ret;

	if (!htw_pending(timer))
		return false;

	spin_lock_irqsave(&wheel->lock, flags);
	ret = timer->slot != HTW_SLOT_IDLE;
	if (ret)
		__htw_cancel(wheel, timer);
	spin_unlock_irqrestore(&wheel->lock, flags);
	return ret;
}
EXPORT_SYMBOL_GPL(htw_del);

/**
 * htw_del_sync() - disarm a timer and wait for its callback to finish
 * @timer: the timer
 *
 * On return @timer is idle and its callback is not running, unless another
 * context arms it again.  The callback itself must not call this for its
 * own timer: it would wait for itself forever.
 *
 * Context: Process context; may sleep.
 * Return: 1 if @timer was armed, 0 if it was idle; -EDEADLK, leaving the
 * timer as it was, when called from @timer's own callback.
 */
int htw_del_sync(struct htw_timer *timer)
{
	struct htw_wheel *wheel = timer->wheel;
	unsigned long flags;
	int ret = 0;

	for (;;) {
		spin_lock_irqsave(&wheel->lock, flags);
		if (wheel->running == timer && wheel->running_task == current) {
			spin_unlock_irqrestore(&wheel->lock, flags);
			return -EDEADLK;
		}
		if (timer->slot != HTW_SLOT_IDLE) {
			__htw_cancel(wheel, timer);
			ret = 1;
		}
		if (wheel->running != timer) {
			spin_unlock_irqrestore(&wheel->lock, flags);
			return ret;
		}
		spin_unlock_irqrestore(&wheel->lock, flags);

		might_sleep();
		htw_lockdep_wait(wheel);
		wait_event(wheel->wq, READ_ONCE(wheel->running) != timer);
	}
}
EXPORT_SYMBOL_GPL(htw_del_sync);

/**
 * htw_wheel_lock() - hold a wheel for a group of operations
 * @wheel: the wheel
 * @flags: where the interrupt state is kept, for htw_wheel_unlock()
 *
 * Until htw_wheel_unlock(), htw_mod_locked() and htw_del_locked() arm,
 * move and cancel timers of @wheel without a lock hold each, and the
 * wheel's hrtimer is re-armed once, at the unlock, for all of them.
 * Interrupts are off meanwhile (but on PREEMPT_RT, where the lock sleeps
 * and leaves them on): the caller bounds the group (a few dozen
 * operations), and calls nothing that sleeps.
 *
 * Context: Any context but a callback of @wheel; takes the wheel's lock.
 */
void htw_wheel_lock(struct htw_wheel *wheel, unsigned long *flags)
	__acquires(&wheel->lock)
{
	spin_lock_irqsave(&wheel->lock, *flags);
}
EXPORT_SYMBOL_GPL(htw_wheel_lock);

/**
 * htw_wheel_unlock() - end a group of operations on a wheel
 * @wheel: the wheel, held by htw_wheel_lock()
 * @flags: what htw_wheel_lock() kept
 *
 * Re-arms the wheel's hrtimer for the group, if the group moved a timer
 * and it must be, and lets go of the wheel.
 *
 * Context: The caller of htw_wheel_lock().
 */
void htw_wheel_unlock(struct htw_wheel *wheel, unsigned long flags)
	__releases(&wheel->lock)
{
	lockdep_assert_held(&wheel->lock);

	if (wheel->moved) {
		wheel->moved = false;
		__htw_update(wheel);
	}
	spin_unlock_irqrestore(&wheel->lock, flags);
}
EXPORT_SYMBOL_GPL(htw_wheel_unlock);

/**
 * htw_mod_locked() - htw_mod(), in a group of operations
 * @timer: the timer, of the wheel the caller holds
 * @expires: as for htw_mod()
 * @period: as for htw_mod()
 * @mode: as for htw_mod()
 *
 * As htw_mod(), but the hrtimer follows the timer only at
 * htw_wheel_unlock().  Never early for that: the wheel is not run before
 * the unlock.
 *
 * Context: Between htw_wheel_lock() and htw_wheel_unlock() of the timer's
 * wheel.
 * Return: as htw_mod().
 */
int htw_mod_locked(struct htw_timer *timer, u64 expires, u64 period,
		   enum htw_mode mode)
	__must_hold(&timer->wheel->lock)
{
	bool placed;
	int ret;

	ret = __htw_mod(timer->wheel, timer, expires, period, mode, &placed);
	timer->wheel->moved |= placed;
	return ret;
}
EXPORT_SYMBOL_GPL(htw_mod_locked);

/**
 * htw_del_locked() - htw_del(), in a group of operations
 * @timer: the timer, of the wheel the caller holds
 *
 * As htw_del(); on a wheel of %HTW_WHEEL_LOCKED_CALLBACKS it is
 * htw_del_sync() as well, since no callback runs while the caller holds
 * the wheel.
 *
 * Context: Between htw_wheel_lock() and htw_wheel_unlock() of the timer's
 * wheel.
 * Return: true if @timer was armed, false if it was idle.
 */
bool htw_del_locked(struct htw_timer *timer)
	__must_hold(&timer->wheel->lock)
{
	lockdep_assert_held(&timer->wheel->lock);

	if (timer->slot == HTW_SLOT_IDLE)
		return false;
	__htw_drop(timer->wheel, timer);
	timer->wheel->moved = true;
	return true;
}
EXPORT_SYMBOL_GPL(htw_del_locked);

/**
 * htw_expires() - the expiry a timer was last armed for
 * @timer: the timer, armed at least once
 *
 * For a periodic timer, the next expiry once its callback has run.
 *
 * Context: Any context.  Without the caller's own serialisation against
 * htw_add() and htw_mod(), the answer may be stale by the time it is read.
 * Return: ns on the wheel's clock.
 */
u64 htw_expires(const struct htw_timer *timer)
{
	return READ_ONCE(timer->expires);
}
EXPORT_SYMBOL_GPL(htw_expires);

/**
 * htw_pending() - whether a timer is armed
 * @timer: the timer
 *
 * A periodic timer stays armed until it is deleted; a one-shot timer stops
 * being armed when its callback is about to run.
 *
 * Context: Any context.  Without the caller's own serialisation the answer
 * may be stale by the time it is read.
 * Return: true if @timer is in a bucket or due.
 */
bool htw_pending(const struct htw_timer *timer)
{
	return READ_ONCE(timer->slot) != HTW_SLOT_IDLE;
}
EXPORT_SYMBOL_GPL(htw_pending);
