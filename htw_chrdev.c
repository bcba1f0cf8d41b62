// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/htw: timers of the wheel for user space
 *
 * Each open file is a context (htw_ctx.c), with wheels of its own, and,
 * once the program asks, ring timers in memory it shares with the program
 * (htw_ring.c); both are charged to the account of the uid that opened it
 * (htw_user.c).  This file is the glue between them and user space: module
 * parameters, the misc device, and the ioctls, which copy their arguments
 * in and out and leave the rest to the context or the ring timers.
 *
 * Every ioctl validates in the same order: the size the command carries,
 * then the copy (-EFAULT), then flags and reserved fields (-EINVAL), then
 * ranges (-EINVAL), and only then allocates (-ENOMEM), takes a lock, looks
 * ids up (-ENOENT) and counts limits (-ENOSPC).  An arm writes the new
 * id back last, under the lock, before the timer is armed: a spec that can
 * be read but not written fails with -EFAULT after those checks.
 * Structures grow at their end: a command is matched on its type, number
 * and direction, and its size is read from the command.
 *
 * Time namespaces (CLONE_NEWTIME) shift CLOCK_MONOTONIC and CLOCK_BOOTTIME
 * for the processes in them.  As timerfd_settime() does, an absolute expiry
 * is read on the clocks of the caller's namespace and turned into the
 * kernel's here; relative ones need nothing.  The times a file reports are
 * on the clocks of the namespace of the process that opened it, whoever
 * reads them: a file passed to a process of another namespace keeps
 * speaking its opener's time, as its timers keep their expiries.
 */

#include <linux/compat.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/cred.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/time_namespace.h>
#include <linux/uaccess.h>

#include <uapi/linux/htw.h>

#include "htw_core.h"
#include "htw_ctx.h"
#include "htw_ring.h"
#include "htw_pollers.h"
#include "htw_user.h"

static unsigned long long tick_ns = NSEC_PER_MSEC;
module_param(tick_ns, ullong, 0444);
MODULE_PARM_DESC(tick_ns, "Tick of the wheels in ns: the most a timer is late (default 1 ms)");

static unsigned int wheel_size = HTW_WHEEL_SIZE_MAX;
module_param(wheel_size, uint, 0444);
MODULE_PARM_DESC(wheel_size, "Buckets per level, a power of two from 2 to 64 (default 64)");

static unsigned int expire_budget;
module_param(expire_budget, uint, 0444);
MODULE_PARM_DESC(expire_budget, "Most callbacks per batch of an expiry run (default 0: the core's default)");

static unsigned int max_timers = 1U << 20;
module_param(max_timers, uint, 0444);
MODULE_PARM_DESC(max_timers, "Most timers one open file may hold (default 1048576)");

static unsigned long long min_period_ns;
module_param(min_period_ns, ullong, 0444);
MODULE_PARM_DESC(min_period_ns, "Shortest period of a periodic timer in ns (default 0: tick_ns)");

/* Root may change it at any time, as epoll's max_user_watches. */
static unsigned long max_user_bytes;
module_param(max_user_bytes, ulong, 0644);
MODULE_PARM_DESC(max_user_bytes, "Most memory one user's timers and wheels may pin across all files, in bytes (0 at load: 4% of memory)");

/*
 * Bytes of a user's account in the unit of versions 2 and 3, timers' sizes:
 * rounded down, the limit as what is held (so that a user within the
 * limit never reads more than the limit), at most U32_MAX.
 */
static u32 htw_in_timers(unsigned long bytes)
{
	return min_t(unsigned long, U32_MAX, bytes / htw_ctx_timer_cost());
}

/*
 * The limit as it was first given, in timers: a timer's bytes each.  For
 * the scripts that set it so; it reads back rounded down.
 */
static int htw_max_user_timers_set(const char *val,
				   const struct kernel_param *kp)
{
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 0, &n);
	if (ret)
		return ret;
	/* Saturated, as a limit may be. */
	WRITE_ONCE(max_user_bytes, size_mul(n, htw_ctx_timer_cost()));
	return 0;
}

static int htw_max_user_timers_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%u\n",
			 htw_in_timers(READ_ONCE(max_user_bytes)));
}

