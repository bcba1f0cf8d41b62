// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libhtw's request timeouts: a timeout per request, started and stopped by
 * stores (see "Request timeouts" in libhtw.h for the promises)
 *
 * The model
 * ---------
 * Each timeout runs on a slot of the file's ring timers.  The library
 * mirrors, for every slot, what the kernel holds for it (@kernel: an arm
 * of generation @gen, whose deadline is at most the slot's word) and what
 * the program runs on it (@busy: a timeout of @tag, due at @deadline).
 * The word always holds @deadline: the library stores it at every start,
 * and only then.
 *
 * A start takes the first slot of its class's pool.  If the kernel holds
 * an arm of the slot, and the word is not later than the new deadline,
 * the start stores the new deadline and is done: the kernel reads the word
 * when the deadline it holds comes, and places the timer again.  Else it
 * queues an arm, with the next generation.  Within a class every deadline
 * is its start's @now plus one duration, so with a @now that does not go
 * back the first case is the common one: only a slot that the kernel let
 * go (its last timeout expired, or it stayed in the pool for a whole
 * duration) needs an arm.
 *
 * A stop puts the slot back at the head of its pool, where the next start
 * of the class finds it, and does nothing else: the kernel keeps its timer
 * for the slot's last deadline.
 *
 * Every completion of the current generation means that the kernel has
 * let the slot go: @kernel is cleared.  Then, by what the slot runs:
 *	nothing (it was stopped):	stale; the slot goes to the tail of
 *					its pool, where it is taken last;
 *	a timeout due at or before the completion's deadline:
 *					it expired: reported once, and the
 *					slot goes to the tail of its pool;
 *	a timeout due later:		its store landed after the kernel
 *					read the word (the kernel delivers a
 *					slot for the deadline it read): the
 *					slot is armed again for @deadline.
 * A completion of an older generation comes from an arm the slot had
 * before its current one; the kernel delivered it before that arm, so it
 * says nothing of the current one: stale.
 *
 * So an expiry is reported only for a running timeout, only for a
 * completion whose deadline is not before the timeout's (and the kernel
 * posts none before its deadline), and once: the slot is then idle until
 * a start.  And no running timeout is lost: its slot is armed in the
 * kernel, or it is told that it is not, by a completion, and armed again.
 *
 * A class whose pool is empty takes a slot no class has used, and then
 * the coldest slot of another class (the tail of the fullest pool): an
 * arm moves the kernel's timer of such a slot wherever it must.
 *
 * Handles are the slot's index and its count of starts, so that a stop of
 * a timeout that has ended since finds another count and does nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "libhtw.h"

#define HTW_NIL			((__u32)~0U)
/* The list of the slots no class has used yet. */
#define HTW_UNUSED		HTW_TIMEOUTS_CLASSES_MAX
/* The list of running timeouts whose arm failed, to be armed again. */
#define HTW_RETRY		(HTW_TIMEOUTS_CLASSES_MAX + 1)
/* Completions taken off the ring between two looks at its tail. */
#define HTW_REAP_CHUNK		64

/**
 * struct htw_tslot - the library's half of a slot
 * @deadline: the slot's word: the deadline of the timeout it runs or ran
 *	last
 * @tag: the program's value of the timeout it runs
 * @prev, @next: its neighbours in its pool, while it runs nothing; or on
 *	the list of %HTW_RETRY, while its timeout waits for an arm
 * @gen: the generation of the slot's latest arm
 * @starts: timeouts started on it: the upper half of their handles
 * @pool: its class, or %HTW_UNUSED
 * @busy: it runs a timeout
 * @kernel: the kernel holds an arm of generation @gen for it
 * @retry: it is on the list of %HTW_RETRY
 */
struct htw_tslot {
	__u64 deadline;
	__u64 tag;
	__u32 prev;
	__u32 next;
	__u32 gen;
	__u32 starts;
	__u16 pool;
	__u8 busy;
	__u8 kernel;
	__u8 retry;
};

/**
 * struct htw_pool - the idle slots of a class, most recently stopped first
 * @head, @tail: the first and the last, or %HTW_NIL
 * @nr: how many
 * @duration: the class's duration in ns (0: no such class)
 */
