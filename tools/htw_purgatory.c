// SPDX-License-Identifier: GPL-2.0
/*
 * htw_purgatory - request timeouts, as a server's purgatory keeps them:
 * libhtw's against htw's own timers, libevent, io_uring and timerfd,
 * measured side by side
 *
 *   htw_purgatory [--rounds N] [--max N]   the benchmark (as root)
 *   htw_purgatory --anchors-only [...]     libevent, io_uring and timerfd
 *                                          alone: needs no /dev/htw
 *   htw_purgatory --smoke                  every way once, tiny: proves
 *                                          the program still works
 *   htw_purgatory --demo                   libhtw's request timeouts alone,
 *                                          10,000 in flight for 2 s, told
 *                                          in words: what "make run" shows
 *
 * The workload is Kafka's DelayedOperationPurgatory: a timeout is started
 * for each request and stopped when the request completes, which it
 * almost always does first.  N requests are in flight (10,000, 100,000
 * and 1,000,000, those up to --max N; --smoke: 100 and 1,000), each with
 * a timeout of 100 ms, 1 s or 30 s, drawn at random.  1% of the requests
 * in flight never complete and are left to expire: a start is one of them
 * with a chance of 1%, while fewer than N / 100 are in flight (were it 1%
 * of the starts, those of 30 s would soon be all there is in flight).
 *
 * The driver runs in turns, as an event loop does, the same for every
 * way: a turn reads CLOCK_MONOTONIC once, completes 64 requests drawn at
 * random among those in flight that complete (stops their timeouts),
 * starts as many as keep N in flight (64, and one for each expiry of the
 * turn before), each due at the turn's clock plus its duration, and makes
 * one non-blocking look for expiries, as the way's event loop would,
 * handling what it reports.  Its own work is O(1) a request and the same
 * for every way, so that it cancels out.  A request lives N / 64 turns on
 * average: with 1,000,000 in flight, longer than 100 ms, and those of
 * 100 ms often expire (the "#" lines say how many did).
 *
 * The ways:
 * - timeouts: libhtw's request timeouts, the way under test:
 *   htw_timeout_start() and htw_timeout_stop(), htw_timeouts_submit() at
 *   the look, then epoll_wait(..., 0) on the file and, if it is readable,
 *   htw_timeouts_expired().  The library has a quarter more slots than
 *   requests in flight (with_slack()), as a server sizes a pool: each class
 *   keeps idle slots of its own, and a start seldom takes another's.
 * - ring: htw's ring timers, a slot a request: htw_ring_arm() with a new
 *   generation, htw_ring_cancel(), one htw_ring_submit() a turn (which
 *   runs the due timers), htw_ring_reap().
 * - ioctl: htw's ioctl timers: a turn's arms and cancels in one
 *   HTW_IOC_BATCH; expiries read() when epoll finds the file readable.
 * - libevent_heap: a timer event a request, event_add() on the min-heap,
 *   event_del(); libevent_common: the same on a common timeout of each
 *   duration (event_base_init_common_timeout()).  A turn runs in a
 *   callback of the loop, as a server's work does, so that event_add()
 *   takes the time the loop cached; the look is event_base_loop() with
 *   EVLOOP_NONBLOCK | EVLOOP_ONCE.  libevent runs with
 *   EVENT_BASE_FLAG_PRECISE_TIMER, on CLOCK_MONOTONIC as the driver is (by
 *   default it reads the coarse clock, a tick behind, and its timeouts
 *   come up to a tick before the driver's deadline), and on poll(): its
 *   epoll backend would set a timerfd at every look for a precise timer.
 * - io_uring: an IORING_OP_TIMEOUT a request, absolute, and an
 *   IORING_OP_TIMEOUT_REMOVE a stop, submitted once a turn with the look
 *   for completions; up to 100,000 in flight, for a remove walks the list
 *   of all the ring's timeouts.
 * - timerfd: a timerfd a request, in an epoll set, armed and disarmed by
 *   timerfd_settime(); up to 10,000 in flight.
 * - driver: no timers at all, the driver alone: what it costs is in every
 *   way's figure, and the net lines take it off, to tell what the timers
 *   themselves add to a request.
 *
 * The measure is CPU time per request started: the process's user and
 * system time (getrusage()) over the timed turns.  htw does a file's
 * expiry work in its owner's context, in the calls the way makes, so in
 * this process's system time; the hrtimers of io_uring and timerfd
 * expire in hard interrupts, which the kernel charges to the task they
 * interrupt (or to none, with CONFIG_IRQ_TIME_ACCOUNTING): a little of
 * their work may be missing.  Wall-clock time per request is in the "#"
 * lines, for information.
 *
 * Each way's expiries are judged too: early (the clock read once the way
 * reported them, after each batch it reported (each completion, for
 * io_uring, whose completions come at any moment), is before the
 * deadline, the start's clock plus the
 * duration; libevent keeps microseconds, and is judged in them), late
 * (the p99 of report time minus deadline: a measure, not a verdict), lost
 * (a request in flight whose deadline passed LOST_SLACK before the end of
 * its run, never reported: after the timed turns the driver keeps
 * looking, at most that long, until every request due by then is), and
 * after a stop (an expiry of a request stopped, or reported already).
 * The ring timers and io_uring may report a timer that fired before its
 * stop reached the kernel: those ways tell them by generation or
 * user_data, as a program must, and count them as stale.  An early, lost
 * or after-stop expiry of htw's ways (timeouts, ring, ioctl) makes the
 * program exit 1; the anchors' are reported, not judged.  A request the
 * driver completes more than LOST_SLACK after its deadline, its expiry
 * never reported, is lost as well.  The ring and io_uring stop by an
 * entry that races with the expiry, so their expiries after a stop are
 * counted as stale, not judged.
 *
 * Each size runs in rounds, every way once a round, so that all see the
 * same machine; medians are reported, for rig/bench.py:
 *
 *   bench user purgatory_cpu_vs_<anchor>_<N> <timeouts> <anchor> ns
 *
 * for the anchors heap (libevent_heap), common (libevent_common),
 * io_uring and ring, with "-" for a side that could not run (a "#" line
 * says why), and the same net of the driver's own cost:
 *
 *   bench user purgatory_net_cpu_vs_<anchor>_<N> <timeouts> <anchor> ns
 *
 * and for rig/plot.sh, one line per way and size:
 *
 *   plot purgatory <way> <in flight> <CPU ns per request>
 *
 * A run starts its N requests, 64 a clock read and a look, then turns
 * untimed until 120 ms after the last start, past the expiry of the first
 * 100 ms timeouts, and a turn more, which replaces them.  Then the timed
 * turns run for 0.4 s (--smoke: 0.2 s, --demo: 2 s), a turn more at most:
 * a loop is sized by time, not by a pilot's count of turns as
 * htw_ringbench's are, for turns are not alike here (the turn after a
 * look that found many expiries starts as many requests), and a way whose
 * turn takes longer than the loop (io_uring with 100,000 in flight, under
 * emulation) runs one.  A "#" line says when over 10% of a way's
 * requests expired before their stop: N / 64 of its turns outlast 100 ms
 * (libevent's did with a million in flight where this was written, and
 * io_uring's with 10,000).  Its figure then counts restarts of expired
 * requests, which for io_uring are cheaper than a stop and a start.
 * Times are on CLOCK_MONOTONIC.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <liburing.h>

#include <libhtw.h>

#include "htw_bench_common.h"

#define MAX_SIZES	3
/* Requests completed per turn: per clock read, and per look. */
#define CHUNK		64
#define NR_CLASSES	3
/* One request in NEVER_IN of those in flight never completes. */
#define NEVER_IN	100
/* Untimed turns after the start: past the expiry of its 100 ms timeouts. */
#define WARM_NS		(120 * NSEC_PER_MSEC)
/* How long the timed turns of a run last, a turn more at most. */
#define LOOP_NS		(400 * NSEC_PER_MSEC)
#define SMOKE_NS	(200 * NSEC_PER_MSEC)
#define DEMO_N		10000
#define DEMO_NS		(2 * NSEC_PER_SEC)
/* A request due this long before the end of its run, never reported: lost. */
#define LOST_SLACK	(5 * NSEC_PER_SEC)
/* Random draws, reused in a cycle: a power of two. */
#define RND_LEN		(1024 * 1024)
/* Expiries, events or completions taken a call. */
#define BATCH		256
#define SQ_ENTRIES	4096
#define OPLIST_SIZE	4096
#define URING_SQ	256
#define URING_CQ	16384
/* user_data of io_uring's removes and cancel; a timeout's is its tag. */
#define REMOVE_TAG	0x8000000000000000ULL
#define CANCEL_TAG	(REMOVE_TAG + 1)
/* How long to wait for io_uring's completions that must come. */
#define WAIT_MS		10000
#define TIMERFD_MAX	10000
#define URING_MAX	100000
/* A ring timer file's most slots (struct htw_ring_setup). */
#define RING_MAX	8388608
/* Lateness: a histogram, LATE_SUB (2^LATE_SHIFT) buckets a power of 2 us. */
#define LATE_SHIFT	3
#define LATE_SUB	8
#define LATE_BUCKETS	(64 * LATE_SUB)
#define NIL		UINT32_MAX
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static const char usage[] =
	"usage: htw_purgatory [--smoke | --demo] [--anchors-only] [--rounds N] [--max N]\n";