static const struct kernel_param_ops htw_max_user_timers_ops = {
	.set	= htw_max_user_timers_set,
	.get	= htw_max_user_timers_get,
};
module_param_cb(max_user_timers, &htw_max_user_timers_ops, NULL, 0644);
MODULE_PARM_DESC(max_user_timers, "max_user_bytes in timers, for compatibility: writing n sets n timers' bytes");

/* The share of memory one user's timers may pin by default, as epoll's. */
#define HTW_USER_MEM_DIVISOR	25

/* What every context is created with, but its user. */
static struct htw_ctx_params htw_params;

/* The part of an ioctl command that is not its size. */
#define HTW_IOC_CMD(cmd)	((cmd) & ~IOCSIZE_MASK)

/*
 * Copy in a structure of @usize bytes, of which the first version had @ver0:
 * a short one is refused, missing fields read as zero, and unknown bytes
 * must be zero (copy_struct_from_user() says -E2BIG; here it is -EINVAL,
 * like any other non-zero reserved field).
 */
static int htw_copy_in(void *dst, size_t ksize, const void __user *src,
		       size_t usize, size_t ver0)
{
	int ret;

	if (usize < ver0)
		return -EINVAL;
	ret = copy_struct_from_user(dst, ksize, src, usize);
	return ret == -E2BIG ? -EINVAL : ret;
}

/* Copy out a structure to a caller that knows @usize bytes of it. */
static int htw_copy_out(void __user *dst, size_t usize, const void *src,
			size_t ksize)
{
	if (copy_to_user(dst, src, min(usize, ksize)))
		return -EFAULT;
	if (usize > ksize && clear_user(dst + ksize, usize - ksize))
		return -EFAULT;
	return 0;
}

/*
 * The offset of @clock in the time namespace of the current task, in ns;
 * time namespaces leave the wall clock alone.
 */
static s64 htw_timens_offset(enum htw_ctx_clock clock)
{
	struct timespec64 ts = {};

	switch (clock) {
	case HTW_CTX_MONOTONIC:
		timens_add_monotonic(&ts);
		break;
	case HTW_CTX_BOOTTIME:
		timens_add_boottime(&ts);
		break;
	default:
		break;
	}
	return timespec64_to_ns(&ts);
}

/*
 * An absolute expiry of @spec, on a clock of the caller's time namespace,
 * as the kernel's clock reads it: an expiry before the kernel's clock began
 * is 0, one past %HTW_TIME_MAX is %HTW_TIME_MAX.  An expiry out of range
 * already is left for htw_ctx_arm() to refuse.
 */
static void htw_spec_from_timens(struct htw_timer_spec *spec)
{
	if (!(spec->flags & HTW_TIMER_ABSTIME) ||
	    (spec->flags & HTW_TIMER_REALTIME) || spec->expires > HTW_TIME_MAX)
		return;
	spec->expires = htw_time_minus(spec->expires,
				       htw_timens_offset(spec->flags & HTW_TIMER_BOOTTIME ?
							 HTW_CTX_BOOTTIME :
							 HTW_CTX_MONOTONIC));
}

/**
 * struct htw_file - an open /dev/htw
 * @ctx: its context
 * @setup_lock: serialises HTW_IOC_RING_SETUP, so that setups of one file
 *	that race (two threads, a parent and its child) build and charge one
 *	ring between them, not one each.  Lock order: @setup_lock, then the
 *	mm's mmap_lock (the setup's copy back may fault); ->mmap, under
 *	mmap_lock, never takes it, and reads @ring with an acquire instead
 * @ring: its ring timers, or NULL before HTW_IOC_RING_SETUP: set once,
 *	under @setup_lock with smp_store_release(), and read with
 *	smp_load_acquire()
 * @mono_offset: CLOCK_MONOTONIC's offset in the opener's time namespace
 */
struct htw_file {
	struct htw_ctx *ctx;
	struct mutex setup_lock;	/* serialises HTW_IOC_RING_SETUP */
	struct htw_ring *ring;
	s64 mono_offset;
};

