// SPDX-License-Identifier: GPL-2.0
/*
 * htw_idle - idle timeouts on ring timers, the workload they are made for
 *
 *   htw_idle [-n CONNECTIONS] [-t TIMEOUT] [-s DURATION] [-r RATE]
 *
 * A server holds CONNECTIONS connections (default 10000), each closed once
 * it has been idle for TIMEOUT (default 2s).  For DURATION (default 5s)
 * packets arrive at random connections, RATE a second (default two per
 * connection per TIMEOUT, so that about one idle spell in seven outlasts
 * TIMEOUT); then they stop, and every connection must time out.  TIMEOUT
 * and DURATION are numbers with a unit: ns, us, ms or s.
 *
 * Each connection is a slot of the file's ring timers (htw_ring_map(3)),
 * armed for its deadline.  A packet pushes the deadline later with a plain
 * store to the slot (htw_ring_extend(3)): no system call, however many
 * packets come.  The kernel reads the slot only when the deadline it holds
 * comes, and places the timer again if the slot says later: a busy
 * connection costs nothing, and only the timeouts that fire come back,
 * through the completion ring, which epoll says is worth reading.
 *
 * A store can lose the race with the kernel: one that lands after the
 * kernel read the slot is too late, and the timer is delivered for the
 * deadline the kernel held.  The completion says which deadline that was
 * (cqe.deadline): earlier than the connection's means a packet came in
 * time, and the slot is armed again for the connection's deadline.  Else
 * the connection was idle for the whole timeout: it is closed, counted,
 * and opened again with a new generation, so that the server keeps its
 * connections while packets come.
 *
 * A thread plays the network; the main thread is the event loop, which
 * alone arms, submits and reaps, as libhtw asks (one submitter and one
 * reaper; stores from any thread).
 *
 * It prints one line: connections, packets, extensions (packets that moved
 * a deadline), timeouts, stale completions (stores that lost the race),
 * early completions (reaped before their deadline: there must be none) and
 * lost timeouts (connections not timed out 5 s past their deadline once
 * packets stopped).  Exit status 0; 1 if a completion came early, a
 * timeout was lost or a completion was not one the program expects (an
 * error, or one of a slot not armed so), or a call failed; 2 for a bad
 * command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <libhtw.h>

#include "htw_duration.h"

#define NSEC_PER_USEC	1000ULL
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL

/* The most connections: the kernel takes at most 8388608 slots anyway. */
#define MAX_CONNS	8388608U
/* Entries of the submission ring: the re-arms of a reap or two. */
#define SQ_ENTRIES	1024
/* Completions taken per reap. */
#define REAP_BATCH	256
/* The network sends a burst of packets each millisecond. */
#define BURST_NS	NSEC_PER_MSEC
/*
 * How late past its deadline a timeout may come before it counts as lost:
 * a loaded host may hold the program back for seconds, and the wait ends
 * as soon as every timeout has come.
 */
#define GRACE_NS	(60 * NSEC_PER_SEC)
/* The event loop's longest sleep: it looks at the clock between two. */
#define WAIT_MS		100
/* The most packets a second: more than one thread can send. */
#define MAX_RATE	1000000000ULL
/* Unexpected completions printed; the rest are only counted. */
#define MAX_REPORTS	10

/**
 * struct conn - a connection, and the slot of its idle timeout
 * @deadline: when it times out unless a packet comes; only ever moved
 *	later (deadline_later()), by the network on a packet and by the
 *	event loop when it opens the connection again
 * @gen: the generation its slot was last armed as (the event loop's)
 * @open: whether it is open (the event loop's)
 */
struct conn {
	__u64 deadline;
	__u32 gen;
	bool open;
};

/**
 * struct idle - the run
 * @ring: the ring timers: slot i is connection i
 * @fd: their file
 * @conns: the connections
 * @nr_conns: how many
 * @nr_open: how many are open
 * @timeout: how long a connection may be idle, in ns
 * @duration: how long packets come, in ns
 * @rate: packets a second
 * @start: when the run began, on CLOCK_MONOTONIC
 * @packets: packets sent (the network's, read once it is joined)
 * @extensions: packets that moved a deadline (the same)
 * @timeouts: connections closed for idleness
 * @stale: completions of a deadline a packet had moved
 * @early: completions reaped before their deadline
 * @unexpected: completions of an error, or of a slot not armed so
 * @lost: connections that never timed out
 */
