// SPDX-License-Identifier: GPL-2.0
/*
 * CLOCK_REALTIME timers across sets of the wall clock, beside timerfd.
 *
 * A wall-clock timer is never delivered while clock_gettime(CLOCK_REALTIME)
 * reads less than its expiry: set forward past it, it comes at once; set
 * back, it waits for the wall clock.  One armed with
 * HTW_TIMER_CANCEL_ON_SET gets one event of HTW_EVENT_CANCELED instead, as
 * a timerfd's read() gets -ECANCELED.  The test sets the guest's wall
 * clock, and puts it back as it found it (plus the time that passed).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/timerfd.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define MS		NSEC_PER_MSEC
#define RT		(HTW_TIMER_REALTIME | HTW_TIMER_ABSTIME)
/* Beyond any test's run, however slow the host: only a set brings it. */
#define FAR		(3600 * NSEC_PER_SEC)

static int set_wall(__u64 ns)
{
	struct timespec ts = {
		.tv_sec = ns / NSEC_PER_SEC,
		.tv_nsec = ns % NSEC_PER_SEC,
	};

	return clock_settime(CLOCK_REALTIME, &ts) ? -errno : 0;
}

FIXTURE(rt) {
	int fd;
	__u64 wall0, mono0;
};

FIXTURE_SETUP(rt)
{
	self->wall0 = htw_now(CLOCK_REALTIME);
	self->mono0 = htw_now(CLOCK_MONOTONIC);
	self->fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

/* The wall clock as it was, plus the time that passed. */
FIXTURE_TEARDOWN(rt)
{
	set_wall(self->wall0 + htw_now(CLOCK_MONOTONIC) - self->mono0);
	close(self->fd);
}

/* The next event of @fd within @ms, or false. */
static bool next_event(int fd, struct htw_event *ev, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1 && htw_read_events(fd, ev, 1) == 1;
}

static int rt_timerfd(__u64 expires, bool cancel_on_set)
{
	struct itimerspec its = {
		.it_value = { .tv_sec = expires / NSEC_PER_SEC,
			      .tv_nsec = expires % NSEC_PER_SEC },
	};
	int fd = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd >= 0 &&
	    timerfd_settime(fd, TFD_TIMER_ABSTIME |
			    (cancel_on_set ? TFD_TIMER_CANCEL_ON_SET : 0),
			    &its, NULL)) {
		close(fd);
		return -1;
	}
	return fd;
}

TEST_F(rt, fires_when_the_wall_clock_reaches_it)
{
	__u64 w = htw_now(CLOCK_REALTIME) + 50 * MS, t0;
	struct htw_event ev;
	long id;

	id = htw_arm_id(self->fd, RT, w, 0, 1);
	ASSERT_LT(0, id);
	ASSERT_TRUE(next_event(self->fd, &ev, HTW_WAIT_MS));
	EXPECT_LE(w, htw_now(CLOCK_REALTIME));
	EXPECT_EQ(id, ev.id);
	EXPECT_EQ(HTW_EVENT_LAST | HTW_EVENT_REALTIME, ev.flags);
	EXPECT_EQ(w, ev.expires);
	EXPECT_LE(w, ev.fired);

	/* A relative one is a duration, on CLOCK_MONOTONIC. */
	t0 = htw_now(CLOCK_MONOTONIC);
	ASSERT_LT(0, htw_arm_id(self->fd, HTW_TIMER_REALTIME, 50 * MS, 0, 2));
	ASSERT_TRUE(next_event(self->fd, &ev, HTW_WAIT_MS));
	EXPECT_EQ(HTW_EVENT_LAST, ev.flags);
	EXPECT_LE(t0 + 50 * MS, ev.expires);
	EXPECT_LE(ev.expires, ev.fired);
	EXPECT_EQ(2, ev.user_data);
}

/*
 * Set forward past their expiry: the timer comes at once, the
 * cancel-on-set one is cancelled, as timerfd's; a CLOCK_MONOTONIC timer
 * does not move.  All are FAR away, so that only the set brings them.
 */
