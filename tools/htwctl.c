// SPDX-License-Identifier: GPL-2.0
/*
 * htwctl - arm timers on /dev/htw and print their events
 *
 *   htwctl [--boottime|--realtime] --after DUR [--every DUR] [--count N] [--after ...]
 *   htwctl info
 *   htwctl demo
 *
 * Each --after starts a timer, armed relative to the start; --every makes it
 * periodic, --count says how many expiries to wait for (default 1, or
 * forever for a periodic timer), --boottime puts it on CLOCK_BOOTTIME and
 * --realtime on CLOCK_REALTIME, the wall clock.  DUR
 * is a number with a unit: ns, us, ms or s.  All timers are armed with one
 * batch (libhtw's htw_oplist); each event is printed with the time since the start, the
 * timer, its expiry count and its lateness: how long after its expiry the
 * wheel delivered it, and how long after it read() returned it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libhtw.h>

#include "htw_duration.h"

#define NSEC_PER_USEC	1000ULL
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL
#define MAX_TIMERS	64

struct timer {
	__u64 after;
	__u64 every;
	__u64 count;		/* expiries to wait for; 0: forever */
	__u64 seen;
	__u32 flags;
	__u32 id;
	int counted;		/* --count given */
	int done;
};

static struct timer timers[MAX_TIMERS];
static unsigned int nr_timers;

static __u64 now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (__u64)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static void print_ns(const char *label, __u64 ns)
{
	printf("%s%llu.%03llu ms", label, ns / NSEC_PER_MSEC,
	       ns % NSEC_PER_MSEC / NSEC_PER_USEC);
}

static int open_dev(void)
{
	int fd = htw_open(O_CLOEXEC);

	if (fd < 0)
		fprintf(stderr, "htwctl: %s: %s\n", HTW_DEVICE_PATH,
			strerror(-fd));
	return fd;
}

static int cmd_info(void)
{
	struct htw_info info;
	int fd = open_dev(), ret;

	if (fd < 0)
		return 1;
	ret = htw_get_info(fd, &info);
	if (ret) {
		fprintf(stderr, "htwctl: info: %s\n", strerror(-ret));
		close(fd);
		return 1;
	}
	printf("abi version    %u\n", info.version);
	printf("tick           %llu ns\n", (unsigned long long)info.tick_ns);
	printf("wheel size     %u buckets per level\n", info.wheel_size);
	printf("min period     %llu ns\n",
	       (unsigned long long)info.min_period_ns);
	printf("max timers     %u per open file\n", info.max_timers);
	printf("batch max      %u operations\n", info.batch_max);
	printf("expire budget  %u callbacks per batch of an expiry run\n",
	       info.expire_budget);
	printf("event size     %u bytes\n", info.event_size);
	printf("timers         %u\n", info.nr_timers);
	printf("queued         %u\n", info.nr_queued);
	/* An older module leaves them 0. */
	if (info.version >= 4)
		printf("user memory    %llu of %llu bytes\n",
		       (unsigned long long)info.user_bytes,
		       (unsigned long long)info.max_user_bytes);
	close(fd);
	return 0;
}

/* The clock of timer flags, or of event flags. */
static clockid_t timer_clock(__u32 flags)
{
	if (flags & HTW_TIMER_REALTIME)
		return CLOCK_REALTIME;
	return flags & HTW_TIMER_BOOTTIME ? CLOCK_BOOTTIME : CLOCK_MONOTONIC;
}

static clockid_t event_clock(__u32 flags)
{
	if (flags & HTW_EVENT_REALTIME)
		return CLOCK_REALTIME;
	return flags & HTW_EVENT_BOOTTIME ? CLOCK_BOOTTIME : CLOCK_MONOTONIC;
}

/* When the run started, on each clock a timer may use. */
struct starts {
	__u64 mono, boot, real;
};

static __u64 start_of(const struct starts *st, clockid_t clock)
{
	if (clock == CLOCK_REALTIME)
		return st->real;
	return clock == CLOCK_BOOTTIME ? st->boot : st->mono;
}

static int arm_all(int fd, const struct starts *st)
{
	struct htw_oplist list;
	unsigned int i;
	int ret;

	ret = htw_oplist_init(&list, nr_timers);
	if (ret)
		goto out;
	for (i = 0; i < nr_timers; i++) {
		struct timer *t = &timers[i];
		struct htw_timer_spec spec = {
			.flags = t->flags | HTW_TIMER_ABSTIME,
			.expires = start_of(st, timer_clock(t->flags)) + t->after,
			.period = t->every,
			.user_data = i,
		};

		htw_oplist_arm(&list, &spec);
	}
	ret = htw_oplist_submit(fd, &list);
	if (ret >= 0 && ret != (int)nr_timers)
		ret = -EFAULT;
	for (i = 0; ret >= 0 && i < nr_timers; i++) {
		if (list.ops[i].result) {
			fprintf(stderr, "htwctl: timer %u: %s\n", i + 1,
				strerror(-list.ops[i].result));
			ret = -1;
			break;
		}
		timers[i].id = list.ops[i].spec.id;
	}
	htw_oplist_free(&list);
out:
	if (ret < -1)
		fprintf(stderr, "htwctl: arming: %s\n", strerror(-ret));
	return ret < 0 ? -1 : 0;
}

