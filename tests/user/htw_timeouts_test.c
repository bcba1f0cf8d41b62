// SPDX-License-Identifier: GPL-2.0
/*
 * libhtw's request timeouts: their errors, a restart that is a store, a
 * stop that is never reported, an expiry reported once and never early,
 * the store that lands after the kernel read the slot, an oracle of two
 * threads starting and stopping at random, a program scribbling over
 * what it shares with the kernel, and the README's example.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define MS		NSEC_PER_MSEC

static __u64 now(void)
{
	return htw_now(CLOCK_MONOTONIC);
}

static struct htw_timeouts_stats stats_of(struct htw_timeouts *t)
{
	struct htw_timeouts_stats s;

	htw_timeouts_stats(t, &s);
	return s;
}

/*
 * Wait for the file to poll readable and take its expiries into @e, until
 * @n came or @ms passed; return how many came.  A test that expects @n
 * waits for @n, so that only a broken library waits out @ms; one that
 * expects none waits a short @ms for any.
 */
static unsigned int wait_expired(struct htw_timeouts *t, int fd,
				 struct htw_timeout_expiry *e, unsigned int n,
				 unsigned int ms)
{
	__u64 end = now() + ms * MS;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	unsigned int got = 0;
	int ret;

	while (got < n && now() < end) {
		if (htw_timeouts_submit(t) < 0 || poll(&pfd, 1, 100) < 0)
			break;
		if (!(pfd.revents & POLLIN))
			continue;
		ret = htw_timeouts_expired(t, e + got, n - got);
		if (ret < 0)
			break;
		got += ret;
	}
	return got;
}

FIXTURE(timeouts) {
	int fd;
	struct htw_timeouts *t;
	__u64 base;
};

FIXTURE_SETUP(timeouts)
{
	self->base = htw_user_bytes();
	self->fd = htw_open(O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, htw_timeouts_create(self->fd, 64, &self->t));
}

FIXTURE_TEARDOWN(timeouts)
{
	htw_timeouts_free(self->t);
	close(self->fd);
	/* Everything the ring held went back with the file. */
	EXPECT_EQ(self->base, htw_user_bytes());
}

TEST(create_refuses_no_timeouts_and_a_file_with_ring_timers)
{
	struct htw_timeouts *t;
	int fd = htw_open(O_CLOEXEC);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, htw_timeouts_create(fd, 0, &t));
	ASSERT_EQ(0, htw_timeouts_create(fd, 8, &t));
	/* A file has one set of ring timers. */
	EXPECT_EQ(-EBUSY, htw_timeouts_create(fd, 8, &t));
	close(fd);
	htw_timeouts_free(t);
	htw_timeouts_free(NULL);
}

TEST_F(timeouts, class_is_one_per_duration_and_refuses_what_cannot_be)
{
	int c = htw_timeouts_class(self->t, 100 * MS), i;

	ASSERT_EQ(0, c);
	EXPECT_EQ(c, htw_timeouts_class(self->t, 100 * MS));
	EXPECT_EQ(-EINVAL, htw_timeouts_class(self->t, 0));
	EXPECT_EQ(-EINVAL, htw_timeouts_class(self->t, HTW_TIME_MAX + 1));
	for (i = 1; i < HTW_TIMEOUTS_CLASSES_MAX; i++)
		ASSERT_EQ(i, htw_timeouts_class(self->t, (100 + i) * MS));
	EXPECT_EQ(-ENOSPC, htw_timeouts_class(self->t, 1));
}

TEST_F(timeouts, start_refuses_no_class_a_deadline_too_far_and_one_too_many)
{
	int c = htw_timeouts_class(self->t, NSEC_PER_SEC), i;
	__u64 t0 = now();
	__u64 h;

	ASSERT_LE(0, c);
	EXPECT_EQ(-EINVAL, htw_timeout_start(self->t, c + 1, t0, 0, &h));
	EXPECT_EQ(-EINVAL, htw_timeout_start(self->t, c, HTW_TIME_MAX, 0, &h));
	EXPECT_EQ(-EINVAL, htw_timeout_start(self->t, c, ~0ULL, 0, &h));
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, htw_timeout_start(self->t, c, t0, i, &h));
	EXPECT_EQ(-ENOSPC, htw_timeout_start(self->t, c, t0, 64, &h));
	/* Once one stops, there is room again. */
	ASSERT_EQ(0, htw_timeout_stop(self->t, h));
	EXPECT_EQ(0, htw_timeout_start(self->t, c, t0, 64, &h));
	EXPECT_EQ(64, stats_of(self->t).started - 1);
}

