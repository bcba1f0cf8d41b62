// SPDX-License-Identifier: GPL-2.0
/*
 * htw_server - a TCP server whose timers run on htw, libevent, io_uring or
 * timerfd, driven over loopback by a bounded load generator of its own:
 * what a server's CPU does when its timers move to htw, measured end to end
 *
 *   htw_server --way WAY [--conns N] [--rate N] [--requests N]
 *              [--seconds N] [--warmup-ms N] [--idle-ms N] [--timeout-ms N]
 *       one run, judged: its "server" line says what happened, and the
 *       program exits 1 if anything it must never do happened (as root,
 *       it raises its own file limits and, for good, the system's:
 *       file-max, somaxconn and tcp_max_syn_backlog, as a server's
 *       administrator would)
 *   htw_server --bench [--max N] [--rounds N]
 *       the benchmark: every way at 10,000 and 100,000 connections (those
 *       up to --max), in --rounds rounds (3), the ways one after the other
 *       in each, and their medians, for "make bench"
 *
 * WAY is htw, libevent, io_uring, timerfd, or none (no timers at all: the
 * baseline that tells what the timers of the others cost).
 *
 * The server.  One thread, one process; it answers 16-byte requests on N
 * connections with 16-byte answers.  Each connection has an idle timeout
 * (--idle-ms), pushed later by every request, that closes it; each request
 * has a timeout of its own (--timeout-ms), started when the request is
 * read and stopped when its answer is written, at the end of the turn of
 * the loop that read it, as a server answers once its backend has.  One
 * request in 100 is marked to stall: the server never answers it, and its
 * timeout answers "timed out" instead.  The clock is read once a turn, as
 * event loops do, and deadlines are that clock plus the duration.
 *
 * The ways, each as its documentation would have a server use it:
 * - htw: an epoll loop.  The idle timeouts are ring timers, a slot per
 *   connection, armed at accept; a request pushes its connection's by a
 *   store (htw_ring_extend()).  The request timeouts are libhtw's
 *   (htw_timeout_start() and htw_timeout_stop()), on a second file.  Both
 *   files are in the epoll set; queued arms reach the kernel before the
 *   loop sleeps.
 * - libevent: libevent's loop (epoll, EVENT_BASE_FLAG_PRECISE_TIMER, so
 *   that it keeps CLOCK_MONOTONIC to the microsecond as the others do): a
 *   persistent read event per connection, and two timer events on common
 *   timeouts, idle and request: event_add() pushes the idle one, and
 *   starts and event_del() stops the request's.  The answers go out from
 *   an event activated by the turn's first callback, which runs after the
 *   turn's others.
 * - io_uring: an epoll loop, with one IORING_OP_TIMEOUT per connection
 *   (absolute, CLOCK_MONOTONIC) set to the earlier of its two deadlines
 *   and moved by IORING_TIMEOUT_UPDATE, with IOSQE_CQE_SKIP_SUCCESS: two
 *   entries a request and no completion, submitted once a turn; the ring's
 *   file is in the epoll set.
 * - timerfd: an epoll loop, a timerfd per connection, in the set, set to
 *   the earlier of its two deadlines by timerfd_settime(): two calls a
 *   request.
 * - none: an epoll loop without timers; no request stalls.
 *
 * The load generator is a second process, forked by the first, on the
 * other CPU.  It opens the N connections (from 32 loopback addresses, for
 * more than one address's worth of ports), and one in ten of them
 * sleeps: it never sends, and must be closed at its idle deadline.  Once
 * the server has accepted them all, it sends --rate requests a second
 * over the others, round robin, each to a connection with none in flight
 * and not within a quarter of the idle timeout of its deadline (a request
 * there would race with the close: that connection is left to close),
 * until it has sent --requests or --seconds have passed since the
 * measure's start, whichever comes first, marking every hundredth request
 * to stall.  The measure starts --warmup-ms after the load (0 in a judged
 * run; in the benchmark, a whole idle timeout, so that every connection's
 * idle deadline has come once and been pushed: the steady state, where
 * htw's kernel pays for each deadline a store moved when the old one
 * comes).  The rate is fixed, not as fast as the server answers: a
 * server's CPU per request depends on how many requests each turn of its
 * loop finds, and at a fixed rate every way's loop finds the same (unless
 * it cannot keep up; at most 1,024 are in flight).  It judges every
 * answer: the right sequence number, "timed out" for the stalled and only
 * them, and never sooner than --timeout-ms after its send.  When the load
 * ends, it waits out its requests in flight; then, in a judged run, it
 * waits until the server has closed every connection for idleness (none
 * sooner than --idle-ms after its last send, or its connect), and in the
 * benchmark it closes them itself.  Then it hands its counts to the
 * server, which checks them against its own.
 *
 * What the server measures: its own CPU time (getrusage(): user and
 * system) from the measure's start to the load's end, as the generator
 * marks them through a socket of their own: CPU ns per request, and
 * requests per CPU second; and how often its loop slept (voluntary context
 * switches), which tells where a way's CPU went.  The timers' share is
 * that less none's CPU per request, over the way's.  Accuracy: a timeout
 * is early if the server, having read the clock after the way reported it,
 * finds the clock before the deadline the way was given (the clock is read
 * again after each batch of reports, for a timer may fire after the turn's
 * clock was read, and a later call report it); lateness is the clock then
 * less the deadline (p99 and most, of the request timeouts and of the idle
 * closes apart).  htw's ring reports the deadline it fired for, and libhtw
 * the timeout's: both exactly.  timerfd fires for the deadline last set.
 * io_uring can fire for a deadline that an update replaced after it fired
 * (the update then fails unseen), so the server can hold it only to the
 * earliest deadline given since it was armed: for io_uring the generator's
 * judgment, which holds every way to its deadlines from outside, is the
 * one that counts.  libevent keeps microseconds, and is judged in them.
 *
 * What must never happen, and makes a judged run exit 1: an early timeout,
 * a request timeout reported after its answer, an answer of the wrong
 * kind, a connection closed sooner than its idle deadline or left open,
 * and counts of the two sides that differ.
 *
 * Output: one line per run,
 *
 *   server way=W conns=N requests=R answered=A timed_out=T ... key=value
 *
 * and, for --bench, medians over the rounds, for rig/bench.py and
 * rig/plot.sh:
 *
 *   bench user server_rps_per_cpu_vs_<way>_<N> <htw> <way> req/cpu-s
 *   plot server <way> <N> <requests per CPU second>
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <liburing.h>
#include <event2/event.h>

#include "libhtw.h"
#include "htw_bench_common.h"

/* The exit status of a run the kernel cannot make, as kselftest's skip. */
#define EXIT_SKIP	4

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

enum way { WAY_HTW, WAY_LIBEVENT, WAY_URING, WAY_TIMERFD, WAY_NONE, NR_WAYS };

static const char * const way_names[NR_WAYS] = {
	"htw", "libevent", "io_uring", "timerfd", "none",
};

/* The wire: a request and its answer, 16 bytes each. */
enum { REQ_NORMAL = 1, REQ_STALL = 2, ANS_OK = 'A', ANS_TIMEOUT = 'T' };

struct msg {
	__u32 seq;
	__u32 kind;
	__u64 pad;
};

struct config {
	enum way way;
	unsigned int conns;
	unsigned int requests;
	unsigned int seconds;
	unsigned int idle_ms;
	unsigned int timeout_ms;
	unsigned int rate;
	/* the load before the measure starts (the benchmark's steady state) */
	unsigned int warmup_ms;
	/* every stall_every-th request stalls; every sleep_every-th conn sleeps */
	unsigned int stall_every;
	unsigned int sleep_every;
	/* the generator closes the connections at the end (the benchmark) */
	int close_at_end;
};

