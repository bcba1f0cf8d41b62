/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The timers and event queue behind one open /dev/htw
 *
 * A context holds the timers one file armed, named by ids, on wheels of its
 * own, and queues their expiries as struct htw_event records until they are
 * read.  It knows the wheels only through htw_core.h and user memory only
 * through an iov_iter and one id pointer, so that its KUnit suite can drive
 * it on manual wheels.
 */
#ifndef _HTW_CTX_H
#define _HTW_CTX_H

#include <linux/fs.h>
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/types.h>
#include <linux/uio.h>

#include <uapi/linux/htw.h>

#include "htw_core.h"
#include "htw_time.h"

struct htw_pollers;

struct htw_ctx;
struct htw_user;

/*
 * The clocks a context has a wheel for.  The wheel of CLOCK_REALTIME timers
 * runs on CLOCK_MONOTONIC: see htw_ctx_wall.c.
 */
enum htw_ctx_clock {
	HTW_CTX_MONOTONIC,
	HTW_CTX_BOOTTIME,
	HTW_CTX_REALTIME,
	HTW_CTX_NR_CLOCKS,
};

/**
 * struct htw_ctx_params - what a context is made of
 * @wheel: the wheels it creates, one per clock on the clock's first timer;
 *	@wheel.clockid is ignored, and %HTW_WHEEL_LAZY_LEVELS is always set
 * @min_period_ns: shortest period a timer may have
 * @max_timers: most timers the context may hold, at least 1
 * @max_user_bytes: most memory @user may hold across its contexts, in
 *	bytes, read at each arm (it may change while contexts are open)
 * @user: the account the timers are charged to, or NULL for none; the
 *	caller holds a reference for the life of the context
 * @time_offset: per clock, the ns added to the times the context reports
 *	in its events (a time namespace's offsets); the times it is given, and
 *	works in, are the kernel's
 */
struct htw_ctx_params {
	struct htw_wheel_params wheel;
	u64 min_period_ns;
	u32 max_timers;
	const unsigned long *max_user_bytes;
	struct htw_user *user;
	s64 time_offset[HTW_CTX_NR_CLOCKS];
};

int htw_ctx_init(void);
void htw_ctx_exit(void);
size_t htw_ctx_timer_cost(void);

struct htw_ctx *htw_ctx_create(const struct htw_ctx_params *params);
void htw_ctx_destroy(struct htw_ctx *ctx);
struct htw_user *htw_ctx_user(struct htw_ctx *ctx);
struct htw_wheel *htw_ctx_wheel(struct htw_ctx *ctx, enum htw_ctx_clock clock);

/* Most timers a batch allocates ahead, or frees at once. */
#define HTW_CTX_BATCH_MAX	8

/**
 * struct htw_ctx_batch - operations run under one hold of a context
 * @ctx: the context
 * @nr_spare: timers allocated ahead for its arms, in @spare
 * @nr_dead: timers it released and has not freed yet, in @dead
 * @spare: them
 * @dead: them
 */
struct htw_ctx_batch {
	struct htw_ctx *ctx;
	unsigned int nr_spare;
	unsigned int nr_dead;
	void *spare[HTW_CTX_BATCH_MAX];
	void *dead[HTW_CTX_BATCH_MAX];
};

int htw_ctx_check(struct htw_ctx *ctx, struct htw_timer_spec *spec);
int htw_ctx_batch_begin(struct htw_ctx *ctx, struct htw_ctx_batch *batch,
			unsigned int nr_arms);
int htw_ctx_batch_arm(struct htw_ctx_batch *batch, struct htw_timer_spec *spec,
		      u32 __user *id_out);
int htw_ctx_batch_modify(struct htw_ctx_batch *batch,
			 const struct htw_timer_spec *spec);
int htw_ctx_batch_cancel(struct htw_ctx_batch *batch, u32 id);
void htw_ctx_batch_end(struct htw_ctx_batch *batch);
int htw_ctx_arm(struct htw_ctx *ctx, struct htw_timer_spec *spec,
		u32 __user *id_out);
int htw_ctx_modify(struct htw_ctx *ctx, const struct htw_timer_spec *spec);
int htw_ctx_cancel(struct htw_ctx *ctx, u32 id);
int htw_ctx_run_due(struct htw_ctx *ctx);
u64 htw_ctx_wakes(struct htw_ctx *ctx, u64 *wakeups);

/* Flags of htw_ctx_read(). */
#define HTW_CTX_READ_NONBLOCK	BIT(0)
#define HTW_CTX_READ_NOWAIT	BIT(1)

ssize_t htw_ctx_read(struct htw_ctx *ctx, struct iov_iter *to,
		     unsigned int flags);
__poll_t htw_ctx_poll(struct htw_ctx *ctx, struct file *file,
		      struct poll_table_struct *wait);
struct htw_pollers *htw_ctx_pollers(struct htw_ctx *ctx);
void htw_ctx_counts(struct htw_ctx *ctx, u32 *nr_timers, u32 *nr_queued);
void htw_ctx_clock_was_set(struct htw_ctx *ctx);
void htw_ctx_set_real_offset(struct htw_ctx *ctx, s64 offset);

#endif /* _HTW_CTX_H */
