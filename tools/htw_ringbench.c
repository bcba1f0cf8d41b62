// SPDX-License-Identifier: GPL-2.0
/*
 * htw_ringbench - /dev/htw's ring timers against what a program would pick
 * instead: timerfd, libevent and io_uring, measured side by side
 *
 *   htw_ringbench [--rounds N] [--max N]   the benchmark (as root)
 *   htw_ringbench --anchors-only [...]      timerfd, libevent and io_uring
 *                                           alone: needs no /dev/htw
 *   htw_ringbench --smoke                   every measure once, tiny:
 *                                           proves the program still works
 *
 * --max N caps every count of timers (connections, pending timers,
 * expiries) at N, and the slots of the memory measure at 10 N.
 *
 * - extend: N connections (1,000, 10,000 and 100,000) each hold an idle
 *   timeout 10 s away, and random connections push theirs to 10 s from
 *   now: ns per extension.  Every way reads the clock once per 64
 *   extensions, as a server does once per turn of its event loop (libevent
 *   refreshes its cached time then, its loop running).  The ways: timerfd
 *   (timerfd_settime()), ioctl (HTW_IOC_MODIFY), batch (HTW_IOC_BATCH of
 *   64), ring (htw_ring_extend(), a store), libevent_heap (event_add() on
 *   its min-heap), libevent_common (event_add() on a common-timeout queue),
 *   io_uring (IORING_TIMEOUT_UPDATE, 64 a submit).
 * - arm_cancel: per turn, 64 timers armed and the 64 of the turn before
 *   cancelled, beside 100,000 timers pending an hour away (io_uring, and
 *   its timerfd anchor, beside 1,000 and 10,000 as well): ns per pair.
 * - ring_expiries: 100,000 ring timers due over 100 ms, waited for with
 *   epoll and reaped from the completion ring, against 100,000 timerfds in
 *   an epoll set: events/s, and the events early, lost or delivered twice.
 * - ring_kernel_memory_per_timer: the kernel's free memory (MemFree) that
 *   ring timers and timerfds take, per timer; ring_user_bytes_per_timer,
 *   what HTW_IOC_INFO's user_bytes charges for a ring timer.
 *
 * Each measure runs in rounds, every way once per round, so that all see
 * the same machine; medians are reported, one line each for rig/bench.py:
 *
 *   bench user <measure> <value> <anchor> <unit>
 *
 * with "-" for a side that could not run (a "#" line says why), or the
 * measure "skipped" if neither could; and for rig/plot.sh one line per way
 * and count of connections of the extend measure:
 *
 *   plot extend <way> <connections> <ns per extension>
 *
 * Loops run in turns of 64 operations; a pilot in the first round sizes
 * each loop to about 0.4 s, at most 1,000,000 operations, so that the slow
 * ways (io_uring's update walks the list of all its timeouts) stay within
 * a few seconds under emulation; the pilot of a way that slow is that
 * round's measure.  Times are on CLOCK_MONOTONIC.
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

/* Operations per turn of a loop: per clock read, system call or batch. */
#define CHUNK		64
#define IDLE_NS		(10 * NSEC_PER_SEC)
#define FAR_NS		(3600 * NSEC_PER_SEC)
/* What a loop is sized to, and the most operations it runs. */
#define LOOP_NS		(400 * NSEC_PER_MSEC)
#define MAX_OPS		1000000UL
#define SMOKE_TURNS	4
/* Random draws, reused in a cycle: a multiple of CHUNK. */
#define RND_LEN		(1024 * 1024)
#define SQ_ENTRIES	4096
#define OPLIST_SIZE	4096
#define URING_SQ	256
/* user_data of io_uring's updates, removes and cancel; timeouts' are i + 1. */
#define UPDATE_TAG	0x4000000000000000ULL
#define REMOVE_TAG	(UPDATE_TAG + 1)
#define CANCEL_TAG	(UPDATE_TAG + 2)
/* How long to wait for an event or completion that must come. */
#define WAIT_MS		60000
#define MAX_SIZES	3

static const char usage[] =
	"usage: htw_ringbench [--smoke] [--anchors-only] [--rounds N] [--max N]\n";
static unsigned int rounds = 5;
static int smoke;
static __u32 *rnd;
static struct htw_oplist list;

/* Why /dev/htw, its ring timers or io_uring cannot be measured: "" if they can. */
static char no_htw[128], no_ring[128], no_uring[128];

/*
 * The timers of one way in one measure; each way uses its own fields.
 * Timers 0 to @n - 1 are the connections (extend) or the pending timers
 * (arm_cancel); arm_cancel's own are @n to @n + 2 * CHUNK - 1, two sets
 * of CHUNK that the turns alternate between.
 */
struct conns {
	unsigned int n;
	unsigned long turn;		/* turns run so far */
	int fd;				/* /dev/htw */
	int *fds;			/* timerfd */
	__u32 *ids;			/* htw ioctl timers */
	struct htw_ring ring;
	struct event_base *base;	/* libevent */
	struct event **evs;
	const struct timeval *tv;	/* what event_add() takes */
	struct timeval idle;
	struct io_uring uring;
	long inflight;			/* io_uring completions to come */
	unsigned long fired;		/* io_uring timeouts that expired */
};

/* The draws of the present turn: CHUNK of them. */
static const __u32 *draws(const struct conns *c)
{
	return &rnd[(c->turn * CHUNK) & (RND_LEN - 1)];
}

/* The set of CHUNK timers a turn of arm_cancel arms, and the one it cancels. */
static unsigned int set_now(const struct conns *c)
{
	return c->n + (c->turn & 1) * CHUNK;
}

static unsigned int set_before(const struct conns *c)
{
	return c->n + (~c->turn & 1) * CHUNK;
}

