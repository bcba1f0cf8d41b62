// SPDX-License-Identifier: GPL-2.0
/*
 * A file's expiry work is done by the processes that read it: a wheel's
 * hrtimer only marks it due and wakes the file's waiters, once per expiry.
 *
 * What decides each case is what happened (wakes, events made, events
 * lost), never how fast: the lateness of the events, the time a killed
 * reader took to die and the softirq time an unread file cost are printed,
 * as the measures of it.  A case that needs the kernel's work held at one
 * point (a read's copy-out, a batch's write of an id) is held there by
 * userfaultfd, and what the kernel shows (fdinfo, a task's state and
 * context switches) tells that it got there; kernels without userfaultfd
 * (the rig's UML ones) skip those cases.  The test runs as root; the
 * processes that watch a file run as nobody.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <linux/userfaultfd.h>

#include "kselftest_harness.h"
#include "htw_user.h"
#include "../../tools/htw_procstat.h"
#include "../../tools/htw_sleeper.h"

#define MS			NSEC_PER_MSEC
#define NOBODY			65534

#define NR_WATCHES		20000
#define WATCHES_EACH		4000
#define NR_BURST		1024
#define NR_UNREAD		100000
#define NR_FILES		64
#define PER_FILE		4096
#define NR_KILLED		100000U
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

/* What a burst cost the file: its wheels' wakes, and its waiters' wakes. */
struct burst_cost {
	long long wakes, wakeups, deferred;
};

/*
 * A burst of NR_BURST timers due together in @fd, read by this process;
 * -1 if an event was lost or early.  Lateness and a sleeper's hold-off
 * meanwhile go to @what's log.
 */
static int burst(struct __test_metadata *_metadata, int fd, const char *what,
		 struct burst_cost *cost)
{
	struct htw_sleeper s;
	__u64 expires, late, last, held;
	int rc;

	cost->wakes = -htw_fdinfo_value(fd, "wakes");
	cost->wakeups = -htw_fdinfo_value(fd, "wakeups");
	cost->deferred = -htw_fdinfo_value(fd, "deferred_wakeups");
	expires = htw_now(CLOCK_MONOTONIC) + 300 * MS;
	if (htw_arm_many(fd, NR_BURST, expires, 0, HTW_TIMER_ABSTIME) !=
	    NR_BURST)
		return -1;
	if (htw_sleeper_start(&s))
		return -1;
	rc = read_burst(fd, NR_BURST, expires, &late, &last);
	held = htw_sleeper_stop(&s);
	if (rc)
		return -1;
	TH_LOG("%s: the latest event %llu us late, the last read %llu us",
	       what, late / 1000, last / 1000);
	TH_LOG("%s: after the expiry; a 1 ms sleeper held off %llu us", what,
	       held / 1000);
	cost->wakes += htw_fdinfo_value(fd, "wakes");
	cost->wakeups += htw_fdinfo_value(fd, "wakeups");
	cost->deferred += htw_fdinfo_value(fd, "deferred_wakeups");
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
	TH_LOG("%lld of the waiters' wakes went on in process context",
	       loud.deferred);
	/*
	 * A few expiries of the wheel, and a wake-up for each, and for each
	 * batch a poller or a read made and left: far fewer than the timers.
	 */
	EXPECT_GE(4, loud.wakes);
	EXPECT_LE(1, loud.wakeups);
	EXPECT_GE(NR_BURST / 16, loud.wakeups);
	/*
	 * 20,000 items are more than one hold of the file's lock wakes: each
	 * wake of them went on in process context, out of the softirq; a
	 * file nobody watches wakes its few waiters where it is.
	 */
	EXPECT_EQ(0, quiet.deferred);
	EXPECT_LE(1, loud.deferred);
	EXPECT_GE(loud.wakeups, loud.deferred);
	close(fd);
}