TEST_F(rt, wall_clock_set_forward)
{
	__u64 now = htw_now(CLOCK_REALTIME), w = now + FAR;
	struct htw_event ev, got[2] = {};
	long plain, cancel, mono;
	int tfd, i;
	__u64 v;

	plain = htw_arm_id(self->fd, RT, w, 0, 1);
	cancel = htw_arm_id(self->fd, RT | HTW_TIMER_CANCEL_ON_SET, w, 0, 2);
	mono = htw_arm_id(self->fd, 0, FAR, 0, 3);
	ASSERT_LT(0, plain);
	ASSERT_LT(0, cancel);
	ASSERT_LT(0, mono);
	tfd = rt_timerfd(w, true);
	ASSERT_LE(0, tfd);

	if (set_wall(now + 2 * FAR))
		SKIP(return, "cannot set the wall clock: %s", strerror(errno));

	/* Both come at once, in either order. */
	for (i = 0; i < 2; i++) {
		ASSERT_TRUE(next_event(self->fd, &ev, HTW_WAIT_MS));
		ASSERT_TRUE(ev.user_data == 1 || ev.user_data == 2);
		got[ev.user_data - 1] = ev;
	}
	EXPECT_EQ(plain, got[0].id);
	EXPECT_EQ(HTW_EVENT_LAST | HTW_EVENT_REALTIME, got[0].flags);
	EXPECT_EQ(w, got[0].expires);
	EXPECT_LE(w, got[0].fired);
	EXPECT_EQ(cancel, got[1].id);
	EXPECT_EQ(HTW_EVENT_LAST | HTW_EVENT_REALTIME | HTW_EVENT_CANCELED,
		  got[1].flags);
	EXPECT_EQ(0, got[1].count);
	EXPECT_EQ(w, got[1].expires);
	/* timerfd says the same. */
	EXPECT_EQ(-1, read(tfd, &v, sizeof(v)));
	EXPECT_EQ(ECANCELED, errno);
	close(tfd);

	/* Once: nothing more (a slow host only waits longer for it). */
	EXPECT_FALSE(next_event(self->fd, &ev, 500));
	EXPECT_EQ(-ENOENT, htw_cancel(self->fd, cancel));
	EXPECT_EQ(0, htw_cancel(self->fd, mono));
}

/*
 * Set back: the timer's time on CLOCK_MONOTONIC passes, but the wall clock
 * has not reached its expiry, and it waits for the wall clock.  That takes
 * a set that comes before the expiry, which a loaded host can delay past
 * any lead: an attempt whose set may have come too late (the wall clock
 * could have read the expiry before set_wall() returned) starts again on
 * a new file, with twice the lead, rather than decide anything.
 */
TEST_F(rt, wall_clock_set_back)
{
	__u64 lead = 2 * NSEC_PER_SEC, back = 3 * NSEC_PER_SEC;
	__u64 now, w, m0, w1, m1;
	struct htw_event ev, got[2] = {};
	long plain, cancel;
	int i;

	for (;; lead *= 2) {
		now = htw_now(CLOCK_REALTIME);
		w = now + lead;
		plain = htw_arm_id(self->fd, RT, w, 0, 1);
		cancel = htw_arm_id(self->fd, RT | HTW_TIMER_CANCEL_ON_SET, w,
				    0, 2);
		ASSERT_LT(0, plain);
		ASSERT_LT(0, cancel);
		m0 = htw_now(CLOCK_MONOTONIC);
		w1 = htw_now(CLOCK_REALTIME);
		if (set_wall(now - back))
			SKIP(return, "cannot set the wall clock: %s",
			     strerror(errno));
		m1 = htw_now(CLOCK_MONOTONIC);
		/* When set, the wall clock read w1 + (m1 - m0) at most. */
		if (w1 + (m1 - m0) < w)
			break;
		TH_LOG("the set came %llu ms after the arms: again",
		       (unsigned long long)(m1 - m0) / MS);
		close(self->fd);
		self->fd = htw_open(O_CLOEXEC);
		ASSERT_LE(0, self->fd);
	}

	/* The cancel, and the timer once the wall clock is back at w. */
	for (i = 0; i < 2; i++) {
		ASSERT_TRUE(next_event(self->fd, &ev,
				       (lead + back) / MS + HTW_WAIT_MS));
		ASSERT_TRUE(ev.user_data == 1 || ev.user_data == 2);
		got[ev.user_data - 1] = ev;
	}
	EXPECT_EQ(cancel, got[1].id);
	EXPECT_EQ(HTW_EVENT_LAST | HTW_EVENT_REALTIME | HTW_EVENT_CANCELED,
		  got[1].flags);

	EXPECT_EQ(plain, got[0].id);
	EXPECT_LE(w, htw_now(CLOCK_REALTIME));
	EXPECT_EQ(w, got[0].expires);
	EXPECT_LE(w, got[0].fired);
	/* lead + back of CLOCK_MONOTONIC, not lead. */
	EXPECT_LE(m0 + lead + back, htw_now(CLOCK_MONOTONIC));
	TH_LOG("armed %llu ms ahead, came %llu ms later by CLOCK_MONOTONIC",
	       (unsigned long long)lead / MS,
	       (unsigned long long)(htw_now(CLOCK_MONOTONIC) - m0) / MS);
}

/*
 * A periodic wall-clock timer set forward: its next event comes at once,
 * not a period later, on its wall-clock grid, counting the expiries the
 * set jumped over.  The period is FAR: only the set can bring the second
 * event within the wait, and a slow host cannot make a second expiry pass
 * before the first is read.
 */
