// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/htw under concurrent use, with an exact oracle.
 *
 * Worker processes, as many as the CPUs and at least two, each run rounds
 * on a file of their own: two owner threads arm, modify and cancel timers
 * (alone and in batches) while reader threads read the same file (blocking
 * reads, or poll(), epoll edge- and level-triggered readers on a
 * non-blocking file, by turns).  Beside them a churn thread opens files,
 * arms hundreds of timers in them, forks a child that reads them through
 * a dup()ed descriptor, and closes them while they expire.
 *
 * Every schedule (an arm, or a modify's new expiry and period) gets a
 * record of its own, named by the user_data of its timer.  Of each record:
 *
 * - a one-shot timer's event comes exactly once if nothing cancelled or
 *   modified it, at most once otherwise, with its expiry, never before it
 *   by the wheel's clock nor by clock_gettime();
 * - a periodic timer's events are on its grid (expires + n * period), and
 *   their counts add up to every expiry up to the latest one read;
 * - no event of a schedule comes to a read() that began after the cancel
 *   or modify that ended it returned.
 *
 * The last is checked with a sequence number: an owner takes one when its
 * cancel or modify returns, a reader takes one before each read(), and an
 * event of a schedule ended at a sequence number at or below the reader's
 * is an error.
 *
 * It runs 5 s in "make check" and 60 s in "make check-full" (HTW_FULL=1),
 * or HTW_SMP_SECONDS.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define MS		NSEC_PER_MSEC
#define NR_OWNERS	2
#define NR_SLOTS	64
#define MAX_SCHEDS	32768
/* Records only finish_owner() may take, for the timers it adds. */
#define FINISH_SCHEDS	2
#define ROUND_NS	(2000 * MS)
/* How long a round waits for its last events: only a broken device takes it. */
#define DRAIN_NS	(HTW_WAIT_MS * MS)
#define CHURN_TIMERS	200
#define STOP_DATA	(~0ULL)

enum reader_kind { READ_BLOCKING, READ_POLL, READ_EPOLL_ET, READ_EPOLL_LT,
		   NR_READER_KINDS };

/* What every worker counts, in memory shared with the test. */
struct counts {
	atomic_ullong arms, modifies, cancels, batches, enoent;
	atomic_ullong events[NR_READER_KINDS];
	atomic_ullong oneshots_checked, periodic_expiries;
	atomic_ullong forks, closes, rounds, max_late_ns;
	atomic_ullong errors;
	char error[256];
};

/* One schedule of one timer. */
struct sched {
	__u64 lo, hi;		/* its first expiry lies in [lo, hi] */
	__u64 delay;		/* a relative expiry, 0 for an absolute one */
	__u64 period;
	atomic_uint id;	/* 0 until its ARM or MODIFY returned */
	bool boottime;
	atomic_ullong ended;	/* sequence number of its end, 0 while live */
	atomic_uint delivered;
	atomic_ullong counted;	/* periodic: expiries its events counted */
	atomic_ullong latest;	/* periodic: latest expiry read */
};

struct owner {
	struct cell *cell;
	unsigned int index;
	__u64 rng;
	struct sched *scheds;
	unsigned int nr_scheds;
	int slot[NR_SLOTS];	/* record of each slot's timer, or -1 */
};

struct cell {
	int fd;
	int worker;
	bool nonblocking;
	__u64 min_period;
	__u64 stop_at;
	atomic_bool stop_owners, stop_readers;
	atomic_int readers_running;
	struct owner owners[NR_OWNERS];
	struct counts *counts;
};

static atomic_ullong seq = 1;

/* Record an error (the first one's text); return false. */
static bool fail(struct counts *c, const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&c->errors, 1) == 0) {
		va_start(ap, fmt);
		vsnprintf(c->error, sizeof(c->error), fmt, ap);
		va_end(ap);
	}
	return false;
}

/*
 * The sequence number after a cancel or modify returned: any read() that
 * takes its own sequence number after this one began after the return.
 */
static __u64 seq_after(void)
{
	return atomic_fetch_add(&seq, 1) + 1;
}

static void note_max(atomic_ullong *max, __u64 v)
{
	__u64 old = atomic_load(max);

	while (v > old && !atomic_compare_exchange_weak(max, &old, v))
		;
}