/* What the generator hands the server at the end. */
struct gen_stats {
	__u64 connected;
	__u64 sent;
	__u64 stalls_sent;
	__u64 answers_ok;
	__u64 answers_timeout;
	__u64 wrong_answers;	/* wrong sequence or kind */
	__u64 early_answers;	/* "timed out" sooner than the timeout */
	__u64 idle_closed;	/* closed by the server */
	__u64 early_closes;	/* closed sooner than the idle timeout */
	__u64 closed_in_flight;	/* closed with a request in flight */
	__u64 left_open;	/* still open when it gave up waiting */
	__u64 starved;		/* closed for idleness before any request */
	__u64 load_ns;
};

/* Control messages from the generator. */
enum { CTL_READY = 'A', CTL_START = 'S', CTL_END = 'E', CTL_STATS = 'R' };

struct ctl {
	__u32 what;
	__u32 pad;
	struct gen_stats stats;
};

/* Lateness samples, ns. */
struct samples {
	__u64 *v;
	size_t nr;
	size_t size;
};

static void sample(struct samples *s, __u64 v)
{
	if (s->nr == s->size) {
		s->size = s->size ? 2 * s->size : 1024;
		s->v = realloc(s->v, s->size * sizeof(*s->v));
		if (!s->v)
			fail("out of memory");
	}
	s->v[s->nr++] = v;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* The @pct percentile, or the most if @pct is 100; 0 with no samples. */
static __u64 percentile(struct samples *s, unsigned int pct)
{
	if (!s->nr)
		return 0;
	qsort(s->v, s->nr, sizeof(*s->v), cmp_u64);
	return s->v[(s->nr - 1) * pct / 100];
}

struct conn {
	int fd;
	bool open;
	bool in_flight;
	bool stalled;
	bool queued;
	__u8 rlen;
	__u8 rbuf[sizeof(struct msg)];
	__u32 seq;
	__u32 gen;
	__u64 idle_deadline;
	__u64 req_deadline;
	/* htw: the request's timeout */
	__u64 handle;
	/* timerfd, io_uring: the deadline the timer was last set to */
	__u64 set_deadline;
	/* io_uring: the earliest deadline given since the timeout's arm */
	__u64 min_deadline;
	/* io_uring: a timeout of this generation is in the kernel's hands */
	bool armed;
	int tfd;
	struct event *rev, *iev, *qev;
	struct __kernel_timespec ts;
};

struct srv_stats {
	__u64 accepted;
	__u64 requests;
	__u64 answered;
	__u64 timed_out;
	__u64 idle_closed;
	__u64 peer_closed;
	__u64 early;
	__u64 after_answer;
	__u64 rearmed;
	__u64 load_requests;
	__u64 load_cpu_ns;
	__u64 load_sleeps;
	__u64 load_wall_ns;
	struct samples req_late;
	struct samples idle_late;
};

struct server {
	struct config cfg;
	struct conn *conns;
	unsigned int nconns;
	unsigned int open;
	int ep;
	int lfd;
	int ctl;
	__u64 now;
	__u64 idle_ns;
	__u64 timeout_ns;
	__u32 *answers;
	unsigned int nanswers;
	struct srv_stats st;
	/* the load's start, as the generator marked it */
	__u64 start_cpu;
	__u64 start_sleeps;
	__u64 start_wall;
	__u64 start_requests;
	bool got_stats;
	struct gen_stats gen;
	/* htw */
	int idle_fd;
	int req_fd;
	struct htw_ring ring;
	bool ring_queued;
	struct htw_timeouts *to;
	int cls;
	__u64 tick_ns;
	/* io_uring */
	struct io_uring uring;
	bool uring_queued;
	/* libevent */
	struct event_base *base;
	struct event *flush_ev, *accept_ev, *ctl_ev;
	const struct timeval *idle_tv, *req_tv, *retry_tv;
	bool fresh;
};

/* epoll tags: the kind in the top byte, a connection's index below. */
enum { TAG_CONN, TAG_LISTEN, TAG_CTL, TAG_IDLE, TAG_REQ, TAG_TIMERFD, TAG_URING };
#define TAG(kind, idx)	((__u64)(kind) << 56 | (idx))

/* The process's CPU time (user and system), and how often it slept. */
static void read_usage(__u64 *cpu_ns, __u64 *sleeps)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*sleeps = ru.ru_nvcsw;
	*cpu_ns = ((__u64)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * NSEC_PER_SEC +
		  ((__u64)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * NSEC_PER_USEC;
}

/*
 * Run on the @nth CPU this process may use (0 or 1), so that the server
 * and the generator each have one of their own; with a single CPU, both
 * share it.
 */
static void pin(int nth)
{
	cpu_set_t allowed, set;
	int cpu, seen = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed) || seen++ < nth)
			continue;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
		return;
	}
}

static void epoll_add(int ep, int fd, __u64 tag)
{
	struct epoll_event ee = { .events = EPOLLIN, .data.u64 = tag };

	check_errno(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee), "epoll_ctl");
}

/* A message to the other side: the server's or the generator's. */
static void ctl_send(int fd, __u32 what, const struct gen_stats *st)
{
	struct ctl m = { .what = what };

	if (st)
		m.stats = *st;
	if (write(fd, &m, sizeof(m)) != sizeof(m))
		die("write to the other side");
}

/* ---- the ways: what each does when a connection's timers change ---- */

/* The deadline a single-timer way (timerfd, io_uring) sets: the earlier. */
static __u64 target(const struct conn *c)
{
	return c->in_flight ? c->req_deadline : c->idle_deadline;
}

static __u64 uring_data(const struct server *s, const struct conn *c)
{
	return (__u64)c->gen << 32 | (__u64)(c - s->conns);
}

/* Set @c's one timer to target(): a timerfd, or an io_uring timeout. */
static void retarget(struct server *s, struct conn *c)
{
	__u64 t = target(c);
	struct io_uring_sqe *sqe;

	if (t == c->set_deadline)
		return;
	c->set_deadline = t;
	if (s->cfg.way == WAY_TIMERFD) {
		struct itimerspec its = { .it_value = ts_of(t) };

		check_errno(timerfd_settime(c->tfd, TFD_TIMER_ABSTIME, &its, NULL),
			    "timerfd_settime");
		return;
	}
	/* The entry reads the timespec when it is submitted. */
	c->ts = kts_of(t);
	sqe = uring_get_sqe(&s->uring);
	if (c->armed) {
		io_uring_prep_timeout_update(sqe, &c->ts, uring_data(s, c),
					     IORING_TIMEOUT_ABS);
		/* A failed update (the timeout fired) completes: ignored. */
		io_uring_sqe_set_data64(sqe, ~0ULL);
		sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
		if (t < c->min_deadline)
			c->min_deadline = t;
	} else {
		c->gen++;
		io_uring_prep_timeout(sqe, &c->ts, 0, IORING_TIMEOUT_ABS);
		io_uring_sqe_set_data64(sqe, uring_data(s, c));
		c->armed = true;
		c->min_deadline = t;
	}
	s->uring_queued = true;
}

static void htw_arm_idle(struct server *s, struct conn *c)
{
	__u32 slot = c - s->conns;
	int ret;

	ret = htw_ring_arm(&s->ring, slot, ++c->gen, c->idle_deadline);
	if (ret == -EAGAIN) {
		check(htw_ring_submit(&s->ring, 0), "htw_ring_submit");
		ret = htw_ring_arm(&s->ring, slot, c->gen, c->idle_deadline);
	}
	check(ret, "htw_ring_arm");
	s->ring_queued = true;
}

