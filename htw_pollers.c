// SPDX-License-Identifier: GPL-2.0
/*
 * A file's poll queue, woken a chunk at a time
 *
 * A wake-up walks every entry of its wait queue under the queue's lock,
 * with interrupts off.  An unprivileged user can put 20,000 epoll items
 * (dup() and epoll_ctl()) on the queue of one file: woken from the
 * hrtimer's softirq, where an expiry of the file's timers wakes its
 * pollers, that walk held its CPU for 8 to 20 ms, during which a sleeper
 * of that CPU could neither be woken nor run.  The kernel's own files
 * (timerfd, eventfd, a pipe) walk so too; the kernel used to break the
 * longest walks it had, those of the page wait queues, with bookmarks,
 * since removed (6.7).  Here a wake-up walks the queue with a cursor of
 * its own, an entry that wakes nothing: HTW_POLLERS_CHUNK entries a hold
 * of the lock, with the scheduler looked at between chunks.  A caller that
 * may sleep walks the whole queue itself (htw_pollers_wake_sync()), so
 * that the work a user makes is done, and paid for, by that user; one
 * that may not (the hrtimer's softirq, a holder of a spinlock) walks the
 * first chunk, and a work item the rest (htw_pollers_wake()).  A queue of
 * a few pollers, as most are, is woken at once and whole, as
 * wake_up_locked_poll() would; a long one keeps its CPU a chunk at a time,
 * and its later pollers hear of the wake-up a little later.
 *
 * The promises of wake_up_locked_poll(): every entry on the queue when the
 * wake-up was called is woken with EPOLLIN | EPOLLRDNORM, non-exclusive
 * ones all, and of the exclusive ones (EPOLLEXCLUSIVE, at the tail) the
 * first that takes the wake-up.  An entry added meanwhile may be woken or
 * not: it polled as it was added.  Each walk has a cursor of its own, which
 * the other walks pass as an entry that wakes nothing: a caller that may
 * sleep walks on one of its own, once through, whatever else goes on, so
 * that no one's walk is made longer by another's wake-ups.  The wake-ups
 * that may not sleep share @cursor and @work: one that comes while that
 * walk goes through starts it over from the head once through (@again),
 * so that the entries it had passed hear it too; those are marks, one a
 * run of the wheel, which a user's call makes, and polls, each after a run
 * of its own.  An entry may be woken
 * twice, as by two wake-ups, which a poller must bear anyway.
 *
 * Locking: @wqh.lock, taken with interrupts off, protects the cursors,
 * @again and @deferred; the entries' wake functions run under it, as under
 * wake_up_locked_poll().  @cursor is on the queue from a mark's wake-up
 * until the last chunk of @work takes it off; a caller's own cursor, from
 * its call until its last chunk.  An entry removed while the lock is
 * dropped (epoll_ctl(EPOLL_CTL_DEL), a poll() that returns) is unlinked
 * from around the cursors, which are the walks' own.
 */

#include <linux/lockdep.h>
#include <linux/sched.h>
#include <linux/spinlock.h>

#include "htw_pollers.h"

/*
 * Entries woken under one hold of the lock: tens of microseconds of
 * ep_poll_callback(), where 20,000 took milliseconds.
 */
#define HTW_POLLERS_CHUNK	64

static int htw_pollers_cursor_fn(struct wait_queue_entry *wq, unsigned int mode,
				 int sync, void *key)
{
	return 0;
}

/*
 * Wake up to HTW_POLLERS_CHUNK entries after @cursor, and move it past
 * them.  Return whether the walk goes on (@cursor stays on the queue);
 * else @cursor is off it.  Another walk's cursor is an entry that wakes
 * nothing.
 */
static bool __htw_pollers_walk(struct htw_pollers *p,
			       struct wait_queue_entry *cursor)
	__must_hold(&p->wqh.lock)
{
	void *key = poll_to_key(EPOLLIN | EPOLLRDNORM);
	struct wait_queue_entry *curr, *next;
	unsigned int woken = 0;

	lockdep_assert_held(&p->wqh.lock);

	curr = list_next_entry(cursor, entry);
	list_for_each_entry_safe_from(curr, next, &p->wqh.head, entry) {
		unsigned int flags = curr->flags;
		int ret;

		if (woken++ == HTW_POLLERS_CHUNK) {
			/* The next chunk starts with @curr. */
			list_move_tail(&cursor->entry, &curr->entry);
			return true;
		}
		ret = curr->func(curr, TASK_NORMAL, 0, key);
		if (ret < 0)
			break;
		if (ret && (flags & WQ_FLAG_EXCLUSIVE))
			break;
	}
	list_del_init(&cursor->entry);
	return false;
}

