/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of the htw timing wheel
 *
 * What timer_list's events (include/trace/events/timer.h) say of a timer,
 * for a wheel's timers: armed, cancelled, moved down a level, and the
 * entry and exit of its callback; and, of each expiry run, how many timers
 * it moved, how many callbacks it ran, and whether it left work behind.
 * Timers and wheels are named by their address, hashed as %p prints it.
 * Times are ns on the wheel's clock.
 *
 *   trace-cmd record -e 'htw:*'      perf trace -e 'htw:*'
 *
 * Built as samples/trace_events shows for a module outside the tree: the
 * file that defines CREATE_TRACE_POINTS (htw_core.c) has this directory in
 * its include path (Kbuild), and TRACE_INCLUDE_PATH is ".".
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM htw

#if !defined(_HTW_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _HTW_TRACE_H

#include <linux/tracepoint.h>

/**
 * htw_timer_arm - a timer was armed, or moved by htw_mod()
 * @wheel: its wheel
 * @timer: the timer
 * @expires: its expiry
 * @period: its period, 0 for a one-shot timer
 * @now: the wheel's time the arm used (for an absolute expiry, the coarse
 *	clock's: it is as late as the last timekeeping update)
 * @level: the level it went to, or -1 if it was due at once
 */
TRACE_EVENT(htw_timer_arm,
	    TP_PROTO(const void *wheel, const struct htw_timer *timer,
		     u64 expires, u64 period, u64 now, int level),
	    TP_ARGS(wheel, timer, expires, period, now, level),
	    TP_STRUCT__entry(__field(const void *, wheel)
			     __field(const void *, timer)
			     __field(void *, function)
			     __field(u64, expires)
			     __field(u64, period)
			     __field(u64, now)
			     __field(int, level)),
	    TP_fast_assign(__entry->wheel = wheel;
			   __entry->timer = timer;
			   __entry->function = timer->func;
			   __entry->expires = expires;
			   __entry->period = period;
			   __entry->now = now;
			   __entry->level = level;),
	    TP_printk("wheel=%p timer=%p function=%ps expires=%llu [timeout=%lld] period=%llu level=%d",
		      __entry->wheel, __entry->timer, __entry->function,
		      __entry->expires, (s64)(__entry->expires - __entry->now),
		      __entry->period, __entry->level)
);

/**
 * htw_timer_cancel - an armed timer was disarmed
 * @wheel: its wheel
 * @timer: the timer
 * @expires: the expiry it was armed for
 */
TRACE_EVENT(htw_timer_cancel,
	    TP_PROTO(const void *wheel, const struct htw_timer *timer,
		     u64 expires),
	    TP_ARGS(wheel, timer, expires),
	    TP_STRUCT__entry(__field(const void *, wheel)
			     __field(const void *, timer)
			     __field(u64, expires)),
	    TP_fast_assign(__entry->wheel = wheel;
			   __entry->timer = timer;
			   __entry->expires = expires;),
	    TP_printk("wheel=%p timer=%p expires=%llu",
		      __entry->wheel, __entry->timer, __entry->expires)
);

/**
 * htw_timer_cascade - a timer moved down from the bucket that expired
 * @wheel: its wheel
 * @timer: the timer
 * @expires: its expiry
 * @from: the level it left
 * @to: the level it went to, or -1 if it is due
 */
TRACE_EVENT(htw_timer_cascade,
	    TP_PROTO(const void *wheel, const struct htw_timer *timer,
		     u64 expires, int from, int to),
	    TP_ARGS(wheel, timer, expires, from, to),
	    TP_STRUCT__entry(__field(const void *, wheel)
			     __field(const void *, timer)
			     __field(u64, expires)
			     __field(int, from)
			     __field(int, to)),
	    TP_fast_assign(__entry->wheel = wheel;
			   __entry->timer = timer;
			   __entry->expires = expires;
			   __entry->from = from;
			   __entry->to = to;),
	    TP_printk("wheel=%p timer=%p expires=%llu level %d -> %d",
		      __entry->wheel, __entry->timer, __entry->expires,
		      __entry->from, __entry->to)
);

/**
 * htw_timer_expire_entry - a timer's callback is about to run
 * @wheel: its wheel
 * @timer: the timer
 * @expired: the expiry it reports
 * @count: the expiries it reports
 * @now: the wheel's time, to the tick: now - expired is its lateness
 */
TRACE_EVENT(htw_timer_expire_entry,
	    TP_PROTO(const void *wheel, const struct htw_timer *timer,
		     u64 expired, u64 count, u64 now),
	    TP_ARGS(wheel, timer, expired, count, now),
	    TP_STRUCT__entry(__field(const void *, wheel)
			     __field(const void *, timer)
			     __field(void *, function)
			     __field(u64, expired)
			     __field(u64, count)
			     __field(u64, now)),
	    TP_fast_assign(__entry->wheel = wheel;
			   __entry->timer = timer;
			   __entry->function = timer->func;
			   __entry->expired = expired;
			   __entry->count = count;
			   __entry->now = now;),
	    TP_printk("wheel=%p timer=%p function=%ps expired=%llu count=%llu now=%llu",
		      __entry->wheel, __entry->timer, __entry->function,
		      __entry->expired, __entry->count, __entry->now)
);

/**
 * htw_timer_expire_exit - a timer's callback returned; the timer may be gone
 * @timer: the timer, only as a name
 */
TRACE_EVENT(htw_timer_expire_exit,
	    TP_PROTO(const struct htw_timer *timer),
	    TP_ARGS(timer),
	    TP_STRUCT__entry(__field(const void *, timer)),
	    TP_fast_assign(__entry->timer = timer;),
	    TP_printk("timer=%p", __entry->timer)
);

/**
 * htw_run - an expiry run of a wheel ended
 * @wheel: the wheel
 * @clk: the tick it reached
 * @moved: timers it moved out of expired buckets
 * @ran: callbacks it ran
 * @left: it ended with work left for the next run (its time was spent)
 */
TRACE_EVENT(htw_run,
	    TP_PROTO(const void *wheel, u64 clk, unsigned int moved,
		     unsigned int ran, bool left),
	    TP_ARGS(wheel, clk, moved, ran, left),
	    TP_STRUCT__entry(__field(const void *, wheel)
			     __field(u64, clk)
			     __field(unsigned int, moved)
			     __field(unsigned int, ran)
			     __field(bool, left)),
	    TP_fast_assign(__entry->wheel = wheel;
			   __entry->clk = clk;
			   __entry->moved = moved;
			   __entry->ran = ran;
			   __entry->left = left;),
	    TP_printk("wheel=%p clk=%llu moved=%u ran=%u%s",
		      __entry->wheel, __entry->clk, __entry->moved, __entry->ran,
		      __entry->left ? " work left" : "")
);

#endif /* _HTW_TRACE_H */

#undef TRACE_INCLUDE_PATH
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_PATH .
#define TRACE_INCLUDE_FILE htw_trace
#include <trace/define_trace.h>
