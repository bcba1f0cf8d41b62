// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for the contexts behind /dev/htw (htw_ctx.c)
 *
 * Each case drives a context whose wheels are manual, so time moves only
 * when the case says and every expectation on counts and times is exact.
 */

#include <kunit/test.h>
#include <linux/module.h>
#include <linux/uio.h>
#include <linux/user_namespace.h>

#include "../htw_compat.h"
#include "../htw_core.h"
#include "../htw_ctx.h"
#include "../htw_user.h"

#define TEST_START	1000
#define TEST_TICK	10
#define TEST_MIN_PERIOD	10
#define TEST_MAX_TIMERS	4

struct htw_ctx_test {
	struct htw_ctx_params params;
	struct htw_ctx *ctx;
};

static int htw_ctx_test_init(struct kunit *test)
{
	struct htw_ctx_test *t;

	t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	test->priv = t;

	t->params.wheel = (struct htw_wheel_params) {
		.tick_ns	= TEST_TICK,
		.wheel_size	= 8,
		.flags		= HTW_WHEEL_MANUAL,
		.start_ns	= TEST_START,
	};
	t->params.min_period_ns = TEST_MIN_PERIOD;
	t->params.max_timers = TEST_MAX_TIMERS;
	t->ctx = htw_ctx_create(&t->params);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, t->ctx);
	return 0;
}

static void htw_ctx_test_exit(struct kunit *test)
{
	struct htw_ctx_test *t = test->priv;

	if (!IS_ERR_OR_NULL(t->ctx))
		htw_ctx_destroy(t->ctx);
}

static struct htw_ctx *test_ctx(struct kunit *test)
{
	return ((struct htw_ctx_test *)test->priv)->ctx;
}

static struct htw_wheel *test_wheel(struct kunit *test,
				    enum htw_ctx_clock clock)
{
	struct htw_wheel *wheel = htw_ctx_wheel(test_ctx(test), clock);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, wheel);
	return wheel;
}

/* Move a clock to @now and run everything due by then. */
static void test_advance(struct kunit *test, enum htw_ctx_clock clock, u64 now)
{
	struct htw_wheel *wheel = test_wheel(test, clock);

	while (htw_advance(wheel, now))
		;
}

static u32 test_arm(struct kunit *test, u32 flags, u64 expires, u64 period,
		    u64 user_data)
{
	struct htw_timer_spec spec = {
		.flags		= flags,
		.expires	= expires,
		.period		= period,
		.user_data	= user_data,
	};

	KUNIT_ASSERT_EQ(test, 0, htw_ctx_arm(test_ctx(test), &spec, NULL));
	KUNIT_ASSERT_NE(test, 0, spec.id);
	return spec.id;
}

/* Read without waiting into @n records; return bytes or -errno. */
static ssize_t test_read_ctx(struct htw_ctx *ctx, struct htw_event *ev,
			     size_t len)
{
	struct kvec kv = { .iov_base = ev, .iov_len = len };
	struct iov_iter to;

	iov_iter_kvec(&to, ITER_DEST, &kv, 1, len);
	return htw_ctx_read(ctx, &to, HTW_CTX_READ_NONBLOCK);
}

static ssize_t test_read(struct kunit *test, struct htw_event *ev, size_t n)
{
	return test_read_ctx(test_ctx(test), ev, n * sizeof(*ev));
}

static u32 test_queued(struct kunit *test)
{
	u32 nr_timers, nr_queued;

	htw_ctx_counts(test_ctx(test), &nr_timers, &nr_queued);
	return nr_queued;
}

static u32 test_timers(struct kunit *test)
{
	u32 nr_timers, nr_queued;

	htw_ctx_counts(test_ctx(test), &nr_timers, &nr_queued);
	return nr_timers;
}

static void htw_ctx_relative_expiry_counts_from_now(struct kunit *test)
{
	struct htw_event ev;
	u32 id;

	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 250);
	id = test_arm(test, 0, 500, 0, 42);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 749);
	KUNIT_EXPECT_EQ(test, -EAGAIN, test_read(test, &ev, 1));

	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 750);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, id, ev.id);
	KUNIT_EXPECT_EQ(test, 42, ev.user_data);
	KUNIT_EXPECT_EQ(test, 1, ev.count);
	KUNIT_EXPECT_EQ(test, TEST_START + 750, ev.expires);
	KUNIT_EXPECT_EQ(test, TEST_START + 750, ev.fired);
	KUNIT_EXPECT_EQ(test, HTW_EVENT_LAST, ev.flags);
}

/* 1234 is not on a tick: it is delivered at the next one, 1240. */
static void htw_ctx_absolute_expiry_never_early(struct kunit *test)
{
	struct htw_event ev;

	test_arm(test, HTW_TIMER_ABSTIME, 1234, 0, 0);
	test_advance(test, HTW_CTX_MONOTONIC, 1239);
	KUNIT_EXPECT_EQ(test, -EAGAIN, test_read(test, &ev, 1));

	test_advance(test, HTW_CTX_MONOTONIC, 1240);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, 1234, ev.expires);
	KUNIT_EXPECT_EQ(test, 1240, ev.fired);
}

static void htw_ctx_periodic_counts_missed_periods(struct kunit *test)
{
	struct htw_event ev;

	test_arm(test, 0, 100, 100, 0);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 350);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, 3, ev.count);
	KUNIT_EXPECT_EQ(test, TEST_START + 300, ev.expires);
	KUNIT_EXPECT_EQ(test, 0, ev.flags);

	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 400);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, 1, ev.count);
	KUNIT_EXPECT_EQ(test, TEST_START + 400, ev.expires);
}

static void htw_ctx_unread_event_raises_its_count(struct kunit *test)
{
	struct htw_event ev[2];

	test_arm(test, 0, 100, 100, 0);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 100);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 200);
	KUNIT_EXPECT_EQ(test, 1, test_queued(test));

	KUNIT_ASSERT_EQ(test, sizeof(ev[0]), test_read(test, ev, 2));
	KUNIT_EXPECT_EQ(test, 2, ev[0].count);
	KUNIT_EXPECT_EQ(test, TEST_START + 200, ev[0].expires);
	KUNIT_EXPECT_EQ(test, TEST_START + 200, ev[0].fired);
	KUNIT_EXPECT_EQ(test, 0, test_queued(test));
}

