// SPDX-License-Identifier: GPL-2.0
/*
 * The fixture the KUnit suites of htw share
 */

#include <kunit/test.h>
#include <linux/err.h>
#include <linux/preempt.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "htw_test.h"

static void htw_test_fn(struct htw_timer *timer, u64 expired, u64 count)
{
	struct htw_test_timer *t = container_of(timer, struct htw_test_timer,
						 timer);
	struct htw_test *ctx = t->ctx;

	t->fires++;
	t->fired_at = htw_wheel_now(t->wheel);
	t->expired = expired;
	t->count = count;
	t->irqs_off = irqs_disabled();
	t->in_task = in_task();
	t->seq = ctx->fired;
	if (ctx->fired < ctx->log_size)
		ctx->log[ctx->fired] = t;
	ctx->fired++;
	if (t->action)
		t->action(t);
}

int htw_test_init(struct kunit *test)
{
	struct htw_test *ctx;

	ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	ctx->test = test;
	test->priv = ctx;
	return 0;
}

/*
 * Cancel every timer, then destroy the wheels: a case cut short by a failed
 * assertion must not leave the core a wheel with timers in it.
 */
void htw_test_exit(struct kunit *test)
{
	struct htw_test *ctx = test->priv;
	unsigned int i;
	size_t j;

	for (i = 0; i < ctx->nr_arrays; i++) {
		for (j = 0; j < ctx->sizes[i]; j++)
			htw_del_sync(&ctx->arrays[i][j].timer);
	}
	for (j = 0; j < ctx->nr_bare; j++)
		htw_del_sync(&ctx->bare[j]);
	for (i = 0; i < ctx->nr_wheels; i++)
		htw_wheel_destroy(ctx->wheels[i]);
	for (i = 0; i < ctx->nr_arrays; i++)
		kvfree(ctx->arrays[i]);
	kvfree(ctx->bare);
	kvfree(ctx->log);
}

struct htw_wheel *htw_test_wheel_params(struct kunit *test,
					const struct htw_wheel_params *params)
{
	struct htw_test *ctx = test->priv;
	struct htw_wheel *wheel;

	KUNIT_ASSERT_LT(test, ctx->nr_wheels, HTW_TEST_MAX_WHEELS);
	wheel = htw_wheel_create(params);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, wheel);
	ctx->wheels[ctx->nr_wheels++] = wheel;
	return wheel;
}

/* A manual wheel: its time moves only when the case calls htw_advance(). */
struct htw_wheel *htw_test_wheel(struct kunit *test, u32 wheel_size,
				 u64 tick_ns, u64 start_ns)
{
	struct htw_wheel_params params = {
		.tick_ns = tick_ns,
		.wheel_size = wheel_size,
		.clockid = CLOCK_MONOTONIC,
		.flags = HTW_WHEEL_MANUAL,
		.start_ns = start_ns,
	};

	return htw_test_wheel_params(test, &params);
}

struct htw_test_timer *htw_test_timers(struct kunit *test,
				       struct htw_wheel *wheel, size_t n)
{
	struct htw_test *ctx = test->priv;
	struct htw_test_timer *t;
	size_t i;

	KUNIT_ASSERT_LT(test, ctx->nr_arrays, HTW_TEST_MAX_ARRAYS);
	t = kvcalloc(n, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	ctx->arrays[ctx->nr_arrays] = t;
	ctx->sizes[ctx->nr_arrays] = n;
	ctx->nr_arrays++;

	for (i = 0; i < n; i++) {
		htw_timer_init(&t[i].timer, wheel, htw_test_fn);
		t[i].ctx = ctx;
		t[i].wheel = wheel;
		t[i].index = i;
	}
	return t;
}

/* Timers without a record of their callbacks, for cases that need many. */
struct htw_timer *htw_test_bare_timers(struct kunit *test,
				       struct htw_wheel *wheel, size_t n,
				       htw_func_t func)
{
	struct htw_test *ctx = test->priv;
	struct htw_timer *timers;
	size_t i;

	KUNIT_ASSERT_NULL(test, ctx->bare);
	timers = kvmalloc_array(n, sizeof(*timers), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, timers);
	for (i = 0; i < n; i++)
		htw_timer_init(&timers[i], wheel, func);
	ctx->bare = timers;
	ctx->nr_bare = n;
	return timers;
}

/* Record the order of the next @n callbacks in ctx->log. */
void htw_test_log(struct kunit *test, size_t n)
{
	struct htw_test *ctx = test->priv;

	KUNIT_ASSERT_NULL(test, ctx->log);
	ctx->log = kvcalloc(n, sizeof(*ctx->log), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx->log);
	ctx->log_size = n;
	ctx->fired = 0;
}

/*
 * Advance to @now and keep advancing to it until no callback is left due,
 * whatever the wheel's expiry budget.  Returns the callbacks made.
 */
unsigned int htw_test_advance_all(struct kunit *test, struct htw_wheel *wheel,
				  u64 now)
{
	unsigned int total = 0, ran, calls = 0;

	do {
		ran = htw_advance(wheel, now);
		total += ran;
		KUNIT_ASSERT_LT_MSG(test, ++calls, 1000000U,
				    "advance to %llu never settles", now);
	} while (ran);
	return total;
}

u64 htw_test_level_sum(const struct htw_wheel_stats *stats)
{
	u64 sum = 0;
	unsigned int i;

	for (i = 0; i < HTW_MAX_LEVELS; i++)
		sum += stats->level[i];
	return sum;
}

u64 htw_test_rand64(struct rnd_state *rnd)
{
	u64 hi = prandom_u32_state(rnd);

	return hi << 32 | prandom_u32_state(rnd);
}

/*
 * A number of up to @max_bits bits whose length is itself uniform, so that
 * every level of a wheel sees about as many timers as the next.
 */
u64 htw_test_rand_bits(struct rnd_state *rnd, unsigned int max_bits)
{
	unsigned int bits = prandom_u32_state(rnd) % (max_bits + 1);

	if (!bits)
		return 0;
	return htw_test_rand64(rnd) >> (64 - bits);
}