static const __u64 durations[NR_CLASSES] = {
	100 * NSEC_PER_MSEC, NSEC_PER_SEC, 30 * NSEC_PER_SEC,
};

static unsigned int rounds = 5;
static int smoke, failed;
static __u32 *rnd;
static struct htw_oplist list;
/* Of each operation of @list, the request an arm is for; NIL for a cancel. */
static __u32 arm_of[OPLIST_SIZE];
/* The most timers a file of /dev/htw may hold (its max_timers). */
static __u32 max_timers;

/* The slots libhtw's timeouts are given for @n in flight (see SLACK). */
static unsigned int with_slack(unsigned int n)
{
	return n + n / 4 + 2 * CHUNK;
}

/* Why /dev/htw, its ring timers or io_uring cannot run: "" if they can. */
static char no_htw[128], no_ring[128], no_uring[128];

/* The process's user and system time, all threads, in ns. */
static __u64 cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (__u64)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * NSEC_PER_SEC +
	       (__u64)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) *
	       NSEC_PER_USEC;
}

/* The bucket of a lateness of @us, 1/8 of its power of two wide. */
static unsigned int late_bucket(__u64 us)
{
	unsigned int b;

	if (us < LATE_SUB)
		return us;
	b = 63 - __builtin_clzll(us);
	return (b - LATE_SHIFT + 1) * LATE_SUB +
	       ((us >> (b - LATE_SHIFT)) & (LATE_SUB - 1));
}

/* The end of bucket @k, in us: what its lateness is below. */
static double late_bucket_end(unsigned int k)
{
	unsigned int b = k / LATE_SUB + LATE_SHIFT - 1;

	if (k < LATE_SUB)
		return k + 1;
	return (double)((__u64)(LATE_SUB + k % LATE_SUB + 1) <<
			(b - LATE_SHIFT));
}

/* What the runs of a way at one size reported, summed over the rounds. */
struct tally {
	unsigned long started;		/* requests, untimed ones too */
	unsigned long timed;		/* requests of the timed turns */
	unsigned long timed_expired;	/* and expiries */
	unsigned long expired;
	unsigned long early;
	unsigned long after_stop;
	unsigned long stale;
	unsigned long lost;
	unsigned long late[LATE_BUCKETS];
	struct htw_timeouts_stats lib;	/* the timeouts way's */
};

/* The lateness below which 99% of the expiries came, in ms; -1 if none. */
static double late_p99_ms(const struct tally *y)
{
	unsigned long total = 0, sum = 0;
	unsigned int k;

	for (k = 0; k < LATE_BUCKETS; k++)
		total += y->late[k];
	if (!total)
		return -1;
	for (k = 0; k < LATE_BUCKETS; k++) {
		sum += y->late[k];
		if (sum * 100 >= total * 99)
			break;
	}
	return late_bucket_end(k) / 1000;
}

struct purg;

/*
 * A way to keep request timeouts: how it makes room for @p->n of them,
 * starts and stops request i's, looks for expiries once a turn (sending
 * what the turn queued first), and lets them all go.
 */
struct way {
	const char *name;
	const char *missing;	/* why it cannot run: "" if it can */
	unsigned int max_n;	/* the most in flight it runs with; 0: any */
	int (*setup)(struct purg *p);
	void (*start)(struct purg *p, __u32 i);
	void (*stop)(struct purg *p, __u32 i);
	void (*step)(struct purg *p);
	void (*teardown)(struct purg *p);
	__u64 res_ns;		/* what its deadlines are kept to */
	int racy;		/* it reports timers its stop came late for */
	int in_loop;		/* its turns run in a callback of its loop */
	int htw;		/* /dev/htw's: at most max_timers a file */
	int baseline;		/* no timers: the driver's own cost */
};

/* libevent's timer events: the argument of each one's callback. */
struct evreq {
	struct purg *p;
	__u32 i;
};

