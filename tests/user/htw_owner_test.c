// SPDX-License-Identifier: GPL-2.0
/*
 * A file's expiry work is done by the processes that read it: a wheel's
 * hrtimer only marks it due and wakes the file's waiters, once per expiry.
 *
 * What decides each case is what happened (wakes, events made, events
 * lost), never how fast: the lateness of the events, the time a killed
 * reader took to die and the softirq time an unread file cost are printed,
 * as the measures of it.  The test runs as root; the processes that watch
 * a file run as nobody.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define MS			NSEC_PER_MSEC
#define NOBODY			65534

#define NR_WATCHES		20000
#define WATCHES_EACH		4000
#define NR_BURST		1024
#define NR_UNREAD		100000
#define NR_FILES		64
#define PER_FILE		4096
#define NR_KILLED		100000
#define MANY_FILES		160

/* Room for the long cases' timers; the limit put back after. */
FIXTURE(owner) {
	long long user_limit;
};

FIXTURE_SETUP(owner)
{
	self->user_limit = htw_limit_save(_metadata, MANY_FILES * PER_FILE + 4 * NR_UNREAD);
}

FIXTURE_TEARDOWN(owner)
{
	htw_limit_restore(self->user_limit);
}

/*
 * Read @n events of timers due at @expires, waiting in poll(); each must
 * come once (ids unique), none early.  *@late is the latest @fired -
 * @expires, *@last when the last event was read, after @expires.
 */
static int read_burst(int fd, unsigned int n, __u64 expires, __u64 *late,
		      __u64 *last)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct htw_event *ev = calloc(n, sizeof(*ev));
	unsigned int got = 0, i;
	int r;

	*late = 0;
	if (!ev)
		return -1;
	while (got < n) {
		if (poll(&pfd, 1, HTW_WAIT_MS) != 1)
			break;
		r = htw_read_events(fd, ev + got, n - got);
		if (r < 0 && r != -EAGAIN)
			break;
		for (i = got; r > 0 && i < got + r; i++) {
			if (ev[i].expires != expires || ev[i].fired < expires)
				goto out;
			if (ev[i].fired - expires > *late)
				*late = ev[i].fired - expires;
		}
		got += r > 0 ? r : 0;
	}
	*last = htw_now(CLOCK_MONOTONIC) - expires;
out:
	free(ev);
	return got == n ? 0 : -1;
}

/* A sleeper of 1 ms steps: the most any step overslept, while @stop is 0. */
struct sleeper {
	pthread_t thread;
	int stop;
	__u64 worst;
};

static void *sleeper_fn(void *arg)
{
	struct timespec ms = { .tv_nsec = MS };
	struct sleeper *s = arg;
	__u64 t, d;

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		t = htw_now(CLOCK_MONOTONIC);
		nanosleep(&ms, NULL);
		d = htw_now(CLOCK_MONOTONIC) - t;
		if (d > MS && d - MS > s->worst)
			s->worst = d - MS;
	}
	return NULL;
}

/* What a burst cost the file: its wheels' wakes, and its waiters' wakes. */
struct burst_cost {
	long long wakes, wakeups;
};

/*
 * A burst of NR_BURST timers due together in @fd, read by this process;
 * -1 if an event was lost or early.  Lateness and a sleeper's hold-off
 * meanwhile go to @what's log.
 */
static int burst(struct __test_metadata *_metadata, int fd, const char *what,
		 struct burst_cost *cost)
{
	struct sleeper s = { .stop = 0 };
	__u64 expires, late, last;
	int rc;

	cost->wakes = -htw_fdinfo_value(fd, "wakes");
	cost->wakeups = -htw_fdinfo_value(fd, "wakeups");
	expires = htw_now(CLOCK_MONOTONIC) + 300 * MS;
	if (htw_arm_many(fd, NR_BURST, expires, 0, HTW_TIMER_ABSTIME) !=
	    NR_BURST)
		return -1;
	if (pthread_create(&s.thread, NULL, sleeper_fn, &s))
		return -1;
	rc = read_burst(fd, NR_BURST, expires, &late, &last);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	pthread_join(s.thread, NULL);
	if (rc)
		return -1;
	TH_LOG("%s: the latest event %llu us late, the last read %llu us",
	       what, late / 1000, last / 1000);
	TH_LOG("%s: after the expiry; a 1 ms sleeper held off %llu us", what,
	       s.worst / 1000);
	cost->wakes += htw_fdinfo_value(fd, "wakes");
	cost->wakeups += htw_fdinfo_value(fd, "wakeups");
	return 0;
}

