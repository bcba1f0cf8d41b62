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
 * call may still have changed).  The library holds no state of its own: a
 * file is a plain file descriptor (close() it, poll() it, put it in an
 * epoll set), and an htw_oplist belongs to the thread that fills it.
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
#define LIBHTW_VERSION_MINOR	1

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

#ifdef __cplusplus
}
#endif

#endif /* LIBHTW_H */