/*
 * One run of a way: the driver's requests, then each way's own fields.
 * Request i's running request is its start number @gen[i]; its tag,
 * gen << 32 | i, is what the ways carry and report.
 */
struct purg {
	const struct way *way;
	struct tally *tally;
	unsigned int n;			/* requests to keep in flight */
	unsigned int inflight;
	unsigned int never;		/* in flight that never complete */
	unsigned long started;
	unsigned long draw;		/* the next random draw */
	__u64 now;			/* the turn's clock */
	__u64 t;			/* the clock after the way reported the batch */
	__u64 *deadline;		/* of request i, 0 if it does not run */
	__u32 *gen;
	__u8 *cls;			/* its duration */
	__u32 *pos;			/* its place in @comp, or NIL */
	__u32 *comp;			/* running requests that complete */
	unsigned int ncomp;
	__u32 *free;			/* the requests that do not run */
	unsigned int nfree;
	int draining;			/* the timed turns are over */
	__u64 t_end;			/* when they were */
	unsigned long due;		/* running requests due by @t_end */
	/* This turn's deadlines as timespecs, made at its first start. */
	__u64 ts_now;
	struct itimerspec its[NR_CLASSES];
	struct __kernel_timespec kts[NR_CLASSES];
	int fd;				/* /dev/htw */
	int ep;				/* epoll set of @fd, or the timerfds */
	struct htw_timeouts *to;
	int tcls[NR_CLASSES];		/* libhtw's classes */
	__u64 *handle;
	struct htw_ring ring;
	__u32 *ids;			/* ioctl timers */
	struct event_base *base;	/* libevent */
	struct event **evs;
	struct evreq *reqs;
	struct event *turn_ev;
	struct timeval tvs[NR_CLASSES];
	const struct timeval *tv[NR_CLASSES];
	struct io_uring uring;
	long uinflight;			/* io_uring completions to come */
	int cancel_failed;		/* its cancel of all was refused */
	int *fds;			/* timerfd */
};

static inline __u64 tag_of(const struct purg *p, __u32 i)
{
	return (__u64)p->gen[i] << 32 | i;
}

static __u32 next_draw(struct purg *p)
{
	return rnd[p->draw++ & (RND_LEN - 1)];
}

/* Request @i no longer runs: put it back among those that do not. */
static void retire(struct purg *p, __u32 i)
{
	__u32 k = p->pos[i];

	if (k == NIL) {
		p->never--;
	} else {
		p->comp[k] = p->comp[--p->ncomp];
		p->pos[p->comp[k]] = k;
	}
	p->deadline[i] = 0;
	p->free[p->nfree++] = i;
	p->inflight--;
}

/* Complete a request drawn among those that complete: stop its timeout. */
static void stop_one(struct purg *p)
{
	__u32 i = p->comp[pick(next_draw(p), p->ncomp)];

	/* Due long ago, and never reported: its expiry was lost. */
	if (!p->way->baseline && p->deadline[i] + LOST_SLACK < p->now)
		p->tally->lost++;
	retire(p, i);
	p->way->stop(p, i);
}

/* Start a request, due at the turn's clock plus a duration drawn. */
static void start_one(struct purg *p)
{
	__u32 i = p->free[--p->nfree];
	unsigned int v = pick(next_draw(p), NR_CLASSES * NEVER_IN);
	unsigned int c = v % NR_CLASSES;

	p->gen[i]++;
	p->cls[i] = c;
	p->deadline[i] = p->now + durations[c];
	if (v < NR_CLASSES && p->never < p->n / NEVER_IN) {
		p->pos[i] = NIL;
		p->never++;
	} else {
		p->pos[i] = p->ncomp;
		p->comp[p->ncomp++] = i;
	}
	p->inflight++;
	p->started++;
	p->way->start(p, i);
}

/*
 * The way reports request @tag expired, at the clock read once for the
 * look: judge it, and let the request go.
 */
static void expire(struct purg *p, __u64 tag)
{
	struct tally *y = p->tally;
	__u64 res = p->way->res_ns, deadline;
	__u32 i = (__u32)tag;

	if (!p->t)
		p->t = now_ns();
	if (i >= p->n || !p->deadline[i] || p->gen[i] != tag >> 32) {
		if (p->way->racy)
			y->stale++;
		else
			y->after_stop++;
		return;
	}
	deadline = p->deadline[i];
	if (p->t / res < deadline / res)
		y->early++;
	y->late[late_bucket(p->t > deadline ?
			    (p->t - deadline) / NSEC_PER_USEC : 0)]++;
	if (p->draining && deadline <= p->t_end)
		p->due--;
	y->expired++;
	retire(p, i);
}

/*
 * The way has just reported a batch of expiries: they are judged by the
 * clock read after it (at the first of them), not by one read before.
 */
static void reported(struct purg *p)
{
	p->t = 0;
}

/* One non-blocking look for expiries, after what the turn queued. */
static void look(struct purg *p)
{
	reported(p);
	p->way->step(p);
}

/* A turn's stops and starts. */
static void requests(struct purg *p)
{
	unsigned int j;

	for (j = 0; j < CHUNK && p->ncomp; j++)
		stop_one(p);
	while (p->inflight < p->n)
		start_one(p);
}

static void turn(struct purg *p)
{
	p->now = now_ns();
	if (p->way->in_loop)
		event_active(p->turn_ev, EV_TIMEOUT, 1);
	else
		requests(p);
	look(p);
}

/* This turn's deadlines, as the timespecs io_uring and timerfd take. */
static void turn_times(struct purg *p)
{
	unsigned int c;

	if (p->ts_now == p->now)
		return;
	p->ts_now = p->now;
	for (c = 0; c < NR_CLASSES; c++) {
		p->kts[c] = kts_of(p->now + durations[c]);
		p->its[c].it_value = ts_of(p->now + durations[c]);
	}
}

/* An epoll set of @fd alone, level-triggered. */
static int epoll_of(int fd)
{
	struct epoll_event ee = { .events = EPOLLIN };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	check_errno(ep, "epoll_create1");
	check_errno(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee), "epoll_ctl");
	return ep;
}

static int readable(int ep)
{
	struct epoll_event ee;
	int k = epoll_wait(ep, &ee, 1, 0);

	check_errno(k, "epoll_wait");
	return k > 0;
}

static int open_htw(void)
{
	int fd = htw_open(O_CLOEXEC | O_NONBLOCK);

	check(fd, "open " HTW_DEVICE_PATH);
	return fd;
}

/*
 * timeouts: libhtw's request timeouts, a class per duration.  A start
 * that finds the rings full (-EBUSY) takes the expiries first.
 */

