// SPDX-License-Identifier: GPL-2.0
/*
 * htw_bench - /dev/htw against timerfd, measured side by side
 *
 *   htw_bench [--rounds N] [--scale S]    the benchmark (as root)
 *   htw_bench --close-only [...]          only the close of files, up to
 *                                         10M timers (UML: see rig/bench.sh)
 *   htw_bench --smoke                     every measure once, tiny: proves
 *                                         the program still works
 *
 * Each measure runs in rounds, htw and its timerfd counterpart one after the
 * other in every round, so that both see the same machine; the median of the
 * rounds is reported, and the ratio of the medians.  Output is one line a
 * measure, for rig/bench.py:
 *
 *   bench user <measure> <htw> <anchor> <unit>
 *
 * with <anchor> "-" where there is none.  Times are on CLOCK_MONOTONIC.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <libhtw.h>

#include "htw_bench_common.h"
#include "htw_procstat.h"
#include "htw_sleeper.h"

#define BATCH		4096
/* How long to wait for an event that must come, before calling it lost. */
#define WAIT_MS		60000

static const char usage[] =
	"usage: htw_bench [--smoke] [--close-only] [--rounds N] [--scale S]\n";
static unsigned int rounds = 5;
static unsigned int scale = 1;

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static int htw_open_dev(void)
{
	int fd = htw_open(O_CLOEXEC);

	check(fd, "open " HTW_DEVICE_PATH);
	return fd;
}

static struct htw_oplist list;	/* BATCH operations */
static __u32 *ids;		/* what arm_batched() armed */

/* Run the operations @list holds; each must succeed. */
static void submit(int fd, const char *what)
{
	unsigned int i;
	int ret = htw_oplist_submit(fd, &list);

	check(ret, what);
	if (ret != (int)list.nr)
		die(what);
	for (i = 0; i < list.nr; i++)
		if (list.ops[i].result)
			die(what);
}

/* Expiry i of @n is due at start + i * spread / n. */
static __u64 due(__u64 start, unsigned int i, unsigned int n, __u64 spread)
{
	return start + (__u64)i * spread / n;
}

/*
 * Arm @n timers in batches of BATCH, due over @spread from @expires; their
 * ids are left in ids[].
 */
static void arm_batched(int fd, unsigned int n, __u64 expires, __u64 spread,
			__u32 flags)
{
	struct htw_timer_spec spec = { .flags = flags };
	unsigned int done, i;

	for (done = 0; done < n; done += list.nr) {
		htw_oplist_reset(&list);
		for (i = done; i < n && list.nr < list.size; i++) {
			spec.expires = due(expires, i, n, spread);
			htw_oplist_arm(&list, &spec);
		}
		submit(fd, "arm in a batch");
		for (i = 0; i < list.nr; i++)
			ids[done + i] = list.ops[i].spec.id;
	}
}

/* Cancel the @n timers whose ids arm_batched() left in ids[]. */
static void cancel_batched(int fd, unsigned int n)
{
	unsigned int done, i;

	for (done = 0; done < n; done += list.nr) {
		htw_oplist_reset(&list);
		for (i = done; i < n && list.nr < list.size; i++)
			htw_oplist_cancel(&list, ids[i]);
		submit(fd, "cancel in a batch");
	}
}

/* ns per timer: arm and cancel @n timers, one ioctl each. */
static double htw_arm_cancel_single(unsigned int n)
{
	int fd = htw_open_dev();
	struct htw_timer_spec spec = { .expires = 3600 * NSEC_PER_SEC };
	__u64 t0;
	unsigned int i;

	t0 = now_ns();
	for (i = 0; i < n; i++) {
		check(htw_arm(fd, &spec), "arm");
		ids[i] = spec.id;
	}
	for (i = 0; i < n; i++)
		check(htw_cancel(fd, ids[i]), "cancel");
	t0 = now_ns() - t0;
	close(fd);
	return (double)t0 / n;
}

