// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for the wheel of htw_core.c: its promises, case by case
 *
 * Every case here drives a manual wheel (HTW_WHEEL_MANUAL) by hand with
 * htw_advance(), so each one is deterministic.  The promise under test, from
 * htw_core.h, for a wheel of tick T whose time starts at c:
 *
 *	expiry <= time of the callback < expiry + T
 *
 * and, from the design notes of htw_core.c, the tick boundaries lie at
 * c + k * T: a timer expiring at E runs in the first advance that reaches
 * the first boundary at or after E.  On a manual wheel "the time of the
 * callback" is the time the advance moved the wheel to, which is what
 * htw_wheel_now() returns inside the callback.
 */

#include <kunit/test.h>
#include <linux/bitops.h>
#include <linux/bits.h>
#include <linux/limits.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/module.h>

#include "htw_test.h"

struct htw_core_wheel_case {
	const char *desc;
	u32 wheel_size;
	u64 tick_ns;
};

static const struct htw_core_wheel_case htw_core_sizes[] = {
	{ .desc = "size 2", .wheel_size = 2, .tick_ns = 1 },
	{ .desc = "size 4", .wheel_size = 4, .tick_ns = 1 },
	{ .desc = "size 64", .wheel_size = 64, .tick_ns = 1 },
};

KUNIT_ARRAY_PARAM_DESC(htw_core_sizes, htw_core_sizes, desc);

/* Kafka's TimerTest runs its timers on wheels of 3 buckets: 2 and 4 here. */
static const struct htw_core_wheel_case htw_core_small_sizes[] = {
	{ .desc = "size 2", .wheel_size = 2, .tick_ns = 1 },
	{ .desc = "size 4", .wheel_size = 4, .tick_ns = 1 },
};

KUNIT_ARRAY_PARAM_DESC(htw_core_small_sizes, htw_core_small_sizes, desc);

static const struct htw_core_wheel_case htw_core_odd_ticks[] = {
	{ .desc = "tick 3, size 2", .wheel_size = 2, .tick_ns = 3 },
	{ .desc = "tick 3, size 64", .wheel_size = 64, .tick_ns = 3 },
	{ .desc = "tick 1000003, size 4", .wheel_size = 4, .tick_ns = 1000003 },
	{ .desc = "tick 1000003, size 64", .wheel_size = 64,
	  .tick_ns = 1000003 },
	/* Large ticks, for the reciprocal that divides by the tick. */
	{ .desc = "tick 2^40 + 1, size 64", .wheel_size = 64,
	  .tick_ns = (1ULL << 40) + 1 },
	{ .desc = "tick 2^50 - 1, size 4", .wheel_size = 4,
	  .tick_ns = (1ULL << 50) - 1 },
};

KUNIT_ARRAY_PARAM_DESC(htw_core_odd_ticks, htw_core_odd_ticks, desc);

static const struct htw_core_wheel_case htw_core_top_ticks[] = {
	{ .desc = "tick 1, size 2", .wheel_size = 2, .tick_ns = 1 },
	{ .desc = "tick 1, size 64", .wheel_size = 64, .tick_ns = 1 },
	{ .desc = "tick 3, size 64", .wheel_size = 64, .tick_ns = 3 },
};

KUNIT_ARRAY_PARAM_DESC(htw_core_top_ticks, htw_core_top_ticks, desc);

/* The level a timer @d ticks ahead of a wheel at tick 0 lands on. */
static unsigned int htw_core_level_of(u64 d, u32 wheel_size)
{
	return (fls64(d) - 1) / ilog2(wheel_size);
}

/* The first tick boundary at or after @expires, on a wheel starting at @c. */
static u64 htw_core_boundary(u64 c, u64 tick, u64 expires)
{
	u64 rem;

	div64_u64_rem(expires - c, tick, &rem);
	return rem ? expires + tick - rem : expires;
}

/* Timers fired exactly once at their expiry up to @now, never after it. */
static void htw_core_expect_fired_by(struct kunit *test,
				     struct htw_test_timer *t, size_t n,
				     const u64 *expires, u64 now)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (expires[i] > now) {
			KUNIT_EXPECT_EQ_MSG(test, t[i].fires, 0,
					    "timer %zu (expiry %llu) ran at %llu",
					    i, expires[i], t[i].fired_at);
			continue;
		}
		KUNIT_EXPECT_EQ_MSG(test, t[i].fires, 1,
				    "timer %zu (expiry %llu) at %llu",
				    i, expires[i], now);
		KUNIT_EXPECT_GE_MSG(test, t[i].fired_at, expires[i],
				    "timer %zu ran early", i);
	}
}

/* Creating wheels */

struct htw_core_params_case {
	const char *desc;
	struct htw_wheel_params params;
};

static const struct htw_core_params_case htw_core_invalid_params[] = {
	{ "wheel_size 0", { .tick_ns = 1, .wheel_size = 0,
	  .clockid = CLOCK_MONOTONIC, .flags = HTW_WHEEL_MANUAL } },
	{ "wheel_size 1", { .tick_ns = 1, .wheel_size = 1,
	  .clockid = CLOCK_MONOTONIC, .flags = HTW_WHEEL_MANUAL } },
	{ "wheel_size 3", { .tick_ns = 1, .wheel_size = 3,
	  .clockid = CLOCK_MONOTONIC, .flags = HTW_WHEEL_MANUAL } },
	{ "wheel_size 48", { .tick_ns = 1, .wheel_size = 48,
	  .clockid = CLOCK_MONOTONIC, .flags = HTW_WHEEL_MANUAL } },
	{ "wheel_size 128", { .tick_ns = 1, .wheel_size = 128,
	  .clockid = CLOCK_MONOTONIC, .flags = HTW_WHEEL_MANUAL } },
	{ "tick 0", { .tick_ns = 0, .wheel_size = 64,
	  .clockid = CLOCK_MONOTONIC, .flags = HTW_WHEEL_MANUAL } },
	{ "CLOCK_REALTIME", { .tick_ns = 1, .wheel_size = 64,
	  .clockid = CLOCK_REALTIME } },
	{ "CLOCK_TAI", { .tick_ns = 1, .wheel_size = 64,
	  .clockid = CLOCK_TAI } },
	{ "clockid -1", { .tick_ns = 1, .wheel_size = 64, .clockid = -1 } },
	{ "unknown flag", { .tick_ns = 1, .wheel_size = 64,
	  .clockid = CLOCK_MONOTONIC, .flags = BIT(4) } },
	{ "start_ns without HTW_WHEEL_MANUAL", { .tick_ns = 1,
	  .wheel_size = 64, .clockid = CLOCK_MONOTONIC, .start_ns = 1 } },
};

KUNIT_ARRAY_PARAM_DESC(htw_core_invalid_params, htw_core_invalid_params, desc);

static void htw_core_create_rejects_invalid_params(struct kunit *test)
{
	const struct htw_core_params_case *p = test->param_value;
	struct htw_wheel *wheel;

	wheel = htw_wheel_create(&p->params);
	if (!IS_ERR_OR_NULL(wheel))
		htw_wheel_destroy(wheel);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(wheel), -EINVAL);
}

static const struct htw_core_params_case htw_core_valid_params[] = {
	{ "CLOCK_MONOTONIC", { .tick_ns = 1000000, .wheel_size = 64,
	  .clockid = CLOCK_MONOTONIC } },
	{ "CLOCK_BOOTTIME", { .tick_ns = 1000000, .wheel_size = 64,
	  .clockid = CLOCK_BOOTTIME } },
	{ "manual, size 2, tick 1", { .tick_ns = 1, .wheel_size = 2,
	  .clockid = CLOCK_MONOTONIC, .flags = HTW_WHEEL_MANUAL } },
	{ "manual, size 64, tick 1000003, start 7", { .tick_ns = 1000003,
	  .wheel_size = 64, .expire_budget = 1, .clockid = CLOCK_BOOTTIME,
	  .flags = HTW_WHEEL_MANUAL, .start_ns = 7 } },
	{ "manual, tick U64_MAX", { .tick_ns = U64_MAX, .wheel_size = 8,
	  .clockid = CLOCK_MONOTONIC, .flags = HTW_WHEEL_MANUAL } },
};

KUNIT_ARRAY_PARAM_DESC(htw_core_valid_params, htw_core_valid_params, desc);

