// SPDX-License-Identifier: GPL-2.0
/*
 * Ring timers: timers in memory a file shares with its program
 *
 * The workload that has the most timers is a server's idle timeouts: one
 * per connection, pushed later on every packet, and almost never fired.
 * Through ioctls each push is a system call.  Ring timers make it a store:
 * the deadline of a timer is a word of shared memory (its slot), which the
 * program writes as often as it likes and the kernel reads only when the
 * deadline it holds for the timer comes.  If the word then says later, the
 * timer is placed again for that deadline; else it is delivered.  This is
 * how TCP's and the kernel's own timers treat a deadline moved later
 * (tcp_write_timer_handler() re-checks icsk_timeout when the old one
 * comes; __mod_timer() leaves a timer whose expiry stays in its bucket),
 * here across the boundary to user space.  What cannot be a store (an
 * arm, a deadline moved earlier, a cancel that must take effect now) is
 * an entry of a submission ring, and expiries are entries of a completion
 * ring: as io_uring's rings are, so that any number of them cost one
 * system call, or none.
 *
 * The model
 * ---------
 * A ring timer is a slot: an index the program picks, from 0 to nr_slots
 * - 1, and in the kernel a struct htw_rslot of 64 bytes, allocated with the
 * rest at setup, so that arming never allocates and a ring timer costs no
 * more kernel memory than its slot.  The program names an arm of a slot
 * with a generation of its own choosing, which the completion carries
 * back, so that a completion of an earlier arm is told from one of this.
 *
 * A slot is in one state, under ring->lock:
 *	IDLE	not armed;
 *	ARMED	on the wheel, for htw_expires(&rs->timer);
 *	EXPIRED	taken off the wheel by a run, on ring->expired, until the
 *		same hold of ring->lock settles it (htw_ring_expire());
 *	WAITING	its deadline came while the completion ring was full: on
 *		ring->waiting, in order, until there is room, and only
 *		then settled.
 * To settle a slot is to read its word, once, and place the timer again
 * for a later deadline, cancel it, or deliver it (htw_rslot_settle()).
 * A slot is settled only in room for its completion, so that the word is
 * read when the completion can say what it was: a deadline stored while
 * the slot waited still counts, and a completion never waits with a
 * deadline the kernel must remember.
 * The kernel's deadline for an armed slot only moves later by a store
 * (the word is read at the old deadline, never before), or anywhere by an
 * %HTW_SQE_ARM: so no store makes a timer fire before the deadline the
 * kernel accepted, and a timer's word is read once per expiry of it.
 *
 * The promises: a ring timer is delivered once per arm, never before the
 * deadline the kernel holds when it is delivered, at most one tick of the
 * wheel after it (plus the time it waits for its file's users); never
 * twice, never for an arm that a later arm or cancel of the slot replaced
 * before it was delivered; and no completion is ever dropped: a slot that
 * finds the completion ring full waits in the kernel, in order, without
 * memory of its own (it uses the timer's idle link, htw_timer_link()).
 * Entries of the submission ring are consumed only while the completion
 * ring has room for the error one may make, so errors wait nowhere.
 *
 * The expiry work is the file's users', in process context: the wheel is
 * deferred (HTW_WHEEL_DEFERRED), its hrtimer only marks the ring due and
 * wakes the pollers and the waiters of HTW_IOC_RING_ENTER, and those run
 * the wheel, a batch at a time (htw_ring_run()).  A program that never
 * looks costs one hrtimer expiry.  The callbacks only move the timer to
 * ring->expired (HTW_WHEEL_LOCKED_CALLBACKS, one lock hold per eight), and
 * the run settles them after the batch, in groups of HTW_RING_GROUP, each
 * under one hold of the wheel's lock (htw_wheel_lock()), as the entries
 * of the submission ring are done: a slot pushed later costs its word's
 * load and a list move, and a hundred thousand slots coming due together
 * (a server's requests started in one burst) cost no lock hold each.
 *
 * The shared memory
 * -----------------
 * The pages are one vmalloc() area, allocated at setup, zeroed, charged
 * to the memory cgroup (GFP_KERNEL_ACCOUNT, and __GFP_RETRY_MAYFAIL so
 * that a cgroup at its limit fails the setup with -ENOMEM rather than call
 * the OOM killer), and to the user's account with the slots and the wheel,
 * in whole pages, as vmalloc() takes them.  The program maps them in two
 * parts: what the program writes, and, read-only (VM_MAYWRITE cleared, so
 * no mprotect() can make it writable), what only the kernel writes, as
 * BPF's ring buffer maps its producer's page.  A mapping's pages are
 * handed to it by its fault handler, a page at a time, as ALSA maps a
 * vmalloc()ed buffer: so a range the program zapped (MADV_DONTNEED,
 * MADV_REMOVE) comes back, the same page with what it held, at the next
 * touch, where a mapping filled once (vm_insert_pages(), as io_uring's)
 * would raise SIGBUS until it is mapped again.  Each mapping holds the
 * file, so ->release, which frees the pages, runs only once every mapping
 * is gone (the lesson of CVE-2024-0582 is to free no page a mapping may
 * still reach): close before munmap and munmap before close both end the
 * same way.  A mapping is VM_DONTEXPAND (no mremap() grows it past the
 * pages), never executable, and inherited by fork() as shared memory:
 * parent and child share the file and its slots.  A page another holder
 * pinned (vmsplice(), O_DIRECT) outlives the file and its account, as an
 * io_uring ring's does; the memory cgroup still holds it.
 *
 * Ring timers need a 64-bit kernel, where a slot's word is read in one
 * load, and a machine whose data caches do not alias between the kernel's
 * mapping of a page and the program's (cpu_dcache_is_aliasing(): x86 and
 * arm64 do not; an aliasing machine would need the mappings coloured
 * alike, as io_uring_get_unmapped_area() does; before 6.9, which cannot
 * tell, only x86 and arm64 are let through): elsewhere the setup fails
 * with -EOPNOTSUPP.  The program must write a slot's word with one 64-bit
 * store, as a 64-bit program does; a 32-bit program on a 64-bit kernel
 * too (an atomic store of 8 bytes: cmpxchg8b, or an SSE move, on x86).
 * Two 32-bit stores can be read half old, half new: a deadline nobody
 * wrote, which the kernel takes as it takes any word, for that slot
 * alone: the timer is delivered at the deadline the kernel holds, or
 * placed again for that later one, never early, and no other slot, file
 * or user is touched.
 *
 * Every word of the shared memory is hostile.  The kernel keeps its own
 * submission head and completion tail, publishes them (with a flag word
 * that says whether timers wait for room, HTW_RING_CQ_WAITING: a reap is
 * a store, and wakes no one), and never reads them back.  It reads each
 * index the program writes once, with an acquire, and holds it to the
 * ring: a submission tail more than the
 * ring's size ahead counts as the ring's size (min(), as io_uring does);
 * a completion head that is not within the ring's size behind the tail
 * means no room, so the program's completions wait in the kernel rather
 * than overwrite ones it claims unread.  A submission entry is copied
 * once, a field at a time with READ_ONCE(), and only the copy is checked
 * and used; its slot is clamped with array_index_nospec() after the
 * check.  A slot's word is read once per expiry with READ_ONCE().  The
 * work of one call is bounded: the submission ring's size in entries, and
 * the runs a batch at a time with cond_resched() between, ended by a fatal
 * signal.
 *
 * Memory ordering, as io_uring's opening comment has it: the program
 * writes submission entries, then its tail with a release; the kernel
 * loads that tail with an acquire, copies the entries, and stores its
 * head with a release once it has copied them (the program may then
 * reuse them).  The kernel writes completions, then its tail with a
 * release; the program loads that tail with an acquire, reads them, and
 * stores its head with a release; the kernel loads that head with an
 * acquire before it writes over the entries it frees.  A slot's word
 * needs no ordering of its own: a store to it is an extension, and its
 * effect is defined only by when the kernel reads it (an arm's store
 * before its entry is ordered by the tail's release).
 *
 * Locking
 * -------
 * ring->lock (a mutex) serialises the slots' states, the kernel's indices,
 * the wheel's runs and the lists: HTW_IOC_RING_ENTER and poll() (which
 * only tries it).  The wheel's lock nests inside it; the callbacks run
 * under the wheel's lock, called by a holder of ring->lock, and take
 * nothing.  The wake of the wheel's hrtimer (softirq) takes only the locks
 * of the wait queues it wakes; the mark it sets is an atomic bit.
 *
 * The entries of the submission ring are done in groups of HTW_RING_GROUP,
 * each under one hold of the wheel's lock (htw_wheel_lock()): one lock,
 * one interrupt state and one look at the hrtimer a group, not an entry.
 * Nothing in a group sleeps or faults: the entries and the completions are
 * kernel memory (the vmalloc() area below).
 *
 * Lock order: ring->lock, then the wheel's lock; ring->lock, then the lock
 * of a wait queue it wakes (ring->wqh, or the file's poll queue, which is
 * the context's, struct htw_pollers: the context never holds its lock around a call
 * of the ring timers, nor calls them at all).  Nothing takes ring->lock
 * under another lock; ->mmap, which runs under mmap_lock, takes none.
 *
 * Two queues are woken: the file's poll queue (&htw_ring_params.pollers,
 * the context's, which every poll of the file registers, so that an epoll
 * set up before the ring timers hears them), and ring->wqh, where the
 * waiters of HTW_IOC_RING_ENTER sleep.  Both are woken by each mark, by
 * each call that posted completions (EPOLLET needs a wake for each
 * batch), and by a poll that left work due: the wheel told of it once,
 * and tells no more until a run, so whoever comes back must be told.
 * Every poller hears each wake; of the waiters, only the first whose call
 * can end (htw_ring_waiter_wake()), who, as it returns, passes the turn
 * to the next if something is left (htw_ring_pass_turn()), as blocked
 * readers of a file take turns: a mark wakes one thread, not the herd.
 * What a run posts is shown (@cq_published) before its mark comes off, so
 * that a look that finds the mark gone finds the completions.
 */

