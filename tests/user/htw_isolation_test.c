// SPDX-License-Identifier: GPL-2.0
/*
 * No user of /dev/htw can slow another, or pin more than its share: each
 * file has wheels of its own, an unread periodic timer is parked, timers
 * are counted per user across files, and ids are not handed out again soon.
 * The read path never fails a non-blocking reader while events are queued.
 *
 * The test runs as root and plays other users with setuid() in children.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "htw_user.h"
#include "../../tools/htw_procstat.h"

#define MS			NSEC_PER_MSEC
#define NOBODY			65534
#define VICTIM			60002
#define WHEELS			"/sys/kernel/debug/htw/wheels"

#define NR_ATTACK		100000
#define NR_VICTIM		1000

/*
 * The long cases need the harness's timeout, which only fixtures have; the
 * fixture also puts back the per-user limit a case changed, pass or fail.
 */
FIXTURE(htw) {
	long long user_limit;
};

FIXTURE_SETUP(htw)
{
	self->user_limit = htw_limit_save(_metadata, 0);
}

FIXTURE_TEARDOWN(htw)
{
	htw_limit_restore(self->user_limit);
}

/* Wait for a child; return its exit status, or 200 + signal. */
static int reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return 255;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

TEST(stale_id_after_read_is_enoent)
{
	struct htw_event ev;
	long old, new;
	int fd = htw_open(O_CLOEXEC);

	ASSERT_LE(0, fd);
	old = htw_arm_id(fd, 0, 0, 0, 0);
	ASSERT_LT(0, old);
	ASSERT_EQ(1, htw_read_events(fd, &ev, 1));
	ASSERT_EQ(old, ev.id);

	new = htw_arm_id(fd, 0, 3600 * NSEC_PER_SEC, 0, 0);
	ASSERT_LT(0, new);
	EXPECT_NE(old, new);
	EXPECT_EQ(-ENOENT, htw_cancel(fd, old));
	EXPECT_EQ(-ENOENT, htw_modify_id(fd, old, 0, MS, 0));
	EXPECT_EQ(0, htw_cancel(fd, new));
	close(fd);
}

/* The id is written before the timer is armed: a fault leaves nothing. */
TEST(arm_with_read_only_spec_arms_and_charges_nothing)
{
	struct htw_info before, info;
	struct htw_timer_spec *spec;
	int fd = htw_open(O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_LT(0, htw_arm_id(fd, 0, 3600 * NSEC_PER_SEC, 0, 0));
	ASSERT_EQ(0, htw_get_info(fd, &before));
	spec = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, spec);
	spec->expires = 3600 * NSEC_PER_SEC;
	ASSERT_EQ(0, mprotect(spec, 4096, PROT_READ));
	EXPECT_EQ(-1, ioctl(fd, HTW_IOC_ARM, spec));
	EXPECT_EQ(EFAULT, errno);

	ASSERT_EQ(0, htw_get_info(fd, &info));
	EXPECT_EQ(1, info.nr_timers);
	EXPECT_EQ(before.user_bytes, info.user_bytes);
	munmap(spec, 4096);
	close(fd);
}

/*
 * A periodic timer left unread is counted, not run: the read reports every
 * expiry that passed, as scheduled, and re-arms it for the next one.
 */