static void htw_core_create_accepts_valid_params(struct kunit *test)
{
	const struct htw_core_params_case *p = test->param_value;
	struct htw_wheel_stats stats;
	struct htw_wheel *wheel;

	wheel = htw_test_wheel_params(test, &p->params);
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.tick_ns, p->params.tick_ns);
	KUNIT_EXPECT_EQ(test, stats.wheel_size, p->params.wheel_size);
	KUNIT_EXPECT_EQ(test, stats.nr_levels, 0);
	KUNIT_EXPECT_EQ(test, stats.pending, 0);
	KUNIT_EXPECT_EQ(test, stats.due, 0);
	KUNIT_EXPECT_EQ(test, htw_test_level_sum(&stats), 0);
	if (p->params.flags & HTW_WHEEL_MANUAL)
		KUNIT_EXPECT_EQ(test, htw_wheel_now(wheel), p->params.start_ns);
}

static void htw_core_manual_wheel_moves_only_by_advance(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 64, 10, 1000);

	KUNIT_EXPECT_EQ(test, htw_wheel_now(wheel), 1000);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 1234), 0);
	KUNIT_EXPECT_EQ(test, htw_wheel_now(wheel), 1234);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 1234), 0);
	KUNIT_EXPECT_EQ(test, htw_wheel_now(wheel), 1234);
}

/*
 * The statistics of the runs: with a budget of 2 callbacks, 6 due timers
 * take 3 runs, the first two stopped by their budget; each callback is
 * counted by its lateness in whole ticks past its expiry's tick (5 of them
 * 2 ticks late, 1 of them 1 tick late, in bucket fls64(late)).
 */
static void htw_core_stats_count_budget_stops_and_lateness(struct kunit *test)
{
	struct htw_wheel_params params = {
		.tick_ns = 10, .wheel_size = 64, .expire_budget = 2,
		.clockid = CLOCK_MONOTONIC, .flags = HTW_WHEEL_MANUAL,
		.start_ns = 1000,
	};
	struct htw_wheel *wheel = htw_test_wheel_params(test, &params);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 6);
	struct htw_wheel_stats stats;
	unsigned int i;

	for (i = 0; i < 6; i++)
		KUNIT_ASSERT_EQ(test, 0, htw_add(&t[i].timer, i < 5 ? 1010 : 1020,
						 0, HTW_MODE_ABS));
	KUNIT_EXPECT_EQ(test, 2, htw_advance(wheel, 1030));
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, 1, stats.budget_stops);
	KUNIT_EXPECT_EQ(test, 2, htw_advance(wheel, 1030));
	KUNIT_EXPECT_EQ(test, 2, htw_advance(wheel, 1030));
	KUNIT_EXPECT_EQ(test, 0, htw_advance(wheel, 1030));

	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, 6, stats.fired);
	KUNIT_EXPECT_EQ(test, 4, stats.runs);
	KUNIT_EXPECT_EQ(test, 2, stats.budget_stops);
	KUNIT_EXPECT_EQ(test, 5, stats.late[fls64(2)]);
	KUNIT_EXPECT_EQ(test, 1, stats.late[fls64(1)]);
	KUNIT_EXPECT_EQ(test, 0, stats.late[0]);
}

/*
 * The worked example of Kafka's TimingWheel, with u = 1 and n = 4: htw wants
 * a power of two buckets per level (a bucket is found with a shift and a
 * mask), so n = 3 of the original becomes 4.  Starting at time c:
 *
 *	level 0: [c,c]    [c+1,c+1]   [c+2,c+2]   [c+3,c+3]
 *	level 1: [c,c+3]  [c+4,c+7]   [c+8,c+11]  [c+12,c+15]
 *	level 2: [c,c+15] [c+16,c+31] [c+32,c+47] [c+48,c+63]
 *	level 3: [c,c+63] [c+64,c+127] ...
 *
 * The first bucket of each level is the current one and receives nothing:
 * a timer at c is already due, and each range it covers is covered by the
 * level below.  A bucket expires at its beginning.  At c+1, c+2 and c+3 the
 * level-0 buckets expire; at c+4 the level-1 bucket [c+4,c+7] expires, runs
 * the timer at c+4 and moves c+5..c+7 down to level 0; at c+16 the level-2
 * bucket [c+16,c+31] runs c+16 and moves c+17..c+19 to level 0 and
 * c+20..c+31 to level 1; at c+64 the same happens to [c+64,c+127].
 */
#define HTW_KAFKA_START		1000
#define HTW_KAFKA_TIMERS	80

struct htw_kafka_step {
	u64 at;		/* offset from c of the advance */
	u64 fired;	/* callbacks made so far */
	u64 level[4];	/* timers on levels 0..3 after the advance */
};

static const struct htw_kafka_step htw_kafka_steps[] = {
	{ 0, 1, { 3, 12, 48, 16 } },
	{ 1, 2, { 2, 12, 48, 16 } },
	{ 2, 3, { 1, 12, 48, 16 } },
	{ 3, 4, { 0, 12, 48, 16 } },
	{ 4, 5, { 3, 8, 48, 16 } },
	{ 7, 8, { 0, 8, 48, 16 } },
	{ 8, 9, { 3, 4, 48, 16 } },
	{ 15, 16, { 0, 0, 48, 16 } },
	{ 16, 17, { 3, 12, 32, 16 } },
	{ 20, 21, { 3, 8, 32, 16 } },
	{ 32, 33, { 3, 12, 16, 16 } },
	{ 63, 64, { 0, 0, 0, 16 } },
	{ 64, 65, { 3, 12, 0, 0 } },
	{ 79, 80, { 0, 0, 0, 0 } },
};

static struct htw_test_timer *htw_kafka_setup(struct kunit *test,
					      struct htw_wheel **wheelp)
{
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	unsigned int i;

	wheel = htw_test_wheel(test, 4, 1, HTW_KAFKA_START);
	t = htw_test_timers(test, wheel, HTW_KAFKA_TIMERS);
	for (i = 0; i < HTW_KAFKA_TIMERS; i++)
		KUNIT_ASSERT_EQ(test, htw_add(&t[i].timer, HTW_KAFKA_START + i,
					      0, HTW_MODE_ABS), 0);
	*wheelp = wheel;
	return t;
}

/* Which level a timer lands on, by its distance from the wheel's time. */
static void htw_core_kafka_example_levels(struct kunit *test)
{
	struct htw_wheel_stats stats;
	struct htw_wheel *wheel;

	htw_kafka_setup(test, &wheel);
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.pending, HTW_KAFKA_TIMERS);
	KUNIT_EXPECT_EQ(test, stats.due, 1);		/* c itself */
	KUNIT_EXPECT_EQ(test, stats.level[0], 3);	/* c+1 .. c+3 */
	KUNIT_EXPECT_EQ(test, stats.level[1], 12);	/* c+4 .. c+15 */
	KUNIT_EXPECT_EQ(test, stats.level[2], 48);	/* c+16 .. c+63 */
	KUNIT_EXPECT_EQ(test, stats.level[3], 16);	/* c+64 .. c+79 */
	KUNIT_EXPECT_EQ(test, stats.nr_levels, 4);
}

/* What expires and what moves down at each tick of the example. */
static void htw_core_kafka_example_cascade(struct kunit *test)
{
	const struct htw_kafka_step *step = htw_kafka_steps;
	struct htw_wheel_stats stats;
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	u64 now, ran = 0;
	unsigned int i;

	t = htw_kafka_setup(test, &wheel);
	for (now = 0; now < HTW_KAFKA_TIMERS; now++) {
		ran += htw_advance(wheel, HTW_KAFKA_START + now);
		for (i = 0; i < HTW_KAFKA_TIMERS; i++) {
			KUNIT_EXPECT_EQ_MSG(test, t[i].fires, i <= now,
					    "timer at c+%u, time c+%llu",
					    i, now);
		}
		KUNIT_EXPECT_EQ_MSG(test, t[now].fired_at,
				    HTW_KAFKA_START + now, "timer at c+%llu",
				    now);
		KUNIT_EXPECT_EQ(test, t[now].expired, HTW_KAFKA_START + now);
		KUNIT_EXPECT_EQ(test, t[now].count, 1);

		if (step->at != now)
			continue;
		htw_wheel_get_stats(wheel, &stats);
		KUNIT_EXPECT_EQ_MSG(test, ran, step->fired, "at c+%llu", now);
		KUNIT_EXPECT_EQ_MSG(test, stats.fired, step->fired,
				    "at c+%llu", now);
		KUNIT_EXPECT_EQ_MSG(test, stats.due, 0, "at c+%llu", now);
		for (i = 0; i < ARRAY_SIZE(step->level); i++)
			KUNIT_EXPECT_EQ_MSG(test, stats.level[i],
					    step->level[i],
					    "level %u at c+%llu", i, now);
		step++;
	}
	KUNIT_EXPECT_PTR_EQ(test, step, htw_kafka_steps +
			    ARRAY_SIZE(htw_kafka_steps));
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.pending, 0);
	KUNIT_EXPECT_EQ(test, stats.nr_levels, 0);
	/*
	 * Every move out of a level above 0 counts.  105 go to a lower
	 * level: 9 out of level 1 at first, 15 out of each level-2 bucket
	 * and 9 more as those reach level 0, 15 + 9 out of level 3.  19 go
	 * straight onto the due list, the timers due at the very start of
	 * the bucket they leave: c+4, c+8, c+12; c+16, c+32, c+48 and the
	 * nine other multiples of 4 in c+20..c+60 they bring down; c+64;
	 * c+68, c+72, c+76.
	 */
	KUNIT_EXPECT_EQ(test, stats.cascaded, 105 + 19);
}

