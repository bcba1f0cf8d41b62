/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libhtw - a thin C library over /dev/htw, the hierarchical timing wheel
 *
 * The device is the interface; this library only spares a program the
 * ioctl() plumbing.  Its calls map one to one onto the device's (see
 * htw(4) and <linux/htw.h>): the structures are the device's own, so
 * nothing is translated, and a program may mix these calls with its own
 * ioctl()s on the same file.
 *
 * Every call returns 0 or a count on success and a negative errno on
 * failure, as liburing's do, so that a caller never reads errno (which a
 * call may still have changed).  A file is a plain file descriptor
 * (close() it, poll() it, put it in an epoll set); an htw_oplist belongs
 * to the thread that fills it.  The library holds no state of its own but
 * the rings a program maps and, for the request timeouts, its view of
 * their slots, which belongs to one thread at a time.
 *
 * The module's ABI version a call needs is in its manual page; HTW_IOC_INFO
 * (htw_get_info()) tells which version is loaded.
 */
#ifndef LIBHTW_H
#define LIBHTW_H

#include <stddef.h>
#include <stdint.h>

#include <linux/htw.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LIBHTW_VERSION_MAJOR	1
#define LIBHTW_VERSION_MINOR	2

/* The device htw_open() opens. */
#define HTW_DEVICE_PATH		"/dev/htw"

/*
 * htw_open - open /dev/htw: a new context, with no timers
 * @flags: O_NONBLOCK, O_CLOEXEC, or both, or 0
 *
 * Returns the file descriptor, or -errno.
 */
int htw_open(int flags);

/* htw_get_info - fill @info with what HTW_IOC_INFO reports */
int htw_get_info(int fd, struct htw_info *info);

/*
 * htw_arm - arm a new timer as @spec says, and write its id to @spec->id
 *
 * Returns 0, or -errno.
 */
int htw_arm(int fd, struct htw_timer_spec *spec);

/* htw_modify - re-arm timer @spec->id as @spec says; 0 or -errno */
int htw_modify(int fd, const struct htw_timer_spec *spec);

/* htw_cancel - cancel timer @id and release its id; 0 or -errno */
int htw_cancel(int fd, uint32_t id);

/*
 * htw_read_events - read up to @nr events into @events
 *
 * Waits for one unless @fd is O_NONBLOCK.  Returns how many were read (at
 * least 1), or -errno.
 */
int htw_read_events(int fd, struct htw_event *events, unsigned int nr);

/*
 * htw_clock_now - the present on the clock that HTW_TIMER_* @flags name
 *
 * CLOCK_BOOTTIME for HTW_TIMER_BOOTTIME, CLOCK_REALTIME for
 * HTW_TIMER_REALTIME, else CLOCK_MONOTONIC; in ns, as an absolute expiry
 * (HTW_TIMER_ABSTIME) is given.  0 if the clock cannot be read.
 */
uint64_t htw_clock_now(uint32_t flags);

/**
 * struct htw_oplist - operations gathered for one or more HTW_IOC_BATCH
 * @ops: the operations, @size of them
 * @nr: how many are queued
 * @submitted: how many of those htw_oplist_submit() has run
 * @size: room in @ops
 *
 * After a submit, @ops[i].result is each operation's result and, for an
 * arm, @ops[i].spec.id the new timer's id.
 */
struct htw_oplist {
	struct htw_op *ops;
	unsigned int nr;
	unsigned int submitted;
	unsigned int size;
};

int htw_oplist_init(struct htw_oplist *list, unsigned int size);
void htw_oplist_free(struct htw_oplist *list);
void htw_oplist_reset(struct htw_oplist *list);

/* Queue an operation; return it, or NULL if @list is full. */
struct htw_op *htw_oplist_arm(struct htw_oplist *list,
			      const struct htw_timer_spec *spec);
struct htw_op *htw_oplist_modify(struct htw_oplist *list,
				 const struct htw_timer_spec *spec);
struct htw_op *htw_oplist_cancel(struct htw_oplist *list, uint32_t id);

/*
 * htw_oplist_submit - run the queued operations not run yet: those queued
 * since the last submit, and any a stopped batch left behind
 *
 * Returns how many ran, or -errno if none did.
 */
int htw_oplist_submit(int fd, struct htw_oplist *list);

/**
 * struct htw_ring - a file's ring timers, as htw_ring_map() mapped them
 * @fd: the file
 * @nr_slots: the slots: indices 0 to @nr_slots - 1
 * @sq_entries: entries of the submission ring
 * @cq_entries: entries of the completion ring
 * @sq_tail: the submission tail the program has made (published by
 *	htw_ring_submit())
 * @sq_tail_p, @cq_head_p, @sq_head_p, @cq_tail_p: the shared indices
 * @flags_p: the kernel's flag word (HTW_RING_CQ_WAITING)
 * @sqes: the submission entries
 * @cqes: the completion entries
 * @slots: the slots' words
 * @rw, @ro: the two mappings
 * @rw_size, @ro_size: their sizes
 *
 * One thread submits and one reaps, or the program serialises them; a
 * slot's word may be stored from any thread.
 */