#include <linux/atomic.h>
#include <linux/cacheinfo.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/nospec.h>
#include <linux/overflow.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "htw_compat.h"
#include "htw_pollers.h"
#include "htw_ring.h"
#include "htw_time.h"
#include "htw_user.h"

#define HTW_RING_GFP	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL)
/*
 * The large allocations: zeroed, and quiet, as kvmalloc() is: a setup a
 * user sized past what the machine has fails with -ENOMEM, and fills no
 * log.
 */
#define HTW_RING_VMALLOC_GFP	(HTW_RING_GFP | __GFP_ZERO | __GFP_NOWARN)

/* The states of a slot: see "The model" above. */
enum htw_rslot_state {
	HTW_RS_IDLE,
	HTW_RS_ARMED,
	HTW_RS_EXPIRED,
	HTW_RS_WAITING,
};

/**
 * struct htw_rslot - the kernel's half of a ring timer
 * @timer: on the ring's wheel while ARMED; its link is on @expired or
 *	@waiting of the ring while EXPIRED or WAITING (htw_timer_link())
 * @gen: the generation it was armed as
 * @state: an &enum htw_rslot_state
 *
 * All under the ring's lock.  64 bytes on 64-bit machines.
 */
struct htw_rslot {
	struct htw_timer timer;
	u32 gen;
	u8 state;
};

/* A ring timer's kernel memory, as htw(4) promises it. */
static_assert(!IS_ENABLED(CONFIG_64BIT) || sizeof(struct htw_rslot) == 64);

/* Bit of &htw_ring.due: the wheel's hrtimer found timers due. */
#define HTW_RING_DUE		0

/*
 * Submission entries done, or slots settled, in one hold of the wheel's
 * lock, with interrupts off: a few microseconds of work, where a hold for
 * each costs a lock, an interrupt state and a look at the hrtimer of its
 * own.  The scheduler is looked at between groups.
 */
#define HTW_RING_GROUP		32

/* Batches of expiry work a poll does, at most, to find a completion. */
#define HTW_RING_POLL_BATCHES	4

/* Of the slots that waited for room, what a poll settles at most. */
#define HTW_RING_SETTLE_BATCH	64

