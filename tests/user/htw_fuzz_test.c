// SPDX-License-Identifier: GPL-2.0
/*
 * A fuzzer of the ABI of /dev/htw.
 *
 * A seeded xorshift64 picks calls on a few files of /dev/htw, each open
 * non-blocking so that no call can wait: ioctl() with random command
 * numbers and sizes; the five commands with random but often plausible
 * arguments; read() of random lengths; poll() with no timeout; dup() and
 * close(); write(), lseek(), pread() and pwrite(); and now and then a
 * fork() whose child does the same on the files it inherits.  Arguments
 * point to valid memory, or to memory the kernel cannot read or write:
 * NULL, a PROT_NONE page, a read-only page, a structure that runs into a
 * PROT_NONE page, a kernel address.  Those are only ever handed to the
 * kernel, never dereferenced here.
 *
 * The oracle is include/uapi/linux/htw.h: every call returns a value in
 * range, or fails with an errno its comment documents for that call; where
 * the arguments alone decide (a size below the first version, a wrong
 * direction, an unknown flag, memory that faults), with exactly that one.
 * Each operation of a batch that ran has a documented result, and each
 * event read is well formed.  At the end, with every file closed, the user
 * holds exactly what it held before the fuzzer opened anything: all that
 * the fuzzer made the kernel allocate was given back.
 *
 * HTW_FUZZ_SEED sets the seed (the test prints the one it used),
 * HTW_FUZZ_CALLS the number of steps: 50,000 by default, 1,000,000 with
 * HTW_FULL=1; and HTW_FUZZ_SECONDS the most it runs, 60 s by default and
 * 150 s with HTW_FULL=1, which UML's slow system calls reach first (a
 * million steps take about 40 s in the QEMU guests, 400 s in UML).  Each
 * step draws from an xorshift64 seeded with the seed and the step's
 * number, so that a seed repeats the choices of every step; which ids live
 * and which events come depend on timing, though, so a failure names the
 * step and the whole call, enough to write it by hand.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define MS		NSEC_PER_MSEC
#define NR_SLOTS	4		/* descriptors the fuzzer holds */
#define POOL_MAX	64		/* ids it keeps per file */
#define STALE_MAX	64		/* ids it remembers as gone */
#define OPS_MAX		64		/* operations it writes into a batch */
#define EVENTS_MAX	64		/* events one read() asks for at most */
#define ARG_MAX		((1U << _IOC_SIZEBITS) - 1)	/* largest ioctl size */
#define MAX_CHILDREN	32
#define FORK_ODDS	5000
#define CHILD_STEPS	300
#define NR_BUCKETS	160		/* errnos counted apart; the rest share one */
#define KERNEL_ADDR	0xffff888000000000ULL
/* How far past ours the kernel's present may be when it reads its clock. */
#define NOW_SLACK	(24ULL * 3600 * NSEC_PER_SEC)

#define EV_SIZE		sizeof(struct htw_event)

/* What a call may do: succeed (ALLOW_OK), or fail with these errnos. */
#define ALLOW_OK	1ULL
#define ALLOW(e)	(1ULL << (e))

enum call_kind {
	C_IOCTL, C_INFO, C_ARM, C_MODIFY, C_CANCEL, C_BATCH, C_READ, C_POLL,
	C_DUP, C_CLOSE, C_OPEN, C_FORK, C_WRITE, C_LSEEK, C_PREAD, C_PWRITE,
	NR_CALL_KINDS
};

static const char * const call_name[NR_CALL_KINDS] = {
	"ioctl(random cmd)", "HTW_IOC_INFO", "HTW_IOC_ARM", "HTW_IOC_MODIFY",
	"HTW_IOC_CANCEL", "HTW_IOC_BATCH", "read", "poll", "dup", "close",
	"open", "fork", "write", "lseek", "pread", "pwrite",
};

/* The commands, by number; C_INFO + nr is each one's call kind. */
static const unsigned int htw_cmd[] = {
	HTW_IOC_INFO, HTW_IOC_ARM, HTW_IOC_MODIFY, HTW_IOC_CANCEL, HTW_IOC_BATCH,
};

static const unsigned int ver0_size[] = {
	HTW_INFO_SIZE_VER0, HTW_TIMER_SPEC_SIZE_VER0, HTW_TIMER_SPEC_SIZE_VER0,
	HTW_CANCEL_SIZE_VER0, HTW_BATCH_SIZE_VER0,
};

static const unsigned int known_size[] = {
	sizeof(struct htw_info), sizeof(struct htw_timer_spec),
	sizeof(struct htw_timer_spec), sizeof(struct htw_cancel),
	sizeof(struct htw_batch),
};

#define NR_CMDS		ARRAY_SIZE(htw_cmd)
#define NR_BATCH	4

/*
 * Where an argument points.  Each region of the fuzzer's memory is
 * followed by a PROT_NONE page, so that the end of a region is a fault.
 */
enum ptr_kind {
	P_VALID, P_END, P_MISALIGNED, P_NULL, P_NONE, P_RO, P_STRADDLE,
	P_KERNEL, NR_PTR_KINDS
};

static const char * const ptr_name[NR_PTR_KINDS] = {
	"valid", "valid-up-to-guard", "misaligned", "NULL", "PROT_NONE",
	"read-only", "straddling-guard", "kernel",
};

enum region { R_ARG, R_BUF, R_RO_ARG, R_RO_BUF, NR_REGIONS };

struct uptr {
	enum ptr_kind kind;
	char *p;		/* what the kernel gets */
	size_t readable;	/* bytes from @p it can read */
	size_t writable;	/* and write */
};

/* What the fuzzer expects of a call. */
struct expect {
	__u64 allow;		/* ALLOW_OK, and the errnos it may fail with */
	long lo, hi;		/* what it may return when it succeeds */
};

/* A batch as the fuzzer laid it out. */
struct batch_plan {
	struct uptr ops;
	__u32 count, op_size;
	unsigned int n_fill;	/* operations written */
	unsigned int n_room;	/* of them, whole in memory the kernel can use */
	bool partial;		/* one more starts there, and runs into a fault */
	__u64 op_allow[OPS_MAX];	/* the results each may get */
};

/* The ids the fuzzer knows in one open file. */
struct pool {
	int refs;		/* slots that hold the file; 0: free */
	unsigned int nr;
	__u32 ids[POOL_MAX];
};

/* Counts of the parent and its children, in memory they share. */
struct stats {
	__u64 calls[NR_CALL_KINDS];
	__u64 errnos[NR_BUCKETS];	/* [0]: successes */
	__u64 op_results[NR_BUCKETS];
	__u64 events;
	__u64 children;
};

struct fuzz {
	__u64 rng;
	__u64 seed;
	__u64 step;
	bool child;
	unsigned int children;
	size_t page;
	__u64 min_period;
	__u32 max_timers;
	unsigned int slot_bits;
	char *map;
	size_t map_len;
	char *reg[NR_REGIONS];
	size_t reg_len[NR_REGIONS];
	char *scratch;		/* one page, to build an operation in */
	int fd[NR_SLOTS];	/* -1: closed */
	int file[NR_SLOTS];	/* index in @files, -1: closed */
	struct pool files[NR_SLOTS];
	__u32 stale[STALE_MAX];
	unsigned int stale_pos;
	struct stats *st;
	char what[256];		/* the call being made */
	char err[768];		/* why the oracle failed */
	unsigned char arg[ARG_MAX + 1];	/* an ioctl's argument, as built */
};

/* The state of step @fz->step: splitmix64 of the seed and the step. */
static void reseed(struct fuzz *fz)
{
	__u64 x = fz->seed + (fz->step + 1) * 0x9e3779b97f4a7c15ULL;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	fz->rng = x ? x : 1;	/* xorshift never leaves 0 */
}

static __u64 rnd(struct fuzz *fz)
{
	fz->rng ^= fz->rng << 13;
	fz->rng ^= fz->rng >> 7;
	fz->rng ^= fz->rng << 17;
	return fz->rng;
}

static __u64 rnd_below(struct fuzz *fz, __u64 n)
{
	return n ? rnd(fz) % n : 0;
}

