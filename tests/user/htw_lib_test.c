// SPDX-License-Identifier: GPL-2.0
/*
 * libhtw: each call does what its manual page says, returns what the device
 * returned (as -errno), and the README's example builds and runs.
 */
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define FAR	(1000 * NSEC_PER_SEC)

FIXTURE(lib) {
	int fd;
};

FIXTURE_SETUP(lib)
{
	self->fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(lib)
{
	close(self->fd);
}

TEST(open_takes_only_nonblock_and_cloexec)
{
	struct htw_event ev;
	int fd;

	EXPECT_EQ(-EINVAL, htw_open(O_APPEND));
	EXPECT_EQ(-EINVAL, htw_open(O_RDONLY | O_TRUNC));
	EXPECT_EQ(-EINVAL, htw_open(O_CREAT));

	fd = htw_open(0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(O_RDWR, fcntl(fd, F_GETFL) & (O_ACCMODE | O_NONBLOCK));
	EXPECT_EQ(0, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);

	fd = htw_open(O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(O_RDWR | O_NONBLOCK,
		  fcntl(fd, F_GETFL) & (O_ACCMODE | O_NONBLOCK));
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(-EAGAIN, htw_read_events(fd, &ev, 1));
	close(fd);
}

TEST_F(lib, get_info_reports_the_device)
{
	struct htw_info info;

	memset(&info, 0xff, sizeof(info));
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(HTW_ABI_VERSION, info.version);
	EXPECT_EQ(sizeof(struct htw_event), info.event_size);
	EXPECT_EQ(HTW_BATCH_MAX, info.batch_max);
	EXPECT_EQ(0, info.nr_timers);
	EXPECT_EQ(-EBADF, htw_get_info(-1, &info));
	EXPECT_EQ(-EFAULT, htw_get_info(self->fd, NULL));
}

TEST_F(lib, arm_modify_cancel_return_the_devices_errors)
{
	struct htw_timer_spec spec = { .expires = FAR, .user_data = 7 };
	struct htw_info info;
	__u32 id;

	ASSERT_EQ(0, htw_arm(self->fd, &spec));
	id = spec.id;
	EXPECT_NE(0, id);
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(1, info.nr_timers);

	spec.expires = 2 * FAR;
	spec.period = NSEC_PER_SEC;
	EXPECT_EQ(0, htw_modify(self->fd, &spec));
	EXPECT_EQ(id, spec.id);

	spec.flags = HTW_TIMER_BOOTTIME | HTW_TIMER_REALTIME;
	EXPECT_EQ(-EINVAL, htw_modify(self->fd, &spec));
	EXPECT_EQ(-EINVAL, htw_arm(self->fd, &spec));
	spec.flags = 0;
	spec.period = 1;
	EXPECT_EQ(-EINVAL, htw_arm(self->fd, &spec));

	EXPECT_EQ(0, htw_cancel(self->fd, id));
	EXPECT_EQ(-ENOENT, htw_cancel(self->fd, id));
	spec.id = id;
	spec.period = 0;
	EXPECT_EQ(-ENOENT, htw_modify(self->fd, &spec));
	EXPECT_EQ(-EFAULT, htw_arm(self->fd, NULL));
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(0, info.nr_timers);
}

/* Wait until @fd has @n events queued; 0, or -ETIMEDOUT. */
static int wait_queued(int fd, __u32 n)
{
	__u64 end = htw_now(CLOCK_MONOTONIC) + HTW_WAIT_MS * NSEC_PER_MSEC;
	struct htw_info info;

	while (!htw_get_info(fd, &info) && info.nr_queued < n) {
		if (htw_now(CLOCK_MONOTONIC) > end)
			return -ETIMEDOUT;
		usleep(1000);
	}
	return 0;
}

TEST_F(lib, read_events_returns_whole_events)
{
	struct htw_timer_spec spec = { .expires = 1 };
	struct htw_event ev[4], *one;
	__u64 t0 = htw_clock_now(0);
	int i;

	for (i = 0; i < 3; i++) {
		spec.user_data = i;
		ASSERT_EQ(0, htw_arm(self->fd, &spec));
	}
	ASSERT_EQ(0, wait_queued(self->fd, 3));
	EXPECT_EQ(-EINVAL, htw_read_events(self->fd, ev, 0));
	ASSERT_EQ(1, htw_read_events(self->fd, ev, 1));
	EXPECT_EQ(0, ev[0].user_data);
	EXPECT_EQ(HTW_EVENT_LAST, ev[0].flags);
	EXPECT_LE(t0, ev[0].expires);
	ASSERT_EQ(2, htw_read_events(self->fd, ev, 4));
	EXPECT_EQ(1, ev[0].user_data);
	EXPECT_EQ(2, ev[1].user_data);
	EXPECT_EQ(-EBADF, htw_read_events(-1, ev, 1));
	/*
	 * A count too large for one read's return value is clamped (on the
	 * heap, low in the address space, the whole range is user memory).
	 */
	one = malloc(sizeof(*one));
	ASSERT_NE(NULL, one);
	spec.user_data = 3;
	ASSERT_EQ(0, htw_arm(self->fd, &spec));
	ASSERT_EQ(1, htw_read_events(self->fd, one, UINT_MAX));
	EXPECT_EQ(3, one->user_data);
	free(one);
}

TEST(clock_now_reads_the_clock_of_the_flags)
{
	static const struct { __u32 flags; clockid_t clock; } clocks[] = {
		{ 0, CLOCK_MONOTONIC },
		{ HTW_TIMER_ABSTIME, CLOCK_MONOTONIC },
		{ HTW_TIMER_BOOTTIME, CLOCK_BOOTTIME },
		{ HTW_TIMER_REALTIME | HTW_TIMER_ABSTIME, CLOCK_REALTIME },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(clocks); i++) {
		__u64 before = htw_now(clocks[i].clock);
		__u64 now = htw_clock_now(clocks[i].flags);
		__u64 after = htw_now(clocks[i].clock);

		EXPECT_LE(before, now);
		EXPECT_LE(now, after);
	}
}

TEST(oplist_init_refuses_empty_and_huge_lists)
{
	struct htw_oplist list;

	EXPECT_EQ(-EINVAL, htw_oplist_init(&list, 0));
	EXPECT_EQ(NULL, list.ops);
	EXPECT_EQ(-EINVAL, htw_oplist_init(&list, (unsigned int)INT_MAX + 1));
	ASSERT_EQ(0, htw_oplist_init(&list, 2));
	EXPECT_EQ(2, list.size);
	EXPECT_EQ(0, list.nr);
	htw_oplist_free(&list);
	EXPECT_EQ(NULL, list.ops);
	/* Freeing twice is harmless: the list was cleared. */
	htw_oplist_free(&list);
}

TEST_F(lib, oplist_queues_until_full_and_submits_once)
{
	struct htw_timer_spec spec = { .expires = FAR };
	struct htw_info info;
	struct htw_oplist list;
	struct htw_op *op;
	unsigned int i;

	ASSERT_EQ(0, htw_oplist_init(&list, 4));
	for (i = 0; i < 4; i++) {
		spec.user_data = i;
		op = htw_oplist_arm(&list, &spec);
		ASSERT_NE(NULL, op);
		EXPECT_EQ(HTW_OP_ARM, op->op);
		EXPECT_EQ(-EINPROGRESS, op->result);
	}
	EXPECT_EQ(NULL, htw_oplist_arm(&list, &spec));
	EXPECT_EQ(NULL, htw_oplist_cancel(&list, 1));
	EXPECT_EQ(4, list.nr);

	ASSERT_EQ(4, htw_oplist_submit(self->fd, &list));
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(0, list.ops[i].result);
		EXPECT_NE(0, list.ops[i].spec.id);
		EXPECT_EQ(i, list.ops[i].spec.user_data);
	}
	/* Nothing new: nothing runs again. */
	EXPECT_EQ(0, htw_oplist_submit(self->fd, &list));
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(4, info.nr_timers);

	/* Modify one, cancel two, and one that is not there. */
	spec = list.ops[0].spec;
	spec.expires = 2 * FAR;
	i = list.ops[2].spec.id;
	op = &list.ops[3];
	htw_oplist_reset(&list);
	EXPECT_EQ(0, list.nr);
	ASSERT_NE(NULL, htw_oplist_modify(&list, &spec));
	ASSERT_NE(NULL, htw_oplist_cancel(&list, i));
	ASSERT_NE(NULL, htw_oplist_cancel(&list, i));
	ASSERT_NE(NULL, htw_oplist_cancel(&list, op->spec.id));
	EXPECT_EQ(HTW_OP_CANCEL, list.ops[1].op);
	EXPECT_EQ(i, list.ops[1].spec.id);
	EXPECT_EQ(0, list.ops[1].spec.expires);
	ASSERT_EQ(4, htw_oplist_submit(self->fd, &list));
	EXPECT_EQ(0, list.ops[0].result);
	EXPECT_EQ(0, list.ops[1].result);
	EXPECT_EQ(-ENOENT, list.ops[2].result);
	EXPECT_EQ(0, list.ops[3].result);
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(2, info.nr_timers);

	/* Nothing queued: no call is made, so none fails. */
	EXPECT_EQ(0, htw_oplist_submit(-1, &list));
	htw_oplist_free(&list);
}

TEST_F(lib, oplist_submit_reports_the_first_batchs_error)
{
	struct htw_oplist list;

	ASSERT_EQ(0, htw_oplist_init(&list, 1));
	ASSERT_NE(NULL, htw_oplist_cancel(&list, 1));
	EXPECT_EQ(-EBADF, htw_oplist_submit(-1, &list));
	EXPECT_EQ(0, list.submitted);
	EXPECT_EQ(-EINPROGRESS, list.ops[0].result);
	EXPECT_EQ(1, htw_oplist_submit(self->fd, &list));
	EXPECT_EQ(-ENOENT, list.ops[0].result);
	htw_oplist_free(&list);
}

/* More than one batch holds: the list is split, and every op runs. */
TEST_F(lib, oplist_submit_splits_at_batch_max)
{
	unsigned int n = HTW_BATCH_MAX + 3, i, bad = 0;
	struct htw_oplist list;

	ASSERT_EQ(0, htw_oplist_init(&list, n));
	for (i = 0; i < n; i++)
		ASSERT_NE(NULL, htw_oplist_cancel(&list, i + 1));
	ASSERT_EQ((int)n, htw_oplist_submit(self->fd, &list));
	EXPECT_EQ(n, list.submitted);
	for (i = 0; i < n; i++)
		bad += list.ops[i].result != -ENOENT;
	EXPECT_EQ(0, bad);
	htw_oplist_free(&list);
}

/*
 * A batch that stops at a fault leaves the rest queued; the next submit
 * runs them, and nothing runs twice.
 */
TEST_F(lib, oplist_submit_resumes_where_a_batch_stopped)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned int per_page = page / sizeof(struct htw_op), i;
	struct htw_timer_spec spec = { .expires = FAR };
	struct htw_oplist list = {};
	struct htw_info info;
	char *mem, *saved;

	mem = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	/* The list's array, its op per_page straddling the two pages. */
	list.ops = (struct htw_op *)mem;
	list.size = per_page + 2;
	for (i = 0; i < list.size; i++)
		ASSERT_NE(NULL, htw_oplist_arm(&list, &spec));
	/*
	 * Unmapped, not PROT_NONE: UML's kernel reads a present PROT_NONE
	 * page without a fault.  The page's ops are put back after.
	 */
	saved = malloc(page);
	ASSERT_NE(NULL, saved);
	memcpy(saved, mem + page, page);
	ASSERT_EQ(0, munmap(mem + page, page));
	ASSERT_EQ((int)per_page, htw_oplist_submit(self->fd, &list));
	EXPECT_EQ(per_page, list.submitted);
	ASSERT_EQ(mem + page, mmap(mem + page, page, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				   -1, 0));
	memcpy(mem + page, saved, page);
	free(saved);
	EXPECT_EQ(2, htw_oplist_submit(self->fd, &list));
	EXPECT_EQ(list.size, list.submitted);
	for (i = 0; i < list.size; i++)
		EXPECT_EQ(0, list.ops[i].result);
	ASSERT_EQ(0, htw_get_info(self->fd, &info));
	EXPECT_EQ(list.size, info.nr_timers);
	munmap(mem, 2 * page);
}

/* The README's example, built from the README's own text. */
TEST_F(lib, ring_map_maps_once_and_reports_the_sizes)
{
	struct htw_ring r, again;
	int fd = htw_open(O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, htw_ring_map(self->fd, 10, 5, &r));
	EXPECT_EQ(self->fd, r.fd);
	EXPECT_EQ(10, r.nr_slots);
	EXPECT_EQ(8, r.sq_entries);
	EXPECT_EQ(16, r.cq_entries);
	EXPECT_EQ(0, r.sq_tail);
	EXPECT_EQ(-EBUSY, htw_ring_map(self->fd, 10, 5, &again));
	htw_ring_unmap(&r);
	EXPECT_EQ(NULL, r.rw);
	EXPECT_EQ(-EINVAL, htw_ring_map(fd, 0, 5, &again));
	close(fd);
}

TEST_F(lib, ring_arm_and_cancel_queue_until_full)
{
	struct htw_cqe cqe;
	struct htw_ring r;
	unsigned int i;

	ASSERT_EQ(0, htw_ring_map(self->fd, 4, 2, &r));
	EXPECT_EQ(-EINVAL, htw_ring_arm(&r, 4, 1, FAR));
	EXPECT_EQ(-EINVAL, htw_ring_cancel(&r, 4, 1));
	EXPECT_EQ(0, htw_ring_arm(&r, 0, 1, htw_clock_now(0) + FAR));
	EXPECT_EQ(0, htw_ring_cancel(&r, 0, 1));
	EXPECT_EQ(-EAGAIN, htw_ring_arm(&r, 1, 1, FAR));
	EXPECT_EQ(-EAGAIN, htw_ring_cancel(&r, 1, 1));
	/* The arm stored its deadline in the slot. */
	EXPECT_LT(FAR, r.slots[0]);
	EXPECT_EQ(2, htw_ring_submit(&r, 0));
	EXPECT_EQ(0, htw_ring_submit(&r, 0));
	for (i = 0; i < 2; i++)
		EXPECT_EQ(0, htw_ring_arm(&r, i, 2, htw_clock_now(0)));
	/* Both come; the wait ends with them. */
	EXPECT_EQ(2, htw_ring_submit(&r, 2));
	EXPECT_EQ(1, htw_ring_reap(&r, &cqe, 1));
	EXPECT_EQ(2, cqe.gen);
	EXPECT_EQ(1, htw_ring_reap(&r, &cqe, 1));
	EXPECT_EQ(0, htw_ring_reap(&r, &cqe, 1));
	htw_ring_unmap(&r);
}

TEST_F(lib, ring_extend_stores_the_deadline_in_range_only)
{
	struct htw_ring r;

	ASSERT_EQ(0, htw_ring_map(self->fd, 4, 2, &r));
	htw_ring_extend(&r, 3, 12345);
	EXPECT_EQ(12345, r.slots[3]);
	/* A slot beyond the last is no store at all. */
	htw_ring_extend(&r, 4, 1);
	EXPECT_EQ(12345, r.slots[3]);
	htw_ring_unmap(&r);
}

TEST(readme_example_runs)
{
	unsigned int timeouts = 0, heartbeats = 0;
	char line[256];
	FILE *p;

	p = htw_tool_open("htw_readme_example");
	if (!p)
		SKIP(return, "htw_readme_example is not on $PATH");
	while (fgets(line, sizeof(line), p)) {
		TH_LOG("%s", line);
		timeouts += !strncmp(line, "timeout ", 8);
		heartbeats += !!strstr(line, " heartbeats");
	}
	ASSERT_EQ(0, pclose(p));
	EXPECT_EQ(3, timeouts);
	EXPECT_EQ(1, heartbeats);
}

/*
 * The README's libevent server: every connection closed once, idle, and
 * the one request not answered timed out, once.
 */
TEST(readme_libevent_server_runs)
{
	unsigned int closed = 0, twice = 0, requests = 0, n;
	unsigned char seen[100] = { 0 };
	long long request = -1;
	char line[256];
	FILE *p;

	p = htw_tool_open("htw_readme_libevent");
	if (!p)
		SKIP(return, "htw_readme_libevent is not on $PATH");
	while (fgets(line, sizeof(line), p)) {
		TH_LOG("%s", line);
		if (sscanf(line, "connection %u idle: closed", &n) == 1 &&
		    n < 100) {
			closed++;
			twice += seen[n]++ > 0;
		} else if (sscanf(line, "request %lld timed out", &request) == 1) {
			requests++;
		}
	}
	ASSERT_EQ(0, pclose(p));
	EXPECT_EQ(100, closed);
	EXPECT_EQ(0, twice);
	EXPECT_EQ(1, requests);
	EXPECT_EQ(0, request);
}

/*
 * The README's io_uring server: every connection closed once, those whose
 * deadline a store pushed to twice the timeout no earlier than that.
 */
TEST(readme_io_uring_server_runs)
{
	unsigned int closed = 0, early = 0, twice = 0, conn;
	unsigned char seen[64] = { 0 };
	unsigned long long ms;
	char line[256];
	FILE *p;

	p = htw_tool_open("htw_readme_uring");
	if (!p)
		SKIP(return, "htw_readme_uring is not on $PATH");
	while (fgets(line, sizeof(line), p)) {
		TH_LOG("%s", line);
		if (sscanf(line, "connection %u idle for %llu ms", &conn,
			   &ms) != 2)
			continue;
		closed++;
		early += ms < ((conn & 1) ? 100 : 50);
		twice += conn >= 64 || seen[conn & 63]++ > 0;
	}
	ASSERT_EQ(0, pclose(p));
	EXPECT_EQ(64, closed);
	EXPECT_EQ(0, twice);
	EXPECT_EQ(0, early);
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