static void htw_ctx_events_read_in_queue_order(struct kunit *test)
{
	struct htw_event ev[3];
	u32 late, early, middle;

	late = test_arm(test, 0, 300, 0, 0);
	early = test_arm(test, 0, 100, 0, 0);
	middle = test_arm(test, 0, 200, 0, 0);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 100);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 200);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 300);

	/* Room for two records and a half: two are returned. */
	KUNIT_ASSERT_EQ(test, 2 * sizeof(ev[0]),
			test_read_ctx(test_ctx(test), ev, 2 * sizeof(ev[0]) + 7));
	KUNIT_EXPECT_EQ(test, early, ev[0].id);
	KUNIT_EXPECT_EQ(test, middle, ev[1].id);
	KUNIT_ASSERT_EQ(test, sizeof(ev[0]), test_read(test, ev, 3));
	KUNIT_EXPECT_EQ(test, late, ev[0].id);
}

static void htw_ctx_read_needs_room_for_one_event(struct kunit *test)
{
	struct htw_event ev;

	test_arm(test, 0, 0, 0, 0);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + TEST_TICK);
	KUNIT_EXPECT_EQ(test, -EINVAL,
			test_read_ctx(test_ctx(test), &ev, sizeof(ev) - 1));
	KUNIT_EXPECT_EQ(test, 1, test_queued(test));
}

static void htw_ctx_oneshot_id_released_by_read(struct kunit *test)
{
	struct htw_event ev;
	u32 id;

	id = test_arm(test, 0, 100, 0, 0);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 100);
	KUNIT_EXPECT_EQ(test, 1, test_timers(test));
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, 0, test_timers(test));
	KUNIT_EXPECT_EQ(test, -ENOENT, htw_ctx_cancel(test_ctx(test), id));
}

static void htw_ctx_periodic_stays_after_read(struct kunit *test)
{
	struct htw_event ev;
	u32 id;

	id = test_arm(test, 0, 100, 100, 0);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 100);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, 1, test_timers(test));
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_cancel(test_ctx(test), id));
	KUNIT_EXPECT_EQ(test, 0, test_timers(test));
}

static void htw_ctx_cancel_before_expiry_stops_timer(struct kunit *test)
{
	struct htw_event ev;
	u32 id;

	id = test_arm(test, 0, 100, 0, 0);
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_cancel(test_ctx(test), id));
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 1000);
	KUNIT_EXPECT_EQ(test, -EAGAIN, test_read(test, &ev, 1));
}

static void htw_ctx_cancel_drops_queued_event(struct kunit *test)
{
	struct htw_event ev;
	u32 id;

	id = test_arm(test, 0, 100, 100, 0);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 100);
	KUNIT_EXPECT_EQ(test, 1, test_queued(test));
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_cancel(test_ctx(test), id));
	KUNIT_EXPECT_EQ(test, 0, test_queued(test));
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 1000);
	KUNIT_EXPECT_EQ(test, -EAGAIN, test_read(test, &ev, 1));
}

static void htw_ctx_cancel_unknown_id_is_enoent(struct kunit *test)
{
	struct htw_ctx *ctx = test_ctx(test);
	u32 id;

	KUNIT_EXPECT_EQ(test, -ENOENT, htw_ctx_cancel(ctx, 0));
	KUNIT_EXPECT_EQ(test, -ENOENT, htw_ctx_cancel(ctx, 1));
	id = test_arm(test, 0, 100, 0, 0);
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_cancel(ctx, id));
	KUNIT_EXPECT_EQ(test, -ENOENT, htw_ctx_cancel(ctx, id));
}

static void htw_ctx_modify_drops_event_and_rearms(struct kunit *test)
{
	struct htw_timer_spec spec = { .expires = 500, .user_data = 7 };
	struct htw_event ev;

	spec.id = test_arm(test, 0, 100, 0, 1);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 100);
	KUNIT_ASSERT_EQ(test, 1, test_queued(test));

	KUNIT_EXPECT_EQ(test, 0, htw_ctx_modify(test_ctx(test), &spec));
	KUNIT_EXPECT_EQ(test, 0, test_queued(test));
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 599);
	KUNIT_EXPECT_EQ(test, -EAGAIN, test_read(test, &ev, 1));
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 600);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, spec.id, ev.id);
	KUNIT_EXPECT_EQ(test, 7, ev.user_data);
	KUNIT_EXPECT_EQ(test, TEST_START + 600, ev.expires);
	KUNIT_EXPECT_EQ(test, 1, ev.count);
}

static void htw_ctx_modify_unknown_id_is_enoent(struct kunit *test)
{
	struct htw_timer_spec spec = { .id = 3, .expires = 100 };

	KUNIT_EXPECT_EQ(test, -ENOENT, htw_ctx_modify(test_ctx(test), &spec));
}

static void htw_ctx_full_context_is_enospc(struct kunit *test)
{
	struct htw_timer_spec spec = { .expires = 100 };
	u32 second = 0;
	int i;

	for (i = 0; i < TEST_MAX_TIMERS; i++) {
		u32 id = test_arm(test, 0, 100, 0, 0);

		if (i == 1)
			second = id;
	}
	KUNIT_EXPECT_EQ(test, -ENOSPC, htw_ctx_arm(test_ctx(test), &spec, NULL));

	KUNIT_EXPECT_EQ(test, 0, htw_ctx_cancel(test_ctx(test), second));
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_arm(test_ctx(test), &spec, NULL));
}

/*
 * A freed slot is reused, but under a new id: the stale id finds nothing,
 * for cancel and modify alike.
 */
static void htw_ctx_ids_are_not_reused_soon(struct kunit *test)
{
	struct htw_timer_spec spec = { .expires = 100 };
	struct htw_event ev;
	u32 first, second;

	first = test_arm(test, 0, 100, 0, 0);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 100);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	second = test_arm(test, 0, 100, 0, 0);
	KUNIT_EXPECT_NE(test, first, second);
	KUNIT_EXPECT_EQ(test, -ENOENT, htw_ctx_cancel(test_ctx(test), first));
	spec.id = first;
	KUNIT_EXPECT_EQ(test, -ENOENT, htw_ctx_modify(test_ctx(test), &spec));
	KUNIT_EXPECT_EQ(test, 1, test_timers(test));
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_cancel(test_ctx(test), second));
}

