// SPDX-License-Identifier: GPL-2.0
/*
 * The timers of /dev/htw each user holds, across all of the user's files
 *
 * /dev/htw is open to every user, and a timer pins kernel memory that no
 * process's RSS shows, so the number of timers one uid may hold is bounded
 * across all of its files, as epoll bounds the watches of a user
 * (fs/eventpoll.c, max_user_watches).  The count is a percpu_counter, as
 * epoll's is, so that files of one user on different CPUs do not share a
 * cache line on every arm and cancel; the limit is compared with the
 * counter's approximate value and may be passed by at most the counter's
 * batch on each CPU racing to the same limit, as epoll's may.
 *
 * struct htw_user lives while a file of its uid is open: htw_user_get() at
 * open(), htw_user_put() at close.  The table and the reference counts are
 * protected by htw_users_lock (a count only reaches zero under it, with the
 * account's removal from the table); the counter needs no lock.
 */

#include <kunit/visibility.h>
#include <linux/hashtable.h>
#include <linux/percpu_counter.h>
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
	struct percpu_counter timers;
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
	if (percpu_counter_init(&user->timers, 0, GFP_KERNEL)) {
		kfree(user);
		return NULL;
	}
	user->uid = uid;
	refcount_set(&user->refs, 1);

	spin_lock(&htw_users_lock);
	found = __htw_user_find(uid);
	if (!found)
		hash_add(htw_users, &user->node, __kuid_val(uid));
	spin_unlock(&htw_users_lock);
	if (found) {
		percpu_counter_destroy(&user->timers);
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

	WARN_ON_ONCE(percpu_counter_sum(&user->timers));
	percpu_counter_destroy(&user->timers);
	kfree(user);
}
EXPORT_SYMBOL_IF_KUNIT(htw_user_put);

/**
 * htw_user_charge() - count one more timer for a user
 * @user: the account
 * @limit: the most timers the user may hold
 *
 * Context: Any context.
 * Return: 0, or -ENOSPC if the user holds @limit timers already.
 */
int htw_user_charge(struct htw_user *user, unsigned int limit)
{
	if (percpu_counter_compare(&user->timers, limit) >= 0)
		return -ENOSPC;
	percpu_counter_inc(&user->timers);
	return 0;
}

/**
 * htw_user_uncharge() - count @nr timers fewer for a user
 * @user: the account
 * @nr: timers released
 *
 * Context: Any context.
 */
void htw_user_uncharge(struct htw_user *user, unsigned int nr)
{
	percpu_counter_sub(&user->timers, nr);
}

/**
 * htw_user_timers() - how many timers a user holds
 * @user: the account
 *
 * Context: Any context; exact at the moment of reading.
 * Return: the count.
 */
u64 htw_user_timers(struct htw_user *user)
{
	s64 n = percpu_counter_sum(&user->timers);

	return n > 0 ? n : 0;
}
EXPORT_SYMBOL_IF_KUNIT(htw_user_timers);