/*
 * A watcher: @each dups of @fd in one epoll instance, edge-triggered, and
 * the read end of @stop.  Counts the epoll_wait() returns that report the
 * file, until @stop is readable; writes the count to @report.
 */
static void watch(int fd, int each, int ready, int stop, int report)
{
	struct epoll_event ev, *evs = calloc(each + 1, sizeof(*evs));
	struct rlimit rl;
	int ep, i, n, d, returns = 0;
	bool done = false;

	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	htw_become(NOBODY);
	ep = epoll_create1(EPOLL_CLOEXEC);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u32 = UINT32_MAX };
	if (!evs || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, stop, &ev))
		_exit(1);
	for (i = 0; i < each; i++) {
		d = dup(fd);
		ev = (struct epoll_event){ .events = EPOLLIN | EPOLLET,
					   .data.u32 = i };
		if (d < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, d, &ev))
			_exit(2);
	}
	if (write(ready, "r", 1) != 1)
		_exit(3);
	while (!done) {
		n = epoll_wait(ep, evs, each + 1, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(4);
		for (i = 0; i < n; i++)
			done |= evs[i].data.u32 == UINT32_MAX;
		returns += n > (int)done;
	}
	if (write(report, &returns, sizeof(returns)) != sizeof(returns))
		_exit(5);
	_exit(0);
}

/*
 * NR_WATCHES epoll items on one file, in processes of another user (no
 * privilege: dup() within its own descriptor limit), and NR_BURST timers
 * due together.  The file wakes its waiters once per expiry of its wheel
 * (one, and one more per level the timers came down), not once per timer
 * (which made 1,024 x 20,000 wake calls before): a number the design
 * fixes, whatever the host's speed.  How often each watcher's epoll_wait()
 * returned is printed: one wake-up can come back in two returns, if the
 * watcher looks while the wake-up is still going through its 4,000 items.
 * The same burst without the watchers is printed beside it.
 */
TEST_F_TIMEOUT(owner, epoll_watches_are_woken_once_per_expiry, 600)
{
	int ready[2], stop[2], report[2], fd, i, nw, each, returns, most = 0;
	struct burst_cost quiet, loud;
	pid_t pids[64];
	struct rlimit rl;
	char c;

	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	each = rl.rlim_max < WATCHES_EACH + 64 ? (int)rl.rlim_max - 64 :
						  WATCHES_EACH;
	ASSERT_LT(0, each);
	nw = (NR_WATCHES + each - 1) / each;
	ASSERT_GE(64, nw);

	fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, burst(_metadata, fd, "no watches", &quiet));

	ASSERT_EQ(0, pipe2(ready, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(stop, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(report, O_CLOEXEC));
	for (i = 0; i < nw; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i])
			watch(fd, each, ready[1], stop[0], report[1]);
	}
	for (i = 0; i < nw; i++)
		ASSERT_EQ(1, read(ready[0], &c, 1));

	ASSERT_EQ(0, burst(_metadata, fd, "20,000 watches", &loud));
	ASSERT_EQ(1, write(stop[1], "s", 1));
	for (i = 0; i < nw; i++) {
		ASSERT_EQ(sizeof(returns),
			  read(report[0], &returns, sizeof(returns)));
		most = returns > most ? returns : most;
	}
	for (i = 0; i < nw; i++)
		waitpid(pids[i], NULL, 0);
	TH_LOG("%d watchers of %d items: %lld wakes of the wheel, %lld of the waiters",
	       nw, each, loud.wakes, loud.wakeups);
	TH_LOG("(%lld and %lld without them); epoll_wait() returned at most %d times",
	       quiet.wakes, quiet.wakeups, most);
	/*
	 * A few expiries of the wheel, and a wake-up for each, and for each
	 * batch a poller or a read made and left: far fewer than the timers.
	 */
	EXPECT_GE(4, loud.wakes);
	EXPECT_LE(1, loud.wakeups);
	EXPECT_GE(NR_BURST / 16, loud.wakeups);
	close(fd);
}

/* CPU time in softirq so far, in clock ticks, from /proc/stat. */
static unsigned long long softirq_ticks(void)
{
	unsigned long long v[7] = {};
	FILE *f = fopen("/proc/stat", "re");

	if (!f)
		return 0;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
		   &v[2], &v[3], &v[4], &v[5], &v[6]) != 7)
		v[6] = 0;
	fclose(f);
	return v[6];
}