/**
 * struct htw_ring - a file's ring timers
 * @lock: see "Locking" above
 * @wheel: their wheel, every level allocated (placing a timer again, in a
 *	run, never allocates)
 * @slots: the kernel's half of each slot, @nr_slots of them
 * @nr_slots: how many
 * @sq_entries: entries of the submission ring, a power of two
 * @cq_entries: entries of the completion ring, a power of two
 * @sq_head: the kernel's submission head: entries consumed
 * @cq_tail: the kernel's completion tail: completions posted
 * @cq_room: completions that fit before the head must be read again
 * @nr_armed: slots ARMED, EXPIRED or WAITING: armed, not delivered; read
 *	without the lock by fdinfo
 * @nr_waiting: slots WAITING; read without the lock by htw_ring_ready()
 * @expired: slots a run took off the wheel, whose words it has not read
 * @waiting: slots whose completion waits for room, in order
 * @time_offset: see &htw_ring_params.time_offset
 * @user: see &htw_ring_params.user
 * @charged: the bytes charged to @user
 * @nr_pages: the shared pages: @rw_pages writable ones, then the read-only
 * @rw_pages: how many of them the writable part has
 * @mem: them, a vmalloc() area
 * @sq_tail_p: in the writable part, the program's submission tail
 * @cq_head_p: in the writable part, the program's completion head
 * @sqes: in the writable part, the submission entries
 * @words: in the writable part, the slots' words
 * @sq_head_p: in the read-only part, the published @sq_head
 * @cq_tail_p: in the read-only part, the published @cq_tail
 * @cqes: in the read-only part, the completion entries
 * @flags_p: in the read-only part, %HTW_RING_CQ_WAITING
 * @cq_published: the completion tail last published, for the verdicts of
 *	polls and waits without the lock
 * @due: %HTW_RING_DUE, set by the wake, cleared by htw_ring_unmark()
 *	(atomic bit operations)
 * @pollers: the file's poll queue (see &htw_ring_params.pollers)
 * @wqh: the waiters of HTW_IOC_RING_ENTER, exclusive, each with its own
 *	wake function (struct htw_ring_waiter)
 * @wakeups: times it woke them, for fdinfo (a mark's, in softirq, and a
 *	call's, under the lock)
 */
struct htw_ring {
	struct mutex lock;	/* see "Locking" above */
	struct htw_wheel *wheel;
	struct htw_rslot *slots;
	u32 nr_slots;
	u32 sq_entries;
	u32 cq_entries;

	/* The following fields are protected by the lock. */
	u32 sq_head;
	u32 cq_tail;
	u32 cq_room;
	u32 nr_armed;
	u32 nr_waiting;
	struct list_head expired;
	struct list_head waiting;

	s64 time_offset;
	struct htw_user *user;
	unsigned long charged;

	unsigned int nr_pages;
	unsigned int rw_pages;
	void *mem;
	u32 *sq_tail_p;
	u32 *cq_head_p;
	struct htw_sqe *sqes;
	u64 *words;
	u32 *sq_head_p;
	u32 *cq_tail_p;
	u32 *flags_p;
	struct htw_cqe *cqes;

	u32 cq_published;
	unsigned long due;
	struct htw_pollers *pollers;
	wait_queue_head_t wqh;
	atomic64_t wakeups;
};

/**
 * htw_ring_slot_cost() - the kernel memory a slot takes beside its words
 *
 * Context: Any context.
 * Return: sizeof(struct htw_rslot).
 */
size_t htw_ring_slot_cost(void)
{
	return sizeof(struct htw_rslot);
}

/*
 * Wake the waiters of HTW_IOC_RING_ENTER, then the file's pollers: all of
 * them here (@here), where a call that may sleep pays for the walk, or
 * a chunk here and the rest in a work item.  A poll, which may run under
 * the locks of epoll, takes the second way: it holds them a chunk long.
 */
static void htw_ring_wake_all(struct htw_ring *ring, bool here)
{
	atomic64_inc(&ring->wakeups);
	wake_up(&ring->wqh);
	if (here)
		htw_pollers_wake_sync(ring->pollers);
	else
		htw_pollers_wake(ring->pollers);
}

/*
 * The wheel's hrtimer found timers due (softirq): mark the ring due and
 * wake its waiters and pollers; they run it.
 */
static void htw_ring_mark(struct htw_ring *ring)
{
	set_bit(HTW_RING_DUE, &ring->due);
	htw_ring_wake_all(ring, false);
}

static void htw_ring_wake(struct htw_wheel *wheel, u64 now)
{
	htw_ring_mark(htw_wheel_data(wheel));
}

/*
 * Take the mark off, unless the wheel is due: after a run that left
 * nothing due.  As htw_ctx_unmark(): a wheel that comes due as the mark
 * comes off is marked again.
 */
static void htw_ring_unmark(struct htw_ring *ring)
	__must_hold(&ring->lock)
{
	lockdep_assert_held(&ring->lock);

	/* Not due: armed again for its next timer, whose expiry marks it. */
	if (htw_wheel_settle(ring->wheel))
		return;
	/* The completions posted before the clear: htw_ring_ready(). */
	smp_mb__before_atomic();
	clear_bit(HTW_RING_DUE, &ring->due);
	/* The clear before the look; pairs with htw_ring_mark()'s. */
	smp_mb__after_atomic();
	if (htw_wheel_due(ring->wheel))
		htw_ring_mark(ring);
}

/* The callback, in a run under ring->lock: hand the timer to the run. */
static void htw_rslot_fn(struct htw_timer *timer, u64 expired, u64 count)
{
	struct htw_rslot *rs = container_of(timer, struct htw_rslot, timer);
	struct htw_ring *ring = htw_timer_wheel_data(timer);

	rs->state = HTW_RS_EXPIRED;
	list_add_tail(htw_timer_link(timer), &ring->expired);
}

static struct htw_rslot *htw_rslot_of_link(struct list_head *link)
{
	return container_of(htw_timer_from_link(link), struct htw_rslot, timer);
}

/*
 * Completions published and unread, as the program's head says, which may
 * be nonsense: for a poll's or a wait's verdict only, never to write by.
 */
static u32 htw_ring_unread(struct htw_ring *ring)
{
	return READ_ONCE(ring->cq_published) - READ_ONCE(*ring->cq_head_p);
}

