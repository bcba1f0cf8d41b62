/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A file's poll queue, whose wake-ups go through a chunk at a time (see
 * htw_pollers.c)
 */
#ifndef _HTW_POLLERS_H
#define _HTW_POLLERS_H

#include <linux/poll.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

/**
 * struct htw_pollers - a poll queue woken in chunks
 * @wqh: the queue poll_wait() registers on; its lock protects the rest,
 *	and is the owner's to protect its own state with too
 * @cursor: where the walk of the marks' wake-ups has got to; on @wqh,
 *	before the next entry to wake, while it goes through, else on no list
 * @again: a mark's wake-up came while that walk went through: once
 *	through, it starts over from the head
 * @work: goes on with a wake-up whose caller could not sleep
 * @deferred: wake-ups that went on in @work, for fdinfo; under @wqh.lock
 */
struct htw_pollers {
	wait_queue_head_t wqh;
	struct wait_queue_entry cursor;
	bool again;
	struct work_struct work;
	u64 deferred;
};

void htw_pollers_init(struct htw_pollers *p);
void htw_pollers_exit(struct htw_pollers *p);
void __htw_pollers_wake(struct htw_pollers *p);
void htw_pollers_wake(struct htw_pollers *p);
void htw_pollers_wake_sync(struct htw_pollers *p);
u64 htw_pollers_deferred(struct htw_pollers *p);

#endif /* _HTW_POLLERS_H */