static void way_opened(struct server *s, struct conn *c)
{
	switch (s->cfg.way) {
	case WAY_HTW:
		htw_arm_idle(s, c);
		break;
	case WAY_LIBEVENT:
		check(event_add(c->iev, s->idle_tv), "event_add");
		break;
	case WAY_URING:
	case WAY_TIMERFD:
		retarget(s, c);
		break;
	case WAY_NONE:
	case NR_WAYS:
		break;
	}
}

/* A request was read: the idle deadline moved, the request's began. */
static void way_request(struct server *s, struct conn *c)
{
	switch (s->cfg.way) {
	case WAY_HTW:
		htw_ring_extend(&s->ring, c - s->conns, c->idle_deadline);
		check(htw_timeout_start(s->to, s->cls, s->now, c - s->conns,
					&c->handle), "htw_timeout_start");
		break;
	case WAY_LIBEVENT:
		check(event_add(c->iev, s->idle_tv), "event_add");
		check(event_add(c->qev, s->req_tv), "event_add");
		break;
	case WAY_URING:
	case WAY_TIMERFD:
		retarget(s, c);
		break;
	case WAY_NONE:
	case NR_WAYS:
		break;
	}
}

/* The request was answered, or timed out: its timeout is no more. */
static void way_request_done(struct server *s, struct conn *c, bool fired)
{
	switch (s->cfg.way) {
	case WAY_HTW:
		if (!fired)
			check(htw_timeout_stop(s->to, c->handle), "htw_timeout_stop");
		break;
	case WAY_LIBEVENT:
		if (!fired)
			event_del(c->qev);
		break;
	case WAY_URING:
	case WAY_TIMERFD:
		if (c->open)
			retarget(s, c);
		break;
	case WAY_NONE:
	case NR_WAYS:
		break;
	}
}

/* @c is closing: its timers go. */
static void way_closing(struct server *s, struct conn *c, bool idle)
{
	switch (s->cfg.way) {
	case WAY_HTW:
		/* An idle close reaped the slot's completion: it holds nothing. */
		if (!idle)
			htw_ring_extend(&s->ring, c - s->conns, HTW_SLOT_CANCEL);
		if (c->in_flight)
			check(htw_timeout_stop(s->to, c->handle), "htw_timeout_stop");
		break;
	case WAY_LIBEVENT:
		event_free(c->rev);
		event_free(c->iev);
		event_free(c->qev);
		break;
	case WAY_URING:
		/*
		 * Its timeout is left to fire, unheeded: a remove would walk
		 * the ring's list of timeouts, as an update does, and a
		 * connection's index is never used again.
		 */
		break;
	case WAY_TIMERFD:
		close(c->tfd);
		break;
	case WAY_NONE:
	case NR_WAYS:
		break;
	}
}

/* ---- what every way shares: connections, requests, answers ---- */

static void send_msg(struct conn *c, __u32 seq, __u32 kind)
{
	struct msg m = { .seq = seq, .kind = kind };

	ssize_t n = write(c->fd, &m, sizeof(m));

	/* A peer that closed: its end of file is on its way. */
	if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
		return;
	if (n != sizeof(m))
		fail("write of an answer: %s", n < 0 ? strerror(errno) : "short");
}

/* @now less @deadline, or 0 if it is before */
static __u64 late(__u64 now, __u64 deadline)
{
	return now > deadline ? now - deadline : 0;
}

static void conn_close(struct server *s, struct conn *c, bool idle)
{
	if (idle) {
		s->st.idle_closed++;
		sample(&s->st.idle_late, late(s->now, c->idle_deadline));
	} else {
		s->st.peer_closed++;
	}
	way_closing(s, c, idle);
	close(c->fd);
	c->open = false;
	s->open--;
}

/* The request timeout of @c fired, for @deadline: answer "timed out". */
static void request_expired(struct server *s, struct conn *c, __u64 deadline)
{
	if (!c->open)
		return;
	if (!c->in_flight) {
		/* Reported after its answer was written. */
		s->st.after_answer++;
		return;
	}
	if (s->now < deadline)
		s->st.early++;
	sample(&s->st.req_late, late(s->now, c->req_deadline));
	send_msg(c, c->seq, ANS_TIMEOUT);
	c->in_flight = false;
	s->st.timed_out++;
	way_request_done(s, c, true);
}

/*
 * The one timer of @c (timerfd, io_uring) fired; it had been set no later
 * than @floor.  Do what is due, and set it again if the connection lives.
 */
static void timer_fired(struct server *s, struct conn *c, __u64 floor)
{
	if (!c->open)
		return;
	if (s->now < floor)
		s->st.early++;
	c->set_deadline = 0;
	if (!c->in_flight && s->now >= c->idle_deadline) {
		conn_close(s, c, true);
		return;
	}
	/* Else it fired for a deadline since moved later. */
	if (c->in_flight && s->now >= c->req_deadline)
		request_expired(s, c, c->req_deadline);
	else
		s->st.rearmed++;
	retarget(s, c);
}

static void on_request(struct server *s, struct conn *c, const struct msg *m)
{
	if (c->in_flight)
		fail("connection %td: a request while one is in flight",
		     c - s->conns);
	s->st.requests++;
	c->seq = m->seq;
	c->in_flight = true;
	c->stalled = m->kind == REQ_STALL;
	c->idle_deadline = s->now + s->idle_ns;
	c->req_deadline = s->now + s->timeout_ns;
	way_request(s, c);
	if (!c->stalled && !c->queued) {
		c->queued = true;
		s->answers[s->nanswers++] = c - s->conns;
	}
}

/* Read what @c sent; false if it closed. */
static bool conn_input(struct server *s, struct conn *c)
{
	struct msg m;
	ssize_t n;

	for (;;) {
		n = read(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen);
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0) {
			conn_close(s, c, false);
			return false;
		}
		c->rlen += n;
		if (c->rlen < sizeof(m))
			continue;
		memcpy(&m, c->rbuf, sizeof(m));
		c->rlen = 0;
		on_request(s, c, &m);
	}
}

/* The turn's end: its answers go out, and their timeouts stop. */
static void flush_answers(struct server *s)
{
	unsigned int i;
	struct conn *c;

	for (i = 0; i < s->nanswers; i++) {
		c = &s->conns[s->answers[i]];
		c->queued = false;
		if (!c->open || !c->in_flight || c->stalled)
			continue;
		send_msg(c, c->seq, ANS_OK);
		c->in_flight = false;
		s->st.answered++;
		way_request_done(s, c, false);
	}
	s->nanswers = 0;
}

static void libevent_read(evutil_socket_t fd, short what, void *arg);
static void libevent_idle(evutil_socket_t fd, short what, void *arg);
static void libevent_req(evutil_socket_t fd, short what, void *arg);