/* Kafka's TimerTest: a timer whose expiry has passed runs at once. */
static void htw_core_expired_timer_runs_at_next_advance(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 1000);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 3);

	KUNIT_ASSERT_EQ(test, htw_advance(wheel, 2000), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t[0].timer, 1500, 0, HTW_MODE_ABS), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t[1].timer, 1000, 0, HTW_MODE_ABS), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t[2].timer, 0, 0, HTW_MODE_REL), 0);
	KUNIT_EXPECT_TRUE(test, htw_pending(&t[0].timer));

	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 2000), 3);
	KUNIT_EXPECT_EQ(test, t[0].fires, 1);
	KUNIT_EXPECT_EQ(test, t[0].expired, 1500);
	KUNIT_EXPECT_EQ(test, t[1].fires, 1);
	KUNIT_EXPECT_EQ(test, t[1].expired, 1000);
	KUNIT_EXPECT_EQ(test, t[2].fires, 1);
	KUNIT_EXPECT_EQ(test, t[2].expired, 2000);
	KUNIT_EXPECT_FALSE(test, htw_pending(&t[0].timer));
}

/*
 * Kafka's TimerTest: 500 timers with delays 0..499 and 100 more repeating
 * some of those delays, armed in a shuffled order, each run once and in the
 * order of their expiries, however far each advance jumps.
 */
#define HTW_KAFKA_TASKS		500
#define HTW_KAFKA_DUPS		100

static void htw_core_timers_fire_once_in_deadline_order(struct kunit *test)
{
	const struct htw_core_wheel_case *p = test->param_value;
	static const u64 jumps[] = { 0, 1, 2, 5, 13, 63, 64, 65, 100, 255,
				     256, 300, 498, 499, 600 };
	const size_t n = HTW_KAFKA_TASKS + HTW_KAFKA_DUPS;
	struct htw_test *ctx = test->priv;
	const u64 c = 1000;
	struct rnd_state rnd;
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	unsigned int *order;
	u64 *expires;
	size_t i, j;

	wheel = htw_test_wheel(test, p->wheel_size, 1, c);
	t = htw_test_timers(test, wheel, n);
	expires = kunit_kcalloc(test, n, sizeof(*expires), GFP_KERNEL);
	order = kunit_kcalloc(test, n, sizeof(*order), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, expires);
	KUNIT_ASSERT_NOT_NULL(test, order);
	htw_test_log(test, n);

	prandom_seed_state(&rnd, 500);
	for (i = 0; i < n; i++) {
		expires[i] = c + (i < HTW_KAFKA_TASKS ? i : (i * 7) % 500);
		order[i] = i;
	}
	for (i = n - 1; i > 0; i--) {
		j = prandom_u32_state(&rnd) % (i + 1);
		swap(order[i], order[j]);
	}
	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test, htw_add(&t[order[i]].timer,
					      expires[order[i]], 0,
					      HTW_MODE_ABS), 0);

	for (i = 0; i < ARRAY_SIZE(jumps); i++) {
		htw_test_advance_all(test, wheel, c + jumps[i]);
		htw_core_expect_fired_by(test, t, n, expires, c + jumps[i]);
	}
	KUNIT_ASSERT_EQ(test, ctx->fired, n);
	for (j = 0; j < n; j++)
		KUNIT_EXPECT_EQ_MSG(test, ctx->log[j]->expired,
				    expires[ctx->log[j]->index],
				    "callback %zu", j);
	for (j = 1; j < n; j++)
		KUNIT_EXPECT_LE_MSG(test, ctx->log[j - 1]->expired,
				    ctx->log[j]->expired,
				    "callback %zu ran before callback %zu",
				    j, j - 1);
}

/* Boundaries */

/*
 * On a tick of 10 ns, with the wheel at a tick boundary n: an expiry at n
 * runs at once, one in (n, n + 10] at n + 10, one in (n + 10, n + 20] at
 * n + 20, stepping the wheel one nanosecond at a time.
 */
static void htw_core_expiry_runs_at_first_tick_at_or_after_it(struct kunit *test)
{
	const u64 c = 1000, tick = 10, n0 = c + 5 * tick;
	const unsigned int n = 2 * tick + 1;
	struct htw_wheel *wheel = htw_test_wheel(test, 4, tick, c);
	struct htw_test_timer *t = htw_test_timers(test, wheel, n);
	u64 now, expected;
	unsigned int i;

	KUNIT_ASSERT_EQ(test, htw_advance(wheel, n0), 0);
	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test, htw_add(&t[i].timer, n0 + i, 0,
					      HTW_MODE_ABS), 0);
	for (now = n0; now <= n0 + 4 * tick; now++)
		htw_advance(wheel, now);

	for (i = 0; i < n; i++) {
		expected = htw_core_boundary(c, tick, n0 + i);
		KUNIT_EXPECT_EQ_MSG(test, t[i].fires, 1, "expiry now+%u", i);
		KUNIT_EXPECT_EQ_MSG(test, t[i].fired_at, expected,
				    "expiry now+%u", i);
		KUNIT_EXPECT_EQ_MSG(test, t[i].expired, n0 + i,
				    "expiry now+%u", i);
	}
}

/* A timer lands on the lowest level whose span from the wheel's time holds it. */
static void htw_core_level_spans(struct kunit *test)
{
	const struct htw_core_wheel_case *p = test->param_value;
	const unsigned int shift = ilog2(p->wheel_size);
	struct htw_wheel_stats stats;
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	unsigned int k, lvl;
	u64 span, d;
	int delta;

	wheel = htw_test_wheel(test, p->wheel_size, 1, 0);
	t = htw_test_timers(test, wheel, 1);
	for (k = 0; (k + 1) * shift < 64; k++) {
		span = 1ULL << ((k + 1) * shift);
		for (delta = -1; delta <= 1; delta++) {
			d = span + delta;
			lvl = k + (delta >= 0);
			KUNIT_ASSERT_EQ(test, lvl, (fls64(d) - 1) / shift);
			KUNIT_ASSERT_EQ(test, htw_add(&t->timer, d, 0,
						      HTW_MODE_ABS), 0);
			htw_wheel_get_stats(wheel, &stats);
			KUNIT_EXPECT_EQ_MSG(test, stats.level[lvl], 1,
					    "expiry %llu, level %u", d, lvl);
			KUNIT_EXPECT_EQ_MSG(test, stats.nr_levels, lvl + 1,
					    "expiry %llu", d);
			KUNIT_EXPECT_EQ_MSG(test, htw_test_level_sum(&stats), 1,
					    "expiry %llu", d);
			KUNIT_EXPECT_TRUE(test, htw_del(&t->timer));
		}
	}
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.nr_levels, 0);
	KUNIT_EXPECT_EQ(test, stats.pending, 0);
}

/*
 * Timers one tick either side of each level's span run exactly at their
 * expiry, not one tick before, however many levels they cascade through.
 */