static struct htw_ctx *htw_file_ctx(struct file *file)
{
	return ((struct htw_file *)file->private_data)->ctx;
}

static struct htw_ring *htw_file_ring(struct file *file)
{
	struct htw_file *hf = file->private_data;

	/* Pairs with the release of htw_ioctl_ring_setup(). */
	return smp_load_acquire(&hf->ring);
}

/*
 * The timers of a file are charged to the real uid that opened it, and its
 * events report times in the opener's time namespace.
 */
static int htw_open(struct inode *inode, struct file *file)
{
	struct htw_ctx_params params = htw_params;
	struct htw_file *hf;
	int i, ret;

	for (i = 0; i < HTW_CTX_NR_CLOCKS; i++)
		params.time_offset[i] = htw_timens_offset(i);

	hf = kzalloc(sizeof(*hf), GFP_KERNEL_ACCOUNT);
	if (!hf)
		return -ENOMEM;
	mutex_init(&hf->setup_lock);
	hf->mono_offset = params.time_offset[HTW_CTX_MONOTONIC];
	params.user = htw_user_get(current_user_ns(), current_uid());
	if (!params.user) {
		ret = -ENOMEM;
		goto err_free_file;
	}
	hf->ctx = htw_ctx_create(&params);
	if (IS_ERR(hf->ctx)) {
		ret = PTR_ERR(hf->ctx);
		goto err_put_user;
	}
	file->private_data = hf;
	/* read() honours IOCB_NOWAIT (RWF_NOWAIT, io_uring): htw_ctx_read(). */
	file->f_mode |= FMODE_NOWAIT;
	return stream_open(inode, file);

err_put_user:
	htw_user_put(params.user);
err_free_file:
	kfree(hf);
	return ret;
}

/* Called once the file is closed and no mapping of it is left. */
static int htw_release(struct inode *inode, struct file *file)
{
	struct htw_file *hf = file->private_data;
	struct htw_user *user = htw_ctx_user(hf->ctx);

	if (hf->ring)
		htw_ring_destroy(hf->ring);
	htw_ctx_destroy(hf->ctx);
	htw_user_put(user);
	mutex_destroy(&hf->setup_lock);
	kfree(hf);
	return 0;
}

static ssize_t htw_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct file *file = iocb->ki_filp;
	unsigned int flags = 0;

	if (file->f_flags & O_NONBLOCK)
		flags |= HTW_CTX_READ_NONBLOCK;
	if (iocb->ki_flags & IOCB_NOWAIT)
		flags |= HTW_CTX_READ_NOWAIT;
	return htw_ctx_read(htw_file_ctx(file), to, flags);
}

static __poll_t htw_poll(struct file *file, struct poll_table_struct *wait)
{
	struct htw_ring *ring = htw_file_ring(file);
	__poll_t mask = htw_ctx_poll(htw_file_ctx(file), file, wait);

	/* The ring timers wake the pollers the context registered. */
	if (ring)
		mask |= htw_ring_poll(ring);
	return mask;
}

/* A part of the ring timers' shared memory: see htw_ring_mmap(). */
static int htw_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct htw_ring *ring = htw_file_ring(file);

	if (!ring)
		return -ENXIO;
	return htw_ring_mmap(ring, vma);
}

