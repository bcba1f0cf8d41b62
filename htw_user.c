// SPDX-License-Identifier: GPL-2.0
/*
 * The memory of /dev/htw each person holds, across all of their files
 *
 * /dev/htw is open to every user, and a timer pins kernel memory that no
 * process's RSS shows, so the memory one person may pin is bounded across
 * all of their files, as epoll bounds the watches of a user (fs/eventpoll.c,
 * max_user_watches).  The unit is a byte: a context charges the size of
 * each timer, and of each of its wheels and id nodes the most memory it
 * can take, so that the limit means the same whatever a user pins it
 * with (a timer counted one, a wheel would have been "94 timers" on one
 * build and another number on the next).  The count is exact (an atomic
 * compare-and-exchange, never past the limit): epoll's percpu_counter
 * would spare a shared cache line per arm, but may pass its limit by a
 * batch per CPU.
 *
 * The kernel's own per-user counts (kernel/ucount.c, UCOUNT_*) are where
 * this would live in the tree; a module can neither add a count there nor
 * call inc_ucount(), which is not exported, hence this small table.
 *
 * A person is a kuid: a uid as the initial user namespace sees it.  The
 * account of a kuid is one, whichever namespaces the kuid opens the device
 * in, so that neither making namespaces nor entering them multiplies the
 * limit: a uid 0 without capabilities that unshares a user namespace can
 * only map its own kuid into it, and is charged as itself there.  As
 * inc_ucount() charges every level up, a file charges, besides the kuid
 * that opened it, the owner of each user namespace between the opener's
 * and the initial one, each once and each against the same limit: the
 * uids a user maps (65,536 subordinate uids by newuidmap) are distinct
 * kuids, and hold together at most their owner's limit, and the owner's
 * account shows what they hold.  The walk up stops at a namespace whose
 * owner is the initial namespace's root: the containers root runs (Docker's
 * remapped users, LXD, podman) are accounted as the persons their kuids
 * are, where charging root for all of them would let one container exhaust
 * the limit of all.  So root gives a container limits of its own by giving
 * it kuids of its own, as isolated idmaps do; containers that share an
 * idmap share its kuids' limits; and what a whole container may pin is its
 * memory cgroup's to bound, which everything htw allocates for a user is
 * charged to (GFP_KERNEL_ACCOUNT), these accounts included.
 *
 * Within one kuid, as for epoll, every process shares the limit, and a file
 * passed to another process (by fork() or SCM_RIGHTS) stays charged to the
 * persons its opener's were.  A file holds its list of them, struct
 * htw_user, from open to close; an account lives while a list holds it.
 * The table is an rhashtable keyed by kuid, whose buckets grow with it, so
 * that no user can lengthen the chain another's open() walks; the table
 * and each account's last reference are protected by htw_accounts_lock,
 * the counters need no lock.
 */

#include <kunit/visibility.h>
#include <linux/atomic.h>
#include <linux/overflow.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/rhashtable.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/user_namespace.h>

#include "htw_user.h"

/*
 * The persons one file charges: its opener, and at most one owner a level
 * of user namespaces (there are at most 32 levels below the initial one).
 */
#define HTW_USER_MAX_PAYERS	33

/**
 * struct htw_account - the memory one kuid holds
 * @node: in htw_accounts, under htw_accounts_lock
 * @uid: the person; the key, never changed
 * @refs: the lists of payers that hold it; it reaches zero only under
 *	htw_accounts_lock
 * @bytes: what the account holds, that of the uids of the namespaces it
 *	owns included; atomic, no lock
 * @rcu: frees it after rhashtable's own lock-free walkers are done
 */
struct htw_account {
	struct rhash_head node;
	kuid_t uid;
	refcount_t refs;
	atomic_long_t bytes;
	struct rcu_head rcu;
};

/**
 * struct htw_user - the persons a file charges, each once
 * @nr: how many
 * @accounts: the opener's account first, then the owners' from the
 *	opener's namespace up; each referenced, fixed from open to close
 */
struct htw_user {
	unsigned int nr;
	struct htw_account *accounts[] __counted_by(nr);
};

static const struct rhashtable_params htw_accounts_params = {
	.key_len		= sizeof(kuid_t),
	.key_offset		= offsetof(struct htw_account, uid),
	.head_offset		= offsetof(struct htw_account, node),
	.automatic_shrinking	= true,
};

static struct rhashtable htw_accounts;
/*
 * Protects htw_accounts' membership and the last put of an account's
 * @refs.  Taken alone, never with another lock held, for an O(1) look-up,
 * insert or removal.
 */
static DEFINE_SPINLOCK(htw_accounts_lock);

/* Take a reference on the account of @uid, if it has one. */
static struct htw_account *__htw_account_find(kuid_t uid)
	__must_hold(&htw_accounts_lock)
{
	struct htw_account *account;

	lockdep_assert_held(&htw_accounts_lock);

	account = rhashtable_lookup_fast(&htw_accounts, &uid,
					 htw_accounts_params);
	if (account)
		refcount_inc(&account->refs);
	return account;
}

static void htw_account_put(struct htw_account *account)
{
	spin_lock(&htw_accounts_lock);
	if (!refcount_dec_and_test(&account->refs)) {
		spin_unlock(&htw_accounts_lock);
		return;
	}
	rhashtable_remove_fast(&htw_accounts, &account->node,
			       htw_accounts_params);
	spin_unlock(&htw_accounts_lock);

	WARN_ON_ONCE(atomic_long_read(&account->bytes));
	kfree_rcu(account, rcu);
}

/* The account of @uid, referenced and made if need be; NULL or ERR_PTR. */
static struct htw_account *htw_account_get(kuid_t uid)
{
	struct htw_account *account, *found;
	int ret;

