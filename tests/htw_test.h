/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fixture the KUnit suites of htw share
 *
 * Every wheel and timer a case uses comes from the helpers below and is
 * registered in the case's struct htw_test (test->priv), so that the suite's
 * .exit can cancel every timer before it destroys the wheels, whether the
 * case passed or an assertion cut it short.  Destroying a wheel that still
 * holds timers is a caller bug the core reports loudly.
 */
#ifndef _HTW_TEST_H
#define _HTW_TEST_H

#include <kunit/test.h>
#include <linux/prandom.h>
#include <linux/types.h>

#include "../htw_core.h"

#define HTW_TEST_MAX_WHEELS	4
#define HTW_TEST_MAX_ARRAYS	8

struct htw_test_timer;

/* Extra work a test timer's callback does after it has recorded the call. */
typedef void (*htw_test_action_t)(struct htw_test_timer *t);

/**
 * struct htw_test_timer - a timer that remembers its callbacks
 * @timer: the timer under test
 * @ctx: the case's fixture
 * @wheel: the wheel @timer was initialised on
 * @index: its place in the array it was allocated in
 * @fires: callbacks so far
 * @fired_at: htw_wheel_now() in the last callback
 * @expired: @expired of the last callback
 * @count: @count of the last callback
 * @seq: callbacks made on all timers of the case before the last one of this
 *	timer (its place in the order of expiry)
 * @irqs_off: whether interrupts were off in the last callback
 * @in_task: whether the last callback ran in process context
 * @action: called at the end of each callback, if set
 * @other: another timer @action works on
 * @arg: an argument for @action
 * @ret: what @action's call into the wheel returned
 */
struct htw_test_timer {
	struct htw_timer timer;
	struct htw_test *ctx;
	struct htw_wheel *wheel;
	unsigned int index;
	unsigned int fires;
	u64 fired_at;
	u64 expired;
	u64 count;
	u64 seq;
	bool irqs_off;
	bool in_task;
	htw_test_action_t action;
	struct htw_test_timer *other;
	u64 arg;
	long ret;
};

/**
 * struct htw_test - one case's wheels, timers and expiry log
 * @test: the case
 * @wheels: wheels to destroy when the case ends
 * @nr_wheels: entries used in @wheels
 * @arrays: timer arrays to cancel and free when the case ends
 * @sizes: the number of timers in each of @arrays
 * @nr_arrays: entries used in @arrays
 * @bare: bare timers to cancel and free when the case ends
 * @nr_bare: the number of timers in @bare
 * @fired: callbacks made so far on the timers of the case
 * @log: the timers in the order their callbacks ran, if allocated
 * @log_size: entries @log can hold
 * @priv: the case's own state
 */
struct htw_test {
	struct kunit *test;
	struct htw_wheel *wheels[HTW_TEST_MAX_WHEELS];
	unsigned int nr_wheels;
	struct htw_test_timer *arrays[HTW_TEST_MAX_ARRAYS];
	size_t sizes[HTW_TEST_MAX_ARRAYS];
	unsigned int nr_arrays;
	struct htw_timer *bare;
	size_t nr_bare;
	u64 fired;
	struct htw_test_timer **log;
	size_t log_size;
	void *priv;
};

int htw_test_init(struct kunit *test);
void htw_test_exit(struct kunit *test);

struct htw_wheel *htw_test_wheel_params(struct kunit *test,
					const struct htw_wheel_params *params);
struct htw_wheel *htw_test_wheel(struct kunit *test, u32 wheel_size,
				 u64 tick_ns, u64 start_ns);
struct htw_test_timer *htw_test_timers(struct kunit *test,
				       struct htw_wheel *wheel, size_t n);
struct htw_timer *htw_test_bare_timers(struct kunit *test,
				       struct htw_wheel *wheel, size_t n,
				       htw_func_t func);
void htw_test_log(struct kunit *test, size_t n);
unsigned int htw_test_advance_all(struct kunit *test, struct htw_wheel *wheel,
				  u64 now);
u64 htw_test_level_sum(const struct htw_wheel_stats *stats);

u64 htw_test_rand64(struct rnd_state *rnd);
u64 htw_test_rand_bits(struct rnd_state *rnd, unsigned int max_bits);

#endif /* _HTW_TEST_H */