static int timeouts_setup(struct purg *p)
{
	int ret;
	unsigned int c;

	p->fd = open_htw();
	ret = htw_timeouts_create(p->fd, with_slack(p->n), &p->to);
	if (ret == -ENOSPC || ret == -ENOMEM) {
		close(p->fd);
		return ret;
	}
	check(ret, "htw_timeouts_create");
	for (c = 0; c < NR_CLASSES; c++) {
		ret = htw_timeouts_class(p->to, durations[c]);
		check(ret, "htw_timeouts_class");
		p->tcls[c] = ret;
	}
	p->handle = zalloc(p->n * sizeof(*p->handle));
	p->ep = epoll_of(p->fd);
	return 0;
}

static void timeouts_start(struct purg *p, __u32 i)
{
	int ret = htw_timeout_start(p->to, p->tcls[p->cls[i]], p->now,
				    tag_of(p, i), &p->handle[i]);

	if (ret == -EBUSY) {
		look(p);
		ret = htw_timeout_start(p->to, p->tcls[p->cls[i]], p->now,
					tag_of(p, i), &p->handle[i]);
	}
	check(ret, "htw_timeout_start");
}

/* The request runs, and was never reported: its timeout must too. */
static void timeouts_stop(struct purg *p, __u32 i)
{
	check(htw_timeout_stop(p->to, p->handle[i]), "htw_timeout_stop");
}

static void timeouts_step(struct purg *p)
{
	static struct htw_timeout_expiry e[BATCH];
	int k, j;

	check(htw_timeouts_submit(p->to), "htw_timeouts_submit");
	if (!readable(p->ep))
		return;
	do {
		k = htw_timeouts_expired(p->to, e, BATCH);
		check(k, "htw_timeouts_expired");
		reported(p);
		for (j = 0; j < k; j++)
			expire(p, e[j].tag);
	} while (k == BATCH);
}

static void timeouts_teardown(struct purg *p)
{
	struct htw_timeouts_stats s;
	struct htw_timeouts_stats *sum = &p->tally->lib;

	htw_timeouts_stats(p->to, &s);
	sum->started += s.started;
	sum->stopped += s.stopped;
	sum->expired += s.expired;
	sum->stored += s.stored;
	sum->armed += s.armed;
	sum->submits += s.submits;
	sum->stale += s.stale;
	sum->rearmed += s.rearmed;
	sum->unexpected += s.unexpected;
	htw_timeouts_free(p->to);
	close(p->ep);
	close(p->fd);
	free(p->handle);
}

/*
 * ring: htw's ring timers, slot i for request i, armed as generation
 * gen[i].  A cancel that comes after its timer fired fails (-ENOENT), and
 * the expiry's generation tells it stale.
 */

static void ring_cqe(struct purg *p, const struct htw_cqe *cqe)
{
	if (!cqe->res)
		expire(p, (__u64)cqe->gen << 32 | cqe->slot);
	else if (cqe->res != -ENOENT)
		fail("ring: completion of slot %u gen %u: %s", cqe->slot,
		     cqe->gen, strerror(-cqe->res));
}

static void ring_step(struct purg *p)
{
	static struct htw_cqe cqes[BATCH];
	unsigned int k, j;

	check(htw_ring_submit(&p->ring, 0), "HTW_IOC_RING_ENTER");
	while ((k = htw_ring_reap(&p->ring, cqes, BATCH))) {
		reported(p);
		for (j = 0; j < k; j++)
			ring_cqe(p, &cqes[j]);
	}
}

static int ring_setup(struct purg *p)
{
	int ret;

	p->fd = open_htw();
	ret = htw_ring_map(p->fd, p->n, SQ_ENTRIES, &p->ring);
	if (ret == -ENOSPC || ret == -ENOMEM) {
		close(p->fd);
		return ret;
	}
	check(ret, "htw_ring_map");
	return 0;
}

/* Queue an arm or a cancel, handing the ring to the kernel if it is full. */
static void ring_queue(struct purg *p, __u32 i, int arm)
{
	int ret, tries;

	for (tries = 0;; tries++) {
		if (arm)
			ret = htw_ring_arm(&p->ring, i, p->gen[i],
					   p->deadline[i]);
		else
			ret = htw_ring_cancel(&p->ring, i, p->gen[i]);
		if (ret != -EAGAIN || tries)
			break;
		look(p);
	}
	check(ret, arm ? "htw_ring_arm" : "htw_ring_cancel");
}

static void ring_start(struct purg *p, __u32 i)
{
	ring_queue(p, i, 1);
}

static void ring_stop(struct purg *p, __u32 i)
{
	ring_queue(p, i, 0);
}

static void ring_teardown(struct purg *p)
{
	htw_ring_unmap(&p->ring);
	close(p->fd);
}

/*
 * ioctl: htw's ioctl timers, a turn's arms and cancels in one
 * HTW_IOC_BATCH (or more, if they outgrow the list).
 */

/* Run what @list holds; every operation must succeed. */
static void ioctl_flush(struct purg *p)
{
	int ret;
	unsigned int k;

	if (!list.nr)
		return;
	ret = htw_oplist_submit(p->fd, &list);
	check(ret, "HTW_IOC_BATCH");
	if (ret != (int)list.nr)
		fail("HTW_IOC_BATCH ran %d of %u", ret, list.nr);
	for (k = 0; k < list.nr; k++) {
		check(list.ops[k].result, "an operation of HTW_IOC_BATCH");
		if (arm_of[k] != NIL)
			p->ids[arm_of[k]] = list.ops[k].spec.id;
	}
	htw_oplist_reset(&list);
}

static int ioctl_setup(struct purg *p)
{
	p->fd = open_htw();
	p->ids = zalloc(p->n * sizeof(*p->ids));
	p->ep = epoll_of(p->fd);
	htw_oplist_reset(&list);
	return 0;
}

static void ioctl_start(struct purg *p, __u32 i)
{
	struct htw_timer_spec spec = {
		.flags = HTW_TIMER_ABSTIME, .expires = p->deadline[i],
		.user_data = tag_of(p, i),
	};

	if (list.nr == list.size)
		ioctl_flush(p);
	arm_of[list.nr] = i;
	htw_oplist_arm(&list, &spec);
}

/* Its arm went in a batch of a turn before: stops come before starts. */
static void ioctl_stop(struct purg *p, __u32 i)
{
	if (list.nr == list.size)
		ioctl_flush(p);
	arm_of[list.nr] = NIL;
	htw_oplist_cancel(&list, p->ids[i]);
}

static void ioctl_step(struct purg *p)
{
	static struct htw_event ev[BATCH];
	int k, j;

	ioctl_flush(p);
	if (!readable(p->ep))
		return;
	do {
		k = htw_read_events(p->fd, ev, BATCH);
		if (k == -EAGAIN)
			break;
		check(k, "read " HTW_DEVICE_PATH);
		reported(p);
		for (j = 0; j < k; j++)
			expire(p, ev[j].user_data);
	} while (k == BATCH);
}