/* timerfd: one file per connection, re-armed by timerfd_settime(). */

static int timerfd_armed(__u64 deadline)
{
	struct itimerspec its = { .it_value = ts_of(deadline) };
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);

	check_errno(fd, "timerfd_create");
	check_errno(timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL),
		    "timerfd_settime");
	return fd;
}

static int timerfd_setup(struct conns *c, unsigned int room, __u64 delay)
{
	__u64 deadline = now_ns() + delay;
	unsigned int i;

	if (!c->fds)
		c->fds = zalloc((c->n + room) * sizeof(*c->fds));
	for (i = 0; i < c->n + room; i++)
		c->fds[i] = i < c->n ? timerfd_armed(deadline) : -1;
	return 0;
}

static void timerfd_extend(struct conns *c)
{
	struct itimerspec its = { .it_value = ts_of(now_ns() + IDLE_NS) };
	const __u32 *r = draws(c);
	unsigned int j;

	for (j = 0; j < CHUNK; j++)
		check_errno(timerfd_settime(c->fds[pick(r[j], c->n)],
					    TFD_TIMER_ABSTIME, &its, NULL),
			    "timerfd_settime");
}

/* A timerfd is cancelled by closing it, and armed by creating one. */
static void timerfd_arm_cancel(struct conns *c)
{
	unsigned int cur = set_now(c), prev = set_before(c), j;
	__u64 deadline = now_ns() + IDLE_NS;

	for (j = 0; j < CHUNK; j++) {
		if (c->fds[prev + j] >= 0)
			close(c->fds[prev + j]);
		c->fds[prev + j] = -1;
	}
	for (j = 0; j < CHUNK; j++)
		c->fds[cur + j] = timerfd_armed(deadline);
}

static void timerfd_teardown(struct conns *c)
{
	unsigned int i;

	for (i = 0; i < c->n + 2 * CHUNK; i++)
		if (c->fds[i] >= 0)
			close(c->fds[i]);
	free(c->fds);
}

/* /dev/htw's ioctl timers: one HTW_IOC_MODIFY, or batches of CHUNK. */

static int open_htw(void)
{
	int fd = htw_open(O_CLOEXEC);

	check(fd, "open " HTW_DEVICE_PATH);
	return fd;
}

/* Run what @list holds; every operation must succeed. */
static void submit_list(int fd)
{
	int ret = htw_oplist_submit(fd, &list);
	unsigned int i;

	check(ret, "HTW_IOC_BATCH");
	if (ret != (int)list.nr)
		fail("HTW_IOC_BATCH ran %d of %u", ret, list.nr);
	for (i = 0; i < list.nr; i++)
		check(list.ops[i].result, "an operation of HTW_IOC_BATCH");
}

static int ioctl_setup(struct conns *c, unsigned int room, __u64 delay)
{
	struct htw_timer_spec spec = {
		.flags = HTW_TIMER_ABSTIME, .expires = now_ns() + delay,
	};
	unsigned int done, i;

	(void)room;
	c->fd = open_htw();
	c->ids = zalloc(c->n * sizeof(*c->ids));
	for (done = 0; done < c->n; done += list.nr) {
		htw_oplist_reset(&list);
		for (i = done; i < c->n && list.nr < list.size; i++)
			htw_oplist_arm(&list, &spec);
		submit_list(c->fd);
		for (i = 0; i < list.nr; i++)
			c->ids[done + i] = list.ops[i].spec.id;
	}
	return 0;
}

static void ioctl_extend(struct conns *c)
{
	struct htw_timer_spec spec = {
		.flags = HTW_TIMER_ABSTIME, .expires = now_ns() + IDLE_NS,
	};
	const __u32 *r = draws(c);
	unsigned int j;

	for (j = 0; j < CHUNK; j++) {
		spec.id = c->ids[pick(r[j], c->n)];
		check(htw_modify(c->fd, &spec), "HTW_IOC_MODIFY");
	}
}

static void batch_extend(struct conns *c)
{
	struct htw_timer_spec spec = {
		.flags = HTW_TIMER_ABSTIME, .expires = now_ns() + IDLE_NS,
	};
	const __u32 *r = draws(c);
	unsigned int j;

	htw_oplist_reset(&list);
	for (j = 0; j < CHUNK; j++) {
		spec.id = c->ids[pick(r[j], c->n)];
		htw_oplist_modify(&list, &spec);
	}
	submit_list(c->fd);
}

static void ioctl_teardown(struct conns *c)
{
	close(c->fd);
	free(c->ids);
}

/*
 * /dev/htw's ring timers: slot i is timer i.  An extension is a store to
 * the slot; arms and cancels go through the submission ring.
 */

static void ring_submit(struct conns *c)
{
	check(htw_ring_submit(&c->ring, 0), "HTW_IOC_RING_ENTER");
}

/*
 * No ring timer is due in these measures: a completion is an error of a
 * submission entry, or a timer that fired when none should have.
 */
static void ring_quiet(struct conns *c)
{
	struct htw_cqe cqe;

	if (htw_ring_reap(&c->ring, &cqe, 1))
		fail("ring: completion of slot %u gen %u: res %d (%s), deadline %llu",
		     cqe.slot, cqe.gen, cqe.res, strerror(-cqe.res),
		     (unsigned long long)cqe.deadline);
}

/* Queue an entry, first handing the ring to the kernel if it is full. */
static void ring_arm(struct conns *c, __u32 slot, __u32 gen, __u64 deadline)
{
	int ret = htw_ring_arm(&c->ring, slot, gen, deadline);

	if (ret == -EAGAIN) {
		ring_submit(c);
		ret = htw_ring_arm(&c->ring, slot, gen, deadline);
	}
	check(ret, "htw_ring_arm");
}