static bool one_in(struct fuzz *fz, unsigned int n)
{
	return rnd_below(fz, n) == 0;
}

static const char *errno_name(int err)
{
	const char *name = strerrorname_np(err);

	return name ? name : "E?";
}

static bool fail(struct fuzz *fz, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(fz->err, sizeof(fz->err), "step %llu: %s: ",
		     (unsigned long long)fz->step, fz->what);
	if (n < 0 || (size_t)n >= sizeof(fz->err))
		return false;
	va_start(ap, fmt);
	vsnprintf(fz->err + n, sizeof(fz->err) - n, fmt, ap);
	va_end(ap);
	return false;
}

static void expect_str(const struct expect *e, char *buf, size_t len)
{
	size_t n = 0;
	int i;

	buf[0] = '\0';
	if (e->allow & ALLOW_OK) {
		if (e->lo == e->hi)
			n = snprintf(buf, len, "%ld", e->lo);
		else
			n = snprintf(buf, len, "%ld..%ld", e->lo, e->hi);
	}
	for (i = 1; i < 64 && n < len; i++)
		if (e->allow & ALLOW(i))
			n += snprintf(buf + n, len - n, "%s%s", n ? " or " : "",
				      errno_name(i));
}

static unsigned int bucket(int err)
{
	return err > 0 && err < NR_BUCKETS ? err : NR_BUCKETS - 1;
}

/* Count a call, and check what it returned against @e. */
static bool check(struct fuzz *fz, enum call_kind kind, long ret, int err,
		  const struct expect *e)
{
	char want[160];
	bool ok;

	fz->st->calls[kind]++;
	fz->st->errnos[ret < 0 ? bucket(err) : 0]++;
	if (ret >= 0)
		ok = (e->allow & ALLOW_OK) && ret >= e->lo && ret <= e->hi;
	else
		ok = ret == -1 && err > 0 && err < 64 && (e->allow & ALLOW(err));
	if (ok)
		return true;
	expect_str(e, want, sizeof(want));
	if (ret >= 0)
		return fail(fz, "returned %ld; expected %s", ret, want);
	return fail(fz, "returned %ld, errno %d (%s); expected %s", ret, err,
		    errno_name(err), want);
}

static struct expect fails_with(__u64 allow)
{
	return (struct expect){ .allow = allow };
}

/* Pointers */

static enum ptr_kind pick_kind(struct fuzz *fz, unsigned int valid_pct)
{
	if (rnd_below(fz, 100) < valid_pct)
		return one_in(fz, 5) ? P_END : P_VALID;
	return P_MISALIGNED + rnd_below(fz, NR_PTR_KINDS - P_MISALIGNED);
}

/*
 * Point to @size bytes of region @rw (or of @ro for a read-only pointer) in
 * the way @kind says.
 */
static struct uptr place(struct fuzz *fz, enum ptr_kind kind, enum region rw,
			 enum region ro, size_t size)
{
	char *start = fz->reg[rw], *guard = start + fz->reg_len[rw];
	struct uptr u = { .kind = kind };

	switch (kind) {
	case P_VALID:
		u.p = start;
		break;
	case P_END:
		u.p = size <= fz->reg_len[rw] ? guard - size : start;
		break;
	case P_MISALIGNED:
		u.p = start + (one_in(fz, 2) ? 1 : 3);
		break;
	case P_STRADDLE:
		u.p = guard - (size > 1 ? 1 + rnd_below(fz, size - 1) : 1);
		break;
	case P_RO:
		u.p = fz->reg[ro];
		u.readable = fz->reg_len[ro];
		return u;
	case P_NONE:
		u.p = guard;
		return u;
	case P_KERNEL:
		u.p = (char *)(uintptr_t)KERNEL_ADDR;
		return u;
	default:
		return u;
	}
	u.readable = guard - u.p;
	u.writable = u.readable;
	return u;
}

/* Put the first @n bytes of @src where @u points, if it can hold any. */
static void fill_user(struct fuzz *fz, const struct uptr *u, enum region ro,
		      const void *src, size_t n)
{
	size_t len = n < u->readable ? n : u->readable;

	switch (u->kind) {
	case P_VALID:
	case P_END:
	case P_MISALIGNED:
	case P_STRADDLE:
		memcpy(u->p, src, len);
		break;
	case P_RO:
		mprotect(fz->reg[ro], fz->reg_len[ro], PROT_READ | PROT_WRITE);
		memcpy(u->p, src, len);
		mprotect(fz->reg[ro], fz->reg_len[ro], PROT_READ);
		break;
	default:
		break;
	}
}

static void fill_noise(struct fuzz *fz, unsigned char *p, size_t n)
{
	size_t i;
	__u64 r;

	for (i = 0; i < n; i += sizeof(r)) {
		r = rnd(fz);
		memcpy(p + i, &r, n - i < sizeof(r) ? n - i : sizeof(r));
	}
}

/* Ids */

static void forget(struct fuzz *fz, __u32 id)
{
	fz->stale[fz->stale_pos++ % STALE_MAX] = id;
}

static void pool_del(struct fuzz *fz, int file, __u32 id)
{
	struct pool *p = &fz->files[file];
	unsigned int i;

	for (i = 0; i < p->nr; i++) {
		if (p->ids[i] == id) {
			p->ids[i] = p->ids[--p->nr];
			forget(fz, id);
			return;
		}
	}
}

/* Cancel a timer the fuzzer lets go of; it may be gone already. */
static bool cancel_id(struct fuzz *fz, int slot, __u32 id)
{
	struct expect e = { .allow = ALLOW_OK | ALLOW(ENOENT) };
	struct htw_cancel c = { .id = id };
	char saved[sizeof(fz->what)];
	long ret;

	memcpy(saved, fz->what, sizeof(saved));
	snprintf(fz->what, sizeof(fz->what),
		 "slot %d: ioctl(HTW_IOC_CANCEL %#x) of id %#x, to bound the timers",
		 slot, (unsigned int)HTW_IOC_CANCEL, id);
	ret = ioctl(fz->fd[slot], HTW_IOC_CANCEL, &c);
	if (!check(fz, C_CANCEL, ret, errno, &e))
		return false;
	memcpy(fz->what, saved, sizeof(saved));
	return true;
}

/* Keep a live id; past POOL_MAX, cancel one, so that timers stay bounded. */
static bool pool_add(struct fuzz *fz, int slot, __u32 id)
{
	struct pool *p = &fz->files[fz->file[slot]];
	unsigned int i;
	__u32 old;

	for (i = 0; i < p->nr; i++)
		if (p->ids[i] == id)
			return true;
	if (p->nr < POOL_MAX) {
		p->ids[p->nr++] = id;
		return true;
	}
	i = rnd_below(fz, POOL_MAX);
	old = p->ids[i];
	p->ids[i] = id;
	forget(fz, old);
	return cancel_id(fz, slot, old);
}

static __u32 pick_id(struct fuzz *fz, int slot)
{
	struct pool *p = &fz->files[fz->file[slot]];
	__u64 r = rnd_below(fz, 100);

	if (r < 65 && p->nr)
		return p->ids[rnd_below(fz, p->nr)];
	if (r < 75)
		return 0;
	if (r < 85)
		return fz->stale[rnd_below(fz, STALE_MAX)];
	/* The slot of a live timer, with another generation. */
	if (r < 92 && p->nr && fz->slot_bits < 32)
		return p->ids[rnd_below(fz, p->nr)] + (1U << fz->slot_bits);
	return (__u32)rnd(fz);
}

/* Timer specs */

static __u32 pick_flags(struct fuzz *fz)
{
	__u64 r = rnd_below(fz, 100);

	if (r < 40)
		return 0;
	if (r < 55)
		return HTW_TIMER_ABSTIME;
	if (r < 65)
		return HTW_TIMER_BOOTTIME;
	if (r < 75)
		return HTW_TIMER_ABSTIME | HTW_TIMER_BOOTTIME;
	if (r < 80)
		return HTW_TIMER_REALTIME;
	if (r < 85)
		return HTW_TIMER_ABSTIME | HTW_TIMER_REALTIME;
	if (r < 88)
		return HTW_TIMER_ABSTIME | HTW_TIMER_REALTIME |
		       HTW_TIMER_CANCEL_ON_SET;
	if (r < 90)
		return HTW_TIMER_CANCEL_ON_SET |
		       (__u32)rnd_below(fz, 2 * HTW_TIMER_CANCEL_ON_SET);
	if (r < 95)
		return 1U << rnd_below(fz, 32);
	return (__u32)rnd(fz);
}