static void htw_core_level_spans_run_on_time(struct kunit *test)
{
	const struct htw_core_wheel_case *p = test->param_value;
	const unsigned int shift = ilog2(p->wheel_size);
	const unsigned int levels = DIV_ROUND_UP(63, shift);
	const u64 c = 12345;
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	unsigned int k, n = 0;
	u64 *expires;
	size_t i;

	wheel = htw_test_wheel(test, p->wheel_size, 1, c);
	t = htw_test_timers(test, wheel, 3 * levels);
	expires = kunit_kcalloc(test, 3 * levels, sizeof(*expires),
				GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, expires);
	for (k = 0; (k + 1) * shift < 64; k++) {
		u64 span = 1ULL << ((k + 1) * shift);

		expires[n++] = c + span - 1;
		expires[n++] = c + span;
		expires[n++] = c + span + 1;
	}
	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test, htw_add(&t[i].timer, expires[i], 0,
					      HTW_MODE_ABS), 0);

	for (i = 0; i < n; i++) {
		if (expires[i] - 1 > htw_wheel_now(wheel)) {
			htw_test_advance_all(test, wheel, expires[i] - 1);
			htw_core_expect_fired_by(test, t, n, expires,
						 expires[i] - 1);
		}
		if (expires[i] > htw_wheel_now(wheel))
			htw_test_advance_all(test, wheel, expires[i]);
		htw_core_expect_fired_by(test, t, n, expires, expires[i]);
		KUNIT_EXPECT_EQ_MSG(test, t[i].fired_at, expires[i],
				    "expiry c+%llu", expires[i] - c);
	}
}

/*
 * The level is chosen by bucket ids, not by distance alone: 13 ticks from
 * clk 3 on a 4-bucket wheel is less than level 1's span of 16, yet tick 16
 * is four level-1 buckets past clk's and would share clk's own slot, so it
 * goes one level up.  12 ticks (tick 15) stays on level 1.
 */
static void htw_core_distance_across_bucket_boundary_goes_up(struct kunit *test)
{
	struct htw_wheel_stats stats;
	struct htw_test_timer *t;
	struct htw_wheel *wheel;

	wheel = htw_test_wheel(test, 4, 1, 0);
	t = htw_test_timers(test, wheel, 2);
	htw_test_advance_all(test, wheel, 3);
	KUNIT_ASSERT_EQ(test, htw_add(&t[0].timer, 15, 0, HTW_MODE_ABS), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t[1].timer, 16, 0, HTW_MODE_ABS), 0);

	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.level[1], 1);
	KUNIT_EXPECT_EQ(test, stats.level[2], 1);

	htw_test_advance_all(test, wheel, 15);
	KUNIT_EXPECT_EQ(test, t[0].fires, 1);
	KUNIT_EXPECT_EQ(test, t[1].fires, 0);
	htw_test_advance_all(test, wheel, 16);
	KUNIT_EXPECT_EQ(test, t[1].fires, 1);
	KUNIT_EXPECT_EQ(test, t[1].fired_at, 16);
}

/*
 * 2^63 - 1 and U64_MAX are accepted as absolute expiries, without clamping:
 * they sit on the top levels and wait there.
 */
static void htw_core_far_expiries_wait_on_top_levels(struct kunit *test)
{
	const struct htw_core_wheel_case *p = test->param_value;
	const u64 far[] = { S64_MAX, U64_MAX };
	u8 want[HTW_MAX_LEVELS] = {};
	struct htw_wheel_stats stats;
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	unsigned int i, lvl;

	wheel = htw_test_wheel(test, p->wheel_size, 1, 0);
	t = htw_test_timers(test, wheel, ARRAY_SIZE(far));
	for (i = 0; i < ARRAY_SIZE(far); i++)
		KUNIT_ASSERT_EQ(test, htw_add(&t[i].timer, far[i], 0,
					      HTW_MODE_ABS), 0);

	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.pending, 2);
	lvl = htw_core_level_of(U64_MAX, p->wheel_size);
	KUNIT_EXPECT_EQ(test, stats.nr_levels, lvl + 1);
	for (i = 0; i < ARRAY_SIZE(far); i++)
		want[htw_core_level_of(far[i], p->wheel_size)]++;
	for (lvl = 0; lvl < HTW_MAX_LEVELS; lvl++)
		KUNIT_EXPECT_EQ_MSG(test, stats.level[lvl], want[lvl],
				    "level %u", lvl);

	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 1ULL << 62), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, S64_MAX - 1), 0);
	KUNIT_EXPECT_TRUE(test, htw_pending(&t[0].timer));
	KUNIT_EXPECT_TRUE(test, htw_pending(&t[1].timer));
	KUNIT_EXPECT_EQ(test, t[0].fires + t[1].fires, 0);
}

/* A timer at U64_MAX runs when the wheel's time reaches U64_MAX, not before. */
static void htw_core_u64_max_expiry_runs_at_u64_max(struct kunit *test)
{
	const struct htw_core_wheel_case *p = test->param_value;
	const u64 far[] = { S64_MAX, U64_MAX };
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	unsigned int i;

	wheel = htw_test_wheel(test, p->wheel_size, p->tick_ns, 0);
	t = htw_test_timers(test, wheel, ARRAY_SIZE(far));
	for (i = 0; i < ARRAY_SIZE(far); i++)
		KUNIT_ASSERT_EQ(test, htw_add(&t[i].timer, far[i], 0,
					      HTW_MODE_ABS), 0);

	for (i = 0; i < ARRAY_SIZE(far); i++) {
		u64 due = htw_core_boundary(0, p->tick_ns, far[i]);

		/* On a tick that does not divide 2^64, U64_MAX rounds up. */
		if (due < far[i])
			due = U64_MAX;
		htw_test_advance_all(test, wheel, far[i] - p->tick_ns);
		KUNIT_EXPECT_EQ_MSG(test, t[i].fires, 0, "expiry %llu", far[i]);
		htw_test_advance_all(test, wheel, due);
		KUNIT_EXPECT_EQ_MSG(test, t[i].fires, 1, "expiry %llu", far[i]);
		KUNIT_EXPECT_GE(test, t[i].fired_at, far[i]);
		KUNIT_EXPECT_EQ(test, t[i].expired, far[i]);
	}
}

/*
 * On ticks that are not powers of two, stepping the wheel one tick at a
 * time from its start c, every timer runs at a time t with
 * expiry <= t < expiry + tick.
 */
#define HTW_ODD_TICKS		4096
#define HTW_ODD_TIMERS		500

static void htw_core_odd_tick_never_early_at_most_one_tick_late(struct kunit *test)
{
	const struct htw_core_wheel_case *p = test->param_value;
	const u64 c = 12345, tick = p->tick_ns;
	const u64 range = (HTW_ODD_TICKS - 1) * tick;
	struct rnd_state rnd;
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	u64 expires, off, k;
	unsigned int i;

	wheel = htw_test_wheel(test, p->wheel_size, tick, c);
	t = htw_test_timers(test, wheel, HTW_ODD_TIMERS);
	prandom_seed_state(&rnd, tick);
	for (i = 0; i < HTW_ODD_TIMERS; i++) {
		div64_u64_rem(htw_test_rand64(&rnd), range, &off);
		expires = c + off;
		/* a few right on, and right after, a boundary */
		if (i < 8)
			expires = c + (i / 2 + 1) * tick + i % 2;
		t[i].arg = expires;
		KUNIT_ASSERT_EQ(test, htw_add(&t[i].timer, expires, 0,
					      HTW_MODE_ABS), 0);
	}
	for (k = 0; k < HTW_ODD_TICKS; k++)
		htw_advance(wheel, c + k * tick);

	for (i = 0; i < HTW_ODD_TIMERS; i++) {
		expires = t[i].arg;
		KUNIT_EXPECT_EQ_MSG(test, t[i].fires, 1, "expiry c+%llu",
				    expires - c);
		KUNIT_EXPECT_GE_MSG(test, t[i].fired_at, expires,
				    "expiry c+%llu", expires - c);
		KUNIT_EXPECT_LT_MSG(test, t[i].fired_at, expires + tick,
				    "expiry c+%llu", expires - c);
		KUNIT_EXPECT_EQ(test, t[i].expired, expires);
	}
}

/* HTW_MODE_REL counts from the wheel's time, not from its start. */
static void htw_core_rel_expiry_counts_from_wheel_now(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 64, 1, 1000);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	htw_advance(wheel, 1100);
	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 10, 0, HTW_MODE_REL), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 1109), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 1110), 1);
	KUNIT_EXPECT_EQ(test, t->expired, 1110);
}

/*
 * A relative expiry beyond the clock's range is refused, not wrapped, and
 * leaves the timer as it was; the largest one that fits is accepted.
 */
