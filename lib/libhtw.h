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

#include <stdint.h>

#include <linux/htw.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LIBHTW_VERSION_MAJOR	1
#define LIBHTW_VERSION_MINOR	0

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

#ifdef __cplusplus
}
#endif

#endif /* LIBHTW_H */
