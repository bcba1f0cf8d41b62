// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libhtw - a thin C library over /dev/htw (see libhtw.h and htw(4))
 *
 * Each call is one system call, or one per HTW_BATCH_MAX operations for
 * htw_oplist_submit(); nothing is cached between calls.  The ring timers'
 * calls work on the mapped rings, and the request timeouts, which keep
 * state of their own, are in htw_timeouts.c.
 */
#define _GNU_SOURCE		/* O_CLOEXEC, clock_gettime() under -std=c99 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "libhtw.h"

#define NSEC_PER_SEC	1000000000ULL

int htw_open(int flags)
{
	int fd;

	if (flags & ~(O_NONBLOCK | O_CLOEXEC))
		return -EINVAL;
	fd = open(HTW_DEVICE_PATH, O_RDWR | flags);
	return fd < 0 ? -errno : fd;
}

int htw_get_info(int fd, struct htw_info *info)
{
	return ioctl(fd, HTW_IOC_INFO, info) ? -errno : 0;
}

int htw_arm(int fd, struct htw_timer_spec *spec)
{
	return ioctl(fd, HTW_IOC_ARM, spec) ? -errno : 0;
}

int htw_modify(int fd, const struct htw_timer_spec *spec)
{
	return ioctl(fd, HTW_IOC_MODIFY, spec) ? -errno : 0;
}

int htw_cancel(int fd, uint32_t id)
{
	struct htw_cancel cancel = { .id = id };

	return ioctl(fd, HTW_IOC_CANCEL, &cancel) ? -errno : 0;
}

int htw_read_events(int fd, struct htw_event *events, unsigned int nr)
{
	ssize_t ret;

	/* Whole records, and a count that fits the return value. */
	if (nr > INT_MAX / sizeof(*events))
		nr = INT_MAX / sizeof(*events);
	ret = read(fd, events, (size_t)nr * sizeof(*events));
	if (ret < 0)
		return -errno;
	return ret / sizeof(*events);
}