TEST_F(timeouts, stop_of_a_timeout_not_running_is_enoent)
{
	int c = htw_timeouts_class(self->t, 20 * MS);
	struct htw_timeout_expiry e[2];
	__u64 h, h2;

	ASSERT_LE(0, c);
	EXPECT_EQ(-ENOENT, htw_timeout_stop(self->t, 0));
	EXPECT_EQ(-ENOENT, htw_timeout_stop(self->t, 1ULL << 32 | 1000));
	ASSERT_EQ(0, htw_timeout_start(self->t, c, now(), 1, &h));
	ASSERT_EQ(0, htw_timeout_stop(self->t, h));
	EXPECT_EQ(-ENOENT, htw_timeout_stop(self->t, h));
	/* The same slot, a new timeout: the old handle does not reach it. */
	ASSERT_EQ(0, htw_timeout_start(self->t, c, now(), 2, &h2));
	EXPECT_EQ((__u32)h, (__u32)h2);
	EXPECT_EQ(-ENOENT, htw_timeout_stop(self->t, h));
	/* Nor does the handle of one that expired. */
	ASSERT_EQ(1, wait_expired(self->t, self->fd, e, 1, HTW_WAIT_MS));
	EXPECT_EQ(h2, e[0].handle);
	EXPECT_EQ(-ENOENT, htw_timeout_stop(self->t, h2));
}

TEST_F(timeouts, an_expiry_is_reported_once_and_never_early)
{
	int c = htw_timeouts_class(self->t, 30 * MS), i;
	struct htw_timeout_expiry e[8];
	__u64 t0 = now(), seen;
	__u64 h[3];

	ASSERT_LE(0, c);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, htw_timeout_start(self->t, c, t0, 100 + i, &h[i]));
	ASSERT_EQ(3, wait_expired(self->t, self->fd, e, 3, HTW_WAIT_MS));
	seen = now();
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(t0 + 30 * MS, e[i].deadline);
		EXPECT_LE(e[i].deadline, seen);
		EXPECT_EQ(h[e[i].tag - 100], e[i].handle);
	}
	/* Not twice. */
	EXPECT_EQ(0, wait_expired(self->t, self->fd, e, 8, 100));
	EXPECT_EQ(3, stats_of(self->t).expired);
}

TEST_F(timeouts, a_stopped_timeout_is_never_reported)
{
	int c = htw_timeouts_class(self->t, 20 * MS);
	__u64 end = now() + HTW_WAIT_MS * MS, h;
	struct htw_timeout_expiry e[4];

	ASSERT_LE(0, c);
	ASSERT_EQ(0, htw_timeout_start(self->t, c, now(), 7, &h));
	ASSERT_EQ(0, htw_timeout_stop(self->t, h));
	/* The kernel's timer of the slot comes, and is the library's. */
	while (!stats_of(self->t).stale && now() < end)
		ASSERT_EQ(0, wait_expired(self->t, self->fd, e, 4, 100));
	EXPECT_EQ(1, stats_of(self->t).stale);
	EXPECT_EQ(0, stats_of(self->t).expired);
}

TEST_F(timeouts, a_restart_on_a_slot_the_kernel_holds_is_a_store)
{
	int c = htw_timeouts_class(self->t, 10 * NSEC_PER_SEC), i;
	struct htw_timeouts_stats s;
	__u64 h;

	ASSERT_LE(0, c);
	ASSERT_EQ(0, htw_timeout_start(self->t, c, now(), 0, &h));
	ASSERT_EQ(0, htw_timeout_stop(self->t, h));
	ASSERT_EQ(1, htw_timeouts_submit(self->t));
	for (i = 1; i <= 1000; i++) {
		ASSERT_EQ(0, htw_timeout_start(self->t, c, now(), i, &h));
		ASSERT_EQ(0, htw_timeout_stop(self->t, h));
	}
	/* Nothing queued: no call into the kernel. */
	EXPECT_EQ(0, htw_timeouts_submit(self->t));
	s = stats_of(self->t);
	EXPECT_EQ(1, s.armed);
	EXPECT_EQ(1000, s.stored);
	EXPECT_EQ(1, s.submits);
}