/*
 * The wakes of @fd's wheels, once they have come to rest: each arm on a
 * wheel that is due and not run may bring one more expiry of its hrtimer,
 * and none comes after the last arm's.
 */
static long long settled_wakes(int fd)
{
	long long w, before = -1;
	int i;

	for (i = 0; i < HTW_WAIT_MS / 50; i++) {
		w = htw_fdinfo_value(fd, "wakes");
		if (w > 0 && w == before)
			return w;
		before = w;
		usleep(50 * 1000);
	}
	return -1;
}

/*
 * @files files of @per_file timers each, all due at one instant, that no
 * one reads (nor polls: a poll runs them): once all are armed, due and
 * told so, they make no event and take no wake, however long no one reads
 * them; then a reader gets every event, once.
 */
static void unread(struct __test_metadata *_metadata, int files,
		   int per_file)
{
	long long wakes = 0, wakes2 = 0, queued = 0, w;
	unsigned long long irq;
	__u64 expires, late, last;
	int *fd, i;

	fd = calloc(files, sizeof(*fd));
	ASSERT_NE(NULL, fd);
	expires = htw_now(CLOCK_MONOTONIC) + 200 * MS;
	for (i = 0; i < files; i++) {
		fd[i] = htw_open(O_CLOEXEC);
		ASSERT_LE(0, fd[i]);
		ASSERT_EQ(per_file, htw_arm_many(fd[i], per_file, expires, 0,
						 HTW_TIMER_ABSTIME));
	}
	/* Each file due, and told so. */
	for (i = 0; i < files; i++) {
		w = settled_wakes(fd[i]);
		ASSERT_LT(0, w);
		wakes += w;
	}
	irq = softirq_ticks();
	usleep(500 * 1000);
	irq = softirq_ticks() - irq;
	for (i = 0; i < files; i++) {
		wakes2 += htw_fdinfo_value(fd[i], "wakes");
		queued += htw_fdinfo_value(fd[i], "queued");
	}
	TH_LOG("%d x %d timers due, not read for 500 ms: %lld wakes,", files,
	       per_file, wakes);
	TH_LOG("and %llu ticks of softirq time meanwhile", irq);
	EXPECT_LE(files, wakes);
	EXPECT_EQ(wakes, wakes2);
	EXPECT_EQ(0, queued);
	for (i = 0; i < files; i++) {
		EXPECT_EQ(0, read_burst(fd[i], per_file, expires, &late, &last));
		close(fd[i]);
	}
	free(fd);
}

TEST_F_TIMEOUT(owner, unread_file_takes_no_work, 600)
{
	unread(_metadata, 1, NR_UNREAD);
}

TEST_F_TIMEOUT(owner, unread_files_take_no_work, 600)
{
	unread(_metadata, NR_FILES, PER_FILE);
}

/*
 * Another user's @files files of PER_FILE timers each, all due at one
 * instant, all on this CPU (the case pins itself, and the processes it
 * makes, to CPU 0), and read by their user: a timer of this user's due
 * just after that instant, and a 1 ms sleeper on the CPU.  The expiry
 * work is the reader's, in its own context, preemptible: what the others
 * wait for is their share of the CPU.  With a @lead of a few ms the
 * expiry comes while the files are still being armed.  Whether every
 * event came, once and never early, decides; the lateness of this user's
 * timer and the sleeper's hold-off are printed.
 */