static void htw_core_rel_expiry_past_u64_max_is_refused(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 64, 1, 1000);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	KUNIT_EXPECT_EQ(test, htw_add(&t->timer, U64_MAX - 999, 0,
				      HTW_MODE_REL), -ERANGE);
	KUNIT_EXPECT_FALSE(test, htw_pending(&t->timer));

	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 2000, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_mod(&t->timer, U64_MAX, 0, HTW_MODE_REL),
			-ERANGE);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 1999), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 2000), 1);

	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, U64_MAX - 2000, 0,
				      HTW_MODE_REL), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, U64_MAX - 1), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, U64_MAX), 1);
	KUNIT_EXPECT_EQ(test, t->expired, U64_MAX);
}

static void htw_core_unknown_mode_is_invalid(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 64, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	KUNIT_EXPECT_EQ(test, htw_add(&t->timer, 10, 0, 2), -EINVAL);
	KUNIT_EXPECT_EQ(test, htw_mod(&t->timer, 10, 0, 2), -EINVAL);
	KUNIT_EXPECT_FALSE(test, htw_pending(&t->timer));
}

/* Callbacks re-entering the wheel */

static void htw_core_add_other(struct htw_test_timer *t)
{
	t->ret = htw_add(&t->other->timer, t->fired_at + (s64)t->arg, 0,
			 HTW_MODE_ABS);
}

static void htw_core_readd_self(struct htw_test_timer *t)
{
	if (t->fires < 5)
		t->ret = htw_add(&t->timer, t->arg, 0, HTW_MODE_REL);
}

static void htw_core_del_self(struct htw_test_timer *t)
{
	if (t->fires == t->arg)
		t->ret = htw_del(&t->timer);
}

static void htw_core_del_other(struct htw_test_timer *t)
{
	t->ret = htw_del(&t->other->timer);
}

static void htw_core_del_sync_self(struct htw_test_timer *t)
{
	t->ret = htw_del_sync(&t->timer);
}

static void htw_core_pending_self(struct htw_test_timer *t)
{
	t->ret = htw_pending(&t->timer);
}

static void htw_core_callback_adds_another_timer(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 2);
	u64 now;

	t[0].action = htw_core_add_other;
	t[0].other = &t[1];
	t[0].arg = 20;
	KUNIT_ASSERT_EQ(test, htw_add(&t[0].timer, 10, 0, HTW_MODE_ABS), 0);
	for (now = 0; now <= 40; now++)
		htw_advance(wheel, now);
	KUNIT_EXPECT_EQ(test, t[0].ret, 0);
	KUNIT_EXPECT_EQ(test, t[1].fires, 1);
	KUNIT_EXPECT_EQ(test, t[1].fired_at, 30);
	KUNIT_EXPECT_EQ(test, t[1].expired, 30);
}

static void htw_core_callback_readds_itself(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 2, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);
	u64 now;

	t->action = htw_core_readd_self;
	t->arg = 7;
	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 10, 0, HTW_MODE_ABS), 0);
	for (now = 0; now <= 100; now++) {
		htw_advance(wheel, now);
		KUNIT_EXPECT_EQ_MSG(test, t->fires,
				    now < 10 ? 0 : min(5ULL, (now - 10) / 7 + 1),
				    "at %llu", now);
	}
	KUNIT_EXPECT_EQ(test, t->ret, 0);
	KUNIT_EXPECT_EQ(test, t->fired_at, 10 + 4 * 7);
	KUNIT_EXPECT_FALSE(test, htw_pending(&t->timer));
}

/*
 * A callback arming another timer whose expiry has already passed, or is
 * the time being advanced to, gets it run in the same advance or the next
 * one, at the same time.
 */
static void htw_core_callback_adds_expired_timer(struct kunit *test)
{
	static const s64 offsets[] = { 0, -1, -5 };
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 2);
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(offsets); i++) {
		u64 now = 10 * (i + 1);

		t[0].action = htw_core_add_other;
		t[0].other = &t[1];
		t[0].arg = offsets[i];
		t[1].fires = 0;
		KUNIT_ASSERT_EQ(test, htw_add(&t[0].timer, now, 0,
					      HTW_MODE_ABS), 0);
		htw_advance(wheel, now);
		KUNIT_EXPECT_EQ(test, t[0].ret, 0);
		if (!t[1].fires)
			htw_advance(wheel, now);
		KUNIT_EXPECT_EQ_MSG(test, t[1].fires, 1, "offset %lld",
				    offsets[i]);
		KUNIT_EXPECT_EQ(test, t[1].fired_at, now);
		KUNIT_EXPECT_EQ(test, t[1].expired, now + offsets[i]);
	}
}

/* A one-shot timer is no longer pending in its callback: del says so. */
static void htw_core_callback_del_of_itself_finds_it_idle(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	t->action = htw_core_del_self;
	t->arg = 1;
	t->ret = -1;
	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 5, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 5), 1);
	KUNIT_EXPECT_EQ(test, t->ret, 0);
	KUNIT_EXPECT_FALSE(test, htw_pending(&t->timer));
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 100), 0);
}

/* A periodic timer deleted from its own callback stops. */
static void htw_core_callback_del_stops_periodic_timer(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);
	u64 now;

	t->action = htw_core_del_self;
	t->arg = 2;
	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 10, 10, HTW_MODE_ABS), 0);
	for (now = 0; now <= 100; now++)
		htw_advance(wheel, now);
	KUNIT_EXPECT_EQ(test, t->fires, 2);
	KUNIT_EXPECT_EQ(test, t->ret, 1);
	KUNIT_EXPECT_EQ(test, t->fired_at, 20);
	KUNIT_EXPECT_FALSE(test, htw_pending(&t->timer));
}

/* A callback cancelling a timer that is due in the same advance stops it. */
static void htw_core_callback_cancels_due_timer(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 2);

	t[0].action = htw_core_del_other;
	t[0].other = &t[1];
	t[1].action = htw_core_del_other;
	t[1].other = &t[0];
	KUNIT_ASSERT_EQ(test, htw_add(&t[0].timer, 5, 0, HTW_MODE_ABS), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t[1].timer, 5, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 5), 1);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 6), 0);
	KUNIT_EXPECT_EQ(test, t[0].fires + t[1].fires, 1);
	KUNIT_EXPECT_EQ(test, t[0].fires ? t[0].ret : t[1].ret, 1);
	KUNIT_EXPECT_FALSE(test, htw_pending(&t[0].timer));
	KUNIT_EXPECT_FALSE(test, htw_pending(&t[1].timer));
}

/*
 * A callback waiting for its own end would wait forever: htw_del_sync() of
 * its own timer is refused and leaves the timer armed.
 */
static void htw_core_callback_del_sync_of_itself_is_refused(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	t->action = htw_core_del_sync_self;
	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 5, 5, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 5), 1);
	KUNIT_EXPECT_EQ(test, t->ret, -EDEADLK);
	KUNIT_EXPECT_TRUE(test, htw_pending(&t->timer));
	KUNIT_EXPECT_EQ(test, htw_del_sync(&t->timer), 1);
}

static void htw_core_pending_in_callback(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 2);

	t[0].action = htw_core_pending_self;
	t[0].ret = -1;
	t[1].action = htw_core_pending_self;
	t[1].ret = -1;
	KUNIT_ASSERT_EQ(test, htw_add(&t[0].timer, 5, 0, HTW_MODE_ABS), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t[1].timer, 5, 3, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 5), 2);
	KUNIT_EXPECT_EQ(test, t[0].ret, 0);	/* one-shot: done */
	KUNIT_EXPECT_EQ(test, t[1].ret, 1);	/* periodic: armed for 8 */
}

/* Arming, moving, cancelling */

static void htw_core_pending_follows_timer_state(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	KUNIT_EXPECT_FALSE(test, htw_pending(&t->timer));
	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 100, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_TRUE(test, htw_pending(&t->timer));
	htw_advance(wheel, 99);
	KUNIT_EXPECT_TRUE(test, htw_pending(&t->timer));
	htw_advance(wheel, 100);
	KUNIT_EXPECT_FALSE(test, htw_pending(&t->timer));
	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 200, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_TRUE(test, htw_pending(&t->timer));
	KUNIT_EXPECT_TRUE(test, htw_del(&t->timer));
	KUNIT_EXPECT_FALSE(test, htw_pending(&t->timer));
}