/* An unread periodic timer is off its wheel: no expiry run reaches it. */
static void htw_ctx_unread_periodic_is_parked(struct kunit *test)
{
	struct htw_wheel_stats stats;
	struct htw_event ev;
	u64 t;

	test_arm(test, 0, 100, 10, 0);
	for (t = TEST_START + 100; t <= TEST_START + 1000; t += 10)
		test_advance(test, HTW_CTX_MONOTONIC, t);
	htw_wheel_get_stats(test_wheel(test, HTW_CTX_MONOTONIC), &stats);
	KUNIT_EXPECT_EQ(test, 1, stats.fired);
	KUNIT_EXPECT_EQ(test, 0, stats.pending);

	/* The read counts the 91 expiries from 1100 to 2000, and re-arms. */
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, 91, ev.count);
	KUNIT_EXPECT_EQ(test, TEST_START + 1000, ev.expires);
	KUNIT_EXPECT_EQ(test, TEST_START + 1000, ev.fired);
	htw_wheel_get_stats(test_wheel(test, HTW_CTX_MONOTONIC), &stats);
	KUNIT_EXPECT_EQ(test, 1, stats.pending);

	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 1010);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, 1, ev.count);
	KUNIT_EXPECT_EQ(test, TEST_START + 1010, ev.expires);
}

/* A re-arm at read time lands on the next period after the read. */
static void htw_ctx_periodic_rearms_after_the_read(struct kunit *test)
{
	struct htw_event ev;

	test_arm(test, 0, 100, 100, 0);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 100);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 150);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, 1, ev.count);
	KUNIT_EXPECT_EQ(test, TEST_START + 100, ev.expires);
	KUNIT_EXPECT_EQ(test, TEST_START + 100, ev.fired);

	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 199);
	KUNIT_EXPECT_EQ(test, -EAGAIN, test_read(test, &ev, 1));
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 200);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, TEST_START + 200, ev.expires);
}

/* A file with only near timers has one level of buckets. */
static void htw_ctx_wheel_grows_levels_on_demand(struct kunit *test)
{
	struct htw_wheel_stats stats;

	test_arm(test, 0, 50, 0, 0);
	htw_wheel_get_stats(test_wheel(test, HTW_CTX_MONOTONIC), &stats);
	KUNIT_EXPECT_EQ(test, 1, stats.nr_reserved);

	/* 8^3 ticks of 10 ns away needs level 3. */
	test_arm(test, 0, 8 * 8 * 8 * TEST_TICK, 0, 0);
	htw_wheel_get_stats(test_wheel(test, HTW_CTX_MONOTONIC), &stats);
	KUNIT_EXPECT_EQ(test, 4, stats.nr_reserved);
	KUNIT_EXPECT_EQ(test, 1, stats.level[3]);
}

/*
 * A periodic timer takes every level of its wheel when it is armed, as many
 * as a wall-clock wheel has from the start: the read that re-arms it, for
 * any distance, needs no memory, and cannot fail for want of it.
 */
static void htw_ctx_periodic_arm_takes_every_level(struct kunit *test)
{
	/* Off the stack: two of them are too much for KASAN's frames. */
	struct htw_wheel_stats *mono, *real;
	struct htw_event ev;

	mono = kunit_kzalloc(test, sizeof(*mono), GFP_KERNEL);
	real = kunit_kzalloc(test, sizeof(*real), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, mono);
	KUNIT_ASSERT_NOT_NULL(test, real);
	test_arm(test, 0, 50, TEST_MIN_PERIOD, 0);
	htw_wheel_get_stats(test_wheel(test, HTW_CTX_MONOTONIC), mono);
	htw_wheel_get_stats(test_wheel(test, HTW_CTX_REALTIME), real);
	KUNIT_EXPECT_GT(test, mono->nr_reserved, 4);
	KUNIT_EXPECT_EQ(test, real->nr_reserved, mono->nr_reserved);

	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 50);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, 1, ev.count);
	KUNIT_EXPECT_EQ(test, 1, test_timers(test));
}

/*
 * The user's limit holds across contexts, and not across users; a wheel is
 * charged the most memory it can take.
 */
static void htw_ctx_user_limit_spans_contexts(struct kunit *test)
{
	struct htw_ctx_params p = ((struct htw_ctx_test *)test->priv)->params;
	struct htw_timer_spec spec = { .expires = 100 };
	unsigned long limit = ULONG_MAX;
	struct htw_user *alice, *bob;
	struct htw_ctx *a1, *a2, *b1;
	unsigned long base;
	u32 id;

	alice = htw_user_get(&init_user_ns, KUIDT_INIT(60001));
	bob = htw_user_get(&init_user_ns, KUIDT_INIT(60002));
	KUNIT_ASSERT_NOT_NULL(test, alice);
	KUNIT_ASSERT_NOT_NULL(test, bob);
	p.max_user_bytes = &limit;
	p.user = alice;
	a1 = htw_ctx_create(&p);
	a2 = htw_ctx_create(&p);
	p.user = bob;
	b1 = htw_ctx_create(&p);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, a1);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, a2);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, b1);

	KUNIT_ASSERT_EQ(test, 0, htw_ctx_arm(a1, &spec, NULL));
	base = htw_user_bytes(alice);
	KUNIT_EXPECT_GT(test, base, htw_ctx_timer_cost());
	KUNIT_ASSERT_EQ(test, 0, htw_ctx_arm(a2, &spec, NULL));
	id = spec.id;
	/* a2's wheel counts as much as a1's. */
	KUNIT_EXPECT_EQ(test, 2 * base, htw_user_bytes(alice));

	limit = 2 * base + htw_ctx_timer_cost();
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_arm(a1, &spec, NULL));
	KUNIT_EXPECT_EQ(test, -ENOSPC, htw_ctx_arm(a2, &spec, NULL));
	KUNIT_EXPECT_EQ(test, -ENOSPC, htw_ctx_arm(a1, &spec, NULL));
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_arm(b1, &spec, NULL));

	/* A cancel gives the room back; closing a file gives back its all. */
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_cancel(a2, id));
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_arm(a2, &spec, NULL));
	htw_ctx_destroy(a1);
	KUNIT_EXPECT_EQ(test, base, htw_user_bytes(alice));
	htw_ctx_destroy(a2);
	KUNIT_EXPECT_EQ(test, 0, htw_user_bytes(alice));
	htw_ctx_destroy(b1);
	htw_user_put(alice);
	htw_user_put(bob);
}

