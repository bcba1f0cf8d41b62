// SPDX-License-Identifier: GPL-2.0
/*
 * The memory of /dev/htw each user holds, across all of the user's files
 *
 * /dev/htw is open to every user, and a timer pins kernel memory that no
 * process's RSS shows, so the memory one uid may pin is bounded across all
 * of its files, as epoll bounds the watches of a user (fs/eventpoll.c,
 * max_user_watches).  The unit is a byte: a context charges the size of
 * each timer, and of each of its wheels and id nodes the most memory it
 * can take, so that the limit means the same whatever a user pins it
 * with (a timer counted one, a wheel would have been "94 timers" on one
 * build and another number on the next).  The count is exact (an atomic compare-and-exchange, never
 * past the limit): epoll's percpu_counter would spare a shared cache line
 * per arm, but may pass its limit by a batch per CPU.
 *
 * The kernel's own per-user counts (kernel/ucount.c, UCOUNT_*) are where
 * this would live in the tree; a module can neither add a count there nor
 * call inc_ucount(), which is not exported, hence this small table.
 *
 * An account is a uid in a user namespace, and charging it charges, as
 * kernel/ucount.c's inc_ucount() does, the account of the namespace's
 * owner in the parent namespace too, and so on up to the initial one:
 * each against the same limit.  So everything the uids of a user's
 * namespaces hold counts against that user, who cannot multiply the limit
 * by mapping more uids (a user with a subordinate range of 65,536 could
 * otherwise pin 65,536 limits' worth), and the owner's account shows what
 * they hold.  Within one namespace a uid is one user everywhere, as for
 * epoll: every process of a uid shares its limit, and a file passed to
 * another process (by fork() or SCM_RIGHTS) stays charged to the account
 * that opened it.  The chain stops below a namespace that the initial
 * namespace's root made: the containers root runs (Docker's remapped
 * users, LXD, podman) are accounted as the separate users they are meant
 * to be, where charging root for all of them would let one exhaust the
 * limit of all, and root can create namespaces without bound anyway.
 *
 * struct htw_user lives while a file of its account, or an account of a
 * namespace below it, is open: htw_user_get() at open(), htw_user_put() at
 * close; an account holds a reference on its parent and on its namespace.
 * The table and the reference counts are protected by htw_users_lock (a
 * count only reaches zero under it, with the account's removal from the
 * table); the counters need no lock.
 */

#include <kunit/visibility.h>
#include <linux/hashtable.h>
#include <linux/atomic.h>
#include <linux/refcount.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/user_namespace.h>

#include "htw_user.h"

/**
 * struct htw_user - the memory one uid of one user namespace holds
 * @node: in htw_users, under htw_users_lock
 * @ns: the namespace, referenced; set before the account is in the table,
 *	never changed after
 * @uid: the user; the same
 * @refs: open files of the account, and accounts whose parent it is; it
 *	reaches zero only under htw_users_lock
 * @bytes: what the account holds, its namespaces' below included; atomic,
 *	no lock
 * @parent: the account of @ns's owner in @ns's parent, referenced; NULL
 *	in the initial namespace, and in a namespace root made; never changed
 */
struct htw_user {
	struct hlist_node node;
	struct user_namespace *ns;
	kuid_t uid;
	refcount_t refs;
	atomic_long_t bytes;
	struct htw_user *parent;
};

#define HTW_USERS_BITS	7

static DEFINE_HASHTABLE(htw_users, HTW_USERS_BITS);
/*
 * Protects htw_users and each account's @node in it, and the last put of
 * an account's @refs.  Taken alone, never with another lock held, for an
 * O(1) look-up, insert or removal.
 */
static DEFINE_SPINLOCK(htw_users_lock);

static unsigned long htw_user_key(struct user_namespace *ns, kuid_t uid)
{
	return (unsigned long)ns ^ __kuid_val(uid);
}

static struct htw_user *__htw_user_find(struct user_namespace *ns,
					kuid_t uid)
	__must_hold(&htw_users_lock)
{
	struct htw_user *user;

	lockdep_assert_held(&htw_users_lock);

	hash_for_each_possible(htw_users, user, node, htw_user_key(ns, uid))
		if (user->ns == ns && uid_eq(user->uid, uid)) {
			refcount_inc(&user->refs);
			return user;
		}
	return NULL;
}

static struct htw_user *htw_user_find(struct user_namespace *ns, kuid_t uid)
{
	struct htw_user *found;