struct htw_pool {
	__u32 head;
	__u32 tail;
	__u32 nr;
	__u64 duration;
};

struct htw_timeouts {
	struct htw_ring ring;
	struct htw_tslot *slots;
	__u32 nr_running;
	__u32 nr_classes;
	__u32 queued;
	struct htw_pool pools[HTW_RETRY + 1];
	struct htw_timeouts_stats stats;
};

static void list_unlink(struct htw_timeouts *t, __u32 list, __u32 s)
{
	struct htw_tslot *ts = &t->slots[s];
	struct htw_pool *p = &t->pools[list];

	if (ts->prev == HTW_NIL)
		p->head = ts->next;
	else
		t->slots[ts->prev].next = ts->next;
	if (ts->next == HTW_NIL)
		p->tail = ts->prev;
	else
		t->slots[ts->next].prev = ts->prev;
	p->nr--;
}

static void list_push_head(struct htw_timeouts *t, __u32 list, __u32 s)
{
	struct htw_tslot *ts = &t->slots[s];
	struct htw_pool *p = &t->pools[list];

	ts->prev = HTW_NIL;
	ts->next = p->head;
	if (p->head == HTW_NIL)
		p->tail = s;
	else
		t->slots[p->head].prev = s;
	p->head = s;
	p->nr++;
}

static void list_push_tail(struct htw_timeouts *t, __u32 list, __u32 s)
{
	struct htw_tslot *ts = &t->slots[s];
	struct htw_pool *p = &t->pools[list];

	ts->next = HTW_NIL;
	ts->prev = p->tail;
	if (p->tail == HTW_NIL)
		p->head = s;
	else
		t->slots[p->tail].next = s;
	p->tail = s;
	p->nr++;
}

/* A slot of the pool of @pool: first if the kernel holds it, else last. */
static void pool_put(struct htw_timeouts *t, __u32 pool, __u32 s,
		     int first)
{
	t->slots[s].pool = pool;
	if (first)
		list_push_head(t, pool, s);
	else
		list_push_tail(t, pool, s);
}

int htw_timeouts_create(int fd, __u32 max, struct htw_timeouts **timeouts)
{
	struct htw_timeouts *t;
	__u32 sq, s;
	int ret;

	if (!max)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->slots = calloc(max, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return -ENOMEM;
	}
	/* Room for a turn's arms of a busy loop, and no more than the kernel's. */
	sq = max / 16 < 64 ? 64 : max / 16;
	if (sq > HTW_RING_SQ_MAX)
		sq = HTW_RING_SQ_MAX;
	ret = htw_ring_map(fd, max, sq, &t->ring);
	if (ret) {
		free(t->slots);
		free(t);
		return ret;
	}
	/* The classes', the unused slots' and the retries' lists: empty. */
	for (s = 0; s <= HTW_RETRY; s++)
		t->pools[s] = (struct htw_pool){ .head = HTW_NIL, .tail = HTW_NIL };
	for (s = 0; s < max; s++)
		pool_put(t, HTW_UNUSED, s, 0);
	*timeouts = t;
	return 0;
}

void htw_timeouts_free(struct htw_timeouts *t)
{
	if (!t)
		return;
	htw_ring_unmap(&t->ring);
	free(t->slots);
	free(t);
}

int htw_timeouts_class(struct htw_timeouts *t, __u64 duration)
{
	__u32 c;

	if (!duration || duration > HTW_TIME_MAX)
		return -EINVAL;
	for (c = 0; c < t->nr_classes; c++)
		if (t->pools[c].duration == duration)
			return c;
	if (c == HTW_TIMEOUTS_CLASSES_MAX)
		return -ENOSPC;
	t->pools[c].duration = duration;
	t->nr_classes++;
	return c;
}

/* A slot for class @cls: its pool's first, an unused one, or the coldest. */
static __u32 take_slot(struct htw_timeouts *t, unsigned int cls)
{
	__u32 c, s, from = HTW_UNUSED;

	if (t->pools[cls].nr) {
		s = t->pools[cls].head;
	} else if (t->pools[HTW_UNUSED].nr) {
		s = t->pools[HTW_UNUSED].head;
	} else {
		for (c = 0; c < t->nr_classes; c++)
			if (t->pools[c].nr &&
			    (from == HTW_UNUSED || t->pools[c].nr > t->pools[from].nr))
				from = c;
		/* Fewer than @max run: some pool has a slot. */
		s = t->pools[from].tail;
	}
	list_unlink(t, t->slots[s].pool, s);
	return s;
}