/* The file's timers and events, and the limits they count against. */
static void htw_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct htw_ctx *ctx = htw_file_ctx(file);
	struct htw_ring *ring = htw_file_ring(file);
	u32 nr_timers, nr_queued, nr_slots, nr_armed, nr_waiting;
	u64 wakes, wakeups;

	htw_ctx_counts(ctx, &nr_timers, &nr_queued);
	seq_printf(m, "timers:\t%u\nqueued:\t%u\nmax_timers:\t%u\n",
		   nr_timers, nr_queued, max_timers);
	seq_printf(m, "user_bytes:\t%lu\nmax_user_bytes:\t%lu\n",
		   htw_user_bytes(htw_ctx_user(ctx)),
		   READ_ONCE(max_user_bytes));
	/* The same, in timers, for compatibility. */
	seq_printf(m, "user_timers:\t%u\nmax_user_timers:\t%u\n",
		   htw_in_timers(htw_user_bytes(htw_ctx_user(ctx))),
		   htw_in_timers(READ_ONCE(max_user_bytes)));
	/* Its wheels' hrtimers finding timers due; its waiters woken. */
	wakes = htw_ctx_wakes(ctx, &wakeups);
	if (ring) {
		u64 ring_wakeups;

		wakes += htw_ring_wakes(ring, &ring_wakeups);
		wakeups += ring_wakeups;
	}
	seq_printf(m, "wakes:\t%llu\nwakeups:\t%llu\n", wakes, wakeups);
	/* Wake-ups of more pollers than one hold of the lock wakes. */
	seq_printf(m, "deferred_wakeups:\t%llu\n",
		   htw_pollers_deferred(htw_ctx_pollers(ctx)));
	if (!ring)
		return;
	htw_ring_counts(ring, &nr_slots, &nr_armed, &nr_waiting);
	seq_printf(m, "ring_slots:\t%u\nring_armed:\t%u\nring_waiting:\t%u\n",
		   nr_slots, nr_armed, nr_waiting);
}

/* Root's view of every wheel: htw_wheels_fops over htw_wheels_sops. */
DEFINE_SEQ_ATTRIBUTE(htw_wheels);

static struct dentry *htw_debugfs;

static int htw_ioctl_info(struct htw_ctx *ctx, void __user *argp,
			  size_t usize)
{
	struct htw_info info = {
		.version	= HTW_ABI_VERSION,
		.wheel_size	= wheel_size,
		.tick_ns	= tick_ns,
		.min_period_ns	= min_period_ns,
		.max_timers	= max_timers,
		.batch_max	= HTW_BATCH_MAX,
		.expire_budget	= expire_budget ?: HTW_DEFAULT_BUDGET,
		.event_size	= sizeof(struct htw_event),
	};

	struct htw_user *user = htw_ctx_user(ctx);
	int ret;

	if (usize < HTW_INFO_SIZE_VER0)
		return -EINVAL;
	/* The events a read would find, made by the caller as a read's are. */
	ret = htw_ctx_run_due(ctx);
	if (ret)
		return ret;
	htw_ctx_counts(ctx, &info.nr_timers, &info.nr_queued);
	info.max_user_bytes = READ_ONCE(max_user_bytes);
	info.user_bytes = htw_user_bytes(user);
	info.max_user_timers = htw_in_timers(info.max_user_bytes);
	info.user_timers = htw_in_timers(info.user_bytes);
	return htw_copy_out(argp, usize, &info, sizeof(info));
}

static int htw_ioctl_arm(struct htw_ctx *ctx, void __user *argp, size_t usize)
{
	struct htw_timer_spec __user *uspec = argp;
	struct htw_timer_spec spec;
	int ret;

	ret = htw_copy_in(&spec, sizeof(spec), uspec, usize,
			  HTW_TIMER_SPEC_SIZE_VER0);
	if (ret)
		return ret;
	htw_spec_from_timens(&spec);
	/* A timer whose id the caller cannot learn is not armed at all. */
	return htw_ctx_arm(ctx, &spec, &uspec->id);
}

static int htw_ioctl_modify(struct htw_ctx *ctx, void __user *argp,
			    size_t usize)
{
	struct htw_timer_spec spec;
	int ret;

	ret = htw_copy_in(&spec, sizeof(spec), argp, usize,
			  HTW_TIMER_SPEC_SIZE_VER0);
	if (ret)
		return ret;
	htw_spec_from_timens(&spec);
	return htw_ctx_modify(ctx, &spec);
}

static int htw_ioctl_cancel(struct htw_ctx *ctx, void __user *argp,
			    size_t usize)
{
	struct htw_cancel cancel;
	int ret;

	ret = htw_copy_in(&cancel, sizeof(cancel), argp, usize,
			  HTW_CANCEL_SIZE_VER0);
	if (ret)
		return ret;
	if (cancel.flags)
		return -EINVAL;
	return htw_ctx_cancel(ctx, cancel.id);
}

/*
 * Operations a batch reads, runs and answers at a time: one copy of them
 * in, one hold of the context, one allocation of their timers.
 */