TEST(parked_periodic_timer_counts_the_periods_that_passed)
{
	__u64 start = htw_now(CLOCK_MONOTONIC), period = 2 * MS;
	__u64 first = start + period, before, after;
	struct htw_event ev;
	int fd = htw_open(O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_LT(0, htw_arm_id(fd, HTW_TIMER_ABSTIME, first, period, 0));
	usleep(100 * 1000);

	before = htw_now(CLOCK_MONOTONIC);
	ASSERT_EQ(1, htw_read_events(fd, &ev, 1));
	after = htw_now(CLOCK_MONOTONIC);
	TH_LOG("count %llu after %llu ms", (unsigned long long)ev.count,
	       (unsigned long long)((before - start) / MS));

	/* Exactly the expiries up to the read, none after it. */
	EXPECT_EQ(first + (ev.count - 1) * period, ev.expires);
	EXPECT_LE(ev.expires, after);
	EXPECT_GT(ev.expires + period, before);
	EXPECT_LE(ev.expires, ev.fired);
	EXPECT_GE(ev.count, 100 * MS / period - 1);

	/* Re-armed: the next expiry comes as one event of count 1 or more. */
	ASSERT_EQ(1, htw_read_events(fd, &ev, 1));
	EXPECT_EQ(0, (ev.expires - first) % period);
	EXPECT_LE(ev.expires, ev.fired);
	close(fd);
}

/*
 * CPU time in softirq, and in all, from one read of /proc/stat's "cpu"
 * line; both 0 if it has fewer than 8 fields.
 */
static void cpu_times(__u64 *softirq, __u64 *total)
{
	unsigned long long t[HTW_CPU_TIMES];
	int i;

	*softirq = 0;
	*total = 0;
	if (htw_cpu_times(t) != HTW_CPU_TIMES)
		return;
	*softirq = t[HTW_CPU_SOFTIRQ];
	for (i = 0; i < HTW_CPU_TIMES; i++)
		*total += t[i];
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * As VICTIM, 1,000 one-shot timers over one second; write the p99 and the
 * worst of their lateness (delivery by the wheel, fired - expires) to
 * @out[0..1], and the share of CPU time spent in softirq meanwhile, in
 * per mille, to @out[2].  Return 0, or a failure code.
 */
static int victim(__u64 *out)
{
	static struct htw_op ops[NR_VICTIM];
	static __u64 late[NR_VICTIM];
	static struct htw_event ev[64];
	__u64 start, sirq0, total0, sirq1, total1;
	int fd, got = 0, i, n;

	fd = htw_open(O_CLOEXEC);
	if (fd < 0)
		return 1;
	cpu_times(&sirq0, &total0);
	/*
	 * One batch, well before the first expiry (a debug kernel takes tens
	 * of ms to arm them), so that lateness is delivery's; a host that
	 * holds the arms back past it only inflates a figure that decides
	 * nothing.
	 */
	start = htw_now(CLOCK_MONOTONIC) + 250 * MS;
	for (i = 0; i < NR_VICTIM; i++)
		ops[i] = (struct htw_op) {
			.op = HTW_OP_ARM,
			.spec = { .flags = HTW_TIMER_ABSTIME,
				  .expires = start + i * MS +
					     (i * 7919) % 1000 * 1000 },
		};
	if (htw_batch(fd, ops, NR_VICTIM) != NR_VICTIM || ops[0].result)
		return 2;
	while (got < NR_VICTIM) {
		n = htw_read_events(fd, ev, 64);
		if (n <= 0)
			return 3;
		for (i = 0; i < n; i++) {
			if (ev[i].fired < ev[i].expires)
				return 4;
			late[got++] = ev[i].fired - ev[i].expires;
		}
	}
	cpu_times(&sirq1, &total1);
	out[2] = (sirq1 - sirq0) * 1000 / (total1 - total0 ?: 1);
	qsort(late, NR_VICTIM, sizeof(late[0]), cmp_u64);
	out[0] = late[NR_VICTIM * 99 / 100];
	out[1] = late[NR_VICTIM - 1];
	close(fd);
	return 0;
}

/* Run victim() in a child as VICTIM; its results come through a pipe. */
static int run_victim(__u64 *out)
{
	int p[2], rc;
	pid_t pid;

	if (pipe(p))
		return 50;
	pid = fork();
	if (!pid) {
		close(p[0]);
		htw_become(VICTIM);
		rc = victim(out);
		if (!rc && write(p[1], out, 3 * sizeof(*out)) != 3 * sizeof(*out))
			rc = 5;
		_exit(rc);
	}
	close(p[1]);
	rc = reap(pid);
	if (!rc && read(p[0], out, 3 * sizeof(*out)) != 3 * sizeof(*out))
		rc = 51;
	close(p[0]);
	return rc;
}

/*
 * The median, figure by figure, of three victim runs: an emulated guest's
 * lateness varies from one second to the next by more than the factor the
 * test checks.
 */
static int run_victims(__u64 *out)
{
	__u64 r[3][3], a, b, c;
	int i, rc;

	for (i = 0; i < 3; i++) {
		rc = run_victim(r[i]);
		if (rc)
			return rc;
	}
	for (i = 0; i < 3; i++) {
		a = r[0][i];
		b = r[1][i];
		c = r[2][i];
		out[i] = a > b ? (b > c ? b : (a > c ? c : a)) :
				 (a > c ? a : (b > c ? c : b));
	}
	return 0;
}

/*
 * The callbacks all wheels have made so far, as debugfs lists them, and in
 * *@most those of the wheel that made most; -1 without the list.
 */
static long long wheel_callbacks(unsigned long long *most)
{
	FILE *f = fopen(WHEELS, "re");
	unsigned long long n, sum = 0;
	char line[256], *p;

	if (!f)
		return -1;
	*most = 0;
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, " callbacks ");
		if (!p)
			continue;
		n = strtoull(p + strlen(" callbacks "), NULL, 10);
		sum += n;
		if (n > *most)
			*most = n;
	}
	fclose(f);
	return sum;
}