static int cmd_run(void)
{
	struct starts st;
	__u64 now;
	struct htw_event ev[64];
	unsigned int left = nr_timers;
	int fd, n, j;

	fd = open_dev();
	if (fd < 0)
		return 1;
	st.mono = htw_clock_now(0);
	st.boot = htw_clock_now(HTW_TIMER_BOOTTIME);
	st.real = htw_clock_now(HTW_TIMER_REALTIME);
	if (arm_all(fd, &st)) {
		close(fd);
		return 1;
	}

	while (left) {
		n = htw_read_events(fd, ev, ARRAY_SIZE(ev));
		if (n < 0) {
			fprintf(stderr, "htwctl: read: %s\n", strerror(-n));
			break;
		}
		for (j = 0; j < n; j++) {
			struct timer *t = &timers[ev[j].user_data];
			clockid_t clock = event_clock(ev[j].flags);
			__u64 start = start_of(&st, clock);

			now = now_ns(clock);
			t->seen += ev[j].count;
			print_ns("[+", ev[j].expires - start);
			printf("] timer %u (id %u) expiry %llu",
			       (unsigned int)ev[j].user_data + 1, ev[j].id,
			       t->seen);
			if (t->count)
				printf("/%llu", t->count);
			if (ev[j].count > 1)
				printf(" (%llu coalesced)", ev[j].count);
			print_ns("  late ", ev[j].fired - ev[j].expires);
			print_ns(", read after ", now - ev[j].expires);
			printf("\n");

			if (t->done || !t->count || t->seen < t->count)
				continue;
			t->done = 1;
			left--;
			if (t->every)
				htw_cancel(fd, t->id);
		}
		fflush(stdout);
	}
	close(fd);
	return left ? 1 : 0;
}

static int add_timer(__u64 after, __u64 every, __u64 count,
		     __u32 flags)
{
	struct timer *t;

	if (nr_timers == MAX_TIMERS) {
		fprintf(stderr, "htwctl: at most %d timers\n", MAX_TIMERS);
		return -1;
	}
	t = &timers[nr_timers++];
	t->after = after;
	t->every = every;
	t->count = count;
	t->flags = flags;
	return 0;
}

/* A short scene: one-shot and periodic timers, one of them coalescing. */
static int cmd_demo(void)
{
	printf("htwctl demo: 4 timers armed in one batch on /dev/htw\n");
	printf("  1: once after 100ms\n");
	printf("  2: after 250ms, every 200ms, 3 times\n");
	printf("  3: after 50ms, every 100ms, 6 times\n");
	printf("  4: once after 300ms, on CLOCK_BOOTTIME\n");
	if (add_timer(100 * NSEC_PER_MSEC, 0, 1, 0) ||
	    add_timer(250 * NSEC_PER_MSEC, 200 * NSEC_PER_MSEC, 3, 0) ||
	    add_timer(50 * NSEC_PER_MSEC, 100 * NSEC_PER_MSEC, 6, 0) ||
	    add_timer(300 * NSEC_PER_MSEC, 0, 1, HTW_TIMER_BOOTTIME))
		return 1;
	if (cmd_info())
		return 1;
	return cmd_run();
}

static int usage(void)
{
	fprintf(stderr,
		"Usage: htwctl [--boottime|--realtime] --after DUR [--every DUR] [--count N] [--after ...]\n"
		"       htwctl info\n"
		"       htwctl demo\n"
		"DUR is a number with a unit: ns, us, ms or s (e.g. 250ms)\n");
	return 2;
}

int main(int argc, char **argv)
{
	__u32 flags = 0;
	struct timer *t = NULL;
	char *end;
	int i;

	if (argc == 2 && !strcmp(argv[1], "info"))
		return cmd_info();
	if (argc == 2 && !strcmp(argv[1], "demo"))
		return cmd_demo();

	for (i = 1; i < argc; i++) {
		const char *opt = argv[i], *arg = i + 1 < argc ? argv[i + 1] : NULL;
		__u64 v;

		if (!strcmp(opt, "--boottime")) {
			flags = HTW_TIMER_BOOTTIME;
			continue;
		}
		if (!strcmp(opt, "--realtime")) {
			flags = HTW_TIMER_REALTIME;
			continue;
		}
		if (!arg)
			return usage();
		i++;
		if (!strcmp(opt, "--after")) {
			if (htw_parse_duration(arg, &v) || add_timer(v, 0, 1, flags))
				return usage();
			t = &timers[nr_timers - 1];
			flags = 0;
		} else if (!strcmp(opt, "--every") && t) {
			if (htw_parse_duration(arg, &t->every) || !t->every)
				return usage();
			if (!t->counted)
				t->count = 0;
		} else if (!strcmp(opt, "--count") && t) {
			t->count = strtoull(arg, &end, 10);
			t->counted = 1;
			if (*end || !t->count)
				return usage();
		} else {
			return usage();
		}
	}
	if (!nr_timers)
		return usage();
	return cmd_run();
}