#define HTW_BATCH_CHUNK		HTW_CTX_BATCH_MAX

/*
 * Check one operation of a batch, as its own ioctl would before any lock:
 * return the result it gets without running, or 0 if it is to run.  The
 * expiry of an arm or a modify is made absolute on the kernel's clock.
 */
static int htw_batch_check(struct htw_ctx *ctx, struct htw_op *op)
{
	struct htw_timer_spec *spec = &op->spec;

	switch (op->op) {
	case HTW_OP_ARM:
	case HTW_OP_MODIFY:
		htw_spec_from_timens(spec);
		return htw_ctx_check(ctx, spec);
	case HTW_OP_CANCEL:
		if (spec->flags || spec->expires || spec->period ||
		    spec->user_data)
			return -EINVAL;
		return 0;
	default:
		return -EINVAL;
	}
}

/* Run one checked operation of a batch, its context held. */
static int htw_batch_run(struct htw_ctx_batch *cb, struct htw_op *op,
			 struct htw_op __user *u)
{
	switch (op->op) {
	case HTW_OP_ARM:
		return htw_ctx_batch_arm(cb, &op->spec, &u->spec.id);
	case HTW_OP_MODIFY:
		return htw_ctx_batch_modify(cb, &op->spec);
	default:
		return htw_ctx_batch_cancel(cb, op->spec.id);
	}
}

/*
 * Read up to @n operations, @usize bytes apart from @uop, into @ops, and
 * check each: its result so far is 0, or the error it gets without running
 * (-EINVAL for unknown bytes that are not zero).  Return how many could be
 * read: fewer than @n if one faults.
 */
static unsigned int htw_batch_read(struct htw_ctx *ctx, struct htw_op *ops,
				   const void __user *uop, unsigned int n,
				   size_t usize)
{
	unsigned int i = 0;
	int ret;

	/* One copy; where it stops short, one operation at a time. */
	if (usize == sizeof(*ops) && !copy_from_user(ops, uop, n * usize)) {
		for (; i < n; i++)
			ops[i].result = htw_batch_check(ctx, &ops[i]);
		return n;
	}
	for (; i < n; i++, uop += usize) {
		ret = htw_copy_in(&ops[i], sizeof(*ops), uop, usize,
				  HTW_OP_SIZE_VER0);
		if (ret == -EFAULT)
			break;
		if (ret) {
			/* Not read: nothing of it may be used. */
			memset(&ops[i], 0, sizeof(ops[i]));
			ops[i].result = -EINVAL;
		} else {
			ops[i].result = htw_batch_check(ctx, &ops[i]);
		}
	}
	return i;
}

/*
 * Write -EINPROGRESS into the result of each of @n operations from @uop, so
 * that none runs before its result is known to be writable.  Return how
 * many could be written.
 */
static unsigned int htw_batch_claim(void __user *uop, unsigned int n,
				    size_t usize)
{
	struct htw_op __user *u;
	unsigned int i = 0;

	if (user_write_access_begin(uop, n * usize)) {
		for (; i < n; i++, uop += usize) {
			u = uop;
			unsafe_put_user(-EINPROGRESS, &u->result, out);
		}
out:
		user_write_access_end();
		return i;
	}
	/* Some of the range is not user memory: find where it ends. */
	for (; i < n; i++, uop += usize) {
		u = uop;
		if (put_user(-EINPROGRESS, &u->result))
			break;
	}
	return i;
}

/*
 * Run the @n operations read into @ops from @uop, in one batch of the
 * context, each answered as it runs.  Return how many ran; *@stop is set
 * to why it ran fewer, or why the batch must stop after them.
 */
