// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite that holds htw(4) to what the code charges
 *
 * The man page states, for x86_64, what a file's wheel and a node of its
 * ids count against max_user_bytes, and what a timer costs its memory
 * cgroup.  Those numbers follow from the sizes of structures, some of them
 * the kernel's, and change when a structure does.  Kbuild takes them out of
 * man/htw.4 into htw_doc_numbers.h (the sed expressions of htw-doc-sed);
 * each case measures its number on this build and fails if the man page
 * says another, or no longer says one in the words Kbuild looks for.
 *
 * The numbers are x86_64's, and the wheel's those of the one version of
 * Linux the man page names, since a wheel embeds the kernel's struct
 * hrtimer (7.2's is 16 bytes larger than 6.12's): elsewhere a case skips,
 * as it does in a tree without the man page.  The rule the man page gives
 * for a wheel, its footprint, is checked everywhere.
 */

#include <kunit/resource.h>
#include <kunit/test.h>
#include <linux/list.h>
#include <linux/sizes.h>
#include <linux/string.h>
#include <linux/time64.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>
#include <linux/utsname.h>
#include <linux/xarray.h>

#include "../htw_core.h"
#include "../htw_ctx.h"
#include "../htw_user.h"

#include "htw_doc_numbers.h"

/* What Kbuild did not find is 0, which htw_doc_require() fails. */
#ifndef HTW_DOC_NO_MAN_PAGE
#define HTW_DOC_NO_MAN_PAGE		0
#endif
#ifndef HTW_DOC_WHEEL_BYTES
#define HTW_DOC_WHEEL_BYTES		0
#define HTW_DOC_WHEEL_LINUX_MAJOR	0
#define HTW_DOC_WHEEL_LINUX_MINOR	0
#endif
#ifndef HTW_DOC_NODE_BYTES
#define HTW_DOC_NODE_BYTES		0
#endif
#ifndef HTW_DOC_TIMER_BYTES
#define HTW_DOC_TIMER_BYTES		0
#define HTW_DOC_TIMER_CHARGED		0
#endif
#ifndef HTW_DOC_LEVEL_KIB
#define HTW_DOC_LEVEL_KIB		0
#endif

/* A user no other suite charges. */
#define HTW_DOC_UID	60010

static const unsigned long htw_doc_no_limit = ULONG_MAX;

KUNIT_DEFINE_ACTION_WRAPPER(htw_doc_user_put, htw_user_put, struct htw_user *);
KUNIT_DEFINE_ACTION_WRAPPER(htw_doc_ctx_destroy, htw_ctx_destroy,
			    struct htw_ctx *);

/*
 * Skip without the man page (a tree of the sources alone) or off x86_64;
 * fail if the man page no longer states @stated in @words.
 */
static void htw_doc_require(struct kunit *test, unsigned long stated,
			    const char *words)
{
	if (HTW_DOC_NO_MAN_PAGE)
		kunit_skip(test, "man/htw.4 is not in the module's source tree");
	KUNIT_ASSERT_NE_MSG(test, stated, 0,
			    "man/htw.4 no longer says \"%s\" (Kbuild's htw-doc-sed)",
			    words);
	if (!IS_ENABLED(CONFIG_X86_64))
		kunit_skip(test, "man/htw.4 states x86_64's numbers");
}

/* What a file charges its user beside its timers, as the user sees it. */
struct htw_doc_charges {
	unsigned long wheel;
	unsigned long node;
	unsigned long footprint;
};

/*
 * A file's first timer brings a wheel and a node of ids; a timer on
 * another clock brings a wheel alone.  The wheels are the man page's: 64
 * buckets of 1 ms ticks.
 */
static void htw_doc_measure(struct kunit *test, struct htw_doc_charges *c)
{
	struct htw_ctx_params p = {
		.wheel = {
			.tick_ns	= NSEC_PER_MSEC,
			.wheel_size	= 64,
			.flags		= HTW_WHEEL_MANUAL,
		},
		.min_period_ns		= NSEC_PER_MSEC,
		.max_timers		= 4,
		.max_user_bytes		= &htw_doc_no_limit,
	};
	struct htw_timer_spec spec = { .expires = NSEC_PER_MSEC };
	unsigned long before, first, second;
	struct htw_wheel *wheel;
	struct htw_ctx *ctx;
	int ret;

	p.user = htw_user_get(&init_user_ns, KUIDT_INIT(HTW_DOC_UID));
	KUNIT_ASSERT_NOT_NULL(test, p.user);
	ret = kunit_add_action_or_reset(test, htw_doc_user_put, p.user);
	KUNIT_ASSERT_EQ(test, 0, ret);
	ctx = htw_ctx_create(&p);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ctx);
	ret = kunit_add_action_or_reset(test, htw_doc_ctx_destroy, ctx);
	KUNIT_ASSERT_EQ(test, 0, ret);

	before = htw_user_bytes(p.user);
	KUNIT_ASSERT_EQ(test, 0, htw_ctx_arm(ctx, &spec, NULL));
	first = htw_user_bytes(p.user) - before;
	spec.flags = HTW_TIMER_BOOTTIME;
	KUNIT_ASSERT_EQ(test, 0, htw_ctx_arm(ctx, &spec, NULL));
	second = htw_user_bytes(p.user) - before - first;

	c->wheel = second - htw_ctx_timer_cost();
	c->node = first - second;
	wheel = htw_ctx_wheel(ctx, HTW_CTX_MONOTONIC);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, wheel);
	c->footprint = htw_wheel_footprint(wheel);
}