/*
 * A batch allocates HTW_CTX_BATCH_MAX timers ahead, and frees released ones
 * that many at a time: arms past what it allocated ahead, arms that fail
 * after they took a timer, and cancels past what it frees at once leave
 * the context's count and its user's exact.
 */
static void htw_ctx_batch_allocates_and_frees_in_bulk(struct kunit *test)
{
	struct htw_ctx_params p = ((struct htw_ctx_test *)test->priv)->params;
	const unsigned int n = 2 * HTW_CTX_BATCH_MAX + 3;
	struct htw_timer_spec spec = { .expires = 100 };
	unsigned long limit = ULONG_MAX;
	unsigned int i;
	u32 nr_timers, nr_queued, *ids;
	struct htw_ctx_batch batch;
	struct htw_user *user;
	struct htw_ctx *ctx;
	unsigned long base;
	int ret;

	ids = kunit_kcalloc(test, n, sizeof(*ids), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ids);
	user = htw_user_get(&init_user_ns, KUIDT_INIT(60003));
	KUNIT_ASSERT_NOT_NULL(test, user);
	p.max_user_bytes = &limit;
	p.user = user;
	p.max_timers = n - 5;
	ctx = htw_ctx_create(&p);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ctx);
	/* The first timer brings the wheel and the first xarray node. */
	KUNIT_ASSERT_EQ(test, 0, htw_ctx_arm(ctx, &spec, NULL));
	ids[0] = spec.id;
	base = htw_user_bytes(user) - htw_ctx_timer_cost();

	KUNIT_ASSERT_EQ(test, 0, htw_ctx_batch_begin(ctx, &batch, n));
	for (i = 1; i < n; i++) {
		ret = htw_ctx_batch_arm(&batch, &spec, NULL);
		KUNIT_EXPECT_EQ(test, i < p.max_timers ? 0 : -ENOSPC, ret);
		ids[i] = ret ? 0 : spec.id;
	}
	htw_ctx_batch_end(&batch);
	htw_ctx_counts(ctx, &nr_timers, &nr_queued);
	KUNIT_EXPECT_EQ(test, p.max_timers, nr_timers);
	KUNIT_EXPECT_EQ(test, base + p.max_timers * htw_ctx_timer_cost(),
			htw_user_bytes(user));

	KUNIT_ASSERT_EQ(test, 0, htw_ctx_batch_begin(ctx, &batch, 0));
	for (i = 0; i < p.max_timers; i++)
		KUNIT_EXPECT_EQ(test, 0, htw_ctx_batch_cancel(&batch, ids[i]));
	KUNIT_EXPECT_EQ(test, -ENOENT, htw_ctx_batch_cancel(&batch, ids[0]));
	htw_ctx_batch_end(&batch);
	htw_ctx_counts(ctx, &nr_timers, &nr_queued);
	KUNIT_EXPECT_EQ(test, 0, nr_timers);
	KUNIT_EXPECT_EQ(test, base, htw_user_bytes(user));
	htw_ctx_destroy(ctx);
	KUNIT_EXPECT_EQ(test, 0, htw_user_bytes(user));
	htw_user_put(user);
}

/*
 * A cancel gives its user the room back at once: an arm after it in the
 * same batch, at the user's limit, finds it.
 */
static void htw_ctx_batch_cancel_makes_room_for_the_next_arm(struct kunit *test)
{
	struct htw_ctx_params p = ((struct htw_ctx_test *)test->priv)->params;
	struct htw_timer_spec spec = { .expires = 100 };
	unsigned long limit = ULONG_MAX;
	struct htw_ctx_batch batch;
	struct htw_user *user;
	struct htw_ctx *ctx;
	u32 id;

	user = htw_user_get(&init_user_ns, KUIDT_INIT(60004));
	KUNIT_ASSERT_NOT_NULL(test, user);
	p.max_user_bytes = &limit;
	p.user = user;
	ctx = htw_ctx_create(&p);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ctx);
	KUNIT_ASSERT_EQ(test, 0, htw_ctx_arm(ctx, &spec, NULL));
	id = spec.id;
	limit = htw_user_bytes(user);
	KUNIT_EXPECT_EQ(test, -ENOSPC, htw_ctx_arm(ctx, &spec, NULL));

	KUNIT_ASSERT_EQ(test, 0, htw_ctx_batch_begin(ctx, &batch, 1));
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_batch_cancel(&batch, id));
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_batch_arm(&batch, &spec, NULL));
	htw_ctx_batch_end(&batch);
	KUNIT_EXPECT_EQ(test, limit, htw_user_bytes(user));
	htw_ctx_destroy(ctx);
	KUNIT_EXPECT_EQ(test, 0, htw_user_bytes(user));
	htw_user_put(user);
}

static void htw_ctx_contexts_do_not_share_ids(struct kunit *test)
{
	struct htw_ctx_test *t = test->priv;
	struct htw_ctx *other;
	struct htw_event ev;
	u32 id;

	other = htw_ctx_create(&t->params);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, other);

	id = test_arm(test, 0, 100, 0, 0);
	KUNIT_EXPECT_EQ(test, -ENOENT, htw_ctx_cancel(other, id));
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 100);
	KUNIT_EXPECT_EQ(test, -EAGAIN, test_read_ctx(other, &ev, sizeof(ev)));
	KUNIT_EXPECT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	htw_ctx_destroy(other);
}

static void htw_ctx_boottime_timer_runs_on_boottime(struct kunit *test)
{
	struct htw_event ev;

	test_arm(test, HTW_TIMER_BOOTTIME, 100, 0, 0);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 1000);
	KUNIT_EXPECT_EQ(test, -EAGAIN, test_read(test, &ev, 1));
	test_advance(test, HTW_CTX_BOOTTIME, TEST_START + 100);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, HTW_EVENT_LAST | HTW_EVENT_BOOTTIME, ev.flags);
	KUNIT_EXPECT_EQ(test, TEST_START + 100, ev.expires);
}

/*
 * A context opened in a time namespace reports its events' times shifted
 * by the namespace's offset of each clock, and never below zero; it is
 * armed in the kernel's times.
 */