static void many_wheels(struct __test_metadata *_metadata, int files,
			__u64 lead)
{
	struct pollfd pfd = { .events = POLLIN };
	struct sleeper s = { .stop = 0 };
	__u64 expires, mine, got_at, late, last;
	int p[2], i, status, total = -1;
	struct htw_event ev;
	cpu_set_t cpu0;
	pid_t pid;

	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpu0), &cpu0));
	ASSERT_EQ(0, pipe(p));
	pfd.fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, pfd.fd);
	expires = htw_now(CLOCK_MONOTONIC) + lead;
	mine = expires + 5 * MS;
	ASSERT_LT(0, htw_arm_id(pfd.fd, HTW_TIMER_ABSTIME, mine, 0, 0));
	ASSERT_EQ(0, pthread_create(&s.thread, NULL, sleeper_fn, &s));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int *fds = calloc(files, sizeof(*fds)), n = 0;

		htw_become(NOBODY);
		for (i = 0; fds && i < files; i++) {
			fds[i] = htw_open(O_CLOEXEC);
			if (fds[i] < 0 ||
			    htw_arm_many(fds[i], PER_FILE, expires, 0,
					 HTW_TIMER_ABSTIME) != PER_FILE)
				_exit(1);
		}
		for (i = 0; fds && i < files; i++)
			if (!read_burst(fds[i], PER_FILE, expires, &late, &last))
				n += PER_FILE;
		_exit(write(p[1], &n, sizeof(n)) != sizeof(n));
	}
	close(p[1]);
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	ASSERT_EQ(1, htw_read_events(pfd.fd, &ev, 1));
	got_at = htw_now(CLOCK_MONOTONIC);
	EXPECT_EQ(mine, ev.expires);
	EXPECT_LE(mine, ev.fired);
	EXPECT_EQ(sizeof(total), read(p[0], &total, sizeof(total)));
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	pthread_join(s.thread, NULL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	close(p[0]);
	close(pfd.fd);
	TH_LOG("%d files x %d timers of another user due at one instant%s:",
	       files, PER_FILE, lead < 100 * MS ? ", while being armed" : "");
	TH_LOG("a timer of this user's read %llu us after its expiry (found %llu us after),",
	       (got_at - mine) / 1000, (ev.fired - mine) / 1000);
	TH_LOG("a 1 ms sleeper on the CPU held off %llu us at most", s.worst / 1000);
	EXPECT_EQ(files * PER_FILE, total);
}

TEST_F_TIMEOUT(owner, many_wheels_due_at_one_instant, 600)
{
	many_wheels(_metadata, NR_FILES, 300 * MS);
}

TEST_F_TIMEOUT(owner, more_wheels_due_at_one_instant, 600)
{
	many_wheels(_metadata, MANY_FILES, 300 * MS);
}

TEST_F_TIMEOUT(owner, wheels_due_while_being_armed, 600)
{
	many_wheels(_metadata, MANY_FILES, 5 * MS);
}

/*
 * A due timer cancelled before anyone ran it leaves no mark that would
 * keep the wheel's next due timer from waking the file: the next one on
 * the clock wakes a poller.
 */
TEST_F(owner, cancelled_due_timer_leaves_the_next_one_woken)
{
	struct pollfd pfd = { .events = POLLIN };
	struct htw_event ev;
	long a, b;

	pfd.fd = htw_open(O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, pfd.fd);
	a = htw_arm_id(pfd.fd, HTW_TIMER_ABSTIME, 0, 0, 1);
	ASSERT_LT(0, a);
	ASSERT_LT(0, settled_wakes(pfd.fd));
	ASSERT_EQ(0, htw_cancel(pfd.fd, a));
	b = htw_arm_id(pfd.fd, 0, 50 * MS, 0, 2);
	ASSERT_LT(0, b);
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	ASSERT_EQ(1, htw_read_events(pfd.fd, &ev, 1));
	EXPECT_EQ(b, ev.id);
	EXPECT_EQ(2, ev.user_data);
	close(pfd.fd);
}

/*
 * A mark that finds nothing due (the due timer moved away again before
 * any run) leaves the wheel armed for its next timer, which wakes a
 * poller, whatever ioctl came between.
 */