static void conn_accept(struct server *s)
{
	struct conn *c;
	int fd, one = 1;

	for (;;) {
		fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN)
				return;
			die("accept4");
		}
		if (s->nconns == s->cfg.conns)
			fail("more connections than the generator opens");
		c = &s->conns[s->nconns];
		c->fd = fd;
		c->open = true;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		/*
		 * Connections that came after the turn's clock was read are
		 * accepted too: the clock is read again for each, so that an
		 * idle deadline is never before its connect plus the timeout.
		 */
		s->now = now_ns();
		if (s->base)
			event_base_update_cache_time(s->base);
		c->idle_deadline = s->now + s->idle_ns;
		s->st.accepted++;
		s->open++;
		if (s->cfg.way == WAY_LIBEVENT) {
			c->rev = event_new(s->base, fd, EV_READ | EV_PERSIST,
					   libevent_read, c);
			c->iev = evtimer_new(s->base, libevent_idle, c);
			c->qev = evtimer_new(s->base, libevent_req, c);
			if (!c->rev || !c->iev || !c->qev || event_add(c->rev, NULL))
				fail("event_new");
		} else {
			epoll_add(s->ep, fd, TAG(TAG_CONN, s->nconns));
		}
		if (s->cfg.way == WAY_TIMERFD) {
			c->tfd = timerfd_create(CLOCK_MONOTONIC,
						TFD_NONBLOCK | TFD_CLOEXEC);
			check_errno(c->tfd, "timerfd_create");
			epoll_add(s->ep, c->tfd, TAG(TAG_TIMERFD, s->nconns));
		}
		s->nconns++;
		way_opened(s, c);
		/* All in: the load may start. */
		if (s->nconns == s->cfg.conns)
			ctl_send(s->ctl, CTL_READY, NULL);
	}
}

/* A message of the generator: the load's start or end, or its counts. */
static void ctl_input(struct server *s)
{
	struct ctl m;
	ssize_t n = read(s->ctl, &m, sizeof(m));

	if (n != sizeof(m))
		fail("the load generator died");
	switch (m.what) {
	case CTL_START:
		read_usage(&s->start_cpu, &s->start_sleeps);
		s->start_wall = now_ns();
		s->start_requests = s->st.requests;
		break;
	case CTL_END:
		read_usage(&s->st.load_cpu_ns, &s->st.load_sleeps);
		s->st.load_cpu_ns -= s->start_cpu;
		s->st.load_sleeps -= s->start_sleeps;
		s->st.load_wall_ns = now_ns() - s->start_wall;
		s->st.load_requests = s->st.requests - s->start_requests;
		break;
	case CTL_STATS:
		s->gen = m.stats;
		s->got_stats = true;
		break;
	}
}

/* ---- htw's completions ---- */

static void htw_idle_ready(struct server *s)
{
	struct htw_cqe cqes[64];
	unsigned int i, n;
	struct conn *c;

	check(htw_ring_submit(&s->ring, 0), "htw_ring_submit");
	s->ring_queued = false;
	while ((n = htw_ring_reap(&s->ring, cqes, 64))) {
		/* The timers that ran after the turn's clock was read. */
		s->now = now_ns();
		for (i = 0; i < n; i++) {
			if (cqes[i].slot >= s->nconns)
				fail("a completion of slot %u", cqes[i].slot);
			c = &s->conns[cqes[i].slot];
			if (!c->open || cqes[i].gen != c->gen)
				continue;
			if (cqes[i].res)
				fail("a ring timer's completion: %s",
				     strerror(-cqes[i].res));
			if (s->now < cqes[i].deadline)
				s->st.early++;
			/*
			 * A store that came after the kernel read the slot, or
			 * a request in flight that holds the connection open
			 * until its own timeout: arm again.
			 */
			if (cqes[i].deadline < c->idle_deadline || c->in_flight) {
				s->st.rearmed++;
				if (c->in_flight && c->idle_deadline <= s->now)
					c->idle_deadline = s->now + NSEC_PER_MSEC;
				htw_arm_idle(s, c);
				continue;
			}
			conn_close(s, c, true);
		}
	}
}

static void htw_req_ready(struct server *s)
{
	struct htw_timeout_expiry ex[64];
	struct conn *c;
	int i, n;

	while ((n = htw_timeouts_expired(s->to, ex, 64)) > 0) {
		s->now = now_ns();
		for (i = 0; i < n; i++) {
			if (ex[i].tag >= s->nconns)
				fail("an expiry of connection %llu",
				     (unsigned long long)ex[i].tag);
			c = &s->conns[ex[i].tag];
			/* Not the running timeout: one stopped before. */
			if (c->open && c->in_flight && ex[i].handle != c->handle) {
				s->st.after_answer++;
				continue;
			}
			/* Held to libhtw's deadline, and to the server's own. */
			request_expired(s, c, ex[i].deadline > c->req_deadline ?
					ex[i].deadline : c->req_deadline);
		}
	}
	check(n, "htw_timeouts_expired");
}

static void uring_ready(struct server *s)
{
	struct io_uring_cqe *cqes[64];
	unsigned int i, nr;
	__u64 d;
	struct conn *c;

	while ((nr = io_uring_peek_batch_cqe(&s->uring, cqes, 64))) {
		s->now = now_ns();
		for (i = 0; i < nr; i++) {
			d = io_uring_cqe_get_data64(cqes[i]);
			/* Failed updates and removes: their timeout fired. */
			if (d == ~0ULL)
				continue;
			if ((__u32)d >= s->nconns)
				fail("a completion of %llx", (unsigned long long)d);
			c = &s->conns[(__u32)d];
			if (d >> 32 != c->gen || cqes[i]->res == -ECANCELED)
				continue;
			if (cqes[i]->res != -ETIME)
				fail("an io_uring timeout: %s",
				     strerror(-cqes[i]->res));
			c->armed = false;
			timer_fired(s, c, c->min_deadline);
		}
		io_uring_cq_advance(&s->uring, nr);
	}
}

/* ---- the loops ---- */

/* The kernel has no @what: say so, and exit as a skipped test does. */
static void cannot(const char *what, int err)
{
	printf("# no %s in this kernel: %s\n", what, strerror(-err));
	fflush(stdout);
	exit(EXIT_SKIP);
}

static void way_setup(struct server *s)
{
	struct htw_info info;
	int ret;

	switch (s->cfg.way) {
	case WAY_HTW:
		s->idle_fd = htw_open(O_NONBLOCK | O_CLOEXEC);
		check(s->idle_fd, "htw_open");
		s->req_fd = htw_open(O_NONBLOCK | O_CLOEXEC);
		check(s->req_fd, "htw_open");
		check(htw_get_info(s->idle_fd, &info), "htw_get_info");
		s->tick_ns = info.tick_ns;
		check(htw_ring_map(s->idle_fd, s->cfg.conns, 4096, &s->ring),
		      "htw_ring_map");
		/* One request a connection at most, and room to spare. */
		check(htw_timeouts_create(s->req_fd, s->cfg.conns + s->cfg.conns / 4 + 64,
					  &s->to), "htw_timeouts_create");
		s->cls = htw_timeouts_class(s->to, s->timeout_ns);
		check(s->cls, "htw_timeouts_class");
		epoll_add(s->ep, s->idle_fd, TAG(TAG_IDLE, 0));
		epoll_add(s->ep, s->req_fd, TAG(TAG_REQ, 0));
		break;
	case WAY_URING: {
		struct io_uring_params p = {
			.flags = IORING_SETUP_CQSIZE, .cq_entries = 65536,
		};

		ret = io_uring_queue_init_params(4096, &s->uring, &p);
		/*
		 * Short of memory or files is a failure; anything else says
		 * that this kernel has no io_uring for us (none built in,
		 * kernel.io_uring_disabled).
		 */
		if (ret == -ENOMEM || ret == -EMFILE || ret == -ENFILE)
			check(ret, "io_uring_queue_init_params");
		if (ret)
			cannot("io_uring", ret);
		epoll_add(s->ep, s->uring.ring_fd, TAG(TAG_URING, 0));
		break;
	}
	default:
		break;
	}
}