static void ring_cancel(struct conns *c, __u32 slot, __u32 gen)
{
	int ret = htw_ring_cancel(&c->ring, slot, gen);

	if (ret == -EAGAIN) {
		ring_submit(c);
		ret = htw_ring_cancel(&c->ring, slot, gen);
	}
	check(ret, "htw_ring_cancel");
}

/*
 * Map @slots ring timers on a new file.  -ENOTTY: the module has none;
 * -ENOSPC: more than its max_user_bytes allows the user.
 */
static int ring_map(struct conns *c, unsigned int slots)
{
	int ret;

	c->fd = open_htw();
	ret = htw_ring_map(c->fd, slots, SQ_ENTRIES, &c->ring);
	if (ret == -ENOTTY || ret == -ENOSPC) {
		close(c->fd);
		return ret;
	}
	check(ret, "htw_ring_map");
	return 0;
}

static int ring_setup(struct conns *c, unsigned int room, __u64 delay)
{
	__u64 deadline = now_ns() + delay;
	unsigned int i;
	int ret = ring_map(c, c->n + room);

	if (ret)
		return ret;
	for (i = 0; i < c->n; i++)
		ring_arm(c, i, 0, deadline);
	ring_submit(c);
	ring_quiet(c);
	return 0;
}

/* A plain store per extension: the deadline only ever moves later. */
static void ring_extend(struct conns *c)
{
	__u64 deadline = now_ns() + IDLE_NS;
	const __u32 *r = draws(c);
	unsigned int j;

	for (j = 0; j < CHUNK; j++)
		htw_ring_extend(&c->ring, pick(r[j], c->n), deadline);
}

/*
 * One submission per turn, as an event loop makes: the cancels of the
 * timers armed the turn before, and the new arms, whose generation is
 * the turn's.
 */
static void ring_arm_cancel(struct conns *c)
{
	unsigned int cur = set_now(c), prev = set_before(c), j;
	__u64 deadline = now_ns() + IDLE_NS;

	if (c->turn)
		for (j = 0; j < CHUNK; j++)
			ring_cancel(c, prev + j, c->turn - 1);
	for (j = 0; j < CHUNK; j++)
		ring_arm(c, cur + j, c->turn, deadline);
	ring_submit(c);
	ring_quiet(c);
}

/* close() cancels every timer; what was queued must have gone well. */
static void ring_teardown(struct conns *c)
{
	ring_submit(c);
	ring_quiet(c);
	htw_ring_unmap(&c->ring);
	close(c->fd);
}

/*
 * libevent: one timer event per connection, on a min-heap, or on a
 * common-timeout queue (event_base_init_common_timeout(): every event of
 * it has the same duration, so an add appends to a list).  Its loops run
 * inside an event callback, as a server's do, so that event_add() takes
 * the loop's cached time, which each turn refreshes once.
 */

static void nop_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

static int event_setup(struct conns *c, unsigned int room, __u64 delay,
		       int common)
{
	unsigned int i;

	c->base = event_base_new();
	if (!c->base)
		fail("event_base_new failed");
	c->idle = tv_of(delay);
	c->tv = &c->idle;
	if (common)
		c->tv = event_base_init_common_timeout(c->base, &c->idle);
	if (!c->tv)
		fail("event_base_init_common_timeout failed");
	c->evs = zalloc((c->n + room) * sizeof(*c->evs));
	for (i = 0; i < c->n + room; i++) {
		c->evs[i] = evtimer_new(c->base, nop_cb, NULL);
		if (!c->evs[i] || (i < c->n && evtimer_add(c->evs[i], c->tv)))
			fail("evtimer_new or evtimer_add failed");
	}
	/* arm_cancel's own timers are due in 10 s, on the heap. */
	c->idle = tv_of(IDLE_NS);
	return 0;
}

static int heap_setup(struct conns *c, unsigned int room, __u64 delay)
{
	return event_setup(c, room, delay, 0);
}

static int common_setup(struct conns *c, unsigned int room, __u64 delay)
{
	return event_setup(c, room, delay, 1);
}

/* event_add() of an added event moves its timeout. */
static void event_extend(struct conns *c)
{
	const __u32 *r = draws(c);
	unsigned int j;

	event_base_update_cache_time(c->base);
	for (j = 0; j < CHUNK; j++)
		if (event_add(c->evs[pick(r[j], c->n)], c->tv))
			fail("event_add failed");
}

static void event_arm_cancel(struct conns *c)
{
	unsigned int cur = set_now(c), prev = set_before(c), j;

	event_base_update_cache_time(c->base);
	if (c->turn)
		for (j = 0; j < CHUNK; j++)
			event_del(c->evs[prev + j]);
	for (j = 0; j < CHUNK; j++)
		if (event_add(c->evs[cur + j], &c->idle))
			fail("event_add failed");
}

static void event_teardown(struct conns *c)
{
	unsigned int i;

	for (i = 0; i < c->n + 2 * CHUNK && c->evs[i]; i++)
		event_free(c->evs[i]);
	free(c->evs);
	event_base_free(c->base);
}

/*
 * io_uring: an IORING_OP_TIMEOUT per connection (user_data i + 1); an
 * extension is an IORING_OP_TIMEOUT_REMOVE with IORING_TIMEOUT_UPDATE, a
 * cancel one without; CHUNK of them per io_uring_submit().
 */

static struct io_uring_sqe *uring_sqe(struct conns *c)
{
	return uring_get_sqe(&c->uring);
}

/*
 * Account for one completion: updates, removes and the final cancel
 * must succeed; a timeout completes when removed (-ECANCELED) or, had a
 * measure outlasted its 10 s, fired (-ETIME, and its update -ENOENT).
 */