static void ioctl_teardown(struct purg *p)
{
	htw_oplist_reset(&list);
	close(p->ep);
	close(p->fd);
	free(p->ids);
}

/*
 * libevent: a timer event per request, on the min-heap or on a common
 * timeout of its duration.
 */

static void expiry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct evreq *r = arg;

	(void)fd;
	(void)what;
	expire(r->p, tag_of(r->p, r->i));
}

static void turn_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	requests(arg);
}

/* A base on CLOCK_MONOTONIC itself, and on poll() (see the top). */
static struct event_base *new_base(void)
{
	struct event_config *cfg = event_config_new();
	struct event_base *base;

	if (!cfg || event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER) ||
	    event_config_avoid_method(cfg, "epoll"))
		fail("event_config failed");
	base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	if (!base)
		fail("event_base_new_with_config failed");
	return base;
}

static int event_setup(struct purg *p, int common)
{
	unsigned int c, i;

	p->base = new_base();
	for (c = 0; c < NR_CLASSES; c++) {
		p->tvs[c] = tv_of(durations[c]);
		p->tv[c] = &p->tvs[c];
		if (common)
			p->tv[c] = event_base_init_common_timeout(p->base,
								  &p->tvs[c]);
		if (!p->tv[c])
			fail("event_base_init_common_timeout failed");
	}
	p->evs = zalloc(p->n * sizeof(*p->evs));
	p->reqs = zalloc(p->n * sizeof(*p->reqs));
	for (i = 0; i < p->n; i++) {
		p->reqs[i] = (struct evreq) { p, i };
		p->evs[i] = evtimer_new(p->base, expiry_cb, &p->reqs[i]);
		if (!p->evs[i])
			fail("evtimer_new failed");
	}
	p->turn_ev = event_new(p->base, -1, 0, turn_cb, p);
	if (!p->turn_ev)
		fail("event_new failed");
	return 0;
}

static int heap_setup(struct purg *p)
{
	return event_setup(p, 0);
}

static int common_setup(struct purg *p)
{
	return event_setup(p, 1);
}

static void event_start(struct purg *p, __u32 i)
{
	if (event_add(p->evs[i], p->tv[p->cls[i]]))
		fail("event_add failed");
}

static void event_stop(struct purg *p, __u32 i)
{
	event_del(p->evs[i]);
}

static void event_step(struct purg *p)
{
	if (event_base_loop(p->base, EVLOOP_NONBLOCK | EVLOOP_ONCE) < 0)
		fail("event_base_loop failed");
}

static void event_teardown(struct purg *p)
{
	unsigned int i;

	for (i = 0; i < p->n; i++)
		event_free(p->evs[i]);
	event_free(p->turn_ev);
	event_base_free(p->base);
	free(p->evs);
	free(p->reqs);
}

/*
 * io_uring: an IORING_OP_TIMEOUT per request (user_data: its tag), an
 * IORING_OP_TIMEOUT_REMOVE per stop; each completes once, the timeout
 * with -ETIME or -ECANCELED.
 */

static struct io_uring_sqe *uring_sqe(struct purg *p)
{
	p->uinflight++;
	return uring_get_sqe(&p->uring);
}

static void uring_cqe(void *arg, const struct io_uring_cqe *cqe)
{
	struct purg *p = arg;
	int res = cqe->res;

	p->uinflight--;
	if (cqe->user_data == REMOVE_TAG) {
		/* -ENOENT, -EALREADY: the timeout fired before its remove. */
		if (res && res != -ENOENT && res != -EALREADY)
			check(res, "IORING_OP_TIMEOUT_REMOVE");
	} else if (cqe->user_data == CANCEL_TAG) {
		p->cancel_failed = res < 0;
	} else if (res == -ETIME) {
		/* Posted at any moment, by the hrtimer: judged each alone. */
		reported(p);
		expire(p, cqe->user_data);
	} else if (res != -ECANCELED) {
		check(res ? res : -EPROTO, "IORING_OP_TIMEOUT");
	}
}

static void uring_reap(struct purg *p)
{
	uring_reap_all(&p->uring, uring_cqe, p);
}

/* Submit, and let the timeouts that fired post their completions. */
static void uring_step(struct purg *p)
{
	check(io_uring_submit_and_get_events(&p->uring), "io_uring_submit");
	uring_reap(p);
}

static int uring_setup(struct purg *p)
{
	struct io_uring_params params = {
		.flags = IORING_SETUP_CQSIZE, .cq_entries = URING_CQ,
	};

	return io_uring_queue_init_params(URING_SQ, &p->uring, &params);
}

static void uring_start(struct purg *p, __u32 i)
{
	struct io_uring_sqe *sqe = uring_sqe(p);

	turn_times(p);
	io_uring_prep_timeout(sqe, &p->kts[p->cls[i]], 0, IORING_TIMEOUT_ABS);
	sqe->user_data = tag_of(p, i);
}

static void uring_stop(struct purg *p, __u32 i)
{
	struct io_uring_sqe *sqe = uring_sqe(p);

	io_uring_prep_timeout_remove(sqe, tag_of(p, i), 0);
	sqe->user_data = REMOVE_TAG;
}

/*
 * Cancel every timeout before the ring goes, and wait for them: the
 * ring's exit work would do it later, in a worker, while the next way
 * runs.  A kernel older than IORING_ASYNC_CANCEL_ANY (5.19) refuses the
 * cancel, and the exit work does it.
 */
static void uring_teardown(struct purg *p)
{
	struct __kernel_timespec ts = kts_of(WAIT_MS * NSEC_PER_MSEC);
	struct io_uring_sqe *sqe = uring_sqe(p);
	struct io_uring_cqe *cqe;

	io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ALL |
			       IORING_ASYNC_CANCEL_ANY);
	sqe->user_data = CANCEL_TAG;
	look(p);
	while (p->uinflight > 0 && !p->cancel_failed) {
		check(io_uring_wait_cqe_timeout(&p->uring, &cqe, &ts),
		      "io_uring: waiting for completions");
		p->t = 0;
		uring_reap(p);
	}
	io_uring_queue_exit(&p->uring);
}

/*
 * timerfd: a timerfd per request, all in one epoll set; a stop disarms,
 * which also clears an expiry not read yet.
 */