/* ns per timer: arm and cancel @n timers in batches. */
static double htw_arm_cancel_batched(unsigned int n)
{
	int fd = htw_open_dev();
	__u64 t0 = now_ns();

	arm_batched(fd, n, 3600 * NSEC_PER_SEC, 0, 0);
	cancel_batched(fd, n);
	t0 = now_ns() - t0;
	close(fd);
	return (double)t0 / n;
}

/* @n timerfds, each armed an hour away. */
static void timerfds_arm(int *fds, unsigned int n)
{
	struct itimerspec its = { .it_value = { .tv_sec = 3600 } };
	unsigned int i;

	for (i = 0; i < n; i++) {
		fds[i] = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (fds[i] < 0 || timerfd_settime(fds[i], 0, &its, NULL))
			die("timerfd");
	}
}

/* ns per timer: a timerfd created, armed and closed. */
static double timerfd_arm_cancel(unsigned int n)
{
	int *fds = malloc(n * sizeof(*fds));
	unsigned int i;
	__u64 t0;

	if (!fds)
		die("malloc");
	t0 = now_ns();
	timerfds_arm(fds, n);
	for (i = 0; i < n; i++)
		close(fds[i]);
	t0 = now_ns() - t0;
	free(fds);
	return (double)t0 / n;
}

struct spin {
	int fd;
	int *stop;
	unsigned long ops;
};

static void arm_cancel_once(int fd)
{
	struct htw_timer_spec spec = { .expires = 3600 * NSEC_PER_SEC };

	check(htw_arm(fd, &spec), "arm");
	check(htw_cancel(fd, spec.id), "cancel");
}

/* Arm and cancel one timer on its own file until told to stop. */
static void *spin_arm_cancel(void *arg)
{
	struct spin *s = arg;

	while (!__atomic_load_n(s->stop, __ATOMIC_RELAXED)) {
		arm_cancel_once(s->fd);
		s->ops++;
	}
	return NULL;
}

/* Arm+cancel pairs per second made by @n threads, each on a file of its own. */
static double spin_threads(unsigned int n, unsigned int ms)
{
	struct spin s[2];
	pthread_t t[2];
	unsigned long total = 0;
	unsigned int i;
	int stop = 0;
	__u64 t0;

	for (i = 0; i < n; i++) {
		s[i] = (struct spin) { .fd = htw_open_dev(), .stop = &stop };
		/* The file's wheel and its level, made before the clock starts. */
		arm_cancel_once(s[i].fd);
	}
	t0 = now_ns();
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, spin_arm_cancel, &s[i]))
			die("pthread_create");
	usleep(ms * 1000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		total += s[i].ops;
	}
	t0 = now_ns() - t0;
	for (i = 0; i < n; i++)
		close(s[i].fd);
	return total * 1e9 / t0;
}

/* What an expiry run delivered: events per second and read-time lateness. */
struct delivery {
	double rate;
	__u64 p50, p99, max;
};

static void lateness(__u64 *late, unsigned int n, struct delivery *d)
{
	qsort(late, n, sizeof(*late), cmp_u64);
	d->p50 = late[n / 2];
	d->p99 = late[(__u64)n * 99 / 100];
	d->max = late[n - 1];
}

/*
 * When the first of @n timers may be due: after they are all armed, or
 * the measure would count as lateness the time it took to arm the later
 * ones.  25 us a timer covers a timerfd's creation, arming and epoll_ctl()
 * under emulation.
 */
static __u64 arm_time(unsigned int n)
{
	return 100 * NSEC_PER_MSEC + n * 25000ULL;
}