static void uring_cqe(void *arg, const struct io_uring_cqe *cqe)
{
	struct conns *c = arg;
	int res = cqe->res;

	if (cqe->user_data == CANCEL_TAG) {
		c->inflight += res > 0 ? res - 1 : -1;
	} else if (cqe->user_data == UPDATE_TAG ||
		   cqe->user_data == REMOVE_TAG) {
		c->inflight -= cqe->user_data == REMOVE_TAG && res ? 2 : 1;
		if (res == -ENOENT || res == -EALREADY)
			c->fired++;
		else if (res)
			check(res, "IORING_OP_TIMEOUT_REMOVE");
	} else if (res == -ECANCELED) {
		c->inflight--;
	} else if (res != -ETIME) {
		check(res ? res : -EPROTO, "IORING_OP_TIMEOUT");
	}
}

static void uring_reap(struct conns *c)
{
	uring_reap_all(&c->uring, uring_cqe, c);
}

/* Wait for the completions still to come; they must, within WAIT_MS. */
static void uring_drain(struct conns *c)
{
	struct __kernel_timespec ts = kts_of(WAIT_MS * NSEC_PER_MSEC);
	struct io_uring_cqe *cqe;

	uring_reap(c);
	while (c->inflight > 0) {
		check(io_uring_wait_cqe_timeout(&c->uring, &cqe, &ts),
		      "io_uring: waiting for completions");
		uring_reap(c);
	}
}

/* Submit, and wait for the completions the removes or updates make. */
static void uring_submit(struct conns *c, unsigned int wait)
{
	check(io_uring_submit_and_wait(&c->uring, wait), "io_uring_submit");
	uring_reap(c);
}

static void uring_timeout(struct conns *c, unsigned int i,
			  struct __kernel_timespec *ts)
{
	struct io_uring_sqe *sqe = uring_sqe(c);

	io_uring_prep_timeout(sqe, ts, 0, IORING_TIMEOUT_ABS);
	sqe->user_data = i + 1;
}

static int uring_setup(struct conns *c, unsigned int room, __u64 delay)
{
	struct __kernel_timespec ts = kts_of(now_ns() + delay);
	unsigned int i;
	int ret;

	(void)room;
	ret = io_uring_queue_init(URING_SQ, &c->uring, 0);
	if (ret < 0)
		return ret;
	for (i = 0; i < c->n; i++)
		uring_timeout(c, i, &ts);
	uring_submit(c, 0);
	return 0;
}

static void uring_extend(struct conns *c)
{
	struct __kernel_timespec ts = kts_of(now_ns() + IDLE_NS);
	const __u32 *r = draws(c);
	struct io_uring_sqe *sqe;
	unsigned int j;

	for (j = 0; j < CHUNK; j++) {
		sqe = uring_sqe(c);
		io_uring_prep_timeout_update(sqe, &ts, pick(r[j], c->n) + 1,
					     IORING_TIMEOUT_ABS);
		sqe->user_data = UPDATE_TAG;
	}
	c->inflight += CHUNK;
	uring_submit(c, CHUNK);
}

/*
 * A remove finds its timeout by walking the list of the ring's timeouts
 * from the oldest: past every pending one, to reach those of the turn
 * before.  Each remove completes, and so does the timeout it removed.
 */
static void uring_arm_cancel(struct conns *c)
{
	struct __kernel_timespec ts = kts_of(now_ns() + IDLE_NS);
	unsigned int cur = set_now(c), prev = set_before(c), j;
	struct io_uring_sqe *sqe;

	if (c->turn) {
		for (j = 0; j < CHUNK; j++) {
			sqe = uring_sqe(c);
			io_uring_prep_timeout_remove(sqe, prev + j + 1, 0);
			sqe->user_data = REMOVE_TAG;
		}
		c->inflight += 2 * CHUNK;
	}
	for (j = 0; j < CHUNK; j++)
		uring_timeout(c, cur + j, &ts);
	uring_submit(c, c->turn ? CHUNK : 0);
}

/*
 * Cancel every timeout before the ring goes, and wait for them: the
 * ring's exit work would do it later, in a worker, while the next way
 * runs.  A kernel older than IORING_ASYNC_CANCEL_ANY (5.19) refuses the
 * cancel, and the exit work does it.
 */
static void uring_teardown(struct conns *c)
{
	struct io_uring_sqe *sqe = uring_sqe(c);

	io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ALL |
			       IORING_ASYNC_CANCEL_ANY);
	sqe->user_data = CANCEL_TAG;
	c->inflight++;
	uring_submit(c, 0);
	uring_drain(c);
	if (c->fired)
		note("io_uring: %lu timeouts fired during the measure", c->fired);
	io_uring_queue_exit(&c->uring);
}

/*
 * Can this kernel update a timeout?  io_uring may be missing (ENOSYS),
 * forbidden (EPERM: kernel.io_uring_disabled), or older than
 * IORING_TIMEOUT_UPDATE (5.11).  Sets no_uring if it cannot.
 */
static void uring_probe(void)
{
	struct __kernel_timespec ts = kts_of(now_ns() + FAR_NS);
	struct conns c = { .n = 1 };
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	int ret = io_uring_queue_init(8, &c.uring, 0);

	if (ret < 0) {
		snprintf(no_uring, sizeof(no_uring), "io_uring_queue_init: %s",
			 strerror(-ret));
		return;
	}
	uring_timeout(&c, 0, &ts);
	sqe = uring_sqe(&c);
	io_uring_prep_timeout_update(sqe, &ts, 1, IORING_TIMEOUT_ABS);
	sqe->user_data = UPDATE_TAG;
	ret = io_uring_submit_and_wait(&c.uring, 1);
	if (ret >= 0)
		ret = io_uring_peek_cqe(&c.uring, &cqe);
	if (ret >= 0)
		ret = cqe->res;
	if (ret < 0)
		snprintf(no_uring, sizeof(no_uring),
			 "IORING_TIMEOUT_UPDATE: %s", strerror(-ret));
	io_uring_queue_exit(&c.uring);
}