static void htw_ctx_reports_times_with_its_offsets(struct kunit *test)
{
	struct htw_ctx_params p = ((struct htw_ctx_test *)test->priv)->params;
	struct htw_timer_spec spec = { .flags = HTW_TIMER_ABSTIME };
	struct htw_wheel *wheel;
	struct htw_event ev[2];
	struct htw_ctx *ctx;

	p.time_offset[HTW_CTX_MONOTONIC] = 86400 * NSEC_PER_SEC;
	p.time_offset[HTW_CTX_BOOTTIME] = -(s64)(TEST_START + 50);
	ctx = htw_ctx_create(&p);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ctx);

	spec.expires = TEST_START + 100;
	KUNIT_ASSERT_EQ(test, 0, htw_ctx_arm(ctx, &spec, NULL));
	spec.flags |= HTW_TIMER_BOOTTIME;
	spec.expires = TEST_START + 10;
	KUNIT_ASSERT_EQ(test, 0, htw_ctx_arm(ctx, &spec, NULL));
	wheel = htw_ctx_wheel(ctx, HTW_CTX_MONOTONIC);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, wheel);
	while (htw_advance(wheel, TEST_START + 100))
		;
	wheel = htw_ctx_wheel(ctx, HTW_CTX_BOOTTIME);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, wheel);
	while (htw_advance(wheel, TEST_START + 60))
		;

	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read_ctx(ctx, ev, sizeof(ev)));
	KUNIT_EXPECT_EQ(test, TEST_START + 100 + 86400 * NSEC_PER_SEC,
			ev[0].expires);
	KUNIT_EXPECT_EQ(test, ev[0].expires, ev[0].fired);
	/* Due before its namespace's clock began: 0; fired 10 ns after. */
	KUNIT_EXPECT_EQ(test, 0, ev[1].expires);
	KUNIT_EXPECT_EQ(test, 10, ev[1].fired);
	htw_ctx_destroy(ctx);
}

#define TEST_WALL	(1000 * NSEC_PER_SEC)	/* the wall clock's offset */

/* A wall-clock timer fires when the wall clock reaches its expiry. */
static void htw_ctx_realtime_timer_fires_at_its_wall_time(struct kunit *test)
{
	struct htw_event ev;

	htw_ctx_set_real_offset(test_ctx(test), TEST_WALL);
	test_arm(test, HTW_TIMER_REALTIME | HTW_TIMER_ABSTIME,
		 TEST_WALL + TEST_START + 100, 0, 7);
	test_advance(test, HTW_CTX_REALTIME, TEST_START + 99);
	KUNIT_EXPECT_EQ(test, -EAGAIN, test_read(test, &ev, 1));
	test_advance(test, HTW_CTX_REALTIME, TEST_START + 100);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, HTW_EVENT_LAST | HTW_EVENT_REALTIME, ev.flags);
	KUNIT_EXPECT_EQ(test, TEST_WALL + TEST_START + 100, ev.expires);
	KUNIT_EXPECT_EQ(test, ev.expires, ev.fired);
}

/*
 * The wall clock set back: a timer placed for the old offset reaches its
 * place on the wheel while the wall clock reads less than its expiry.  It
 * is not delivered, but placed again, and comes when the wall clock
 * reaches it; the others follow the clock when it is set.
 */
static void htw_ctx_realtime_timer_follows_the_wall_clock(struct kunit *test)
{
	struct htw_ctx *ctx = test_ctx(test);
	struct htw_event ev[2];

	htw_ctx_set_real_offset(ctx, TEST_WALL);
	test_arm(test, HTW_TIMER_REALTIME | HTW_TIMER_ABSTIME,
		 TEST_WALL + TEST_START + 100, 0, 1);
	test_arm(test, HTW_TIMER_REALTIME | HTW_TIMER_ABSTIME,
		 TEST_WALL + TEST_START + 300, 10, 2);

	/* Set back by 500 ns; no one has told the context yet. */
	htw_ctx_set_real_offset(ctx, TEST_WALL - 500);
	test_advance(test, HTW_CTX_REALTIME, TEST_START + 100);
	KUNIT_EXPECT_EQ(test, -EAGAIN, test_read(test, ev, 1));
	htw_ctx_clock_was_set(ctx);
	test_advance(test, HTW_CTX_REALTIME, TEST_START + 599);
	KUNIT_EXPECT_EQ(test, -EAGAIN, test_read(test, ev, 1));
	test_advance(test, HTW_CTX_REALTIME, TEST_START + 600);
	KUNIT_ASSERT_EQ(test, sizeof(ev[0]), test_read(test, ev, 1));
	KUNIT_EXPECT_EQ(test, 1, ev[0].user_data);
	KUNIT_EXPECT_EQ(test, TEST_WALL + TEST_START + 100, ev[0].expires);
	KUNIT_EXPECT_EQ(test, ev[0].expires, ev[0].fired);

	/* Forward by 1000 ns: the periodic one, due at wall 300, is due. */
	htw_ctx_set_real_offset(ctx, TEST_WALL + 500);
	htw_ctx_clock_was_set(ctx);
	test_advance(test, HTW_CTX_REALTIME, TEST_START + 601);
	KUNIT_ASSERT_EQ(test, sizeof(ev[0]), test_read(test, ev, 2));
	KUNIT_EXPECT_EQ(test, 2, ev[0].user_data);
	KUNIT_EXPECT_EQ(test, HTW_EVENT_REALTIME, ev[0].flags);
	/* Wall 300 + 10k up to 1100, the wall clock now at 1101: 81 of them. */
	KUNIT_EXPECT_EQ(test, TEST_WALL + TEST_START + 1100, ev[0].expires);
	KUNIT_EXPECT_EQ(test, 81, ev[0].count);
	KUNIT_EXPECT_EQ(test, TEST_WALL + TEST_START + 1101, ev[0].fired);
}

/*
 * A timer armed with HTW_TIMER_CANCEL_ON_SET is cancelled by a set of the
 * wall clock after it was armed, with one event that says so; one armed
 * after the set is not.
 */