/*
 * Room in the completion ring, by the program's head: 0 if the head is
 * not within the ring's size behind the tail, so that no completion the
 * program claims unread is written over.
 */
static u32 htw_ring_cq_room(struct htw_ring *ring)
	__must_hold(&ring->lock)
{
	/* The program's reads of what it reaped, before the kernel's writes. */
	u32 used = ring->cq_tail - smp_load_acquire(ring->cq_head_p);

	return used > ring->cq_entries ? 0 : ring->cq_entries - used;
}

/*
 * Whether the completion ring has room for one more: the program's head
 * is read again only once the room last read is used up.
 */
static bool htw_ring_has_room(struct htw_ring *ring)
	__must_hold(&ring->lock)
{
	if (!ring->cq_room)
		ring->cq_room = htw_ring_cq_room(ring);
	return ring->cq_room;
}

/* Post a completion, in the room htw_ring_has_room() found. */
static void htw_ring_post(struct htw_ring *ring, u32 slot, u32 gen, int res,
			  u64 deadline)
	__must_hold(&ring->lock)
{
	struct htw_cqe *cqe = &ring->cqes[ring->cq_tail & (ring->cq_entries - 1)];

	WRITE_ONCE(cqe->slot, slot);
	WRITE_ONCE(cqe->gen, gen);
	WRITE_ONCE(cqe->res, res);
	WRITE_ONCE(cqe->flags, 0);
	WRITE_ONCE(cqe->deadline, deadline);
	ring->cq_tail++;
	ring->cq_room--;
}

/*
 * Settle a slot whose deadline came, in room for its completion, in a
 * group that holds the wheel: read its word, once.  A deadline later than
 * the one held, and not past, places the timer again; %HTW_SLOT_CANCEL
 * cancels it; anything else delivers it, for the latest deadline it was
 * given (a later one that has passed too, which is not early).
 */
static void htw_rslot_settle(struct htw_ring *ring, struct htw_rslot *rs,
			     u64 now)
	__must_hold(&ring->lock)
{
	u32 slot = rs - ring->slots;
	u64 held = htw_expires(&rs->timer);
	u64 word = READ_ONCE(ring->words[slot]);
	u64 when = 0;

	if (word <= HTW_TIME_MAX)
		when = htw_time_minus(word, ring->time_offset);
	if (when > held && when > now) {
		rs->state = HTW_RS_ARMED;
		/* Idle, and every level is there: this cannot fail. */
		WARN_ON_ONCE(htw_mod_locked(&rs->timer, when, 0, HTW_MODE_ABS));
		return;
	}
	rs->state = HTW_RS_IDLE;
	WRITE_ONCE(ring->nr_armed, ring->nr_armed - 1);
	if (word != HTW_SLOT_CANCEL)
		htw_ring_post(ring, slot, rs->gen, 0,
			      htw_time_plus(max(when, held), ring->time_offset));
}

/*
 * Settle the slots whose completion waited for room, in order, as many as
 * fit and at most @max; their words are read now.
 */
static void htw_ring_settle_waiting(struct htw_ring *ring, u32 max)
	__must_hold(&ring->lock)
{
	u64 now = htw_wheel_now(ring->wheel);
	struct htw_rslot *rs;
	unsigned long flags;
	u32 i = 0, end;

	/* Up to a million may wait: a group at a time. */
	while (i < max && !list_empty(&ring->waiting) &&
	       htw_ring_has_room(ring)) {
		end = min(max, i + HTW_RING_GROUP);
		htw_wheel_lock(ring->wheel, &flags);
		for (; i < end && !list_empty(&ring->waiting) &&
		     htw_ring_has_room(ring); i++) {
			rs = htw_rslot_of_link(ring->waiting.next);
			list_del(htw_timer_link(&rs->timer));
			WRITE_ONCE(ring->nr_waiting, ring->nr_waiting - 1);
			htw_rslot_settle(ring, rs, now);
		}
		htw_wheel_unlock(ring->wheel, flags);
		cond_resched();
	}
}

/*
 * Settle each slot a run took off the wheel; while the completion ring is
 * full, or others wait before it, it waits, its word not read yet.
 */
static void htw_ring_expire(struct htw_ring *ring)
	__must_hold(&ring->lock)
{
	u64 now = htw_wheel_now(ring->wheel);
	struct htw_rslot *rs;
	unsigned long flags;
	unsigned int n;

	while (!list_empty(&ring->expired)) {
		htw_wheel_lock(ring->wheel, &flags);
		for (n = 0; n < HTW_RING_GROUP && !list_empty(&ring->expired);
		     n++) {
			rs = htw_rslot_of_link(ring->expired.next);
			list_del(htw_timer_link(&rs->timer));
			if (list_empty(&ring->waiting) &&
			    htw_ring_has_room(ring)) {
				htw_rslot_settle(ring, rs, now);
				continue;
			}
			rs->state = HTW_RS_WAITING;
			list_add_tail(htw_timer_link(&rs->timer), &ring->waiting);
			WRITE_ONCE(ring->nr_waiting, ring->nr_waiting + 1);
		}
		htw_wheel_unlock(ring->wheel, flags);
	}
}

/*
 * Show the completions posted, and the flag word: for the program (the
 * tail, with a release after the entries) and for the verdicts of polls
 * and waits (@cq_published).
 */
static void htw_ring_show(struct htw_ring *ring)
	__must_hold(&ring->lock)
{
	WRITE_ONCE(*ring->flags_p, ring->nr_waiting ? HTW_RING_CQ_WAITING : 0);
	/* The completions written, then the tail that shows them. */
	smp_store_release(ring->cq_tail_p, ring->cq_tail);
	WRITE_ONCE(ring->cq_published, ring->cq_tail);
}

/*
 * One batch of the due timers, up to @until: their words read, their
 * completions posted.  Return whether work is left due.
 */
static bool htw_ring_run(struct htw_ring *ring, u64 until)
	__must_hold(&ring->lock)
{
	bool left;

	htw_wheel_run(ring->wheel, until, &left);
	htw_ring_expire(ring);
	/* What it posted is shown before the mark may come off. */
	htw_ring_show(ring);
	if (!left)
		htw_ring_unmark(ring);
	return left;
}