/* Hand the queued arms to the kernel, and let it run the due timers. */
static int enter(struct htw_timeouts *t)
{
	int ret = htw_ring_submit(&t->ring, 0);

	if (ret < 0)
		return ret;
	t->stats.submits++;
	t->queued = t->ring.sq_tail -
		    __atomic_load_n(t->ring.sq_head_p, __ATOMIC_ACQUIRE);
	return ret;
}

/* Queue an arm of slot @s for its deadline, entering if the ring is full. */
static int arm_slot(struct htw_timeouts *t, __u32 s)
{
	struct htw_tslot *ts = &t->slots[s];
	int ret;

	ret = htw_ring_arm(&t->ring, s, ts->gen + 1, ts->deadline);
	if (ret == -EAGAIN) {
		ret = enter(t);
		if (ret < 0)
			return ret;
		ret = htw_ring_arm(&t->ring, s, ts->gen + 1, ts->deadline);
		/* The kernel took none: its completion ring is full. */
		if (ret == -EAGAIN)
			return -EBUSY;
	}
	if (ret)
		return ret;
	ts->gen++;
	ts->kernel = 1;
	t->queued++;
	t->stats.armed++;
	return 0;
}

/*
 * Arm slot @s again for the timeout it runs, which the kernel let go;
 * if that fails, the timeout waits on the list of %HTW_RETRY.
 */
static void rearm_slot(struct htw_timeouts *t, __u32 s)
{
	if (arm_slot(t, s)) {
		t->slots[s].retry = 1;
		list_push_tail(t, HTW_RETRY, s);
	}
}

/* Arm the timeouts whose arm failed; return 0, or the first error. */
static int retry_arms(struct htw_timeouts *t)
{
	__u32 s;
	int ret;

	while (t->pools[HTW_RETRY].nr) {
		s = t->pools[HTW_RETRY].head;
		ret = arm_slot(t, s);
		if (ret)
			return ret;
		list_unlink(t, HTW_RETRY, s);
		t->slots[s].retry = 0;
	}
	return 0;
}

int htw_timeouts_submit(struct htw_timeouts *t)
{
	int ret = retry_arms(t);

	if (ret)
		return ret;
	return t->queued ? enter(t) : 0;
}

int htw_timeout_start(struct htw_timeouts *t, unsigned int cls, __u64 now,
		      __u64 tag, __u64 *handle)
{
	struct htw_tslot *ts;
	__u64 deadline, old;
	__u32 s;
	int ret;

	if (cls >= t->nr_classes)
		return -EINVAL;
	deadline = now + t->pools[cls].duration;
	if (deadline < now || deadline > HTW_TIME_MAX)
		return -EINVAL;
	if (t->nr_running == t->ring.nr_slots)
		return -ENOSPC;
	s = take_slot(t, cls);
	ts = &t->slots[s];
	ts->pool = cls;
	old = ts->deadline;
	ts->deadline = deadline;
	if (ts->kernel && old <= deadline) {
		/* Later than the kernel's: it finds this when its own comes. */
		htw_ring_extend(&t->ring, s, deadline);
		t->stats.stored++;
	} else {
		ret = arm_slot(t, s);
		if (ret) {
			ts->deadline = old;
			pool_put(t, cls, s, ts->kernel);
			return ret;
		}
	}
	ts->tag = tag;
	ts->busy = 1;
	ts->starts++;
	t->nr_running++;
	t->stats.started++;
	*handle = (__u64)ts->starts << 32 | s;
	return 0;
}

/* The slot of @handle, if it runs that timeout; else NULL. */
static struct htw_tslot *running(struct htw_timeouts *t, __u64 handle)
{
	__u32 s = (__u32)handle;

	if (s >= t->ring.nr_slots || !t->slots[s].busy ||
	    t->slots[s].starts != (__u32)(handle >> 32))
		return NULL;
	return &t->slots[s];
}