uint64_t htw_clock_now(uint32_t flags)
{
	clockid_t clock = CLOCK_MONOTONIC;
	struct timespec ts;

	if (flags & HTW_TIMER_BOOTTIME)
		clock = CLOCK_BOOTTIME;
	else if (flags & HTW_TIMER_REALTIME)
		clock = CLOCK_REALTIME;
	/* Only a seccomp filter can make it fail; then 0, as documented. */
	if (clock_gettime(clock, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

int htw_oplist_init(struct htw_oplist *list, unsigned int size)
{
	memset(list, 0, sizeof(*list));
	/* A submit returns how many ran, as an int. */
	if (!size || size > INT_MAX)
		return -EINVAL;
	list->ops = calloc(size, sizeof(*list->ops));
	if (!list->ops)
		return -ENOMEM;
	list->size = size;
	return 0;
}

void htw_oplist_free(struct htw_oplist *list)
{
	free(list->ops);
	memset(list, 0, sizeof(*list));
}

void htw_oplist_reset(struct htw_oplist *list)
{
	list->nr = 0;
	list->submitted = 0;
}

/*
 * An operation not run yet reads -EINPROGRESS, as one does that the kernel
 * was about to run when the batch stopped.
 */
static struct htw_op *htw_oplist_queue(struct htw_oplist *list, uint32_t code,
				       const struct htw_timer_spec *spec)
{
	struct htw_op *op;

	if (list->nr == list->size)
		return NULL;
	op = &list->ops[list->nr++];
	memset(op, 0, sizeof(*op));
	op->op = code;
	op->result = -EINPROGRESS;
	op->spec = *spec;
	return op;
}

struct htw_op *htw_oplist_arm(struct htw_oplist *list,
			      const struct htw_timer_spec *spec)
{
	return htw_oplist_queue(list, HTW_OP_ARM, spec);
}

struct htw_op *htw_oplist_modify(struct htw_oplist *list,
				 const struct htw_timer_spec *spec)
{
	return htw_oplist_queue(list, HTW_OP_MODIFY, spec);
}

struct htw_op *htw_oplist_cancel(struct htw_oplist *list, uint32_t id)
{
	const struct htw_timer_spec spec = { .id = id };

	return htw_oplist_queue(list, HTW_OP_CANCEL, &spec);
}

/*
 * A batch that stops early (a fault, a fatal signal) leaves the rest
 * queued: the next submit starts where it stopped.
 */
int htw_oplist_submit(int fd, struct htw_oplist *list)
{
	unsigned int done = 0;

	while (list->submitted < list->nr) {
		unsigned int count = list->nr - list->submitted;
		struct htw_batch batch = {
			.ops = (uintptr_t)&list->ops[list->submitted],
			.op_size = sizeof(struct htw_op),
		};
		int ran;

		if (count > HTW_BATCH_MAX)
			count = HTW_BATCH_MAX;
		batch.count = count;
		ran = ioctl(fd, HTW_IOC_BATCH, &batch);
		if (ran < 0)
			return done ? (int)done : -errno;
		list->submitted += ran;
		done += ran;
		if ((unsigned int)ran < count)
			break;
	}
	return done;
}

/*
 * The rings' indices are shared with the kernel: a producer stores its
 * tail with a release after its entries, a consumer loads the other's
 * tail with an acquire before the entries and stores its head with a
 * release after them (see <linux/htw.h>).
 */
#define htw_load_acquire(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define htw_store_release(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)

int htw_ring_map(int fd, uint32_t nr_slots, uint32_t sq_entries,
		 struct htw_ring *ring)
{
	struct htw_ring_setup setup = {
		.nr_slots = nr_slots,
		.sq_entries = sq_entries,
	};
	void *rw, *ro;
	int ret;

	if (ioctl(fd, HTW_IOC_RING_SETUP, &setup))
		return -errno;
	rw = mmap(NULL, setup.rw_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		  HTW_RING_OFF_RW);
	if (rw == MAP_FAILED)
		return -errno;
	ro = mmap(NULL, setup.ro_size, PROT_READ, MAP_SHARED, fd,
		  HTW_RING_OFF_RO);
	if (ro == MAP_FAILED) {
		ret = -errno;
		munmap(rw, setup.rw_size);
		return ret;
	}
	*ring = (struct htw_ring) {
		.fd = fd,
		.nr_slots = setup.nr_slots,
		.sq_entries = setup.sq_entries,
		.cq_entries = setup.cq_entries,
		.sq_tail_p = (__u32 *)((char *)rw + setup.off.sq_tail),
		.cq_head_p = (__u32 *)((char *)rw + setup.off.cq_head),
		.sqes = (struct htw_sqe *)((char *)rw + setup.off.sqes),
		.slots = (__u64 *)((char *)rw + setup.off.slots),
		.sq_head_p = (const __u32 *)((char *)ro + setup.off.sq_head),
		.cq_tail_p = (const __u32 *)((char *)ro + setup.off.cq_tail),
		.flags_p = (const __u32 *)((char *)ro + setup.off.flags),
		.cqes = (const struct htw_cqe *)((char *)ro + setup.off.cqes),
		.rw = rw,
		.ro = ro,
		.rw_size = setup.rw_size,
		.ro_size = setup.ro_size,
	};
	ring->sq_tail = *ring->sq_tail_p;
	return 0;
}

void htw_ring_unmap(struct htw_ring *ring)
{
	if (!ring->rw)
		return;
	munmap(ring->rw, ring->rw_size);
	munmap(ring->ro, ring->ro_size);
	ring->rw = NULL;
	ring->ro = NULL;
}

/* The next free submission entry, or NULL if the ring is full. */
static struct htw_sqe *htw_ring_sqe(struct htw_ring *ring)
{
	__u32 head = htw_load_acquire(ring->sq_head_p);

	if (ring->sq_tail - head >= ring->sq_entries)
		return NULL;
	return &ring->sqes[ring->sq_tail++ & (ring->sq_entries - 1)];
}

/* Queue an entry of @op for @slot, if the slot exists and there is room. */
static int htw_ring_queue(struct htw_ring *ring, __u32 op, __u32 slot,
			  __u32 gen, __u64 deadline)
{
	struct htw_sqe *sqe;

	if (slot >= ring->nr_slots)
		return -EINVAL;
	sqe = htw_ring_sqe(ring);
	if (!sqe)
		return -EAGAIN;
	*sqe = (struct htw_sqe) {
		.op = op,
		.slot = slot,
		.gen = gen,
		.deadline = deadline,
	};
	return 0;
}

int htw_ring_arm(struct htw_ring *ring, uint32_t slot, uint32_t gen,
		 uint64_t deadline)
{
	int ret;

	/* Stored, it would cancel the slot's armed timer, or undo its pushes. */
	if (deadline > HTW_TIME_MAX)
		return -EINVAL;
	ret = htw_ring_queue(ring, HTW_SQE_ARM, slot, gen, deadline);

	/*
	 * Not a store left from an earlier arm: the word says the arm's
	 * deadline; htw_ring_submit()'s release orders it before the entry.
	 */
	if (!ret)
		__atomic_store_n(&ring->slots[slot], deadline, __ATOMIC_RELAXED);
	return ret;
}

int htw_ring_cancel(struct htw_ring *ring, uint32_t slot, uint32_t gen)
{
	return htw_ring_queue(ring, HTW_SQE_CANCEL, slot, gen, 0);
}

int htw_ring_submit(struct htw_ring *ring, unsigned int wait_nr)
{
	struct htw_ring_enter enter = {
		.to_submit = ring->sq_tail - htw_load_acquire(ring->sq_head_p),
		.min_complete = wait_nr,
		.flags = wait_nr ? HTW_ENTER_GETEVENTS : 0,
	};
	int ret;

	htw_store_release(ring->sq_tail_p, ring->sq_tail);
	ret = ioctl(ring->fd, HTW_IOC_RING_ENTER, &enter);
	return ret < 0 ? -errno : ret;
}

unsigned int htw_ring_reap(struct htw_ring *ring, struct htw_cqe *cqes,
			   unsigned int nr)
{
	__u32 head = *ring->cq_head_p;
	__u32 tail = htw_load_acquire(ring->cq_tail_p);
	unsigned int i, n = tail - head;

	if (n > nr)
		n = nr;
	for (i = 0; i < n; i++)
		cqes[i] = ring->cqes[(head + i) & (ring->cq_entries - 1)];
	htw_store_release(ring->cq_head_p, head + n);
	return n;
}