static void htw_ctx_cancel_on_set_is_cancelled_once(struct kunit *test)
{
	u32 flags = HTW_TIMER_REALTIME | HTW_TIMER_ABSTIME |
		    HTW_TIMER_CANCEL_ON_SET;
	struct htw_ctx *ctx = test_ctx(test);
	struct htw_event ev[2];
	u32 id;

	htw_ctx_set_real_offset(ctx, TEST_WALL);
	id = test_arm(test, flags, TEST_WALL + TEST_START + 100, 0, 1);
	htw_ctx_set_real_offset(ctx, TEST_WALL + 50);
	test_arm(test, flags, TEST_WALL + TEST_START + 200, 0, 2);
	htw_ctx_clock_was_set(ctx);
	htw_ctx_clock_was_set(ctx);

	KUNIT_ASSERT_EQ(test, sizeof(ev[0]), test_read(test, ev, 2));
	KUNIT_EXPECT_EQ(test, id, ev[0].id);
	KUNIT_EXPECT_EQ(test, HTW_EVENT_LAST | HTW_EVENT_REALTIME |
			      HTW_EVENT_CANCELED, ev[0].flags);
	KUNIT_EXPECT_EQ(test, 0, ev[0].count);
	KUNIT_EXPECT_EQ(test, TEST_WALL + TEST_START + 100, ev[0].expires);
	KUNIT_EXPECT_EQ(test, 1, test_timers(test));
	KUNIT_EXPECT_EQ(test, -ENOENT, htw_ctx_cancel(ctx, id));

	/* The other is armed as it was. */
	test_advance(test, HTW_CTX_REALTIME, TEST_START + 150);
	KUNIT_ASSERT_EQ(test, sizeof(ev[0]), test_read(test, ev, 2));
	KUNIT_EXPECT_EQ(test, 2, ev[0].user_data);
	KUNIT_EXPECT_EQ(test, HTW_EVENT_LAST | HTW_EVENT_REALTIME, ev[0].flags);
}

/*
 * A timer that fired early (the wall clock set back) and was left idle is
 * placed again even if the clock is set forward to where it was before the
 * context's work looks: it must not be taken as placed already, and lost.
 */
static void htw_ctx_early_timer_is_not_lost(struct kunit *test)
{
	struct htw_ctx *ctx = test_ctx(test);
	struct htw_event ev;

	htw_ctx_set_real_offset(ctx, TEST_WALL);
	test_arm(test, HTW_TIMER_REALTIME | HTW_TIMER_ABSTIME,
		 TEST_WALL + TEST_START + 100, 0, 1);
	htw_ctx_set_real_offset(ctx, TEST_WALL - 500);
	test_advance(test, HTW_CTX_REALTIME, TEST_START + 100);
	KUNIT_EXPECT_EQ(test, -EAGAIN, test_read(test, &ev, 1));
	htw_ctx_set_real_offset(ctx, TEST_WALL);
	htw_ctx_clock_was_set(ctx);
	test_advance(test, HTW_CTX_REALTIME, TEST_START + 101);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, TEST_WALL + TEST_START + 100, ev.expires);
}

/*
 * A periodic cancel-on-set timer whose event is read after a set of the
 * wall clock, before the context's work ran: the read finds the set, and
 * that event is its last, cancelled.
 */
static void htw_ctx_read_after_a_set_cancels(struct kunit *test)
{
	struct htw_ctx *ctx = test_ctx(test);
	struct htw_event ev;

	htw_ctx_set_real_offset(ctx, TEST_WALL);
	test_arm(test, HTW_TIMER_REALTIME | HTW_TIMER_ABSTIME |
		 HTW_TIMER_CANCEL_ON_SET, TEST_WALL + TEST_START + 100, 50, 1);
	test_advance(test, HTW_CTX_REALTIME, TEST_START + 100);
	htw_ctx_set_real_offset(ctx, TEST_WALL + 1000);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, HTW_EVENT_LAST | HTW_EVENT_REALTIME |
			      HTW_EVENT_CANCELED, ev.flags);
	KUNIT_EXPECT_EQ(test, 0, test_timers(test));
}

/*
 * A one-shot cancel-on-set timer that fired before a set of the wall clock
 * and whose event was not read yet is cancelled by the set all the same, as
 * the set discards a timerfd's ticks: the event says so, with a count of 0.
 */
static void htw_ctx_set_discards_a_queued_expiry(struct kunit *test)
{
	struct htw_ctx *ctx = test_ctx(test);
	struct htw_event ev;

	htw_ctx_set_real_offset(ctx, TEST_WALL);
	test_arm(test, HTW_TIMER_REALTIME | HTW_TIMER_ABSTIME |
		 HTW_TIMER_CANCEL_ON_SET, TEST_WALL + TEST_START + 100, 0, 1);
	test_advance(test, HTW_CTX_REALTIME, TEST_START + 100);
	KUNIT_EXPECT_EQ(test, 1, test_queued(test));
	htw_ctx_set_real_offset(ctx, TEST_WALL - 20);
	htw_ctx_clock_was_set(ctx);
	/* Set back to where it was: the set happened all the same. */
	htw_ctx_set_real_offset(ctx, TEST_WALL);
	htw_ctx_clock_was_set(ctx);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, HTW_EVENT_LAST | HTW_EVENT_REALTIME |
			      HTW_EVENT_CANCELED, ev.flags);
	KUNIT_EXPECT_EQ(test, 0, ev.count);
	KUNIT_EXPECT_EQ(test, TEST_WALL + TEST_START + 100, ev.expires);
	KUNIT_EXPECT_EQ(test, 0, test_timers(test));
}

/*
 * A one-shot cancel-on-set timer that fires after a step of the wall clock
 * forward, on the place it had before it, and before the context's work
 * has run: its event is read as the cancel, not as an expiry.
 */
static void htw_ctx_expiry_after_a_set_is_the_cancel(struct kunit *test)
{
	struct htw_ctx *ctx = test_ctx(test);
	struct htw_event ev;

	htw_ctx_set_real_offset(ctx, TEST_WALL);
	test_arm(test, HTW_TIMER_REALTIME | HTW_TIMER_ABSTIME |
		 HTW_TIMER_CANCEL_ON_SET, TEST_WALL + TEST_START + 100, 0, 1);
	htw_ctx_set_real_offset(ctx, TEST_WALL + 30);
	test_advance(test, HTW_CTX_REALTIME, TEST_START + 100);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, HTW_EVENT_LAST | HTW_EVENT_REALTIME |
			      HTW_EVENT_CANCELED, ev.flags);
	KUNIT_EXPECT_EQ(test, 0, ev.count);
	KUNIT_EXPECT_EQ(test, TEST_WALL + 30 + TEST_START + 100, ev.fired);
}