static void htw_core_add_of_pending_timer_is_busy(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 100, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_add(&t->timer, 50, 0, HTW_MODE_ABS), -EBUSY);
	KUNIT_EXPECT_EQ(test, htw_add(&t->timer, 100, 0, HTW_MODE_ABS),
			-EBUSY);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 99), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 100), 1);
	KUNIT_EXPECT_EQ(test, t->expired, 100);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 1000), 0);
}

static void htw_core_del_of_pending_timer_cancels_it(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);
	struct htw_wheel_stats stats;

	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 100, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_TRUE(test, htw_del(&t->timer));
	KUNIT_EXPECT_FALSE(test, htw_del(&t->timer));
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 1000), 0);
	KUNIT_EXPECT_EQ(test, t->fires, 0);
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.pending, 0);
	KUNIT_EXPECT_EQ(test, stats.nr_levels, 0);
}

/* A due timer is still pending until its callback starts: del stops it. */
static void htw_core_del_of_due_timer_cancels_it(struct kunit *test)
{
	struct htw_wheel_params params = {
		.tick_ns = 1,
		.wheel_size = 4,
		.expire_budget = 1,
		.clockid = CLOCK_MONOTONIC,
		.flags = HTW_WHEEL_MANUAL,
	};
	struct htw_wheel *wheel = htw_test_wheel_params(test, &params);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 2);
	struct htw_wheel_stats stats;

	KUNIT_ASSERT_EQ(test, htw_add(&t[0].timer, 5, 0, HTW_MODE_ABS), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t[1].timer, 5, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 5), 1);
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.due, 1);
	KUNIT_EXPECT_EQ(test, stats.pending, 1);
	KUNIT_EXPECT_TRUE(test, htw_del(t[0].fires ? &t[1].timer :
					&t[0].timer));
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 5), 0);
	KUNIT_EXPECT_EQ(test, t[0].fires + t[1].fires, 1);
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.due, 0);
	KUNIT_EXPECT_EQ(test, stats.pending, 0);
}

static struct htw_wheel *htw_test_lazy_wheel(struct kunit *test)
{
	struct htw_wheel_params params = {
		.tick_ns = 1,
		.wheel_size = 4,
		.clockid = CLOCK_MONOTONIC,
		.flags = HTW_WHEEL_MANUAL | HTW_WHEEL_LAZY_LEVELS,
	};

	return htw_test_wheel_params(test, &params);
}

/* A lazy wheel has no level until one is reserved, then only those needed. */
static void htw_core_lazy_wheel_reserves_levels_on_demand(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_lazy_wheel(test);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 3);
	struct htw_wheel_stats stats;

	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.nr_reserved, 0);
	KUNIT_EXPECT_EQ(test, htw_add(&t[0].timer, 3, 0, HTW_MODE_ABS), -ENOMEM);
	KUNIT_EXPECT_FALSE(test, htw_pending(&t[0].timer));

	/* 3 ticks away: level 0.  64 ticks: level 3 (4^3), so levels 0-3. */
	KUNIT_ASSERT_EQ(test, htw_wheel_reserve(wheel, 3), 0);
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.nr_reserved, 1);
	KUNIT_EXPECT_EQ(test, htw_add(&t[0].timer, 3, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_add(&t[1].timer, 64, 0, HTW_MODE_ABS), -ENOMEM);
	KUNIT_ASSERT_EQ(test, htw_wheel_reserve(wheel, 64), 0);
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.nr_reserved, 4);
	KUNIT_EXPECT_EQ(test, htw_add(&t[1].timer, 64, 0, HTW_MODE_ABS), 0);
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.level[3], 1);

	/* A move that would need a missing level leaves the timer as it was. */
	KUNIT_EXPECT_EQ(test, htw_mod(&t[0].timer, 1 << 20, 0, HTW_MODE_ABS),
			-ENOMEM);
	KUNIT_EXPECT_TRUE(test, htw_pending(&t[0].timer));

	/* Cascades never need a level that was not there when armed. */
	htw_test_advance_all(test, wheel, 64);
	KUNIT_EXPECT_EQ(test, t[0].fires, 1);
	KUNIT_EXPECT_EQ(test, t[1].fires, 1);
	KUNIT_EXPECT_EQ(test, t[1].fired_at, 64);
}

/* A lazy wheel re-arms nothing on its own: periodic timers are refused. */
static void htw_core_lazy_wheel_refuses_periodic_timers(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_lazy_wheel(test);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	KUNIT_ASSERT_EQ(test, htw_wheel_reserve(wheel, 100), 0);
	KUNIT_EXPECT_EQ(test, htw_add(&t->timer, 10, 10, HTW_MODE_ABS), -EINVAL);
	KUNIT_EXPECT_EQ(test, htw_add(&t->timer, 10, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_mod(&t->timer, 10, 10, HTW_MODE_ABS), -EINVAL);
	KUNIT_EXPECT_TRUE(test, htw_pending(&t->timer));
}

static void htw_core_del_after_expiry_returns_false(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	KUNIT_EXPECT_FALSE(test, htw_del(&t->timer));
	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 10, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 10), 1);
	KUNIT_EXPECT_FALSE(test, htw_del(&t->timer));
}

static void htw_core_del_sync_of_idle_timer_returns_0(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	KUNIT_EXPECT_EQ(test, htw_del_sync(&t->timer), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 10, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 10), 1);
	KUNIT_EXPECT_EQ(test, htw_del_sync(&t->timer), 0);
}

static void htw_core_del_sync_of_pending_timer_returns_1(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 2);

	KUNIT_ASSERT_EQ(test, htw_add(&t[0].timer, 10, 0, HTW_MODE_ABS), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t[1].timer, 10, 5, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_del_sync(&t[0].timer), 1);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 10), 1);
	KUNIT_EXPECT_EQ(test, htw_del_sync(&t[1].timer), 1);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 100), 0);
	KUNIT_EXPECT_EQ(test, t[0].fires, 0);
	KUNIT_EXPECT_EQ(test, t[1].fires, 1);
}

/* htw_mod of a pending timer moves it, earlier or later, and says so. */
static void htw_core_mod_of_pending_timer_moves_it(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 2);
	u64 now;

	KUNIT_ASSERT_EQ(test, htw_add(&t[0].timer, 100, 0, HTW_MODE_ABS), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t[1].timer, 100, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_mod(&t[0].timer, 30, 0, HTW_MODE_ABS), 1);
	KUNIT_EXPECT_EQ(test, htw_mod(&t[1].timer, 300, 0, HTW_MODE_ABS), 1);
	for (now = 0; now <= 400; now++)
		htw_advance(wheel, now);
	KUNIT_EXPECT_EQ(test, t[0].fires, 1);
	KUNIT_EXPECT_EQ(test, t[0].fired_at, 30);
	KUNIT_EXPECT_EQ(test, t[1].fires, 1);
	KUNIT_EXPECT_EQ(test, t[1].fired_at, 300);
	KUNIT_EXPECT_EQ(test, t[1].expired, 300);
}

static void htw_core_mod_of_idle_timer_arms_it(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	KUNIT_EXPECT_EQ(test, htw_mod(&t->timer, 10, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_TRUE(test, htw_pending(&t->timer));
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 9), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 10), 1);
	KUNIT_EXPECT_EQ(test, htw_mod(&t->timer, 5, 0, HTW_MODE_REL), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 15), 1);
	KUNIT_EXPECT_EQ(test, t->fires, 2);
	KUNIT_EXPECT_EQ(test, t->expired, 15);
}

/*
 * htw_mod within the same bucket (level 1 of a 64-bucket wheel covers
 * [64, 127] at tick 0) leaves the timer where it is, yet it runs at its new
 * expiry, earlier or later, not at the old one.
 */
static void htw_core_mod_within_bucket_runs_at_new_expiry(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 64, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 2);
	struct htw_wheel_stats stats;
	u64 now;

	KUNIT_ASSERT_EQ(test, htw_add(&t[0].timer, 100, 0, HTW_MODE_ABS), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t[1].timer, 100, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_mod(&t[0].timer, 70, 0, HTW_MODE_ABS), 1);
	KUNIT_EXPECT_EQ(test, htw_mod(&t[1].timer, 120, 0, HTW_MODE_ABS), 1);
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.level[1], 2);
	KUNIT_EXPECT_EQ(test, stats.nr_levels, 2);

	for (now = 0; now <= 130; now++) {
		htw_advance(wheel, now);
		KUNIT_EXPECT_EQ_MSG(test, t[0].fires, now >= 70, "at %llu", now);
		KUNIT_EXPECT_EQ_MSG(test, t[1].fires, now >= 120, "at %llu", now);
	}
	KUNIT_EXPECT_EQ(test, t[0].expired, 70);
	KUNIT_EXPECT_EQ(test, t[1].expired, 120);
}