/*
 * The race of a store and the kernel's read of the slot, forced: the
 * kernel reads the slot (and delivers it for the old deadline) before the
 * next timeout's start stores its deadline there, so the start's store is
 * too late.  The library must find out from the completion and arm the
 * slot again; the new timeout expires once, at its own deadline.
 */
TEST_F(timeouts, a_store_after_the_kernel_read_the_slot_is_armed_again)
{
	int c = htw_timeouts_class(self->t, 50 * MS);
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	struct htw_ring_enter enter = { 0 };
	struct htw_timeout_expiry e[4];
	__u64 h, t1;

	ASSERT_LE(0, c);
	ASSERT_EQ(0, htw_timeout_start(self->t, c, now(), 1, &h));
	ASSERT_EQ(0, htw_timeout_stop(self->t, h));
	ASSERT_EQ(1, htw_timeouts_submit(self->t));
	/*
	 * The slot's deadline comes: the file polls readable, and the kernel
	 * settles the slot by then or in the call below, which runs what is
	 * due.  Its completion is on the ring, not reaped.
	 */
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	ASSERT_EQ(0, ioctl(self->fd, HTW_IOC_RING_ENTER, &enter));
	/* The library does not know yet: it stores, as for a held slot. */
	t1 = now();
	ASSERT_EQ(0, htw_timeout_start(self->t, c, t1, 2, &h));
	EXPECT_EQ(1, stats_of(self->t).stored);
	ASSERT_EQ(1, wait_expired(self->t, self->fd, e, 1, HTW_WAIT_MS));
	EXPECT_LE(t1 + 50 * MS, now());
	EXPECT_EQ(2, e[0].tag);
	EXPECT_EQ(t1 + 50 * MS, e[0].deadline);
	/* The case was reached: the completion said the store lost. */
	EXPECT_EQ(1, stats_of(self->t).rearmed);
	EXPECT_EQ(0, wait_expired(self->t, self->fd, e, 4, 150));
}

/*
 * An arm the kernel cannot take waits in the library, and is made at the
 * next call that can: the file's descriptor is made another file's while
 * the settling of two stores that came too late must arm their slots
 * again, with the submission ring full.  The timeout still running
 * expires once, in time; the one stopped meanwhile never.
 */
TEST(an_arm_that_fails_is_made_again_later)
{
	struct htw_ring_enter enter;
	struct htw_timeout_expiry e[80];
	struct htw_timeouts *t;
	int fd, saved, null, c, far, i, got;
	__u64 h[2], other, t1;

	/* 1,024 timeouts: a submission ring of 64 entries. */
	fd = htw_open(O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, htw_timeouts_create(fd, 1024, &t));
	c = htw_timeouts_class(t, 50 * MS);
	far = htw_timeouts_class(t, 3600 * NSEC_PER_SEC);
	ASSERT_LE(0, c);
	ASSERT_LE(0, far);
	/* Two slots held by the kernel for deadlines that then pass. */
	t1 = now();
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, htw_timeout_start(t, c, t1, i, &h[i]));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, htw_timeout_stop(t, h[i]));
	ASSERT_EQ(2, htw_timeouts_submit(t));
	/* Both completions on the ring, not reaped. */
	enter = (struct htw_ring_enter){
		.min_complete = 2, .flags = HTW_ENTER_GETEVENTS,
	};
	ASSERT_EQ(0, ioctl(fd, HTW_IOC_RING_ENTER, &enter));
	/* Started again by stores that came too late, as in the test above. */
	t1 = now();
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, htw_timeout_start(t, c, t1, 10 + i, &h[i]));
	/* A full submission ring of arms, not handed over. */
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, htw_timeout_start(t, far, now(), 100 + i, &other));
	/* The file's number, another file: no call into the kernel works. */
	saved = dup(fd);
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, saved);
	ASSERT_LE(0, null);
	ASSERT_EQ(fd, dup2(null, fd));
	got = htw_timeouts_expired(t, e, 80);
	EXPECT_EQ(-ENOTTY, got);
	EXPECT_EQ(2, stats_of(t).rearmed);
	/* One of the two stops while its arm waits. */
	ASSERT_EQ(0, htw_timeout_stop(t, h[1]));
	EXPECT_EQ(-ENOTTY, htw_timeouts_submit(t));
	/* The file again: the arm that waited is made, and runs in time. */
	ASSERT_EQ(fd, dup2(saved, fd));
	EXPECT_LT(0, htw_timeouts_submit(t));
	ASSERT_EQ(1, wait_expired(t, fd, e, 1, HTW_WAIT_MS));
	EXPECT_EQ(10, e[0].tag);
	EXPECT_EQ(t1 + 50 * MS, e[0].deadline);
	EXPECT_LE(t1 + 50 * MS, now());
	EXPECT_EQ(0, wait_expired(t, fd, e, 80, 150));
	htw_timeouts_free(t);
	close(saved);
	close(null);
	close(fd);
}