/*
 * Publish the kernel's indices and flags; then wake the pollers and
 * waiters if completions were posted since @posted_from (EPOLLET hears of
 * each batch), or if the caller @left work that its wheel will not tell
 * of again (a poll's few batches).  A poll wakes them as a mark does
 * (@in_poll): see htw_ring_wake_all().
 */
static void htw_ring_publish(struct htw_ring *ring, u32 posted_from,
			     bool left, bool in_poll)
	__must_hold(&ring->lock)
{
	/* The entries copied, then the head that frees them. */
	smp_store_release(ring->sq_head_p, ring->sq_head);
	htw_ring_show(ring);
	if (ring->cq_tail != posted_from || left)
		htw_ring_wake_all(ring, !in_poll);
}

/*
 * Stop a slot's timer and drop its waiting completion: the slot is IDLE.
 * In a group of entries, which holds the wheel.
 */
static void htw_rslot_stop(struct htw_ring *ring, struct htw_rslot *rs)
	__must_hold(&ring->lock)
{
	switch (rs->state) {
	case HTW_RS_ARMED:
		/* The callbacks run under the wheel's lock: none runs now. */
		htw_del_locked(&rs->timer);
		WRITE_ONCE(ring->nr_armed, ring->nr_armed - 1);
		break;
	case HTW_RS_WAITING:
		list_del(htw_timer_link(&rs->timer));
		WRITE_ONCE(ring->nr_waiting, ring->nr_waiting - 1);
		WRITE_ONCE(ring->nr_armed, ring->nr_armed - 1);
		break;
	default:
		break;
	}
	rs->state = HTW_RS_IDLE;
}

/*
 * Check and do one submission entry, a copy; return 0 or its error.  In a
 * group of entries, which holds the wheel.
 */
