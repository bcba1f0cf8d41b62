// SPDX-License-Identifier: GPL-2.0
/*
 * htw_kbench - the wheel against the kernel's own timers, in the kernel
 *
 * Loading the module runs the benchmark and prints one line a measure to
 * the kernel log, for rig/bench.py:
 *
 *   htw_kbench: bench kernel <measure> <htw> <anchor> <unit>
 *
 * Each measure runs in rounds, htw and its anchor (timer_list, hrtimer, or
 * htw itself in another arrangement) one after the other in every round;
 * the median of the rounds is printed.  With rounds=1 and scale=0, the
 * default, every measure runs once on a thousand timers: the smoke run that
 * "make check" loads, so that the benchmark cannot rot.
 */

#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/timer.h>
#include <linux/vmalloc.h>

#include "../htw_compat.h"
#include "../htw_core.h"

static unsigned int rounds = 1;
module_param(rounds, uint, 0444);
MODULE_PARM_DESC(rounds, "Rounds of each measure (default 1)");

static unsigned int scale;
module_param(scale, uint, 0444);
MODULE_PARM_DESC(scale, "0: a smoke run on 1,000 timers; 1: up to 1,000,000");

#define MAX_ROUNDS	32

/*
 * A measure that could not run, or an htw callback before its expiry: the
 * load fails, so that make check's smoke run sees it.
 */
static bool kb_failed;
#define OPS		100000	/* add+del pairs timed per round */

struct kb_timers {
	struct htw_timer *htw;
	struct timer_list *tl;
	struct hrtimer *hr;
	unsigned int n;
};

static void kb_htw_fn(struct htw_timer *t, u64 expired, u64 count)
{
}

static void kb_tl_fn(struct timer_list *t)
{
}

static enum hrtimer_restart kb_hr_fn(struct hrtimer *t)
{
	return HRTIMER_NORESTART;
}

