/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * User-space ABI of /dev/htw, the hierarchical timing wheel device
 *
 * Each open() of /dev/htw is a context: a set of timers, named by ids that
 * only this file descriptor sees, on wheels of its own, and a queue of their
 * events.  Timers are armed, modified and cancelled by ioctl(), alone or in
 * batches; their expiries are read() as fixed-size struct htw_event
 * records; poll() and epoll report EPOLLIN while any is queued, or any
 * timer is due.  close() cancels every timer.
 *
 * The work of a file's expiries is done by its users, in their own
 * context: when timers are due, the kernel only marks the file due and
 * wakes its waiters (readers and pollers, once per expiry of the file's
 * wheel and once per read that made events it left behind, never once per
 * timer).  read(),
 * poll() and HTW_IOC_INFO turn the due timers into events, a batch at a
 * time; a file nobody reads costs no more work once it was told.  A wake,
 * or poll's EPOLLIN, may find nothing to read, as a spurious wake-up does,
 * when far timers only moved closer (at most once per level a timer comes
 * down, never for a timer within &htw_info.wheel_size ticks) or another
 * user of the file held it.  An event's @fired is when the kernel found
 * its timer due: when the wheel marked the file due, if the timer was due
 * by then, else when a run found it, never before its expiry.
 *
 * An id is never 0.  Its low bits name a slot of the file, as few as
 * &htw_info.max_timers needs, and the bits above count the timers armed in
 * the file; so an id kept after its timer is gone (a one-shot timer whose
 * event was read, a cancelled timer) gets %ENOENT, rather than reaching the
 * timer that took the slot, until as many more timers have been armed in
 * the file as those upper bits can count (2048 with the default
 * max_timers).
 *
 * A periodic timer is re-armed by the read() of its event, not when it
 * expires: while its event waits to be read, the timer is parked and costs
 * nothing.  The read counts the expiries that passed meanwhile and re-arms
 * it for the first one after the present, as timerfd does.
 *
 * Times are __u64 nanoseconds on CLOCK_MONOTONIC, or on CLOCK_BOOTTIME for
 * a timer armed with %HTW_TIMER_BOOTTIME, or on CLOCK_REALTIME for one armed
 * with %HTW_TIMER_REALTIME, as clock_gettime() reads them.  A timer is never
 * delivered before its expiry, and at most one tick of the wheel (see struct
 * htw_info) after it, plus scheduling latency.
 *
 * In a time namespace, as with timerfd_settime(), an absolute expiry is a
 * time on the clocks of the caller's namespace; the times a file reports
 * are on the clocks of the namespace of the process that opened it.
 *
 * A CLOCK_REALTIME timer follows the wall clock: when the clock is set
 * (settimeofday(), clock_settime(), a step of NTP, a resume), the timer is
 * moved to fire when the wall clock reaches its expiry, and it never fires
 * while the wall clock reads less than its expiry (an event queued before
 * the clock was set back stays queued).  Armed with
 * %HTW_TIMER_CANCEL_ON_SET, the timer is cancelled by any set of the wall
 * clock after it was armed instead, and its event says so
 * (%HTW_EVENT_CANCELED, with a count of 0), as timerfd's -ECANCELED does:
 * an expiry it queued before the set and that was not read yet is
 * discarded, as a timerfd's ticks are.  A relative expiry on CLOCK_REALTIME
 * is a duration, as with timerfd and POSIX timers: the timer runs on
 * CLOCK_MONOTONIC, no set of the wall clock moves it, and its events are
 * CLOCK_MONOTONIC's (without %HTW_EVENT_REALTIME).
 *
 * Every structure below may grow at its end.  The kernel reads the size the
 * caller passes (in the ioctl number, or in @op_size for batch operations):
 * a shorter structure than the first version is refused with -EINVAL, the
 * fields a caller does not know of are taken as zero, and a longer structure
 * is accepted if the bytes the kernel does not know of are zero (-EINVAL
 * otherwise).
 *
 * read() returns as many whole struct htw_event records as its buffer holds,
 * at least one; it waits for one unless the file is O_NONBLOCK.  It first
 * turns due timers into events, as many as the buffer has room for; more
 * may be made, and wait for the next read.  Errors:
 *
 * - %EINVAL: the buffer is smaller than one record.
 * - %EAGAIN: no event is queued, no timer is due, and the file is
 *   O_NONBLOCK.  A non-blocking read never waits for an event, but with one
 *   queued or due, like a pipe's, it waits for other users of the same file
 *   (an ioctl, another read) to finish.  A read that may not block at all
 *   (preadv2()'s RWF_NOWAIT, io_uring) fails with %EAGAIN then too.
 * - %EINTR: a signal came while waiting, for an event or for another user
 *   of the file (the read restarts under SA_RESTART); or a fatal signal
 *   came while the read turned due timers into events (those it did not
 *   reach stay due, and nothing is lost).
 * - %EFAULT: the buffer is not writable; the events stay queued.
 *
 * A read never fails for lack of memory: a periodic timer's re-arm needs
 * none (its arm took what it may need).
 *
 * Errors common to all ioctl commands:
 *
 * - %ENOTTY: unknown command (wrong type, number or direction).
 * - %EFAULT: the argument, or memory it points to, is not accessible.
 * - %EINVAL: a structure shorter than its first version, an unknown flag,
 *   a non-zero reserved field, or bytes beyond the known structure that are
 *   not zero.
 * - %EINTR: HTW_IOC_ARM, HTW_IOC_MODIFY, HTW_IOC_CANCEL and HTW_IOC_BATCH
 *   wait for other users of the file (an ioctl, a read) to finish; a fatal
 *   signal ends that wait, and the call, before it did anything.  A caller
 *   that lives on never sees it.
 */
#ifndef _UAPI_LINUX_HTW_H
#define _UAPI_LINUX_HTW_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define HTW_ABI_VERSION		5

/* Latest expiry, and longest period, accepted: the largest ktime_t. */
#define HTW_TIME_MAX		((__u64)0x7fffffffffffffffULL)

/* Most operations one HTW_IOC_BATCH carries. */
#define HTW_BATCH_MAX		65536

/* Flags of struct htw_timer_spec. */
#define HTW_TIMER_ABSTIME	_BITUL(0)
#define HTW_TIMER_BOOTTIME	_BITUL(1)
#define HTW_TIMER_REALTIME	_BITUL(2)	/* version 3 */
#define HTW_TIMER_CANCEL_ON_SET	_BITUL(3)	/* version 3 */

/* Flags of struct htw_event. */
#define HTW_EVENT_LAST		_BITUL(0)
#define HTW_EVENT_BOOTTIME	_BITUL(1)
#define HTW_EVENT_REALTIME	_BITUL(2)	/* version 3 */
#define HTW_EVENT_CANCELED	_BITUL(3)	/* version 3 */

/**
 * struct htw_info - what HTW_IOC_INFO reports
 * @version: %HTW_ABI_VERSION of the running module
 * @wheel_size: buckets per level of the wheels
 * @tick_ns: the wheels' tick: the most a timer is late, before scheduling
 *	latency
 * @min_period_ns: shortest period a periodic timer may have
 * @max_timers: most timers one context may hold
 * @batch_max: most operations in one HTW_IOC_BATCH (%HTW_BATCH_MAX)
 * @expire_budget: most callbacks one batch of an expiry run of a wheel
 *	makes (a run makes batches for at most 250 us, then leaves the rest to
 *	a new run)
 * @event_size: size of the records read() returns, sizeof(struct htw_event)
 * @nr_timers: timers this context holds: armed, or expired one-shot timers
 *	whose event has not been read yet
 * @nr_queued: events of this context waiting to be read; HTW_IOC_INFO
 *	first turns the context's due timers into events, as a read does, so
 *	that this counts what a read would find
 * @max_user_timers: @max_user_bytes in timers (its bytes divided by a
 *	timer's, rounded down, at most U32_MAX): what versions 2 and 3
 *	reported, kept for compatibility
 * @user_timers: @user_bytes in timers, rounded down as @max_user_timers is
 *	(so that a user within the limit never reads more than it), at most
 *	U32_MAX; kept for compatibility (version 2)
 * @max_user_bytes: the most memory one user (the uid that opened the
 *	file) may pin with its timers across all of its contexts, in bytes:
 *	each timer counts its size, each context's wheels and id nodes the
 *	most memory they can take (version 4).  A user is a kuid, the same
 *	in every namespace; what the uids of a user namespace hold counts
 *	against its owner too, and so up to the initial namespace or one root
 *	made: neither mapping more uids nor making namespaces multiplies the
 *	limit
 * @user_bytes: what that user holds now, counted the same way, with what
 *	the uids of the namespaces it owns hold (version 4)
 */
struct htw_info {
	__u32 version;
	__u32 wheel_size;
	__u64 tick_ns;
	__u64 min_period_ns;
	__u32 max_timers;
	__u32 batch_max;
	__u32 expire_budget;
	__u32 event_size;
	__u32 nr_timers;
	__u32 nr_queued;
	__u32 max_user_timers;
	__u32 user_timers;
	__u64 max_user_bytes;
	__u64 user_bytes;
};

/* The sizes struct htw_info has had: in ABI version 1, 2 and 3, and 4. */
#define HTW_INFO_SIZE_VER0	48
#define HTW_INFO_SIZE_VER1	56
#define HTW_INFO_SIZE_VER2	72

/**
 * struct htw_timer_spec - a timer to arm (HTW_IOC_ARM) or re-arm
 *	(HTW_IOC_MODIFY)
 * @id: HTW_IOC_ARM: out, the new timer's id (its value on input is
 *	ignored).  HTW_IOC_MODIFY: in, the timer to re-arm.
 * @flags: %HTW_TIMER_ABSTIME: @expires is a time on the clock, else ns from
 *	now.  %HTW_TIMER_BOOTTIME: the timer runs on CLOCK_BOOTTIME (it counts
 *	time suspended); %HTW_TIMER_REALTIME: on CLOCK_REALTIME, the wall
 *	clock (a relative expiry there is a duration: the timer runs on
 *	CLOCK_MONOTONIC); else on CLOCK_MONOTONIC.  Not both.
 *	%HTW_TIMER_CANCEL_ON_SET, with %HTW_TIMER_REALTIME and
 *	%HTW_TIMER_ABSTIME only: any set of the wall clock after the timer was
 *	armed cancels it, and its unread expiry, with an event of
 *	%HTW_EVENT_CANCELED.
 * @expires: the first expiry; once made absolute it must not exceed
 *	%HTW_TIME_MAX.  An expiry already past is delivered at once.
 * @period: 0 for a one-shot timer; else the ns between expiries, from
 *	&htw_info.min_period_ns to %HTW_TIME_MAX.  Expiry n is at
 *	@expires + n * @period, whenever it is delivered.
 * @user_data: any value; it comes back in each of the timer's events
 */
struct htw_timer_spec {
	__u32 id;
	__u32 flags;
	__u64 expires;
	__u64 period;
	__u64 user_data;
};

#define HTW_TIMER_SPEC_SIZE_VER0	32

/**
 * struct htw_cancel - a timer to cancel (HTW_IOC_CANCEL)
 * @id: the timer
 * @flags: must be zero
 */
struct htw_cancel {
	__u32 id;
	__u32 flags;
};

#define HTW_CANCEL_SIZE_VER0	8

/**
 * enum htw_op_code - what one operation of a batch does
 * @HTW_OP_ARM: as HTW_IOC_ARM, with &htw_op.spec
 * @HTW_OP_MODIFY: as HTW_IOC_MODIFY, with &htw_op.spec
 * @HTW_OP_CANCEL: as HTW_IOC_CANCEL of &htw_op.spec.id; the other fields
 *	of &htw_op.spec must be zero
 */
enum htw_op_code {
	HTW_OP_ARM	= 1,
	HTW_OP_MODIFY	= 2,
	HTW_OP_CANCEL	= 3,
};

/**
 * struct htw_op - one operation of a batch
 * @op: an &enum htw_op_code; any other value fails with -EINVAL
 * @result: out: 0, or the negative errno the operation alone would have
 *	made its ioctl fail with
 * @spec: the timer; for %HTW_OP_ARM, @spec.id is written back as well
 */
struct htw_op {
	__u32 op;
	__s32 result;
	struct htw_timer_spec spec;
};

#define HTW_OP_SIZE_VER0	40

/**
 * struct htw_batch - an array of operations (HTW_IOC_BATCH)
 * @ops: user pointer to @count operations, @op_size bytes apart
 * @count: number of operations, at most %HTW_BATCH_MAX
 * @op_size: sizeof(struct htw_op) as the caller knows it, from
 *	%HTW_OP_SIZE_VER0 to the page size
 * @flags: must be zero
 * @reserved: must be zero
 *
 * The operations run one after the other in array order, each as its own
 * ioctl would, and each writes its own @result: one that fails does not
 * stop the others, nor undo those before it.  Only a fault on the array
 * itself stops the batch (see HTW_IOC_BATCH).
 */
struct htw_batch {
	__u64 ops;
	__u32 count;
	__u32 op_size;
	__u32 flags;
	__u32 reserved;
};

#define HTW_BATCH_SIZE_VER0	24

/**
 * struct htw_event - one record returned by read()
 * @id: the timer
 * @flags: %HTW_EVENT_LAST: the timer was one-shot, or a set of the wall
 *	clock cancelled it (%HTW_EVENT_CANCELED); this is its last event and
 *	its id is released (it may be given to a new timer).  A timer
 *	cancelled by %HTW_IOC_CANCEL, or by an operation of
 *	%HTW_OP_CANCEL, has no last event: its queued event is dropped.
 *	%HTW_EVENT_BOOTTIME, %HTW_EVENT_REALTIME: the times below are
 *	on CLOCK_BOOTTIME, on CLOCK_REALTIME, else on CLOCK_MONOTONIC.
 *	%HTW_EVENT_CANCELED (with %HTW_EVENT_LAST): a timer armed with
 *	%HTW_TIMER_CANCEL_ON_SET was cancelled because the wall clock was set.
 *	An expiry it queued before the set and that was not read yet is
 *	discarded: this event reports the cancel instead.
 * @user_data: the timer's &htw_timer_spec.user_data
 * @count: the expiries since the timer's previous event was read: at least
 *	1, but 0 in an event of %HTW_EVENT_CANCELED.  The expiries of a
 *	periodic timer that pass while its event waits to be read are counted
 *	in that event, up to the moment of the read.
 * @expires: the latest of those expiries, as scheduled.  In an event of
 *	%HTW_EVENT_CANCELED, the timer's latest expiry as scheduled: the one
 *	it was waiting for, or that of the expiry the cancel discarded.
 * @fired: when that expiry was delivered: by the wheel, or, for an expiry
 *	of a periodic timer that passed while its event was unread, by the
 *	read() that counted it; @fired - @expires is its lateness, never
 *	negative.  But in an event of %HTW_EVENT_CANCELED, @fired is when the
 *	cancel was found, which may be before @expires.
 *
 * A timer has at most one event queued.  Events are read in the order they
 * were first queued.
 */
struct htw_event {
	__u32 id;
	__u32 flags;
	__u64 user_data;
	__u64 count;
	__u64 expires;
	__u64 fired;
};

/*
 * Timers in shared memory (version 5)
 * -----------------------------------
 * Beside its ioctl timers, a file may hold ring timers: slots of memory it
 * shares with the program, armed through a submission ring and delivered
 * through a completion ring, so that the common operations cost no system
 * call.  HTW_IOC_RING_SETUP sizes them, once per file; mmap() maps them.
 *
 * A slot is a timer the program names by its index, from 0 to
 * &htw_ring_setup.nr_slots - 1, and a generation of the program's choosing
 * (a __u32 it changes at each arm, so that a completion of an earlier arm
 * of the slot can be told from one of this arm).  Its word in the slots
 * array is the program's, and the kernel only ever reads it: the kernel
 * arms a slot for the deadline an %HTW_SQE_ARM entry gives, and when that
 * deadline comes it reads the slot's word once:
 *
 * - a deadline later than the one it holds, and not past: the timer is
 *   placed again, for that deadline, and the word is read again then.  So
 *   pushing a deadline later is a plain store, with no system call, and
 *   never makes the timer fire early;
 * - %HTW_SLOT_CANCEL: the timer is cancelled, with no completion;
 * - anything else: the timer is delivered, for the later of the deadline
 *   it holds and the word's (a value above %HTW_TIME_MAX counts as none).
 *
 * The program writes the word with one 64-bit store; a 32-bit program too
 * (an atomic store of 8 bytes, as C11's atomic_store() of a uint64_t).  A
 * word written as two halves can be read half old, half new: a deadline
 * nobody wrote, which the kernel takes as any word, so that the timer is
 * delivered at the deadline the kernel holds or placed again for that
 * later one, never early, and no other slot is touched.
 *
 * The word is read once the completion ring has room for the timer's
 * completion: a timer whose deadline comes while the ring is full waits,
 * in order, and stores meanwhile still count.  A store the kernel reads
 * after it delivered the timer is too late, as an extension of any timer
 * is once it has expired: the completion says which deadline it acted on
 * (&htw_cqe.deadline), and a program that finds its own deadline later
 * than that knows its store lost and arms again.  A store never makes a
 * timer fire before the deadline the kernel accepted;
 * moving a deadline earlier takes an %HTW_SQE_ARM.  Before an arm, the
 * program stores the arm's deadline (or any value not later) in the slot,
 * so that a store left from an earlier arm does not extend the new one;
 * htw_ring_arm(3) does.
 *
 * Deadlines are __u64 ns on CLOCK_MONOTONIC, absolute, on the clock of the
 * time namespace of the process that opened the file, as the times the
 * file reports are; one before that clock's start is taken as its start
 * (and reported so).
 *
 * The submission ring carries %HTW_SQE_ARM and %HTW_SQE_CANCEL entries
 * (struct htw_sqe), consumed by HTW_IOC_RING_ENTER; an entry that succeeds
 * makes no completion, one that fails makes one with its error in
 * &htw_cqe.res.  The completion ring carries expiries and those errors
 * (struct htw_cqe).  Each ring is an array of a power-of-two entries and
 * two __u32 indices, head and tail, that only ever count up (wrapping at
 * 2^32); the entry of index i is at i & (entries - 1).  The producer
 * writes entries, then stores its tail with a release; the consumer loads
 * the tail with an acquire, reads the entries, then stores its head with a
 * release.  The program produces submissions (it writes the submission
 * tail) and consumes completions (it writes the completion head); the
 * kernel does the rest.  The kernel keeps its own copies of the indices it
 * owns and never reads them back from shared memory.
 *
 * Nothing is ever dropped.  A timer waits in the kernel while the
 * completion ring is full, and the submission ring is consumed only while
 * the completion ring has room for an error; a slot has at most one timer
 * waiting so (&htw_ring_setup.cq_entries is at least @nr_slots, so a
 * program that reaps a slot's completion before it arms or cancels the
 * slot again never fills the ring).
 *
 * The memory is mapped in two parts, each with MAP_SHARED and at its own
 * offset: at %HTW_RING_OFF_RW, what the program writes (the submission
 * tail, the completion head, the submission entries and the slots); at
 * %HTW_RING_OFF_RO, read-only, what the kernel writes (the submission
 * head, the completion tail and the completion entries).  The pages are
 * the kernel's, charged to the memory cgroup of the caller of
 * HTW_IOC_RING_SETUP and to the account of the file's user
 * (&htw_info.user_bytes), and freed once the file is closed
 * and every mapping is gone; a mapping is inherited by fork() as any
 * shared mapping is, and the slots it maps are the file's, whoever
 * stores.
 *
 * The expiry work of ring timers is done, as an ioctl timer's, by the
 * file's users: HTW_IOC_RING_ENTER and poll() run the due timers and
 * post their completions.  poll() and epoll report EPOLLIN while a
 * completion is unread, a ring timer is due, or timers wait for room the
 * program has made by reaping (a reap wakes no one: with EPOLLET, call
 * HTW_IOC_RING_ENTER after reaping a full ring).
 *
 * Every value in shared memory is read once, and checked before use; a
 * program that writes nonsense there harms only its own ring timers.
 */

/* Most entries of a submission ring. */
#define HTW_RING_SQ_MAX		4096

/* A slot's word that cancels its timer. */
#define HTW_SLOT_CANCEL		((__u64)~0ULL)

/* The mmap() offsets of the two parts of the shared memory. */
#define HTW_RING_OFF_RW		0ULL
#define HTW_RING_OFF_RO		0x10000000ULL

/**
 * struct htw_ring_offsets - where each part of the rings is, in bytes
 *	from the start of its mapping
 * @sq_tail: (writable part) the submission tail, a __u32
 * @cq_head: (writable part) the completion head, a __u32
 * @sqes: (writable part) the submission entries
 * @slots: (writable part) the slots' words, &htw_ring_setup.nr_slots __u64
 * @sq_head: (read-only part) the submission head, a __u32
 * @cq_tail: (read-only part) the completion tail, a __u32
 * @cqes: (read-only part) the completion entries
 * @flags: (read-only part) a __u32 of %HTW_RING_CQ_WAITING, published with
 *	the completion tail
 */
struct htw_ring_offsets {
	__u32 sq_tail;
	__u32 cq_head;
	__u32 sqes;
	__u32 slots;
	__u32 sq_head;
	__u32 cq_tail;
	__u32 cqes;
	__u32 flags;
};

/*
 * The read-only flag word's bit: timers wait in the kernel for room in the
 * completion ring.  A program that sees it after reaping makes an
 * HTW_IOC_RING_ENTER (a reap is a store, and wakes no one), as io_uring's
 * IORING_SQ_CQ_OVERFLOW asks.
 */
#define HTW_RING_CQ_WAITING	_BITUL(0)

/**
 * struct htw_ring_setup - the shared memory of a file (HTW_IOC_RING_SETUP)
 * @nr_slots: in: the ring timers, from 1 to &htw_info.max_timers, and at
 *	most 8,388,608
 * @sq_entries: in: the submission entries, from 1 to %HTW_RING_SQ_MAX;
 *	out: rounded up to a power of two
 * @cq_entries: out: the completion entries: @nr_slots, or @sq_entries if
 *	more, rounded up to a power of two
 * @flags: must be zero
 * @rw_size: out: bytes of the writable part, to map at %HTW_RING_OFF_RW
 * @ro_size: out: bytes of the read-only part, to map at %HTW_RING_OFF_RO
 * @off: out: where each index and array is
 *
 * The fields that are only out (@cq_entries, @rw_size, @ro_size, @off)
 * must be zero on input.
 */
struct htw_ring_setup {
	__u32 nr_slots;
	__u32 sq_entries;
	__u32 cq_entries;
	__u32 flags;
	__u64 rw_size;
	__u64 ro_size;
	struct htw_ring_offsets off;
};

#define HTW_RING_SETUP_SIZE_VER0	64

/**
 * enum htw_sqe_op - what a submission entry does
 * @HTW_SQE_ARM: arm slot &htw_sqe.slot as generation &htw_sqe.gen, for
 *	&htw_sqe.deadline, whatever the slot's state: an armed timer of it
 *	is moved (earlier or later), and one waiting for room in the
 *	completion ring is armed again
 * @HTW_SQE_CANCEL: cancel the timer of slot &htw_sqe.slot, which must be
 *	armed as generation &htw_sqe.gen and not delivered (waiting for
 *	room counts as armed); &htw_sqe.deadline must be zero
 */
enum htw_sqe_op {
	HTW_SQE_ARM	= 1,
	HTW_SQE_CANCEL	= 2,
};

/**
 * struct htw_sqe - an entry of the submission ring
 * @op: an &enum htw_sqe_op
 * @slot: the slot
 * @gen: its generation
 * @flags: must be zero
 * @deadline: of %HTW_SQE_ARM, the deadline, at most %HTW_TIME_MAX; one
 *	already past is delivered at the next run
 *
 * Errors, in &htw_cqe.res: %EINVAL: an unknown @op, non-zero @flags, a
 * slot beyond the last, a deadline above %HTW_TIME_MAX, a cancel with a
 * deadline.  %ENOENT: a cancel of a slot not armed as @gen (idle,
 * delivered, or armed as another generation).
 */
struct htw_sqe {
	__u32 op;
	__u32 slot;
	__u32 gen;
	__u32 flags;
	__u64 deadline;
};

/**
 * struct htw_cqe - an entry of the completion ring
 * @slot: the slot
 * @gen: the generation it was armed as (of an error, the entry's)
 * @res: 0 for an expiry, or the negative errno of a submission entry
 * @flags: zero
 * @deadline: of an expiry, the deadline the kernel acted on: the latest
 *	the timer was given, by its arm or by a store, never after the
 *	moment the completion was posted; of an error, the entry's
 */
struct htw_cqe {
	__u32 slot;
	__u32 gen;
	__s32 res;
	__u32 flags;
	__u64 deadline;
};

/* Flags of struct htw_ring_enter. */
#define HTW_ENTER_GETEVENTS	_BITUL(0)

/**
 * struct htw_ring_enter - one call for the rings (HTW_IOC_RING_ENTER)
 * @to_submit: most submission entries to consume
 * @min_complete: with %HTW_ENTER_GETEVENTS, wait until the completion ring
 *	holds at least this many entries (at most &htw_ring_setup.cq_entries)
 * @flags: %HTW_ENTER_GETEVENTS, or 0
 * @reserved: must be zero
 */
struct htw_ring_enter {
	__u32 to_submit;
	__u32 min_complete;
	__u32 flags;
	__u32 reserved;
};

#define HTW_RING_ENTER_SIZE_VER0	16

#define HTW_IOC_MAGIC	'Y'

/*
 * HTW_IOC_INFO: fill a struct htw_info, once the context's due timers are
 *	events.  %EINTR: a fatal signal came first.
 *
 * HTW_IOC_ARM: arm a new timer and write its id to &htw_timer_spec.id.
 *	%EINVAL: an expiry beyond %HTW_TIME_MAX (a relative one included), a
 *	period outside [&htw_info.min_period_ns, %HTW_TIME_MAX], both
 *	%HTW_TIMER_BOOTTIME and %HTW_TIMER_REALTIME, or
 *	%HTW_TIMER_CANCEL_ON_SET without both %HTW_TIMER_REALTIME and
 *	%HTW_TIMER_ABSTIME.
 *	%ENOSPC: the context holds &htw_info.max_timers timers already, or
 *	its user would hold more than &htw_info.max_user_timers (the file's
 *	first timer on a clock also counts the clock's wheel).
 *	%ENOMEM: out of memory (timers are charged to the caller's memory
 *	cgroup; a periodic timer also takes every level of its clock's wheel,
 *	so that its re-arms never need memory).  %EFAULT:
 *	&htw_timer_spec.id is not writable: nothing is armed.
 *
 * HTW_IOC_MODIFY: re-arm timer &htw_timer_spec.id, armed or expired, with a
 *	new expiry, period, clock and user value; its id stays.  A queued event
 *	of the timer is dropped, and none of the old schedule is queued once
 *	the ioctl returns.  %EINVAL as for HTW_IOC_ARM; %ENOENT: no such timer
 *	in this context; %ENOSPC, when the timer moves to a clock the context
 *	had no timer on yet and the user cannot be charged for that clock's
 *	wheel; %ENOMEM.  On an error the timer is left as it was.
 *
 * HTW_IOC_CANCEL: cancel timer &htw_cancel.id and release its id.  A queued
 *	event of the timer is dropped, and none is queued once the ioctl
 *	returns.  %ENOENT: no such timer in this context (a one-shot timer
 *	whose event has been read is gone).
 *
 * HTW_IOC_BATCH: run &htw_batch.count operations.  Returns the number of
 *	operations run: all of them, unless one faults.  The kernel reads and
 *	runs them a group of eight at a time, and writes -%EINPROGRESS into
 *	the &htw_op.result of each operation of a group before it runs the
 *	group, to know that it can.  An operation that cannot be read, or
 *	whose &htw_op.result (or, for %HTW_OP_ARM, id) cannot be written
 *	before it runs, is not run and stops the batch (it is not counted;
 *	its &htw_op.result, and those of its group after it, which did not
 *	run either, may read -%EINPROGRESS).  An operation whose result
 *	cannot be written after it ran (the memory was unmapped meanwhile)
 *	stops the batch too, and is counted: it took effect.  %E2BIG: &htw_batch.count is above
 *	%HTW_BATCH_MAX.  %EINVAL: &htw_batch.op_size below
 *	%HTW_OP_SIZE_VER0 or above the page size.  %EFAULT: the first
 *	operation faults.  %EINTR: a fatal signal came before the first
 *	operation (later, the batch stops and returns the operations run).
 *
 * HTW_IOC_RING_SETUP: create the file's ring timers and their shared
 *	memory, as &htw_ring_setup says, and write back their sizes and
 *	offsets.  %EBUSY: the file has them already.  %EINVAL: a size out of
 *	range, non-zero flags or out fields.  %EOPNOTSUPP: a 32-bit
 *	kernel, or a machine whose data caches alias.  %ENOSPC: its user would hold more than
 *	&htw_info.max_user_bytes (the shared memory, 64 bytes of kernel
 *	memory a slot, and the wheel count).  %ENOMEM: out of memory (or the
 *	memory cgroup's limit).  Setups of one file made at once (threads, a
 *	parent and its child) run one at a time, so that no more than one
 *	ring is ever charged: those that come after one that built the ring
 *	get %EBUSY.  %EINTR: a fatal signal came while it waited for another
 *	setup (a caller that lives on never sees it).
 *
 * HTW_IOC_RING_ENTER: consume up to &htw_ring_enter.to_submit submission
 *	entries (while the completion ring has room for an error), post the
 *	completions that waited for room, run the due ring timers, post
 *	their completions, in that order (an arm or a cancel of a slot that
 *	waits for room replaces or drops it before this call posts it; a poll
 *	of the file, which consumes no entry, may post it first); then, with
 *	%HTW_ENTER_GETEVENTS, wait until the completion ring holds
 *	&htw_ring_enter.min_complete entries, running the timers that come
 *	due meanwhile.  Returns the entries consumed.  A submission tail
 *	more than the ring's size ahead of the kernel's head counts as the
 *	ring's size.  %ENXIO: the file has no ring timers.  %EINVAL: unknown
 *	flags, a non-zero reserved field, @min_complete beyond the ring.
 *	%EINTR: a signal came while waiting, or a fatal signal came first,
 *	and no entry was consumed; as io_uring_enter(), the call is not
 *	restarted under SA_RESTART.
 *
 * mmap() of the file maps a part of the shared memory, as
 *	HTW_IOC_RING_SETUP describes.  %ENXIO: no ring timers yet.  %EINVAL:
 *	an offset other than the two, a mapping longer than its part, or one
 *	without MAP_SHARED.  %EPERM: the read-only part mapped writable, or
 *	either part executable.
 */
#define HTW_IOC_INFO	_IOR(HTW_IOC_MAGIC, 0x00, struct htw_info)
#define HTW_IOC_ARM	_IOWR(HTW_IOC_MAGIC, 0x01, struct htw_timer_spec)
#define HTW_IOC_MODIFY	_IOW(HTW_IOC_MAGIC, 0x02, struct htw_timer_spec)
#define HTW_IOC_CANCEL	_IOW(HTW_IOC_MAGIC, 0x03, struct htw_cancel)
#define HTW_IOC_BATCH	_IOW(HTW_IOC_MAGIC, 0x04, struct htw_batch)
#define HTW_IOC_RING_SETUP	_IOWR(HTW_IOC_MAGIC, 0x05, struct htw_ring_setup)
#define HTW_IOC_RING_ENTER	_IOW(HTW_IOC_MAGIC, 0x06, struct htw_ring_enter)

#endif /* _UAPI_LINUX_HTW_H */
