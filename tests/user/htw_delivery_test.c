// SPDX-License-Identifier: GPL-2.0
/*
 * Delivery of /dev/htw timers: when events come, what they say, how they
 * are read, polled and cancelled.
 */
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/time.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define MS	NSEC_PER_MSEC

FIXTURE(htw) {
	int fd;
	struct htw_info info;
};

FIXTURE_SETUP(htw)
{
	self->fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, htw_get_info(self->fd, &self->info));
}

FIXTURE_TEARDOWN(htw)
{
	close(self->fd);
}

/* Block until @n events are read, or a wait runs out; return how many. */
static long read_events(int fd, struct htw_event *ev, size_t n)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	long ret;

	while (got < n) {
		if (poll(&pfd, 1, HTW_WAIT_MS) <= 0)
			break;
		ret = htw_read_events(fd, ev + got, n - got);
		if (ret < 0)
			return ret;
		got += ret;
	}
	return got;
}

TEST_F(htw, oneshot_relative_is_delivered_once_not_early)
{
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	__u64 before, after, now;
	struct htw_event ev;
	long id;

	before = htw_now(CLOCK_MONOTONIC);
	id = htw_arm_id(self->fd, 0, 50 * MS, 0, 0xabcd);
	after = htw_now(CLOCK_MONOTONIC);
	ASSERT_LT(0, id);

	ASSERT_EQ(1, read_events(self->fd, &ev, 1));
	now = htw_now(CLOCK_MONOTONIC);
	EXPECT_EQ(id, ev.id);
	EXPECT_EQ(0xabcd, ev.user_data);
	EXPECT_EQ(1, ev.count);
	EXPECT_EQ(HTW_EVENT_LAST, ev.flags);
	EXPECT_LE(before + 50 * MS, ev.expires);
	EXPECT_GE(after + 50 * MS, ev.expires);
	EXPECT_LE(ev.expires, ev.fired);
	EXPECT_LE(ev.expires, now);
	EXPECT_GT(ev.expires + HTW_SLACK_NS, ev.fired);

	/* Once: nothing more comes. */
	usleep(100000);
	EXPECT_EQ(0, poll(&pfd, 1, 0));
}

TEST_F(htw, oneshot_absolute_is_delivered_at_its_expiry)
{
	__u64 expires = htw_now(CLOCK_MONOTONIC) + 30 * MS;
	struct htw_event ev;

	ASSERT_LT(0, htw_arm_id(self->fd, HTW_TIMER_ABSTIME, expires, 0, 0));
	ASSERT_EQ(1, read_events(self->fd, &ev, 1));
	EXPECT_LE(expires, htw_now(CLOCK_MONOTONIC));
	EXPECT_EQ(expires, ev.expires);
	EXPECT_LE(expires, ev.fired);
	EXPECT_GT(expires + HTW_SLACK_NS, ev.fired);
}

TEST_F(htw, absolute_expiry_in_the_past_is_delivered_at_once)
{
	struct htw_event ev;

	ASSERT_LT(0, htw_arm_id(self->fd, HTW_TIMER_ABSTIME, 1, 0, 0));
	ASSERT_EQ(1, read_events(self->fd, &ev, 1));
	EXPECT_EQ(1, ev.expires);
	EXPECT_EQ(1, ev.count);
}

TEST_F(htw, boottime_timer_is_delivered_on_boottime)
{
	__u64 expires = htw_now(CLOCK_BOOTTIME) + 30 * MS;
	struct htw_event ev;

	ASSERT_LT(0, htw_arm_id(self->fd, HTW_TIMER_ABSTIME | HTW_TIMER_BOOTTIME,
				expires, 0, 0));
	ASSERT_EQ(1, read_events(self->fd, &ev, 1));
	EXPECT_LE(expires, htw_now(CLOCK_BOOTTIME));
	EXPECT_EQ(HTW_EVENT_LAST | HTW_EVENT_BOOTTIME, ev.flags);
	EXPECT_EQ(expires, ev.expires);
	EXPECT_LE(expires, ev.fired);
}