/*
 * The walk of the wake-ups that cannot sleep, on @p->cursor: once through,
 * it starts over for the wake-ups that came meanwhile (@again): marks, one
 * for each run of the wheel a user's call makes, and polls that posted
 * completions or left work, each after a run of its own.
 */
static bool __htw_pollers_walk_marks(struct htw_pollers *p)
	__must_hold(&p->wqh.lock)
{
	if (__htw_pollers_walk(p, &p->cursor))
		return true;
	if (!p->again)
		return false;
	p->again = false;
	list_add(&p->cursor.entry, &p->wqh.head);
	return true;
}

static void htw_pollers_work(struct work_struct *work)
{
	struct htw_pollers *p = container_of(work, struct htw_pollers, work);
	bool more;

	do {
		cond_resched();
		spin_lock_irq(&p->wqh.lock);
		more = __htw_pollers_walk_marks(p);
		spin_unlock_irq(&p->wqh.lock);
	} while (more);
}

/**
 * htw_pollers_init() - make an empty poll queue
 * @p: the queue
 *
 * Context: Any context.
 */
void htw_pollers_init(struct htw_pollers *p)
{
	init_waitqueue_head(&p->wqh);
	init_waitqueue_func_entry(&p->cursor, htw_pollers_cursor_fn);
	INIT_LIST_HEAD(&p->cursor.entry);
	p->again = false;
	INIT_WORK(&p->work, htw_pollers_work);
	p->deferred = 0;
}

/**
 * htw_pollers_exit() - wait for a wake-up going through to end
 * @p: the queue; no wake-up may be called any more
 *
 * Context: Process context; may sleep.
 */
void htw_pollers_exit(struct htw_pollers *p)
{
	flush_work(&p->work);
}

/**
 * __htw_pollers_wake() - wake the pollers, the first chunk now, the rest
 *	in a work item
 * @p: the queue
 *
 * Context: Any context, with @p->wqh.lock held and interrupts off.
 */
void __htw_pollers_wake(struct htw_pollers *p)
	__must_hold(&p->wqh.lock)
{
	lockdep_assert_held(&p->wqh.lock);

	/* One goes through: it starts over once through. */
	if (!list_empty(&p->cursor.entry)) {
		p->again = true;
		return;
	}
	list_add(&p->cursor.entry, &p->wqh.head);
	if (__htw_pollers_walk_marks(p)) {
		p->deferred++;
		queue_work(system_unbound_wq, &p->work);
	}
}

/**
 * htw_pollers_deferred() - how many wake-ups went on in process context
 * @p: the queue
 *
 * Context: Any context; the count may be stale as soon as it is read.
 * Return: the wake-ups that had more than a chunk of pollers to wake.
 */
u64 htw_pollers_deferred(struct htw_pollers *p)
{
	u64 n;

	spin_lock_irq(&p->wqh.lock);
	n = p->deferred;
	spin_unlock_irq(&p->wqh.lock);
	return n;
}

/**
 * htw_pollers_wake() - wake the pollers, the first chunk now, the rest in
 *	a work item
 * @p: the queue
 *
 * Context: Any context.
 */
void htw_pollers_wake(struct htw_pollers *p)
{
	unsigned long flags;

	spin_lock_irqsave(&p->wqh.lock, flags);
	__htw_pollers_wake(p);
	spin_unlock_irqrestore(&p->wqh.lock, flags);
}

/**
 * htw_pollers_wake_sync() - wake the pollers, all of them, here
 * @p: the queue
 *
 * One pass, on a cursor of the caller's own, a chunk a hold of the lock,
 * with the scheduler looked at between: however many other walks go
 * through, and whatever wake-ups come meanwhile, it ends once through,
 * and its caller pays for it alone.
 *
 * Context: Process context; may sleep; no spinlock held.
 */
void htw_pollers_wake_sync(struct htw_pollers *p)
{
	struct wait_queue_entry cursor;

	init_waitqueue_func_entry(&cursor, htw_pollers_cursor_fn);
	spin_lock_irq(&p->wqh.lock);
	list_add(&cursor.entry, &p->wqh.head);
	while (__htw_pollers_walk(p, &cursor)) {
		spin_unlock_irq(&p->wqh.lock);
		cond_resched();
		spin_lock_irq(&p->wqh.lock);
	}
	spin_unlock_irq(&p->wqh.lock);
}