struct htw_ring {
	int fd;
	__u32 nr_slots;
	__u32 sq_entries;
	__u32 cq_entries;
	__u32 sq_tail;
	__u32 *sq_tail_p;
	__u32 *cq_head_p;
	const __u32 *sq_head_p;
	const __u32 *cq_tail_p;
	const __u32 *flags_p;
	struct htw_sqe *sqes;
	const struct htw_cqe *cqes;
	__u64 *slots;
	void *rw;
	void *ro;
	size_t rw_size;
	size_t ro_size;
};

/*
 * htw_ring_map - create @fd's ring timers (HTW_IOC_RING_SETUP) and map
 * them into @ring
 *
 * Returns 0, or -errno.
 */
int htw_ring_map(int fd, uint32_t nr_slots, uint32_t sq_entries,
		 struct htw_ring *ring);

/*
 * htw_ring_unmap - unmap @ring (once more does nothing); the file keeps its
 * timers until it is closed
 */
void htw_ring_unmap(struct htw_ring *ring);

/*
 * htw_ring_arm - store @deadline in @slot and queue an arm of @slot as
 * generation @gen for it (absolute ns, CLOCK_MONOTONIC)
 *
 * Returns 0, or -EAGAIN if the submission ring is full (htw_ring_submit()
 * makes room), -EINVAL if @slot is beyond the last or @deadline above
 * HTW_TIME_MAX (the slot is left as it was).
 */
int htw_ring_arm(struct htw_ring *ring, uint32_t slot, uint32_t gen,
		 uint64_t deadline);

/*
 * htw_ring_cancel - queue a cancel of @slot, armed as generation @gen
 *
 * Returns 0, -EAGAIN or -EINVAL as htw_ring_arm().
 */
int htw_ring_cancel(struct htw_ring *ring, uint32_t slot, uint32_t gen);

/*
 * htw_ring_extend - push @slot's deadline later to @deadline: one store,
 * no system call, ignored for a slot beyond the last.  The kernel reads
 * the word when the deadline it holds comes: the last store counts, so an
 * earlier one undoes a later one stored before it (down to the deadline
 * the kernel holds, never below).  HTW_SLOT_CANCEL cancels the timer
 * then, with no completion.
 */
static inline void htw_ring_extend(struct htw_ring *ring, uint32_t slot,
				   uint64_t deadline)
{
	if (slot < ring->nr_slots)
		__atomic_store_n(&ring->slots[slot], deadline, __ATOMIC_RELAXED);
}

/*
 * htw_ring_submit - hand the queued entries to the kernel, and let it run
 * the due timers (HTW_IOC_RING_ENTER); with @wait_nr, then wait until the
 * completion ring holds that many completions
 *
 * Returns the entries the kernel consumed, or -errno.
 */
int htw_ring_submit(struct htw_ring *ring, unsigned int wait_nr);

/*
 * htw_ring_reap - take up to @nr completions off the completion ring into
 * @cqes, without a system call
 *
 * Returns how many were taken.  If HTW_RING_CQ_WAITING is then set in
 * *@ring->flags_p, timers wait for the room this made: htw_ring_submit()
 * posts them.
 */
unsigned int htw_ring_reap(struct htw_ring *ring, struct htw_cqe *cqes,
			   unsigned int nr);

/*
 * Request timeouts (libhtw 1.2)
 * -----------------------------
 * A timeout started for each request and stopped when the request
 * completes, almost never firing: the workload timing wheels were made
 * for.  A struct htw_timeouts keeps such timeouts on the ring timers of a
 * file (htw_ring_map(3)), so that starting and stopping one is, in the
 * common case, a few stores and no system call, and only the timeouts
 * that expire come back.
 *
 * Timeouts are started in classes, one per duration (as libevent's common
 * timeouts are).  Each class keeps a pool of ring slots, last in first
 * out.  Stopping a timeout only puts its slot back in the pool: the
 * kernel still holds a timer for the slot's deadline.  Starting the next
 * timeout of the class on that slot stores the new deadline, which is
 * later, in the slot's word: when the old deadline comes the kernel finds
 * the later one and places the timer again.  So a slot costs the kernel
 * one look per duration, however many requests used it meanwhile.  A
 * start that a store cannot serve (a slot the kernel holds no timer for,
 * or one whose deadline is later than the new one) queues an arm in the
 * submission ring; the queued arms reach the kernel in one call, at the
 * next htw_timeouts_submit() or htw_timeouts_expired(), or when the
 * submission ring is full.  A completion that finds its slot stopped, or
 * started again for a later deadline, is the library's and is never
 * reported.
 *
 * The promises: an expiry is reported once for each timeout that was not
 * stopped, never for one that was, never before its deadline (the @now
 * given to htw_timeout_start() plus its class's duration), and at most one
 * tick of the wheel after it, plus the time the program takes to call
 * htw_timeouts_expired() once the file polls readable.  Provided that the
 * program calls htw_timeouts_submit() (or htw_timeouts_expired()) before
 * it sleeps, and reads the file's readiness with poll(), epoll, or any
 * loop built on them.
 *
 * Thread model: a struct htw_timeouts belongs to one thread at a time, as
 * an io_uring ring does; a program with several threads gives each its
 * own, each on a file of its own.  After fork(), only one of the two
 * processes may use it (the other frees its copy unused): they share the
 * rings, and each copy believes itself their only user.  @now is
 * CLOCK_MONOTONIC in the time namespace of the process that opened the
 * file, as the ring's deadlines are.  Memory: 40 bytes a timeout in the
 * library, beside the ring's (see htw_ring_map(3): a word and a completion
 * entry shared with the kernel, and 64 bytes of kernel memory).
 */