/* /dev/htw and its ring timers: sets no_htw and no_ring if missing. */
static void htw_probe(int anchors_only)
{
	struct htw_info info = {};
	struct conns c = {};
	int ret;

	if (anchors_only) {
		snprintf(no_htw, sizeof(no_htw), "--anchors-only");
		snprintf(no_ring, sizeof(no_ring), "--anchors-only");
		return;
	}
	c.fd = open_htw();
	check(htw_get_info(c.fd, &info), "HTW_IOC_INFO");
	close(c.fd);
	ret = ring_map(&c, 1);
	if (ret == -ENOTTY) {
		snprintf(no_ring, sizeof(no_ring),
			 "HTW_IOC_RING_SETUP: ENOTTY (module ABI version %u)",
			 info.version);
		return;
	}
	check(ret, "htw_ring_map");
	htw_ring_unmap(&c.ring);
	close(c.fd);
}

/*
 * A way to keep timers: how it arms @n of them (and makes room for
 * 2 * CHUNK more), and one turn of each measure it takes part in.
 */
struct way {
	const char *name;
	const char *missing;	/* why it cannot run: "" if it can */
	int (*setup)(struct conns *c, unsigned int room, __u64 delay);
	void (*extend)(struct conns *c);
	void (*arm_cancel)(struct conns *c);
	void (*teardown)(struct conns *c);
	int in_loop;		/* its loops run in an event callback */
};

enum { TIMERFD, IOCTL, BATCH, RING, HEAP, COMMON, URING, NR_WAYS };

static const struct way ways[NR_WAYS] = {
	[TIMERFD] = { "timerfd", "", timerfd_setup, timerfd_extend,
		      timerfd_arm_cancel, timerfd_teardown },
	[IOCTL] = { "ioctl", no_htw, ioctl_setup, ioctl_extend, NULL,
		    ioctl_teardown },
	[BATCH] = { "batch", no_htw, ioctl_setup, batch_extend, NULL,
		    ioctl_teardown },
	[RING] = { "ring", no_ring, ring_setup, ring_extend, ring_arm_cancel,
		   ring_teardown },
	[HEAP] = { "libevent_heap", "", heap_setup, event_extend,
		   event_arm_cancel, event_teardown, 1 },
	[COMMON] = { "libevent_common", "", common_setup, event_extend, NULL,
		     event_teardown, 1 },
	[URING] = { "io_uring", no_uring, uring_setup, uring_extend,
		    uring_arm_cancel, uring_teardown },
};

/*
 * How many turns make a loop of LOOP_NS, into *@turns: a pilot of 16
 * turns, or of LOOP_NS / 16 if that comes first, which also warms the
 * caches.  A pilot that took LOOP_NS / 2 is a measure of its own, of a
 * slow way: its ns per operation, else -1.
 */
static double calibrate(struct conns *c, void (*turn)(struct conns *c),
			unsigned long *turns)
{
	__u64 t0 = now_ns(), dt;
	unsigned long i = 0, want;

	do {
		turn(c);
		c->turn++;
		i++;
		dt = now_ns() - t0;
	} while (dt < LOOP_NS / 16 && i < 16);
	want = LOOP_NS * i / (dt ? dt : 1);
	if (want > MAX_OPS / CHUNK)
		want = MAX_OPS / CHUNK;
	*turns = want ? want : 1;
	return dt >= LOOP_NS / 2 ? (double)dt / (i * CHUNK) : -1;
}

/* ns per operation of *@turns turns, sized by the first round's pilot. */
static double timed(struct conns *c, void (*turn)(struct conns *c),
		    unsigned long *turns)
{
	unsigned long i;
	double ns;
	__u64 t0;

	if (!*turns && smoke) {
		*turns = SMOKE_TURNS;
	} else if (!*turns) {
		ns = calibrate(c, turn, turns);
		if (ns >= 0)
			return ns;
	}
	t0 = now_ns();
	for (i = 0; i < *turns; i++, c->turn++)
		turn(c);
	return (double)(now_ns() - t0) / (*turns * CHUNK);
}

struct in_loop {
	struct conns *c;
	void (*turn)(struct conns *c);
	unsigned long *turns;
	double ns;
};

static void in_loop_cb(evutil_socket_t fd, short what, void *arg)
{
	struct in_loop *l = arg;

	(void)fd;
	(void)what;
	l->ns = timed(l->c, l->turn, l->turns);
}

/* timed(), from a callback of @c's event loop. */
static double timed_in_loop(struct conns *c, void (*turn)(struct conns *c),
			    unsigned long *turns)
{
	struct in_loop l = { c, turn, turns, -1 };
	struct event *ev = event_new(c->base, -1, 0, in_loop_cb, &l);

	if (!ev)
		fail("event_new failed");
	event_active(ev, EV_TIMEOUT, 1);
	if (event_base_loop(c->base, EVLOOP_ONCE) < 0 || l.ns < 0)
		fail("event_base_loop did not run the measure");
	event_free(ev);
	return l.ns;
}

/*
 * One way, one measure: @n timers @delay away, then the timed turns.
 * -1 if the way cannot run here (said once).
 */
