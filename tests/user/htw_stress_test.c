// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/htw under load: many timers delivered exactly once and never early,
 * and close() while thousands are armed and expiring.
 */
#include <poll.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define MS		NSEC_PER_MSEC
#define NR_TIMERS	100000
#define SPREAD		(2000 * MS)
/*
 * Delivering 100,000 timers is bounded by the wheel's expiry work, not by
 * their spread: lateness here is load, and gets its own bound.
 */
#define MASS_SLACK_NS	(60 * NSEC_PER_SEC)

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

static long batch_all(int fd, struct htw_op *ops, __u32 n)
{
	__u32 done = 0, chunk;
	long ret;

	while (done < n) {
		chunk = n - done < HTW_BATCH_MAX ? n - done : HTW_BATCH_MAX;
		ret = htw_batch(fd, ops + done, chunk);
		if (ret != chunk)
			return ret < 0 ? ret : -EIO;
		done += chunk;
	}
	return 0;
}

/*
 * 100,000 one-shot timers spread over two seconds, a tenth of them
 * cancelled before they expire: every other one comes exactly once, never
 * before its expiry, and never before read() could have seen it.
 */
TEST_F_TIMEOUT(htw, hundred_thousand_timers_each_delivered_once_never_early, 120)
{
	__u64 seed = htw_now(CLOCK_MONOTONIC) | 1, state = seed;
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	__u32 i, expected = 0, got = 0;
	__u64 start, now, *expires, max_late = 0;
	struct htw_event *ev;
	struct htw_info info;
	struct htw_op *ops;
	__u8 *seen;
	long n, j;

	if (self->info.max_timers < NR_TIMERS)
		SKIP(return, "max_timers=%u is below %u",
		     self->info.max_timers, NR_TIMERS);
	TH_LOG("seed %llu", (unsigned long long)seed);

	ops = calloc(NR_TIMERS, sizeof(*ops));
	expires = calloc(NR_TIMERS, sizeof(*expires));
	seen = calloc(NR_TIMERS, 1);
	ev = calloc(4096, sizeof(*ev));
	ASSERT_TRUE(ops && expires && seen && ev);

	/*
	 * Cancelled timers are spread like the others: one cancelled after
	 * its event was queued must lose the event all the same.
	 */
	start = htw_now(CLOCK_MONOTONIC) + 200 * MS;
	for (i = 0; i < NR_TIMERS; i++) {
		expires[i] = start + htw_rand_below(&state, SPREAD);
		ops[i] = (struct htw_op){
			.op = HTW_OP_ARM,
			.spec = {
				.flags = HTW_TIMER_ABSTIME,
				.expires = expires[i],
				.user_data = i,
			},
		};
	}
	ASSERT_EQ(0, batch_all(pfd.fd, ops, NR_TIMERS));

	for (i = 0; i < NR_TIMERS; i++) {
		ASSERT_EQ(0, ops[i].result);
		if (i % 10 == 0)
			ops[i] = (struct htw_op){ .op = HTW_OP_CANCEL,
						  .spec.id = ops[i].spec.id };
		else
			ops[i] = (struct htw_op){ .op = HTW_OP_CANCEL };
	}
	/* Cancel every tenth; the others are ops with id 0: -ENOENT. */
	ASSERT_EQ(0, batch_all(pfd.fd, ops, NR_TIMERS));
	for (i = 0; i < NR_TIMERS; i++) {
		ASSERT_EQ(i % 10 == 0 ? 0 : -ENOENT, ops[i].result);
		expected += i % 10 != 0;
	}

	while (got < expected) {
		ASSERT_EQ(1, poll(&pfd, 1, MASS_SLACK_NS / MS));
		n = htw_read_events(pfd.fd, ev, 4096);
		now = htw_now(CLOCK_MONOTONIC);
		ASSERT_LT(0, n);
		for (j = 0; j < n; j++) {
			i = ev[j].user_data;
			ASSERT_GT(NR_TIMERS, i);
			ASSERT_NE(0, i % 10) TH_LOG("cancelled timer %u came", i);
			ASSERT_EQ(0, seen[i]) TH_LOG("timer %u came twice", i);
			seen[i] = 1;
			ASSERT_EQ(expires[i], ev[j].expires);
			ASSERT_EQ(1, ev[j].count);
			ASSERT_EQ(HTW_EVENT_LAST, ev[j].flags);
			ASSERT_LE(ev[j].expires, ev[j].fired);
			ASSERT_LE(ev[j].expires, now);
			ASSERT_GT(ev[j].expires + MASS_SLACK_NS, ev[j].fired);
			if (ev[j].fired - ev[j].expires > max_late)
				max_late = ev[j].fired - ev[j].expires;
		}
		got += n;
	}
	EXPECT_EQ(expected, got);
	TH_LOG("%u timers delivered, at most %llu us late", got,
	       max_late / 1000);

	/* Past every expiry and a tick more, nothing else comes. */
	now = htw_now(CLOCK_MONOTONIC);
	if (now < start + SPREAD + self->info.tick_ns)
		usleep((start + SPREAD + self->info.tick_ns - now) / 1000);
	EXPECT_EQ(0, poll(&pfd, 1, 100));
	ASSERT_EQ(0, htw_get_info(pfd.fd, &info));
	EXPECT_EQ(0, info.nr_timers);
	EXPECT_EQ(0, info.nr_queued);

	free(ev);
	free(seen);
	free(expires);
	free(ops);
}

/*
 * close() cancels thousands of timers while many of them are expiring,
 * periodic ones included.  A timer it left behind would still be on its
 * wheel and in the module's slab cache when the rig unloads htw, and both
 * htw_wheel_destroy() and kmem_cache_destroy() warn about that in the
 * kernel log, which the rig treats as a failure.
 */
TEST_F_TIMEOUT(htw, close_with_thousands_of_timers_armed_and_expiring, 120)
{
	struct htw_op *ops;
	int round, fd;
	__u32 i, n = 5000;

	ops = calloc(n, sizeof(*ops));
	ASSERT_NE(NULL, ops);
	for (round = 0; round < 5; round++) {
		fd = htw_open(O_CLOEXEC);
		ASSERT_LE(0, fd);
		for (i = 0; i < n; i++)
			ops[i] = (struct htw_op){
				.op = HTW_OP_ARM,
				.spec = {
					.expires = (i % 50) * MS,
					.period = i % 2 ? self->info.min_period_ns : 0,
				},
			};
		ASSERT_EQ(0, batch_all(fd, ops, n));
		usleep(20000 * round);
		ASSERT_EQ(0, close(fd));
	}
	free(ops);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