static int timerfd_setup(struct purg *p)
{
	struct epoll_event ee = { .events = EPOLLIN };
	unsigned int i;

	p->ep = epoll_create1(EPOLL_CLOEXEC);
	check_errno(p->ep, "epoll_create1");
	p->fds = zalloc(p->n * sizeof(*p->fds));
	for (i = 0; i < p->n; i++) {
		p->fds[i] = timerfd_create(CLOCK_MONOTONIC,
					   TFD_CLOEXEC | TFD_NONBLOCK);
		check_errno(p->fds[i], "timerfd_create");
		ee.data.u32 = i;
		check_errno(epoll_ctl(p->ep, EPOLL_CTL_ADD, p->fds[i], &ee),
			    "epoll_ctl");
	}
	return 0;
}

static void timerfd_start(struct purg *p, __u32 i)
{
	turn_times(p);
	check_errno(timerfd_settime(p->fds[i], TFD_TIMER_ABSTIME,
				    &p->its[p->cls[i]], NULL),
		    "timerfd_settime");
}

static void timerfd_stop(struct purg *p, __u32 i)
{
	static const struct itimerspec off;

	check_errno(timerfd_settime(p->fds[i], 0, &off, NULL),
		    "timerfd_settime");
}

static void timerfd_step(struct purg *p)
{
	static struct epoll_event ee[BATCH];
	__u64 ticks;
	int k, j;

	do {
		k = epoll_wait(p->ep, ee, BATCH, 0);
		check_errno(k, "epoll_wait");
		reported(p);
		for (j = 0; j < k; j++)
			if (read(p->fds[ee[j].data.u32], &ticks,
				 sizeof(ticks)) == sizeof(ticks))
				expire(p, tag_of(p, ee[j].data.u32));
	} while (k == BATCH);
}

static void timerfd_teardown(struct purg *p)
{
	unsigned int i;

	for (i = 0; i < p->n; i++)
		close(p->fds[i]);
	close(p->ep);
	free(p->fds);
}

/*
 * driver: the driver alone, with no timers at all, so that what each way
 * adds to a request can be told from what the driver costs.  Its requests
 * never expire, and it has nothing to judge or to drain.
 */
static int driver_setup(struct purg *p)
{
	return 0;
}

static void driver_request(struct purg *p, __u32 i)
{
}

static void driver_nothing(struct purg *p)
{
}

enum { TIMEOUTS, RING, IOCTL, HEAP, COMMON, URING, TIMERFD, DRIVER, NR_WAYS };

static const struct way ways[NR_WAYS] = {
	[TIMEOUTS] = { "timeouts", no_ring, 0, timeouts_setup, timeouts_start,
		       timeouts_stop, timeouts_step, timeouts_teardown, 1,
		       .htw = 1 },
	[RING] = { "ring", no_ring, 0, ring_setup, ring_start, ring_stop,
		   ring_step, ring_teardown, 1, .racy = 1, .htw = 1 },
	[IOCTL] = { "ioctl", no_htw, 0, ioctl_setup, ioctl_start, ioctl_stop,
		    ioctl_step, ioctl_teardown, 1, .htw = 1 },
	[HEAP] = { "libevent_heap", "", 0, heap_setup, event_start, event_stop,
		   event_step, event_teardown, NSEC_PER_USEC, .in_loop = 1 },
	[COMMON] = { "libevent_common", "", 0, common_setup, event_start,
		     event_stop, event_step, event_teardown, NSEC_PER_USEC,
		     .in_loop = 1 },
	[URING] = { "io_uring", no_uring, URING_MAX, uring_setup, uring_start,
		    uring_stop, uring_step, uring_teardown, 1, .racy = 1 },
	[TIMERFD] = { "timerfd", "", TIMERFD_MAX, timerfd_setup, timerfd_start,
		      timerfd_stop, timerfd_step, timerfd_teardown, 1 },
	[DRIVER] = { "driver", "", 0, driver_setup, driver_request,
		     driver_request, driver_nothing, driver_nothing, 1,
		     .baseline = 1 },
};

static void free_driver(struct purg *p)
{
	free(p->deadline);
	free(p->gen);
	free(p->cls);
	free(p->pos);
	free(p->comp);
	free(p->free);
}

/*
 * The driver's arrays, and the way's room for @p->n requests.  Every way
 * of a size draws the same requests.
 */
static int begin(struct purg *p)
{
	unsigned int i;
	int ret;

	p->deadline = zalloc(p->n * sizeof(*p->deadline));
	p->gen = zalloc(p->n * sizeof(*p->gen));
	p->cls = zalloc(p->n * sizeof(*p->cls));
	p->pos = zalloc(p->n * sizeof(*p->pos));
	p->comp = zalloc(p->n * sizeof(*p->comp));
	p->free = zalloc(p->n * sizeof(*p->free));
	/* Taken from the end: request 0 first. */
	for (i = 0; i < p->n; i++)
		p->free[i] = p->n - 1 - i;
	p->nfree = p->n;
	p->draw = (unsigned long)p->n * 7919;
	ret = p->way->setup(p);
	if (ret < 0)
		free_driver(p);
	return ret;
}

/* Start the @p->n requests, 64 a clock read and a look. */
static void fill(struct purg *p)
{
	unsigned int j;

	while (p->inflight < p->n) {
		p->now = now_ns();
		for (j = 0; j < CHUNK && p->inflight < p->n; j++)
			start_one(p);
		look(p);
	}
}

/*
 * Untimed turns, WARM_NS past the last start: the first 100 ms timeouts
 * expire, and a turn more starts the requests that replace them (but for
 * a way whose turns take that long: it cannot keep up, whatever it does).
 */
static void warm_up(struct purg *p)
{
	__u64 until = p->now + WARM_NS;

	do
		turn(p);
	while ((__s64)(p->now - until) < 0);
	if (now_ns() - p->now < WARM_NS)
		turn(p);
}

struct span {
	__u64 wall;
	__u64 cpu;
	unsigned long reqs;
	unsigned long expired;
};

/*
 * Turns for @ns, one at least: their wall-clock and CPU time, and the
 * requests they started.
 */
static void timed(struct purg *p, __u64 ns, struct span *s)
{
	unsigned long started = p->started, expired = p->tally->expired;
	__u64 c0 = cpu_ns(), t0 = now_ns();

	do
		turn(p);
	while (p->now - t0 < ns);
	s->wall = now_ns() - t0;
	s->cpu = cpu_ns() - c0;
	s->reqs = p->started - started;
	s->expired = p->tally->expired - expired;
}

/*
 * The timed turns are over: look until every request due by now is
 * reported, for LOST_SLACK at most; those due LOST_SLACK before the end
 * and not reported are lost.
 */
