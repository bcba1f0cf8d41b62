// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for the wheel of htw_core.c: long randomised runs
 *
 * A manual wheel takes a long stream of random adds, mods, deletes and
 * advances, spread over every level it has, and is checked after each
 * against a reference that only remembers, for each timer, whether it is
 * armed and for when.  The reference needs no wheel: a timer armed for E on
 * a wheel of tick T that started at c must run in the first advance that
 * reaches the tick boundary c + k * T at or after E, once, and never after a
 * cancel.
 *
 * The runs are reproducible: each prints its seed, and loading the module
 * with seed=N replays (or varies) them.
 */

#include <kunit/test.h>
#include <linux/math64.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/prandom.h>
#include <linux/slab.h>

#include "htw_test.h"

static unsigned long long seed = 0x68747721;	/* "htw!" */
module_param(seed, ullong, 0444);
MODULE_PARM_DESC(seed, "Seed of the randomised KUnit cases (each prints it)");

struct htw_random_case {
	const char *desc;
	u32 wheel_size;
	u64 tick_ns;
};

static const struct htw_random_case htw_random_cases[] = {
	{ .desc = "size 2, tick 1", .wheel_size = 2, .tick_ns = 1 },
	{ .desc = "size 4, tick 3", .wheel_size = 4, .tick_ns = 3 },
	{ .desc = "size 8, tick 1000", .wheel_size = 8, .tick_ns = 1000 },
	{ .desc = "size 64, tick 1", .wheel_size = 64, .tick_ns = 1 },
	{ .desc = "size 64, tick 1000003", .wheel_size = 64,
	  .tick_ns = 1000003 },
};

KUNIT_ARRAY_PARAM_DESC(htw_random_cases, htw_random_cases, desc);

#define HTW_MODEL_OPS		200000
#define HTW_MODEL_TIMERS	256
/* Advances jump up to 2^50 ns: time stays far below 2^63 for every run. */
#define HTW_MODEL_JUMP_BITS	50

struct htw_model_entry {
	bool armed;
	u64 expires;
	u64 due;	/* first tick boundary at or after @expires */
};

struct htw_model {
	struct kunit *test;
	struct htw_wheel *wheel;
	struct htw_test_timer *t;
	struct htw_model_entry e[HTW_MODEL_TIMERS];
	struct rnd_state rnd;
	u64 seed;
	u64 op;
	u64 origin;
	u64 tick;
	u64 now;
	u64 armed, fired, cancelled;
	bool failed;
};

