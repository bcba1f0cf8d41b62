/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of a context share: its structures, and the calls one of
 * them makes into another.  htw_ctx.c says how the context works; each
 * file opens with what it does:
 *
 *	htw_ctx.c		the context, its wheels, its account, its marks
 *	htw_ctx_timers.c	timers armed, moved and cancelled, in batches
 *	htw_ctx_events.c	expiry work in the owner's context: the event
 *				queue, read() and poll()
 *	htw_ctx_wall.c		wall-clock timers across sets of the clock
 */
#ifndef _HTW_CTX_INTERNAL_H
#define _HTW_CTX_INTERNAL_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/timekeeping.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "htw_core.h"
#include "htw_ctx.h"
#include "htw_pollers.h"
#include "htw_time.h"

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
 * @queued, @count, @expires and @fired are protected by the pollers' lock,
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
 * @lock: see "Locking" in htw_ctx.c
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
 * @due: bit c: the wheel of clock c has work due, from its hrtimer's wake
 *	until a run, or an ioctl, finds it has none (htw_ctx_unmark());
 *	%HTW_CTX_WALL: the wall-clock timers are to be placed again (atomic
 *	bit operations: htw_ctx_mark() sets them under @pollers.wqh.lock, the runs
 *	clear them under @lock)
 * @woken: of each clock, when its wheel's hrtimer last marked it due, not
 *	having been so; under @pollers.wqh.lock
 * @wakeups: times the context woke its pollers (and, for new work, a
 *	blocked reader); under @pollers.wqh.lock
 * @rwq: readers blocked in read() wait here, exclusively (see
 *	htw_ctx_events.c)
 * @next_clock: the clock whose wheel htw_ctx_run() looks at first; under
 *	@lock
 * @read_out: the events a read is copying out, under @lock; here rather
 *	than on the reader's kernel stack
 * @reading: what each of them leaves to do, under @lock
 * @pollers: pollers (and epoll) wait here (htw_pollers.c); its queue's
 *	lock protects the fields below
 * @events: timers with an event queued, in the order they were queued
 * @nr_queued: timers in @events
 */
struct htw_ctx {
	struct htw_ctx_params params;
	struct mutex lock;		/* see "Locking" in htw_ctx.c */
	struct htw_wheel *wheel[HTW_CTX_NR_CLOCKS];
	struct xarray timers;
	unsigned int slot_bits;
	u32 generation;
	u32 nr_timers;
	u32 slots_charged;
	unsigned long charged;
	s64 real_offset;
	struct list_head wall_node;
	struct htw_event read_out[HTW_CTX_TAKE];
	struct htw_ctx_reading reading[HTW_CTX_TAKE];

	unsigned long due;
	int next_clock;

	wait_queue_head_t rwq;

	/* The following fields are protected by pollers.wqh.lock. */
	struct htw_pollers pollers;
	u64 woken[HTW_CTX_NR_CLOCKS];
	u64 wakeups;
	struct list_head events;
	u32 nr_queued;
};

extern struct kmem_cache *htw_utimer_cache;

/*
 * Something to read: a wheel due that may make events, or events queued.
 * In that order, without a lock: a run queues its events before it takes
 * the mark off (htw_ctx_unmark()), so a mark seen gone means its events
 * are seen queued.
 */
static inline bool htw_ctx_has_work(struct htw_ctx *ctx)
{
	if (READ_ONCE(ctx->due))
		return true;
	/* The mark before the events; pairs with htw_ctx_unmark()'s. */
	smp_rmb();
	return READ_ONCE(ctx->nr_queued);
}

static inline bool htw_ctx_manual(const struct htw_ctx *ctx)
{
	return ctx->params.wheel.flags & HTW_WHEEL_MANUAL;
}