static void drain(struct purg *p)
{
	__u64 t_fin;
	unsigned int i;

	p->t_end = now_ns();
	p->due = 0;
	for (i = 0; i < p->n; i++)
		if (p->deadline[i] && p->deadline[i] <= p->t_end)
			p->due++;
	p->draining = 1;
	for (;;) {
		look(p);
		if (!p->due || now_ns() - p->t_end > LOST_SLACK)
			break;
		usleep(1000);
	}
	t_fin = now_ns();
	for (i = 0; i < p->n; i++)
		if (p->deadline[i] && p->deadline[i] + LOST_SLACK < t_fin)
			p->tally->lost++;
}

/* Drain, let the way go, and count. */
static void end(struct purg *p)
{
	if (!p->way->baseline)
		drain(p);
	p->way->teardown(p);
	p->tally->started += p->started;
	free_driver(p);
}

/*
 * One run of way @w with @n in flight: CPU ns per request started in the
 * timed turns, and wall-clock ns in *@wall.  -1 if it cannot run (said).
 */
static double measure(int w, unsigned int n, struct tally *y, double *wall)
{
	struct purg p = { .way = &ways[w], .tally = y, .n = n };
	struct span s;
	int ret = begin(&p);

	if (ret < 0) {
		note("%s: skipped at %u in flight: %s", ways[w].name, n,
		     strerror(-ret));
		return -1;
	}
	fill(&p);
	if (!smoke)
		warm_up(&p);
	timed(&p, smoke ? SMOKE_NS : LOOP_NS, &s);
	end(&p);
	if (!s.reqs)
		return -1;
	y->timed += s.reqs;
	y->timed_expired += s.expired;
	*wall = (double)s.wall / s.reqs;
	return (double)s.cpu / s.reqs;
}

/* Can way @w run with @n in flight?  Says why not, once. */
static int can_run(int w, unsigned int n)
{
	static int said[NR_WAYS];
	const struct way *way = &ways[w];

	if (way->missing[0]) {
		if (!said[w]++)
			note("%s: skipped: %s", way->name, way->missing);
		return 0;
	}
	if (way->max_n && n > way->max_n) {
		note("%s: skipped at %u in flight: %u at most%s", way->name, n,
		     way->max_n, w == URING ?
		     " (a remove walks the list of all timeouts)" : "");
		return 0;
	}
	if (way->htw && with_slack(n) > max_timers) {
		note("%s: skipped at %u in flight: max_timers is %u", way->name,
		     n, max_timers);
		return 0;
	}
	if (w != IOCTL && way->htw && n > RING_MAX) {
		note("%s: skipped at %u in flight: %u slots at most",
		     way->name, n, RING_MAX);
		return 0;
	}
	return 1;
}

/* The "#" lines of what way @w did at @n in flight; a failure is noted. */
static void tell(int w, unsigned int n, double cpu, double wall,
		 const struct tally *y)
{
	const struct htw_timeouts_stats *s = &y->lib;
	double p99 = late_p99_ms(y);
	char late[32] = "-";

	if (p99 >= 0)
		snprintf(late, sizeof(late), "%.2f ms", p99);
	note("purgatory %s %u: %.1f ns CPU, %.1f ns wall a request, %lu a round, %.2f%% expired",
	     ways[w].name, n, cpu, wall, y->timed / rounds,
	     100.0 * y->timed_expired / (y->timed ? y->timed : 1));
	note("purgatory %s %u: all runs: %lu started, %lu expired, %lu stale",
	     ways[w].name, n, y->started, y->expired, y->stale);
	note("purgatory %s %u: early %lu, late p99 %s, lost %lu, after stop %lu",
	     ways[w].name, n, y->early, late, y->lost, y->after_stop);
	if (w == TIMEOUTS) {
		note("purgatory timeouts %u: libhtw: %llu stored, %llu armed, %llu submits",
		     n, (unsigned long long)s->stored,
		     (unsigned long long)s->armed,
		     (unsigned long long)s->submits);
		note("purgatory timeouts %u: libhtw: %llu stale, %llu rearmed, %llu unexpected",
		     n, (unsigned long long)s->stale,
		     (unsigned long long)s->rearmed,
		     (unsigned long long)s->unexpected);
	}
	if (y->timed_expired * 10 > y->timed)
		note("purgatory %s %u: over 10%% expired: %u / 64 turns outlast 100 ms",
		     ways[w].name, n, n);
	if (!y->early && !y->lost && !y->after_stop)
		return;
	if (ways[w].htw) {
		note("FAIL: %s at %u in flight: early %lu, lost %lu, after stop %lu",
		     ways[w].name, n, y->early, y->lost, y->after_stop);
		failed = 1;
	} else {
		note("purgatory %s %u: early, lost or after stop: the anchor's, not judged",
		     ways[w].name, n);
	}
}

/* @v less the driver's own @base, or -1 if @v did not run. */
static double net(double v, double base)
{
	return v < 0 ? -1 : v > base ? v - base : 0;
}

/* Every way at @n in flight, once a round. */
static void purgatory_at(unsigned int n)
{
	static const struct { const char *name; int way; } vs[] = {
		{ "heap", HEAP }, { "common", COMMON },
		{ "io_uring", URING }, { "ring", RING },
	};
	static double cpu[NR_WAYS][MAX_ROUNDS], wall[NR_WAYS][MAX_ROUNDS];
	static struct tally y[NR_WAYS];
	double med[NR_WAYS], mw;
	int run[NR_WAYS];
	unsigned int r, k;
	char name[96];
	int w;

	memset(y, 0, sizeof(y));
	for (w = 0; w < NR_WAYS; w++)
		run[w] = can_run(w, n);
	for (r = 0; r < rounds; r++)
		for (w = 0; w < NR_WAYS; w++)
			cpu[w][r] = run[w] ? measure(w, n, &y[w], &wall[w][r]) :
					     -1;
	for (w = 0; w < NR_WAYS; w++) {
		med[w] = median(cpu[w], rounds);
		mw = median(wall[w], rounds);
		if (med[w] >= 0)
			tell(w, n, med[w], mw, &y[w]);
	}
	for (k = 0; k < ARRAY_SIZE(vs); k++) {
		snprintf(name, sizeof(name), "purgatory_cpu_vs_%s_%u",
			 vs[k].name, n);
		report(name, med[TIMEOUTS], med[vs[k].way], "ns");
	}
	/* What the timers add to a request, the driver's own cost taken off. */
	for (k = 0; k < ARRAY_SIZE(vs) && med[DRIVER] >= 0; k++) {
		snprintf(name, sizeof(name), "purgatory_net_cpu_vs_%s_%u",
			 vs[k].name, n);
		report(name, net(med[TIMEOUTS], med[DRIVER]),
		       net(med[vs[k].way], med[DRIVER]), "ns");
	}
	for (w = 0; w < NR_WAYS; w++)
		if (med[w] >= 0)
			printf("plot purgatory %s %u %.1f\n", ways[w].name, n,
			       med[w]);
	fflush(stdout);
}

