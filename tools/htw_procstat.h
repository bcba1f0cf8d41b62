/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPU time by kind, all CPUs together, from the "cpu" line of /proc/stat:
 * what htw_bench and the user-space tests weigh softirq time with.  libc
 * only, so that tools/ and tests/user/ can both include it; the tests name
 * it by its path from theirs, as the rig puts neither directory on the
 * include path.
 */
#ifndef _HTW_PROCSTAT_H
#define _HTW_PROCSTAT_H

#include <stdio.h>

/* The fields of the line, in clock ticks, in their order (proc(5)). */
enum htw_cpu_time {
	HTW_CPU_USER,
	HTW_CPU_NICE,
	HTW_CPU_SYSTEM,
	HTW_CPU_IDLE,
	HTW_CPU_IOWAIT,
	HTW_CPU_IRQ,
	HTW_CPU_SOFTIRQ,
	HTW_CPU_STEAL,
	HTW_CPU_TIMES,
};

/*
 * Read the line's first HTW_CPU_TIMES fields into @t.  Return how many
 * were read, from the first on, as fscanf() counts them, or -1 if
 * /proc/stat cannot be opened: each caller decides how many it needs.
 */
static inline int htw_cpu_times(unsigned long long t[HTW_CPU_TIMES])
{
	FILE *f = fopen("/proc/stat", "re");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &t[0],
		   &t[1], &t[2], &t[3], &t[4], &t[5], &t[6], &t[7]);
	fclose(f);
	return n;
}

#endif /* _HTW_PROCSTAT_H */