/* @n one-shot timers on one file, due over @spread, read through epoll. */
static void htw_expiries(unsigned int n, __u64 spread, struct delivery *d)
{
	struct epoll_event ee = { .events = EPOLLIN };
	struct htw_event *ev = malloc(1024 * sizeof(*ev));
	__u64 *late = malloc(n * sizeof(*late));
	__u64 start, t = 0;
	unsigned int got = 0, i;
	int fd = htw_open_dev(), ep = epoll_create1(EPOLL_CLOEXEC), r;

	if (!ev || !late || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee))
		die("epoll");
	start = now_ns() + arm_time(n);
	arm_batched(fd, n, start, spread, HTW_TIMER_ABSTIME);
	while (got < n) {
		if (epoll_wait(ep, &ee, 1, WAIT_MS) != 1)
			die("epoll_wait");
		r = htw_read_events(fd, ev, 1024);
		check(r, "read");
		t = now_ns();
		for (i = 0; i < (unsigned int)r; i++)
			late[got++] = t - ev[i].expires;
	}
	d->rate = n * 1e9 / (t > start ? t - start : 1);
	lateness(late, n, d);
	free(late);
	free(ev);
	close(ep);
	close(fd);
}

/* The same with @n timerfds, each in the epoll set. */
static void timerfd_expiries(unsigned int n, __u64 spread, struct delivery *d)
{
	struct epoll_event *ee = malloc(1024 * sizeof(*ee));
	__u64 *late = malloc(n * sizeof(*late));
	__u64 *when = malloc(n * sizeof(*when));
	int *fds = malloc(n * sizeof(*fds));
	int ep = epoll_create1(EPOLL_CLOEXEC), k;
	unsigned int got = 0, i;
	__u64 start, t = 0, ticks;

	if (!ee || !late || !when || !fds || ep < 0)
		die("malloc");
	start = now_ns() + arm_time(n);
	for (i = 0; i < n; i++) {
		struct itimerspec its = {};
		struct epoll_event e = { .events = EPOLLIN, .data.u32 = i };

		when[i] = due(start, i, n, spread);
		its.it_value.tv_sec = when[i] / NSEC_PER_SEC;
		its.it_value.tv_nsec = when[i] % NSEC_PER_SEC;
		fds[i] = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (fds[i] < 0 ||
		    timerfd_settime(fds[i], TFD_TIMER_ABSTIME, &its, NULL) ||
		    epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e))
			die("timerfd");
	}
	while (got < n) {
		k = epoll_wait(ep, ee, 1024, WAIT_MS);
		if (k <= 0)
			die("epoll_wait");
		t = now_ns();
		for (i = 0; i < (unsigned int)k; i++) {
			if (read(fds[ee[i].data.u32], &ticks, sizeof(ticks)) != sizeof(ticks))
				continue;
			late[got++] = t - when[ee[i].data.u32];
		}
	}
	d->rate = n * 1e9 / (t > start ? t - start : 1);
	lateness(late, n, d);
	for (i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	free(when);
	free(late);
	free(ee);
	close(ep);
}

static long long slab_bytes(void)
{
	char name[64];
	long long v;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld kB\n", name, &v) == 2) {
		if (!strcmp(name, "Slab:")) {
			fclose(f);
			return v * 1024;
		}
	}
	fclose(f);
	return -1;
}

/*
 * Kernel memory per timer: slab grown by @nh far htw timers, and by @n
 * timerfds.  Many htw timers, so that the slabs earlier measures left
 * partly used, which new timers fill before the slab grows, count little.
 */