/* What "make run" shows: the timeouts way alone, told in words. */
static int run_demo(void)
{
	struct tally y = {};
	struct purg p = { .way = &ways[TIMEOUTS], .tally = &y, .n = DEMO_N };
	const struct htw_timeouts_stats *s = &y.lib;
	double p99;
	struct span sp;

	if (no_ring[0]) {
		fprintf(stderr, "htw_purgatory: --demo needs htw's ring timers: %s\n",
			no_ring);
		return 1;
	}
	if (max_timers < with_slack(DEMO_N)) {
		fprintf(stderr, "htw_purgatory: --demo needs max_timers >= %u\n",
			with_slack(DEMO_N));
		return 1;
	}
	check(begin(&p), "htw_timeouts_create");
	fill(&p);
	timed(&p, DEMO_NS, &sp);
	end(&p);
	p99 = late_p99_ms(&y);
	printf("Request timeouts on libhtw: %u requests in flight, each with a timeout\n"
	       "of 100 ms, 1 s or 30 s, stopped when it completes; 1%% never complete.\n",
	       DEMO_N);
	printf("  %llu requests started, %.0f a second: %llu completed, %llu timed out\n",
	       (unsigned long long)s->started,
	       sp.reqs * (double)NSEC_PER_SEC / (sp.wall ? sp.wall : 1),
	       (unsigned long long)s->stopped, (unsigned long long)s->expired);
	printf("  timed out: %lu early, %lu lost, %lu after a stop; 99%% within %.2f ms\n",
	       y.early, y.lost, y.after_stop, p99 < 0 ? 0 : p99);
	printf("  libhtw: %.1f%% of the starts a store alone, %llu arms in %llu calls,\n"
	       "  %llu stale completions, %llu rearmed, %llu unexpected\n",
	       100.0 * s->stored / (s->started ? s->started : 1),
	       (unsigned long long)s->armed, (unsigned long long)s->submits,
	       (unsigned long long)s->stale, (unsigned long long)s->rearmed,
	       (unsigned long long)s->unexpected);
	printf("  CPU: %.0f ns a request, user and system\n",
	       (double)sp.cpu / (sp.reqs ? sp.reqs : 1));
	if (y.early || y.lost || y.after_stop) {
		printf("FAIL: an expiry came early, never came, or came after its stop\n");
		return 1;
	}
	return 0;
}

/*
 * Can this kernel remove a timeout?  io_uring may be missing (ENOSYS),
 * forbidden (EPERM: kernel.io_uring_disabled), or too old.  Sets no_uring
 * if it cannot.
 */
static void uring_probe(void)
{
	struct __kernel_timespec ts = kts_of(now_ns() + 3600 * NSEC_PER_SEC);
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0), res = -EPROTO;

	if (ret < 0) {
		snprintf(no_uring, sizeof(no_uring), "io_uring_queue_init: %s",
			 strerror(-ret));
		return;
	}
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_timeout(sqe, &ts, 0, IORING_TIMEOUT_ABS);
	sqe->user_data = 1;
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_timeout_remove(sqe, 1, 0);
	sqe->user_data = REMOVE_TAG;
	/* The remove completes as it is submitted, whatever its result. */
	ret = io_uring_submit_and_wait(&ring, 1);
	while (ret >= 0 && !io_uring_peek_cqe(&ring, &cqe)) {
		if (cqe->user_data == REMOVE_TAG)
			res = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
	}
	if (ret >= 0)
		ret = res;
	if (ret < 0)
		snprintf(no_uring, sizeof(no_uring),
			 "IORING_OP_TIMEOUT_REMOVE: %s", strerror(-ret));
	io_uring_queue_exit(&ring);
}

/* /dev/htw and its ring timers: sets no_htw and no_ring if missing. */
static void htw_probe(int anchors_only)
{
	struct htw_info info = {};
	struct htw_ring ring;
	int fd, ret;

	if (anchors_only) {
		snprintf(no_htw, sizeof(no_htw), "--anchors-only");
		memcpy(no_ring, no_htw, sizeof(no_ring));
		return;
	}
	fd = htw_open(O_CLOEXEC);
	if (fd < 0) {
		snprintf(no_htw, sizeof(no_htw), "open %s: %s",
			 HTW_DEVICE_PATH, strerror(-fd));
		memcpy(no_ring, no_htw, sizeof(no_ring));
		return;
	}
	check(htw_get_info(fd, &info), "HTW_IOC_INFO");
	max_timers = info.max_timers;
	ret = htw_ring_map(fd, 1, 1, &ring);
	if (ret == -ENOTTY)
		snprintf(no_ring, sizeof(no_ring),
			 "HTW_IOC_RING_SETUP: ENOTTY (module ABI version %u)",
			 info.version);
	else if (!ret)
		htw_ring_unmap(&ring);
	else
		check(ret, "htw_ring_map");
	close(fd);
}

int main(int argc, char **argv)
{
	unsigned int max = 1000000, n[MAX_SIZES], nn, i;
	int anchors_only = 0, demo_only = 0;
	const struct bench_option opts[] = {
		{ "--smoke", &smoke }, { "--demo", &demo_only },
		{ "--anchors-only", &anchors_only },
		{ "--rounds", NULL, &rounds }, { "--max", NULL, &max }, {}
	};
	struct event_base *base;

	if (bench_options(argc, argv, opts, usage))
		return 2;
	if (smoke) {
		rounds = 1;
		max = 1000;
	}
	if (!rounds || rounds > MAX_ROUNDS || !max || max > 10000000 ||
	    (demo_only && (smoke || anchors_only))) {
		fputs(usage, stderr);
		return 2;
	}
	rnd = make_draws(RND_LEN);
	check(htw_oplist_init(&list, OPLIST_SIZE), "htw_oplist_init");
	htw_probe(anchors_only);
	if (demo_only)
		return run_demo();
	nn = bench_sizes(n, 10000, 1000000, max, smoke);
	make_room((n[nn - 1] < TIMERFD_MAX ? n[nn - 1] : TIMERFD_MAX) + 1024);
	uring_probe();
	base = new_base();
	note("turns of %d requests: a clock read, %d stops, starts to keep N in flight, a look",
	     CHUNK, CHUNK);
	note("libevent %s on %s, with precise timers", event_get_version(),
	     event_base_get_method(base));
	event_base_free(base);

	for (i = 0; i < nn; i++)
		purgatory_at(n[i]);
	if (failed) {
		note("FAIL: an expiry came early, was lost, or came after its stop");
		return 1;
	}
	return 0;
}