TEST_F(owner, needless_mark_leaves_the_wheel_armed)
{
	struct pollfd pfd = { .events = POLLIN };
	struct htw_op ops[2] = {};
	struct htw_event ev;
	long a, c;

	pfd.fd = htw_open(O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, pfd.fd);
	c = htw_arm_id(pfd.fd, 0, 100 * MS, 0, 3);
	a = htw_arm_id(pfd.fd, 0, 10 * NSEC_PER_SEC, 0, 1);
	ASSERT_LT(0, c);
	ASSERT_LT(0, a);
	/* Due at once, then ten seconds away again, in one batch. */
	ops[0] = (struct htw_op){ .op = HTW_OP_MODIFY,
		.spec = { .id = a, .flags = HTW_TIMER_ABSTIME, .user_data = 1 } };
	ops[1] = (struct htw_op){ .op = HTW_OP_MODIFY,
		.spec = { .id = a, .expires = 10 * NSEC_PER_SEC, .user_data = 1 } };
	ASSERT_EQ(2, htw_batch(pfd.fd, ops, 2));
	ASSERT_EQ(0, ops[0].result);
	ASSERT_EQ(0, ops[1].result);
	usleep(20 * 1000);
	EXPECT_EQ(-ENOENT, htw_cancel(pfd.fd, 0x7fffffff));
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	ASSERT_EQ(1, htw_read_events(pfd.fd, &ev, 1));
	EXPECT_EQ(c, ev.id);
	EXPECT_EQ(0, htw_cancel(pfd.fd, a));
	close(pfd.fd);
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/*
 * A reader killed while its read turns NR_KILLED due timers into events
 * dies, and loses none: what it copied out is in memory it shares with
 * this process, the rest is read here, each event once.
 */
TEST_F_TIMEOUT(owner, killed_reader_loses_no_event, 600)
{
	struct pollfd pfd = { .events = POLLIN };
	size_t size = NR_KILLED * sizeof(struct htw_event);
	unsigned int got = 0, i;
	struct htw_event *ev;
	__u32 *ids;
	int go[2], status, r;
	__u64 t;
	pid_t pid;
	char c;

	pfd.fd = htw_open(O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, pfd.fd);
	ev = mmap(NULL, size, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ev);
	/* In memory: a kill cannot fail a copy half way through an event. */
	memset(ev, 0, size);
	ids = calloc(NR_KILLED, sizeof(*ids));
	ASSERT_NE(NULL, ids);
	ASSERT_EQ(NR_KILLED, htw_arm_many(pfd.fd, NR_KILLED, 0, 0,
					  HTW_TIMER_ABSTIME));
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));

	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (write(go[1], "g", 1) != 1)
			_exit(1);
		_exit(read(pfd.fd, ev, size) < 0);
	}
	ASSERT_EQ(1, read(go[0], &c, 1));
	usleep(20 * 1000);
	t = htw_now(CLOCK_MONOTONIC);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	t = htw_now(CLOCK_MONOTONIC) - t;

	for (i = 0; i < NR_KILLED && ev[i].id; i++)
		ids[got++] = ev[i].id;
	TH_LOG("the reader %s after %llu us, with %u events read",
	       WIFSIGNALED(status) ? "killed" : "done before the kill",
	       t / 1000, got);
	while (got < NR_KILLED) {
		r = htw_read_events(pfd.fd, ev, 4096);
		if (r <= 0)
			break;
		for (i = 0; i < (unsigned int)r; i++)
			ids[got++] = ev[i].id;
	}
	ASSERT_EQ(NR_KILLED, got);
	EXPECT_EQ(-EAGAIN, htw_read_events(pfd.fd, ev, 1));
	qsort(ids, got, sizeof(*ids), cmp_u32);
	for (i = 1; i < got; i++)
		ASSERT_NE(ids[i - 1], ids[i]) TH_LOG("event %u read twice", ids[i]);
	free(ids);
	munmap(ev, size);
	close(pfd.fd);
}

/*
 * Readers blocked in read() on one file take turns.  Each reads one event
 * and returns (a read that a signal interrupts is made again).  One timer's
 * expiry wakes one of them: the others never leave their sleep, their
 * voluntary context switches do not move (a herd would move every one).
 * Then timers for all the others come due at once, while signals
 * interrupt half of them for a while: each reader that returns, however
 * it ends, wakes the next while events are left, so every one gets its
 * event.  The other half are never interrupted: only a turn passed on
 * wakes them, and a turn lost leaves them asleep with events queued, the
 * case waiting in vain.  Meanwhile another thread asks HTW_IOC_INFO over
 * and over, which turns the due timers into events as a read does.
 */
#define NR_READERS		8

struct turns {
	int fd;
	pid_t tid[NR_READERS];
	int done[NR_READERS];
	int blocked, got, errors;
};

static struct turns turns;

static void on_signal(int sig)
{
}