static void serve_epoll(struct server *s)
{
	struct epoll_event evs[256];
	int i, n;
	__u64 tag;
	__u32 idx;

	while (s->open || !s->got_stats) {
		if (s->ring_queued) {
			check(htw_ring_submit(&s->ring, 0), "htw_ring_submit");
			s->ring_queued = false;
		}
		if (s->to)
			check(htw_timeouts_submit(s->to), "htw_timeouts_submit");
		if (s->uring_queued) {
			check(io_uring_submit(&s->uring), "io_uring_submit");
			s->uring_queued = false;
		}
		n = epoll_wait(s->ep, evs, 256, -1);
		if (n < 0 && errno == EINTR)
			continue;
		check_errno(n, "epoll_wait");
		s->now = now_ns();
		for (i = 0; i < n; i++) {
			tag = evs[i].data.u64;
			idx = (__u32)tag;
			switch (tag >> 56) {
			case TAG_CONN:
				if (s->conns[idx].open)
					conn_input(s, &s->conns[idx]);
				break;
			case TAG_LISTEN:
				conn_accept(s);
				break;
			case TAG_CTL:
				ctl_input(s);
				break;
			case TAG_IDLE:
				htw_idle_ready(s);
				break;
			case TAG_REQ:
				htw_req_ready(s);
				break;
			case TAG_TIMERFD: {
				struct conn *c = &s->conns[idx];
				__u64 ticks;

				if (!c->open ||
				    read(c->tfd, &ticks, sizeof(ticks)) != sizeof(ticks))
					break;
				s->now = now_ns();
				timer_fired(s, c, c->set_deadline);
				break;
			}
			case TAG_URING:
				uring_ready(s);
				break;
			}
		}
		flush_answers(s);
	}
}

/*
 * libevent: the first callback of a turn reads the clock, and only then
 * has libevent read its own, so that libevent's deadlines are never
 * before the server's; it activates the event that writes the turn's
 * answers, which runs after the turn's other callbacks.
 */
static struct server *ev_server;

static void turn_clock(struct server *s)
{
	if (s->fresh)
		return;
	s->now = now_ns();
	event_base_update_cache_time(s->base);
	s->fresh = true;
	event_active(s->flush_ev, EV_TIMEOUT, 0);
}

static void libevent_flush(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;

	flush_answers(s);
	s->fresh = false;
	if (!s->open && s->got_stats)
		event_base_loopbreak(s->base);
}

static void libevent_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	turn_clock(ev_server);
	conn_input(ev_server, c);
}

static void libevent_idle(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = ev_server;
	struct conn *c = arg;

	turn_clock(s);
	/* libevent keeps microseconds. */
	if (s->now / NSEC_PER_USEC < c->idle_deadline / NSEC_PER_USEC)
		s->st.early++;
	if (c->in_flight) {
		/* Its request's timeout comes first, and keeps it open. */
		s->st.rearmed++;
		check(event_add(c->iev, s->retry_tv), "event_add");
		return;
	}
	conn_close(s, c, true);
}

static void libevent_req(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = ev_server;
	struct conn *c = arg;

	turn_clock(s);
	/* Judged in microseconds: request_expired() judges in ns. */
	request_expired(s, c, c->req_deadline / NSEC_PER_USEC * NSEC_PER_USEC);
}

static void libevent_accept(evutil_socket_t fd, short what, void *arg)
{
	turn_clock(arg);
	conn_accept(arg);
}

static void libevent_ctl(evutil_socket_t fd, short what, void *arg)
{
	turn_clock(arg);
	ctl_input(arg);
}

static void serve_libevent(struct server *s)
{
	struct event_config *cfg = event_config_new();
	struct timeval idle = tv_of(s->idle_ns), req = tv_of(s->timeout_ns);
	struct timeval retry = tv_of(NSEC_PER_MSEC);

	if (!cfg || event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER))
		fail("event_config");
	s->base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	if (!s->base)
		fail("event_base_new_with_config");
	ev_server = s;
	s->idle_tv = event_base_init_common_timeout(s->base, &idle);
	s->req_tv = event_base_init_common_timeout(s->base, &req);
	s->retry_tv = event_base_init_common_timeout(s->base, &retry);
	s->flush_ev = event_new(s->base, -1, 0, libevent_flush, s);
	s->accept_ev = event_new(s->base, s->lfd, EV_READ | EV_PERSIST,
				 libevent_accept, s);
	s->ctl_ev = event_new(s->base, s->ctl, EV_READ | EV_PERSIST,
			      libevent_ctl, s);
	if (!s->idle_tv || !s->req_tv || !s->retry_tv || !s->flush_ev ||
	    !s->accept_ev || !s->ctl_ev || event_add(s->accept_ev, NULL) ||
	    event_add(s->ctl_ev, NULL))
		fail("libevent's setup");
	if (event_base_dispatch(s->base) < 0)
		fail("event_base_dispatch");
}

/* ---- the load generator ---- */

enum { G_READY, G_WAITING, G_SLEEPER, G_CLOSED };

/* Most requests in flight: a server that cannot keep up is not drowned. */
#define GEN_IN_FLIGHT	1024

struct gconn {
	int fd;
	__u8 state;
	__u8 rlen;
	__u8 stalled;
	__u8 sent_any;
	__u8 rbuf[sizeof(struct msg)];
	__u32 seq;
	__u64 sent_ns;		/* the request in flight's send */
	__u64 last_ns;		/* the last send, or the connect */
};

struct gen {
	const struct config *cfg;
	struct gconn *conns;
	int ep;
	int ctl;
	__u32 next;		/* round robin */
	__u32 seq;
	unsigned int in_flight;
	unsigned int open;
	struct gen_stats st;
};

/*
 * The addresses the generator connects from, 127.0.0.1 on: the port is
 * picked at the connect (IP_BIND_ADDRESS_NO_PORT), so that each address
 * has all the ports of its own, and the kernel picks even ports first
 * (for bind() to find the odd ones): an address that used more than half
 * of its range makes every connect walk all the even ports.  32 of them
 * keep 100,000 connections within a quarter of the even ports of each.
 */
#define GEN_ADDRS	32