TEST_F(rt, periodic_follows_the_wall_clock_forward)
{
	__u64 now = htw_now(CLOCK_REALTIME), w = now + 50 * MS, m;
	__u64 period = FAR;
	struct htw_event ev;

	ASSERT_LT(0, htw_arm_id(self->fd, RT, w, period, 1));
	ASSERT_TRUE(next_event(self->fd, &ev, HTW_WAIT_MS));
	EXPECT_EQ(HTW_EVENT_REALTIME, ev.flags);
	EXPECT_EQ(w, ev.expires);
	EXPECT_EQ(1, ev.count);

	if (set_wall(htw_now(CLOCK_REALTIME) + 4 * period))
		SKIP(return, "cannot set the wall clock: %s", strerror(errno));
	m = htw_now(CLOCK_MONOTONIC);
	ASSERT_TRUE(next_event(self->fd, &ev, HTW_WAIT_MS));
	EXPECT_GT(m + period / 2, htw_now(CLOCK_MONOTONIC));
	/* Expiry k after w counts all k of them: the first was read alone. */
	EXPECT_EQ(0, (ev.expires - w) % period);
	EXPECT_EQ((ev.expires - w) / period, ev.count);
	EXPECT_LE(4, ev.count);
	EXPECT_LE(ev.expires, htw_now(CLOCK_REALTIME));
}

/*
 * A read that faults gives a periodic cancel-on-set timer's event back as
 * it was: the next read counts its expiries, and no set of the clock is
 * seen where there was none.
 */
TEST_F(rt, faulting_read_does_not_cancel_on_set)
{
	__u64 period = 50 * MS, w = htw_now(CLOCK_REALTIME) + period;
	struct htw_event ev;
	void *gone;

	ASSERT_LT(0, htw_arm_id(self->fd, RT | HTW_TIMER_CANCEL_ON_SET, w,
				period, 3));
	/* An unmapped page: UML's kernel would write a read-only one. */
	gone = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, gone);
	ASSERT_EQ(0, munmap(gone, getpagesize()));
	/* Its event waits, and more expiries pass meanwhile. */
	usleep(5 * period / 1000);
	ASSERT_EQ(-1, read(self->fd, gone, sizeof(ev)));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(1, htw_read_events(self->fd, &ev, 1));
	EXPECT_EQ(HTW_EVENT_REALTIME, ev.flags);
	EXPECT_EQ(3, ev.user_data);
	EXPECT_EQ((ev.expires - w) / period + 1, ev.count);
	EXPECT_LE(2, ev.count);
}

/*
 * A relative CLOCK_REALTIME timer is a duration, as a timerfd's is: a step
 * of the wall clock by decades neither moves it nor makes a 1 ms periodic
 * timer count 10^12 expiries in one event.  It runs on CLOCK_MONOTONIC,
 * and its events carry that clock's times.
 */
TEST_F(rt, relative_timer_is_a_duration)
{
	__u64 decades = 30ULL * 365 * 86400 * NSEC_PER_SEC, m0;
	struct htw_event ev;
	long id;

	m0 = htw_now(CLOCK_MONOTONIC);
	id = htw_arm_id(self->fd, HTW_TIMER_REALTIME, 200 * MS, MS, 4);
	ASSERT_LT(0, id);
	if (set_wall(htw_now(CLOCK_REALTIME) + decades))
		SKIP(return, "cannot set the wall clock: %s", strerror(errno));

	ASSERT_TRUE(next_event(self->fd, &ev, HTW_WAIT_MS));
	EXPECT_EQ(id, ev.id);
	EXPECT_EQ(0, ev.flags);
	EXPECT_LE(m0 + 200 * MS, ev.expires);
	EXPECT_LE(ev.expires, ev.fired);
	EXPECT_LE(ev.fired, htw_now(CLOCK_MONOTONIC));
	/* No more expiries than CLOCK_MONOTONIC has had room for. */
	EXPECT_LE(ev.count, (htw_now(CLOCK_MONOTONIC) - m0) / MS);
	TH_LOG("%llu expiries in the first event",
	       (unsigned long long)ev.count);
	EXPECT_EQ(0, htw_cancel(self->fd, id));
}

/*
 * A set of the wall clock cancels a cancel-on-set timer that has expired
 * and whose event waits unread, as a timerfd's read() fails with ECANCELED
 * after a set whatever ticks it had: the event is the cancel, count 0.
 */
TEST_F(rt, set_cancels_an_unread_expiry)
{
	__u64 w = htw_now(CLOCK_REALTIME) + 20 * MS, v;
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	struct htw_event ev;
	int tfd;
	long id;

	id = htw_arm_id(self->fd, RT | HTW_TIMER_CANCEL_ON_SET, w, 0, 5);
	ASSERT_LT(0, id);
	tfd = rt_timerfd(w, true);
	ASSERT_LE(0, tfd);
	/* Both expire, and neither is read. */
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	pfd.fd = tfd;
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));

	if (set_wall(htw_now(CLOCK_REALTIME) - NSEC_PER_SEC))
		SKIP(return, "cannot set the wall clock: %s", strerror(errno));
	ASSERT_EQ(1, htw_read_events(self->fd, &ev, 1));
	EXPECT_EQ(id, ev.id);
	EXPECT_EQ(HTW_EVENT_LAST | HTW_EVENT_REALTIME | HTW_EVENT_CANCELED,
		  ev.flags);
	EXPECT_EQ(0, ev.count);
	EXPECT_EQ(w, ev.expires);
	EXPECT_EQ(-ENOENT, htw_cancel(self->fd, id));
	/* timerfd says the same. */
	EXPECT_EQ(-1, read(tfd, &v, sizeof(v)));
	EXPECT_EQ(ECANCELED, errno);
	close(tfd);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