/* Every expiry is counted once, across reads, and none is early. */
TEST_F(htw, periodic_counts_every_expiry)
{
	__u64 first = htw_now(CLOCK_MONOTONIC) + 20 * MS;
	__u64 total = 0, period = 20 * MS;
	struct htw_event ev;
	long id;
	int i;

	id = htw_arm_id(self->fd, HTW_TIMER_ABSTIME, first, period, 0);
	ASSERT_LT(0, id);
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(1, read_events(self->fd, &ev, 1));
		EXPECT_EQ(id, ev.id);
		EXPECT_EQ(0, ev.flags);
		EXPECT_LE(ev.expires, htw_now(CLOCK_MONOTONIC));
		EXPECT_LE(ev.expires, ev.fired);
		EXPECT_EQ(0, (ev.expires - first) % period);
		total += ev.count;
		EXPECT_EQ(total, (ev.expires - first) / period + 1);
	}
	EXPECT_EQ(0, htw_cancel(self->fd, id));
}

TEST_F(htw, periodic_expiries_before_read_coalesce_into_one_event)
{
	__u64 first = htw_now(CLOCK_MONOTONIC) + 10 * MS;
	struct htw_event ev[2];
	struct htw_info info;
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };

	ASSERT_LT(0, htw_arm_id(self->fd, HTW_TIMER_ABSTIME, first, 10 * MS, 0));
	/* The first expiry is queued; five more periods pass before read(). */
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	usleep(50000);
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(1, info.nr_queued);
	ASSERT_EQ(1, htw_read_events(self->fd, ev, 2));
	EXPECT_LE(first + 10 * MS, ev[0].expires);
	EXPECT_EQ((ev[0].expires - first) / (10 * MS) + 1, ev[0].count);
	EXPECT_LE(2, ev[0].count);
}

TEST_F(htw, oneshot_id_is_released_when_its_event_is_read)
{
	struct htw_event ev;
	long id;

	id = htw_arm_id(self->fd, 0, 0, 0, 0);
	ASSERT_LT(0, id);
	ASSERT_EQ(1, read_events(self->fd, &ev, 1));
	EXPECT_EQ(HTW_EVENT_LAST, ev.flags);
	EXPECT_EQ(-ENOENT, htw_cancel(self->fd, id));
	ASSERT_EQ(0, htw_get_info(self->fd, &self->info));
	EXPECT_EQ(0, self->info.nr_timers);
}

TEST_F(htw, periodic_timer_stays_until_cancelled)
{
	struct htw_event ev;
	long id;

	id = htw_arm_id(self->fd, 0, 0, 10 * MS, 0);
	ASSERT_LT(0, id);
	ASSERT_EQ(1, read_events(self->fd, &ev, 1));
	EXPECT_EQ(0, ev.flags);
	ASSERT_EQ(1, read_events(self->fd, &ev, 1));
	EXPECT_EQ(id, ev.id);
	ASSERT_EQ(0, htw_get_info(self->fd, &self->info));
	EXPECT_EQ(1, self->info.nr_timers);
	EXPECT_EQ(0, htw_cancel(self->fd, id));
	ASSERT_EQ(0, htw_get_info(self->fd, &self->info));
	EXPECT_EQ(0, self->info.nr_timers);
}

TEST_F(htw, cancel_before_expiry_prevents_delivery)
{
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	long id;

	id = htw_arm_id(self->fd, 0, 50 * MS, 0, 0);
	ASSERT_LT(0, id);
	EXPECT_EQ(0, htw_cancel(self->fd, id));
	usleep(150000);
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_EQ(0, htw_get_info(self->fd, &self->info));
	EXPECT_EQ(0, self->info.nr_queued);
	EXPECT_EQ(0, self->info.nr_timers);
}

TEST_F(htw, cancel_after_event_is_queued_drops_the_event)
{
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	long id;

	id = htw_arm_id(self->fd, 0, 0, 0, 0);
	ASSERT_LT(0, id);
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	EXPECT_EQ(0, htw_cancel(self->fd, id));
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_EQ(0, htw_get_info(self->fd, &self->info));
	EXPECT_EQ(0, self->info.nr_queued);
}

/* A periodic timer racing its cancel never delivers after the cancel. */
TEST_F(htw, no_event_after_cancel_returns)
{
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	int round;
	long id;

	for (round = 0; round < 50; round++) {
		id = htw_arm_id(self->fd, 0, 0, self->info.min_period_ns, 0);
		ASSERT_LT(0, id);
		usleep(2000);
		ASSERT_EQ(0, htw_cancel(self->fd, id));
		ASSERT_EQ(0, poll(&pfd, 1, 0));
	}
}

