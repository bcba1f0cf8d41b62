/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel APIs htw uses that changed between the kernels it supports
 * (6.1 to 7.2).  Each shim gives the newer API to the kernels that lack
 * it, and names the release that changed it.  Kbuild finds out which
 * kernel has what from its headers (HTW_HAVE_*), not from its version
 * number, so that a distribution kernel with the change backported gets the
 * new API too.  Nothing else in htw depends on the kernel's version.
 */
#ifndef _HTW_COMPAT_H
#define _HTW_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/module.h>

/* 6.13 added hrtimer_setup(), which sets the callback; 6.15 removed hrtimer_init(). */
#ifndef HTW_HAVE_HRTIMER_SETUP
static inline void hrtimer_setup(struct hrtimer *timer,
				 enum hrtimer_restart (*function)(struct hrtimer *),
				 clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#endif

/* 6.13 made symbol namespaces string literals. */
#ifdef HTW_HAVE_NS_STRINGS
#define HTW_IMPORT_KUNIT_NS()	MODULE_IMPORT_NS("EXPORTED_FOR_KUNIT_TESTING")
#else
#define HTW_IMPORT_KUNIT_NS()	MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING)
#endif

/* 6.3 made a vma's flags change through vm_flags_set() and vm_flags_clear(). */
#ifndef HTW_HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/*
 * 6.9 said which machines' data caches alias, cpu_dcache_is_aliasing().
 * Before, nothing says it for every machine (SHMLBA does not: parisc
 * aliases with SHMLBA at the page size, and many MIPS do not alias with a
 * larger one), so only the machines known not to alias are let through.
 */
#ifndef HTW_HAVE_DCACHE_ALIASING
#define cpu_dcache_is_aliasing()	\
	(!IS_ENABLED(CONFIG_X86) && !IS_ENABLED(CONFIG_ARM64))
#endif

#endif /* _HTW_COMPAT_H */