/*
 * The clock a timer runs on.  A relative expiry on the wall clock is a
 * duration, as POSIX has it and hrtimer_init() makes it: such a timer runs
 * on CLOCK_MONOTONIC, where no set of the wall clock moves it (and no step
 * of decades makes a 1 ms periodic timer count 10^12 expiries at once).
 */
static inline enum htw_ctx_clock htw_spec_clock(const struct htw_timer_spec *spec)
{
	if (spec->flags & HTW_TIMER_REALTIME)
		return spec->flags & HTW_TIMER_ABSTIME ? HTW_CTX_REALTIME :
							 HTW_CTX_MONOTONIC;
	return spec->flags & HTW_TIMER_BOOTTIME ? HTW_CTX_BOOTTIME :
						  HTW_CTX_MONOTONIC;
}

static inline enum htw_ctx_clock htw_utimer_clock(const struct htw_utimer *ut)
{
	if (ut->flags & HTW_UT_REALTIME)
		return HTW_CTX_REALTIME;
	return ut->flags & HTW_UT_BOOTTIME ? HTW_CTX_BOOTTIME : HTW_CTX_MONOTONIC;
}

static inline bool htw_utimer_queued(struct htw_ctx *ctx, struct htw_utimer *ut)
{
	bool queued;

	spin_lock_irq(&ctx->pollers.wqh.lock);
	queued = ut->queued;
	spin_unlock_irq(&ctx->pollers.wqh.lock);
	return queued;
}

/* The offset of the context's wall clock from its monotonic clock. */
static inline s64 htw_ctx_real_offset(struct htw_ctx *ctx)
{
	if (htw_ctx_manual(ctx))
		return READ_ONCE(ctx->real_offset);
	return ktime_to_ns(ktime_mono_to_real(0));
}

/* Whether a wall-clock timer was placed for the wall clock's @offset. */
static inline bool htw_utimer_placed_for(struct htw_utimer *ut, s64 offset)
{
	return htw_expires(&ut->timer) == htw_time_minus(ut->expires, offset);
}

/* htw_ctx.c */
void htw_ctx_wake_up(struct htw_ctx *ctx);
void htw_ctx_batch_flush(struct htw_ctx_batch *batch);
void htw_ctx_batch_free(struct htw_ctx_batch *batch,
			struct htw_utimer *ut);
int htw_ctx_charge_slot(struct htw_ctx *ctx, u32 slot);
void htw_ctx_mark(struct htw_ctx *ctx, int bit, u64 now);
int htw_ctx_prepare(struct htw_ctx *ctx, enum htw_ctx_clock clock,
		    u64 expires, u64 period, u64 *when);
void htw_ctx_unmark_stale(struct htw_ctx *ctx);
void htw_ctx_wake_pollers(struct htw_ctx *ctx);
u64 htw_ctx_wheel_time(struct htw_ctx *ctx, enum htw_ctx_clock clock,
		       u64 expires);
u64 htw_ctx_now(struct htw_ctx *ctx, enum htw_ctx_clock clock);
void htw_ctx_unmark(struct htw_ctx *ctx, int clock);

/* htw_ctx_timers.c */
void htw_utimer_release(struct htw_ctx_batch *batch,
			struct htw_utimer *ut);

/* htw_ctx_events.c */
void __htw_utimer_queue(struct htw_ctx *ctx, struct htw_utimer *ut);
void __htw_utimer_unqueue(struct htw_ctx *ctx, struct htw_utimer *ut);
bool htw_ctx_run(struct htw_ctx *ctx);
void htw_utimer_fn(struct htw_timer *timer, u64 expired, u64 count);

/* htw_ctx_wall.c */
void __htw_ctx_clock_was_set(struct htw_ctx *ctx);
void htw_ctx_wall_join(struct htw_ctx *ctx);
void htw_ctx_wall_leave(struct htw_ctx *ctx);
int htw_ctx_wall_init(void);
void htw_ctx_wall_exit(void);

#endif /* _HTW_CTX_INTERNAL_H */