static __u64 user_data_of(struct owner *o, unsigned int rec)
{
	return (__u64)o->index << 32 | rec;
}

/* Check one event against its schedule; @begun: the reader's sequence. */
static bool check_event(struct cell *cell, const struct htw_event *ev,
			__u64 begun, enum reader_kind kind)
{
	struct counts *c = cell->counts;
	unsigned int oi = ev->user_data >> 32, ri = (__u32)ev->user_data;
	bool boottime = ev->flags & HTW_EVENT_BOOTTIME;
	struct sched *s;
	__u64 ended, now, n;

	if (ev->user_data == STOP_DATA)
		return true;
	atomic_fetch_add(&c->events[kind], 1);
	if (oi >= NR_OWNERS || ri >= cell->owners[oi].nr_scheds)
		return fail(c, "event of unknown user_data %#llx",
			    (unsigned long long)ev->user_data);
	s = &cell->owners[oi].scheds[ri];
	now = htw_now(boottime ? CLOCK_BOOTTIME : CLOCK_MONOTONIC);
	/* An event may come before the ioctl that armed it returned. */
	while (!atomic_load(&s->id) && !atomic_load(&s->ended) && !c->errors)
		sched_yield();
	ended = atomic_load(&s->ended);
	if (ended && ended <= begun)
		return fail(c, "event of id %u after its cancel or modify returned",
			    ev->id);
	if (ev->id != atomic_load(&s->id) || boottime != s->boottime)
		return fail(c, "event id %u flags %#x, schedule has id %u",
			    ev->id, ev->flags, atomic_load(&s->id));
	if (ev->fired < ev->expires || now < ev->expires)
		return fail(c, "id %u early: expires %llu fired %llu now %llu",
			    ev->id, (unsigned long long)ev->expires,
			    (unsigned long long)ev->fired,
			    (unsigned long long)now);
	note_max(&c->max_late_ns, ev->fired - ev->expires);
	if (!s->period) {
		if (ev->expires < s->lo || ev->expires > s->hi ||
		    ev->count != 1 || !(ev->flags & HTW_EVENT_LAST))
			return fail(c, "one-shot %u: %llu not in [%llu, %llu], count %llu %#x",
				    ev->id, (unsigned long long)ev->expires,
				    (unsigned long long)s->lo,
				    (unsigned long long)s->hi,
				    (unsigned long long)ev->count, ev->flags);
		if (atomic_fetch_add(&s->delivered, 1))
			return fail(c, "one-shot id %u delivered twice", ev->id);
		return true;
	}
	n = (ev->expires - s->lo) / s->period;
	if (ev->expires < s->lo || ev->expires != s->lo + n * s->period ||
	    !ev->count || (ev->flags & HTW_EVENT_LAST))
		return fail(c, "periodic id %u: %llu off its grid %llu + n * %llu, count %llu",
			    ev->id, (unsigned long long)ev->expires,
			    (unsigned long long)s->lo,
			    (unsigned long long)s->period,
			    (unsigned long long)ev->count);
	atomic_fetch_add(&s->counted, ev->count);
	note_max(&s->latest, ev->expires);
	atomic_fetch_add(&c->periodic_expiries, ev->count);
	return true;
}

/* Read what is queued; return the events read, 0 on EAGAIN, or -errno. */
static long read_some(struct cell *cell, enum reader_kind kind, bool *stop)
{
	struct htw_event ev[16];
	__u64 begun = atomic_load(&seq);
	long n, i;

	n = htw_read_events(cell->fd, ev, 16);
	if (n == -EAGAIN || n == -EINTR)
		return 0;
	if (n <= 0) {
		fail(cell->counts, "read: %ld", n);
		return n ? n : -EIO;
	}
	for (i = 0; i < n; i++) {
		if (ev[i].user_data == STOP_DATA)
			*stop = true;
		check_event(cell, &ev[i], begun, kind);
	}
	return n;
}

struct reader {
	struct cell *cell;
	enum reader_kind kind;
	pthread_t thread;
};