/*
 * A relative expiry on the wall clock is a duration: the timer runs on
 * CLOCK_MONOTONIC and reports its times, and a step of the wall clock by
 * decades moves nothing, nor counts a single extra expiry.
 */
static void htw_ctx_relative_realtime_is_a_duration(struct kunit *test)
{
	const s64 decades = 40LL * 365 * 86400 * NSEC_PER_SEC;
	struct htw_ctx *ctx = test_ctx(test);
	struct htw_event ev;

	htw_ctx_set_real_offset(ctx, TEST_WALL);
	test_arm(test, HTW_TIMER_REALTIME, 100, TEST_MIN_PERIOD, 1);
	htw_ctx_set_real_offset(ctx, TEST_WALL + decades);
	htw_ctx_clock_was_set(ctx);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 99);
	KUNIT_EXPECT_EQ(test, -EAGAIN, test_read(test, &ev, 1));
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 100);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, 0, ev.flags);
	KUNIT_EXPECT_EQ(test, 1, ev.count);
	KUNIT_EXPECT_EQ(test, TEST_START + 100, ev.expires);

	htw_ctx_set_real_offset(ctx, TEST_WALL - decades);
	htw_ctx_clock_was_set(ctx);
	test_advance(test, HTW_CTX_MONOTONIC, TEST_START + 110);
	KUNIT_ASSERT_EQ(test, sizeof(ev), test_read(test, &ev, 1));
	KUNIT_EXPECT_EQ(test, 1, ev.count);
	KUNIT_EXPECT_EQ(test, TEST_START + 110, ev.expires);
}

/* htw_time_minus() stays within [0, HTW_TIME_MAX] whatever it is given. */
struct htw_time_minus_case {
	const char *desc;
	u64 t;
	s64 offset;
	u64 result;
};

static const struct htw_time_minus_case htw_time_minus_cases[] = {
	{ "within range", 100, 30, 70 },
	{ "ahead, within range", 100, -30, 130 },
	{ "below zero", 5, 10, 0 },
	{ "past the end", HTW_TIME_MAX, -1, HTW_TIME_MAX },
	{ "a time past the end", U64_MAX, 0, HTW_TIME_MAX },
	{ "a time past the end, behind", U64_MAX, S64_MAX, HTW_TIME_MAX },
	{ "the farthest offset ahead", 0, S64_MIN, HTW_TIME_MAX },
	{ "wrapping", U64_MAX, S64_MIN, HTW_TIME_MAX },
	{ "the farthest offset behind", HTW_TIME_MAX, S64_MAX, 0 },
};

KUNIT_ARRAY_PARAM_DESC(htw_time_minus, htw_time_minus_cases, desc);

static void htw_ctx_time_minus_saturates(struct kunit *test)
{
	const struct htw_time_minus_case *p = test->param_value;

	KUNIT_EXPECT_EQ(test, p->result, htw_time_minus(p->t, p->offset));
}

/* htw_time_plus() too, S64_MIN and all, which it does not negate. */
static const struct htw_time_minus_case htw_time_plus_cases[] = {
	{ "within range", 100, 30, 130 },
	{ "behind, within range", 100, -30, 70 },
	{ "below zero", 5, -10, 0 },
	{ "past the end", HTW_TIME_MAX, 1, HTW_TIME_MAX },
	{ "a time past the end", U64_MAX, 0, HTW_TIME_MAX },
	{ "wrapping", U64_MAX, S64_MAX, HTW_TIME_MAX },
	{ "the farthest offset behind", HTW_TIME_MAX, S64_MIN, 0 },
	{ "the farthest offset behind a time past the end", U64_MAX, S64_MIN,
	  HTW_TIME_MAX },
};

KUNIT_ARRAY_PARAM_DESC(htw_time_plus, htw_time_plus_cases, desc);

static void htw_ctx_time_plus_saturates(struct kunit *test)
{
	const struct htw_time_minus_case *p = test->param_value;

	KUNIT_EXPECT_EQ(test, p->result, htw_time_plus(p->t, p->offset));
}

/*
 * Destroying a context gives back everything it charged to its user: each
 * timer, queued, parked or armed, and each wheel.  (htw_wheel_destroy()
 * also warns, which fails the run, about a timer left on a wheel.)
 */
static void htw_ctx_destroy_releases_every_timer(struct kunit *test)
{
	struct htw_ctx_params p = ((struct htw_ctx_test *)test->priv)->params;
	struct htw_timer_spec spec = { .expires = 100 };
	unsigned long limit = ULONG_MAX;
	struct htw_wheel *wheel;
	struct htw_ctx *ctx;

	p.user = htw_user_get(&init_user_ns, KUIDT_INIT(60003));
	KUNIT_ASSERT_NOT_NULL(test, p.user);
	p.max_user_bytes = &limit;
	ctx = htw_ctx_create(&p);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ctx);

	KUNIT_EXPECT_EQ(test, 0, htw_ctx_arm(ctx, &spec, NULL));
	spec.period = 100;
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_arm(ctx, &spec, NULL));
	spec.expires = 200;
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_arm(ctx, &spec, NULL));
	spec.flags = HTW_TIMER_BOOTTIME;
	spec.period = 0;
	KUNIT_EXPECT_EQ(test, 0, htw_ctx_arm(ctx, &spec, NULL));
	wheel = htw_ctx_wheel(ctx, HTW_CTX_MONOTONIC);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, wheel);
	while (htw_advance(wheel, TEST_START + 100))
		;
	KUNIT_EXPECT_GT(test, htw_user_bytes(p.user), 4 * htw_ctx_timer_cost());

	htw_ctx_destroy(ctx);
	KUNIT_EXPECT_EQ(test, 0, htw_user_bytes(p.user));
	htw_user_put(p.user);
}

struct htw_ctx_spec_case {
	const char *name;
	struct htw_timer_spec spec;
	int ret;
};