/*
 * The clock a timer of these flags runs on, whether the kernel takes them
 * or not: a relative expiry on the wall clock is a duration, on
 * CLOCK_MONOTONIC.
 */
static clockid_t flags_clock(__u32 flags)
{
	if (flags & HTW_TIMER_REALTIME)
		return flags & HTW_TIMER_ABSTIME ? CLOCK_REALTIME :
						   CLOCK_MONOTONIC;
	return flags & HTW_TIMER_BOOTTIME ? CLOCK_BOOTTIME : CLOCK_MONOTONIC;
}

/* Mostly within 50 ms, so that events keep coming. */
static __u64 pick_expires(struct fuzz *fz, __u32 flags)
{
	clockid_t clock = one_in(fz, 8) ? CLOCK_MONOTONIC : flags_clock(flags);
	__u64 r = rnd_below(fz, 100), now;

	if (r < 3)
		return 0;
	if (r < 5)
		return HTW_TIME_MAX;
	if (r < 7)
		return HTW_TIME_MAX + 1;
	if (r < 9)
		return UINT64_MAX;
	if (r < 11)
		return rnd(fz);
	if (r < 14)
		return (1 + rnd_below(fz, 10)) * NSEC_PER_SEC;
	if (!(flags & HTW_TIMER_ABSTIME))
		return rnd_below(fz, 50 * MS);
	now = htw_now(clock);
	if (r < 30)
		return now - rnd_below(fz, now < NSEC_PER_SEC ? now : NSEC_PER_SEC);
	return now + rnd_below(fz, 50 * MS);
}

static __u64 pick_period(struct fuzz *fz)
{
	__u64 r = rnd_below(fz, 100);

	if (r < 72)
		return 0;
	if (r < 82)
		return fz->min_period;
	if (r < 86)
		return fz->min_period - 1;
	if (r < 89)
		return fz->min_period * (2 + rnd_below(fz, 19));
	if (r < 91)
		return HTW_TIME_MAX;
	if (r < 93)
		return HTW_TIME_MAX + 1;
	if (r < 95)
		return UINT64_MAX;
	if (r < 97)
		return 1;
	return rnd(fz);
}

static void gen_spec(struct fuzz *fz, int slot, struct htw_timer_spec *s,
		     bool with_id)
{
	s->id = with_id ? pick_id(fz, slot) :
			  one_in(fz, 4) ? (__u32)rnd(fz) : 0;
	s->flags = pick_flags(fz);
	s->expires = pick_expires(fz, s->flags);
	s->period = pick_period(fz);
	s->user_data = rnd(fz);
}

enum verdict { V_OK, V_BAD, V_EITHER };

/* Whether the kernel takes @s, as htw.h says: flags, period, expiry. */
static enum verdict spec_verdict(const struct fuzz *fz,
				 const struct htw_timer_spec *s)
{
	__u64 now;

	const __u32 known = HTW_TIMER_ABSTIME | HTW_TIMER_BOOTTIME |
			    HTW_TIMER_REALTIME | HTW_TIMER_CANCEL_ON_SET;
	const __u32 rt_abs = HTW_TIMER_REALTIME | HTW_TIMER_ABSTIME;

	if (s->flags & ~known)
		return V_BAD;
	if ((s->flags & HTW_TIMER_BOOTTIME) && (s->flags & HTW_TIMER_REALTIME))
		return V_BAD;
	if ((s->flags & HTW_TIMER_CANCEL_ON_SET) && (s->flags & rt_abs) != rt_abs)
		return V_BAD;
	if (s->period && (s->period < fz->min_period ||
			  s->period > HTW_TIME_MAX))
		return V_BAD;
	if (s->flags & HTW_TIMER_ABSTIME)
		return s->expires > HTW_TIME_MAX ? V_BAD : V_OK;
	/* The kernel adds its present, which is ours or later. */
	now = htw_now(flags_clock(s->flags));
	if (s->expires > HTW_TIME_MAX - now)
		return V_BAD;
	return s->expires > HTW_TIME_MAX - now - NOW_SLACK ? V_EITHER : V_OK;
}

/*
 * What an arm or a modify of @s may give, once its argument is read; an
 * arm's id is written to memory @id_writable says it can write to.
 */
static __u64 spec_allow(const struct fuzz *fz, const struct htw_timer_spec *s,
			bool arm, bool id_writable)
{
	enum verdict v = spec_verdict(fz, s);
	__u64 allow;

	if (v == V_BAD)
		return ALLOW(EINVAL);
	if (arm)
		allow = ALLOW(ENOSPC) | ALLOW(ENOMEM) |
			(id_writable ? ALLOW_OK : ALLOW(EFAULT));
	else if (s->id)
		allow = ALLOW_OK | ALLOW(ENOENT) | ALLOW(ENOSPC) | ALLOW(ENOMEM);
	else
		allow = ALLOW(ENOENT);	/* slot 0 is never given */
	return v == V_EITHER ? allow | ALLOW(EINVAL) : allow;
}

static __u64 expect_op(const struct fuzz *fz, const struct htw_op *op)
{
	const struct htw_timer_spec *s = &op->spec;

	switch (op->op) {
	case HTW_OP_ARM:
	case HTW_OP_MODIFY:
		return spec_allow(fz, s, op->op == HTW_OP_ARM, true);
	case HTW_OP_CANCEL:
		if (s->flags || s->expires || s->period || s->user_data)
			return ALLOW(EINVAL);
		return s->id ? ALLOW_OK | ALLOW(ENOENT) : ALLOW(ENOENT);
	default:
		return ALLOW(EINVAL);
	}
}

/* Batches */

/* Write one operation of @op_size bytes at @dst; return its results. */
static __u64 gen_op(struct fuzz *fz, int slot, char *dst, size_t op_size,
		    bool tails)
{
	struct htw_op op = { .result = (__s32)rnd(fz) };
	__u64 r = rnd_below(fz, 100);

	if (r < 40)
		op.op = HTW_OP_ARM;
	else if (r < 58)
		op.op = HTW_OP_MODIFY;
	else if (r < 88)
		op.op = HTW_OP_CANCEL;
	else if (r < 92)
		op.op = 0;
	else if (r < 96)
		op.op = HTW_OP_CANCEL + 1;
	else
		op.op = (__u32)rnd(fz);
	if (op.op == HTW_OP_CANCEL && !one_in(fz, 8))
		op.spec.id = pick_id(fz, slot);
	else
		gen_spec(fz, slot, &op.spec, op.op != HTW_OP_ARM);

	memset(dst, 0, op_size);
	memcpy(dst, &op, sizeof(op));
	if (tails && one_in(fz, 2)) {
		dst[sizeof(op) + rnd_below(fz, op_size - sizeof(op))] =
			1 + rnd_below(fz, 255);
		return ALLOW(EINVAL);
	}
	return expect_op(fz, &op);
}

/*
 * Lay out a batch: the operations in region R_BUF (or elsewhere, as a bad
 * pointer), and @b that points to them.  However large the count, at most
 * OPS_MAX operations are written, and a larger batch is put against the
 * guard page, so the kernel never runs what an older batch left there.
 */
static void gen_batch(struct fuzz *fz, int slot, struct batch_plan *bp,
		      struct htw_batch *b)
{
	size_t room = fz->reg_len[R_BUF] - 3, op_size, n;
	enum ptr_kind kind;
	unsigned int i;
	bool tails;
	__u64 r;

