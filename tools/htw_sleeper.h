/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A sleeper of 1 ms steps, and the most any step overslept: the hold-off
 * that work done beside it on its CPU put on it.  htw_bench and the
 * user-space tests measure with it.  libc and pthreads only, so that
 * tools/ and tests/user/ can both include it.
 */
#ifndef _HTW_SLEEPER_H
#define _HTW_SLEEPER_H

#include <pthread.h>
#include <time.h>

struct htw_sleeper {
	pthread_t thread;
	int stop;
	unsigned long long worst_ns;
};

static inline unsigned long long htw_sleeper_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline void *htw_sleeper_fn(void *arg)
{
	const unsigned long long step_ns = 1000000;
	struct timespec step = { .tv_nsec = step_ns };
	struct htw_sleeper *s = arg;
	unsigned long long t, d;

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		t = htw_sleeper_now();
		nanosleep(&step, NULL);
		d = htw_sleeper_now() - t;
		if (d > step_ns && d - step_ns > s->worst_ns)
			s->worst_ns = d - step_ns;
	}
	return NULL;
}

/* Start sleeping beside the caller; 0, or an error of pthread_create(). */
static inline int htw_sleeper_start(struct htw_sleeper *s)
{
	s->stop = 0;
	s->worst_ns = 0;
	return pthread_create(&s->thread, NULL, htw_sleeper_fn, s);
}

/* Stop a started sleeper; the most a step of it overslept, in ns. */
static inline unsigned long long htw_sleeper_stop(struct htw_sleeper *s)
{
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	pthread_join(s->thread, NULL);
	return s->worst_ns;
}

#endif /* _HTW_SLEEPER_H */