static int htw_ring_do(struct htw_ring *ring, const struct htw_sqe *sqe)
	__must_hold(&ring->lock)
{
	struct htw_rslot *rs;

	if (sqe->flags || sqe->slot >= ring->nr_slots)
		return -EINVAL;
	rs = &ring->slots[array_index_nospec(sqe->slot, ring->nr_slots)];
	switch (sqe->op) {
	case HTW_SQE_ARM:
		if (sqe->deadline > HTW_TIME_MAX)
			return -EINVAL;
		/* An armed timer is moved, in one hold of the wheel's lock. */
		if (rs->state != HTW_RS_ARMED) {
			htw_rslot_stop(ring, rs);
			rs->state = HTW_RS_ARMED;
			WRITE_ONCE(ring->nr_armed, ring->nr_armed + 1);
		}
		rs->gen = sqe->gen;
		/* Every level is there: this cannot fail. */
		WARN_ON_ONCE(htw_mod_locked(&rs->timer,
					    htw_time_minus(sqe->deadline,
							   ring->time_offset),
					    0, HTW_MODE_ABS) < 0);
		return 0;
	case HTW_SQE_CANCEL:
		if (sqe->deadline)
			return -EINVAL;
		if (rs->state == HTW_RS_IDLE || rs->gen != sqe->gen)
			return -ENOENT;
		htw_rslot_stop(ring, rs);
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * Consume up to @to_submit submission entries, while the completion ring
 * has room for an error.  Return how many.  The wheel is held once for a
 * group of HTW_RING_GROUP entries, and its hrtimer re-armed once for them.
 */
static u32 htw_ring_submit(struct htw_ring *ring, u32 to_submit)
	__must_hold(&ring->lock)
{
	/* The program's tail, then the entries it shows. */
	u32 tail = smp_load_acquire(ring->sq_tail_p);
	u32 n = min3(to_submit, tail - ring->sq_head, ring->sq_entries);
	const struct htw_sqe *src;
	unsigned long flags;
	struct htw_sqe sqe;
	u32 i = 0, end;
	int ret;

	while (i < n) {
		end = min(n, i + HTW_RING_GROUP);
		htw_wheel_lock(ring->wheel, &flags);
		for (; i < end; i++) {
			/* Room for the error it may make: errors wait nowhere. */
			if (!htw_ring_has_room(ring))
				break;
			/* Copy once, then check and use only the copy. */
			src = &ring->sqes[ring->sq_head & (ring->sq_entries - 1)];
			sqe.op = READ_ONCE(src->op);
			sqe.slot = READ_ONCE(src->slot);
			sqe.gen = READ_ONCE(src->gen);
			sqe.flags = READ_ONCE(src->flags);
			sqe.deadline = READ_ONCE(src->deadline);
			ring->sq_head++;
			ret = htw_ring_do(ring, &sqe);
			if (ret)
				htw_ring_post(ring, sqe.slot, sqe.gen, ret,
					      sqe.deadline);
		}
		htw_wheel_unlock(ring->wheel, flags);
		if (i < end)
			break;
		cond_resched();
	}
	return i;
}

/*
 * Run the due timers, a batch at a time, up to the present as the call
 * began: timers that keep coming due do not keep it going.  Return 0, or
 * -EINTR if a fatal signal came first (the rest stays due).
 */
static int htw_ring_run_due(struct htw_ring *ring)
	__must_hold(&ring->lock)
{
	u64 until = htw_wheel_now(ring->wheel);

	while (test_bit(HTW_RING_DUE, &ring->due)) {
		if (fatal_signal_pending(current))
			return -EINTR;
		if (!htw_ring_run(ring, until))
			break;
		cond_resched();
	}
	return 0;
}

/*
 * Something for a waiter: timers due, @min completions unread, or timers
 * that waited for room in the completion ring the program has since
 * reaped (a reap is a store, and wakes no one: the next look finds them).
 */
static bool htw_ring_ready(struct htw_ring *ring, u32 min)
{
	u32 unread;

	if (test_bit(HTW_RING_DUE, &ring->due))
		return true;
	/* The mark before the completions; pairs with htw_ring_unmark()'s. */
	smp_rmb();
	unread = htw_ring_unread(ring);
	return unread >= min ||
	       (READ_ONCE(ring->nr_waiting) && unread < ring->cq_entries);
}

/*
 * One hold of the lock: consume up to @to_submit submission entries
 * (*@done of them), settle the slots that waited for room, run the due
 * timers, publish.  Return 0, or -EINTR if a fatal signal came first.
 */
static int htw_ring_work(struct htw_ring *ring, u32 to_submit, u32 *done)
{
	u32 from;
	int ret;

	*done = 0;
	if (mutex_lock_killable(&ring->lock))
		return -EINTR;
	from = ring->cq_tail;
	/* The program may have reaped since: read its head again. */
	ring->cq_room = 0;
	/* Its entries first: a cancel of a slot that waits for room drops it. */
	*done = htw_ring_submit(ring, to_submit);
	htw_ring_settle_waiting(ring, U32_MAX);
	ret = htw_ring_run_due(ring);
	htw_ring_publish(ring, from, false, false);
	mutex_unlock(&ring->lock);
	return ret;
}

/**
 * struct htw_ring_waiter - a waiter of HTW_IOC_RING_ENTER
 * @wq: on &htw_ring.wqh, exclusive
 * @ring: the ring timers it waits for
 * @min: the completions it waits for
 */
struct htw_ring_waiter {
	struct wait_queue_entry wq;
	struct htw_ring *ring;
	u32 min;
};

/*
 * A wake of the waiters wakes the first one with something to do, as one
 * blocked reader of a file is woken (htw_ctx_wait()), not the herd; a
 * waiter whose @min is not reached lets the wake go on to the next (a
 * return of 0 does not count as the exclusive wake).  Under wqh.lock, in
 * any context: it reads only what htw_ring_ready() reads.
 */
static int htw_ring_waiter_wake(struct wait_queue_entry *wq, unsigned int mode,
				int sync, void *key)
{
	struct htw_ring_waiter *w = container_of(wq, struct htw_ring_waiter, wq);

	if (!htw_ring_ready(w->ring, w->min))
		return 0;
	return autoremove_wake_function(wq, mode, sync, key);
}

/*
 * A waiter returns, whatever way it ends: if something is left to do,
 * the next waiter's turn.  The wake that woke this one may have been for
 * that too.
 */
static void htw_ring_pass_turn(struct htw_ring *ring)
{
	if (htw_ring_ready(ring, 1))
		wake_up(&ring->wqh);
}

/*
 * Wait until @min completions are unread, running the timers that come due
 * meanwhile.  Whatever makes a waiter ready does so before it takes
 * wqh.lock to wake, and the waiter looks after it is on the queue: no wake
 * is lost.  Return 0, -EINTR on a signal.
 */
static int htw_ring_wait(struct htw_ring *ring, u32 min)
{
	struct htw_ring_waiter w = { .ring = ring, .min = min };
	int ret = 0;
	u32 none;

	init_wait(&w.wq);
	w.wq.func = htw_ring_waiter_wake;
	while (htw_ring_unread(ring) < min) {
		prepare_to_wait_exclusive(&ring->wqh, &w.wq, TASK_INTERRUPTIBLE);
		if (!htw_ring_ready(ring, min)) {
			if (signal_pending(current)) {
				ret = -EINTR;
				break;
			}
			schedule();
			continue;
		}
		finish_wait(&ring->wqh, &w.wq);
		ret = htw_ring_work(ring, 0, &none);
		if (ret)
			break;
	}
	finish_wait(&ring->wqh, &w.wq);
	htw_ring_pass_turn(ring);
	return ret;
}

/**
 * htw_ring_enter() - consume submissions, run due timers, maybe wait
 * @ring: the ring timers
 * @enter: what to do, as the caller gave it
 *
 * Context: Process context; may sleep.
 * Return: the submission entries consumed; -EINVAL; -EINTR if a signal
 * came first, or while waiting, with none consumed.
 */
int htw_ring_enter(struct htw_ring *ring, const struct htw_ring_enter *enter)
{
	u32 done;
	int ret;

	if ((enter->flags & ~HTW_ENTER_GETEVENTS) || enter->reserved ||
	    enter->min_complete > ring->cq_entries)
		return -EINVAL;

	ret = htw_ring_work(ring, enter->to_submit, &done);
	if (!ret && (enter->flags & HTW_ENTER_GETEVENTS))
		ret = htw_ring_wait(ring, enter->min_complete);
	return done ? done : ret;
}

/**
 * htw_ring_poll() - poll a file's ring timers
 * @ring: them
 *
 * As htw_ctx_poll(): with timers due and no completion unread, a poll
 * runs a few batches itself if it gets the lock without waiting, so that
 * readable means a completion to reap; else due counts as readable.  The
 * caller has put the poll table on &htw_ring_params.pollers, which the
 * ring timers wake.
 *
 * Context: Process context.
 * Return: EPOLLIN | EPOLLRDNORM while a completion is unread or a timer
 * due, else 0.
 */
__poll_t htw_ring_poll(struct htw_ring *ring)
{
	unsigned int i;
	bool left;
	u32 from;

	if (!htw_ring_ready(ring, 1))
		return 0;
	if (htw_ring_unread(ring) || !mutex_trylock(&ring->lock))
		return EPOLLIN | EPOLLRDNORM;
	/* Due, or waiting with room: settle what a look may, a batch. */
	from = ring->cq_tail;
	ring->cq_room = 0;
	htw_ring_settle_waiting(ring, HTW_RING_SETTLE_BATCH);
	for (i = 0; i < HTW_RING_POLL_BATCHES && ring->cq_tail == from &&
	     test_bit(HTW_RING_DUE, &ring->due); i++)
		if (!htw_ring_run(ring, U64_MAX))
			break;
	/*
	 * What it posted, other pollers and the waiters of HTW_IOC_RING_ENTER
	 * hear of; and of work it left due, which its own wheel will not
	 * tell again until a run (an EPOLLET poller comes back for it).
	 */
	left = test_bit(HTW_RING_DUE, &ring->due) ||
	       htw_ring_ready(ring, U32_MAX);
	htw_ring_publish(ring, from, left, true);
	mutex_unlock(&ring->lock);
	return htw_ring_ready(ring, 1) ? EPOLLIN | EPOLLRDNORM : 0;
}

/*
 * The layout of the shared memory (see struct htw_ring_offsets): each
 * index on a cache line of its own, as XDP's rings keep producer and
 * consumer apart.  Return -EINVAL if the sizes cannot be.
 */
static int htw_ring_layout(struct htw_ring_setup *s)
{
	size_t sqes, words, cqes;

	size_t rw, ro;

	s->off = (struct htw_ring_offsets) {
		.sq_tail = 0,
		.cq_head = L1_CACHE_BYTES,
		.sqes = 2 * L1_CACHE_BYTES,
		.sq_head = 0,
		.cq_tail = L1_CACHE_BYTES,
		.flags = L1_CACHE_BYTES + sizeof(u32),
		.cqes = 2 * L1_CACHE_BYTES,
	};
	/* At most 4096 entries of 24 bytes, 2^23 slots: no overflow. */
	sqes = size_mul(s->sq_entries, sizeof(struct htw_sqe));
	words = size_mul(s->nr_slots, sizeof(u64));
	cqes = size_mul(s->cq_entries, sizeof(struct htw_cqe));
	s->off.slots = ALIGN(s->off.sqes + sqes, L1_CACHE_BYTES);
	rw = size_add(s->off.slots, words);
	ro = size_add(s->off.cqes, cqes);
	if (rw > HTW_RING_OFF_RO || ro > HTW_RING_OFF_RO)
		return -EINVAL;
	s->rw_size = PAGE_ALIGN(rw);
	s->ro_size = PAGE_ALIGN(ro);
	return 0;
}

/* Allocate and point into the shared memory. */
static int htw_ring_alloc_pages(struct htw_ring *ring,
				const struct htw_ring_setup *s)
{
	ring->rw_pages = s->rw_size >> PAGE_SHIFT;
	ring->nr_pages = ring->rw_pages + (s->ro_size >> PAGE_SHIFT);
	ring->mem = __vmalloc(s->rw_size + s->ro_size,
			      HTW_RING_VMALLOC_GFP);
	if (!ring->mem)
		return -ENOMEM;

	ring->sq_tail_p = ring->mem + s->off.sq_tail;
	ring->cq_head_p = ring->mem + s->off.cq_head;
	ring->sqes = ring->mem + s->off.sqes;
	ring->words = ring->mem + s->off.slots;
	ring->sq_head_p = ring->mem + s->rw_size + s->off.sq_head;
	ring->cq_tail_p = ring->mem + s->rw_size + s->off.cq_tail;
	ring->flags_p = ring->mem + s->rw_size + s->off.flags;
	ring->cqes = ring->mem + s->rw_size + s->off.cqes;
	return 0;
}

/*
 * The slots in whole pages, as vmalloc() gives them: asked for so, and
 * charged so.  Never a huge mapping (kvmalloc() may round up to 2 MiB).
 */
static size_t htw_ring_slots_size(u32 nr_slots)
{
	return PAGE_ALIGN(size_mul(nr_slots, sizeof(struct htw_rslot)));
}

/* Allocate the kernel's half of each slot, every one IDLE. */
static int htw_ring_alloc_slots(struct htw_ring *ring)
{
	u32 i;

	ring->slots = __vmalloc(htw_ring_slots_size(ring->nr_slots),
				HTW_RING_VMALLOC_GFP);
	if (!ring->slots)
		return -ENOMEM;
	for (i = 0; i < ring->nr_slots; i++) {
		htw_timer_init(&ring->slots[i].timer, ring->wheel, htw_rslot_fn);
		if (!((i + 1) % 4096))
			cond_resched();
	}
	return 0;
}

/* Free what htw_ring_create() made, as far as it got. */
static void htw_ring_free(struct htw_ring *ring)
{
	if (ring->wheel)
		htw_wheel_stop(ring->wheel);
	/* No run, no wake: the slots can go, then the wheel. */
	vfree(ring->slots);
	htw_wheel_destroy(ring->wheel);
	vfree(ring->mem);
	if (ring->charged)
		htw_user_uncharge(ring->user, ring->charged);
	mutex_destroy(&ring->lock);
	kfree(ring);
}

/**
 * htw_ring_create() - create a file's ring timers
 * @params: what they are made of
 * @setup: as the caller asked; its sizes are rounded and its offsets
 *	filled in
 *
 * Context: Process context; may sleep.  Memory is charged to the caller's
 * memory cgroup, and to @params->user.
 * Return: the ring timers, or ERR_PTR(-EINVAL), ERR_PTR(-ENOSPC),
 * ERR_PTR(-ENOMEM), or ERR_PTR(-EOPNOTSUPP) on a 32-bit kernel or one
 * whose data caches alias.
 */
struct htw_ring *htw_ring_create(const struct htw_ring_params *params,
				 struct htw_ring_setup *setup)
{
	struct htw_wheel_params wp = params->wheel;
	struct htw_ring *ring;
	size_t bytes;
	int ret;

	/*
	 * A slot's word must be read in one load, and the kernel's mapping
	 * of a page see what the program's does.
	 */
	if (!IS_ENABLED(CONFIG_64BIT) || cpu_dcache_is_aliasing())
		return ERR_PTR(-EOPNOTSUPP);
	/* What the kernel writes back must be zero: it may be read one day. */
	if (setup->flags || setup->cq_entries || setup->rw_size ||
	    setup->ro_size || memchr_inv(&setup->off, 0, sizeof(setup->off)))
		return ERR_PTR(-EINVAL);
	if (!setup->nr_slots ||
	    setup->nr_slots > min(params->max_slots, HTW_RING_SLOTS_MAX) ||
	    !setup->sq_entries || setup->sq_entries > HTW_RING_SQ_MAX)
		return ERR_PTR(-EINVAL);
	setup->sq_entries = roundup_pow_of_two(setup->sq_entries);
	setup->cq_entries = roundup_pow_of_two(max(setup->nr_slots,
						   setup->sq_entries));
	ret = htw_ring_layout(setup);
	if (ret)
		return ERR_PTR(ret);

	ring = kzalloc(sizeof(*ring), HTW_RING_GFP);
	if (!ring)
		return ERR_PTR(-ENOMEM);
	mutex_init(&ring->lock);
	init_waitqueue_head(&ring->wqh);
	INIT_LIST_HEAD(&ring->expired);
	INIT_LIST_HEAD(&ring->waiting);
	ring->nr_slots = setup->nr_slots;
	ring->sq_entries = setup->sq_entries;
	ring->cq_entries = setup->cq_entries;
	ring->time_offset = params->time_offset;
	ring->user = params->user;
	ring->pollers = params->pollers;

	/* Its readers run it; every level now, so that no run allocates. */
	wp.clockid = CLOCK_MONOTONIC;
	wp.flags = HTW_WHEEL_ACCOUNT | HTW_WHEEL_LOCKED_CALLBACKS |
		   HTW_WHEEL_DEFERRED;
	wp.wake = htw_ring_wake;
	wp.data = ring;
	ring->wheel = htw_wheel_create(&wp);
	if (IS_ERR(ring->wheel)) {
		ret = PTR_ERR(ring->wheel);
		ring->wheel = NULL;
		goto err_free;
	}

	/*
	 * The account before the large allocations, as the allocators take
	 * them: the pages and the slots in whole pages, the wheel, and the
	 * ring itself as the slab rounds it.
	 */
	bytes = size_add(size_add(setup->rw_size, setup->ro_size),
			 size_add(htw_ring_slots_size(ring->nr_slots),
				  htw_wheel_footprint(ring->wheel)));
	bytes = size_add(bytes, kmalloc_size_roundup(sizeof(*ring)));
	if (ring->user) {
		ret = htw_user_charge(ring->user, bytes,
				      READ_ONCE(*params->max_user_bytes));
		if (ret)
			goto err_free;
		ring->charged = bytes;
	}

	ret = htw_ring_alloc_pages(ring, setup);
	if (ret)
		goto err_free;
	ret = htw_ring_alloc_slots(ring);
	if (ret)
		goto err_free;
	return ring;

err_free:
	htw_ring_free(ring);
	return ERR_PTR(ret);
}

/**
 * htw_ring_destroy() - cancel every ring timer of a file and free them
 * @ring: them; nothing else may use them, nor any mapping reach them
 *
 * Context: Process context; may sleep.
 */
void htw_ring_destroy(struct htw_ring *ring)
{
	htw_ring_free(ring);
}

/*
 * Hand a mapping the page it touched, again after a zap.  The part and the
 * page are the file offset's (@vmf->pgoff), never the mapping's start: a
 * mapping split by munmap() or mprotect() starts anywhere within its part.
 * The page is the vmalloc() area's, held by the mapping's own reference
 * (get_page()), as vm_insert_page() would hold it; the area lives until
 * ->release, after the last mapping.
 */
static vm_fault_t htw_ring_fault(struct vm_fault *vmf)
{
	struct htw_ring *ring = vmf->vma->vm_private_data;
	unsigned long index = vmf->pgoff;
	unsigned long ro = HTW_RING_OFF_RO >> PAGE_SHIFT;
	struct page *page;

	if (index >= ro) {
		index -= ro;
		if (index >= ring->nr_pages - ring->rw_pages)
			return VM_FAULT_SIGBUS;
		index += ring->rw_pages;
	} else if (index >= ring->rw_pages) {
		return VM_FAULT_SIGBUS;
	}
	page = vmalloc_to_page(ring->mem + (index << PAGE_SHIFT));
	get_page(page);
	vmf->page = page;
	return 0;
}

static const struct vm_operations_struct htw_ring_vm_ops = {
	.fault	= htw_ring_fault,
};

/**
 * htw_ring_mmap() - map a part of the shared memory
 * @ring: the ring timers
 * @vma: the mapping: at %HTW_RING_OFF_RW or %HTW_RING_OFF_RO, shared, no
 *	longer than its part, and read-only for %HTW_RING_OFF_RO
 *
 * The pages come at the first touch of each (htw_ring_fault()).
 *
 * Context: Process context, with the mm's mmap_lock held for writing.
 * Return: 0, -EINVAL or -EPERM.
 */
int htw_ring_mmap(struct htw_ring *ring, struct vm_area_struct *vma)
{
	unsigned long len = vma->vm_end - vma->vm_start;
	unsigned int pages;

	/* Shared (a read-only file's shared mapping has VM_MAYSHARE only). */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_pgoff == HTW_RING_OFF_RW >> PAGE_SHIFT) {
		pages = ring->rw_pages;
	} else if (vma->vm_pgoff == HTW_RING_OFF_RO >> PAGE_SHIFT) {
		if (vma->vm_flags & VM_WRITE)
			return -EPERM;
		/* Nor made writable later, by mprotect(). */
		vm_flags_clear(vma, VM_MAYWRITE);
		pages = ring->nr_pages - ring->rw_pages;
	} else {
		return -EINVAL;
	}
	/* Data, never code. */
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	vm_flags_clear(vma, VM_MAYEXEC);
	if (len >> PAGE_SHIFT > pages)
		return -EINVAL;
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &htw_ring_vm_ops;
	vma->vm_private_data = ring;
	return 0;
}

/**
 * htw_ring_counts() - a file's ring timers, for fdinfo
 * @ring: them
 * @nr_slots: set to their slots
 * @nr_armed: set to the slots armed
 * @nr_waiting: set to the completions waiting for room
 *
 * Context: Any context; the counts may be stale as soon as they are read.
 */
void htw_ring_counts(struct htw_ring *ring, u32 *nr_slots, u32 *nr_armed,
		     u32 *nr_waiting)
{
	*nr_slots = ring->nr_slots;
	*nr_armed = READ_ONCE(ring->nr_armed);
	*nr_waiting = READ_ONCE(ring->nr_waiting);
}

/**
 * htw_ring_wakes() - how many times a file's ring timers woke it, for
 *	fdinfo
 * @ring: them
 * @wakeups: set to how many times they woke the file's pollers and the
 *	waiters of HTW_IOC_RING_ENTER
 *
 * Context: Any context; the counts may be stale as soon as they are read.
 * Return: the wakes of their wheel (htw_wheel_wakes()).
 */
u64 htw_ring_wakes(struct htw_ring *ring, u64 *wakeups)
{
	*wakeups = atomic64_read(&ring->wakeups);
	return htw_wheel_wakes(ring->wheel);
}