#define HTW_MODEL_EXPECT(m, cond, fmt, ...)				\
	do {								\
		struct htw_model *__m = (m);				\
		bool __ok = (cond);					\
									\
		KUNIT_EXPECT_TRUE_MSG(__m->test, __ok,			\
				      "seed %llu, op %llu: %s: " fmt,	\
				      __m->seed, __m->op, #cond,	\
				      ##__VA_ARGS__);			\
		if (!__ok)						\
			__m->failed = true;				\
	} while (0)

static u32 htw_model_rand(struct htw_model *m, u32 n)
{
	return prandom_u32_state(&m->rnd) % n;
}

/* A delay: four in ten anywhere below 2^63 ns, the rest a few ticks away. */
static u64 htw_model_delay(struct htw_model *m)
{
	u64 d, rem;

	if (htw_model_rand(m, 10) < 4)
		return htw_test_rand_bits(&m->rnd, 63);
	d = m->tick << htw_model_rand(m, 8);
	div64_u64_rem(htw_test_rand64(&m->rnd), d, &rem);
	return rem;
}

/* A step of time: mostly a few ticks, sometimes far enough to empty levels. */
static u64 htw_model_step(struct htw_model *m)
{
	u64 d, rem;

	if (htw_model_rand(m, 5) == 0)
		return htw_test_rand_bits(&m->rnd, HTW_MODEL_JUMP_BITS);
	d = m->tick << htw_model_rand(m, 4);
	div64_u64_rem(htw_test_rand64(&m->rnd), d, &rem);
	return rem;
}

static void htw_model_arm(struct htw_model *m, unsigned int i, u64 expires)
{
	struct htw_model_entry *e = &m->e[i];
	u64 rem;

	e->armed = true;
	e->expires = expires;
	div64_u64_rem(expires - m->origin, m->tick, &rem);
	if (!rem || check_add_overflow(expires, m->tick - rem, &e->due))
		e->due = rem ? U64_MAX : expires;
	m->armed++;
}

static void htw_model_disarm(struct htw_model *m, unsigned int i)
{
	if (m->e[i].armed)
		m->cancelled++;
	m->e[i].armed = false;
}

/* Called from the callback of timer @t, which the wheel just ran. */
static void htw_model_fired(struct htw_test_timer *t)
{
	struct htw_model *m = t->ctx->priv;
	struct htw_model_entry *e = &m->e[t->index];
	unsigned int j;
	u64 expires;
	int ret;

	HTW_MODEL_EXPECT(m, e->armed, "timer %u ran while idle or cancelled",
			 t->index);
	HTW_MODEL_EXPECT(m, t->expired == e->expires,
			 "timer %u reports %llu, armed for %llu",
			 t->index, t->expired, e->expires);
	HTW_MODEL_EXPECT(m, t->count == 1, "timer %u", t->index);
	HTW_MODEL_EXPECT(m, t->fired_at == m->now, "timer %u", t->index);
	HTW_MODEL_EXPECT(m, m->now >= e->due,
			 "timer %u for %llu ran early, at %llu",
			 t->index, e->expires, m->now);
	e->armed = false;
	m->fired++;

	/* Re-enter the wheel now and then, as callbacks may. */
	switch (htw_model_rand(m, 16)) {
	case 0:
	case 1:
		expires = m->now + htw_model_delay(m);
		ret = htw_add(&t->timer, expires, 0, HTW_MODE_ABS);
		HTW_MODEL_EXPECT(m, ret == 0, "re-add of timer %u: %d",
				 t->index, ret);
		htw_model_arm(m, t->index, expires);
		break;
	case 2:
		j = htw_model_rand(m, HTW_MODEL_TIMERS);
		if (j == t->index)
			break;
		HTW_MODEL_EXPECT(m, htw_del(&m->t[j].timer) == m->e[j].armed,
				 "del of timer %u from a callback", j);
		htw_model_disarm(m, j);
		break;
	case 3:
		j = htw_model_rand(m, HTW_MODEL_TIMERS);
		if (j == t->index)
			break;
		expires = m->now + htw_model_delay(m);
		ret = htw_mod(&m->t[j].timer, expires, 0, HTW_MODE_ABS);
		HTW_MODEL_EXPECT(m, ret == m->e[j].armed,
				 "mod of timer %u from a callback: %d", j, ret);
		htw_model_arm(m, j, expires);
		break;
	}
}

static void htw_model_advance(struct htw_model *m)
{
	unsigned int i;

	m->now += htw_model_step(m);
	htw_test_advance_all(m->test, m->wheel, m->now);
	HTW_MODEL_EXPECT(m, htw_wheel_now(m->wheel) == m->now, "");
	for (i = 0; i < HTW_MODEL_TIMERS; i++) {
		struct htw_model_entry *e = &m->e[i];

		HTW_MODEL_EXPECT(m, !e->armed || e->due > m->now,
				 "timer %u for %llu still waits at %llu",
				 i, e->expires, m->now);
		HTW_MODEL_EXPECT(m, htw_pending(&m->t[i].timer) == e->armed,
				 "timer %u", i);
	}
}

static void htw_model_op(struct htw_model *m)
{
	unsigned int i = htw_model_rand(m, HTW_MODEL_TIMERS);
	struct htw_timer *timer = &m->t[i].timer;
	struct htw_model_entry *e = &m->e[i];
	u32 r = htw_model_rand(m, 100);
	u64 delay = htw_model_delay(m);
	u64 expires = m->now + delay;
	int ret;

	/* One in ten absolute expiries has passed already. */
	if (htw_model_rand(m, 10) == 0)
		expires = m->now - min(m->now - m->origin, delay);

	if (r < 30) {
		if (r & 1)
			ret = htw_add(timer, expires, 0, HTW_MODE_ABS);
		else
			ret = htw_add(timer, delay, 0, HTW_MODE_REL);
		if (!(r & 1))
			expires = m->now + delay;
		HTW_MODEL_EXPECT(m, ret == (e->armed ? -EBUSY : 0),
				 "add of timer %u: %d", i, ret);
		if (!e->armed)
			htw_model_arm(m, i, expires);
	} else if (r < 50) {
		ret = htw_mod(timer, expires, 0, HTW_MODE_ABS);
		HTW_MODEL_EXPECT(m, ret == e->armed, "mod of timer %u: %d",
				 i, ret);
		htw_model_arm(m, i, expires);
	} else if (r < 65) {
		HTW_MODEL_EXPECT(m, htw_del(timer) == e->armed,
				 "del of timer %u", i);
		htw_model_disarm(m, i);
	} else if (r < 70) {
		HTW_MODEL_EXPECT(m, htw_pending(timer) == e->armed,
				 "timer %u", i);
	} else {
		htw_model_advance(m);
	}
}

/*
 * Every timer runs once per arming, in the advance that reaches its tick
 * boundary, never before it; cancelled timers never run; htw_pending()
 * agrees with the reference throughout.
 */
static void htw_core_random_ops_match_model(struct kunit *test)
{
	const struct htw_random_case *p = test->param_value;
	struct htw_test *ctx = test->priv;
	struct htw_wheel_stats stats;
	struct htw_model *m;
	unsigned int i;

	m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, m);
	m->test = test;
	m->seed = seed + p->wheel_size * 1000003ULL + p->tick_ns;
	m->origin = 1000000007ULL * p->wheel_size;
	m->tick = p->tick_ns;
	m->now = m->origin;
	prandom_seed_state(&m->rnd, m->seed);
	kunit_info(test, "seed %llu (module parameter seed=%llu)\n", m->seed,
		   seed);

	m->wheel = htw_test_wheel(test, p->wheel_size, p->tick_ns, m->origin);
	m->t = htw_test_timers(test, m->wheel, HTW_MODEL_TIMERS);
	for (i = 0; i < HTW_MODEL_TIMERS; i++)
		m->t[i].action = htw_model_fired;
	ctx->priv = m;

	for (m->op = 0; m->op < HTW_MODEL_OPS && !m->failed; m->op++)
		htw_model_op(m);

	htw_wheel_get_stats(m->wheel, &stats);
	kunit_info(test, "%llu ops: %llu armings, %llu callbacks, %llu cancels, %llu cascades, %u levels at the end, time +%llu ns\n",
		   m->op, m->armed, m->fired, m->cancelled, stats.cascaded,
		   stats.nr_levels, m->now - m->origin);
	KUNIT_EXPECT_EQ(test, stats.fired, m->fired);
	KUNIT_EXPECT_GT(test, m->fired, HTW_MODEL_OPS / 20);

	for (i = 0; i < HTW_MODEL_TIMERS; i++) {
		KUNIT_EXPECT_EQ_MSG(test, htw_del(&m->t[i].timer), m->e[i].armed,
				    "timer %u", i);
		m->e[i].armed = false;
	}
	htw_wheel_get_stats(m->wheel, &stats);
	KUNIT_EXPECT_EQ(test, stats.pending, 0);
	KUNIT_EXPECT_EQ(test, stats.nr_levels, 0);
}