static double measure(int w, unsigned int n, __u64 delay, int arm_cancel,
		      unsigned long *turns)
{
	static int said[NR_WAYS];
	const struct way *way = &ways[w];
	void (*turn)(struct conns *c) = arm_cancel ? way->arm_cancel :
						      way->extend;
	struct conns c = { .n = n };
	double ns;
	int ret = way->missing[0] ? -1 : way->setup(&c, 2 * CHUNK, delay);

	if (ret < 0) {
		if (!said[w]++)
			note("%s: skipped: %s", way->name, way->missing[0] ?
			     way->missing : strerror(-ret));
		return -1;
	}
	/* The first turn of arm_cancel cancels nothing: it is not timed. */
	if (arm_cancel) {
		turn(&c);
		c.turn++;
	}
	if (way->in_loop)
		ns = timed_in_loop(&c, turn, turns);
	else
		ns = timed(&c, turn, turns);
	way->teardown(&c);
	return ns;
}

/* Extensions at @n connections, every way once per round. */
static void extend_at(unsigned int n)
{
	static double ns[NR_WAYS][MAX_ROUNDS];
	unsigned long turns[NR_WAYS] = {};
	double med[NR_WAYS];
	char name[96];
	unsigned int r;
	int w;

	for (r = 0; r < rounds; r++)
		for (w = 0; w < NR_WAYS; w++)
			ns[w][r] = measure(w, n, IDLE_NS, 0, &turns[w]);
	for (w = 0; w < NR_WAYS; w++) {
		med[w] = median(ns[w], rounds);
		if (turns[w])
			note("extend %s %u: %lu extensions a round", ways[w].name,
			     n, turns[w] * CHUNK);
	}
	for (w = 0; w < NR_WAYS; w++) {
		snprintf(name, sizeof(name), "extend_%s_%u", ways[w].name, n);
		report(name, med[w], w == TIMERFD ? -1 : med[TIMERFD],
		       "ns/extension");
	}
	snprintf(name, sizeof(name), "extend_ring_vs_libevent_common_%u", n);
	report(name, med[RING], med[COMMON], "ns/extension");
	for (w = 0; w < NR_WAYS; w++)
		if (med[w] >= 0)
			printf("plot extend %s %u %.1f\n", ways[w].name, n, med[w]);
	fflush(stdout);
}

/*
 * Arm+cancel pairs beside timers pending an hour away: every way beside
 * the most, io_uring and timerfd beside each count of @p.
 */
static void arm_cancel_all(const unsigned int *p, unsigned int np)
{
	static const int big[] = { RING, TIMERFD, HEAP, URING };
	static double ns[2 * MAX_SIZES + 2][MAX_ROUNDS];
	unsigned long turns[2 * MAX_SIZES + 2] = {};
	double med[2 * MAX_SIZES + 2];
	unsigned int r, i, k, nc = 0;
	int way[2 * MAX_SIZES + 2];
	unsigned int pending[2 * MAX_SIZES + 2];
	char name[96];

	for (i = 0; i < 4; i++, nc++) {
		way[nc] = big[i];
		pending[nc] = p[np - 1];
	}
	for (i = 0; i + 1 < np; i++) {
		way[nc] = TIMERFD;
		pending[nc++] = p[i];
		way[nc] = URING;
		pending[nc++] = p[i];
	}
	for (r = 0; r < rounds; r++)
		for (k = 0; k < nc; k++)
			ns[k][r] = measure(way[k], pending[k], FAR_NS, 1, &turns[k]);
	for (k = 0; k < nc; k++) {
		med[k] = median(ns[k], rounds);
		if (turns[k])
			note("arm_cancel %s beside %u: %lu pairs a round",
			     ways[way[k]].name, pending[k], turns[k] * CHUNK);
	}
	report("arm_cancel_ring", med[0], med[1], "ns/pair");
	report("arm_cancel_ring_vs_libevent", med[0], med[2], "ns/pair");
	report("arm_cancel_libevent", med[2], med[1], "ns/pair");
	for (i = 0; i < np; i++) {
		/* io_uring beside p[i], and timerfd beside as many. */
		k = i + 1 < np ? 5 + 2 * i : 3;
		snprintf(name, sizeof(name), "arm_cancel_io_uring_%u", p[i]);
		report(name, med[k], med[k == 3 ? 1 : k - 1], "ns/pair");
	}
}

/* What an expiry run delivered. */
struct delivery {
	double rate;			/* events/s, first deadline to last event */
	unsigned long early, lost, dups;
};

/* Add @d's counts of what must never happen to @sum's. */
static void add_counts(struct delivery *sum, const struct delivery *d)
{
	sum->early += d->early;
	sum->lost += d->lost;
	sum->dups += d->dups;
}

/*
 * epoll_wait(), again when interrupted: io_uring's task work, which a
 * ring's exit leaves behind, interrupts a wait as a signal does.
 */
static int wait_events(int ep, struct epoll_event *ee, int nr)
{
	int k;

	do
		k = epoll_wait(ep, ee, nr, WAIT_MS);
	while (k < 0 && errno == EINTR);
	check_errno(k, "epoll_wait");
	return k;
}

/* Expiry i of @n is due at start + i * spread / n. */
static __u64 due(__u64 start, unsigned int i, unsigned int n, __u64 spread)
{
	return start + (__u64)i * spread / n;
}

/*
 * When the first of @n timers may be due: once they are all armed.  25 us
 * a timer covers a timerfd's creation, arming and epoll_ctl() under
 * emulation.
 */
static __u64 arm_time(unsigned int n)
{
	return 100 * NSEC_PER_MSEC + n * 25000ULL;
}