/*
 * An unprivileged user arms 100,000 periodic timers at the shortest period
 * and never reads them.  Its timers are parked after one expiry each: once
 * all 100,000 events are queued, its wheel makes no callback while another
 * user's timers run, and costs that user nothing.  That is the verdict:
 * how late the other user's timers come (p99 within twice the quiet run's
 * and five ticks, where the unparked attacker made it 540 ms), and the
 * softirq time meanwhile (71% of a CPU, unparked), are printed as the
 * measures of it, but decide nothing: a host that takes the CPU from the
 * guest moves them by more than a parked attacker can.
 */
TEST_F_TIMEOUT(htw, unread_periodic_timers_of_one_user_do_not_delay_another, 300)
{
	unsigned long long most, most_after;
	long long before, after;
	__u64 quiet[3], loud[3];
	struct htw_info info;
	int ready[2], fd, i;
	long armed;
	pid_t attacker;
	char c;

	fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, htw_get_info(fd, &info));
	close(fd);

	ASSERT_EQ(0, run_victims(quiet));

	ASSERT_EQ(0, pipe(ready));
	attacker = fork();
	ASSERT_LE(0, attacker);
	if (!attacker) {
		close(ready[0]);
		htw_become(NOBODY);
		fd = htw_open(O_CLOEXEC);
		if (fd < 0)
			_exit(1);
		armed = htw_arm_many(fd, NR_ATTACK, info.min_period_ns,
				     info.min_period_ns, 0);
		/* Ready once every timer has expired once, and parked. */
		for (i = 0; armed == NR_ATTACK && i < 6000; i++) {
			if (htw_get_info(fd, &info) || info.nr_queued == NR_ATTACK)
				break;
			usleep(10 * 1000);
		}
		c = info.nr_queued == NR_ATTACK ? 'y' : 'n';
		if (write(ready[1], &c, 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	close(ready[0]);
	ASSERT_EQ('y', c);

	if (access(WHEELS, F_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	before = wheel_callbacks(&most);
	ASSERT_EQ(0, run_victims(loud));
	after = wheel_callbacks(&most_after);
	kill(attacker, SIGKILL);
	reap(attacker);

	TH_LOG("lateness p99/max: quiet %llu/%llu us", quiet[0] / 1000,
	       quiet[1] / 1000);
	TH_LOG("with %d unread periodic timers of uid %d: %llu/%llu us",
	       NR_ATTACK, NOBODY, loud[0] / 1000, loud[1] / 1000);
	TH_LOG("softirq share of CPU time: quiet %llu.%llu%%, attacked %llu.%llu%%",
	       quiet[2] / 10, quiet[2] % 10, loud[2] / 10, loud[2] % 10);
	/*
	 * Medians of 3 runs have been 2.4 and 5.9 ms without and with the
	 * attacker, and 2.2 and 1.2, in an emulated guest; the softirq share
	 * 11 points above the quiet run's.
	 */
	if (loud[0] > 2 * quiet[0] + 5 * info.tick_ns)
		TH_LOG("p99 over twice the quiet one and 5 ticks: a slow host?");

	/*
	 * The attacker's wheel is the one with its 100,000 callbacks (a
	 * victim's makes far fewer), and it made none meanwhile.  (Other
	 * wheels, the victims' among them, may come and go between the two
	 * lists.)
	 */
	if (before < 0 || after < 0)
		SKIP(return, "no %s: the attacker's callbacks are not counted",
		     WHEELS);
	EXPECT_LE(NR_ATTACK, most);
	EXPECT_EQ(most, most_after)
		TH_LOG("%llu callbacks of the attacker's wheel meanwhile",
		       most_after - most);
}

/*
 * The per-user limit counts the bytes of every file a uid opened, its
 * timers, wheels and id nodes, and another uid's not at all.  The limit is
 * set once the child knows what its two files' wheels and first nodes, and
 * a timer, count: room for 100 timers beyond them (the files' 100 timers
 * fit in their first nodes).  HTW_IOC_INFO's fields in timers say the
 * same, rounded.
 */
TEST_F(htw, user_limit_spans_files_and_not_users)
{
	unsigned long long base[2];	/* two files' first timers; one timer */
	int go[2], done[2], fd;
	struct htw_info info;
	pid_t pid, other;
	char c = 0;

	ASSERT_EQ(0, htw_write_number(HTW_PARAM_USER_BYTES, 100000000));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		unsigned long long file, timer, full;
		int a, b, id;

		close(done[0]);
		close(go[1]);
		htw_become(NOBODY);
		a = htw_open(O_CLOEXEC);
		b = htw_open(O_CLOEXEC);
		if (a < 0 || b < 0)
			_exit(1);
		if (htw_arm_id(a, 0, NSEC_PER_SEC, 0, 0) != 1 ||
		    htw_arm_id(b, 0, NSEC_PER_SEC, 0, 0) != 1 || htw_get_info(a, &info))
			_exit(2);
		base[0] = info.user_bytes;
		/* A timer's bytes: one more, and its cancel gives them back. */
		id = htw_arm_id(a, 0, NSEC_PER_SEC, 0, 0);
		if (id < 0 || htw_get_info(a, &info))
			_exit(2);
		timer = info.user_bytes - base[0];
		base[1] = timer;
		if (htw_cancel(a, id) || htw_get_info(a, &info) ||
		    info.user_bytes != base[0])
			_exit(2);
		/* What a file holds beside its timers: its wheel and node. */
		file = (base[0] - 2 * timer) / 2;
		full = base[0] + 98 * timer;
		if (write(done[1], base, sizeof(base)) != sizeof(base) ||
		    read(go[0], &c, 1) != 1)
			_exit(3);

		if (htw_arm_many(a, 59, NSEC_PER_SEC, 0, 0) != 59 ||
		    htw_arm_many(b, 39, NSEC_PER_SEC, 0, 0) != 39)
			_exit(4);
		if (htw_arm_id(b, 0, NSEC_PER_SEC, 0, 0) != -ENOSPC ||
		    htw_arm_id(a, 0, NSEC_PER_SEC, 0, 0) != -ENOSPC)
			_exit(5);
		if (htw_get_info(a, &info) || info.max_user_bytes != full ||
		    info.user_bytes != full || info.nr_timers != 60 ||
		    info.max_user_timers != full / timer ||
		    info.user_timers != full / timer)
			_exit(6);
		/* A cancel gives the room back. */
		if (htw_cancel(a, 1) || htw_arm_id(b, 0, NSEC_PER_SEC, 0, 0) < 0)
			_exit(7);
		/* Hold them while another user arms. */
		if (write(done[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(8);
		/* Closing a file gives back its timers, its wheel and node. */
		close(a);
		if (htw_get_info(b, &info) ||
		    info.user_bytes != full - 59 * timer - file ||
		    htw_arm_many(b, 59, NSEC_PER_SEC, 0, 0) != 59)
			_exit(9);
		_exit(0);
	}
	close(done[1]);
	close(go[0]);
	ASSERT_EQ(sizeof(base), read(done[0], base, sizeof(base)));
	TH_LOG("two files with a timer each count %llu bytes; a timer %llu",
	       base[0], base[1]);
	ASSERT_EQ(0, htw_write_number(HTW_PARAM_USER_BYTES, base[0] + 98 * base[1]));
	ASSERT_EQ(1, write(go[1], &c, 1));
	ASSERT_EQ(1, read(done[0], &c, 1));

	/* Another user is not counted against this one. */
	other = fork();
	ASSERT_LE(0, other);
	if (!other) {
		htw_become(VICTIM);
		fd = htw_open(O_CLOEXEC);
		_exit(fd < 0 || htw_arm_many(fd, 100, NSEC_PER_SEC, 0, 0) != 100);
	}
	EXPECT_EQ(0, reap(other));
	ASSERT_EQ(1, write(go[1], &c, 1));
	EXPECT_EQ(0, reap(pid));
}

/* Whether the kernel runs KASAN, which inflates every slab figure. */
static int kasan(void)
{
	char line[256];
	FILE *f = fopen("/proc/kallsyms", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = !!strstr(line, " kasan_report\n");
	fclose(f);
	return found;
}

/*
 * With the default limit, a user who arms all it may pins about 4% of the
 * machine's memory (as epoll's max_user_watches allows), and no more than
 * 5% however it spreads its timers over files.  What it pins is
 * unreclaimable slab (SUnreclaim): the dentries and inodes the rest of the
 * system reads meanwhile are not the user's.
 */
TEST_F_TIMEOUT(htw, default_user_limit_bounds_the_memory_one_user_pins, 120)
{
	long long total = htw_meminfo("MemTotal"), slab0, slab1;
	struct htw_info info;
	int p[2], fd;
	__u64 held;
	pid_t pid;
	long armed;

	fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, htw_get_info(fd, &info));
	close(fd);
	ASSERT_LT(0, total);

	ASSERT_EQ(0, pipe(p));
	slab0 = htw_meminfo("SUnreclaim");
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fds[8], i;

		close(p[0]);
		htw_become(NOBODY);
		armed = 0;
		for (i = 0; i < 8; i++) {
			long n;

			fds[i] = htw_open(O_CLOEXEC);
			if (fds[i] < 0)
				_exit(1);
			n = htw_arm_many(fds[i], info.max_user_timers / 4,
					 3600 * NSEC_PER_SEC, 0, 0);
			if (n < 0 && n != -ENOSPC)
				_exit(3);
			if (n > 0)
				armed += n;
		}
		/* What the account holds: timers, wheels and id nodes. */
		if (htw_get_info(fds[0], &info))
			_exit(4);
		held = info.user_bytes;
		if (write(p[1], &armed, sizeof(armed)) != sizeof(armed) ||
		    write(p[1], &held, sizeof(held)) != sizeof(held))
			_exit(2);
		pause();
		_exit(0);
	}
	close(p[1]);
	ASSERT_EQ(sizeof(armed), read(p[0], &armed, sizeof(armed)));
	ASSERT_EQ(sizeof(held), read(p[0], &held, sizeof(held)));
	slab1 = htw_meminfo("SUnreclaim");
	kill(pid, SIGKILL);
	reap(pid);
	close(p[0]);

	TH_LOG("uid %d armed %ld timers (limit %llu bytes, %u timers) in 8 files:",
	       NOBODY, armed, (unsigned long long)info.max_user_bytes,
	       info.max_user_timers);
	TH_LOG("unreclaimable slab +%lld KiB of %lld MiB, %.2f%%",
	       (slab1 - slab0) / 1024,
	       total >> 20, 100.0 * (slab1 - slab0) / total);
	/* Full, to within the node and timer the last arm would have needed. */
	EXPECT_GE(held + 1024, info.max_user_bytes);
	EXPECT_LE(held, info.max_user_bytes);
	EXPECT_LT(info.max_user_timers * 17 / 20, armed);
	/* KASAN's redzones and quarantine triple what slab memory costs. */
	if (kasan()) {
		TH_LOG("a KASAN kernel: its slab figure bounds nothing");
		return;
	}
	EXPECT_LE((slab1 - slab0) * 20, total);
}

struct modify_loop {
	int fd;
	__u32 id;
	int stop;
	long rounds;
};

static void *modify_loop(void *arg)
{
	struct modify_loop *m = arg;

	while (!__atomic_load_n(&m->stop, __ATOMIC_RELAXED)) {
		if (htw_modify_id(m->fd, m->id, 0, 3600 * NSEC_PER_SEC, 0))
			return (void *)1;
		m->rounds++;
	}
	return NULL;
}

/*
 * An edge-triggered, non-blocking reader beside a thread that keeps the
 * file busy with ioctls: every wake-up finds its event (read() never says
 * EAGAIN while one is queued), and none is lost.
 */
TEST_F_TIMEOUT(htw, nonblocking_edge_triggered_reader_beside_busy_ioctls, 120)
{
	struct epoll_event ee = { .events = EPOLLIN | EPOLLET };
	struct modify_loop m = {};
	struct htw_event ev[4];
	int fd, ep, i, n, eagain = 0, lost = 0;
	pthread_t thread;
	void *res;

	fd = open(HTW_DEV, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee));
	m.fd = fd;
	m.id = htw_arm_id(fd, 0, 3600 * NSEC_PER_SEC, 0, 0);
	ASSERT_LT(0, (long)m.id);
	ASSERT_EQ(0, pthread_create(&thread, NULL, modify_loop, &m));

	for (i = 0; i < 2000; i++) {
		ASSERT_LT(0, htw_arm_id(fd, HTW_TIMER_ABSTIME, 0, 0, i));
		if (epoll_wait(ep, &ee, 1, HTW_WAIT_MS) != 1) {
			lost++;
			break;
		}
		n = htw_read_events(fd, ev, 4);
		if (n == -EAGAIN) {
			eagain++;
			continue;
		}
		ASSERT_LE(1, n);
		EXPECT_EQ(i, ev[n - 1].user_data);
		/* Drain to EAGAIN, as an edge-triggered reader must. */
		EXPECT_EQ(-EAGAIN, htw_read_events(fd, ev, 4));
	}
	__atomic_store_n(&m.stop, 1, __ATOMIC_RELAXED);
	ASSERT_EQ(0, pthread_join(thread, &res));
	EXPECT_EQ(NULL, res);
	TH_LOG("%d rounds, %ld modifies meanwhile", i, m.rounds);
	TH_LOG("%d EAGAIN with an event queued, %d lost wake-ups", eagain, lost);
	EXPECT_EQ(0, eagain);
	EXPECT_EQ(0, lost);
	close(ep);
	close(fd);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