static void *reader_fn(void *arg)
{
	struct reader *r = arg;
	struct cell *cell = r->cell;
	struct pollfd pfd = { .fd = cell->fd, .events = POLLIN };
	struct epoll_event ee = { .events = EPOLLIN };
	bool stop = false;
	int ep = -1;
	long n;

	if (r->kind == READ_EPOLL_ET || r->kind == READ_EPOLL_LT) {
		ep = epoll_create1(EPOLL_CLOEXEC);
		if (r->kind == READ_EPOLL_ET)
			ee.events |= EPOLLET;
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, cell->fd, &ee)) {
			fail(cell->counts, "epoll: %d", errno);
			goto out;
		}
	}
	while (!stop) {
		switch (r->kind) {
		case READ_BLOCKING:
			/* Only a STOP event ends it: see stop_readers(). */
			if (read_some(cell, r->kind, &stop) < 0)
				goto out;
			continue;
		case READ_POLL:
			n = poll(&pfd, 1, 20);
			break;
		default:
			n = epoll_wait(ep, &ee, 1, 20);
			break;
		}
		if (atomic_load(&cell->stop_readers))
			break;
		if (n <= 0)
			continue;
		/* Edge-triggered: drain until EAGAIN, or lose the edge. */
		do {
			n = read_some(cell, r->kind, &stop);
		} while (n > 0 && r->kind == READ_EPOLL_ET);
		if (n < 0)
			goto out;
	}
out:
	if (ep >= 0)
		close(ep);
	atomic_fetch_sub(&cell->readers_running, 1);
	return NULL;
}

/* Which schedule new_sched() makes: as the dice say, or one of a kind. */
enum sched_kind { SCHED_ANY, SCHED_ONESHOT, SCHED_PERIODIC };

/* A new schedule record for a timer owner @o is about to (re)arm. */
static int new_sched(struct owner *o, __u64 *expires, __u32 *flags,
		     __u64 *period, enum sched_kind kind)
{
	struct sched *s;
	__u64 now;
	bool periodic = htw_rand_below(&o->rng, 4) == 0;
	bool boottime = htw_rand_below(&o->rng, 4) == 0;
	bool relative;
	__u64 delay;

	/* The dice are thrown as before: a seed still replays a run. */
	if (kind != SCHED_ANY)
		periodic = kind == SCHED_PERIODIC;
	relative = !periodic && htw_rand_below(&o->rng, 2);
	delay = htw_rand_below(&o->rng, 30 * MS);
	if (o->nr_scheds >= MAX_SCHEDS ||
	    (kind == SCHED_ANY && o->nr_scheds >= MAX_SCHEDS - FINISH_SCHEDS))
		return -1;
	s = &o->scheds[o->nr_scheds];
	memset(s, 0, sizeof(*s));
	now = htw_now(boottime ? CLOCK_BOOTTIME : CLOCK_MONOTONIC);
	s->boottime = boottime;
	s->period = periodic ? o->cell->min_period * (1 + htw_rand_below(&o->rng, 5)) : 0;
	*flags = boottime ? HTW_TIMER_BOOTTIME : 0;
	*period = s->period;
	if (relative) {
		/* Its expiry is fixed in the ioctl: hi is set when it returns. */
		s->lo = now + delay;
		s->hi = ~0ULL;
		s->delay = delay;
		*expires = delay;
	} else {
		s->lo = now + delay;
		s->hi = s->lo;
		*expires = s->lo;
		*flags |= HTW_TIMER_ABSTIME;
	}
	return o->nr_scheds++;
}

static void end_sched(struct owner *o, int rec, __u64 at)
{
	if (rec >= 0)
		atomic_store(&o->scheds[rec].ended, at);
}

/* After an (re)arm returned: a relative expiry's latest possible value. */
static void armed_sched(struct owner *o, int rec, __u32 id)
{
	struct sched *s = &o->scheds[rec];

	if (s->delay)
		s->hi = htw_now(s->boottime ? CLOCK_BOOTTIME : CLOCK_MONOTONIC) +
			s->delay;
	atomic_store(&s->id, id);
}

/*
 * May @o touch slot @i's timer?  A one-shot timer past its expiry may have
 * been read, and its id released and given to a timer of the other owner:
 * only its event tells.  Return whether the slot holds a live timer.
 */