TEST_F(htw, modify_moves_expiry_and_drops_queued_event)
{
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	struct htw_event ev;
	__u64 expires;
	long id;

	id = htw_arm_id(self->fd, 0, 0, 0, 1);
	ASSERT_LT(0, id);
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	expires = htw_now(CLOCK_MONOTONIC) + 40 * MS;
	ASSERT_EQ(0, htw_modify_id(self->fd, id, HTW_TIMER_ABSTIME, expires, 0));
	ASSERT_EQ(0, htw_get_info(self->fd, &self->info));
	EXPECT_EQ(0, self->info.nr_queued);

	ASSERT_EQ(1, read_events(self->fd, &ev, 1));
	EXPECT_EQ(id, ev.id);
	EXPECT_EQ(expires, ev.expires);
	EXPECT_EQ(1, ev.count);
	EXPECT_EQ(0, ev.user_data);
	EXPECT_LE(expires, htw_now(CLOCK_MONOTONIC));
}

TEST_F(htw, modify_postpones_a_pending_timer)
{
	__u64 expires;
	struct htw_event ev;
	long id;

	id = htw_arm_id(self->fd, 0, 30 * MS, 0, 0);
	ASSERT_LT(0, id);
	expires = htw_now(CLOCK_MONOTONIC) + 300 * MS;
	ASSERT_EQ(0, htw_modify_id(self->fd, id, HTW_TIMER_ABSTIME, expires, 0));
	ASSERT_EQ(1, read_events(self->fd, &ev, 1));
	EXPECT_EQ(expires, ev.expires);
	EXPECT_LE(expires, htw_now(CLOCK_MONOTONIC));
}

/* Wait, as long as an event may take, for @n events to be queued. */
static __u32 wait_queued(int fd, __u32 n)
{
	__u64 end = htw_now(CLOCK_MONOTONIC) + HTW_WAIT_MS * MS;
	struct htw_info info = {};

	while (!htw_get_info(fd, &info) && info.nr_queued != n &&
	       htw_now(CLOCK_MONOTONIC) < end)
		usleep(10000);
	return info.nr_queued;
}

TEST_F(htw, one_read_returns_every_queued_event_that_fits)
{
	struct htw_event ev[16];
	int i;

	for (i = 0; i < 10; i++)
		ASSERT_LT(0, htw_arm_id(self->fd, HTW_TIMER_ABSTIME, 1, 0, i));
	ASSERT_EQ(10, wait_queued(self->fd, 10));
	EXPECT_EQ(10, htw_read_events(self->fd, ev, 16));
}

/*
 * A read takes events off the queue some at a time: one whose buffer ends
 * midway through those returns the events that fit, and the rest stay
 * queued, in their order.
 */
TEST_F(htw, read_that_faults_midway_keeps_the_rest_in_order)
{
	const int n = 40, fit = 21;
	struct htw_event ev[40], *buf;
	long page = getpagesize();
	char *map;
	int i;

	for (i = 0; i < n; i++)
		ASSERT_LT(0, htw_arm_id(self->fd, HTW_TIMER_ABSTIME, 1, 0, i));
	ASSERT_EQ(n, wait_queued(self->fd, n));
	/* An unmapped page: UML's kernel would write a read-only one. */
	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, munmap(map + page, page));
	buf = (struct htw_event *)(map + page) - fit;

	EXPECT_EQ(fit * sizeof(*buf), read(self->fd, buf, n * sizeof(*buf)));
	for (i = 0; i < fit; i++)
		EXPECT_EQ(i, buf[i].user_data);
	ASSERT_EQ(n - fit, htw_read_events(self->fd, ev, n));
	for (i = 0; i < n - fit; i++)
		EXPECT_EQ(fit + i, ev[i].user_data);
	munmap(map, page);
}

TEST_F(htw, read_returns_whole_events_only)
{
	struct htw_event ev[3];
	ssize_t n;

	ASSERT_LT(0, htw_arm_id(self->fd, HTW_TIMER_ABSTIME, 1, 0, 0));
	ASSERT_LT(0, htw_arm_id(self->fd, HTW_TIMER_ABSTIME, 1, 0, 0));
	usleep(50000);
	n = read(self->fd, ev, sizeof(ev[0]) + sizeof(ev[0]) / 2);
	EXPECT_EQ(sizeof(ev[0]), n);
	EXPECT_EQ(1, htw_read_events(self->fd, ev, 3));
}