TEST_F(timeouts, the_file_is_pollable_by_epoll)
{
	int c = htw_timeouts_class(self->t, 20 * MS), ep, n;
	struct epoll_event ev = { .events = EPOLLIN };
	struct htw_timeout_expiry e[2];
	__u64 t0 = now();
	__u64 h;

	ASSERT_LE(0, c);
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->fd, &ev));
	ASSERT_EQ(0, htw_timeout_start(self->t, c, t0, 5, &h));
	ASSERT_EQ(1, htw_timeouts_submit(self->t));
	n = 0;
	while (!n && now() < t0 + HTW_WAIT_MS * MS) {
		ASSERT_LE(0, epoll_wait(ep, &ev, 1, 1000));
		n = htw_timeouts_expired(self->t, e, 2);
		ASSERT_LE(0, n);
	}
	ASSERT_EQ(1, n);
	EXPECT_EQ(5, e[0].tag);
	EXPECT_LE(t0 + 20 * MS, now());
	close(ep);
}

/* The oracle: each request as the program saw it. */
struct request {
	__u64 handle;
	__u64 deadline;
	__u8 running;
	__u8 stopped;
	__u8 reported;
};

struct oracle {
	unsigned int seed;
	__u64 run_ns;
	unsigned long started, stopped, expired, early, twice, after_stop;
	unsigned long lost, unknown, errors;
	struct htw_timeouts_stats stats;
};

#define ORACLE_REQS	65536
#define ORACLE_LIVE	512

/* Take the expiries there are and hold each to the oracle. */
static void oracle_take(struct oracle *o, struct htw_timeouts *t,
			struct request *req, __u32 *live, unsigned int *nr_live)
{
	struct htw_timeout_expiry e[64];
	unsigned int i, j;
	__u64 seen;
	int n;

	do {
		n = htw_timeouts_expired(t, e, 64);
		if (n < 0) {
			o->errors++;
			return;
		}
		seen = now();
		for (i = 0; i < (unsigned int)n; i++) {
			struct request *r = &req[e[i].tag % ORACLE_REQS];

			if (e[i].tag >= ORACLE_REQS || r->handle != e[i].handle) {
				o->unknown++;
				continue;
			}
			o->expired++;
			o->early += seen < r->deadline || e[i].deadline != r->deadline;
			o->twice += r->reported;
			o->after_stop += r->stopped;
			r->reported = 1;
			r->running = 0;
			for (j = 0; j < *nr_live; j++)
				if (live[j] == e[i].tag) {
					live[j] = live[--*nr_live];
					break;
				}
		}
	} while (n == 64);
}

/*
 * One thread's requests: started and stopped at random, on three classes
 * of short durations, about a third left to expire; then every running
 * one waited for.
 */