static bool slot_live(struct owner *o, int i)
{
	struct sched *s;

	if (o->slot[i] < 0)
		return false;
	s = &o->scheds[o->slot[i]];
	if (s->period)
		return true;
	if (atomic_load(&s->delivered)) {
		o->slot[i] = -1;
		return false;
	}
	return htw_now(s->boottime ? CLOCK_BOOTTIME : CLOCK_MONOTONIC) + MS < s->lo;
}

/*
 * A cancel or modify of a one-shot timer found no timer: it must have
 * expired meanwhile (the ioctl was late), and its event been read.
 */
static bool gone_oneshot(struct owner *o, int rec)
{
	struct sched *s = &o->scheds[rec];

	if (s->period ||
	    htw_now(s->boottime ? CLOCK_BOOTTIME : CLOCK_MONOTONIC) < s->lo)
		return fail(o->cell->counts, "id %u not found before its expiry",
			    s->id);
	atomic_fetch_add(&o->cell->counts->enoent, 1);
	return true;
}

static bool owner_step(struct owner *o)
{
	struct counts *c = o->cell->counts;
	int i = htw_rand_below(&o->rng, NR_SLOTS), rec, old = o->slot[i];
	struct htw_timer_spec spec = { 0 };
	int fd = o->cell->fd, ret;

	if (old < 0) {
		rec = new_sched(o, &spec.expires, &spec.flags, &spec.period,
				SCHED_ANY);
		if (rec < 0)
			return true;
		spec.user_data = user_data_of(o, rec);
		if (ioctl(fd, HTW_IOC_ARM, &spec))
			return fail(c, "arm: %d", errno);
		armed_sched(o, rec, spec.id);
		o->slot[i] = rec;
		atomic_fetch_add(&c->arms, 1);
		return true;
	}
	if (!slot_live(o, i))
		return true;
	spec.id = o->scheds[old].id;
	if (htw_rand_below(&o->rng, 3) == 0) {
		ret = htw_cancel(fd, spec.id);
		if (ret == -ENOENT)
			return gone_oneshot(o, old);
		if (ret)
			return fail(c, "cancel of id %u: %d", spec.id, ret);
		end_sched(o, old, seq_after());
		o->slot[i] = -1;
		atomic_fetch_add(&c->cancels, 1);
		return true;
	}
	rec = new_sched(o, &spec.expires, &spec.flags, &spec.period,
			SCHED_ANY);
	if (rec < 0)
		return true;
	spec.user_data = user_data_of(o, rec);
	if (ioctl(fd, HTW_IOC_MODIFY, &spec)) {
		ret = errno;
		/* The new schedule never was: none of its events may come. */
		end_sched(o, rec, 1);
		if (ret == ENOENT)
			return gone_oneshot(o, old);
		return fail(c, "modify of id %u: %d", spec.id, ret);
	}
	end_sched(o, old, seq_after());
	armed_sched(o, rec, spec.id);
	o->slot[i] = rec;
	atomic_fetch_add(&c->modifies, 1);
	return true;
}

/* The same, for up to 32 slots at a time, through HTW_IOC_BATCH. */
static bool owner_batch(struct owner *o)
{
	struct counts *c = o->cell->counts;
	int slot_of[32], rec_of[32], old_of[32], n = 0, k, i, rec;
	struct htw_op ops[32];
	__u64 at;
	long ret;

	memset(ops, 0, sizeof(ops));
	for (i = 0; i < NR_SLOTS && n < 32; i++) {
		if (o->slot[i] >= 0 && !slot_live(o, i))
			continue;
		slot_of[n] = i;
		old_of[n] = o->slot[i];
		rec_of[n] = -1;
		if (old_of[n] >= 0 && htw_rand_below(&o->rng, 3) == 0) {
			ops[n].op = HTW_OP_CANCEL;
			ops[n].spec.id = o->scheds[old_of[n]].id;
		} else {
			rec = new_sched(o, &ops[n].spec.expires,
					&ops[n].spec.flags, &ops[n].spec.period,
					SCHED_ANY);
			if (rec < 0)
				break;
			rec_of[n] = rec;
			ops[n].op = old_of[n] >= 0 ? HTW_OP_MODIFY : HTW_OP_ARM;
			ops[n].spec.user_data = user_data_of(o, rec);
			if (old_of[n] >= 0)
				ops[n].spec.id = o->scheds[old_of[n]].id;
		}
		n++;
	}
	if (!n)
		return true;
	ret = htw_batch(o->cell->fd, ops, n);
	if (ret != n)
		return fail(c, "batch of %d: %ld", n, ret);
	at = seq_after();
	atomic_fetch_add(&c->batches, 1);
	for (k = 0; k < n; k++) {
		if (ops[k].result == -ENOENT && old_of[k] >= 0) {
			end_sched(o, rec_of[k], 1);
			if (!gone_oneshot(o, old_of[k]))
				return false;
			continue;
		}
		if (ops[k].result)
			return fail(c, "batch op %u on id %u: %d", ops[k].op,
				    ops[k].spec.id, ops[k].result);
		end_sched(o, old_of[k], at);
		if (ops[k].op == HTW_OP_CANCEL) {
			o->slot[slot_of[k]] = -1;
			atomic_fetch_add(&c->cancels, 1);
			continue;
		}
		armed_sched(o, rec_of[k], ops[k].spec.id);
		o->slot[slot_of[k]] = rec_of[k];
		atomic_fetch_add(ops[k].op == HTW_OP_ARM ? &c->arms : &c->modifies, 1);
	}
	return true;
}

