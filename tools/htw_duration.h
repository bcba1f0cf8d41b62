/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A duration on a tool's command line: a number and its unit ("1.5ms",
 * "200us", "2s"), for htwctl and htw_idle.
 */
#ifndef _HTW_DURATION_H
#define _HTW_DURATION_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

/*
 * Parse @s into *@ns; return 0, or -1 for a malformed duration, a negative
 * one, or one of 2^63 ns or more.
 */
static inline int htw_parse_duration(const char *s, __u64 *ns)
{
	static const struct { const char *unit; __u64 mult; } units[] = {
		{ "ns", 1 }, { "us", 1000ULL }, { "ms", 1000000ULL },
		{ "s", 1000000000ULL },
	};
	char *end;
	double v;
	size_t i;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		/* 2^63: no __u64 is ever made of a double out of range. */
		if (v * units[i].mult >= 9223372036854775808.0)
			return -1;
		*ns = (__u64)(v * units[i].mult + 0.5);
		return 0;
	}
	return -1;
}

#endif /* _HTW_DURATION_H */