/* Count a reaped completion: early, twice, or the first of its slot (1). */
static unsigned int ring_event(const struct htw_cqe *cqe, const __u64 *when,
			       unsigned char *seen, unsigned int n, __u64 t,
			       struct delivery *d)
{
	if (cqe->res || cqe->slot >= n || cqe->gen != 1)
		fail("ring: completion of slot %u gen %u: res %d", cqe->slot,
		     cqe->gen, cqe->res);
	if (t < cqe->deadline || t < when[cqe->slot])
		d->early++;
	if (!seen[cqe->slot]++)
		return 1;
	d->dups++;
	return 0;
}

/*
 * Run the due ring timers and reap their completions, the time of each
 * reap in *@t; the number of slots delivered for the first time.
 */
static unsigned int ring_run(struct conns *c, const __u64 *when,
			     unsigned char *seen, struct delivery *d, __u64 *t)
{
	static struct htw_cqe cqes[1024];
	unsigned int i, r, got = 0;

	ring_submit(c);
	while ((r = htw_ring_reap(&c->ring, cqes, 1024))) {
		*t = now_ns();
		for (i = 0; i < r; i++)
			got += ring_event(&cqes[i], when, seen, c->n, *t, d);
	}
	return got;
}

/* Arm @n ring timers due over @spread, and deliver them through epoll. */
static void ring_expiries(unsigned int n, __u64 spread, struct delivery *d)
{
	struct epoll_event ee = { .events = EPOLLIN };
	__u64 *when = zalloc(n * sizeof(*when)), start, t = 0, t_end;
	unsigned char *seen = zalloc(n);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	unsigned int got = 0, i;
	struct conns c = { .n = n };

	check_errno(ep, "epoll_create1");
	check(ring_map(&c, n), "htw_ring_map");
	start = now_ns() + arm_time(n);
	for (i = 0; i < n; i++) {
		when[i] = due(start, i, n, spread);
		ring_arm(&c, i, 1, when[i]);
	}
	ring_submit(&c);
	check_errno(epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ee), "epoll_ctl");
	while (got < n && wait_events(ep, &ee, 1))
		got += ring_run(&c, when, seen, d, &t);
	/* One more run: a second delivery of any slot would show. */
	ring_run(&c, when, seen, d, &t_end);
	d->lost = n - got;
	d->rate = got * 1e9 / (t > start ? t - start : 1);
	close(ep);
	htw_ring_unmap(&c.ring);
	close(c.fd);
	free(seen);
	free(when);
}

/* The same with @n timerfds in an epoll set, as tools/htw_bench.c does. */
static void timerfd_expiries(unsigned int n, __u64 spread, struct delivery *d)
{
	struct epoll_event *ee = zalloc(1024 * sizeof(*ee));
	__u64 *when = zalloc(n * sizeof(*when)), start, t = 0, ticks;
	unsigned char *seen = zalloc(n);
	int *fds = zalloc(n * sizeof(*fds));
	int ep = epoll_create1(EPOLL_CLOEXEC), k;
	unsigned int i, got = 0;

	check_errno(ep, "epoll_create1");
	start = now_ns() + arm_time(n);
	for (i = 0; i < n; i++) {
		struct itimerspec its = {};
		struct epoll_event e = { .events = EPOLLIN, .data.u32 = i };

		when[i] = due(start, i, n, spread);
		its.it_value = ts_of(when[i]);
		fds[i] = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		check_errno(fds[i], "timerfd_create");
		check_errno(timerfd_settime(fds[i], TFD_TIMER_ABSTIME, &its, NULL),
			    "timerfd_settime");
		check_errno(epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e), "epoll_ctl");
	}
	while (got < n) {
		k = wait_events(ep, ee, 1024);
		if (!k)
			break;
		t = now_ns();
		for (i = 0; i < (unsigned int)k; i++) {
			unsigned int j = ee[i].data.u32;

			if (read(fds[j], &ticks, sizeof(ticks)) != sizeof(ticks))
				continue;
			d->early += t < when[j];
			if (seen[j]++)
				d->dups++;
			else
				got++;
		}
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
	d->lost = n - got;
	d->rate = got * 1e9 / (t > start ? t - start : 1);
	close(ep);
	free(fds);
	free(seen);
	free(when);
	free(ee);
}

/* @n expiries due over 100 ms, ring against timerfds, in rounds. */
static void expiries(unsigned int n)
{
	double ring[MAX_ROUNDS], tfd[MAX_ROUNDS];
	struct delivery rd = {}, td = {}, sr = {}, st = {};
	__u64 spread = 100 * NSEC_PER_MSEC;
	unsigned int r;

	for (r = 0; r < rounds; r++) {
		ring[r] = -1;
		if (!no_ring[0]) {
			rd = (struct delivery) {};
			ring_expiries(n, spread, &rd);
			ring[r] = rd.rate;
			add_counts(&sr, &rd);
		}
		td = (struct delivery) {};
		timerfd_expiries(n, spread, &td);
		tfd[r] = td.rate;
		add_counts(&st, &td);
	}
	report("ring_expiries_over_100ms_epoll", median(ring, rounds),
	       median(tfd, rounds), "events/s");
	/* Counts: the sums over the rounds. */
	report("ring_early", no_ring[0] ? -1.0 : sr.early, st.early, "events");
	report("ring_lost", no_ring[0] ? -1.0 : sr.lost, st.lost, "events");
	report("ring_duplicates", no_ring[0] ? -1.0 : sr.dups, st.dups, "events");
}

/* A field of /proc/meminfo, in bytes. */
static long long meminfo_bytes(const char *key)
{
	char name[64];
	long long v;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		fail("/proc/meminfo: %s", strerror(errno));
	while (fscanf(f, "%63s %lld kB\n", name, &v) == 2) {
		if (!strcmp(name, key)) {
			fclose(f);
			return v * 1024;
		}
	}
	fclose(f);
	fail("/proc/meminfo has no %s", key);
	return -1;
}