	memset(bp, 0, sizeof(*bp));
	r = rnd_below(fz, 100);
	if (r < 8)
		bp->count = 0;
	else if (r < 78)
		bp->count = 1 + rnd_below(fz, OPS_MAX);
	else if (r < 82)
		bp->count = HTW_BATCH_MAX;
	else if (r < 86)
		bp->count = HTW_BATCH_MAX + 1;
	else if (r < 89)
		bp->count = UINT32_MAX;
	else
		bp->count = OPS_MAX + 1 + rnd_below(fz, 200);

	r = rnd_below(fz, 100);
	if (r < 62)
		op_size = sizeof(struct htw_op);
	else if (r < 72)
		op_size = sizeof(struct htw_op) + 8;
	else if (r < 77)
		op_size = HTW_OP_SIZE_VER0 - 1;
	else if (r < 79)
		op_size = 0;
	else if (r < 83)
		op_size = 4096;
	else if (r < 86)
		op_size = 4097;
	else if (r < 88)
		op_size = fz->page + 1;
	else
		op_size = sizeof(struct htw_op) + rnd_below(fz, 256);
	bp->op_size = op_size;
	tails = op_size > sizeof(struct htw_op) && one_in(fz, 3);

	*b = (struct htw_batch){
		.count = bp->count,
		.op_size = bp->op_size,
		.flags = one_in(fz, 40) ? 1U << rnd_below(fz, 32) : 0,
		.reserved = one_in(fz, 40) ? (__u32)rnd(fz) | 1 : 0,
	};

	if (op_size >= HTW_OP_SIZE_VER0 && op_size <= fz->page) {
		n = bp->count < OPS_MAX ? bp->count : OPS_MAX;
		bp->n_fill = n < room / op_size ? n : room / op_size;
	}
	kind = pick_kind(fz, 85);
	if ((kind == P_VALID || kind == P_MISALIGNED) && bp->count > bp->n_fill)
		kind = P_END;
	bp->ops = place(fz, kind, R_BUF, R_RO_BUF, kind == P_STRADDLE ?
			op_size : (size_t)bp->n_fill * op_size);
	b->ops = (uintptr_t)bp->ops.p;
	if (!bp->n_fill)
		return;

	switch (kind) {
	case P_VALID:
	case P_END:
	case P_MISALIGNED:
		for (i = 0; i < bp->n_fill; i++)
			bp->op_allow[i] = gen_op(fz, slot, bp->ops.p + i * op_size,
						 op_size, tails);
		bp->n_room = bp->n_fill;
		break;
	case P_STRADDLE:
		/* It runs only if a non-zero tail byte is seen before the fault. */
		gen_op(fz, slot, fz->scratch, op_size, tails);
		memcpy(bp->ops.p, fz->scratch, bp->ops.readable);
		bp->partial = true;
		break;
	case P_RO:
		gen_op(fz, slot, fz->scratch, op_size, tails);
		fill_user(fz, &bp->ops, R_RO_BUF, fz->scratch, op_size);
		break;
	default:
		break;
	}
}

/* Build the argument of command number @nr in fz->arg: @size bytes. */
static void gen_arg(struct fuzz *fz, int slot, unsigned int nr, size_t size,
		    struct batch_plan *bp, bool noise)
{
	struct htw_timer_spec s;
	struct htw_cancel c;
	struct htw_batch b;
	size_t known;

	/* A batch always points to memory laid out for it. */
	if (nr == NR_BATCH) {
		gen_batch(fz, slot, bp, &b);
		memcpy(fz->arg, &b, sizeof(b));
		known = sizeof(b);
	} else if (noise || nr == 0 || nr >= NR_CMDS) {
		fill_noise(fz, fz->arg, size);
		return;
	} else if (nr == 3) {
		c.id = pick_id(fz, slot);
		c.flags = one_in(fz, 10) ? (__u32)rnd(fz) : 0;
		memcpy(fz->arg, &c, sizeof(c));
		known = sizeof(c);
	} else {
		gen_spec(fz, slot, &s, nr == 2);
		memcpy(fz->arg, &s, sizeof(s));
		known = sizeof(s);
	}
	if (size > known) {
		memset(fz->arg + known, 0, size - known);
		if (one_in(fz, 4))
			fz->arg[known + rnd_below(fz, size - known)] =
				1 + rnd_below(fz, 255);
	}
}

/* The oracle of the ioctls */

static bool is_htw_cmd(unsigned int cmd)
{
	unsigned int nr = _IOC_NR(cmd);

	return _IOC_TYPE(cmd) == HTW_IOC_MAGIC && nr < NR_CMDS &&
	       (cmd & ~IOCSIZE_MASK) == (htw_cmd[nr] & ~IOCSIZE_MASK);
}

/*
 * The ring timers' commands, which a random command may hit: their own
 * tests (htw_ring_test.c) say what each does; here, only that nothing but
 * their documented errors comes of random arguments.
 */
static bool is_ring_cmd(unsigned int cmd)
{
	unsigned int c = cmd & ~IOCSIZE_MASK;

	return c == (HTW_IOC_RING_SETUP & ~IOCSIZE_MASK) ||
	       c == (HTW_IOC_RING_ENTER & ~IOCSIZE_MASK);
}

/*
 * What copying in @usize bytes, @ksize of which the kernel knows, from @u
 * gives, as copy_struct_from_user() does it: it checks the bytes beyond
 * @ksize for zeroes first (a non-zero one is -EINVAL here), then copies.
 */
static __u64 copy_in(const unsigned char *src, size_t ksize, size_t usize,
		     const struct uptr *u)
{
	size_t i, end = usize < u->readable ? usize : u->readable;
	bool nonzero = false;

	for (i = ksize; i < end && !nonzero; i++)
		nonzero = src[i];
	if (usize <= u->readable)
		return nonzero ? ALLOW(EINVAL) : ALLOW_OK;
	/* It faults, unless a non-zero byte before the fault is seen first. */
	return ALLOW(EFAULT) | (nonzero ? ALLOW(EINVAL) : 0);
}

static struct expect expect_batch(const struct fuzz *fz,
				  const struct batch_plan *bp)
{
	struct expect e = { .allow = ALLOW_OK };
	struct htw_batch b;
	long lo, hi;

	memcpy(&b, fz->arg, sizeof(b));
	if (b.flags || b.reserved)
		return fails_with(ALLOW(EINVAL));
	if (b.count > HTW_BATCH_MAX)
		return fails_with(ALLOW(E2BIG));
	if (b.op_size < HTW_OP_SIZE_VER0 || b.op_size > fz->page)
		return fails_with(ALLOW(EINVAL));
	if (!b.count)
		return e;
	/* All it can reach run, but a fatal signal could stop it. */
	lo = b.count < bp->n_room ? b.count : bp->n_room;
	hi = b.count < bp->n_room + bp->partial ? b.count :
						  bp->n_room + bp->partial;
	if (!hi)
		return fails_with(ALLOW(EFAULT) | ALLOW(EINTR));
	e.allow |= ALLOW(EINTR);
	if (!lo)
		e.allow |= ALLOW(EFAULT);
	e.lo = lo ? lo : 1;
	e.hi = hi;
	return e;
}

static struct expect expect_ioctl(const struct fuzz *fz, unsigned int cmd,
				  const struct uptr *u,
				  const struct batch_plan *bp)
{
	unsigned int nr = _IOC_NR(cmd), size = _IOC_SIZE(cmd);
	struct htw_timer_spec s;
	struct htw_cancel c;
	__u64 in;

	/*
	 * A setup made of random bytes is refused, but for the rare one that
	 * is valid (or finds the file set up, or the user's limit reached);
	 * an enter of a file the fuzzer never set up finds no ring, but for
	 * that rare one.
	 */
	if (is_ring_cmd(cmd) &&
	    (cmd & ~IOCSIZE_MASK) == (HTW_IOC_RING_SETUP & ~IOCSIZE_MASK))
		return fails_with(ALLOW_OK | ALLOW(EINVAL) | ALLOW(EFAULT) |
				  ALLOW(EBUSY) | ALLOW(ENOSPC) | ALLOW(ENOMEM));
	if (is_ring_cmd(cmd))
		return fails_with(ALLOW_OK | ALLOW(EINVAL) | ALLOW(EFAULT) |
				  ALLOW(ENXIO));
	if (!is_htw_cmd(cmd))
		return fails_with(ALLOW(ENOTTY));
	if (size < ver0_size[nr])
		return fails_with(ALLOW(EINVAL));
	if (nr == 0)
		return fails_with(u->writable >= size ? ALLOW_OK : ALLOW(EFAULT));
	in = copy_in(fz->arg, known_size[nr], size, u);
	if (!(in & ALLOW_OK))
		return fails_with(in);

	switch (nr) {
	case 1:
	case 2:
		memcpy(&s, fz->arg, sizeof(s));
		return fails_with(spec_allow(fz, &s, nr == 1,
					     u->writable >= sizeof(s.id)));
	case 3:
		memcpy(&c, fz->arg, sizeof(c));
		if (c.flags)
			return fails_with(ALLOW(EINVAL));
		return fails_with(c.id ? ALLOW_OK | ALLOW(ENOENT) : ALLOW(ENOENT));
	default:
		return expect_batch(fz, bp);
	}
}