static void memory_per_timer(unsigned int nh, unsigned int n, double *htw,
			     double *tfd)
{
	int *fds = malloc(n * sizeof(*fds)), fd;
	long long s0;
	unsigned int i;

	if (!fds)
		die("malloc");
	s0 = slab_bytes();
	fd = htw_open_dev();
	arm_batched(fd, nh, 3600 * NSEC_PER_SEC, 0, 0);
	*htw = (double)(slab_bytes() - s0) / nh;
	close(fd);

	usleep(100 * 1000);
	s0 = slab_bytes();
	timerfds_arm(fds, n);
	*tfd = (double)(slab_bytes() - s0) / n;
	for (i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
}

/* A count from a line of @path that starts with @key, summed over CPUs. */
static unsigned long long proc_sum(const char *path, const char *key)
{
	unsigned long long sum = 0, v;
	char line[4096], *p, *end;
	size_t len = strlen(key);
	FILE *f = fopen(path, "re");

	if (!f)
		die(path);
	while (fgets(line, sizeof(line), f)) {
		p = line;
		while (*p == ' ')
			p++;
		if (strncmp(p, key, len))
			continue;
		for (p += len; ; p = end) {
			v = strtoull(p, &end, 10);
			if (end == p)
				break;
			sum += v;
		}
	}
	fclose(f);
	return sum;
}

/*
 * HRTIMER softirqs a second while @files files each hold one periodic
 * timer of 10 ms, all armed for the same first expiry, and a reader reads
 * every event through epoll (which re-arms them).
 */
static double wakeups_periodic(unsigned int files)
{
	struct epoll_event ee[64];
	struct htw_event ev;
	unsigned long long s0 = 0;
	int *fd = calloc(files, sizeof(*fd)), ep, k, j;
	__u64 first, end = 0, t;
	unsigned int i;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!fd || ep < 0)
		die("epoll");
	first = now_ns() + arm_time(files);
	for (i = 0; i < files; i++) {
		struct epoll_event e = { .events = EPOLLIN, .data.u32 = i };
		struct htw_timer_spec spec = {
			.flags = HTW_TIMER_ABSTIME, .expires = first,
			.period = 10 * NSEC_PER_MSEC,
		};

		fd[i] = htw_open_dev();
		if (ioctl(fd[i], HTW_IOC_ARM, &spec) ||
		    epoll_ctl(ep, EPOLL_CTL_ADD, fd[i], &e))
			die("arm");
	}
	for (;;) {
		k = epoll_wait(ep, ee, 64, WAIT_MS);
		if (k <= 0)
			die("epoll_wait");
		for (j = 0; j < k; j++)
			if (htw_read_events(fd[ee[j].data.u32], &ev, 1) < 0)
				die("read");
		t = now_ns();
		/* A second of it, once the first round is over. */
		if (!end && t > first + 50 * NSEC_PER_MSEC) {
			s0 = proc_sum("/proc/softirqs", "HRTIMER:");
			end = t + NSEC_PER_SEC;
		} else if (end && t >= end) {
			break;
		}
	}
	t = proc_sum("/proc/softirqs", "HRTIMER:") - s0;
	for (i = 0; i < files; i++)
		close(fd[i]);
	close(ep);
	free(fd);
	return t;
}

/* CPU time spent in softirq so far, all CPUs, in ms (/proc/stat). */
static double softirq_ms(void)
{
	unsigned long long t[HTW_CPU_TIMES];

	if (htw_cpu_times(t) <= HTW_CPU_SOFTIRQ)
		die("/proc/stat");
	return t[HTW_CPU_SOFTIRQ] * 1000.0 / sysconf(_SC_CLK_TCK);
}

/*
 * Softirq time, in ms, of the second after @n timers of one file, that no
 * one reads, came due at one instant.
 */
static double unread_softirq_ms(unsigned int n)
{
	__u64 start = now_ns() + arm_time(n);
	int fd = htw_open_dev();
	double ms;

	arm_batched(fd, n, start, 0, HTW_TIMER_ABSTIME);
	while (now_ns() < start)
		usleep(1000);
	ms = softirq_ms();
	usleep(1000 * 1000);
	ms = softirq_ms() - ms;
	close(fd);
	return ms;
}

/* ms to close a file holding @n far timers. */
static double close_time(unsigned int n)
{
	int fd = htw_open_dev();
	__u64 t0;

	arm_batched(fd, n, 3600 * NSEC_PER_SEC, 0, 0);
	t0 = now_ns();
	close(fd);
	return (now_ns() - t0) / 1e6;
}