int htw_timeout_stop(struct htw_timeouts *t, __u64 handle)
{
	struct htw_tslot *ts = running(t, handle);
	__u32 s = (__u32)handle;

	if (!ts)
		return -ENOENT;
	if (ts->retry) {
		list_unlink(t, HTW_RETRY, s);
		ts->retry = 0;
	}
	ts->busy = 0;
	t->nr_running--;
	t->stats.stopped++;
	/* The kernel still holds its deadline: the next start stores. */
	pool_put(t, ts->pool, s, ts->kernel);
	return 0;
}

/*
 * What a completion says of its slot (see "The model"); return 1 if it
 * reported an expiry into @e, else 0.
 */
static int settle(struct htw_timeouts *t, const struct htw_cqe *cqe,
		  struct htw_timeout_expiry *e)
{
	struct htw_tslot *ts;
	__u32 s = cqe->slot;

	if (s >= t->ring.nr_slots) {
		t->stats.unexpected++;
		return 0;
	}
	ts = &t->slots[s];
	if (cqe->gen != ts->gen || !ts->kernel) {
		t->stats.stale++;
		return 0;
	}
	ts->kernel = 0;
	if (cqe->res)
		t->stats.unexpected++;
	if (!ts->busy) {
		/* Stopped: the slot is cold now, and the last to be taken. */
		t->stats.stale++;
		list_unlink(t, ts->pool, s);
		pool_put(t, ts->pool, s, 0);
		return 0;
	}
	/*
	 * The store lost the race: arm again.  So too for an error, which
	 * only an arm the program scribbled over makes: its timeout is made
	 * again, never reported early.
	 */
	if (cqe->res || cqe->deadline < ts->deadline) {
		t->stats.rearmed += !cqe->res;
		rearm_slot(t, s);
		return 0;
	}
	*e = (struct htw_timeout_expiry){
		.handle = (__u64)ts->starts << 32 | s,
		.tag = ts->tag,
		.deadline = ts->deadline,
	};
	ts->busy = 0;
	t->nr_running--;
	t->stats.expired++;
	pool_put(t, ts->pool, s, 0);
	return 1;
}

/*
 * Settle the completions on the ring while @nr expiries have room, and at
 * most a ring's worth, whatever the shared head says; return how many
 * were reported.  Each chunk is taken off the ring before it is settled,
 * so that an arm it needs finds room for its completion.
 */
static unsigned int reap(struct htw_timeouts *t,
			 struct htw_timeout_expiry *e, unsigned int nr)
{
	struct htw_ring *r = &t->ring;
	struct htw_cqe cqes[HTW_REAP_CHUNK];
	unsigned int got = 0, taken = 0, i, n;

	/* Each completion reports one expiry at most: take no more. */
	while (got < nr && taken < r->cq_entries) {
		n = nr - got;
		if (n > r->cq_entries - taken)
			n = r->cq_entries - taken;
		if (n > HTW_REAP_CHUNK)
			n = HTW_REAP_CHUNK;
		n = htw_ring_reap(r, cqes, n);
		if (!n)
			break;
		taken += n;
		for (i = 0; i < n; i++)
			got += settle(t, &cqes[i], &e[got]);
	}
	return got;
}

int htw_timeouts_expired(struct htw_timeouts *t,
			 struct htw_timeout_expiry *expiries, unsigned int nr)
{
	unsigned int got = reap(t, expiries, nr);
	int ret;

	/*
	 * The kernel's turn: arms to hand over (those the settling just
	 * queued too), completions that waited for the room this made, or a
	 * file that polled readable for timers no poll has run yet.
	 */
	if (!t->queued && !t->pools[HTW_RETRY].nr && got &&
	    !(__atomic_load_n(t->ring.flags_p, __ATOMIC_RELAXED) &
	      HTW_RING_CQ_WAITING))
		return got;
	ret = retry_arms(t);
	if (!ret)
		ret = enter(t);
	if (ret < 0 && !got)
		return ret;
	if (got < nr)
		got += reap(t, expiries + got, nr - got);
	return got;
}

void htw_timeouts_stats(const struct htw_timeouts *t,
			struct htw_timeouts_stats *stats)
{
	*stats = t->stats;
}