/* CPU time in softirq so far, in clock ticks, from /proc/stat; or 0. */
static unsigned long long softirq_ticks(void)
{
	unsigned long long t[HTW_CPU_TIMES];

	return htw_cpu_times(t) > HTW_CPU_SOFTIRQ ? t[HTW_CPU_SOFTIRQ] : 0;
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
	struct htw_sleeper s;
	__u64 expires, mine, got_at, late, last, held;
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
	ASSERT_EQ(0, htw_sleeper_start(&s));

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
	held = htw_sleeper_stop(&s);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	close(p[0]);
	close(pfd.fd);
	TH_LOG("%d files x %d timers of another user due at one instant%s:",
	       files, PER_FILE, lead < 100 * MS ? ", while being armed" : "");
	TH_LOG("a timer of this user's read %llu us after its expiry (found %llu us after),",
	       (got_at - mine) / 1000, (ev.fired - mine) / 1000);
	TH_LOG("a 1 ms sleeper on the CPU held off %llu us at most", held / 1000);
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

/* Wait until @fd's fdinfo reads at least @value for @key; what it reads. */
static long long fdinfo_reaches(int fd, const char *key, long long value)
{
	long long v = htw_fdinfo_value(fd, key);
	int tries;

	for (tries = 0; tries < HTW_WAIT_MS && v < value; tries++) {
		usleep(1000);
		v = htw_fdinfo_value(fd, key);
	}
	return v;
}

/*
 * A mark that finds nothing due (the due timer moved away again before
 * any run) leaves the wheel armed for its next timer, which wakes a
 * poller, whatever ioctl came between.  The mark is awaited: a timer made
 * due at once, the file told (one wake of the wheel, one of the waiters,
 * in fdinfo), and nothing runs the wheel meanwhile (nobody reads or
 * polls).  Then one batch arms the next timer and moves the due one ten
 * seconds away again; it ends long before the next one's bucket starts,
 * so the look at the marks it may have made stale finds the wheel marked
 * with nothing due.
 */
TEST_F(owner, needless_mark_leaves_the_wheel_armed)
{
	struct pollfd pfd = { .events = POLLIN };
	struct htw_op ops[2] = {};
	struct htw_info info;
	struct htw_event ev;
	__u64 span, next;
	long a;

	pfd.fd = htw_open(O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, pfd.fd);
	ASSERT_EQ(0, htw_get_info(pfd.fd, &info));
	/* A bucket of level 1; the next timer goes there, a quarter in. */
	span = (__u64)info.wheel_size * info.tick_ns;
	a = htw_arm_id(pfd.fd, 0, 10 * NSEC_PER_SEC, 0, 1);
	ASSERT_LT(0, a);
	ASSERT_EQ(0, htw_modify_id(pfd.fd, a, HTW_TIMER_ABSTIME, 0, 0));
	ASSERT_EQ(1, fdinfo_reaches(pfd.fd, "wakeups", 1));
	ASSERT_EQ(1, htw_fdinfo_value(pfd.fd, "wakes"));

	next = htw_now(CLOCK_MONOTONIC) + span * info.wheel_size / 4;
	ops[0] = (struct htw_op){ .op = HTW_OP_ARM,
		.spec = { .flags = HTW_TIMER_ABSTIME, .expires = next } };
	ops[1] = (struct htw_op){ .op = HTW_OP_MODIFY,
		.spec = { .id = a, .expires = 10 * NSEC_PER_SEC, .user_data = 1 } };
	ASSERT_EQ(2, htw_batch(pfd.fd, ops, 2));
	ASSERT_EQ(0, ops[0].result);
	ASSERT_EQ(0, ops[1].result);
	/*
	 * Its bucket starts less than a span before it: past that, the look
	 * may have found the wheel due, and the mark not needless.
	 */
	ASSERT_LT(htw_now(CLOCK_MONOTONIC) + span, next);

	EXPECT_EQ(-ENOENT, htw_cancel(pfd.fd, 0x7fffffff));
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	ASSERT_EQ(1, htw_read_events(pfd.fd, &ev, 1));
	EXPECT_EQ(ops[0].spec.id, ev.id);
	/* It came by a wake of the wheel, armed again by the look. */
	EXPECT_LT(1, htw_fdinfo_value(pfd.fd, "wakes"));
	EXPECT_EQ(0, htw_cancel(pfd.fd, a));
	close(pfd.fd);
}

/*
 * A userfaultfd of this process over the @len bytes at @addr, in @mode:
 * UFFDIO_REGISTER_MODE_MISSING over pages never touched, or
 * UFFDIO_REGISTER_MODE_WP over pages present, which it write-protects.  A
 * copy the kernel makes there waits, holding whatever it holds, until this
 * process lets it go or the copier is killed: the point where a case must
 * stand still.  Return the descriptor, which must stay open, or -errno:
 * -ENOSYS from a kernel without userfaultfd (the rig's UML kernels),
 * -EINVAL for write protection where it has none.
 */
static int uffd_watch(void *addr, size_t len, __u64 mode)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)addr, .len = len },
		.mode = mode,
	};
	struct uffdio_writeprotect wp = {
		.range = reg.range,
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};
	int uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK), err;

	if (uffd < 0)
		return -errno;
	if (ioctl(uffd, UFFDIO_API, &api) ||
	    ioctl(uffd, UFFDIO_REGISTER, &reg) ||
	    (mode == UFFDIO_REGISTER_MODE_WP &&
	     ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))) {
		err = -errno;
		close(uffd);
		return err;
	}
	return uffd;
}