/* An HTW_IOC_INFO beside the call being checked. */
static bool aux_info(struct fuzz *fz, int slot, struct htw_info *info)
{
	struct expect e = { .allow = ALLOW_OK };
	char saved[sizeof(fz->what)];
	long ret;

	memcpy(saved, fz->what, sizeof(saved));
	snprintf(fz->what, sizeof(fz->what),
		 "slot %d: ioctl(HTW_IOC_INFO %#x) beside: %.180s", slot,
		 (unsigned int)HTW_IOC_INFO, saved);
	ret = ioctl(fz->fd[slot], HTW_IOC_INFO, info);
	if (!check(fz, C_INFO, ret, errno, &e))
		return false;
	memcpy(fz->what, saved, sizeof(saved));
	return true;
}

static bool check_info(struct fuzz *fz, const struct uptr *u, size_t size)
{
	struct htw_info info = {};
	size_t i;

	memcpy(&info, u->p, size < sizeof(info) ? size : sizeof(info));
	if (info.version != HTW_ABI_VERSION || info.event_size != EV_SIZE ||
	    info.batch_max != HTW_BATCH_MAX)
		return fail(fz, "info: version %u, event_size %u, batch_max %u",
			    info.version, info.event_size, info.batch_max);
	/* Module parameters that cannot change while it is loaded. */
	if (info.min_period_ns != fz->min_period ||
	    info.max_timers != fz->max_timers)
		return fail(fz, "info: min_period_ns %llu, max_timers %u changed",
			    (unsigned long long)info.min_period_ns,
			    info.max_timers);
	for (i = sizeof(info); i < size; i++)
		if (u->p[i])
			return fail(fz, "byte %zu of %zu, beyond struct htw_info, is %#x, not 0",
				    i, size, (unsigned char)u->p[i]);
	return true;
}

/* Check the results of the @ran operations of a batch that ran. */
static bool check_ops(struct fuzz *fz, int slot, const struct batch_plan *bp,
		      long ran)
{
	struct expect e = {};
	struct htw_op op;
	char *base;
	long i;

	for (i = 0; i < ran; i++) {
		base = bp->ops.p + i * bp->op_size;
		if (i * bp->op_size + sizeof(op) > bp->ops.readable)
			return fail(fz, "operation %ld ran, but the kernel could not read it",
				    i);
		memcpy(&op, base, sizeof(op));
		if (i < bp->n_room)
			e.allow = bp->op_allow[i];
		else
			e.allow = ALLOW(EINVAL);	/* its non-zero tail */
		fz->st->op_results[op.result < 0 ? bucket(-op.result) : 0]++;
		if (op.result > 0 || op.result <= -64 ||
		    !(e.allow & (op.result ? ALLOW(-op.result) : ALLOW_OK))) {
			char want[160], desc[160];

			expect_str(&e, want, sizeof(want));
			snprintf(desc, sizeof(desc),
				 "op %u id %#x flags %#x expires %llu period %llu",
				 op.op, op.spec.id, op.spec.flags,
				 (unsigned long long)op.spec.expires,
				 (unsigned long long)op.spec.period);
			return fail(fz, "operation %ld of %ld (%s) has result %d; expected %s",
				    i, ran, desc, op.result, want);
		}
		if (op.result)
			continue;
		if (op.op == HTW_OP_ARM) {
			if (!op.spec.id)
				return fail(fz, "operation %ld armed a timer with id 0", i);
			if (!pool_add(fz, slot, op.spec.id))
				return false;
		} else if (op.op == HTW_OP_CANCEL) {
			pool_del(fz, fz->file[slot], op.spec.id);
		}
	}
	return true;
}

/* Make ioctl @cmd with the argument built in fz->arg at @u, and check it. */
static bool do_ioctl(struct fuzz *fz, int slot, unsigned int cmd,
		     enum call_kind kind, const struct uptr *u,
		     const struct batch_plan *bp)
{
	unsigned int nr = _IOC_NR(cmd), size = _IOC_SIZE(cmd);
	bool htw = is_htw_cmd(cmd), counted = false;
	struct htw_info before, after;
	struct htw_cancel c;
	struct expect e;
	long ret;
	__u32 id;
	int err, n;

	n = snprintf(fz->what, sizeof(fz->what),
		     "slot %d: ioctl(cmd %#x (dir %u type %#x nr %u size %u), arg %s %p)",
		     slot, cmd, _IOC_DIR(cmd), _IOC_TYPE(cmd), nr, size,
		     ptr_name[u->kind], u->p);
	if (htw && nr == NR_BATCH && n > 0 && (size_t)n < sizeof(fz->what))
		snprintf(fz->what + n, sizeof(fz->what) - n,
			 " with ops %s %p, count %u, op_size %u",
			 ptr_name[bp->ops.kind], bp->ops.p, bp->count,
			 bp->op_size);
	e = expect_ioctl(fz, cmd, u, bp);

	/* An arm or batch that fails arms nothing: see to it now and then. */
	if (htw && (nr == 1 || nr == NR_BATCH) &&
	    (u->kind == P_RO || one_in(fz, 8))) {
		if (!aux_info(fz, slot, &before))
			return false;
		counted = true;
	}
	ret = ioctl(fz->fd[slot], cmd, u->p);
	err = errno;
	if (!check(fz, kind, ret, err, &e))
		return false;
	if (ret < 0) {
		if (!counted)
			return true;
		if (!aux_info(fz, slot, &after))
			return false;
		if (after.nr_timers != before.nr_timers)
			return fail(fz, "failed with %s, yet nr_timers went from %u to %u",
				    errno_name(err), before.nr_timers,
				    after.nr_timers);
		return true;
	}

	switch (nr) {
	case 0:
		return check_info(fz, u, size);
	case 1:
		memcpy(&id, u->p, sizeof(id));
		if (!id)
			return fail(fz, "armed a timer with id 0");
		return pool_add(fz, slot, id);
	case 3:
		memcpy(&c, fz->arg, sizeof(c));
		pool_del(fz, fz->file[slot], c.id);
		return true;
	case NR_BATCH:
		return check_ops(fz, slot, bp, ret);
	default:
		return true;
	}
}

static unsigned int pick_size(struct fuzz *fz, unsigned int nr)
{
	unsigned int i = nr < NR_CMDS ? nr : rnd_below(fz, NR_CMDS);
	unsigned int ver0 = ver0_size[i], known = known_size[i];

	switch (rnd_below(fz, 13)) {
	case 0:
		return 0;
	case 1:
		return 1;
	case 2:
		return ver0 - 8;
	case 3:
		return ver0 - 1;
	case 4:
		return ver0 + 1;
	case 5:
		return ver0 + 8;
	case 6:
		return known + 8;
	case 7:
		return 4095;
	case 8:
		return 4096;
	case 9:
		return rnd_below(fz, ARG_MAX + 1);
	case 10:
		return ver0;
	default:
		return known;
	}
}