/*
 * Let the frees of the measures before end (RCU's callbacks of a hundred
 * thousand closed files take a while under emulation): until MemFree moves
 * less than 256 kB in 100 ms, or for 3 s at most.
 */
static void settle(void)
{
	long long was = meminfo_bytes("MemFree:"), now;
	unsigned int i;

	for (i = 0; i < 30; i++, was = now) {
		usleep(100 * 1000);
		now = meminfo_bytes("MemFree:");
		if (now - was < 256 * 1024 && was - now < 256 * 1024)
			break;
	}
}

/*
 * Kernel memory per ring timer: MemFree's drop, which counts every page
 * the kernel took (slab, vmalloc, the shared pages), over @slots armed
 * slots; and what HTW_IOC_INFO charges the user for them.  -1 if the file
 * cannot have so many (ENOSPC: max_user_bytes).
 */
static double ring_memory(unsigned int slots, double *charged)
{
	struct htw_info before = {}, after = {};
	struct conns c = { .n = slots };
	long long free0, slab0;
	int ret;

	c.fd = open_htw();
	check(htw_get_info(c.fd, &before), "HTW_IOC_INFO");
	close(c.fd);
	settle();
	free0 = meminfo_bytes("MemFree:");
	slab0 = meminfo_bytes("SUnreclaim:");
	ret = ring_setup(&c, 0, FAR_NS);
	if (ret == -ENOSPC)
		return -1;
	check(ret, "htw_ring_map");
	/* The program allocated nothing between the counts, but page tables. */
	free0 -= meminfo_bytes("MemFree:");
	slab0 = meminfo_bytes("SUnreclaim:") - slab0;
	check(htw_get_info(c.fd, &after), "HTW_IOC_INFO");
	*charged = (double)(after.user_bytes - before.user_bytes) / slots;
	note("ring memory, %u slots: MemFree -%lld kB, SUnreclaim +%lld kB, user_bytes +%llu",
	     slots, free0 / 1024, slab0 / 1024,
	     (unsigned long long)(after.user_bytes - before.user_bytes));
	ring_teardown(&c);
	/* Below 0 is noise larger than the measure: none of it is the ring's. */
	return free0 > 0 ? (double)free0 / slots : 0;
}

/* The same for @n timerfds: MemFree's drop per timerfd armed. */
static double timerfd_memory(unsigned int n)
{
	struct conns c = { .n = n };
	long long free0, slab0;

	/* The array's pages are the program's: touched before the count. */
	c.fds = zalloc((n + 2 * CHUNK) * sizeof(*c.fds));
	memset(c.fds, 0xff, (n + 2 * CHUNK) * sizeof(*c.fds));
	settle();
	free0 = meminfo_bytes("MemFree:");
	slab0 = meminfo_bytes("SUnreclaim:");
	timerfd_setup(&c, 2 * CHUNK, FAR_NS);
	free0 -= meminfo_bytes("MemFree:");
	slab0 = meminfo_bytes("SUnreclaim:") - slab0;
	note("timerfd memory, %u timerfds: MemFree -%lld kB, SUnreclaim +%lld kB",
	     n, free0 / 1024, slab0 / 1024);
	timerfd_teardown(&c);
	return free0 > 0 ? (double)free0 / n : 0;
}

/*
 * 1,000,000 slots if the module allows a file as many timers, else
 * 100,000 (or its max_timers); --max 100,000 by default.
 */
static void memory_per_timer(unsigned int max, unsigned int tfds)
{
	double ring = -1, charged = -1, tfd;
	struct htw_info info = {};
	unsigned int slots;
	int fd;

	if (!no_ring[0]) {
		fd = open_htw();
		check(htw_get_info(fd, &info), "HTW_IOC_INFO");
		close(fd);
		slots = info.max_timers >= 1000000 ? 1000000 : 100000;
		if (slots > info.max_timers)
			slots = info.max_timers;
		if (slots > 10ULL * max)
			slots = 10ULL * max;
		ring = ring_memory(slots, &charged);
		if (ring < 0)
			note("ring memory: skipped: %u slots: ENOSPC", slots);
	}
	tfd = timerfd_memory(tfds);
	report("ring_kernel_memory_per_timer", ring, tfd, "bytes");
	report("ring_user_bytes_per_timer", charged, -1, "bytes");
}

int main(int argc, char **argv)
{
	unsigned int max = 100000, n[MAX_SIZES], p[MAX_SIZES], nn, np, x, i;
	int anchors_only = 0;
	const struct bench_option opts[] = {
		{ "--smoke", &smoke }, { "--anchors-only", &anchors_only },
		{ "--rounds", NULL, &rounds }, { "--max", NULL, &max }, {}
	};

	if (bench_options(argc, argv, opts, usage))
		return 2;
	if (smoke) {
		rounds = 1;
		max = 1000;
	}
	if (!rounds || rounds > MAX_ROUNDS || !max || max > 10000000) {
		fputs(usage, stderr);
		return 2;
	}
	nn = bench_sizes(n, 1000, 100000, max, smoke);
	np = bench_sizes(p, 1000, 100000, max, smoke);
	x = smoke ? 100 : max;
	make_room((n[nn - 1] > x ? n[nn - 1] : x) + 2 * CHUNK + 1024);
	rnd = make_draws(RND_LEN);
	check(htw_oplist_init(&list, OPLIST_SIZE), "htw_oplist_init");
	htw_probe(anchors_only);
	uring_probe();
	note("extensions and turns read the clock once per %d operations",
	     CHUNK);

	for (i = 0; i < nn; i++)
		extend_at(n[i]);
	arm_cancel_all(p, np);
	expiries(x);
	memory_per_timer(smoke ? 100 : max, x);
	return 0;
}