/* HTW_IOC_INFO, over and over, until every reader has its event. */
static void *turn_info(void *arg)
{
	struct htw_info info;

	while (__atomic_load_n(&turns.got, __ATOMIC_SEQ_CST) < NR_READERS)
		if (htw_get_info(turns.fd, &info))
			__atomic_add_fetch(&turns.errors, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void *turn_reader(void *arg)
{
	long i = (long)arg;
	struct htw_event ev;
	ssize_t r;

	turns.tid[i] = syscall(SYS_gettid);
	__atomic_add_fetch(&turns.blocked, 1, __ATOMIC_SEQ_CST);
	do {
		r = read(turns.fd, &ev, sizeof(ev));
	} while (r < 0 && errno == EINTR);
	if (r == sizeof(ev))
		__atomic_add_fetch(&turns.got, 1, __ATOMIC_SEQ_CST);
	else
		__atomic_add_fetch(&turns.errors, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&turns.done[i], 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* A field of a thread's /proc status or stat line, or -1. */
static long long task_value(pid_t tid, const char *file, const char *key)
{
	char path[64], line[256];
	long long v = -1;
	size_t len = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", tid, file);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len))
			v = strtoll(line + len, NULL, 10);
	fclose(f);
	return v;
}

/* Whether thread @tid sleeps (state S), as it does blocked in read(). */
static bool task_sleeps(pid_t tid)
{
	char path[64], line[256], *p;
	bool s = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fgets(line, sizeof(line), f)) {
		p = strrchr(line, ')');
		s = p && p[1] == ' ' && p[2] == 'S';
	}
	fclose(f);
	return s;
}

/* Wait until the readers not done sleep; false if they do not, in time. */
static bool readers_asleep(void)
{
	int tries, i, awake;

	for (tries = 0; tries < HTW_WAIT_MS; tries++) {
		awake = 0;
		for (i = 0; i < NR_READERS; i++)
			awake += !__atomic_load_n(&turns.done[i], __ATOMIC_SEQ_CST) &&
				 !task_sleeps(turns.tid[i]);
		if (!awake)
			return true;
		usleep(1000);
	}
	return false;
}

TEST_F_TIMEOUT(owner, blocked_readers_take_turns, 600)
{
	struct sigaction sa = { .sa_handler = on_signal };
	long long before[NR_READERS], after;
	pthread_t thread[NR_READERS], info;
	int i, moved = 0, tries;
	__u64 expires;

	/* No SA_RESTART: a signal ends a blocked read with EINTR. */
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	memset(&turns, 0, sizeof(turns));
	turns.fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, turns.fd);
	for (i = 0; i < NR_READERS; i++)
		ASSERT_EQ(0, pthread_create(&thread[i], NULL, turn_reader,
					    (void *)(long)i));
	for (tries = 0; tries < HTW_WAIT_MS &&
	     __atomic_load_n(&turns.blocked, __ATOMIC_SEQ_CST) < NR_READERS; tries++)
		usleep(1000);
	ASSERT_TRUE(readers_asleep());
	for (i = 0; i < NR_READERS; i++)
		before[i] = task_value(turns.tid[i], "status",
				       "voluntary_ctxt_switches:");

	/* One expiry: one reader. */
	ASSERT_LT(0, htw_arm_id(turns.fd, 0, 10 * MS, 0, 0));
	for (tries = 0; tries < HTW_WAIT_MS &&
	     __atomic_load_n(&turns.got, __ATOMIC_SEQ_CST) < 1; tries++)
		usleep(1000);
	ASSERT_EQ(1, __atomic_load_n(&turns.got, __ATOMIC_SEQ_CST));
	ASSERT_TRUE(readers_asleep());
	for (i = 0; i < NR_READERS; i++) {
		if (__atomic_load_n(&turns.done[i], __ATOMIC_SEQ_CST))
			continue;
		after = task_value(turns.tid[i], "status",
				   "voluntary_ctxt_switches:");
		moved += after != before[i];
	}
	TH_LOG("one expiry, %d blocked readers: %d others woken",
	       NR_READERS, moved);
	EXPECT_EQ(0, moved);

	/* The others' events at once, their reads interrupted meanwhile. */
	expires = htw_now(CLOCK_MONOTONIC) + 20 * MS;
	ASSERT_EQ(NR_READERS - 1, htw_arm_many(turns.fd, NR_READERS - 1,
					       expires, 0, HTW_TIMER_ABSTIME));
	ASSERT_EQ(0, pthread_create(&info, NULL, turn_info, NULL));
	for (tries = 0; tries < HTW_WAIT_MS &&
	     __atomic_load_n(&turns.got, __ATOMIC_SEQ_CST) < NR_READERS; tries++) {
		i = tries % (NR_READERS / 2);
		if (tries < 100 &&
		    !__atomic_load_n(&turns.done[i], __ATOMIC_SEQ_CST))
			syscall(SYS_tgkill, getpid(), turns.tid[i], SIGUSR1);
		usleep(1000);
	}
	ASSERT_EQ(NR_READERS, __atomic_load_n(&turns.got, __ATOMIC_SEQ_CST))
		TH_LOG("readers asleep with events queued: a turn was lost");
	for (i = 0; i < NR_READERS; i++)
		pthread_join(thread[i], NULL);
	pthread_join(info, NULL);
	EXPECT_EQ(0, turns.errors);
	close(turns.fd);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
