/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Ring timers: the timers of a file that live in memory it shares with its
 * program (see "Timers in shared memory" in <uapi/linux/htw.h>)
 *
 * A file's ring timers are its own, beside the timers of its context
 * (htw_ctx.h): their own wheel, slots and rings, and their own lock.  They
 * share the context's account and the device's limits, which the device
 * hands them as it creates them, and nothing else.
 */
#ifndef _HTW_RING_H
#define _HTW_RING_H

#include <linux/bits.h>
#include <linux/mm_types.h>
#include <linux/poll.h>
#include <linux/types.h>
#include <linux/wait.h>

#include <uapi/linux/htw.h>

#include "htw_core.h"

struct htw_pollers;
struct htw_ring;
struct htw_user;

/*
 * The most slots a file may have, whatever its limit of timers: the
 * completion ring of as many fits in the read-only part's offset range.
 */
#define HTW_RING_SLOTS_MAX	BIT(23)

/**
 * struct htw_ring_params - what a file's ring timers are made of
 * @wheel: their wheel's tick, size and budget; the rest is the ring's
 * @max_slots: most slots the file may have
 * @time_offset: CLOCK_MONOTONIC's offset in the opener's time namespace,
 *	in ns: deadlines are on that clock
 * @user: the account the memory is charged to, or NULL; the caller holds
 *	a reference for the life of the ring timers
 * @max_user_bytes: the account's limit, read at setup
 * @pollers: the file's poll queue, which its poll registers: the ring
 *	timers wake it, so that a poller that came before them hears them
 */
struct htw_ring_params {
	struct htw_wheel_params wheel;
	u32 max_slots;
	s64 time_offset;
	struct htw_user *user;
	const unsigned long *max_user_bytes;
	struct htw_pollers *pollers;
};

struct htw_ring *htw_ring_create(const struct htw_ring_params *params,
				 struct htw_ring_setup *setup);
void htw_ring_destroy(struct htw_ring *ring);
int htw_ring_mmap(struct htw_ring *ring, struct vm_area_struct *vma);
int htw_ring_enter(struct htw_ring *ring, const struct htw_ring_enter *enter);
__poll_t htw_ring_poll(struct htw_ring *ring);
void htw_ring_counts(struct htw_ring *ring, u32 *nr_slots, u32 *nr_armed,
		     u32 *nr_waiting);
u64 htw_ring_wakes(struct htw_ring *ring, u64 *wakeups);
size_t htw_ring_slot_cost(void);

#endif /* _HTW_RING_H */