/*
 * A wheel counts the most memory it can take; one of 64 buckets of 1 ms
 * ticks as many bytes as htw(4) says.
 */
static void htw_doc_wheel_charge_is_stated(struct kunit *test)
{
	const unsigned long stated = HTW_DOC_WHEEL_BYTES;
	struct htw_doc_charges c;
	char release[16];

	htw_doc_require(test, stated,
			"(N bytes for a wheel of 64 buckets of 1 ms ticks on x86_64 with Linux A.B);");
	htw_doc_measure(test, &c);
	/* The rule holds everywhere; an assertion, which no skip hides. */
	KUNIT_ASSERT_EQ(test, c.wheel, c.footprint);

	snprintf(release, sizeof(release), "%d.%d.", HTW_DOC_WHEEL_LINUX_MAJOR,
		 HTW_DOC_WHEEL_LINUX_MINOR);
	if (strncmp(init_utsname()->release, release, strlen(release)))
		kunit_skip(test, "man/htw.4 states the wheel of Linux %s", release);
	if (IS_ENABLED(CONFIG_DEBUG_SPINLOCK) || IS_ENABLED(CONFIG_LOCKDEP) ||
	    IS_ENABLED(CONFIG_PREEMPT_RT))
		kunit_skip(test, "the wheel's locks are not x86_64's 4 bytes here");

	/*
	 * A uniprocessor kernel's spinlock_t is empty (UML's, where KUnit
	 * runs), x86_64's 4 bytes: each of the wheel's two, its own and its
	 * wait queue's, makes its SMP footprint up to 8 bytes larger with
	 * alignment.  The man page states x86_64's wheel.
	 */
	if (!IS_ENABLED(CONFIG_SMP))
		c.wheel += 2 * sizeof(u64);
	KUNIT_EXPECT_EQ_MSG(test, c.wheel, stated,
			    "man/htw.4 says a wheel counts %lu bytes; it counts %lu",
			    stated, c.wheel);
}

/* A node of ids counts its size, as htw(4) says. */
static void htw_doc_node_charge_is_stated(struct kunit *test)
{
	const unsigned long stated = HTW_DOC_NODE_BYTES;
	struct htw_doc_charges c;

	htw_doc_require(test, stated, "(a node of N bytes on x86_64).");
	if (XA_CHUNK_SIZE != 64)
		kunit_skip(test, "man/htw.4 states nodes of 64 slots");
	htw_doc_measure(test, &c);
	KUNIT_EXPECT_EQ(test, c.node, sizeof(struct xa_node));
	KUNIT_EXPECT_EQ_MSG(test, c.node, stated,
			    "man/htw.4 says a node counts %lu bytes; it counts %lu",
			    stated, c.node);
}

/*
 * The memory cgroup is charged a timer's record, with the slab's pointer to
 * the cgroup (obj_full_size() in mm/memcontrol.c), and a wheel's levels,
 * each wheel_size list heads (htw_buckets_alloc()), as htw(4) says.
 */
static void htw_doc_timer_memory_is_stated(struct kunit *test)
{
	unsigned long cost = htw_ctx_timer_cost();

	htw_doc_require(test, HTW_DOC_TIMER_BYTES,
			"(N bytes a timer on x86_64, which the slab charges as M,");
	htw_doc_require(test, HTW_DOC_LEVEL_KIB,
			"plus the wheels' levels, N KiB each for 64-bucket levels).");

	KUNIT_EXPECT_EQ_MSG(test, cost, (unsigned long)HTW_DOC_TIMER_BYTES,
			    "man/htw.4 says a timer is %d bytes",
			    HTW_DOC_TIMER_BYTES);
	KUNIT_EXPECT_EQ_MSG(test, cost + sizeof(void *),
			    (unsigned long)HTW_DOC_TIMER_CHARGED,
			    "man/htw.4 says the slab charges %d bytes a timer",
			    HTW_DOC_TIMER_CHARGED);
	KUNIT_EXPECT_EQ_MSG(test, 64 * sizeof(struct list_head),
			    (size_t)HTW_DOC_LEVEL_KIB * SZ_1K,
			    "man/htw.4 says a level of 64 buckets is %d KiB",
			    HTW_DOC_LEVEL_KIB);
}

static struct kunit_case htw_doc_test_cases[] = {
	KUNIT_CASE(htw_doc_wheel_charge_is_stated),
	KUNIT_CASE(htw_doc_node_charge_is_stated),
	KUNIT_CASE(htw_doc_timer_memory_is_stated),
	{}
};

static struct kunit_suite htw_doc_test_suite = {
	.name = "htw_doc",
	.test_cases = htw_doc_test_cases,
};

kunit_test_suite(htw_doc_test_suite);
