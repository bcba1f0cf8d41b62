// SPDX-License-Identifier: GPL-2.0
/*
 * The timers of /dev/htw each user holds, across all of the user's files
 *
 * /dev/htw is open to every user, and a timer pins kernel memory that no
 * process's RSS shows, so the memory one uid may pin is bounded across all
 * of its files, as epoll bounds the watches of a user (fs/eventpoll.c,
 * max_user_watches).  The unit is a timer: a context charges one for each
 * timer, and for each of its wheels the number of timers the wheel's memory
 * would hold.  The count is exact (an atomic compare-and-exchange, never
 * past the limit): epoll's percpu_counter would spare a shared cache line
 * per arm, but may pass its limit by a batch per CPU.
 *
 * The kernel's own per-user counts (kernel/ucount.c, UCOUNT_*) are where
 * this would live in the tree; a module can neither add a count there nor
 * call inc_ucount(), which is not exported, hence this small table.
 *
 * Users are uids, as epoll's are: every process of a uid shares its limit,
 * in whichever container it runs, and a file passed to another process (by
 * fork() or SCM_RIGHTS) stays charged to the uid that opened it.
 *
 * struct htw_user lives while a file of its uid is open: htw_user_get() at
 * open(), htw_user_put() at close.  The table and the reference counts are
 * protected by htw_users_lock (a count only reaches zero under it, with the
 * account's removal from the table); the counter needs no lock.
 */

#include <kunit/visibility.h>
#include <linux/hashtable.h>
#include <linux/atomic.h>
#include <linux/refcount.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "htw_user.h"

/**
 * struct htw_user - the timers one uid holds
 * @node: in htw_users
 * @uid: the user
 * @refs: open files of the user
 * @timers: timers the user holds
 */
struct htw_user {
	struct hlist_node node;
	kuid_t uid;
	refcount_t refs;
	atomic_long_t timers;
};

#define HTW_USERS_BITS	7

static DEFINE_HASHTABLE(htw_users, HTW_USERS_BITS);
static DEFINE_SPINLOCK(htw_users_lock);

static struct htw_user *__htw_user_find(kuid_t uid)
	__must_hold(&htw_users_lock)
{
	struct htw_user *user;

	lockdep_assert_held(&htw_users_lock);

	hash_for_each_possible(htw_users, user, node, __kuid_val(uid))
		if (uid_eq(user->uid, uid)) {
			refcount_inc(&user->refs);
			return user;
		}
	return NULL;
}

/**
 * htw_user_get() - take a reference on a user's account, creating it
 * @uid: the user
 *
 * Context: Process context; may sleep.
 * Return: the account, or NULL if out of memory.
 */
struct htw_user *htw_user_get(kuid_t uid)
{
	struct htw_user *user, *found;

	spin_lock(&htw_users_lock);
	found = __htw_user_find(uid);
	spin_unlock(&htw_users_lock);
	if (found)
		return found;

	user = kzalloc(sizeof(*user), GFP_KERNEL);
	if (!user)
		return NULL;
	user->uid = uid;
	refcount_set(&user->refs, 1);

	spin_lock(&htw_users_lock);
	found = __htw_user_find(uid);
	if (!found)
		hash_add(htw_users, &user->node, __kuid_val(uid));
	spin_unlock(&htw_users_lock);
	if (found) {
		kfree(user);
		return found;
	}
	return user;
}
EXPORT_SYMBOL_IF_KUNIT(htw_user_get);

/**
 * htw_user_put() - drop a reference taken by htw_user_get()
 * @user: the account, or NULL
 *
 * The account goes when its last file closes; by then it holds no timer.
 *
 * Context: Process context.
 */
void htw_user_put(struct htw_user *user)
{
	if (!user)
		return;
	spin_lock(&htw_users_lock);
	if (!refcount_dec_and_test(&user->refs)) {
		spin_unlock(&htw_users_lock);
		return;
	}
	hash_del(&user->node);
	spin_unlock(&htw_users_lock);

	WARN_ON_ONCE(atomic_long_read(&user->timers));
	kfree(user);
}
EXPORT_SYMBOL_IF_KUNIT(htw_user_put);

/**
 * htw_user_charge() - count @nr more timers for a user
 * @user: the account
 * @nr: timers to count
 * @limit: the most timers the user may hold
 *
 * Context: Any context.
 * Return: 0, or -ENOSPC (counting nothing) if the user would hold more
 * than @limit timers.
 */
int htw_user_charge(struct htw_user *user, unsigned long nr,
		    unsigned long limit)
{
	long old = atomic_long_read(&user->timers);

	do {
		if (nr > limit || old > limit - nr)
			return -ENOSPC;
	} while (!atomic_long_try_cmpxchg(&user->timers, &old, old + nr));
	return 0;
}

/**
 * htw_user_uncharge() - count @nr timers fewer for a user
 * @user: the account
 * @nr: timers released
 *
 * Context: Any context.
 */
void htw_user_uncharge(struct htw_user *user, unsigned long nr)
{
	atomic_long_sub(nr, &user->timers);
}

/**
 * htw_user_timers() - how many timers a user holds
 * @user: the account
 *
 * Context: Any context.
 * Return: the count.
 */
unsigned long htw_user_timers(struct htw_user *user)
{
	return atomic_long_read(&user->timers);
}
EXPORT_SYMBOL_IF_KUNIT(htw_user_timers);