TEST_F(htw, poll_reports_epollin_when_a_timer_expires)
{
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	__u64 expires;

	EXPECT_EQ(0, poll(&pfd, 1, 0));
	expires = htw_now(CLOCK_MONOTONIC) + 30 * MS;
	ASSERT_LT(0, htw_arm_id(self->fd, HTW_TIMER_ABSTIME, expires, 0, 0));
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	EXPECT_EQ(POLLIN, pfd.revents & POLLIN);
	EXPECT_LE(expires, htw_now(CLOCK_MONOTONIC));
}

/* A poller that asks for POLLRDNORM alone is woken too. */
TEST_F(htw, poll_for_rdnorm_alone_wakes_when_a_timer_expires)
{
	struct pollfd pfd = { .fd = self->fd, .events = POLLRDNORM };
	__u64 expires;

	expires = htw_now(CLOCK_MONOTONIC) + 30 * MS;
	ASSERT_LT(0, htw_arm_id(self->fd, HTW_TIMER_ABSTIME, expires, 0, 0));
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	EXPECT_EQ(POLLRDNORM, pfd.revents);
	EXPECT_LE(expires, htw_now(CLOCK_MONOTONIC));
}

TEST_F(htw, epoll_wakes_when_a_timer_expires)
{
	struct epoll_event ee = { .events = EPOLLIN };
	__u64 expires;
	int ep;

	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->fd, &ee));
	EXPECT_EQ(0, epoll_wait(ep, &ee, 1, 0));

	expires = htw_now(CLOCK_MONOTONIC) + 30 * MS;
	ASSERT_LT(0, htw_arm_id(self->fd, HTW_TIMER_ABSTIME, expires, 0, 0));
	ASSERT_EQ(1, epoll_wait(ep, &ee, 1, HTW_WAIT_MS));
	EXPECT_TRUE(ee.events & EPOLLIN);
	EXPECT_LE(expires, htw_now(CLOCK_MONOTONIC));
	close(ep);
}

TEST_F(htw, nonblocking_read_returns_queued_events)
{
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	struct htw_event ev;

	ASSERT_EQ(0, fcntl(self->fd, F_SETFL, O_NONBLOCK));
	EXPECT_EQ(-EAGAIN, htw_read_events(self->fd, &ev, 1));
	ASSERT_LT(0, htw_arm_id(self->fd, 0, 0, 0, 0));
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	EXPECT_EQ(1, htw_read_events(self->fd, &ev, 1));
	EXPECT_EQ(-EAGAIN, htw_read_events(self->fd, &ev, 1));
}

TEST_F(htw, blocking_read_waits_for_the_expiry)
{
	__u64 expires = htw_now(CLOCK_MONOTONIC) + 50 * MS;
	struct htw_event ev;

	ASSERT_LT(0, htw_arm_id(self->fd, HTW_TIMER_ABSTIME, expires, 0, 0));
	ASSERT_EQ(1, htw_read_events(self->fd, &ev, 1));
	EXPECT_LE(expires, htw_now(CLOCK_MONOTONIC));
	EXPECT_EQ(expires, ev.expires);
}

static void on_alarm(int sig)
{
}

TEST_F(htw, blocking_read_interrupted_by_signal_is_eintr)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	/* Repeating, so that a signal that comes before read() sleeps is not the last. */
	struct itimerval it = { .it_value.tv_usec = 50000,
				.it_interval.tv_usec = 50000 };
	struct itimerval off = {};
	struct htw_event ev;

	/* No SA_RESTART: the read must come back with EINTR. */
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_LT(0, htw_arm_id(self->fd, 0, 60 * NSEC_PER_SEC, 0, 0));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	EXPECT_EQ(-EINTR, htw_read_events(self->fd, &ev, 1));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &off, NULL));
}

TEST(contexts_do_not_see_each_others_timers)
{
	struct htw_event ev;
	int a, b;
	long id;

	a = htw_open(O_CLOEXEC);
	b = htw_open(O_CLOEXEC);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, fcntl(b, F_SETFL, O_NONBLOCK));

	id = htw_arm_id(a, 0, 0, 0, 0);
	ASSERT_LT(0, id);
	EXPECT_EQ(-ENOENT, htw_cancel(b, id));
	EXPECT_EQ(-ENOENT, htw_modify_id(b, id, 0, 0, 0));
	ASSERT_EQ(1, read_events(a, &ev, 1));
	EXPECT_EQ(-EAGAIN, htw_read_events(b, &ev, 1));
	close(a);
	close(b);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