/* Open the connections, from the GEN_ADDRS addresses in turn. */
static void gen_connect(struct gen *g, unsigned short port)
{
	struct sockaddr_in to = {
		.sin_family = AF_INET, .sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	struct sockaddr_in from = { .sin_family = AF_INET };
	unsigned int i;
	struct gconn *k;
	int one = 1;

	for (i = 0; i < g->cfg->conns; i++) {
		k = &g->conns[i];
		k->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		check_errno(k->fd, "socket");
		from.sin_addr.s_addr = htonl(INADDR_LOOPBACK + i % GEN_ADDRS);
		setsockopt(k->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
		check_errno(bind(k->fd, (struct sockaddr *)&from, sizeof(from)), "bind");
		/* Before the connect: the server's clock reads later. */
		k->last_ns = now_ns();
		check_errno(connect(k->fd, (struct sockaddr *)&to, sizeof(to)), "connect");
		setsockopt(k->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		check_errno(fcntl(k->fd, F_SETFL, O_NONBLOCK), "fcntl");
		k->state = i % g->cfg->sleep_every ? G_READY : G_SLEEPER;
		epoll_add(g->ep, k->fd, i);
		g->st.connected++;
		g->open++;
	}
}

static void gen_send(struct gen *g, struct gconn *k)
{
	struct msg m = { .seq = ++g->seq, .kind = REQ_NORMAL };

	if (g->cfg->stall_every && g->seq % g->cfg->stall_every == 0) {
		m.kind = REQ_STALL;
		g->st.stalls_sent++;
	}
	k->seq = m.seq;
	k->stalled = m.kind == REQ_STALL;
	k->sent_ns = now_ns();
	k->last_ns = k->sent_ns;
	if (write(k->fd, &m, sizeof(m)) != sizeof(m))
		die("write of a request");
	k->state = G_WAITING;
	k->sent_any = 1;
	g->in_flight++;
	g->st.sent++;
}

static void gen_closed(struct gen *g, struct gconn *k, __u64 now)
{
	if (k->state == G_WAITING) {
		g->st.closed_in_flight++;
		g->in_flight--;
	}
	g->st.idle_closed++;
	if (now < k->last_ns + (__u64)g->cfg->idle_ms * NSEC_PER_MSEC)
		g->st.early_closes++;
	/* A connection the load never reached: the run did not test it. */
	if (k->state == G_READY && !k->sent_any)
		g->st.starved++;
	close(k->fd);
	k->state = G_CLOSED;
	g->open--;
}

static void gen_input(struct gen *g, struct gconn *k, __u64 now)
{
	struct msg m;
	ssize_t n;

	for (;;) {
		n = read(k->fd, k->rbuf + k->rlen, sizeof(k->rbuf) - k->rlen);
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			gen_closed(g, k, now);
			return;
		}
		k->rlen += n;
		if (k->rlen < sizeof(m))
			continue;
		memcpy(&m, k->rbuf, sizeof(m));
		k->rlen = 0;
		if (k->state != G_WAITING || m.seq != k->seq ||
		    m.kind != (k->stalled ? ANS_TIMEOUT : ANS_OK)) {
			g->st.wrong_answers++;
			continue;
		}
		if (m.kind == ANS_TIMEOUT) {
			g->st.answers_timeout++;
			if (now < k->sent_ns + (__u64)g->cfg->timeout_ms * NSEC_PER_MSEC)
				g->st.early_answers++;
		} else {
			g->st.answers_ok++;
		}
		k->state = G_READY;
		g->in_flight--;
	}
}

/* Wait up to @ms for answers and closes. */
static void gen_poll(struct gen *g, int ms)
{
	struct epoll_event evs[256];
	int i, n;
	__u64 now;

	n = epoll_wait(g->ep, evs, 256, ms);
	if (n < 0 && errno == EINTR)
		return;
	check_errno(n, "epoll_wait");
	now = now_ns();
	for (i = 0; i < n; i++)
		if (g->conns[evs[i].data.u64].state != G_CLOSED)
			gen_input(g, &g->conns[evs[i].data.u64], now);
}

static void gen_main(const struct config *cfg, unsigned short port, int ctl)
{
	struct gen g = { .cfg = cfg, .ctl = ctl };
	__u64 idle_ns = (__u64)cfg->idle_ms * NSEC_PER_MSEC;
	__u64 start, mark, end, give_up, due, now;
	unsigned int i, scanned;
	struct pollfd pfd;
	struct gconn *k;
	struct ctl m;

	g.conns = zalloc(cfg->conns * sizeof(*g.conns));
	g.ep = epoll_create1(EPOLL_CLOEXEC);
	check_errno(g.ep, "epoll_create1");
	gen_connect(&g, port);
	/*
	 * The load starts once the server has accepted every connection;
	 * one lost on the way must not hang the run.
	 */
	pfd = (struct pollfd){ .fd = ctl, .events = POLLIN };
	if (poll(&pfd, 1, (30 + cfg->conns / 1000) * 1000) != 1 ||
	    read(ctl, &m, sizeof(m)) != sizeof(m) || m.what != CTL_READY)
		fail("the server did not take the %u connections", cfg->conns);

	start = now_ns();
	mark = start + (__u64)cfg->warmup_ms * NSEC_PER_MSEC;
	end = mark + (__u64)cfg->seconds * NSEC_PER_SEC;
	if (!cfg->warmup_ms)
		ctl_send(ctl, CTL_START, NULL);
	while (g.st.sent < cfg->requests && (now = now_ns()) < end) {
		if (cfg->warmup_ms && mark && now >= mark) {
			ctl_send(ctl, CTL_START, NULL);
			mark = 0;
		}
		/* What the rate has sent by now, round robin over those ready. */
		due = (now - start) * cfg->rate / NSEC_PER_SEC;
		if (due > cfg->requests)
			due = cfg->requests;
		for (scanned = 0; g.st.sent < due && g.in_flight < GEN_IN_FLIGHT &&
		     scanned < cfg->conns; scanned++) {
			k = &g.conns[g.next];
			g.next = (g.next + 1) % cfg->conns;
			/*
			 * Not to a connection about to close for idleness:
			 * a request there would race with the server's close.
			 * It is left to close.
			 */
			if (k->state == G_READY &&
			    now + idle_ns / 4 < k->last_ns + idle_ns)
				gen_send(&g, k);
		}
		if (!g.open)
			break;
		gen_poll(&g, 1);
	}
	/* A load that ended before the measure began measured nothing. */
	if (cfg->warmup_ms && mark)
		ctl_send(ctl, CTL_START, NULL);
	/* The requests in flight: their answers come within the timeout. */
	give_up = now_ns() + (__u64)cfg->timeout_ms * NSEC_PER_MSEC + 5 * NSEC_PER_SEC;
	while (g.in_flight && now_ns() < give_up)
		gen_poll(&g, 10);
	g.st.load_ns = now_ns() - start;
	ctl_send(ctl, CTL_END, NULL);

	if (cfg->close_at_end) {
		for (i = 0; i < cfg->conns; i++) {
			if (g.conns[i].state == G_CLOSED)
				continue;
			close(g.conns[i].fd);
			g.conns[i].state = G_CLOSED;
		}
	} else {
		/* Every connection closes within its idle timeout from now. */
		give_up = now_ns() + (__u64)cfg->idle_ms * NSEC_PER_MSEC + 10 * NSEC_PER_SEC;
		while (g.open && now_ns() < give_up)
			gen_poll(&g, 100);
		g.st.left_open = g.open;
	}
	ctl_send(ctl, CTL_STATS, &g.st);
	_exit(0);
}

/* ---- one run ---- */

/* Room for @n more files of this process. */
static void room_for(unsigned int n)
{
	make_room(n + 64);
	raise_limit("/proc/sys/fs/file-max", 4UL * n + 65536);
	raise_limit("/proc/sys/net/core/somaxconn", 65535);
	raise_limit("/proc/sys/net/ipv4/tcp_max_syn_backlog", 65535);
}

/* What a run hands the benchmark. */
struct result {
	__u64 load_requests;
	__u64 load_cpu_ns;
	__u64 load_sleeps;
	__u64 early;
	__u64 req_p99;
	__u64 idle_p99;
	__u64 idle_max;
	__u64 idle_closed;
	__u64 tick_ns;
	bool ok;
};

static bool judge(const struct server *s, char *why, size_t len)
{
	const struct srv_stats *st = &s->st;
	const struct gen_stats *g = &s->gen;

	why[0] = 0;
#define WRONG(cond, text)						\
	do {								\
		if ((cond) && !why[0])					\
			snprintf(why, len, "%s", text);			\
	} while (0)
	WRONG(st->early, "a timeout reported before its deadline");
	WRONG(st->after_answer, "a request timeout reported after its answer");
	WRONG(g->wrong_answers, "an answer of the wrong kind or sequence");
	WRONG(g->early_answers, "a timeout answered sooner than the timeout");
	WRONG(g->early_closes, "a connection closed before its idle deadline");
	WRONG(g->closed_in_flight, "a connection closed with a request in flight");
	WRONG(g->left_open, "connections left open");
	WRONG(g->starved, "connections closed before the load reached them: a longer --idle-ms");
	WRONG(!st->load_requests, "no request in the measure");
	WRONG(g->connected != st->accepted, "connections: the counts differ");
	WRONG(g->sent != st->requests, "requests: the counts differ");
	WRONG(g->answers_ok != st->answered, "answers: the counts differ");
	WRONG(g->answers_timeout != st->timed_out, "timeouts: the counts differ");
	WRONG(g->stalls_sent != st->timed_out,
	      "stalled requests and timeouts differ");
	WRONG(!s->cfg.close_at_end && g->idle_closed != st->idle_closed,
	      "idle closes: the counts differ");
	WRONG(!s->cfg.close_at_end && st->idle_closed != s->cfg.conns &&
	      s->cfg.way != WAY_NONE, "not every connection closed for idleness");
#undef WRONG
	return !why[0];
}

/* The run's "server" line: key=value, for the test and for people. */
static void print_line(struct server *s, bool ok)
{
	const struct srv_stats *st = &s->st;
	const struct gen_stats *g = &s->gen;
	const struct {
		const char *key;
		__u64 v;
	} f[] = {
		{ "conns", s->cfg.conns },
		{ "requests", st->requests },
		{ "answered", st->answered },
		{ "timed_out", st->timed_out },
		{ "idle_closed", st->idle_closed },
		{ "peer_closed", st->peer_closed },
		{ "early", st->early },
		{ "after_answer", st->after_answer },
		{ "rearmed", st->rearmed },
		{ "gen_sent", g->sent },
		{ "gen_ok", g->answers_ok },
		{ "gen_timeouts", g->answers_timeout },
		{ "gen_stalls", g->stalls_sent },
		{ "gen_closed", g->idle_closed },
		{ "gen_wrong", g->wrong_answers },
		{ "gen_early", g->early_answers + g->early_closes },
		{ "gen_in_flight_closed", g->closed_in_flight },
		{ "gen_left_open", g->left_open },
		{ "gen_starved", g->starved },
		{ "load_requests", st->load_requests },
		{ "load_ms", st->load_wall_ns / NSEC_PER_MSEC },
		{ "cpu_ns_per_request",
		  st->load_requests ? st->load_cpu_ns / st->load_requests : 0 },
		{ "requests_per_cpu_s",
		  st->load_cpu_ns ? st->load_requests * NSEC_PER_SEC / st->load_cpu_ns : 0 },
		{ "sleeps_per_1000_requests",
		  st->load_requests ? st->load_sleeps * 1000 / st->load_requests : 0 },
		{ "req_late_p99_us", percentile(&s->st.req_late, 99) / NSEC_PER_USEC },
		{ "req_late_max_us", percentile(&s->st.req_late, 100) / NSEC_PER_USEC },
		{ "idle_late_p99_us", percentile(&s->st.idle_late, 99) / NSEC_PER_USEC },
		{ "idle_late_max_us", percentile(&s->st.idle_late, 100) / NSEC_PER_USEC },
		{ "tick_us", s->tick_ns / NSEC_PER_USEC },
	};
	unsigned int i;

	printf("server way=%s", way_names[s->cfg.way]);
	for (i = 0; i < ARRAY_SIZE(f); i++)
		printf(" %s=%llu", f[i].key, (unsigned long long)f[i].v);
	printf(" verdict=%s\n", ok ? "ok" : "FAIL");
}

static void serve(const struct config *cfg, int out)
{
	struct server s = { .cfg = *cfg, .idle_fd = -1, .req_fd = -1 };
	struct sockaddr_in sa = {
		.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	socklen_t salen = sizeof(sa);
	int sv[2], one = 1;
	struct result r = {};
	char why[128];
	pid_t pid, server;

	s.idle_ns = (__u64)cfg->idle_ms * NSEC_PER_MSEC;
	s.timeout_ns = (__u64)cfg->timeout_ms * NSEC_PER_MSEC;
	s.conns = zalloc(cfg->conns * sizeof(*s.conns));
	s.answers = zalloc(cfg->conns * sizeof(*s.answers));
	s.lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	/*
	 * Short of files or memory is a failure; any other error says that
	 * this kernel has no IPv4 (UML's has no networking at all).
	 */
	if (s.lfd < 0 && errno != EMFILE && errno != ENFILE && errno != ENOMEM &&
	    errno != ENOBUFS)
		cannot("IPv4", -errno);
	check_errno(s.lfd, "socket");
	setsockopt(s.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	check_errno(bind(s.lfd, (struct sockaddr *)&sa, sizeof(sa)), "bind");
	check_errno(listen(s.lfd, 65535), "listen");
	check_errno(getsockname(s.lfd, (struct sockaddr *)&sa, &salen), "getsockname");
	check_errno(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv),
		    "socketpair");
	server = getpid();
	pid = fork();
	check_errno(pid, "fork");
	if (!pid) {
		/* A server that dies takes its load with it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != server)
			_exit(1);
		close(sv[0]);
		close(s.lfd);
		pin(1);
		gen_main(cfg, ntohs(sa.sin_port), sv[1]);
	}
	close(sv[1]);
	s.ctl = sv[0];
	pin(0);
	s.ep = epoll_create1(EPOLL_CLOEXEC);
	check_errno(s.ep, "epoll_create1");
	s.now = now_ns();
	way_setup(&s);
	if (cfg->way == WAY_LIBEVENT) {
		serve_libevent(&s);
	} else {
		epoll_add(s.ep, s.lfd, TAG(TAG_LISTEN, 0));
		epoll_add(s.ep, s.ctl, TAG(TAG_CTL, 0));
		serve_epoll(&s);
	}
	if (waitpid(pid, NULL, 0) != pid)
		die("waitpid");
	r.ok = judge(&s, why, sizeof(why));
	print_line(&s, r.ok);
	if (!r.ok)
		printf("# %s: %s\n", way_names[cfg->way], why);
	fflush(stdout);
	r.load_requests = s.st.load_requests;
	r.load_cpu_ns = s.st.load_cpu_ns;
	r.load_sleeps = s.st.load_sleeps;
	r.early = s.st.early + s.gen.early_answers + s.gen.early_closes;
	r.req_p99 = percentile(&s.st.req_late, 99);
	r.idle_p99 = percentile(&s.st.idle_late, 99);
	r.idle_max = percentile(&s.st.idle_late, 100);
	r.idle_closed = s.st.idle_closed;
	r.tick_ns = s.tick_ns;
	if (out >= 0 && write(out, &r, sizeof(r)) != sizeof(r))
		die("write of a result");
	exit(r.ok ? 0 : 1);
}

/*
 * One run in a process of its own, whose memory dies with it: its exit
 * status (0 if it was judged right, EXIT_SKIP if the kernel cannot make it,
 * 1 otherwise); @r has its figures if it ran to its end.
 */
static int run(const struct config *cfg, struct result *r)
{
	int p[2], status;
	pid_t pid;

	check_errno(pipe2(p, O_CLOEXEC), "pipe2");
	fflush(stdout);
	pid = fork();
	check_errno(pid, "fork");
	if (!pid) {
		close(p[0]);
		serve(cfg, p[1]);
	}
	close(p[1]);
	memset(r, 0, sizeof(*r));
	if (read(p[0], r, sizeof(*r)) != sizeof(*r))
		memset(r, 0, sizeof(*r));
	close(p[0]);
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}

/* ---- the benchmark ---- */

#define BENCH_SIZES	2

/*
 * The benchmark's run at @conns connections: 3,000 requests a second,
 * which the emulated guests serve with room to spare, so that each way
 * serves the same load.  A connection's turn comes every 3 s at 10,000
 * and every 30 s at 100,000, and its idle timeout is twice that or more.
 * The measure takes 10 s, after a whole idle timeout of load: by then
 * every connection's first idle deadline has come (and most sleepers have
 * closed; the last accepted close as the measure starts), and the
 * deadlines that stores moved come at the rate they would for ever after.
 */
static struct config bench_config(unsigned int conns)
{
	unsigned int idle_ms = conns < 50000 ? 10000 : 60000;

	return (struct config) {
		.conns = conns, .rate = 3000, .requests = UINT_MAX, .seconds = 10,
		.warmup_ms = idle_ms, .idle_ms = idle_ms, .timeout_ms = 500,
		.stall_every = 100, .sleep_every = 10, .close_at_end = 1,
	};
}

static int bench(unsigned int max, unsigned int rounds)
{
	static const unsigned int sizes[BENCH_SIZES] = { 10000, 100000 };
	double cpu[NR_WAYS][MAX_ROUNDS], mc[NR_WAYS];
	double sleeps[NR_WAYS][MAX_ROUNDS], ms[NR_WAYS];
	unsigned int z, w, i, conns;
	struct result r;
	char name[96];
	int failed = 0, ret;

	for (z = 0; z < BENCH_SIZES; z++) {
		struct config cfg;

		conns = sizes[z] < max ? sizes[z] : max;
		if (z && conns == (sizes[z - 1] < max ? sizes[z - 1] : max))
			break;
		cfg = bench_config(conns);
		room_for(3 * conns);
		for (i = 0; i < rounds; i++) {
			for (w = 0; w < NR_WAYS; w++) {
				cfg.way = w;
				cfg.stall_every = w == WAY_NONE ? 0 : 100;
				ret = run(&cfg, &r);
				if (ret == EXIT_SKIP) {
					note("%s cannot run here", way_names[w]);
				} else if (ret) {
					note("%s at %u connections: judged wrong",
					     way_names[w], conns);
					failed = 1;
				}
				/* A run judged wrong measures nothing. */
				cpu[w][i] = !ret && r.load_requests ?
					(double)r.load_cpu_ns / r.load_requests : -1;
				sleeps[w][i] = !ret && r.load_requests ?
					(double)r.load_sleeps / r.load_requests : -1;
				if (w == WAY_NONE)
					continue;
				note("%s at %u: %llu early; request timeouts p99 %llu us late",
				     way_names[w], conns, (unsigned long long)r.early,
				     (unsigned long long)(r.req_p99 / NSEC_PER_USEC));
				note("%s at %u: %llu idle closes, p99 %llu us late, most %llu us",
				     way_names[w], conns,
				     (unsigned long long)r.idle_closed,
				     (unsigned long long)(r.idle_p99 / NSEC_PER_USEC),
				     (unsigned long long)(r.idle_max / NSEC_PER_USEC));
				if (w == WAY_HTW)
					note("htw's tick: %llu us",
					     (unsigned long long)(r.tick_ns / NSEC_PER_USEC));
			}
		}
		for (w = 0; w < NR_WAYS; w++) {
			double c[MAX_ROUNDS], sl[MAX_ROUNDS];

			for (i = 0; i < rounds; i++) {
				c[i] = cpu[w][i];
				sl[i] = sleeps[w][i];
			}
			mc[w] = median(c, rounds);
			ms[w] = median(sl, rounds);
		}
		for (w = 1; w < NR_WAYS; w++) {
			snprintf(name, sizeof(name), "server_rps_per_cpu_vs_%s_%u",
				 way_names[w], conns);
			report(name, mc[WAY_HTW] > 0 ? 1e9 / mc[WAY_HTW] : -1,
			       mc[w] > 0 ? 1e9 / mc[w] : -1, "req/cpu-s");
		}
		for (w = 0; w < NR_WAYS; w++) {
			if (mc[w] <= 0)
				continue;
			printf("plot server %s %u %.0f\n", way_names[w], conns,
			       1e9 / mc[w]);
			note("%s at %u: the loop slept %.2f times a request",
			     way_names[w], conns, ms[w]);
			if (w != WAY_NONE && mc[WAY_NONE] > 0)
				note("%s at %u: %.0f CPU ns a request, %.0f (%.0f%%) on timers",
				     way_names[w], conns, mc[w], mc[w] - mc[WAY_NONE],
				     100 * (mc[w] - mc[WAY_NONE]) / mc[w]);
		}
	}
	fflush(stdout);
	return failed;
}

static const char usage[] =
	"usage: htw_server --way htw|libevent|io_uring|timerfd|none [--conns N]\n"
	"                  [--rate N] [--requests N] [--seconds N] [--warmup-ms N]\n"
	"                  [--idle-ms N] [--timeout-ms N]\n"
	"       htw_server --bench [--max N] [--rounds N]\n";

int main(int argc, char **argv)
{
	struct config cfg = {
		.way = NR_WAYS, .conns = 1000, .rate = 2000, .requests = 1000000,
		.seconds = 2, .idle_ms = 1000, .timeout_ms = 200,
		.stall_every = 100, .sleep_every = 10,
	};
	unsigned int max = 100000, rounds = 3, w;
	struct result r;
	int do_bench = 0, i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	for (i = 1; i < argc; i++) {
		unsigned int *v = NULL;

		if (!strcmp(argv[i], "--bench")) {
			do_bench = 1;
			continue;
		}
		if (!strcmp(argv[i], "--way") && i + 1 < argc) {
			for (w = 0; w < NR_WAYS && strcmp(argv[i + 1], way_names[w]); w++)
				;
			if (w == NR_WAYS)
				break;
			cfg.way = w;
			i++;
			continue;
		}
		if (!strcmp(argv[i], "--conns"))
			v = &cfg.conns;
		else if (!strcmp(argv[i], "--requests"))
			v = &cfg.requests;
		else if (!strcmp(argv[i], "--rate"))
			v = &cfg.rate;
		else if (!strcmp(argv[i], "--seconds"))
			v = &cfg.seconds;
		else if (!strcmp(argv[i], "--warmup-ms"))
			v = &cfg.warmup_ms;
		else if (!strcmp(argv[i], "--idle-ms"))
			v = &cfg.idle_ms;
		else if (!strcmp(argv[i], "--timeout-ms"))
			v = &cfg.timeout_ms;
		else if (!strcmp(argv[i], "--max"))
			v = &max;
		else if (!strcmp(argv[i], "--rounds"))
			v = &rounds;
		if (!v || i + 1 == argc || !bench_parse_uint(argv[i + 1], v))
			break;
		i++;
	}
	if (i < argc || do_bench == !!(cfg.way != NR_WAYS) || !cfg.conns ||
	    !cfg.requests || !cfg.seconds || !cfg.idle_ms || !cfg.timeout_ms ||
	    cfg.timeout_ms >= cfg.idle_ms || !cfg.rate || cfg.rate > 1000000 || !rounds ||
	    rounds > MAX_ROUNDS || !max) {
		fputs(usage, stderr);
		return 2;
	}
	if (do_bench)
		return bench(max, rounds);
	/* Without timers nothing stalls, and nothing closes for idleness. */
	if (cfg.way == WAY_NONE) {
		cfg.stall_every = 0;
		cfg.close_at_end = 1;
	}
	room_for(3 * cfg.conns);
	return run(&cfg, &r);
}