/* htw_mod to the same expiry keeps the timer armed for it. */
static void htw_core_mod_to_same_expiry_keeps_it(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 10, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 45, 0, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_mod(&t->timer, 45, 0, HTW_MODE_ABS), 1);
	KUNIT_EXPECT_EQ(test, htw_mod(&t->timer, 42, 0, HTW_MODE_ABS), 1);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 40), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 50), 1);
	KUNIT_EXPECT_EQ(test, t->expired, 42);
}

/* Periodic timers */

/* Re-armed at the previous expiry plus the period, however late it ran. */
static void htw_core_periodic_rearms_from_previous_expiry(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 0);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 10, 10, HTW_MODE_ABS), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 15), 1);
	KUNIT_EXPECT_EQ(test, t->expired, 10);
	KUNIT_EXPECT_EQ(test, t->count, 1);
	KUNIT_EXPECT_TRUE(test, htw_pending(&t->timer));
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 19), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 20), 1);
	KUNIT_EXPECT_EQ(test, t->expired, 20);
	KUNIT_EXPECT_EQ(test, t->count, 1);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 29), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 30), 1);
	KUNIT_EXPECT_EQ(test, t->fires, 3);
}

/*
 * Advancing past several periods at once makes one callback, which reports
 * the latest expiry that passed and counts the ones it skipped.
 */
static void htw_core_periodic_counts_overruns(struct kunit *test)
{
	struct htw_wheel *wheel = htw_test_wheel(test, 4, 1, 1000);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	KUNIT_ASSERT_EQ(test, htw_add(&t->timer, 10, 10, HTW_MODE_REL), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 1045), 1);
	KUNIT_EXPECT_EQ(test, t->fires, 1);
	KUNIT_EXPECT_EQ(test, t->expired, 1040);
	KUNIT_EXPECT_EQ(test, t->count, 4);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 1049), 0);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 1050), 1);
	KUNIT_EXPECT_EQ(test, t->expired, 1050);
	KUNIT_EXPECT_EQ(test, t->count, 1);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 1000000), 1);
	KUNIT_EXPECT_EQ(test, t->expired, 1000000);
	KUNIT_EXPECT_EQ(test, t->count, (1000000 - 1050) / 10);
}

/* The expiry budget */

#define HTW_BUDGET		100
#define HTW_BUDGET_TIMERS	10000

static struct htw_wheel *htw_core_budget_wheel(struct kunit *test)
{
	struct htw_wheel_params params = {
		.tick_ns = 1,
		.wheel_size = 64,
		.expire_budget = HTW_BUDGET,
		.clockid = CLOCK_MONOTONIC,
		.flags = HTW_WHEEL_MANUAL,
	};

	return htw_test_wheel_params(test, &params);
}

/*
 * 10,000 timers due in one bucket, a budget of 100: each advance makes at
 * most 100 callbacks and moves at most 1600 timers out of the bucket, the
 * rest wait for the next advance, and all of them run once, first armed
 * first run.
 */
static void htw_core_budget_bounds_each_advance(struct kunit *test)
{
	struct htw_wheel *wheel = htw_core_budget_wheel(test);
	struct htw_test *ctx = test->priv;
	struct htw_wheel_stats stats;
	struct htw_test_timer *t;
	unsigned int ran, calls = 0;
	size_t i;

	t = htw_test_timers(test, wheel, HTW_BUDGET_TIMERS);
	htw_test_log(test, HTW_BUDGET_TIMERS);
	for (i = 0; i < HTW_BUDGET_TIMERS; i++)
		KUNIT_ASSERT_EQ(test, htw_add(&t[i].timer, 5, 0, HTW_MODE_ABS),
				0);

	do {
		ran = htw_advance(wheel, 5);
		KUNIT_ASSERT_LE_MSG(test, ran, HTW_BUDGET, "call %u", calls);
		if (!calls) {
			/*
			 * The others stay armed, due or still in their
			 * bucket: a run also moves a bounded number.
			 */
			htw_wheel_get_stats(wheel, &stats);
			KUNIT_EXPECT_EQ(test, stats.pending,
					HTW_BUDGET_TIMERS - ran);
			KUNIT_EXPECT_LE(test, stats.due + ran,
					HTW_MOVES_PER_CALLBACK * HTW_BUDGET);
		}
		calls++;
		KUNIT_ASSERT_LT(test, calls, 2 * HTW_BUDGET_TIMERS);
	} while (ran);
	KUNIT_EXPECT_GE(test, calls - 1, HTW_BUDGET_TIMERS / HTW_BUDGET);
	KUNIT_ASSERT_EQ(test, ctx->fired, HTW_BUDGET_TIMERS);
	for (i = 0; i < HTW_BUDGET_TIMERS; i++) {
		KUNIT_EXPECT_EQ_MSG(test, t[i].fires, 1, "timer %zu", i);
		KUNIT_EXPECT_EQ_MSG(test, ctx->log[i]->index, i,
				    "callback %zu", i);
	}
}

/*
 * 10,000 timers spread over one level-2 bucket ([4096, 8191] at tick 0 on a
 * 64-bucket wheel), passed in one advance with a budget of 100: they run
 * over many advances, in the order of their expiries.
 */
static void htw_core_budget_keeps_expiry_order(struct kunit *test)
{
	struct htw_wheel *wheel = htw_core_budget_wheel(test);
	struct htw_test *ctx = test->priv;
	struct htw_wheel_stats stats;
	struct htw_test_timer *t;
	unsigned int ran, calls = 0;
	size_t i;

	t = htw_test_timers(test, wheel, HTW_BUDGET_TIMERS);
	htw_test_log(test, HTW_BUDGET_TIMERS);
	for (i = 0; i < HTW_BUDGET_TIMERS; i++)
		KUNIT_ASSERT_EQ(test, htw_add(&t[i].timer,
					      4096 + (i * 7919) % 4096, 0,
					      HTW_MODE_ABS), 0);
	htw_wheel_get_stats(wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.level[2], HTW_BUDGET_TIMERS);

	do {
		ran = htw_advance(wheel, 8191);
		KUNIT_ASSERT_LE_MSG(test, ran, HTW_BUDGET, "call %u", calls);
		calls++;
		KUNIT_ASSERT_LT(test, calls, 2 * HTW_BUDGET_TIMERS);
	} while (ran);
	KUNIT_EXPECT_GE(test, calls - 1, HTW_BUDGET_TIMERS / HTW_BUDGET);
	KUNIT_ASSERT_EQ(test, ctx->fired, HTW_BUDGET_TIMERS);
	for (i = 0; i < HTW_BUDGET_TIMERS; i++) {
		KUNIT_EXPECT_EQ_MSG(test, t[i].fires, 1, "timer %zu", i);
		KUNIT_EXPECT_EQ_MSG(test, t[i].expired,
				    4096 + (i * 7919) % 4096, "timer %zu", i);
	}
	for (i = 1; i < HTW_BUDGET_TIMERS; i++)
		KUNIT_EXPECT_LE_MSG(test, ctx->log[i - 1]->expired,
				    ctx->log[i]->expired, "callback %zu", i);
}

/* A callback finds its owner's data from the timer's wheel. */
static void htw_core_timer_finds_its_wheels_data(struct kunit *test)
{
	static int owner;
	struct htw_wheel_params p = {
		.tick_ns = 1, .wheel_size = 64, .clockid = CLOCK_MONOTONIC,
		.flags = HTW_WHEEL_MANUAL, .data = &owner,
	};
	struct htw_wheel *wheel = htw_test_wheel_params(test, &p);
	struct htw_test_timer *t = htw_test_timers(test, wheel, 1);

	KUNIT_EXPECT_PTR_EQ(test, htw_timer_wheel_data(&t->timer), &owner);
}

/*
 * A wheel stopped while its expiry run is in progress leaves the run at
 * once: a timer due in the same batch and cancelled meanwhile (which on a
 * stopped wheel only makes it idle where it lies) is neither called back
 * nor unlinked by the rest of the run.  On a manual wheel the first
 * callback can stop it, as another CPU would an hrtimer wheel's.
 */
struct htw_core_stop_race {
	struct htw_wheel *wheel;
	struct htw_timer t[2];
	unsigned int fires[2];
	bool cancelled;
};

