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
 * timer once the wheel's clock has reached its @when.
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
 * due list exactly when clk reaches its when.  Kafka creates an overflow
 * wheel for the first timer that needs it; here the storage for every level
 * a wheel could ever need (64 / shift of them at most) is reserved when the
 * wheel is created, so that adding a timer never allocates and never fails
 * for lack of memory, as add_timer() cannot; a level is in use only while
 * it holds timers (@level_map), and the levels not in use cost no work.
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
 * One expiry run makes at most expire_budget callbacks; if timers remain due,
 * the hrtimer is re-armed for "now" and the next run, a new softirq,
 * continues where this one stopped.  A callback runs without the wheel's
 * lock, with the wheel's @running pointing at its timer; a periodic timer is
 * re-armed at (previous expiry + period) before its callback, skipping (and
 * counting as overruns) the periods that have already passed, as
 * hrtimer_forward() does.
 *
 * Locking
 * -------
 * wheel->lock (a spinlock taken with interrupts disabled, so that timers
 * can be armed from any context) protects the buckets, the maps, the due
 * list, clk, and each timer's @entry, @expires, @period, @when and @slot.
 * A timer's place is only ever changed under that lock, so a cancel sees
 * the timer either in a bucket, on the due list, or idle, never in between:
 * a cascade moves the timer under the same lock the cancel takes.
 *
 * The only lock nested inside wheel->lock is the hrtimer's own base lock
 * (through hrtimer_start() and hrtimer_try_to_cancel()); the hrtimer
 * callback takes wheel->lock itself.  Callbacks are called with no lock
 * held, so they may take their own locks and re-enter the wheel.
 *
 * htw_del_sync() waits, on @wq, until the timer's callback is no longer
 * running; a callback asking to wait for itself would wait forever and is
 * refused.
 */