	spin_lock(&htw_accounts_lock);
	found = __htw_account_find(uid);
	spin_unlock(&htw_accounts_lock);
	if (found)
		return found;

	/* The opener's memory cgroup pays for the entry. */
	account = kzalloc(sizeof(*account), GFP_KERNEL_ACCOUNT);
	if (!account)
		return ERR_PTR(-ENOMEM);
	account->uid = uid;
	refcount_set(&account->refs, 1);

	spin_lock(&htw_accounts_lock);
	found = __htw_account_find(uid);
	ret = found ? 0 : rhashtable_insert_fast(&htw_accounts, &account->node,
						 htw_accounts_params);
	spin_unlock(&htw_accounts_lock);
	if (found || ret) {
		kfree(account);
		return found ?: ERR_PTR(ret);
	}
	return account;
}

static bool htw_payer_listed(const kuid_t *payers, unsigned int nr,
			     kuid_t uid)
{
	while (nr--)
		if (uid_eq(payers[nr], uid))
			return true;
	return false;
}

/**
 * htw_user_get() - the persons a file opened by @uid in @ns charges
 * @ns: the user namespace of the opener
 * @uid: the opener
 *
 * Takes a reference on the account of @uid and of the owner of each
 * namespace from @ns up to the initial one, or up to one whose owner is
 * the initial namespace's root, creating the accounts as need be.
 *
 * Context: Process context; may sleep.
 * Return: the list, or NULL if out of memory.
 */
struct htw_user *htw_user_get(struct user_namespace *ns, kuid_t uid)
{
	kuid_t payers[HTW_USER_MAX_PAYERS];
	struct htw_account *account;
	struct htw_user *user;
	unsigned int nr = 0;

	payers[nr++] = uid;
	for (; ns != &init_user_ns; ns = ns->parent) {
		/* A namespace root made is a domain of its own: see above. */
		if (uid_eq(ns->owner, GLOBAL_ROOT_UID))
			break;
		if (htw_payer_listed(payers, nr, ns->owner))
			continue;
		if (WARN_ON_ONCE(nr == ARRAY_SIZE(payers)))
			break;
		payers[nr++] = ns->owner;
	}

	user = kzalloc(struct_size(user, accounts, nr), GFP_KERNEL_ACCOUNT);
	if (!user)
		return NULL;
	while (user->nr < nr) {
		account = htw_account_get(payers[user->nr]);
		if (IS_ERR(account)) {
			htw_user_put(user);
			return NULL;
		}
		/* The count first: @accounts is __counted_by() it. */
		user->nr++;
		user->accounts[user->nr - 1] = account;
	}
	return user;
}
EXPORT_SYMBOL_IF_KUNIT(htw_user_get);

/**
 * htw_user_put() - drop what htw_user_get() took
 * @user: the list, or NULL
 *
 * An account goes with the last list that holds it; by then it holds no
 * timer.
 *
 * Context: Process context.
 */
void htw_user_put(struct htw_user *user)
{
	unsigned int i;

	if (!user)
		return;
	for (i = user->nr; i--;)
		htw_account_put(user->accounts[i]);
	kfree(user);
}
EXPORT_SYMBOL_IF_KUNIT(htw_user_put);

/* Count @nr more for one account, if it stays within @limit. */
static bool htw_account_charge(struct htw_account *account, unsigned long nr,
			       unsigned long limit)
{
	long old = atomic_long_read(&account->bytes);

	do {
		if (nr > limit || old > limit - nr)
			return false;
	} while (!atomic_long_try_cmpxchg(&account->bytes, &old, old + nr));
	return true;
}

/**
 * htw_user_charge() - count @nr more bytes for each person a file charges
 * @user: the persons
 * @nr: bytes to count
 * @limit: the most bytes each account may hold
 *
 * Context: Any context.
 * Return: 0, or -ENOSPC (counting nothing) if any of the accounts would
 * hold more than @limit bytes.
 */
int htw_user_charge(struct htw_user *user, unsigned long nr,
		    unsigned long limit)
{
	unsigned int i;

	for (i = 0; i < user->nr; i++)
		if (!htw_account_charge(user->accounts[i], nr, limit))
			goto undo;
	return 0;
undo:
	while (i--)
		atomic_long_sub(nr, &user->accounts[i]->bytes);
	return -ENOSPC;
}

/**
 * htw_user_uncharge() - count @nr bytes fewer for each person a file charges
 * @user: the persons
 * @nr: bytes released
 *
 * Context: Any context.
 */
void htw_user_uncharge(struct htw_user *user, unsigned long nr)
{
	unsigned int i;

	for (i = 0; i < user->nr; i++)
		atomic_long_sub(nr, &user->accounts[i]->bytes);
}

/**
 * htw_user_bytes() - how much memory the opener's account holds
 * @user: the persons a file charges
 *
 * Context: Any context.
 * Return: bytes, those of the namespaces the opener owns included.
 */
unsigned long htw_user_bytes(struct htw_user *user)
{
	return atomic_long_read(&user->accounts[0]->bytes);
}
EXPORT_SYMBOL_IF_KUNIT(htw_user_bytes);

/**
 * htw_user_init() - make the table of accounts
 *
 * Context: Module init.
 * Return: 0, or -ENOMEM.
 */
int htw_user_init(void)
{
	return rhashtable_init(&htw_accounts, &htw_accounts_params);
}

/**
 * htw_user_exit() - free the table of accounts, empty by then
 *
 * Context: Module exit, after the last file closed.
 */
void htw_user_exit(void)
{
	/* kfree_rcu() of the last accounts must be done with them. */
	rcu_barrier();
	rhashtable_destroy(&htw_accounts);
}