static unsigned int htw_batch_chunk(struct htw_ctx *ctx, struct htw_op *ops,
				    void __user *uop, unsigned int n,
				    size_t usize, int *stop)
{
	struct htw_ctx_batch cb;
	struct htw_op __user *u;
	unsigned int i, nr_arms = 0;
	int result;

	for (i = 0; i < n; i++)
		nr_arms += ops[i].op == HTW_OP_ARM && !ops[i].result;
	*stop = htw_ctx_batch_begin(ctx, &cb, nr_arms);
	if (*stop)
		return 0;
	for (i = 0; i < n; i++, uop += usize) {
		u = uop;
		if (fatal_signal_pending(current)) {
			*stop = -EINTR;
			break;
		}
		result = ops[i].result ?: htw_batch_run(&cb, &ops[i], u);
		/* Its id could not be written: it did not run. */
		if (ops[i].op == HTW_OP_ARM && result == -EFAULT) {
			*stop = -EFAULT;
			break;
		}
		/* It ran, but the memory went meanwhile. */
		if (put_user(result, &u->result)) {
			*stop = -EFAULT;
			i++;
			break;
		}
	}
	htw_ctx_batch_end(&cb);
	return i;
}

static long htw_ioctl_batch(struct htw_ctx *ctx, void __user *argp,
			    size_t usize)
{
	struct htw_op ops[HTW_BATCH_CHUNK];
	struct htw_batch batch;
	void __user *uop;
	unsigned int n, ran;
	u32 done = 0;
	int ret;

	ret = htw_copy_in(&batch, sizeof(batch), argp, usize,
			  HTW_BATCH_SIZE_VER0);
	if (ret)
		return ret;
	if (batch.flags || batch.reserved)
		return -EINVAL;
	if (batch.count > HTW_BATCH_MAX)
		return -E2BIG;
	if (batch.op_size < HTW_OP_SIZE_VER0 || batch.op_size > PAGE_SIZE)
		return -EINVAL;
	uop = u64_to_user_ptr(batch.ops);
	while (done < batch.count) {
		n = min_t(u32, batch.count - done, HTW_BATCH_CHUNK);
		n = htw_batch_read(ctx, ops, uop, n, batch.op_size);
		n = htw_batch_claim(uop, n, batch.op_size);
		/* The first operation that cannot be read or answered stops it. */
		if (!n)
			return done ?: -EFAULT;
		ran = htw_batch_chunk(ctx, ops, uop, n, batch.op_size, &ret);
		done += ran;
		if (ret)
			return done ?: ret;
		uop += (size_t)n * batch.op_size;
		cond_resched();
	}
	return done;
}

/*
 * Create the file's ring timers, once: the sizes written back before they
 * are published, so that a setup that cannot write them leaves none.  One
 * setup of a file at a time: the others wait, then find the ring there.
 */
static int htw_ioctl_ring_setup(struct file *file, void __user *argp,
				size_t usize)
{
	struct htw_file *hf = file->private_data;
	struct htw_ring_params params = {
		.wheel		= htw_params.wheel,
		.max_slots	= max_timers,
		.time_offset	= hf->mono_offset,
		.user		= htw_ctx_user(hf->ctx),
		.max_user_bytes	= &max_user_bytes,
		.pollers	= htw_ctx_pollers(hf->ctx),
	};
	struct htw_ring_setup setup;
	struct htw_ring *ring;
	int ret;

	ret = htw_copy_in(&setup, sizeof(setup), argp, usize,
			  HTW_RING_SETUP_SIZE_VER0);
	if (ret)
		return ret;
	if (mutex_lock_killable(&hf->setup_lock))
		return -EINTR;
	if (hf->ring) {
		ret = -EBUSY;
		goto out_unlock;
	}
	ring = htw_ring_create(&params, &setup);
	if (IS_ERR(ring)) {
		ret = PTR_ERR(ring);
		goto out_unlock;
	}
	ret = htw_copy_out(argp, usize, &setup, sizeof(setup));
	if (ret)
		htw_ring_destroy(ring);
	else
		/* The ring built, then the pointer: htw_file_ring(). */
		smp_store_release(&hf->ring, ring);
out_unlock:
	mutex_unlock(&hf->setup_lock);
	return ret;
}

static int htw_ioctl_ring_enter(struct file *file, void __user *argp,
				size_t usize)
{
	struct htw_ring *ring = htw_file_ring(file);
	struct htw_ring_enter enter;
	int ret;

	ret = htw_copy_in(&enter, sizeof(enter), argp, usize,
			  HTW_RING_ENTER_SIZE_VER0);
	if (ret)
		return ret;
	if (!ring)
		return -ENXIO;
	return htw_ring_enter(ring, &enter);
}