/* 1. Any command number: of htw's type mostly, and a few others. */
static bool do_random_ioctl(struct fuzz *fz, int slot)
{
	unsigned int type, nr, dir, size, cmd;
	struct batch_plan bp;
	struct uptr u;
	__u64 r = rnd_below(fz, 100);

	/* Not 'T', 'X', 'f' or '$': the VFS answers some of those itself. */
	type = r < 80 ? HTW_IOC_MAGIC : r < 90 ? 'Z' : 0xff;
	nr = rnd_below(fz, 8);
	dir = rnd_below(fz, 4);
	size = pick_size(fz, nr);
	cmd = _IOC(dir, type, nr, size);
	gen_arg(fz, slot, nr, size, &bp, one_in(fz, 3));
	u = place(fz, pick_kind(fz, 70), R_ARG, R_RO_ARG, size);
	fill_user(fz, &u, R_RO_ARG, fz->arg, size);
	return do_ioctl(fz, slot, cmd, C_IOCTL, &u, &bp);
}

/* 2. The five commands, with plausible arguments. */
static bool do_command(struct fuzz *fz, int slot)
{
	__u64 r = rnd_below(fz, 100);
	unsigned int nr, size;
	struct batch_plan bp;
	struct uptr u;

	nr = r < 35 ? 1 : r < 50 ? 2 : r < 75 ? 3 : r < 90 ? NR_BATCH : 0;
	size = _IOC_SIZE(htw_cmd[nr]);
	gen_arg(fz, slot, nr, size, &bp, false);
	u = place(fz, pick_kind(fz, 90), R_ARG, R_RO_ARG, size);
	fill_user(fz, &u, R_RO_ARG, fz->arg, size);
	return do_ioctl(fz, slot, htw_cmd[nr], C_INFO + nr, &u, &bp);
}

/* Reads */

static bool check_events(struct fuzz *fz, int slot, const char *p, long n)
{
	__u64 mono = htw_now(CLOCK_MONOTONIC), boot = htw_now(CLOCK_BOOTTIME);
	__u64 real = htw_now(CLOCK_REALTIME);
	const __u32 known = HTW_EVENT_LAST | HTW_EVENT_BOOTTIME |
			    HTW_EVENT_REALTIME | HTW_EVENT_CANCELED;
	struct htw_event ev;
	bool last, canceled, ok;
	__u64 now;
	long i;

	for (i = 0; i < n; i++) {
		memcpy(&ev, p + i * EV_SIZE, sizeof(ev));
		last = ev.flags & HTW_EVENT_LAST;
		canceled = ev.flags & HTW_EVENT_CANCELED;
		now = ev.flags & HTW_EVENT_REALTIME ? real :
		      ev.flags & HTW_EVENT_BOOTTIME ? boot : mono;
		/*
		 * A one-shot timer expires once; none is early, nor future.  A
		 * set of the wall clock cancels with a last event.
		 */
		if (canceled)
			ok = ev.id && !(ev.flags & ~known) && last &&
			     (ev.flags & HTW_EVENT_REALTIME) && ev.fired <= now;
		else
			ok = ev.id && !(ev.flags & ~known) && ev.count &&
			     (!last || ev.count == 1) &&
			     ev.fired >= ev.expires && ev.fired <= now;
		if (!ok) {
			char desc[160];

			snprintf(desc, sizeof(desc),
				 "id %#x flags %#x count %llu expires %llu fired %llu",
				 ev.id, ev.flags, (unsigned long long)ev.count,
				 (unsigned long long)ev.expires,
				 (unsigned long long)ev.fired);
			return fail(fz, "event %ld of %ld (%s), read at %llu",
				    i, n, desc, (unsigned long long)now);
		}
		if (last)
			pool_del(fz, fz->file[slot], ev.id);
		else if (!pool_add(fz, slot, ev.id))
			return false;
	}
	fz->st->events += n;
	return true;
}

static size_t pick_read_len(struct fuzz *fz)
{
	__u64 r = rnd_below(fz, 100);

	if (r < 3)
		return 0;
	if (r < 6)
		return 1;
	if (r < 9)
		return EV_SIZE - 1;
	if (r < 60)
		return EV_SIZE * (1 + rnd_below(fz, EVENTS_MAX));
	if (r < 75)
		return EV_SIZE * (1 + rnd_below(fz, EVENTS_MAX)) + 1 +
		       rnd_below(fz, EV_SIZE - 1);
	if (r < 85)
		return EV_SIZE * EVENTS_MAX;
	return rnd_below(fz, EV_SIZE * (EVENTS_MAX + 1));
}

/* 3. read() of a random length into a random buffer. */
static bool do_read(struct fuzz *fz, int slot)
{
	size_t len = pick_read_len(fz), fit;
	struct htw_info before, after;
	struct expect e = {};
	bool counted = false;
	struct uptr u;
	long ret;
	int err;

	u = place(fz, pick_kind(fz, 85), R_BUF, R_RO_BUF, len);
	snprintf(fz->what, sizeof(fz->what), "slot %d: read(%zu bytes into %s %p)",
		 slot, len, ptr_name[u.kind], u.p);
	if (len < EV_SIZE) {
		e.allow = ALLOW(EINVAL);
		/* access_ok() may come first. */
		if (u.kind == P_KERNEL)
			e.allow |= ALLOW(EFAULT);
	} else {
		fit = (len < u.writable ? len : u.writable) / EV_SIZE;
		e.allow = ALLOW(EAGAIN) | ALLOW(EINTR) | ALLOW(ENOMEM);
		if (fit) {
			e.allow |= ALLOW_OK;
			e.lo = EV_SIZE;
			e.hi = fit * EV_SIZE;
		} else {
			e.allow |= ALLOW(EFAULT);
			/* The events stay queued: see to it now and then. */
			if (one_in(fz, 2)) {
				if (!aux_info(fz, slot, &before))
					return false;
				counted = true;
			}
		}
	}
	ret = read(fz->fd[slot], u.p, len);
	err = errno;
	if (!check(fz, C_READ, ret, err, &e))
		return false;
	if (ret > 0) {
		if (ret % EV_SIZE)
			return fail(fz, "returned %ld, not whole events", ret);
		return check_events(fz, slot, u.p, ret / EV_SIZE);
	}
	if (counted && err == EFAULT) {
		if (!aux_info(fz, slot, &after))
			return false;
		/* Events only come meanwhile; none may have gone. */
		if (after.nr_queued < before.nr_queued)
			return fail(fz, "EFAULT, yet nr_queued went from %u to %u",
				    before.nr_queued, after.nr_queued);
	}
	return true;
}

/* 4. poll() of one file or all, without waiting. */
static bool do_poll(struct fuzz *fz, int slot)
{
	static const short more[] = {
		POLLRDNORM, POLLOUT, POLLPRI, POLLWRNORM, POLLRDBAND, POLLWRBAND,
	};
	int n = one_in(fz, 2) ? 1 : NR_SLOTS, ready = 0, ret, err, i;
	struct expect e = { .allow = ALLOW_OK, .hi = n };
	struct pollfd pfd[NR_SLOTS];
	short ask, may;
	unsigned int j;

	for (i = 0; i < n; i++) {
		ask = POLLIN;
		for (j = 0; j < ARRAY_SIZE(more); j++)
			if (one_in(fz, 2))
				ask |= more[j];
		pfd[i] = (struct pollfd){
			.fd = n == 1 ? fz->fd[slot] : fz->fd[i],
			.events = ask,
		};
	}
	snprintf(fz->what, sizeof(fz->what), "poll(%d fds from slot %d, timeout 0)",
		 n, n == 1 ? slot : 0);
	ret = poll(pfd, n, 0);
	err = errno;
	if (!check(fz, C_POLL, ret, err, &e))
		return false;
	for (i = 0; i < n; i++) {
		may = pfd[i].events & (POLLIN | POLLRDNORM);
		if ((pfd[i].revents & ~may) ||
		    ((pfd[i].events & POLLRDNORM) &&
		     !(pfd[i].revents & POLLIN) != !(pfd[i].revents & POLLRDNORM)))
			return fail(fz, "fd %d asked for %#x and got revents %#x",
				    pfd[i].fd, pfd[i].events, pfd[i].revents);
		ready += pfd[i].revents != 0;
	}
	if (ready != ret)
		return fail(fz, "returned %d, but %d fds have revents", ret, ready);
	if (n > 1 || !(pfd[0].revents & POLLIN) || one_in(fz, 2))
		return true;

	/*
	 * Nobody else reads this file now: what poll() saw is there to read,
	 * but for a wake that found nothing (due timers cancelled since, or
	 * far ones that only came closer): EAGAIN, as after a spurious wake.
	 */
	snprintf(fz->what, sizeof(fz->what), "slot %d: read(%zu bytes) after POLLIN",
		 slot, EVENTS_MAX * EV_SIZE);
	e = (struct expect){
		.allow = ALLOW_OK | ALLOW(EAGAIN),
		.lo = EV_SIZE,
		.hi = EVENTS_MAX * EV_SIZE,
	};
	ret = read(fz->fd[slot], fz->reg[R_BUF], EVENTS_MAX * EV_SIZE);
	err = errno;
	if (!check(fz, C_READ, ret, err, &e))
		return false;
	if (ret < 0)
		return true;
	if (ret % EV_SIZE)
		return fail(fz, "returned %d, not whole events", ret);
	return check_events(fz, slot, fz->reg[R_BUF], ret / EV_SIZE);
}