static void *owner_fn(void *arg)
{
	struct owner *o = arg;

	while (!atomic_load(&o->cell->stop_owners) && !o->cell->counts->errors) {
		if (!(htw_rand_below(&o->rng, 16) ? owner_step(o) : owner_batch(o)))
			break;
		if (o->nr_scheds >= MAX_SCHEDS - FINISH_SCHEDS)
			usleep(1000);
	}
	return NULL;
}

/* Arm one more timer of @kind, in no slot; return its record, or -1. */
static int arm_extra(struct owner *o, enum sched_kind kind)
{
	struct htw_timer_spec spec = { 0 };
	int rec;

	rec = new_sched(o, &spec.expires, &spec.flags, &spec.period, kind);
	if (rec < 0)
		return -1;
	spec.user_data = user_data_of(o, rec);
	if (ioctl(o->cell->fd, HTW_IOC_ARM, &spec)) {
		fail(o->cell->counts, "arm: %d", errno);
		return -1;
	}
	armed_sched(o, rec, spec.id);
	atomic_fetch_add(&o->cell->counts->arms, 1);
	return rec;
}

/*
 * The end of a round: periodic timers are cancelled, one-shot timers left
 * to expire, and each must then have come exactly once.  A periodic timer
 * is cancelled only once an expiry of it was read, and an owner that made
 * no one-shot schedule, or holds no periodic timer, arms one: the oracle
 * checks both kinds in every round, however few steps a loaded host let
 * the owners take.
 */
static void finish_owner(struct owner *o)
{
	__u64 deadline = htw_now(CLOCK_MONOTONIC) + DRAIN_NS;
	struct counts *c = o->cell->counts;
	bool oneshot = false, periodic = false;
	int i, rec, extra = -1;
	unsigned int r;

	for (r = 0; r < o->nr_scheds && !oneshot; r++)
		oneshot = !o->scheds[r].period;
	for (i = 0; i < NR_SLOTS; i++)
		periodic |= o->slot[i] >= 0 && o->scheds[o->slot[i]].period;
	if (!oneshot)
		arm_extra(o, SCHED_ONESHOT);
	if (!periodic)
		extra = arm_extra(o, SCHED_PERIODIC);

	for (i = 0; i <= NR_SLOTS; i++) {
		struct sched *s;

		rec = i < NR_SLOTS ? o->slot[i] : extra;
		if (rec < 0)
			continue;
		s = &o->scheds[rec];
		if (!s->period)
			continue;
		while (!atomic_load(&s->counted) && !c->errors &&
		       htw_now(CLOCK_MONOTONIC) < deadline)
			usleep(1000);
		if (!atomic_load(&s->counted) && !c->errors)
			fail(c, "periodic id %u never came", s->id);
		if (htw_cancel(o->cell->fd, s->id))
			fail(c, "cancel of periodic id %u: %d", s->id, errno);
		end_sched(o, rec, seq_after());
	}
}

