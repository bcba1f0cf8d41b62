/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the user-space benchmarks (htw_bench, htw_ringbench, htw_purgatory)
 * share: failing, the clock, medians, the lines rig/bench.py reads, random
 * draws made before any clock starts, the room the anchors' files need,
 * io_uring's submission entries (for those that include liburing.h
 * first), and the command line.
 */
#ifndef _HTW_BENCH_COMMON_H
#define _HTW_BENCH_COMMON_H

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>

#include <linux/time_types.h>
#include <linux/types.h>

#define NSEC_PER_USEC	1000ULL
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL
/* Most rounds of a measure. */
#define MAX_ROUNDS	64

static inline __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* Say why, on stderr after the program's name, and exit 1. */
static inline void fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* fail() for a call that failed and set errno. */
static inline void die(const char *what)
{
	fail("%s: %s", what, strerror(errno));
}

/* fail() for calls that return -errno, as libhtw's and liburing's do. */
static inline void check(int ret, const char *what)
{
	if (ret < 0)
		fail("%s: %s", what, strerror(-ret));
}

/* die() for calls that set errno and return a negative value. */
static inline void check_errno(int ret, const char *what)
{
	if (ret < 0)
		die(what);
}

static inline void *zalloc(size_t size)
{
	void *p = calloc(1, size);

	if (!p)
		fail("out of memory");
	return p;
}

/* A "#" line: what rig/bench.py and rig/plot.sh pass over. */
static inline void note(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of @n values, or -1 (did not run) if any is. */
static inline double median(double *v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (v[i] < 0)
			return -1;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One line for rig/bench.py; a side below 0 did not run. */
static inline void report(const char *measure, double v, double anchor,
			  const char *unit)
{
	char a[32] = "-", b[32] = "-";

	if (v < 0 && anchor < 0) {
		printf("bench user %s skipped\n", measure);
	} else {
		if (v >= 0)
			snprintf(a, sizeof(a), "%.1f", v);
		if (anchor >= 0)
			snprintf(b, sizeof(b), "%.1f", anchor);
		printf("bench user %s %s %s %s\n", measure, a, b, unit);
	}
	fflush(stdout);
}

static inline struct timespec ts_of(__u64 ns)
{
	return (struct timespec) {
		.tv_sec = ns / NSEC_PER_SEC, .tv_nsec = ns % NSEC_PER_SEC,
	};
}

static inline struct __kernel_timespec kts_of(__u64 ns)
{
	return (struct __kernel_timespec) {
		.tv_sec = ns / NSEC_PER_SEC, .tv_nsec = ns % NSEC_PER_SEC,
	};
}

static inline struct timeval tv_of(__u64 ns)
{
	return (struct timeval) {
		.tv_sec = ns / NSEC_PER_SEC,
		.tv_usec = ns % NSEC_PER_SEC / NSEC_PER_USEC,
	};
}

/*
 * @len random draws, made before any clock starts, so that no way pays
 * for a generator: xorshift64*, high 32 bits, the same on every run.
 */
static inline __u32 *make_draws(unsigned int len)
{
	__u32 *rnd = zalloc(len * sizeof(*rnd));
	__u64 x = 0x9e3779b97f4a7c15ULL;
	unsigned int i;

	for (i = 0; i < len; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		rnd[i] = (x * 0x2545f4914f6cdd1dULL) >> 32;
	}
	return rnd;
}

/* Element of draw @r among @n: a multiply and a shift, no division. */
static inline unsigned int pick(__u32 r, unsigned int n)
{
	return ((__u64)r * n) >> 32;
}

/*
 * The sizes a measure runs at, into @v: the powers of ten from @first to
 * @last that are at most @max (or @max alone, if it is below @first); a
 * smoke run's 100 and 1,000.  Return how many.
 */
static inline unsigned int bench_sizes(unsigned int *v, unsigned int first,
				       unsigned int last, unsigned int max,
				       int smoke)
{
	unsigned int n = 0, s;

	if (smoke) {
		v[0] = 100;
		v[1] = 1000;
		return 2;
	}
	for (s = first; s <= last; s *= 10)
		if (s <= max)
			v[n++] = s;
	if (!n)
		v[n++] = max;
	return n;
}

/* Raise a sysctl to at least @v, for the anchors' sake. */
static inline void raise_limit(const char *path, unsigned long v)
{
	unsigned long cur = 0;
	FILE *f = fopen(path, "r+e");

	if (!f)
		return;
	if (fscanf(f, "%lu", &cur) == 1 && cur < v) {
		rewind(f);
		fprintf(f, "%lu\n", v);
	}
	fclose(f);
}

/* Each timerfd is a file, and an epoll watch: room for @n of both. */
static inline void make_room(unsigned int n)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur < n) {
		rl.rlim_cur = n;
		rl.rlim_max = rl.rlim_max > n ? rl.rlim_max : n;
		check_errno(setrlimit(RLIMIT_NOFILE, &rl),
			    "setrlimit (run as root)");
	}
	raise_limit("/proc/sys/fs/epoll/max_user_watches", n);
}

#ifdef LIB_URING_H
/* A free submission entry of @ring, submitting what it holds if none is. */
static inline struct io_uring_sqe *uring_get_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe) {
		check(io_uring_submit(ring), "io_uring_submit");
		sqe = io_uring_get_sqe(ring);
	}
	if (!sqe)
		fail("io_uring: no room in the submission queue");
	return sqe;
}

/* Hand each completion on @ring to @fn, with @arg, and take them off. */
static inline void uring_reap_all(struct io_uring *ring,
				  void (*fn)(void *arg,
					     const struct io_uring_cqe *cqe),
				  void *arg)
{
	struct io_uring_cqe *cqes[64];
	unsigned int i, nr;

	while ((nr = io_uring_peek_batch_cqe(ring, cqes, 64))) {
		for (i = 0; i < nr; i++)
			fn(arg, cqes[i]);
		io_uring_cq_advance(ring, nr);
	}
}
#endif

/**
 * struct bench_option - one option of a benchmark's command line
 * @name: as typed, "--smoke"
 * @flag: set to 1 by "--name", or NULL
 * @value: set to N by "--name N", or NULL
 */
struct bench_option {
	const char *name;
	int *flag;
	unsigned int *value;
};

/* @arg as a number that fits in an unsigned int, into @v; false if not */
static inline bool bench_parse_uint(const char *arg, unsigned int *v)
{
	unsigned long long n;
	char *end;

	errno = 0;
	n = strtoull(arg, &end, 0);
	if (errno || end == arg || *end || *arg == '-' || n > UINT_MAX)
		return false;
	*v = n;
	return true;
}

/*
 * Read the command line by @opts, ended by an entry with no name; return
 * 0, or 2 (the exit status of a bad command line) after printing @usage.
 */
static inline int bench_options(int argc, char **argv,
				const struct bench_option *opts,
				const char *usage)
{
	const struct bench_option *o;
	int i;

	for (i = 1; i < argc; i++) {
		for (o = opts; o->name && strcmp(argv[i], o->name); o++)
			;
		if (o->name && o->flag) {
			*o->flag = 1;
		} else if (o->name && o->value && i + 1 < argc &&
			   bench_parse_uint(argv[i + 1], o->value)) {
			i++;
		} else {
			fputs(usage, stderr);
			return 2;
		}
	}
	return 0;
}

#endif /* _HTW_BENCH_COMMON_H */