static void *oracle_thread(void *arg)
{
	struct oracle *o = arg;
	static const __u64 dur[] = { 10 * MS, 30 * MS, 70 * MS };
	struct request *req = calloc(ORACLE_REQS, sizeof(*req));
	__u32 live[ORACLE_LIVE];
	unsigned int nr_live = 0, k;
	struct htw_timeouts *t;
	struct pollfd pfd;
	__u64 seed = o->seed, end, t0;
	__u32 next = 0, i;
	int cls[3], fd;

	fd = htw_open(O_CLOEXEC | O_NONBLOCK);
	if (!req || fd < 0 || htw_timeouts_create(fd, ORACLE_LIVE, &t)) {
		o->errors++;
		return NULL;
	}
	for (k = 0; k < 3; k++)
		cls[k] = htw_timeouts_class(t, dur[k]);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	end = now() + o->run_ns;
	while (now() < end && next < ORACLE_REQS) {
		t0 = now();
		for (k = 0; k < 16; k++) {
			/* Stop a random running one, two times in three. */
			if (nr_live && htw_rand_below(&seed, 3)) {
				i = htw_rand_below(&seed, nr_live);
				if (htw_timeout_stop(t, req[live[i]].handle)) {
					o->errors++;
				} else {
					req[live[i]].stopped = 1;
					req[live[i]].running = 0;
					o->stopped++;
				}
				live[i] = live[--nr_live];
			}
			if (nr_live == ORACLE_LIVE || next == ORACLE_REQS)
				continue;
			i = htw_rand_below(&seed, 3);
			if (htw_timeout_start(t, cls[i], t0, next,
					      &req[next].handle)) {
				o->errors++;
				continue;
			}
			req[next].deadline = t0 + dur[i];
			req[next].running = 1;
			live[nr_live++] = next++;
			o->started++;
		}
		if (htw_timeouts_submit(t) < 0)
			o->errors++;
		if (poll(&pfd, 1, htw_rand_below(&seed, 3)) > 0)
			oracle_take(o, t, req, live, &nr_live);
	}
	/* Every running one must come, once. */
	end = now() + HTW_WAIT_MS * MS;
	while (nr_live && now() < end) {
		if (htw_timeouts_submit(t) < 0)
			o->errors++;
		if (poll(&pfd, 1, 100) > 0)
			oracle_take(o, t, req, live, &nr_live);
	}
	for (i = 0; i < next; i++)
		o->lost += !req[i].stopped && !req[i].reported;
	htw_timeouts_stats(t, &o->stats);
	htw_timeouts_free(t);
	close(fd);
	free(req);
	return NULL;
}

/* The long runs, under a timeout of their own. */
FIXTURE(long_run) {};
FIXTURE_SETUP(long_run) {}
FIXTURE_TEARDOWN(long_run) {}

TEST_F_TIMEOUT(long_run, an_oracle_of_two_threads_finds_every_expiry_real, 300)
{
	bool full = htw_env_u64("HTW_FULL", 0) == 1;
	struct oracle o[2] = { 0 };
	__u64 base = htw_user_bytes();
	pthread_t th[2];
	int i;

	for (i = 0; i < 2; i++) {
		o[i].seed = (unsigned int)now() * 2 + i + 1;
		o[i].run_ns = (full ? 20 : 3) * NSEC_PER_SEC;
		TH_LOG("thread %d: seed %u", i, o[i].seed);
		ASSERT_EQ(0, pthread_create(&th[i], NULL, oracle_thread, &o[i]));
	}
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
		TH_LOG("thread %d: %lu started, %lu stopped, %lu expired",
		       i, o[i].started, o[i].stopped, o[i].expired);
		TH_LOG("stored %llu, armed %llu, stale %llu, rearmed %llu, submits %llu",
		       (unsigned long long)o[i].stats.stored,
		       (unsigned long long)o[i].stats.armed,
		       (unsigned long long)o[i].stats.stale,
		       (unsigned long long)o[i].stats.rearmed,
		       (unsigned long long)o[i].stats.submits);
		EXPECT_EQ(0, o[i].errors);
		EXPECT_EQ(0, o[i].early);
		EXPECT_EQ(0, o[i].twice);
		EXPECT_EQ(0, o[i].after_stop);
		EXPECT_EQ(0, o[i].lost);
		EXPECT_EQ(0, o[i].unknown);
		EXPECT_EQ(0, o[i].stats.unexpected);
		/* It ran the cases it is for: stores, stops and expiries. */
		EXPECT_LT(0, o[i].stats.stored);
		EXPECT_LT(0, o[i].stopped);
		EXPECT_LT(0, o[i].expired);
		EXPECT_EQ(o[i].started, o[i].stopped + o[i].expired);
	}
	EXPECT_EQ(base, htw_user_bytes());
}