static bool all_delivered(struct cell *cell)
{
	unsigned int i, k;

	for (k = 0; k < NR_OWNERS; k++)
		for (i = 0; i < cell->owners[k].nr_scheds; i++) {
			struct sched *s = &cell->owners[k].scheds[i];

			if (!s->period && !atomic_load(&s->ended) &&
			    !atomic_load(&s->delivered))
				return false;
		}
	return true;
}

static bool check_round(struct cell *cell)
{
	struct counts *c = cell->counts;
	unsigned int i, k;

	for (k = 0; k < NR_OWNERS; k++)
		for (i = 0; i < cell->owners[k].nr_scheds; i++) {
			struct sched *s = &cell->owners[k].scheds[i];
			__u64 counted = atomic_load(&s->counted);
			__u64 latest = atomic_load(&s->latest);

			if (!s->period) {
				if (!atomic_load(&s->ended) &&
				    atomic_load(&s->delivered) != 1)
					return fail(c, "one-shot id %u never came",
						    s->id);
				atomic_fetch_add(&c->oneshots_checked, 1);
			} else if (counted &&
				   counted != (latest - s->lo) / s->period + 1) {
				return fail(c, "periodic id %u: %llu counted, %llu due",
					    s->id, (unsigned long long)counted,
					    (unsigned long long)((latest - s->lo) / s->period + 1));
			}
		}
	return true;
}

/* Blocking readers leave on a STOP event; the others on the flag. */
static void stop_readers(struct cell *cell)
{
	atomic_store(&cell->stop_readers, true);
	while (atomic_load(&cell->readers_running)) {
		if (!cell->nonblocking &&
		    htw_arm_id(cell->fd, 0, 0, 0, STOP_DATA) < 0)
			fail(cell->counts, "arm of a stop event: %d", errno);
		usleep(5000);
	}
}

static void run_round(struct cell *cell, __u64 seed, int round)
{
	struct reader readers[NR_READER_KINDS];
	pthread_t owners[NR_OWNERS];
	int nr_readers = 0, k, flags;
	__u64 deadline;
	struct htw_info info;

	cell->nonblocking = round % 2;
	flags = O_RDWR | O_CLOEXEC | (cell->nonblocking ? O_NONBLOCK : 0);
	cell->fd = open(HTW_DEV, flags);
	if (cell->fd < 0) {
		fail(cell->counts, "open: %d", errno);
		return;
	}
	atomic_store(&cell->stop_owners, false);
	atomic_store(&cell->stop_readers, false);
	if (cell->nonblocking) {
		readers[nr_readers++].kind = READ_POLL;
		readers[nr_readers++].kind = READ_EPOLL_ET;
		readers[nr_readers++].kind = READ_EPOLL_LT;
	} else {
		readers[nr_readers++].kind = READ_BLOCKING;
		readers[nr_readers++].kind = READ_BLOCKING;
	}
	atomic_store(&cell->readers_running, nr_readers);
	for (k = 0; k < nr_readers; k++) {
		readers[k].cell = cell;
		pthread_create(&readers[k].thread, NULL, reader_fn, &readers[k]);
	}
	for (k = 0; k < NR_OWNERS; k++) {
		struct owner *o = &cell->owners[k];

		o->cell = cell;
		o->index = k;
		o->rng = seed ^ ((__u64)(cell->worker * NR_OWNERS + k + 1) << 40) ^
			 ((__u64)round << 20);
		o->nr_scheds = 0;
		memset(o->slot, 0xff, sizeof(o->slot));
		pthread_create(&owners[k], NULL, owner_fn, o);
	}

	usleep(ROUND_NS / 1000);
	atomic_store(&cell->stop_owners, true);
	for (k = 0; k < NR_OWNERS; k++)
		pthread_join(owners[k], NULL);
	for (k = 0; k < NR_OWNERS; k++)
		finish_owner(&cell->owners[k]);

	deadline = htw_now(CLOCK_MONOTONIC) + DRAIN_NS;
	while (!all_delivered(cell) && htw_now(CLOCK_MONOTONIC) < deadline &&
	       !cell->counts->errors)
		usleep(10000);
	if (!cell->counts->errors) {
		if (htw_get_info(cell->fd, &info))
			fail(cell->counts, "info: %d", errno);
		else if (info.nr_timers)
			fail(cell->counts, "%u timers left at the end of a round",
			     info.nr_timers);
	}
	stop_readers(cell);
	for (k = 0; k < nr_readers; k++)
		pthread_join(readers[k].thread, NULL);
	/* Only now is every event read also checked. */
	if (!cell->counts->errors)
		check_round(cell);
	close(cell->fd);
	atomic_fetch_add(&cell->counts->closes, 1);
	atomic_fetch_add(&cell->counts->rounds, 1);
}

