/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Times moved from one clock to another, held within [0, HTW_TIME_MAX]:
 * what the context and the ring timers share of time
 */
#ifndef _HTW_TIME_H
#define _HTW_TIME_H

#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/types.h>

#include <uapi/linux/htw.h>

/*
 * @t minus @offset, held within [0, %HTW_TIME_MAX]: a time moved from one
 * clock to another that is @offset ahead of it (a time namespace's, or the
 * wall clock's).  Saturating for every @t and @offset, so that no caller's
 * bad time can wrap into a time that is due, or never due.
 */
static inline u64 htw_time_minus(u64 t, s64 offset)
{
	u64 sum;

	if (offset >= 0)
		return min_t(u64, t - min_t(u64, t, offset), HTW_TIME_MAX);
	/* -(u64)offset is |offset|, S64_MIN included. */
	if (check_add_overflow(t, -(u64)offset, &sum))
		return HTW_TIME_MAX;
	return min_t(u64, sum, HTW_TIME_MAX);
}

/*
 * @t plus @offset, held within [0, %HTW_TIME_MAX]: the way back of
 * htw_time_minus(), without negating an @offset that may be S64_MIN.
 */
static inline u64 htw_time_plus(u64 t, s64 offset)
{
	u64 sum;

	if (offset < 0)
		return min_t(u64, t - min_t(u64, t, -(u64)offset), HTW_TIME_MAX);
	if (check_add_overflow(t, (u64)offset, &sum))
		return HTW_TIME_MAX;
	return min_t(u64, sum, HTW_TIME_MAX);
}

#endif /* _HTW_TIME_H */