struct scribble {
	__u64 *words;
	size_t n;
	int stop;
	__u64 seed;
};

static void *scribbler(void *arg)
{
	struct scribble *sc = arg;
	__u64 seed = sc->seed;
	unsigned long ops = 0;

	while (!__atomic_load_n(&sc->stop, __ATOMIC_RELAXED)) {
		__atomic_store_n(&sc->words[htw_rand_below(&seed, sc->n)],
				 htw_rand(&seed), __ATOMIC_RELAXED);
		/* On one CPU (UML), the others' turn now and then. */
		if (!(++ops % 1024))
			sched_yield();
	}
	return NULL;
}

/*
 * The writable part of the file's shared memory, as the library mapped it
 * (the device's mapping at offset 0 in /proc/self/maps): 0, or -1.
 */
static int shared_part(__u64 **words, size_t *n)
{
	unsigned long from, to, off;
	char line[512], perms[8];
	FILE *f = fopen("/proc/self/maps", "re");
	int ret = -1;

	if (!f)
		return -1;
	while (ret && fgets(line, sizeof(line), f)) {
		if (!strstr(line, HTW_DEV) ||
		    sscanf(line, "%lx-%lx %7s %lx", &from, &to, perms, &off) != 4 ||
		    perms[1] != 'w' || off != HTW_RING_OFF_RW)
			continue;
		*words = (__u64 *)from;
		*n = (to - from) / sizeof(__u64);
		ret = 0;
	}
	fclose(f);
	return ret;
}

/*
 * A child whose every shared word is scribbled over while it starts, stops
 * and takes timeouts: the library survives it, the kernel reports nothing
 * (the rig reads its log), and the account is back where it was.
 */
static int scribbled_child(__u64 seed)
{
	struct htw_timeout_expiry e[64];
	static struct scribble sc;
	struct htw_timeouts *t;
	__u64 h[256] = { 0 };
	__u64 t0, end;
	pthread_t th;
	int fd, cls, i, k;

	fd = htw_open(O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || htw_timeouts_create(fd, 256, &t))
		return 2;
	cls = htw_timeouts_class(t, 5 * MS);
	sc = (struct scribble){ .seed = seed };
	if (shared_part(&sc.words, &sc.n))
		return 3;
	if (pthread_create(&th, NULL, scribbler, &sc))
		return 2;
	/* 20,000 rounds, or 10 s where system calls are slow (UML). */
	end = now() + 10 * NSEC_PER_SEC;
	for (i = 0; i < 20000 && now() < end; i++) {
		t0 = now();
		k = htw_rand_below(&seed, 256);
		if (h[k])
			htw_timeout_stop(t, h[k]);
		h[k] = 0;
		if (htw_rand_below(&seed, 2))
			htw_timeout_start(t, cls, t0, k, &h[k]);
		htw_timeouts_expired(t, e, 64);
	}
	__atomic_store_n(&sc.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	htw_timeouts_free(t);
	close(fd);
	/* It ran: the calls came back, whatever the scribbler wrote. */
	return i >= 100 ? 0 : 4;
}

TEST_F_TIMEOUT(long_run, a_scribbled_program_harms_only_its_own_timeouts, 600)
{
	__u64 base = htw_user_bytes(), seed = now() | 1;
	int status;
	pid_t pid;

	TH_LOG("seed %llu", (unsigned long long)seed);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(scribbled_child(seed));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(base, htw_user_bytes());
}

TEST(readme_requests_example_runs)
{
	unsigned int timed_out = 0;
	char line[256];
	FILE *p;

	p = htw_tool_open("htw_readme_requests");
	if (!p)
		SKIP(return, "htw_readme_requests is not on $PATH");
	while (fgets(line, sizeof(line), p)) {
		unsigned int req;
		int got = sscanf(line, "request %u timed out", &req);

		ASSERT_EQ(1, got) {
			TH_LOG("%s", line);
		}
		/* Only the requests it never answered: every hundredth. */
		EXPECT_EQ(0, req % 100);
		timed_out++;
	}
	ASSERT_EQ(0, pclose(p));
	EXPECT_EQ(10, timed_out);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