/*
 * Wait for a write to a page @uffd protects; the page's address, or 0 if
 * none came in time.
 */
static __u64 uffd_write_fault(int uffd)
{
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	struct uffd_msg msg;

	if (poll(&pfd, 1, HTW_WAIT_MS) != 1 ||
	    read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT ||
	    !(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP))
		return 0;
	return msg.arg.pagefault.address & ~(__u64)(sysconf(_SC_PAGESIZE) - 1);
}

/* Whether task @tid sleeps, as it does blocked in read() or in a fault. */
static bool task_sleeps(pid_t tid)
{
	char state = htw_task_state(tid);

	return state == 'S' || state == 'D';
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Events the killed reader copies out before its copy waits: a multiple of
 * the 8 a read takes off the queue at a time, so that the copy that waits
 * has whole events out before it and the next ones in flight.
 */
#define NR_COPIED		4096U

/*
 * The killed reader: a read into NR_COPIED events' room in @copied, memory
 * it shares with the test, then into a page of its own that userfaultfd
 * watches and nobody fills, where the copy of the next events waits until
 * the kill.  Whether userfaultfd watches the page, an errno or 0, goes to
 * @report first.
 */
static void killed_reader(int fd, struct htw_event *copied, int report)
{
	size_t ps = sysconf(_SC_PAGESIZE);
	void *page = mmap(NULL, ps, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec iov[2] = {
		{ .iov_base = copied, .iov_len = NR_COPIED * sizeof(*copied) },
		{ .iov_base = page, .iov_len = ps },
	};
	int uffd = page == MAP_FAILED ? -ENOMEM :
		   uffd_watch(page, ps, UFFDIO_REGISTER_MODE_MISSING);
	int err = uffd < 0 ? -uffd : 0;

	if (write(report, &err, sizeof(err)) != sizeof(err) || err)
		_exit(1);
	_exit(readv(fd, iov, 2) < 0 ? 2 : 3);
}

/*
 * Wait until task @tid sleeps while @fd's fdinfo reads @value for @key;
 * false if it does not in time, or the task is gone.
 */
static bool sleeps_with(pid_t tid, int fd, const char *key, long long value)
{
	char state;
	int tries;

	for (tries = 0; tries < HTW_WAIT_MS; tries++) {
		state = htw_task_state(tid);
		if (!state || state == 'Z')
			return false;
		if (htw_fdinfo_value(fd, key) == value && task_sleeps(tid))
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * A reader killed while events of its read are in flight (taken off the
 * queue, not yet copied out) dies, and loses none: those it copied out
 * are in memory it shares with this process, the rest, given back,
 * queued or still due, are read here, each event once.  The kill comes
 * while the reader's copy waits on a page userfaultfd watches, after
 * NR_COPIED events: the reader sleeps with their timers released (fdinfo's
 * timers), which it does there and nowhere else.
 */
TEST_F_TIMEOUT(owner, killed_reader_loses_no_event, 600)
{
	struct pollfd pfd = { .events = POLLIN };
	size_t size = NR_COPIED * sizeof(struct htw_event);
	struct htw_event *copied, *ev;
	unsigned int got = 0, i;
	int report[2], status, err, r;
	bool waited;
	__u32 *ids;
	__u64 t;
	pid_t pid;

	pfd.fd = htw_open(O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, pfd.fd);
	copied = mmap(NULL, size, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, copied);
	/* In memory: no other page makes the copy wait. */
	memset(copied, 0, size);
	ids = calloc(NR_KILLED, sizeof(*ids));
	ev = calloc(4096, sizeof(*ev));
	ASSERT_NE(NULL, ids);
	ASSERT_NE(NULL, ev);
	ASSERT_EQ(NR_KILLED, htw_arm_many(pfd.fd, NR_KILLED, 0, 0,
					  HTW_TIMER_ABSTIME));
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));

	ASSERT_EQ(0, pipe2(report, O_CLOEXEC));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		killed_reader(pfd.fd, copied, report[1]);
	ASSERT_EQ((ssize_t)sizeof(err), read(report[0], &err, sizeof(err)));
	if (err) {
		waitpid(pid, NULL, 0);
		SKIP(return, "userfaultfd cannot hold the reader's copy: %s",
		     strerror(err));
	}
	waited = sleeps_with(pid, pfd.fd, "timers", NR_KILLED - NR_COPIED);
	/* Killed whatever it did: nothing else ends a copy that waits. */
	t = htw_now(CLOCK_MONOTONIC);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	t = htw_now(CLOCK_MONOTONIC) - t;
	ASSERT_TRUE(waited) TH_LOG("the reader's copy never waited on its page");
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	for (i = 0; i < NR_COPIED && copied[i].id; i++)
		ids[got++] = copied[i].id;
	TH_LOG("the reader killed in its copy, %u events out: dead %llu us after the kill",
	       got, t / 1000);
	EXPECT_EQ(NR_COPIED, got);
	while (got < NR_KILLED) {
		r = htw_read_events(pfd.fd, ev, NR_KILLED - got < 4096 ?
						NR_KILLED - got : 4096);
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
	free(ev);
	free(ids);
	munmap(copied, size);
	close(report[0]);
	close(report[1]);
	close(pfd.fd);
}

/*
 * Readers blocked in read() on one file: threads that read one event each
 * (a read that a signal ends is counted, and made again).  Which of them
 * left their sleep is told by their voluntary context switches, which
 * each sleep moves.
 */
#define NR_READERS		8

struct turns {
	int fd;
	pid_t tid[NR_READERS];
	long long switches[NR_READERS];
	int done[NR_READERS];
	int blocked, got, eintr, errors;
};

static struct turns turns;

static void on_signal(int sig)
{
}

static void *turn_reader(void *arg)
{
	long i = (long)arg;
	struct htw_event ev;
	ssize_t r;

	__atomic_store_n(&turns.tid[i], syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&turns.blocked, 1, __ATOMIC_SEQ_CST);
	while ((r = read(turns.fd, &ev, sizeof(ev))) < 0 && errno == EINTR)
		__atomic_add_fetch(&turns.eintr, 1, __ATOMIC_SEQ_CST);
	if (r == sizeof(ev))
		__atomic_add_fetch(&turns.got, 1, __ATOMIC_SEQ_CST);
	else
		__atomic_add_fetch(&turns.errors, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&turns.done[i], 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Wait until *@count reaches @n; what it reads then. */
static int count_reaches(int *count, int n)
{
	int tries;

	for (tries = 0; tries < HTW_WAIT_MS &&
	     __atomic_load_n(count, __ATOMIC_SEQ_CST) < n; tries++)
		usleep(1000);
	return __atomic_load_n(count, __ATOMIC_SEQ_CST);
}

static bool reader_done(int i)
{
	return __atomic_load_n(&turns.done[i], __ATOMIC_SEQ_CST);
}

static long long reader_switches(int i)
{
	return htw_task_status(turns.tid[i], "voluntary_ctxt_switches");
}

/* Wait until the readers not done sleep; false if they do not, in time. */
static bool readers_asleep(void)
{
	int tries, i, awake;

	for (tries = 0; tries < HTW_WAIT_MS; tries++) {
		awake = 0;
		for (i = 0; i < NR_READERS; i++)
			awake += !reader_done(i) && !task_sleeps(turns.tid[i]);
		if (!awake)
			return true;
		usleep(1000);
	}
	return false;
}

/* Note each reader's switches, to tell later which left their sleep. */
static void readers_note(void)
{
	int i;

	for (i = 0; i < NR_READERS; i++)
		turns.switches[i] = reader_switches(i);
}

/*
 * Wait until a reader not done, other than @but, has left its sleep since
 * readers_note() and every reader not done, other than @but, sleeps (one
 * woken and still running has not counted a switch yet); return how many
 * left their sleep, the first in *@who, or 0 if none did in time.
 */
static int readers_woken(int but, int *who)
{
	int tries, i, woken, awake;

	for (tries = 0; tries < HTW_WAIT_MS; tries++) {
		woken = 0;
		awake = 0;
		for (i = 0; i < NR_READERS; i++) {
			if (i == but || reader_done(i))
				continue;
			/* Woken and not asleep again: not yet counted. */
			awake += !task_sleeps(turns.tid[i]);
			if (reader_switches(i) == turns.switches[i])
				continue;
			if (!woken++)
				*who = i;
		}
		if (woken && !awake)
			return woken;
		usleep(1000);
	}
	return 0;
}

/* Start the readers of @fd, and wait until each sleeps in its read. */
static void readers_start(struct __test_metadata *_metadata, int fd,
			  pthread_t *thread)
{
	long i;

	memset(&turns, 0, sizeof(turns));
	turns.fd = fd;
	for (i = 0; i < NR_READERS; i++)
		ASSERT_EQ(0, pthread_create(&thread[i], NULL, turn_reader,
					    (void *)i));
	ASSERT_EQ(NR_READERS, count_reaches(&turns.blocked, NR_READERS));
	ASSERT_TRUE(readers_asleep());
	readers_note();
}

/*
 * One expiry wakes one of the readers blocked in read() on a file: the
 * others never leave their sleep (a herd would wake every one, to find
 * nothing and sleep again).  Then timers for all the others come due at
 * once, and each gets its event, as the reader before it, returning with
 * events left, passes the turn on.
 */
TEST_F(owner, one_expiry_wakes_one_blocked_reader)
{
	pthread_t thread[NR_READERS];
	int fd, i, woken = 0;

	fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, fd);
	readers_start(_metadata, fd, thread);

	ASSERT_LT(0, htw_arm_id(fd, 0, 10 * MS, 0, 0));
	ASSERT_EQ(1, count_reaches(&turns.got, 1));
	ASSERT_TRUE(readers_asleep());
	for (i = 0; i < NR_READERS; i++)
		woken += !reader_done(i) &&
			 reader_switches(i) != turns.switches[i];
	TH_LOG("one expiry, %d blocked readers: %d others woken", NR_READERS,
	       woken);
	EXPECT_EQ(0, woken);

	ASSERT_EQ(NR_READERS - 1, htw_arm_many(fd, NR_READERS - 1, 0, 0,
					       HTW_TIMER_ABSTIME));
	ASSERT_EQ(NR_READERS, count_reaches(&turns.got, NR_READERS))
		TH_LOG("readers asleep with events queued: a turn was lost");
	for (i = 0; i < NR_READERS; i++)
		pthread_join(thread[i], NULL);
	EXPECT_EQ(0, turns.errors);
	close(fd);
}

/* A batch of NR_READERS arms, made by a thread of its own. */
struct holder {
	pthread_t thread;
	int fd;
	struct htw_op *ops;
	long ret;
};

static void *holder_fn(void *arg)
{
	struct holder *h = arg;

	h->ret = htw_batch(h->fd, h->ops, NR_READERS);
	return NULL;
}

/*
 * Readers blocked in read() on one file take turns: an expiry wakes one,
 * and each, as it returns, however it ends, wakes the next while work is
 * left.  The turn that decides is one a signal ends.  A batch arms the
 * readers' timers, due at once, and holds the file while it writes the
 * last one's id, to a page userfaultfd write-protects: the reader their
 * expiry wakes waits for the file, and there a signal ends its read.
 * While the batch holds the file, nothing but that reader passing its turn
 * on can wake another: exactly one must leave its sleep.  Once the batch
 * ends, every reader gets an event (the interrupted one reads again).
 */
TEST_F_TIMEOUT(owner, blocked_readers_take_turns, 600)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct uffdio_writeprotect unprotect = {};
	size_t ps = sysconf(_SC_PAGESIZE);
	pthread_t thread[NR_READERS];
	struct holder h = {};
	int uffd, i, woken = -1, next = -1;
	char *pages;

	/* No SA_RESTART: a signal ends a blocked read with EINTR. */
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	pages = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, pages);
	/* All on the first page, but the last arm's spec, where its id goes. */
	h.ops = (struct htw_op *)(pages + ps - offsetof(struct htw_op, spec)) -
		(NR_READERS - 1);
	for (i = 0; i < NR_READERS; i++)
		h.ops[i] = (struct htw_op){ .op = HTW_OP_ARM,
			.spec = { .flags = HTW_TIMER_ABSTIME } };
	uffd = uffd_watch(pages + ps, ps, UFFDIO_REGISTER_MODE_WP);
	if (uffd < 0)
		SKIP(return, "userfaultfd cannot write-protect a page: %s",
		     strerror(-uffd));
	h.fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, h.fd);
	readers_start(_metadata, h.fd, thread);

	ASSERT_EQ(0, pthread_create(&h.thread, NULL, holder_fn, &h));
	ASSERT_EQ((uintptr_t)(pages + ps), uffd_write_fault(uffd));
	EXPECT_EQ(NR_READERS - 1, htw_fdinfo_value(h.fd, "timers"));
	ASSERT_EQ(1, readers_woken(-1, &woken));
	EXPECT_EQ(1, htw_fdinfo_value(h.fd, "wakes"));

	readers_note();
	ASSERT_EQ(0, syscall(SYS_tgkill, getpid(), turns.tid[woken], SIGUSR1));
	ASSERT_EQ(1, count_reaches(&turns.eintr, 1));
	ASSERT_EQ(1, readers_woken(woken, &next))
		TH_LOG("a turn a signal ended was not passed on");
	TH_LOG("reader %d woken by the expiry; its read ended by a signal, reader %d by the turn",
	       woken, next);

	unprotect.range.start = (uintptr_t)(pages + ps);
	unprotect.range.len = ps;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_WRITEPROTECT, &unprotect));
	pthread_join(h.thread, NULL);
	EXPECT_EQ(NR_READERS, h.ret);
	ASSERT_EQ(NR_READERS, count_reaches(&turns.got, NR_READERS))
		TH_LOG("readers asleep with events queued: a turn was lost");
	for (i = 0; i < NR_READERS; i++)
		pthread_join(thread[i], NULL);
	EXPECT_EQ(0, turns.errors);
	EXPECT_EQ(1, turns.eintr);
	close(h.fd);
	close(uffd);
	munmap(pages, 2 * ps);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