static const struct htw_ctx_spec_case htw_ctx_spec_cases[] = {
	{ "unknown flag", { .flags = BIT(4), .expires = 1 }, -EINVAL },
	{ "boottime and realtime",
	  { .flags = HTW_TIMER_BOOTTIME | HTW_TIMER_REALTIME, .expires = 1 },
	  -EINVAL },
	{ "cancel on set, monotonic",
	  { .flags = HTW_TIMER_ABSTIME | HTW_TIMER_CANCEL_ON_SET,
	    .expires = 1 }, -EINVAL },
	{ "cancel on set, relative",
	  { .flags = HTW_TIMER_REALTIME | HTW_TIMER_CANCEL_ON_SET,
	    .expires = 1 }, -EINVAL },
	{ "cancel on set, realtime, absolute",
	  { .flags = HTW_TIMER_ABSTIME | HTW_TIMER_REALTIME |
		     HTW_TIMER_CANCEL_ON_SET, .expires = 1 }, 0 },
	{ "realtime", { .flags = HTW_TIMER_REALTIME, .expires = 1 }, 0 },
	{ "period below minimum",
	  { .expires = 1, .period = TEST_MIN_PERIOD - 1 }, -EINVAL },
	{ "period above maximum",
	  { .expires = 1, .period = HTW_TIME_MAX + 1 }, -EINVAL },
	{ "relative expiry overflows", { .expires = U64_MAX }, -EINVAL },
	{ "relative expiry past maximum",
	  { .expires = HTW_TIME_MAX - TEST_START + 1 }, -EINVAL },
	{ "absolute expiry past maximum",
	  { .flags = HTW_TIMER_ABSTIME, .expires = HTW_TIME_MAX + 1 }, -EINVAL },
	{ "relative expiry at maximum",
	  { .expires = HTW_TIME_MAX - TEST_START }, 0 },
	{ "absolute expiry at maximum",
	  { .flags = HTW_TIMER_ABSTIME, .expires = HTW_TIME_MAX }, 0 },
	{ "absolute expiry in the past",
	  { .flags = HTW_TIMER_ABSTIME, .expires = 1 }, 0 },
	{ "period at minimum", { .expires = 1, .period = TEST_MIN_PERIOD }, 0 },
	{ "period at maximum", { .expires = 1, .period = HTW_TIME_MAX }, 0 },
	{ "boottime", { .flags = HTW_TIMER_BOOTTIME, .expires = 1 }, 0 },
};

static void htw_ctx_spec_case_desc(const struct htw_ctx_spec_case *c,
				   char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(htw_ctx_spec, htw_ctx_spec_cases, htw_ctx_spec_case_desc);

static void htw_ctx_spec_is_validated(struct kunit *test)
{
	const struct htw_ctx_spec_case *c = test->param_value;
	struct htw_timer_spec spec = c->spec;

	KUNIT_EXPECT_EQ(test, c->ret, htw_ctx_arm(test_ctx(test), &spec, NULL));
	KUNIT_EXPECT_EQ(test, c->ret ? 0 : 1, test_timers(test));
	/* A valid spec is just as valid for a modify. */
	if (!c->ret) {
		spec.id = 1;
		KUNIT_EXPECT_EQ(test, 0, htw_ctx_modify(test_ctx(test), &spec));
	}
}

static struct kunit_case htw_ctx_test_cases[] = {
	KUNIT_CASE(htw_ctx_relative_expiry_counts_from_now),
	KUNIT_CASE(htw_ctx_absolute_expiry_never_early),
	KUNIT_CASE(htw_ctx_periodic_counts_missed_periods),
	KUNIT_CASE(htw_ctx_unread_event_raises_its_count),
	KUNIT_CASE(htw_ctx_events_read_in_queue_order),
	KUNIT_CASE(htw_ctx_read_needs_room_for_one_event),
	KUNIT_CASE(htw_ctx_oneshot_id_released_by_read),
	KUNIT_CASE(htw_ctx_periodic_stays_after_read),
	KUNIT_CASE(htw_ctx_cancel_before_expiry_stops_timer),
	KUNIT_CASE(htw_ctx_cancel_drops_queued_event),
	KUNIT_CASE(htw_ctx_cancel_unknown_id_is_enoent),
	KUNIT_CASE(htw_ctx_modify_drops_event_and_rearms),
	KUNIT_CASE(htw_ctx_modify_unknown_id_is_enoent),
	KUNIT_CASE(htw_ctx_full_context_is_enospc),
	KUNIT_CASE(htw_ctx_ids_are_not_reused_soon),
	KUNIT_CASE(htw_ctx_unread_periodic_is_parked),
	KUNIT_CASE(htw_ctx_periodic_rearms_after_the_read),
	KUNIT_CASE(htw_ctx_wheel_grows_levels_on_demand),
	KUNIT_CASE(htw_ctx_periodic_arm_takes_every_level),
	KUNIT_CASE(htw_ctx_user_limit_spans_contexts),
	KUNIT_CASE(htw_ctx_batch_allocates_and_frees_in_bulk),
	KUNIT_CASE(htw_ctx_batch_cancel_makes_room_for_the_next_arm),
	KUNIT_CASE(htw_ctx_contexts_do_not_share_ids),
	KUNIT_CASE(htw_ctx_boottime_timer_runs_on_boottime),
	KUNIT_CASE(htw_ctx_destroy_releases_every_timer),
	KUNIT_CASE(htw_ctx_reports_times_with_its_offsets),
	KUNIT_CASE(htw_ctx_realtime_timer_fires_at_its_wall_time),
	KUNIT_CASE(htw_ctx_realtime_timer_follows_the_wall_clock),
	KUNIT_CASE(htw_ctx_cancel_on_set_is_cancelled_once),
	KUNIT_CASE(htw_ctx_early_timer_is_not_lost),
	KUNIT_CASE(htw_ctx_read_after_a_set_cancels),
	KUNIT_CASE(htw_ctx_set_discards_a_queued_expiry),
	KUNIT_CASE(htw_ctx_expiry_after_a_set_is_the_cancel),
	KUNIT_CASE(htw_ctx_relative_realtime_is_a_duration),
	KUNIT_CASE_PARAM(htw_ctx_time_minus_saturates, htw_time_minus_gen_params),
	KUNIT_CASE_PARAM(htw_ctx_time_plus_saturates, htw_time_plus_gen_params),
	KUNIT_CASE_PARAM(htw_ctx_spec_is_validated, htw_ctx_spec_gen_params),
	{}
};

static struct kunit_suite htw_ctx_test_suite = {
	.name = "htw_ctx",
	.init = htw_ctx_test_init,
	.exit = htw_ctx_test_exit,
	.test_cases = htw_ctx_test_cases,
};

kunit_test_suite(htw_ctx_test_suite);

HTW_IMPORT_KUNIT_NS();
