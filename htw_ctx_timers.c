// SPDX-License-Identifier: GPL-2.0
/*
 * A context's timers: armed, moved and cancelled, alone or in batches
 *
 * See htw_ctx.c for the model and the locking.  A batch holds the
 * context's mutex across its operations, allocates the timers its arms
 * need ahead, and frees those it released in bulk at its end.
 */

#include <kunit/visibility.h>
#include <linux/sched.h>
#include <linux/uaccess.h>

#include "htw_ctx_internal.h"

#include "htw_user.h"

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
	spin_lock_irq(&ctx->pollers.wqh.lock);
	__htw_utimer_unqueue(ctx, ut);
	spin_unlock_irq(&ctx->pollers.wqh.lock);
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

/*
 * Forget a timer that is off its wheel and has no event queued, and give
 * its user the room back at once, so that an arm after it in the same
 * batch finds it; its memory goes with the others @batch released, at the
 * latest when the batch ends.
 */
void htw_utimer_release(struct htw_ctx_batch *batch,
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