static int kb_cmp(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static u64 kb_median(u64 *v, unsigned int n)
{
	sort(v, n, sizeof(*v), kb_cmp, NULL);
	return v[n / 2];
}

static void kb_report(const char *measure, u64 htw, u64 anchor,
		      const char *unit)
{
	pr_info("htw_kbench: bench kernel %s %llu %llu %s\n", measure, htw,
		anchor, unit);
}

static struct htw_wheel *kb_wheel(void)
{
	struct htw_wheel_params p = {
		.tick_ns = NSEC_PER_MSEC,
		.wheel_size = HTW_WHEEL_SIZE_MAX,
		.clockid = CLOCK_MONOTONIC,
	};

	return htw_wheel_create(&p);
}

/* A far expiry, spread over an hour, for timer @i. */
static u64 kb_far(unsigned int i)
{
	return NSEC_PER_SEC + (u64)(i % 3600000) * NSEC_PER_MSEC;
}

static void kb_free(struct kb_timers *k)
{
	unsigned int i;

	for (i = 0; i < k->n; i++) {
		htw_del_sync(&k->htw[i]);
		timer_delete_sync(&k->tl[i]);
		hrtimer_cancel(&k->hr[i]);
		if (!(i % 4096))
			cond_resched();
	}
	vfree(k->htw);
	vfree(k->tl);
	vfree(k->hr);
}

/* @n pending timers of each kind, and one spare of each at index n. */
static int kb_arm(struct kb_timers *k, struct htw_wheel *w, unsigned int n)
{
	u64 now = ktime_get_ns();
	unsigned int i;

	k->htw = vzalloc(array_size(n + 1, sizeof(*k->htw)));
	k->tl = vzalloc(array_size(n + 1, sizeof(*k->tl)));
	k->hr = vzalloc(array_size(n + 1, sizeof(*k->hr)));
	if (!k->htw || !k->tl || !k->hr)
		return -ENOMEM;
	k->n = n + 1;
	for (i = 0; i < k->n; i++) {
		htw_timer_init(&k->htw[i], w, kb_htw_fn);
		timer_setup(&k->tl[i], kb_tl_fn, 0);
		hrtimer_setup(&k->hr[i], kb_hr_fn, CLOCK_MONOTONIC,
			      HRTIMER_MODE_ABS);
		if (i == n)
			break;
		htw_add(&k->htw[i], now + kb_far(i), 0, HTW_MODE_ABS);
		mod_timer(&k->tl[i], jiffies + nsecs_to_jiffies(kb_far(i)));
		hrtimer_start(&k->hr[i], ns_to_ktime(now + kb_far(i)),
			      HRTIMER_MODE_ABS);
		if (!(i % 4096))
			cond_resched();
	}
	return 0;
}

/* ns per add+del of the spare timer, with k->n - 1 others pending. */
static u64 kb_add_del_htw(struct kb_timers *k, unsigned int ops)
{
	struct htw_timer *t = &k->htw[k->n - 1];
	u64 t0 = ktime_get_ns(), now = t0;
	unsigned int i;

	for (i = 0; i < ops; i++) {
		htw_add(t, now + kb_far(i), 0, HTW_MODE_ABS);
		htw_del(t);
	}
	return (ktime_get_ns() - t0) / ops;
}

/*
 * The same, in groups of KB_GROUP add+del under one hold of the wheel
 * (htw_wheel_lock()), as a caller with many operations makes them.
 */
#define KB_GROUP	32

static u64 kb_add_del_htw_grouped(struct kb_timers *k, unsigned int ops)
{
	struct htw_timer *t = &k->htw[k->n - 1];
	u64 t0 = ktime_get_ns(), now = t0;
	unsigned long flags;
	unsigned int i = 0, end;

	while (i < ops) {
		end = min(ops, i + KB_GROUP);
		htw_wheel_lock(t->wheel, &flags);
		for (; i < end; i++) {
			htw_mod_locked(t, now + kb_far(i), 0, HTW_MODE_ABS);
			htw_del_locked(t);
		}
		htw_wheel_unlock(t->wheel, flags);
	}
	return (ktime_get_ns() - t0) / ops;
}

static u64 kb_add_del_tl(struct kb_timers *k, unsigned int ops)
{
	struct timer_list *t = &k->tl[k->n - 1];
	u64 t0 = ktime_get_ns();
	unsigned int i;

	for (i = 0; i < ops; i++) {
		mod_timer(t, jiffies + nsecs_to_jiffies(kb_far(i)));
		timer_delete(t);
	}
	return (ktime_get_ns() - t0) / ops;
}

static u64 kb_add_del_hr(struct kb_timers *k, unsigned int ops)
{
	struct hrtimer *t = &k->hr[k->n - 1];
	u64 t0 = ktime_get_ns(), now = t0;
	unsigned int i;

	for (i = 0; i < ops; i++) {
		hrtimer_start(t, ns_to_ktime(now + kb_far(i)), HRTIMER_MODE_ABS);
		hrtimer_try_to_cancel(t);
	}
	return (ktime_get_ns() - t0) / ops;
}

/* ns per move of a random pending timer to a new random expiry. */
static u64 kb_mod_htw(struct kb_timers *k, unsigned int ops)
{
	u64 t0 = ktime_get_ns(), now = t0;
	unsigned int i, j;

	for (i = 0; i < ops; i++) {
		j = get_random_u32() % (k->n - 1);
		htw_mod(&k->htw[j], now + kb_far(get_random_u32()), 0,
			HTW_MODE_ABS);
	}
	return (ktime_get_ns() - t0) / ops;
}

static u64 kb_mod_tl(struct kb_timers *k, unsigned int ops)
{
	u64 t0 = ktime_get_ns();
	unsigned int i, j;

	for (i = 0; i < ops; i++) {
		j = get_random_u32() % (k->n - 1);
		mod_timer(&k->tl[j],
			  jiffies + nsecs_to_jiffies(kb_far(get_random_u32())));
	}
	return (ktime_get_ns() - t0) / ops;
}

static void kb_pending(unsigned int n)
{
	/* The rounds' figures: too many for the stack of a KASAN kernel. */
	static u64 hd[MAX_ROUNDS], td[MAX_ROUNDS], rd[MAX_ROUNDS], gd[MAX_ROUNDS];
	static u64 hm[MAX_ROUNDS], tm[MAX_ROUNDS];
	unsigned int ops = scale ? OPS : 1000, r;
	struct kb_timers k = {};
	struct htw_wheel *w;
	char name[48];

	w = kb_wheel();
	if (IS_ERR(w))
		return;
	if (kb_arm(&k, w, n))
		goto out_free;
	for (r = 0; r < rounds; r++) {
		hd[r] = kb_add_del_htw(&k, ops);
		gd[r] = kb_add_del_htw_grouped(&k, ops);
		td[r] = kb_add_del_tl(&k, ops);
		rd[r] = kb_add_del_hr(&k, ops);
		hm[r] = kb_mod_htw(&k, ops);
		tm[r] = kb_mod_tl(&k, ops);
		cond_resched();
	}
	snprintf(name, sizeof(name), "add_del_%u_pending_vs_timer_list", n);
	kb_report(name, kb_median(hd, rounds), kb_median(td, rounds), "ns/op");
	snprintf(name, sizeof(name), "add_del_grouped_%u_pending_vs_timer_list", n);
	kb_report(name, kb_median(gd, rounds), kb_median(td, rounds), "ns/op");
	snprintf(name, sizeof(name), "add_del_%u_pending_vs_hrtimer", n);
	kb_report(name, kb_median(hd, rounds), kb_median(rd, rounds), "ns/op");
	snprintf(name, sizeof(name), "mod_random_%u_pending_vs_timer_list", n);
	kb_report(name, kb_median(hm, rounds), kb_median(tm, rounds), "ns/op");
out_free:
	kb_free(&k);
	htw_wheel_destroy(w);
}

struct kb_spinner {
	struct htw_wheel *wheel;
	struct htw_timer timer;
	struct completion done;
	u64 until;
	u64 ops;
};

static int kb_spin(void *arg)
{
	struct kb_spinner *s = arg;
	u64 now;

	do {
		now = ktime_get_ns();
		htw_add(&s->timer, now + NSEC_PER_SEC, 0, HTW_MODE_ABS);
		htw_del(&s->timer);
		if (!(++s->ops % 1024))
			cond_resched();
	} while (now < s->until);
	/* Not "complete(); return": the module may be gone by the return. */
	kthread_complete_and_exit(&s->done, 0);
}

/*
 * add+del pairs per second by two kthreads on two CPUs: each on a wheel of
 * its own, and both on one shared wheel.
 */
static u64 kb_two_threads(bool shared, unsigned int ms)
{
	struct kb_spinner s[2] = {};
	struct task_struct *t;
	unsigned int cpu[2];
	u64 total = 0;
	int i;

	/* Two CPUs if there are two: the first and the last online. */
	cpu[0] = cpumask_first(cpu_online_mask);
	cpu[1] = cpumask_last(cpu_online_mask);

	for (i = 0; i < 2; i++) {
		s[i].wheel = i && shared ? s[0].wheel : kb_wheel();
		if (IS_ERR(s[i].wheel)) {
			if (i)
				htw_wheel_destroy(s[0].wheel);
			return 0;
		}
		htw_timer_init(&s[i].timer, s[i].wheel, kb_htw_fn);
		init_completion(&s[i].done);
		s[i].until = ktime_get_ns() + ms * NSEC_PER_MSEC;
	}
	for (i = 0; i < 2; i++) {
		t = kthread_create(kb_spin, &s[i], "htw_kbench/%d", i);
		if (IS_ERR(t)) {
			s[i].ops = 0;
			complete(&s[i].done);
			continue;
		}
		kthread_bind(t, cpu[i]);
		wake_up_process(t);
	}
	for (i = 0; i < 2; i++) {
		wait_for_completion(&s[i].done);
		total += s[i].ops;
	}
	htw_wheel_destroy(s[0].wheel);
	if (!shared)
		htw_wheel_destroy(s[1].wheel);
	return total * MSEC_PER_SEC / ms;
}

/*
 * Expiry: @n timers of one kind, due over @spread ns (0: all at one
 * instant) from a start far enough ahead that all are armed by then.  Each
 * callback notes its lateness, in the order the callbacks run.
 */
enum kb_kind { KB_HTW, KB_TL, KB_HR, KB_KINDS };

struct kb_etimer {
	union {
		struct htw_timer htw;
		struct timer_list tl;
		struct hrtimer hr;
	};
	u64 due;		/* ns on CLOCK_MONOTONIC */
};

static struct {
	u64 *late;		/* of each callback, in the order they ran */
	atomic_t fired;
	atomic_t early;		/* callbacks before their due time */
	unsigned int n;
	u64 first, last;	/* when the first and the last callback ran */
	struct completion done;
} kb_exp;

static void kb_expired(struct kb_etimer *e)
{
	u64 now = ktime_get_ns();
	unsigned int i = atomic_inc_return(&kb_exp.fired) - 1;

	if (i >= kb_exp.n)
		return;
	/* An early callback (none should be) counts as on time. */
	kb_exp.late[i] = now > e->due ? now - e->due : 0;
	if (now < e->due)
		atomic_inc(&kb_exp.early);
	if (!i)
		kb_exp.first = now;
	if (i + 1 == kb_exp.n) {
		kb_exp.last = now;
		complete(&kb_exp.done);
	}
}

static void kb_exp_htw_fn(struct htw_timer *t, u64 expired, u64 count)
{
	kb_expired(container_of(t, struct kb_etimer, htw));
}

static void kb_exp_tl_fn(struct timer_list *t)
{
	kb_expired(container_of(t, struct kb_etimer, tl));
}

static enum hrtimer_restart kb_exp_hr_fn(struct hrtimer *t)
{
	kb_expired(container_of(t, struct kb_etimer, hr));
	return HRTIMER_NORESTART;
}

struct kb_exp_result {
	u64 rate;		/* callbacks/s, from the first expiry to the last callback */
	u64 first_us;		/* from the first expiry to the first callback */
	u64 p50_us, p99_us, max_us;	/* lateness */
	u64 early;		/* callbacks before their due time */
};

/*
 * Jiffy @j0 began at or before @t0 ns, up to a tick before: a timer_list
 * timer due at @due is armed a jiffy later than the ticks from @t0 say, so
 * that it is never early.
 */
static int kb_arm_one(enum kb_kind kind, struct kb_etimer *e,
		      struct htw_wheel *w, unsigned long j0, u64 t0)
{
	switch (kind) {
	case KB_HTW:
		htw_timer_init(&e->htw, w, kb_exp_htw_fn);
		return htw_add(&e->htw, e->due, 0, HTW_MODE_ABS);
	case KB_TL:
		timer_setup(&e->tl, kb_exp_tl_fn, 0);
		mod_timer(&e->tl, j0 + 1 + DIV_ROUND_UP_ULL(e->due - t0, TICK_NSEC));
		return 0;
	case KB_HR:
		hrtimer_setup(&e->hr, kb_exp_hr_fn, CLOCK_MONOTONIC,
			      HRTIMER_MODE_ABS_SOFT);
		hrtimer_start(&e->hr, ns_to_ktime(e->due), HRTIMER_MODE_ABS_SOFT);
		return 0;
	default:
		return -EINVAL;
	}
}

static void kb_cancel_one(enum kb_kind kind, struct kb_etimer *e)
{
	if (kind == KB_HTW)
		htw_del_sync(&e->htw);
	else if (kind == KB_TL)
		timer_delete_sync(&e->tl);
	else
		hrtimer_cancel(&e->hr);
}

static int kb_expiry(enum kb_kind kind, struct kb_etimer *e, unsigned int n,
		     u64 spread, struct kb_exp_result *res)
{
	struct htw_wheel *w = NULL;
	unsigned long j0;
	u64 t0, start;
	unsigned int i;
	int ret = 0;

	if (kind == KB_HTW) {
		w = kb_wheel();
		if (IS_ERR(w))
			return PTR_ERR(w);
	}
	atomic_set(&kb_exp.fired, 0);
	atomic_set(&kb_exp.early, 0);
	kb_exp.n = n;
	reinit_completion(&kb_exp.done);
	/* Ahead by what arming takes, at 2 us a timer (under emulation). */
	j0 = jiffies;
	t0 = ktime_get_ns();
	start = t0 + 200 * NSEC_PER_MSEC + 2ULL * NSEC_PER_USEC * n;
	for (i = 0; i < n && !ret; i++) {
		e[i].due = start + div_u64((u64)i * spread, n);
		ret = kb_arm_one(kind, &e[i], w, j0, t0);
		if (!(i % 4096))
			cond_resched();
	}
	/* Those armed, on an error. */
	n = i;
	if (!ret && !wait_for_completion_timeout(&kb_exp.done, 60 * HZ))
		ret = -ETIMEDOUT;
	for (i = 0; i < n; i++) {
		kb_cancel_one(kind, &e[i]);
		if (!(i % 4096))
			cond_resched();
	}
	if (w)
		htw_wheel_destroy(w);
	if (ret)
		return ret;
	res->rate = div64_u64((u64)n * NSEC_PER_SEC,
			      max(kb_exp.last - start, 1ULL));
	res->first_us = kb_exp.first > start ?
			(kb_exp.first - start) / NSEC_PER_USEC : 0;
	res->early = atomic_read(&kb_exp.early);
	sort(kb_exp.late, n, sizeof(*kb_exp.late), kb_cmp, NULL);
	res->p50_us = kb_exp.late[n / 2] / NSEC_PER_USEC;
	res->p99_us = kb_exp.late[div_u64((u64)n * 99, 100)] / NSEC_PER_USEC;
	res->max_us = kb_exp.late[n - 1] / NSEC_PER_USEC;
	return 0;
}

/*
 * Each kind in turn in every round; the median of each figure over the
 * rounds.  @what names the measure.
 */
static void kb_expiries(const char *what, unsigned int n, u64 spread)
{
	static const char * const anchors[KB_KINDS] = {
		[KB_TL] = "timer_list", [KB_HR] = "hrtimer",
	};
	static u64 fig[6][KB_KINDS][MAX_ROUNDS];
	struct kb_exp_result res;
	struct kb_etimer *e;
	unsigned int r, k, f;
	char name[64];
	int ret;

	e = vzalloc(array_size(n, sizeof(*e)));
	kb_exp.late = vmalloc(array_size(n, sizeof(*kb_exp.late)));
	init_completion(&kb_exp.done);
	if (!e || !kb_exp.late)
		goto out;
	for (r = 0; r < rounds; r++) {
		for (k = 0; k < KB_KINDS; k++) {
			ret = kb_expiry(k, e, n, spread, &res);
			if (ret) {
				pr_warn("htw_kbench: %s of %s failed: %d\n",
					what, k ? anchors[k] : "htw", ret);
				kb_failed = true;
				goto out;
			}
			fig[0][k][r] = res.rate;
			fig[1][k][r] = res.first_us;
			fig[2][k][r] = res.p50_us;
			fig[3][k][r] = res.p99_us;
			fig[4][k][r] = res.max_us;
			fig[5][k][r] = res.early;
			if (k == KB_HTW && res.early) {
				pr_warn("htw_kbench: %s: %llu htw callbacks early\n",
					what, res.early);
				kb_failed = true;
			}
		}
	}
	for (k = KB_TL; k < KB_KINDS; k++) {
		static const char * const figs[6] = {
			"callbacks_per_s", "first_callback_late",
			"late_p50", "late_p99", "late_max", "early_callbacks",
		};
		static const char * const units[6] = {
			"callbacks/s", "us", "us", "us", "us", "callbacks",
		};

		for (f = 0; f < 6; f++) {
			/* A burst's rate is its last callback's lateness. */
			if (!spread && f == 0)
				continue;
			snprintf(name, sizeof(name), "%s_%s_vs_%s", what, figs[f],
				 anchors[k]);
			kb_report(name, kb_median(fig[f][KB_HTW], rounds),
				  kb_median(fig[f][k], rounds), units[f]);
		}
	}
out:
	vfree(kb_exp.late);
	kb_exp.late = NULL;
	vfree(e);
}

/* Expiry runs of a wheel whose one timer is an hour away, over @ms. */
static u64 kb_idle_runs(unsigned int ms)
{
	struct htw_wheel_stats st;
	struct htw_timer t;
	struct htw_wheel *w = kb_wheel();

	if (IS_ERR(w))
		return 0;
	htw_timer_init(&t, w, kb_htw_fn);
	htw_add(&t, 3600 * NSEC_PER_SEC, 0, HTW_MODE_REL);
	msleep(ms);
	htw_wheel_get_stats(w, &st);
	htw_del_sync(&t);
	htw_wheel_destroy(w);
	return st.runs;
}

static int __init htw_kbench_init(void)
{
	u64 sep[MAX_ROUNDS], shr[MAX_ROUNDS];
	unsigned int ms = scale ? 1000 : 20, r;

	if (!rounds || rounds > MAX_ROUNDS)
		return -EINVAL;

	kb_pending(1000);
	if (scale) {
		kb_pending(100000);
		kb_pending(1000000);
	}
	for (r = 0; r < rounds; r++) {
		sep[r] = kb_two_threads(false, ms);
		shr[r] = kb_two_threads(true, ms);
	}
	kb_report("two_kthreads_own_wheels_vs_shared", kb_median(sep, rounds),
		  kb_median(shr, rounds), "pairs/s");
	kb_report("idle_wheel_runs_per_s", kb_idle_runs(ms) * MSEC_PER_SEC / ms,
		  0, "runs/s");
	kb_expiries(scale ? "expiry_1000000_over_1s" : "expiry_1000_over_100ms",
		    scale ? 1000000 : 1000,
		    scale ? NSEC_PER_SEC : 100 * NSEC_PER_MSEC);
	kb_expiries(scale ? "burst_100000_at_once" : "burst_1000_at_once",
		    scale ? 100000 : 1000, 0);
	return kb_failed ? -EIO : 0;
}
module_init(htw_kbench_init);

static void __exit htw_kbench_exit(void)
{
}
module_exit(htw_kbench_exit);

MODULE_DESCRIPTION("Benchmark of the htw wheel against timer_list and hrtimer");
MODULE_LICENSE("GPL");