/*
 * The most a 1 ms sleeper on CPU 0 oversleeps while one expiry of @fd,
 * armed by @arm on CPU 0, wakes @items edge-triggered epoll items that
 * watch it: the hold-off one user's epoll items put on another's thread.
 * In ms.  Closes @fd.
 */
static double holdoff_ms(int fd, unsigned int items, void (*arm)(int fd))
{
	int *dups = zalloc(items * sizeof(*dups));
	unsigned long long held;
	struct htw_sleeper s;
	cpu_set_t cpus, cpu0;
	unsigned int i;
	int ep;

	check_errno(sched_getaffinity(0, sizeof(cpus), &cpus), "sched_getaffinity");
	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	check_errno(sched_setaffinity(0, sizeof(cpu0), &cpu0), "sched_setaffinity");
	ep = epoll_create1(EPOLL_CLOEXEC);
	check_errno(ep, "epoll_create1");
	for (i = 0; i < items; i++) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET };

		dups[i] = dup(fd);
		check_errno(dups[i], "dup");
		check_errno(epoll_ctl(ep, EPOLL_CTL_ADD, dups[i], &ev), "epoll_ctl");
	}
	check(-htw_sleeper_start(&s), "pthread_create");
	arm(fd);
	/* The expiry comes 50 ms after the arm; 150 ms more to be through. */
	usleep(200000);
	held = htw_sleeper_stop(&s);
	for (i = 0; i < items; i++)
		close(dups[i]);
	free(dups);
	close(ep);
	close(fd);
	check_errno(sched_setaffinity(0, sizeof(cpus), &cpus), "sched_setaffinity");
	return held / 1e6;
}

static void arm_htw_soon(int fd)
{
	struct htw_timer_spec spec = { .expires = 50 * NSEC_PER_MSEC };

	check(htw_arm(fd, &spec), "arm");
}

static void arm_timerfd_soon(int fd)
{
	struct itimerspec its = { .it_value.tv_nsec = 50 * NSEC_PER_MSEC };

	check_errno(timerfd_settime(fd, 0, &its, NULL), "timerfd_settime");
}

static int timerfd_open(void)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);

	check_errno(fd, "timerfd_create");
	return fd;
}

#define ROUNDS(expr_htw, expr_anchor, measure, unit)			\
	do {								\
		double h_[MAX_ROUNDS], a_[MAX_ROUNDS];			\
		unsigned int r_;					\
		for (r_ = 0; r_ < rounds; r_++) {			\
			h_[r_] = (expr_htw);				\
			a_[r_] = (expr_anchor);				\
		}							\
		report(measure, median(h_, rounds), median(a_, rounds), unit); \
	} while (0)

/*
 * @n expiries due over @spread, through one htw file and through @n
 * timerfds, in rounds: events/s, and lateness at read() (p99, max).
 */
static void deliveries(const char *rate, const char *p99, const char *max,
		       unsigned int n, __u64 spread)
{
	double hr[MAX_ROUNDS], tr[MAX_ROUNDS], h99[MAX_ROUNDS], t99[MAX_ROUNDS];
	double hm[MAX_ROUNDS], tm[MAX_ROUNDS];
	struct delivery hd, td;
	unsigned int r;

	for (r = 0; r < rounds; r++) {
		htw_expiries(n, spread, &hd);
		timerfd_expiries(n, spread, &td);
		hr[r] = hd.rate;
		tr[r] = td.rate;
		h99[r] = hd.p99 / 1000.0;
		t99[r] = td.p99 / 1000.0;
		hm[r] = hd.max / 1000.0;
		tm[r] = td.max / 1000.0;
	}
	report(rate, median(hr, rounds), median(tr, rounds), "events/s");
	report(p99, median(h99, rounds), median(t99, rounds), "us");
	report(max, median(hm, rounds), median(tm, rounds), "us");
}