static long htw_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct htw_ctx *ctx = htw_file_ctx(file);
	void __user *argp = (void __user *)arg;
	size_t usize = _IOC_SIZE(cmd);

	switch (HTW_IOC_CMD(cmd)) {
	case HTW_IOC_CMD(HTW_IOC_INFO):
		return htw_ioctl_info(ctx, argp, usize);
	case HTW_IOC_CMD(HTW_IOC_ARM):
		return htw_ioctl_arm(ctx, argp, usize);
	case HTW_IOC_CMD(HTW_IOC_MODIFY):
		return htw_ioctl_modify(ctx, argp, usize);
	case HTW_IOC_CMD(HTW_IOC_CANCEL):
		return htw_ioctl_cancel(ctx, argp, usize);
	case HTW_IOC_CMD(HTW_IOC_BATCH):
		return htw_ioctl_batch(ctx, argp, usize);
	case HTW_IOC_CMD(HTW_IOC_RING_SETUP):
		return htw_ioctl_ring_setup(file, argp, usize);
	case HTW_IOC_CMD(HTW_IOC_RING_ENTER):
		return htw_ioctl_ring_enter(file, argp, usize);
	default:
		return -ENOIOCTLCMD;
	}
}

static const struct file_operations htw_fops = {
	.owner		= THIS_MODULE,
	.open		= htw_open,
	.release	= htw_release,
	.read_iter	= htw_read_iter,
	.poll		= htw_poll,
	.mmap		= htw_mmap,
	.unlocked_ioctl	= htw_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.show_fdinfo	= htw_show_fdinfo,
	.llseek		= noop_llseek,
};

static struct miscdevice htw_misc = {
	.minor		= MISC_DYNAMIC_MINOR,
	.name		= "htw",
	.fops		= &htw_fops,
	.mode		= 0666,
};

static int __init htw_init(void)
{
	struct htw_wheel_params wp = {
		.tick_ns	= tick_ns,
		.wheel_size	= wheel_size,
		.expire_budget	= expire_budget,
		.clockid	= CLOCK_MONOTONIC,
		.flags		= HTW_WHEEL_LAZY_LEVELS,
	};
	struct htw_wheel *wheel;
	int ret;

	if (!max_timers)
		return -EINVAL;
	/* Refuse parameters no wheel could be made of, now rather than at open. */
	wheel = htw_wheel_create(&wp);
	if (IS_ERR(wheel))
		return PTR_ERR(wheel);
	htw_wheel_destroy(wheel);

	if (!min_period_ns)
		min_period_ns = tick_ns;
	if (!max_user_bytes)
		max_user_bytes = (totalram_pages() / HTW_USER_MEM_DIVISOR) <<
				 PAGE_SHIFT;
	wp.flags = HTW_WHEEL_ACCOUNT;
	htw_params = (struct htw_ctx_params) {
		.wheel			= wp,
		.min_period_ns		= min_period_ns,
		.max_timers		= max_timers,
		.max_user_bytes		= &max_user_bytes,
	};

	ret = htw_user_init();
	if (ret)
		return ret;
	ret = htw_ctx_init();
	if (ret)
		goto err_user_exit;
	ret = misc_register(&htw_misc);
	if (ret)
		goto err_ctx_exit;
	/* Debugging aid only: no error of debugfs stops the module. */
	htw_debugfs = debugfs_create_dir("htw", NULL);
	debugfs_create_file("wheels", 0400, htw_debugfs, NULL,
			    &htw_wheels_fops);
	return 0;

err_ctx_exit:
	htw_ctx_exit();
err_user_exit:
	htw_user_exit();
	return ret;
}
module_init(htw_init);

static void __exit htw_exit(void)
{
	debugfs_remove_recursive(htw_debugfs);
	misc_deregister(&htw_misc);
	htw_ctx_exit();
	htw_user_exit();
}
module_exit(htw_exit);

MODULE_DESCRIPTION("Hierarchical timing wheel and its /dev/htw device");
MODULE_LICENSE("GPL");