/*
 * Churn: a file whose timers a forked child reads through a dup()ed
 * descriptor after the parent closed its own, and a file closed while its
 * timers, periodic ones too, expire.
 */
struct churn {
	struct counts *counts;
	atomic_bool stop;
	__u64 rng;
	__u64 min_period;
};

static int churn_child(int fd)
{
	unsigned char seen[CHURN_TIMERS] = { 0 };
	struct htw_event ev[32];
	int got = 0, i;
	long n;

	alarm(60);
	while (got < CHURN_TIMERS) {
		n = htw_read_events(fd, ev, 32);
		if (n <= 0)
			return 10;
		for (i = 0; i < n; i++) {
			if (ev[i].user_data >= CHURN_TIMERS ||
			    seen[ev[i].user_data]++ ||
			    ev[i].fired < ev[i].expires ||
			    htw_now(CLOCK_MONOTONIC) < ev[i].expires)
				return 11;
			got++;
		}
	}
	return 0;
}

static void *churn_fn(void *arg)
{
	struct churn *ch = arg;
	struct htw_op ops[CHURN_TIMERS];
	int fd, dupfd, status, i;
	pid_t pid;

	while (!atomic_load(&ch->stop) && !ch->counts->errors) {
		fd = htw_open(O_CLOEXEC);
		if (fd < 0) {
			fail(ch->counts, "churn open: %d", errno);
			break;
		}
		memset(ops, 0, sizeof(ops));
		for (i = 0; i < CHURN_TIMERS; i++) {
			ops[i].op = HTW_OP_ARM;
			ops[i].spec.expires = htw_rand_below(&ch->rng, 20 * MS);
			ops[i].spec.user_data = i;
		}
		if (htw_batch(fd, ops, CHURN_TIMERS) != CHURN_TIMERS) {
			fail(ch->counts, "churn batch: %d", errno);
			close(fd);
			break;
		}
		dupfd = dup(fd);
		pid = fork();
		if (pid == 0) {
			close(fd);
			_exit(churn_child(dupfd));
		}
		close(dupfd);
		close(fd);
		if (pid < 0 || waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status) || WEXITSTATUS(status)) {
			fail(ch->counts, "churn child: status %#x",
			     pid < 0 ? -1 : status);
			break;
		}
		atomic_fetch_add(&ch->counts->forks, 1);

		/* Closed with timers armed and expiring. */
		fd = htw_open(O_CLOEXEC);
		for (i = 0; i < CHURN_TIMERS; i++) {
			ops[i].spec.expires = htw_rand_below(&ch->rng, 5 * MS);
			ops[i].spec.period = i % 2 ? ch->min_period : 0;
		}
		if (fd < 0 || htw_batch(fd, ops, CHURN_TIMERS) != CHURN_TIMERS) {
			fail(ch->counts, "churn arm: %d", errno);
			break;
		}
		usleep(htw_rand_below(&ch->rng, 5000));
		close(fd);
		atomic_fetch_add(&ch->counts->closes, 2);
	}
	return NULL;
}

static int worker(int index, __u64 seed, __u64 seconds, __u64 min_period,
		  struct counts *counts)
{
	struct cell *cell = calloc(1, sizeof(*cell));
	struct churn ch = { .counts = counts, .min_period = min_period,
			    .rng = seed ^ (index + 77) };
	__u64 end = htw_now(CLOCK_MONOTONIC) + seconds * NSEC_PER_SEC;
	pthread_t churn;
	int round, k;