struct htw_timeouts;

/* Most classes one struct htw_timeouts holds. */
#define HTW_TIMEOUTS_CLASSES_MAX	64

/**
 * struct htw_timeout_expiry - an expired timeout, as htw_timeouts_expired()
 *	reports it
 * @handle: what htw_timeout_start() gave back for it
 * @tag: the program's value it was started with
 * @deadline: when it was due (CLOCK_MONOTONIC ns); it was found due no
 *	earlier
 */
struct htw_timeout_expiry {
	__u64 handle;
	__u64 tag;
	__u64 deadline;
};

/**
 * struct htw_timeouts_stats - what a struct htw_timeouts has done
 * @started: timeouts started
 * @stopped: timeouts stopped before they expired
 * @expired: expiries reported
 * @stored: starts served by a store alone, with no kernel work
 * @armed: arms queued: by starts, and by completions that found the
 *	running timeout's store too late
 * @submits: calls into the kernel: to hand it queued arms, or to run the
 *	file's due timers
 * @stale: completions of slots stopped or started again since, not
 *	reported
 * @rearmed: completions that came for a deadline earlier than the running
 *	timeout's, because the store of its deadline landed after the kernel
 *	read the slot: the slot was armed again
 * @unexpected: completions the library had no use for (an error, a slot
 *	out of range): never made by a well-behaved kernel and program
 */
struct htw_timeouts_stats {
	__u64 started;
	__u64 stopped;
	__u64 expired;
	__u64 stored;
	__u64 armed;
	__u64 submits;
	__u64 stale;
	__u64 rearmed;
	__u64 unexpected;
};

/*
 * htw_timeouts_create - give @fd's ring timers (it must have none yet) to
 * request timeouts: at most @max running at once
 *
 * Returns 0 and *@timeouts, or -errno (those of htw_ring_map(), and
 * -ENOMEM).
 */
int htw_timeouts_create(int fd, __u32 max, struct htw_timeouts **timeouts);

/* htw_timeouts_free - unmap and free @timeouts; the file stays open */
void htw_timeouts_free(struct htw_timeouts *timeouts);

/*
 * htw_timeouts_class - the class of timeouts of @duration ns, made on first
 * use
 *
 * Returns its number (0 or more), or -EINVAL for a duration of 0 or above
 * HTW_TIME_MAX, or -ENOSPC past HTW_TIMEOUTS_CLASSES_MAX classes.
 */
int htw_timeouts_class(struct htw_timeouts *timeouts, __u64 duration);

/*
 * htw_timeout_start - start a timeout of class @cls, due at @now plus the
 * class's duration; @now is CLOCK_MONOTONIC in ns (htw_clock_now(0)), read
 * once per turn of the program's loop if it likes
 *
 * Returns 0 and *@handle, or -EINVAL (no such class, a deadline above
 * HTW_TIME_MAX), -ENOSPC (@max timeouts run already), -EBUSY (the
 * submission ring is full and the kernel takes no more until
 * htw_timeouts_expired() reaps), or an error of HTW_IOC_RING_ENTER.
 */
int htw_timeout_start(struct htw_timeouts *timeouts, unsigned int cls,
		      __u64 now, __u64 tag, __u64 *handle);

/*
 * htw_timeout_stop - stop the timeout of @handle: a few stores
 *
 * Returns 0, or -ENOENT if it is not running (stopped already, or its
 * expiry was reported).
 */
int htw_timeout_stop(struct htw_timeouts *timeouts, __u64 handle);

/*
 * htw_timeouts_submit - hand the queued arms to the kernel, if there are
 * any: call it before the program sleeps
 *
 * Returns the arms handed over (0 without a system call if none were
 * queued), or -errno of HTW_IOC_RING_ENTER.
 */
int htw_timeouts_submit(struct htw_timeouts *timeouts);

/*
 * htw_timeouts_expired - take up to @nr expired timeouts into @expiries,
 * once the file polls readable; hands over queued arms too
 *
 * Returns how many were taken, or -errno of HTW_IOC_RING_ENTER.
 */
int htw_timeouts_expired(struct htw_timeouts *timeouts,
			 struct htw_timeout_expiry *expiries, unsigned int nr);

/* htw_timeouts_stats - copy what @timeouts has done into @stats */
void htw_timeouts_stats(const struct htw_timeouts *timeouts,
			struct htw_timeouts_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* LIBHTW_H */