/* 5. Descriptors */

static bool close_slot(struct fuzz *fz, int slot)
{
	struct expect e = { .allow = ALLOW_OK };
	struct pool *p = &fz->files[fz->file[slot]];
	unsigned int i;
	int ret, err;

	snprintf(fz->what, sizeof(fz->what), "slot %d: close(%d)", slot,
		 fz->fd[slot]);
	ret = close(fz->fd[slot]);
	err = errno;
	fz->fd[slot] = -1;
	fz->file[slot] = -1;
	/* The last descriptor of a file takes its timers with it. */
	if (--p->refs == 0) {
		for (i = 0; i < p->nr; i++)
			forget(fz, p->ids[i]);
		p->nr = 0;
	}
	return check(fz, C_CLOSE, ret, err, &e);
}

static bool open_slot(struct fuzz *fz, int slot)
{
	struct expect e = { .allow = ALLOW_OK | ALLOW(ENOMEM), .hi = INT_MAX };
	int fd, err, f = 0;

	snprintf(fz->what, sizeof(fz->what),
		 "slot %d: open(%s, O_RDWR | O_NONBLOCK | O_CLOEXEC)", slot,
		 HTW_DEV);
	fd = open(HTW_DEV, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	err = errno;
	if (!check(fz, C_OPEN, fd, err, &e))
		return false;
	if (fd < 0)
		return true;
	/* There is one free: this slot was closed. */
	while (fz->files[f].refs)
		f++;
	fz->files[f] = (struct pool){ .refs = 1 };
	fz->fd[slot] = fd;
	fz->file[slot] = f;
	return true;
}

/* dup() a slot into another, closing what that one held; the file is shared. */
static bool do_dup(struct fuzz *fz, int src)
{
	int dst = (src + 1 + rnd_below(fz, NR_SLOTS - 1)) % NR_SLOTS;
	struct expect e = { .allow = ALLOW_OK, .hi = INT_MAX };
	int fd, err;

	snprintf(fz->what, sizeof(fz->what),
		 "slot %d: fcntl(%d, F_DUPFD_CLOEXEC) into slot %d", src,
		 fz->fd[src], dst);
	fd = fcntl(fz->fd[src], F_DUPFD_CLOEXEC, 0);
	err = errno;
	if (!check(fz, C_DUP, fd, err, &e))
		return false;
	if (fz->fd[dst] >= 0 && !close_slot(fz, dst))
		return false;
	fz->fd[dst] = fd;
	fz->file[dst] = fz->file[src];
	fz->files[fz->file[src]].refs++;
	return true;
}

static bool do_reopen(struct fuzz *fz, int slot)
{
	if (!close_slot(fz, slot))
		return false;
	/* Leave it closed now and then: poll() gets an fd of -1. */
	return one_in(fz, 4) || open_slot(fz, slot);
}

/* 7. What the device does not do: it has no write, and is a stream. */
static bool do_misc(struct fuzz *fz, int slot)
{
	struct expect e = {};
	enum call_kind kind;
	unsigned int whence;
	struct uptr u;
	size_t len;
	long ret;
	off_t off;
	int err;

	switch (rnd_below(fz, 4)) {
	case 0:
		len = rnd_below(fz, 3 * EV_SIZE);
		u = place(fz, pick_kind(fz, 80), R_BUF, R_RO_BUF, len);
		snprintf(fz->what, sizeof(fz->what), "slot %d: write(%zu bytes from %s %p)",
			 slot, len, ptr_name[u.kind], u.p);
		/* No write method: vfs_write() says so before access_ok(). */
		e.allow = ALLOW(EINVAL);
		kind = C_WRITE;
		ret = write(fz->fd[slot], u.p, len);
		break;
	case 1:
		off = (off_t)rnd(fz);
		whence = one_in(fz, 8) ? rnd_below(fz, 16) : rnd_below(fz, 3);
		snprintf(fz->what, sizeof(fz->what), "slot %d: lseek(%lld, %u)",
			 slot, (long long)off, whence);
		/* stream_open() took FMODE_LSEEK; a whence past SEEK_MAX comes first. */
		e.allow = ALLOW(whence <= SEEK_HOLE ? ESPIPE : EINVAL);
		kind = C_LSEEK;
		ret = lseek(fz->fd[slot], off, whence);
		break;
	default:
		len = EV_SIZE * (1 + rnd_below(fz, 4));
		off = one_in(fz, 8) ? -1 - (off_t)rnd_below(fz, 100) :
				      (off_t)rnd_below(fz, 1 << 20);
		/* And FMODE_PREAD and FMODE_PWRITE; a negative offset comes first. */
		e.allow = ALLOW(off < 0 ? EINVAL : ESPIPE);
		if (one_in(fz, 2)) {
			snprintf(fz->what, sizeof(fz->what), "slot %d: pread(%zu bytes at %lld)",
				 slot, len, (long long)off);
			kind = C_PREAD;
			ret = pread(fz->fd[slot], fz->reg[R_BUF], len, off);
		} else {
			snprintf(fz->what, sizeof(fz->what), "slot %d: pwrite(%zu bytes at %lld)",
				 slot, len, (long long)off);
			kind = C_PWRITE;
			ret = pwrite(fz->fd[slot], fz->reg[R_BUF], len, off);
		}
		break;
	}
	err = errno;
	return check(fz, kind, ret, err, &e);
}

static bool step(struct fuzz *fz);

/* 6. A child: the same calls on the files it inherits, with its own seed. */
static int child_main(struct fuzz *fz, __u64 seed, pid_t parent)
{
	struct pool *p;
	unsigned int i;
	int s;

	/* Die with the test rather than outlive it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		return 1;
	fz->child = true;
	fz->seed = seed;
	for (fz->step = 0; fz->step < CHILD_STEPS; fz->step++)
		if (!step(fz))
			goto failed;
	/* The files it shares stay open: cancel the timers it knows of. */
	for (s = 0; s < NR_SLOTS; s++) {
		if (fz->fd[s] < 0)
			continue;
		p = &fz->files[fz->file[s]];
		for (i = 0; i < p->nr; i++)
			if (!cancel_id(fz, s, p->ids[i]))
				goto failed;
		p->nr = 0;
	}
	return 0;

failed:
	fprintf(stderr, "# child of seed %#llx failed: %s\n",
		(unsigned long long)seed, fz->err);
	return 1;
}

static bool do_fork(struct fuzz *fz)
{
	__u64 seed = rnd(fz) | 1;
	pid_t parent = getpid(), pid, w;
	int status;

	snprintf(fz->what, sizeof(fz->what), "fork() of child %u, seed %#llx",
		 fz->children + 1, (unsigned long long)seed);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	/* Out of processes: nothing to do with htw. */
	if (pid < 0)
		return true;
	if (!pid)
		_exit(child_main(fz, seed, parent));
	do {
		w = waitpid(pid, &status, 0);
	} while (w < 0 && errno == EINTR);
	fz->children++;
	fz->st->calls[C_FORK]++;
	fz->st->children++;
	if (w != pid)
		return fail(fz, "waitpid(): %s", strerror(errno));
	if (WIFSIGNALED(status))
		return fail(fz, "the child was killed by signal %d",
			    WTERMSIG(status));
	if (WEXITSTATUS(status))
		return fail(fz, "the child failed (see its message above)");
	return true;
}

static int pick_open(struct fuzz *fz)
{
	int s = rnd_below(fz, NR_SLOTS), i;

	for (i = 0; i < NR_SLOTS; i++, s = (s + 1) % NR_SLOTS)
		if (fz->fd[s] >= 0)
			return s;
	return -1;
}

static bool step(struct fuzz *fz)
{
	int closed, slot;
	__u64 r;

	reseed(fz);
	closed = rnd_below(fz, NR_SLOTS);
	if (fz->fd[closed] < 0 && one_in(fz, 4))
		return open_slot(fz, closed);
	slot = pick_open(fz);
	if (slot < 0)
		return open_slot(fz, closed);
	if (!fz->child && fz->children < MAX_CHILDREN && one_in(fz, FORK_ODDS))
		return do_fork(fz);

	r = rnd_below(fz, 1000);
	if (r < 250)
		return do_random_ioctl(fz, slot);
	if (r < 700)
		return do_command(fz, slot);
	if (r < 870)
		return do_read(fz, slot);
	if (r < 955)
		return do_poll(fz, slot);
	if (r < 965)
		return do_dup(fz, slot);
	if (r < 975)
		return do_reopen(fz, slot);
	return do_misc(fz, slot);
}

static void log_stats(struct __test_metadata *_metadata,
		      const struct fuzz *fz)
{
	const struct stats *st = fz->st;
	int i;

	TH_LOG("%llu events read, %llu children",
	       (unsigned long long)st->events,
	       (unsigned long long)st->children);
	for (i = 0; i < NR_CALL_KINDS; i++)
		if (st->calls[i])
			TH_LOG("calls: %-18s %10llu", call_name[i],
			       (unsigned long long)st->calls[i]);
	for (i = 0; i < NR_BUCKETS; i++)
		if (st->errnos[i])
			TH_LOG("returned: %-10s %10llu", i ? errno_name(i) : "success",
			       (unsigned long long)st->errnos[i]);
	for (i = 0; i < NR_BUCKETS; i++)
		if (st->op_results[i])
			TH_LOG("batch results: %-10s %10llu",
			       i ? errno_name(i) : "0",
			       (unsigned long long)st->op_results[i]);
}

FIXTURE(htw) {
	struct fuzz *fz;
};

FIXTURE_SETUP(htw)
{
	struct fuzz *fz;
	size_t page = getpagesize(), big = page > 4097 ? page : 4097;
	char *p;
	int r, s;

	fz = calloc(1, sizeof(*fz));
	ASSERT_NE(NULL, fz);
	self->fz = fz;
	fz->page = page;
	for (s = 0; s < NR_SLOTS; s++) {
		fz->fd[s] = -1;
		fz->file[s] = -1;
	}
	fz->reg_len[R_ARG] = (ARG_MAX + 1 + 3 + page - 1) / page * page;
	fz->reg_len[R_BUF] = (OPS_MAX * big + 3 + page - 1) / page * page;
	fz->reg_len[R_RO_ARG] = page;
	fz->reg_len[R_RO_BUF] = page;

	/* Each region between PROT_NONE pages. */
	fz->map_len = (NR_REGIONS + 1) * page;
	for (r = 0; r < NR_REGIONS; r++)
		fz->map_len += fz->reg_len[r];
	fz->map = mmap(NULL, fz->map_len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, fz->map);
	p = fz->map + page;
	for (r = 0; r < NR_REGIONS; r++) {
		fz->reg[r] = p;
		ASSERT_EQ(0, mprotect(p, fz->reg_len[r],
				      r == R_RO_ARG || r == R_RO_BUF ?
				      PROT_READ : PROT_READ | PROT_WRITE));
		p += fz->reg_len[r] + page;
	}
	fz->scratch = calloc(1, page);
	ASSERT_NE(NULL, fz->scratch);
	fz->st = mmap(NULL, sizeof(*fz->st), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, fz->st);
}

FIXTURE_TEARDOWN(htw)
{
	struct fuzz *fz = self->fz;
	int s;

	if (!fz)
		return;
	for (s = 0; s < NR_SLOTS; s++)
		if (fz->fd[s] >= 0)
			close(fz->fd[s]);
	if (fz->st && fz->st != MAP_FAILED)
		munmap(fz->st, sizeof(*fz->st));
	if (fz->map && fz->map != MAP_FAILED)
		munmap(fz->map, fz->map_len);
	free(fz->scratch);
	free(fz);
}

/*
 * Random calls, each checked against htw.h; then, every file closed, the
 * user's count of timers (which every allocation of htw for it is charged
 * to) is back where it was.
 */
TEST_F_TIMEOUT(htw, abi_fuzz, 1200)
{
	const char *full = getenv("HTW_FULL");
	struct fuzz *fz = self->fz;
	__u64 calls, start, seconds;
	long slab_before, slab_after;
	struct htw_info info;
	__u64 baseline;
	bool ok = true;
	int fd, s;

	fz->seed = htw_env_u64("HTW_FUZZ_SEED",
			       htw_now(CLOCK_MONOTONIC) ^ ((__u64)getpid() << 32));
	reseed(fz);
	calls = htw_env_u64("HTW_FUZZ_CALLS",
			    full && !strcmp(full, "1") ? 1000000 : 50000);
	seconds = htw_env_u64("HTW_FUZZ_SECONDS",
			      full && !strcmp(full, "1") ? 150 : 60);
	TH_LOG("seed %#llx (HTW_FUZZ_SEED=%#llx repeats it), %llu calls, at most %llu s",
	       (unsigned long long)fz->seed, (unsigned long long)fz->seed,
	       (unsigned long long)calls, (unsigned long long)seconds);

	/* What this user holds before the fuzzer opens anything. */
	slab_before = htw_meminfo("Slab") / 1024;
	fd = open(HTW_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, htw_get_info(fd, &info));
	ASSERT_EQ(0, close(fd));
	baseline = info.user_bytes;
	fz->min_period = info.min_period_ns;
	fz->max_timers = info.max_timers;
	fz->slot_bits = 32 - __builtin_clz(info.max_timers);

	start = htw_now(CLOCK_MONOTONIC);
	for (s = 0; s < NR_SLOTS && ok; s++)
		ok = open_slot(fz, s);
	for (fz->step = 0; fz->step < calls && ok; fz->step++) {
		ok = step(fz);
		if (fz->step % 1024 == 0 &&
		    htw_now(CLOCK_MONOTONIC) - start > seconds * NSEC_PER_SEC) {
			fz->step++;
			break;
		}
	}
	for (s = 0; s < NR_SLOTS && ok; s++)
		if (fz->fd[s] >= 0)
			ok = close_slot(fz, s);
	TH_LOG("%llu steps in %llu ms", (unsigned long long)fz->step,
	       (unsigned long long)((htw_now(CLOCK_MONOTONIC) - start) / MS));
	log_stats(_metadata, fz);
	ASSERT_TRUE(ok) TH_LOG("seed %#llx, %s", (unsigned long long)fz->seed,
			       fz->err);

	/* Every child was waited for. */
	ASSERT_EQ(-1, waitpid(-1, NULL, WNOHANG));
	ASSERT_EQ(ECHILD, errno);

	fd = open(HTW_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, htw_get_info(fd, &info));
	EXPECT_EQ(0, close(fd));
	slab_after = htw_meminfo("Slab") / 1024;
	TH_LOG("Slab: %ld kB before, %ld kB after (for information)",
	       slab_before, slab_after);
	EXPECT_EQ(baseline, info.user_bytes);
	EXPECT_EQ(0, info.nr_timers);
	EXPECT_EQ(0, info.nr_queued);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