	if (!cell)
		return 1;
	cell->worker = index;
	cell->counts = counts;
	cell->min_period = min_period;
	for (k = 0; k < NR_OWNERS; k++) {
		cell->owners[k].scheds = calloc(MAX_SCHEDS, sizeof(struct sched));
		if (!cell->owners[k].scheds)
			return 1;
	}
	pthread_create(&churn, NULL, churn_fn, &ch);
	/* One round at least, however late this worker starts. */
	for (round = 0; (!round || htw_now(CLOCK_MONOTONIC) < end) &&
	     !counts->errors; round++)
		run_round(cell, seed, round);
	atomic_store(&ch.stop, true);
	pthread_join(churn, NULL);
	return counts->errors ? 1 : 0;
}

/* Only fixtures have timeouts: the long run needs more than 30 s. */
FIXTURE(smp) {
	int unused;
};

FIXTURE_SETUP(smp)
{
}

FIXTURE_TEARDOWN(smp)
{
}

TEST_F_TIMEOUT(smp, htw_smp_stress, 900)
{
	bool full = htw_env_u64("HTW_FULL", 0) == 1;
	__u64 seconds = htw_env_u64("HTW_SMP_SECONDS", full ? 60 : 5);
	__u64 seed = htw_env_u64("HTW_SMP_SEED", htw_now(CLOCK_MONOTONIC) | 1);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int nr_workers = cpus < 2 ? 2 : cpus, w, status;
	struct counts *counts, total = { 0 };
	struct htw_info info;
	pid_t pids[64];
	int fd, k;

	if (nr_workers > 64)
		nr_workers = 64;
	fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, htw_get_info(fd, &info));
	close(fd);
	TH_LOG("seed %llu, %d workers, %llu s", (unsigned long long)seed,
	       nr_workers, (unsigned long long)seconds);

	counts = mmap(NULL, nr_workers * sizeof(*counts), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, counts);
	memset(counts, 0, nr_workers * sizeof(*counts));
	for (w = 0; w < nr_workers; w++) {
		pids[w] = fork();
		ASSERT_LE(0, pids[w]);
		if (pids[w] == 0)
			_exit(worker(w, seed, seconds, info.min_period_ns,
				     &counts[w]));
	}
	for (w = 0; w < nr_workers; w++) {
		ASSERT_EQ(pids[w], waitpid(pids[w], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("worker %d: status %#x, %llu errors, first: %s",
			       w, status, (unsigned long long)counts[w].errors,
			       counts[w].error);
	}
	for (w = 0; w < nr_workers; w++) {
		total.arms += counts[w].arms;
		total.modifies += counts[w].modifies;
		total.cancels += counts[w].cancels;
		total.batches += counts[w].batches;
		total.enoent += counts[w].enoent;
		for (k = 0; k < NR_READER_KINDS; k++)
			total.events[k] += counts[w].events[k];
		total.oneshots_checked += counts[w].oneshots_checked;
		total.periodic_expiries += counts[w].periodic_expiries;
		total.forks += counts[w].forks;
		total.closes += counts[w].closes;
		total.rounds += counts[w].rounds;
		note_max(&total.max_late_ns, counts[w].max_late_ns);
	}
	TH_LOG("%llu arms, %llu modifies, %llu cancels (%llu batches) in %llu rounds",
	       (unsigned long long)total.arms,
	       (unsigned long long)total.modifies,
	       (unsigned long long)total.cancels,
	       (unsigned long long)total.batches,
	       (unsigned long long)total.rounds);
	TH_LOG("events read: %llu blocking, %llu poll, %llu epoll ET, %llu epoll LT",
	       (unsigned long long)total.events[READ_BLOCKING],
	       (unsigned long long)total.events[READ_POLL],
	       (unsigned long long)total.events[READ_EPOLL_ET],
	       (unsigned long long)total.events[READ_EPOLL_LT]);
	TH_LOG("%llu one-shot schedules checked, %llu periodic expiries counted",
	       (unsigned long long)total.oneshots_checked,
	       (unsigned long long)total.periodic_expiries);
	TH_LOG("%llu forks, %llu closes, %llu ids gone when cancelled, at most %llu us late",
	       (unsigned long long)total.forks,
	       (unsigned long long)total.closes,
	       (unsigned long long)total.enoent,
	       (unsigned long long)total.max_late_ns / 1000);
	EXPECT_LT(0, total.oneshots_checked);
	EXPECT_LT(0, total.periodic_expiries);
	munmap(counts, nr_workers * sizeof(*counts));
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