struct idle {
	struct htw_ring ring;
	int fd;
	struct conn *conns;
	__u32 nr_conns;
	__u32 nr_open;
	__u64 timeout;
	__u64 duration;
	__u64 rate;
	__u64 start;
	unsigned long long packets;
	unsigned long long extensions;
	unsigned long long timeouts;
	unsigned long long stale;
	unsigned long long early;
	unsigned long long unexpected;
	__u32 lost;
};

/* Deadlines are on CLOCK_MONOTONIC, as the kernel reads the slots. */
static __u64 now(void)
{
	return htw_clock_now(0);
}

static __u64 rand_below(__u64 *state, __u64 n)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state % n;
}

/*
 * Move *@p to @v if @v is later; return whether it did.  Both threads
 * move a deadline, and neither may move it back: the event loop tells a
 * stale completion by a deadline later than the one the kernel acted on.
 */
static bool deadline_later(__u64 *p, __u64 v)
{
	__u64 old = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (old < v) {
		if (__atomic_compare_exchange_n(p, &old, v, false,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return true;
	}
	return false;
}

/*
 * A packet: the connection's deadline moves later, by a store to its slot.
 * The connection's own copy first, so that a completion the kernel makes
 * from the slot never finds the copy behind it.
 */
static bool packet(struct idle *idle, __u32 slot, __u64 deadline)
{
	if (!deadline_later(&idle->conns[slot].deadline, deadline))
		return false;
	htw_ring_extend(&idle->ring, slot, deadline);
	return true;
}

/*
 * The network: packets at random connections, @rate a second, in bursts a
 * millisecond apart; a burst's deadlines come from one read of the clock,
 * as an event loop's do from its cached time.
 */
static void *network(void *arg)
{
	struct timespec pause = { .tv_nsec = BURST_NS };
	struct idle *idle = arg;
	__u64 seed = idle->start | 1, due, t;
	unsigned long long sent = 0, moved = 0;

	while ((t = now()) < idle->start + idle->duration) {
		due = (double)(t - idle->start) * idle->rate / NSEC_PER_SEC;
		for (; sent < due; sent++)
			moved += packet(idle, rand_below(&seed, idle->nr_conns),
					t + idle->timeout);
		nanosleep(&pause, NULL);
	}
	idle->packets = sent;
	idle->extensions = moved;
	return NULL;
}

/* Hand the queued entries to the kernel, which runs the due timers too. */
static int submit(struct idle *idle)
{
	int ret = htw_ring_submit(&idle->ring, 0);

	if (ret < 0)
		fprintf(stderr, "htw_idle: htw_ring_submit: %s\n",
			strerror(-ret));
	return ret;
}

/*
 * Arm a connection's slot for @deadline, as a new generation, so that a
 * completion of an earlier arm could be told from this arm's.  A full
 * submission ring is handed to the kernel first, which consumes all of it:
 * a slot is armed again only once its completion is reaped, so the
 * completion ring, which has an entry for each slot, always has room.
 */
static int arm(struct idle *idle, __u32 slot, __u64 deadline)
{
	struct conn *c = &idle->conns[slot];
	int ret;

	c->gen++;
	ret = htw_ring_arm(&idle->ring, slot, c->gen, deadline);
	if (ret == -EAGAIN) {
		ret = submit(idle);
		if (ret < 0)
			return ret;
		ret = htw_ring_arm(&idle->ring, slot, c->gen, deadline);
	}
	if (ret)
		fprintf(stderr, "htw_idle: htw_ring_arm: %s\n", strerror(-ret));
	return ret;
}

/* A completion the program never asked for: a bug, in it or the kernel. */
static void report_unexpected(struct idle *idle, const struct htw_cqe *cqe)
{
	if (idle->unexpected++ < MAX_REPORTS)
		fprintf(stderr,
			"htw_idle: unexpected completion: slot %u gen %u res %d deadline %llu\n",
			cqe->slot, cqe->gen, cqe->res,
			(unsigned long long)cqe->deadline);
}

/*
 * One completion, reaped at @t: a stale one is armed again for the
 * connection's deadline; a real timeout closes the connection, and with
 * @reopen opens it again, idle from now.
 */
static int complete(struct idle *idle, const struct htw_cqe *cqe, __u64 t,
		    bool reopen)
{
	struct conn *c;
	__u64 deadline;

	if (t < cqe->deadline)
		idle->early++;
	c = cqe->slot < idle->nr_conns ? &idle->conns[cqe->slot] : NULL;
	if (cqe->res || !c || !c->open || cqe->gen != c->gen) {
		report_unexpected(idle, cqe);
		return 0;
	}
	deadline = __atomic_load_n(&c->deadline, __ATOMIC_RELAXED);
	if (cqe->deadline < deadline) {
		/* A packet's store came after the kernel read the slot. */
		idle->stale++;
		return arm(idle, cqe->slot, deadline);
	}
	idle->timeouts++;
	if (!reopen) {
		c->open = false;
		idle->nr_open--;
		return 0;
	}
	/* A packet may have moved it further meanwhile: never back. */
	deadline_later(&c->deadline, t + idle->timeout);
	return arm(idle, cqe->slot, __atomic_load_n(&c->deadline,
						    __ATOMIC_RELAXED));
}

/*
 * Reap every completion there is and handle it; return how many, or a
 * negative errno.  The clock is read after each reap: whatever it took,
 * the kernel posted before, so no deadline may be later.
 */
static int reap_all(struct idle *idle, bool reopen)
{
	struct htw_cqe cqes[REAP_BATCH];
	unsigned int n, i;
	int ret, total = 0;
	__u64 t;

	while ((n = htw_ring_reap(&idle->ring, cqes, REAP_BATCH))) {
		t = now();
		for (i = 0; i < n; i++) {
			ret = complete(idle, &cqes[i], t, reopen);
			if (ret)
				return ret;
		}
		total += n;
	}
	return total;
}

/*
 * The event loop, until @until or, without @reopen, until every connection
 * is closed: submit (the kernel consumes the queued arms and runs the due
 * timers), reap, and sleep in epoll_wait() only once a submit brought
 * nothing to reap.  The submit before the sleep matters: completions that
 * waited in the kernel for room are posted by a submit, not by a poll.
 */
static int event_loop(struct idle *idle, int ep, __u64 until, bool reopen)
{
	struct epoll_event ee;
	__u64 t, ms;
	int ret;

	while ((t = now()) < until && (reopen || idle->nr_open)) {
		ret = submit(idle);
		if (ret >= 0)
			ret = reap_all(idle, reopen);
		if (ret < 0)
			return ret;
		if (ret)
			continue;
		ms = (until - t) / NSEC_PER_MSEC + 1;
		if (epoll_wait(ep, &ee, 1, ms < WAIT_MS ? (int)ms : WAIT_MS) < 0 &&
		    errno != EINTR) {
			perror("htw_idle: epoll_wait");
			return -errno;
		}
	}
	return 0;
}

/* Open every connection, idle from the start. */
static int open_all(struct idle *idle)
{
	__u64 deadline = idle->start + idle->timeout;
	__u32 i;

	for (i = 0; i < idle->nr_conns; i++) {
		idle->conns[i].deadline = deadline;
		idle->conns[i].open = true;
		if (arm(idle, i, deadline))
			return -1;
	}
	idle->nr_open = idle->nr_conns;
	return submit(idle) < 0 ? -1 : 0;
}

/* The latest deadline of an open connection, once the network is quiet. */
static __u64 last_deadline(const struct idle *idle)
{
	__u64 last = 0;
	__u32 i;

	for (i = 0; i < idle->nr_conns; i++)
		if (idle->conns[i].open && idle->conns[i].deadline > last)
			last = idle->conns[i].deadline;
	return last;
}

/*
 * Packets for @duration, every timeout handled as it comes; then no more
 * packets, and every connection must time out.  Return 0, or -1 if a call
 * failed.
 */
static int run(struct idle *idle, int ep)
{
	pthread_t net;
	int ret;

	idle->start = now();
	if (open_all(idle))
		return -1;
	ret = pthread_create(&net, NULL, network, idle);
	if (ret) {
		fprintf(stderr, "htw_idle: pthread_create: %s\n", strerror(ret));
		return -1;
	}
	ret = event_loop(idle, ep, idle->start + idle->duration, true);
	pthread_join(net, NULL);
	if (ret)
		return -1;

	/* Nobody writes a deadline now: the last one is known. */
	ret = event_loop(idle, ep, last_deadline(idle) + GRACE_NS, false);
	if (ret)
		return -1;
	idle->lost = idle->nr_open;
	/* A second completion of a closed connection would show here. */
	if (submit(idle) < 0 || reap_all(idle, false) < 0)
		return -1;
	return 0;
}

/* The file, its ring timers, an epoll set watching it, the connections. */
static int prepare(struct idle *idle, int *ep)
{
	struct epoll_event ee = { .events = EPOLLIN };
	int ret;

	idle->fd = htw_open(O_CLOEXEC);
	if (idle->fd < 0) {
		fprintf(stderr, "htw_idle: %s: %s\n", HTW_DEVICE_PATH,
			strerror(-idle->fd));
		return -1;
	}
	ret = htw_ring_map(idle->fd, idle->nr_conns, SQ_ENTRIES, &idle->ring);
	if (ret) {
		fprintf(stderr, "htw_idle: htw_ring_map: %s\n", strerror(-ret));
		close(idle->fd);
		return -1;
	}
	*ep = epoll_create1(EPOLL_CLOEXEC);
	idle->conns = calloc(idle->nr_conns, sizeof(*idle->conns));
	if (*ep < 0 || epoll_ctl(*ep, EPOLL_CTL_ADD, idle->fd, &ee) ||
	    !idle->conns) {
		perror("htw_idle: setup");
		return -1;
	}
	return 0;
}

/* One line, for people and for scripts. */
static void summary(const struct idle *idle)
{
	printf("htw_idle: %u connections, %llu packets, %llu extensions, ",
	       idle->nr_conns, idle->packets, idle->extensions);
	printf("%llu timeouts, %llu stale completions, ", idle->timeouts,
	       idle->stale);
	printf("%llu early completions, %u lost timeouts\n", idle->early,
	       idle->lost);
}

static int parse_count(const char *s, __u64 max, __u64 *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || end == s || *end || *v > max ? -1 : 0;
}

static int usage(void)
{
	fprintf(stderr,
		"Usage: htw_idle [-n CONNECTIONS] [-t TIMEOUT] [-s DURATION] [-r RATE]\n"
		"  -n  connections, each with an idle timeout (10000)\n"
		"  -t  the idle timeout (2s)\n"
		"  -s  how long packets come (5s)\n"
		"  -r  packets a second (2 per connection per timeout)\n"
		"TIMEOUT and DURATION are numbers with a unit: ns, us, ms or s\n");
	return 2;
}

static int parse_args(struct idle *idle, int argc, char **argv)
{
	__u64 v;
	int opt;

	while ((opt = getopt(argc, argv, "n:t:s:r:")) != -1) {
		switch (opt) {
		case 'n':
			if (parse_count(optarg, MAX_CONNS, &v) || !v)
				return -1;
			idle->nr_conns = v;
			break;
		case 't':
			if (htw_parse_duration(optarg, &idle->timeout) ||
			    !idle->timeout)
				return -1;
			break;
		case 's':
			if (htw_parse_duration(optarg, &idle->duration))
				return -1;
			break;
		case 'r':
			if (parse_count(optarg, MAX_RATE, &idle->rate))
				return -1;
			break;
		default:
			return -1;
		}
	}
	if (optind != argc)
		return -1;
	/* Two packets a connection per timeout, within what -r takes. */
	if (idle->rate == ~0ULL)
		idle->rate = 2 * (double)idle->nr_conns * NSEC_PER_SEC /
			     idle->timeout;
	if (idle->rate > MAX_RATE)
		idle->rate = MAX_RATE;
	return 0;
}

int main(int argc, char **argv)
{
	struct idle idle = {
		.nr_conns = 10000,
		.timeout = 2 * NSEC_PER_SEC,
		.duration = 5 * NSEC_PER_SEC,
		.rate = ~0ULL,
	};
	int ep = -1, ret;

	if (parse_args(&idle, argc, argv))
		return usage();
	printf("htw_idle: %u connections, a %llu ms idle timeout, ",
	       idle.nr_conns, (unsigned long long)(idle.timeout / NSEC_PER_MSEC));
	printf("packets for %llu ms at %llu a second\n",
	       (unsigned long long)(idle.duration / NSEC_PER_MSEC),
	       (unsigned long long)idle.rate);
	fflush(stdout);
	if (prepare(&idle, &ep))
		return 1;
	ret = run(&idle, ep);
	if (!ret)
		summary(&idle);
	if (idle.unexpected)
		fprintf(stderr, "htw_idle: %llu unexpected completions\n",
			idle.unexpected);
	htw_ring_unmap(&idle.ring);
	close(ep);
	close(idle.fd);
	free(idle.conns);
	if (ret || idle.early || idle.lost || idle.unexpected)
		return 1;
	return 0;
}