static void htw_core_stop_race_fn(struct htw_timer *timer, u64 expired,
				  u64 count)
{
	struct htw_core_stop_race *r = htw_timer_wheel_data(timer);

	if (timer == &r->t[1]) {
		r->fires[1]++;
		return;
	}
	r->fires[0]++;
	htw_wheel_stop(r->wheel);
	r->cancelled = htw_del(&r->t[1]);
}

static void htw_core_stop_leaves_the_run_at_once(struct kunit *test)
{
	struct htw_wheel_params p = {
		.tick_ns = 1, .wheel_size = 64, .clockid = CLOCK_MONOTONIC,
		.flags = HTW_WHEEL_MANUAL, .start_ns = 1000,
	};
	struct htw_core_stop_race *r;
	int i;

	r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r);
	p.data = r;
	r->wheel = htw_wheel_create(&p);
	KUNIT_ASSERT_FALSE(test, IS_ERR(r->wheel));
	/* No ASSERT from here on: the wheel must be destroyed before @r goes. */
	for (i = 0; i < 2; i++) {
		htw_timer_init(&r->t[i], r->wheel, htw_core_stop_race_fn);
		KUNIT_EXPECT_EQ(test, htw_add(&r->t[i], 1010, 0, HTW_MODE_ABS), 0);
	}
	KUNIT_EXPECT_EQ(test, htw_advance(r->wheel, 2000), 1);
	KUNIT_EXPECT_TRUE(test, r->cancelled);
	KUNIT_EXPECT_EQ(test, r->fires[0], 1);
	KUNIT_EXPECT_EQ(test, r->fires[1], 0);
	KUNIT_EXPECT_FALSE(test, htw_pending(&r->t[1]));
	htw_wheel_destroy(r->wheel);
}

static unsigned int htw_core_stopped_fires;

static void htw_core_stopped_fn(struct htw_timer *timer, u64 expired, u64 count)
{
	htw_core_stopped_fires++;
}

/*
 * A stopped wheel runs nothing more and takes no new timer; the timers left
 * in it are its owner's to free, and destroying it with them is no bug.
 */
static void htw_core_stopped_wheel_runs_nothing(struct kunit *test)
{
	struct htw_wheel_params p = {
		.tick_ns = 1, .wheel_size = 64, .clockid = CLOCK_MONOTONIC,
		.flags = HTW_WHEEL_MANUAL, .start_ns = 1000,
	};
	struct htw_wheel *wheel = htw_wheel_create(&p);
	struct htw_timer *t;
	unsigned int i;

	KUNIT_ASSERT_FALSE(test, IS_ERR(wheel));
	t = kunit_kcalloc(test, 4, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	for (i = 0; i < 4; i++)
		htw_timer_init(&t[i], wheel, htw_core_stopped_fn);
	KUNIT_ASSERT_EQ(test, htw_add(&t[0], 500, 0, HTW_MODE_ABS), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t[1], 1010, 0, HTW_MODE_ABS), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t[2], 1 << 30, 0, HTW_MODE_ABS), 0);
	KUNIT_ASSERT_EQ(test, htw_add(&t[3], 1100, 7, HTW_MODE_ABS), 0);

	htw_core_stopped_fires = 0;
	htw_wheel_stop(wheel);
	KUNIT_EXPECT_EQ(test, htw_advance(wheel, 1ULL << 31), 0);
	KUNIT_EXPECT_EQ(test, htw_core_stopped_fires, 0);
	KUNIT_EXPECT_EQ(test, htw_add(&t[0], 2000, 0, HTW_MODE_ABS), -ESHUTDOWN);
	KUNIT_EXPECT_EQ(test, htw_mod(&t[1], 2000, 0, HTW_MODE_ABS), -ESHUTDOWN);
	KUNIT_EXPECT_EQ(test, htw_expires(&t[1]), 1010);
	/* A WARN here would fail the run: the kernel log is checked. */
	htw_wheel_destroy(wheel);
}

static struct kunit_case htw_core_test_cases[] = {
	KUNIT_CASE(htw_core_stopped_wheel_runs_nothing),
	KUNIT_CASE(htw_core_stop_leaves_the_run_at_once),
	KUNIT_CASE(htw_core_timer_finds_its_wheels_data),
	KUNIT_CASE_PARAM(htw_core_create_rejects_invalid_params,
			 htw_core_invalid_params_gen_params),
	KUNIT_CASE_PARAM(htw_core_create_accepts_valid_params,
			 htw_core_valid_params_gen_params),
	KUNIT_CASE(htw_core_manual_wheel_moves_only_by_advance),
	KUNIT_CASE(htw_core_stats_count_budget_stops_and_lateness),
	KUNIT_CASE(htw_core_kafka_example_levels),
	KUNIT_CASE(htw_core_kafka_example_cascade),
	KUNIT_CASE(htw_core_expired_timer_runs_at_next_advance),
	KUNIT_CASE_PARAM(htw_core_timers_fire_once_in_deadline_order,
			 htw_core_small_sizes_gen_params),
	KUNIT_CASE(htw_core_expiry_runs_at_first_tick_at_or_after_it),
	KUNIT_CASE_PARAM(htw_core_level_spans, htw_core_sizes_gen_params),
	KUNIT_CASE_PARAM(htw_core_level_spans_run_on_time,
			 htw_core_sizes_gen_params),
	KUNIT_CASE(htw_core_distance_across_bucket_boundary_goes_up),
	KUNIT_CASE_PARAM(htw_core_far_expiries_wait_on_top_levels,
			 htw_core_sizes_gen_params),
	KUNIT_CASE_PARAM(htw_core_odd_tick_never_early_at_most_one_tick_late,
			 htw_core_odd_ticks_gen_params),
	KUNIT_CASE(htw_core_rel_expiry_counts_from_wheel_now),
	KUNIT_CASE(htw_core_rel_expiry_past_u64_max_is_refused),
	KUNIT_CASE(htw_core_unknown_mode_is_invalid),
	KUNIT_CASE(htw_core_callback_adds_another_timer),
	KUNIT_CASE(htw_core_callback_readds_itself),
	KUNIT_CASE(htw_core_callback_adds_expired_timer),
	KUNIT_CASE(htw_core_callback_del_of_itself_finds_it_idle),
	KUNIT_CASE(htw_core_callback_del_stops_periodic_timer),
	KUNIT_CASE(htw_core_callback_cancels_due_timer),
	KUNIT_CASE(htw_core_callback_del_sync_of_itself_is_refused),
	KUNIT_CASE(htw_core_pending_in_callback),
	KUNIT_CASE(htw_core_pending_follows_timer_state),
	KUNIT_CASE(htw_core_add_of_pending_timer_is_busy),
	KUNIT_CASE(htw_core_del_of_pending_timer_cancels_it),
	KUNIT_CASE(htw_core_del_of_due_timer_cancels_it),
	KUNIT_CASE(htw_core_del_after_expiry_returns_false),
	KUNIT_CASE(htw_core_del_sync_of_idle_timer_returns_0),
	KUNIT_CASE(htw_core_del_sync_of_pending_timer_returns_1),
	KUNIT_CASE(htw_core_mod_of_pending_timer_moves_it),
	KUNIT_CASE(htw_core_mod_of_idle_timer_arms_it),
	KUNIT_CASE(htw_core_mod_within_bucket_runs_at_new_expiry),
	KUNIT_CASE(htw_core_mod_to_same_expiry_keeps_it),
	KUNIT_CASE(htw_core_periodic_rearms_from_previous_expiry),
	KUNIT_CASE(htw_core_periodic_counts_overruns),
	KUNIT_CASE(htw_core_budget_bounds_each_advance),
	KUNIT_CASE(htw_core_lazy_wheel_reserves_levels_on_demand),
	KUNIT_CASE(htw_core_lazy_wheel_refuses_periodic_timers),
	KUNIT_CASE(htw_core_budget_keeps_expiry_order),
	KUNIT_CASE_PARAM(htw_core_u64_max_expiry_runs_at_u64_max,
			 htw_core_top_ticks_gen_params),
	{}
};

static struct kunit_suite htw_core_test_suite = {
	.name = "htw_core",
	.init = htw_test_init,
	.exit = htw_test_exit,
	.test_cases = htw_core_test_cases,
};

kunit_test_suite(htw_core_test_suite);

MODULE_DESCRIPTION("KUnit tests for the htw timing wheel");
MODULE_LICENSE("GPL");