int main(int argc, char **argv)
{
	unsigned int n, ms, expiries;
	__u64 spread;
	struct rlimit rl;
	double h, a;
	int smoke = 0, close_only = 0;
	const struct bench_option opts[] = {
		{ "--smoke", &smoke }, { "--close-only", &close_only },
		{ "--rounds", NULL, &rounds }, { "--scale", NULL, &scale }, {}
	};

	if (bench_options(argc, argv, opts, usage))
		return 2;
	if (smoke)
		rounds = 1;
	if (!rounds || rounds > MAX_ROUNDS || !scale)
		return 2;

	n = smoke ? 100 : 10000 * scale;
	expiries = smoke ? 100 : 100000 * scale;
	ms = smoke ? 20 : 1000;
	spread = smoke ? 100 * NSEC_PER_MSEC : NSEC_PER_SEC;
	/*
	 * timerfds are file descriptors, each an epoll watch: as many of both
	 * as the measure needs.
	 */
	rl.rlim_max = expiries + 1024;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		die("setrlimit (run as root)");
	raise_limit("/proc/sys/fs/epoll/max_user_watches", expiries + 1024);
	/* close_with_100x_timers arms the most. */
	ids = calloc(100 * expiries > n ? 100 * expiries : n, sizeof(*ids));
	if (!ids)
		die("calloc");
	check(htw_oplist_init(&list, BATCH), "htw_oplist_init");

	if (close_only || smoke) {
		ROUNDS(close_time(expiries), -1, "close_with_timers", "ms");
		ROUNDS(close_time(10 * expiries), -1, "close_with_10x_timers", "ms");
		ROUNDS(close_time(100 * expiries), -1, "close_with_100x_timers", "ms");
		if (close_only)
			return 0;
	}

	ROUNDS(htw_arm_cancel_single(n), timerfd_arm_cancel(n),
	       "arm_cancel_ioctl", "ns/timer");
	ROUNDS(htw_arm_cancel_batched(n), timerfd_arm_cancel(n),
	       "arm_cancel_batch", "ns/timer");
	ROUNDS(spin_threads(2, ms), spin_threads(1, ms),
	       "arm_cancel_two_files_vs_one", "pairs/s");
	deliveries("expiries_over_1s_epoll", "expiry_lateness_p99",
		   "expiry_lateness_max", expiries, spread);
	/* Ten times the rate: what each can deliver, rather than keep up with. */
	deliveries("expiries_over_100ms_epoll", "expiry_lateness_p99_over_100ms",
		   "expiry_lateness_max_over_100ms", expiries, spread / 10);
	/* All at one instant: what a burst costs each. */
	deliveries("expiries_at_one_instant_epoll",
		   "expiry_lateness_p99_at_one_instant",
		   "expiry_lateness_max_at_one_instant", expiries, 0);
	/* Files of the same tick share their wake-ups: a thousand vs one. */
	ROUNDS(wakeups_periodic(smoke ? 10 : 1000), wakeups_periodic(1),
	       "hrtimer_softirqs_1000_files_vs_one", "softirqs/s");
	ROUNDS(unread_softirq_ms(10 * expiries), -1,
	       "softirq_time_unread_10x_timers_due", "ms");
	/* A file that 20,000 epoll items watch, one expiry: a CPU held? */
	ROUNDS(holdoff_ms(htw_open_dev(), smoke ? 100 : 20000, arm_htw_soon),
	       holdoff_ms(timerfd_open(), smoke ? 100 : 20000, arm_timerfd_soon),
	       "sleeper_holdoff_20000_epoll_items", "ms");
	memory_per_timer(10 * expiries, expiries, &h, &a);
	report("kernel_memory_per_timer", h, a, "bytes");
	if (!smoke) {
		ROUNDS(close_time(expiries), -1, "close_with_timers", "ms");
		ROUNDS(close_time(10 * expiries), -1, "close_with_10x_timers", "ms");
	}
	return 0;
}