/*
 * A million timers: where they sit, level by level.  The counts are the
 * numbers a reader of the design wants; the case checks only that they add
 * up and that deleting every timer leaves an empty wheel.
 */
#define HTW_MILLION		1000000

struct htw_occupancy_case {
	const char *desc;
	u32 wheel_size;
	u64 tick_ns;
	u64 range_ns;	/* delays uniform below this; 0: log-uniform below 2^63 */
};

static const struct htw_occupancy_case htw_occupancy_cases[] = {
	{ "size 2, tick 1 ns, delays log-uniform", 2, 1, 0 },
	{ "size 4, tick 1 ns, delays log-uniform", 4, 1, 0 },
	{ "size 64, tick 1 ns, delays log-uniform", 64, 1, 0 },
	{ "size 64, tick 1 us, delays uniform below 1 s", 64, 1000,
	  1000000000 },
	{ "size 64, tick 1 ms, delays uniform below 1 h", 64, 1000000,
	  3600ULL * 1000000000 },
};

KUNIT_ARRAY_PARAM_DESC(htw_occupancy_cases, htw_occupancy_cases, desc);

static void htw_occupancy_noop(struct htw_timer *timer, u64 expired, u64 count)
{
}

static void htw_core_random_million_adds_level_occupancy(struct kunit *test)
{
	const struct htw_occupancy_case *p = test->param_value;
	const u64 origin = 1ULL << 40;
	struct htw_wheel_stats *stats;
	struct htw_wheel *wheel;
	struct htw_timer *timers;
	struct rnd_state rnd;
	char *line;
	size_t i, len = 0;
	u64 delay;

	stats = kunit_kzalloc(test, sizeof(*stats), GFP_KERNEL);
	line = kunit_kzalloc(test, 1024, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, stats);
	KUNIT_ASSERT_NOT_NULL(test, line);
	wheel = htw_test_wheel(test, p->wheel_size, p->tick_ns, origin);
	timers = htw_test_bare_timers(test, wheel, HTW_MILLION,
				      htw_occupancy_noop);
	prandom_seed_state(&rnd, seed);
	kunit_info(test, "seed %llu\n", seed);

	for (i = 0; i < HTW_MILLION; i++) {
		if (p->range_ns)
			div64_u64_rem(htw_test_rand64(&rnd), p->range_ns,
				      &delay);
		else
			delay = htw_test_rand_bits(&rnd, 63);
		KUNIT_ASSERT_EQ_MSG(test, htw_add(&timers[i], delay, 0,
						  HTW_MODE_REL), 0,
				    "timer %zu", i);
	}

	htw_wheel_get_stats(wheel, stats);
	for (i = 0; i < stats->nr_levels && len < 1000; i++)
		len += scnprintf(line + len, 1024 - len, " %llu",
				 stats->level[i]);
	kunit_info(test, "%u levels, due %llu, per level:%s\n",
		   stats->nr_levels, stats->due, line);
	KUNIT_EXPECT_EQ(test, stats->pending, HTW_MILLION);
	KUNIT_EXPECT_EQ(test, htw_test_level_sum(stats) + stats->due,
			HTW_MILLION);

	for (i = 0; i < HTW_MILLION; i++)
		KUNIT_ASSERT_TRUE_MSG(test, htw_del(&timers[i]), "timer %zu", i);
	htw_wheel_get_stats(wheel, stats);
	KUNIT_EXPECT_EQ(test, stats->pending, 0);
	KUNIT_EXPECT_EQ(test, stats->due, 0);
	KUNIT_EXPECT_EQ(test, stats->nr_levels, 0);
	KUNIT_EXPECT_EQ(test, htw_test_level_sum(stats), 0);
}

static struct kunit_case htw_core_random_test_cases[] = {
	KUNIT_CASE_PARAM_ATTR(htw_core_random_ops_match_model,
			      htw_random_cases_gen_params,
			      { .speed = KUNIT_SPEED_SLOW }),
	KUNIT_CASE_PARAM_ATTR(htw_core_random_million_adds_level_occupancy,
			      htw_occupancy_cases_gen_params,
			      { .speed = KUNIT_SPEED_SLOW }),
	{}
};

static struct kunit_suite htw_core_random_test_suite = {
	.name = "htw_core_random",
	.init = htw_test_init,
	.exit = htw_test_exit,
	.test_cases = htw_core_random_test_cases,
};

kunit_test_suite(htw_core_random_test_suite);