	spin_lock(&htw_users_lock);
	found = __htw_user_find(ns, uid);
	spin_unlock(&htw_users_lock);
	return found;
}

/**
 * htw_user_get() - take a reference on an account, creating it
 * @ns: the user namespace the uid was seen in (the opener's)
 * @uid: the user
 *
 * Creates the accounts of the owners of @ns and of its ancestors too, as
 * need be (at most 32 levels of user namespaces).
 *
 * Context: Process context; may sleep.
 * Return: the account, or NULL if out of memory.
 */
struct htw_user *htw_user_get(struct user_namespace *ns, kuid_t uid)
{
	struct htw_user *user, *found, *parent = NULL;

	found = htw_user_find(ns, uid);
	if (found)
		return found;
	/* A namespace root made is a domain of its own: see above. */
	if (ns != &init_user_ns &&
	    !(ns->parent == &init_user_ns && uid_eq(ns->owner, GLOBAL_ROOT_UID))) {
		parent = htw_user_get(ns->parent, ns->owner);
		if (!parent)
			return NULL;
	}

	user = kzalloc(sizeof(*user), GFP_KERNEL);
	if (!user) {
		htw_user_put(parent);
		return NULL;
	}
	user->ns = get_user_ns(ns);
	user->uid = uid;
	user->parent = parent;
	refcount_set(&user->refs, 1);

	spin_lock(&htw_users_lock);
	found = __htw_user_find(ns, uid);
	if (!found)
		hash_add(htw_users, &user->node, htw_user_key(ns, uid));
	spin_unlock(&htw_users_lock);
	if (found) {
		put_user_ns(ns);
		kfree(user);
		htw_user_put(parent);
		return found;
	}
	return user;
}
EXPORT_SYMBOL_IF_KUNIT(htw_user_get);

/**
 * htw_user_put() - drop a reference taken by htw_user_get()
 * @user: the account, or NULL
 *
 * The account goes when its last file closes, and the last account below
 * it; by then it holds no timer.  Its parent's reference goes with it.
 *
 * Context: Process context.
 */
void htw_user_put(struct htw_user *user)
{
	struct htw_user *parent;

	for (; user; user = parent) {
		spin_lock(&htw_users_lock);
		if (!refcount_dec_and_test(&user->refs)) {
			spin_unlock(&htw_users_lock);
			return;
		}
		hash_del(&user->node);
		spin_unlock(&htw_users_lock);

		WARN_ON_ONCE(atomic_long_read(&user->bytes));
		parent = user->parent;
		put_user_ns(user->ns);
		kfree(user);
	}
}
EXPORT_SYMBOL_IF_KUNIT(htw_user_put);

/* Count @nr more for one account, if it stays within @limit. */
static bool htw_user_charge_one(struct htw_user *user, unsigned long nr,
				unsigned long limit)
{
	long old = atomic_long_read(&user->bytes);

	do {
		if (nr > limit || old > limit - nr)
			return false;
	} while (!atomic_long_try_cmpxchg(&user->bytes, &old, old + nr));
	return true;
}

/**
 * htw_user_charge() - count @nr more bytes for an account and its owners
 * @user: the account
 * @nr: bytes to count
 * @limit: the most bytes each account may hold
 *
 * Context: Any context.
 * Return: 0, or -ENOSPC (counting nothing) if the account, or the account
 * of the owner of its namespace or of any namespace above, would hold more
 * than @limit bytes.
 */
int htw_user_charge(struct htw_user *user, unsigned long nr,
		    unsigned long limit)
{
	struct htw_user *u, *full;

	for (u = user; u; u = u->parent)
		if (!htw_user_charge_one(u, nr, limit))
			goto undo;
	return 0;
undo:
	full = u;
	for (u = user; u != full; u = u->parent)
		atomic_long_sub(nr, &u->bytes);
	return -ENOSPC;
}

/**
 * htw_user_uncharge() - count @nr bytes fewer for an account and its owners
 * @user: the account
 * @nr: bytes released
 *
 * Context: Any context.
 */
void htw_user_uncharge(struct htw_user *user, unsigned long nr)
{
	for (; user; user = user->parent)
		atomic_long_sub(nr, &user->bytes);
}

/**
 * htw_user_bytes() - how much memory an account holds
 * @user: the account
 *
 * Context: Any context.
 * Return: bytes, those of the namespaces it owns included.
 */
unsigned long htw_user_bytes(struct htw_user *user)
{
	return atomic_long_read(&user->bytes);
}
EXPORT_SYMBOL_IF_KUNIT(htw_user_bytes);
