// SPDX-License-Identifier: GPL-2.0
/*
 * Ring timers: setup and mapping and their errors, the slot protocol (a
 * store extends, the cancel value cancels, nothing fires early or twice),
 * the rings' entries and errors, a full completion ring that loses nothing,
 * a program that scribbles over its shared memory, and the lifetimes of
 * the memory across munmap(), close() and fork().
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "htw_user.h"

#define MS		NSEC_PER_MSEC
#define FAR		(3600 * NSEC_PER_SEC)
#define PAGE		4096

static __u64 now(void)
{
	return htw_now(CLOCK_MONOTONIC);
}

static int setup_ring(int fd, __u32 slots, __u32 sq, struct htw_ring_setup *s)
{
	*s = (struct htw_ring_setup) { .nr_slots = slots, .sq_entries = sq };
	return ioctl(fd, HTW_IOC_RING_SETUP, s) ? -errno : 0;
}

static int enter_ring(int fd, __u32 to_submit, __u32 min, __u32 flags)
{
	struct htw_ring_enter e = {
		.to_submit = to_submit, .min_complete = min, .flags = flags,
	};
	int ret = ioctl(fd, HTW_IOC_RING_ENTER, &e);

	return ret < 0 ? -errno : ret;
}

/*
 * Reap into @cqes until @n completions are in, waiting for them; return
 * how many came (fewer only after HTW_WAIT_MS).
 */
static unsigned int reap_n(struct htw_ring *r, struct htw_cqe *cqes,
			   unsigned int n)
{
	__u64 end = now() + HTW_WAIT_MS * MS;
	unsigned int got = 0;
	struct pollfd pfd = { .fd = r->fd, .events = POLLIN };

	while (got < n && now() < end) {
		got += htw_ring_reap(r, cqes + got, n - got);
		if (got < n) {
			poll(&pfd, 1, 100);
			htw_ring_submit(r, 0);
		}
	}
	return got;
}

/* Reap what comes within @ms: how many. */
static unsigned int reap_for(struct htw_ring *r, struct htw_cqe *cqes,
			     unsigned int max, unsigned int ms)
{
	__u64 end = now() + ms * MS;
	unsigned int got = 0;

	while (now() < end) {
		htw_ring_submit(r, 0);
		got += htw_ring_reap(r, cqes + got, max - got);
		usleep(1000);
	}
	return got;
}

FIXTURE(ring) {
	int fd;
	struct htw_ring r;
	__u64 base;
};

FIXTURE_SETUP(ring)
{
	self->base = htw_user_bytes();
	self->fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, htw_ring_map(self->fd, 64, 16, &self->r));
}

FIXTURE_TEARDOWN(ring)
{
	htw_ring_unmap(&self->r);
	close(self->fd);
	/* Everything the ring held went back with the file. */
	EXPECT_EQ(self->base, htw_user_bytes());
}

TEST(setup_reports_sizes_and_offsets)
{
	struct htw_ring_setup s;
	int fd = htw_open(O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setup_ring(fd, 100, 100, &s));
	EXPECT_EQ(100, s.nr_slots);
	EXPECT_EQ(128, s.sq_entries);
	EXPECT_EQ(128, s.cq_entries);
	EXPECT_EQ(0, s.rw_size % PAGE);
	EXPECT_EQ(0, s.ro_size % PAGE);
	EXPECT_LE(s.off.sqes + 128 * sizeof(struct htw_sqe), s.off.slots);
	EXPECT_LE(s.off.slots + 100 * sizeof(__u64), s.rw_size);
	EXPECT_LE(s.off.cqes + 128 * sizeof(struct htw_cqe), s.ro_size);
	EXPECT_NE(s.off.sq_tail, s.off.cq_head);
	EXPECT_NE(s.off.sq_head, s.off.cq_tail);
	EXPECT_EQ(100, htw_fdinfo_value(fd, "ring_slots"));
	close(fd);
}

TEST(setup_twice_is_ebusy)
{
	struct htw_ring_setup s;
	int fd = htw_open(O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setup_ring(fd, 8, 8, &s));
	EXPECT_EQ(-EBUSY, setup_ring(fd, 8, 8, &s));
	close(fd);
}

/* What racing setups share: the file, the start, the account's peak. */
struct setup_race {
	int fd;
	int go[2];		/* a pipe: a byte each, once all are ready */
	int sampler;		/* a file of the same user, to read its account */
	int done;
	__u64 peak;
	int ret;
};

/* Wait for the start, then set the file up; its result into @r->ret. */
static void *setup_racer(void *arg)
{
	struct setup_race *r = arg;
	struct htw_ring_setup s;
	char c;

	if (read(r->go[0], &c, 1) != 1)
		r->ret = -EIO;
	else
		r->ret = setup_ring(r->fd, 65536, 64, &s);
	return NULL;
}

/* The account's highest value until @r->done. */
static void *account_sampler(void *arg)
{
	struct setup_race *r = arg;
	struct htw_info info;

	while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
		if (!htw_get_info(r->sampler, &info) && info.user_bytes > r->peak)
			r->peak = info.user_bytes;
		sched_yield();
	}
	return NULL;
}

/*
 * Setups of one file made at once, by two threads and a forked child,
 * build one ring between them: one succeeds, the others get -EBUSY, and
 * the account, sampled all along by a thread of its own, never holds more
 * than one ring's charge.  (Each setup charges the account before it
 * builds: setups that overlapped would show in the peak.  Where the
 * setups truly run at once, on the two CPUs of the QEMU tiers, the peak
 * tells the serialised setups from ones that each build; on one CPU
 * (UML) they overlap only where a setup gives the CPU up, which its
 * page allocations do now and then.)
 */
TEST(racing_setups_of_a_file_build_one_ring)
{
	struct setup_race r = { 0 }, racer[2];
	struct htw_ring_setup s;
	struct htw_info info;
	__u64 base, one_ring;
	pthread_t th[2], sampler;
	int i, status, wins = 0, busy = 0;
	pid_t pid;

	/* One ring's charge, alone. */
	r.sampler = htw_open(O_CLOEXEC);
	ASSERT_LE(0, r.sampler);
	ASSERT_EQ(0, htw_get_info(r.sampler, &info));
	base = info.user_bytes;
	r.fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, r.fd);
	ASSERT_EQ(0, setup_ring(r.fd, 65536, 64, &s));
	ASSERT_EQ(0, htw_get_info(r.sampler, &info));
	one_ring = info.user_bytes - base;
	close(r.fd);
	ASSERT_EQ(0, htw_get_info(r.sampler, &info));
	ASSERT_EQ(base, info.user_bytes);

	r.fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, r.fd);
	ASSERT_EQ(0, pipe(r.go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* A parent that dies before the start ends the child's wait. */
		close(r.go[1]);
		setup_racer(&r);
		_exit(r.ret == 0 ? 0 : r.ret == -EBUSY ? 1 : 2);
	}
	for (i = 0; i < 2; i++) {
		racer[i] = r;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, setup_racer,
					    &racer[i]));
	}
	ASSERT_EQ(0, pthread_create(&sampler, NULL, account_sampler, &r));
	/* Off they go, all three at once. */
	ASSERT_EQ(3, write(r.go[1], "xyz", 3));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
		wins += !racer[i].ret;
		busy += racer[i].ret == -EBUSY;
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	wins += WEXITSTATUS(status) == 0;
	busy += WEXITSTATUS(status) == 1;
	__atomic_store_n(&r.done, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, pthread_join(sampler, NULL));
	EXPECT_EQ(1, wins);
	EXPECT_EQ(2, busy);
	TH_LOG("one ring %llu bytes; peak %llu over %llu",
	       (unsigned long long)one_ring, (unsigned long long)r.peak,
	       (unsigned long long)base);
	EXPECT_LE(r.peak, base + one_ring);
	close(r.fd);
	close(r.go[0]);
	close(r.go[1]);
	ASSERT_EQ(0, htw_get_info(r.sampler, &info));
	EXPECT_EQ(base, info.user_bytes);
	close(r.sampler);
}

/*
 * fdinfo counts the ring timers' wakes: their wheel's hrtimer finding
 * them due, and the file's pollers woken for them.
 */
TEST_F(ring, fdinfo_counts_the_ring_timers_wakes)
{
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	long long wakes = htw_fdinfo_value(self->fd, "wakes");
	long long wakeups = htw_fdinfo_value(self->fd, "wakeups");
	struct htw_cqe cqe;

	ASSERT_LE(0, wakes);
	ASSERT_LE(0, wakeups);
	ASSERT_EQ(0, htw_ring_arm(&self->r, 0, 1, now() + 20 * MS));
	ASSERT_EQ(1, htw_ring_submit(&self->r, 0));
	/* The hrtimer's mark wakes the poll: only a wake ends it early. */
	ASSERT_EQ(1, poll(&pfd, 1, HTW_WAIT_MS));
	ASSERT_EQ(1, reap_n(&self->r, &cqe, 1));
	EXPECT_LT(wakes, htw_fdinfo_value(self->fd, "wakes"));
	EXPECT_LT(wakeups, htw_fdinfo_value(self->fd, "wakeups"));
}

TEST(setup_out_of_range_is_einval)
{
	struct htw_info info = { 0 };
	struct htw_ring_setup s;
	int fd = htw_open(O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, htw_get_info(fd, &info));
	EXPECT_EQ(-EINVAL, setup_ring(fd, 0, 8, &s));
	EXPECT_EQ(-EINVAL, setup_ring(fd, info.max_timers + 1, 8, &s));
	EXPECT_EQ(-EINVAL, setup_ring(fd, 8, 0, &s));
	EXPECT_EQ(-EINVAL, setup_ring(fd, 8, HTW_RING_SQ_MAX + 1, &s));
	s = (struct htw_ring_setup) { .nr_slots = 8, .sq_entries = 8,
				      .flags = 1 };
	EXPECT_EQ(-1, ioctl(fd, HTW_IOC_RING_SETUP, &s));
	EXPECT_EQ(EINVAL, errno);
	/* What is only written back must be zero: it may be read one day. */
	s = (struct htw_ring_setup) { .nr_slots = 8, .sq_entries = 8,
				      .off.flags = 1 };
	EXPECT_EQ(-1, ioctl(fd, HTW_IOC_RING_SETUP, &s));
	EXPECT_EQ(EINVAL, errno);
	s = (struct htw_ring_setup) { .nr_slots = 8, .sq_entries = 8,
				      .rw_size = 4096 };
	EXPECT_EQ(-1, ioctl(fd, HTW_IOC_RING_SETUP, &s));
	EXPECT_EQ(EINVAL, errno);
	/* None of those made the file's ring timers. */
	EXPECT_EQ(0, setup_ring(fd, 8, HTW_RING_SQ_MAX, &s));
	close(fd);
}

TEST(enter_and_mmap_before_setup_are_enxio)
{
	int fd = htw_open(O_CLOEXEC);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENXIO, enter_ring(fd, 0, 0, 0));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd,
				   HTW_RING_OFF_RW));
	EXPECT_EQ(ENXIO, errno);
	close(fd);
}

TEST(enter_with_bad_fields_is_einval)
{
	struct htw_ring_setup s;
	struct htw_ring_enter e = { 0 };
	int fd = htw_open(O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setup_ring(fd, 8, 8, &s));
	EXPECT_EQ(-EINVAL, enter_ring(fd, 0, 0, 2));
	EXPECT_EQ(-EINVAL, enter_ring(fd, 0, s.cq_entries + 1,
				      HTW_ENTER_GETEVENTS));
	e.reserved = 1;
	EXPECT_EQ(-1, ioctl(fd, HTW_IOC_RING_ENTER, &e));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, enter_ring(fd, 0, 0, 0));
	close(fd);
}

TEST(mappings_are_shared_within_their_part_and_the_kernels_read_only)
{
	struct htw_ring_setup s;
	int fd = htw_open(O_CLOEXEC);
	void *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setup_ring(fd, 8, 8, &s));
	/* Not shared, not one of the two offsets, longer than its part. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, s.rw_size, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE, fd, HTW_RING_OFF_RW));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd,
				   PAGE));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, s.rw_size + PAGE, PROT_READ,
				   MAP_SHARED, fd, HTW_RING_OFF_RW));
	EXPECT_EQ(EINVAL, errno);
	/* Data, never code. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, s.rw_size, PROT_READ | PROT_EXEC,
				   MAP_SHARED, fd, HTW_RING_OFF_RW));
	EXPECT_EQ(EPERM, errno);
	/* The kernel's part is read-only, and stays so. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, s.ro_size, PROT_READ | PROT_WRITE,
				   MAP_SHARED, fd, HTW_RING_OFF_RO));
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, s.ro_size, PROT_READ, MAP_SHARED, fd, HTW_RING_OFF_RO);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, mprotect(p, s.ro_size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(0, munmap(p, s.ro_size));
	/* No mremap() grows a part past its pages. */
	p = mmap(NULL, s.rw_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 HTW_RING_OFF_RW);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(MAP_FAILED, mremap(p, s.rw_size, s.rw_size + PAGE, 0));
	/* Nor makes mprotect() either part code. */
	EXPECT_EQ(-1, mprotect(p, s.rw_size, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(0, munmap(p, s.rw_size));
	close(fd);
}

/*
 * A mapping split by munmap() keeps each page in its place: the piece left
 * starts past the part's first page, and still maps the part's own pages.
 */
TEST(a_split_mapping_keeps_each_page_in_its_place)
{
	struct htw_ring_setup s;
	int fd = htw_open(O_CLOEXEC);
	char *full, *split;
	unsigned int i, pages;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setup_ring(fd, 2048, 8, &s));
	pages = s.rw_size / PAGE;
	ASSERT_LE(3, pages);
	full = mmap(NULL, s.rw_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    HTW_RING_OFF_RW);
	ASSERT_NE(MAP_FAILED, full);
	split = mmap(NULL, s.rw_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		     HTW_RING_OFF_RW);
	ASSERT_NE(MAP_FAILED, split);
	/* Slots' words from the second page on: mark each page. */
	for (i = 1; i < pages; i++)
		*(__u64 *)(full + i * PAGE) = i;
	ASSERT_EQ(0, munmap(split, PAGE));
	for (i = 1; i < pages; i++)
		EXPECT_EQ(i, *(__u64 *)(split + i * PAGE)) TH_LOG("page %u", i);
	/* And the other way: written through the piece, read in full. */
	*(__u64 *)(split + PAGE) = 42;
	EXPECT_EQ(42, *(__u64 *)(full + PAGE));
	EXPECT_EQ(0, munmap(split + PAGE, s.rw_size - PAGE));
	EXPECT_EQ(0, munmap(full, s.rw_size));
	close(fd);
}

/*
 * A file open for writing only makes its ring timers, and can map neither
 * part, as no file not open for reading is mapped.
 */
TEST(a_write_only_file_sets_up_but_maps_neither_part)
{
	struct htw_ring_setup s;
	int fd = open(HTW_DEV, O_WRONLY | O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, setup_ring(fd, 8, 8, &s));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, s.rw_size, PROT_WRITE, MAP_SHARED, fd,
				   HTW_RING_OFF_RW));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, s.ro_size, PROT_READ, MAP_SHARED, fd,
				   HTW_RING_OFF_RO));
	EXPECT_EQ(EACCES, errno);
	close(fd);
}

/* Arm each of @n slots as generation 1, @first + i * @step ns from now. */
static __u64 arm_slots(struct htw_ring *r, unsigned int n, __u64 first,
		       __u64 step)
{
	__u64 t = now();
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (htw_ring_arm(r, i, 1, t + first + i * step) == -EAGAIN) {
			htw_ring_submit(r, 0);
			i--;
		}
	}
	htw_ring_submit(r, 0);
	return t;
}

TEST_F(ring, every_armed_slot_fires_once_never_early)
{
	struct htw_cqe cqes[128];
	unsigned int seen[64] = { 0 }, i;
	__u64 t0 = arm_slots(&self->r, 64, 20 * MS, MS);

	ASSERT_EQ(64, reap_n(&self->r, cqes, 64));
	for (i = 0; i < 64; i++) {
		ASSERT_LT(cqes[i].slot, 64);
		EXPECT_EQ(0, cqes[i].res);
		EXPECT_EQ(1, cqes[i].gen);
		EXPECT_EQ(0, cqes[i].flags);
		EXPECT_EQ(t0 + 20 * MS + cqes[i].slot * MS, cqes[i].deadline);
		seen[cqes[i].slot]++;
	}
	/* Reaped after each deadline: none came early. */
	EXPECT_LE(t0 + 83 * MS, now());
	for (i = 0; i < 64; i++)
		EXPECT_EQ(1, seen[i]) TH_LOG("slot %u", i);
	EXPECT_EQ(0, reap_for(&self->r, cqes, 128, 50));
	EXPECT_EQ(0, htw_fdinfo_value(self->fd, "ring_armed"));
}

TEST_F(ring, a_store_pushes_the_deadline_later)
{
	__u64 lead, t0, last = 0;
	struct htw_cqe cqe;
	unsigned int i;

	/*
	 * The kernel reads the word only in the program's own calls, after
	 * the deadline: once the arm's call is over before it, the stores
	 * all come first.  A slower call is tried again with a longer lead.
	 */
	for (lead = 20 * MS; lead < 60 * NSEC_PER_SEC; lead *= 4) {
		t0 = now();
		ASSERT_EQ(0, htw_ring_arm(&self->r, 3, 7, t0 + lead));
		ASSERT_EQ(1, htw_ring_submit(&self->r, 0));
		if (now() < t0 + lead)
			break;
		ASSERT_EQ(1, reap_n(&self->r, &cqe, 1));
		TH_LOG("the arm took longer than %llu ns; again",
		       (unsigned long long)lead);
	}
	/* Thousands of pushes, each a plain store. */
	for (i = 0; i < 5000; i++) {
		last = t0 + 2 * lead + i * 10000;
		htw_ring_extend(&self->r, 3, last);
	}
	ASSERT_EQ(1, reap_n(&self->r, &cqe, 1));
	EXPECT_LE(last, now());
	EXPECT_EQ(3, cqe.slot);
	EXPECT_EQ(7, cqe.gen);
	EXPECT_EQ(0, cqe.res);
	/* The kernel acted on the last store: the last one made. */
	EXPECT_EQ(last, cqe.deadline);
	EXPECT_EQ(0, htw_fdinfo_value(self->fd, "ring_armed"));
}

/* The words are stored before the arm's call: the kernel reads them last. */
TEST_F(ring, a_store_earlier_or_out_of_range_changes_nothing)
{
	struct htw_cqe cqes[2];
	__u64 t0 = now();
	unsigned int i;

	ASSERT_EQ(0, htw_ring_arm(&self->r, 0, 1, t0 + 50 * MS));
	ASSERT_EQ(0, htw_ring_arm(&self->r, 1, 1, t0 + 50 * MS));
	htw_ring_extend(&self->r, 0, t0 + 10 * MS);
	htw_ring_extend(&self->r, 1, HTW_TIME_MAX + 1);
	ASSERT_EQ(2, htw_ring_submit(&self->r, 0));
	ASSERT_EQ(2, reap_n(&self->r, cqes, 2));
	EXPECT_LE(t0 + 50 * MS, now());
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, cqes[i].res);
		EXPECT_EQ(t0 + 50 * MS, cqes[i].deadline);
	}
	EXPECT_NE(cqes[0].slot, cqes[1].slot);
}

TEST_F(ring, the_cancel_value_cancels_with_no_completion)
{
	struct htw_cqe cqes[4];

	__u64 t0 = now();

	ASSERT_EQ(0, htw_ring_arm(&self->r, 5, 1, t0 + 20 * MS));
	htw_ring_extend(&self->r, 5, HTW_SLOT_CANCEL);
	ASSERT_EQ(1, htw_ring_submit(&self->r, 0));
	/* Its deadline comes, and it is gone: no completion, then or later. */
	while (htw_fdinfo_value(self->fd, "ring_armed")) {
		ASSERT_GT(t0 + HTW_WAIT_MS * MS, now());
		usleep(1000);
		ASSERT_EQ(0, htw_ring_submit(&self->r, 0));
	}
	EXPECT_EQ(0, reap_for(&self->r, cqes, 4, 50));
}

TEST_F(ring, an_arm_moves_an_armed_slot_and_replaces_its_generation)
{
	struct htw_cqe cqes[4];
	__u64 t0 = now();
	unsigned int i;

	for (i = 9; i < 12; i++)
		ASSERT_EQ(0, htw_ring_arm(&self->r, i, 1, t0 + FAR));
	ASSERT_EQ(3, htw_ring_submit(&self->r, 0));
	/* Earlier, twice, and later: each takes its new generation. */
	ASSERT_EQ(0, htw_ring_arm(&self->r, 9, 2, t0 + 20 * MS));
	ASSERT_EQ(0, htw_ring_arm(&self->r, 10, 2, t0 + 40 * MS));
	ASSERT_EQ(0, htw_ring_arm(&self->r, 11, 2, t0 + 2 * FAR));
	ASSERT_EQ(3, htw_ring_submit(&self->r, 0));
	ASSERT_EQ(2, reap_n(&self->r, cqes, 2));
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(2, cqes[i].gen);
		EXPECT_EQ(0, cqes[i].res);
		EXPECT_EQ(t0 + (cqes[i].slot == 9 ? 20 : 40) * MS,
			  cqes[i].deadline);
	}
	EXPECT_NE(cqes[0].slot, cqes[1].slot);
	EXPECT_EQ(0, reap_for(&self->r, cqes, 4, 60));
	EXPECT_EQ(1, htw_fdinfo_value(self->fd, "ring_armed"));
}

TEST_F(ring, a_cancel_entry_cancels_its_generation_only)
{
	struct htw_cqe cqes[4];

	ASSERT_EQ(0, htw_ring_arm(&self->r, 1, 4, now() + FAR));
	ASSERT_EQ(1, htw_ring_submit(&self->r, 0));
	ASSERT_EQ(0, htw_ring_cancel(&self->r, 1, 3));
	ASSERT_EQ(0, htw_ring_cancel(&self->r, 1, 4));
	ASSERT_EQ(0, htw_ring_cancel(&self->r, 1, 4));
	ASSERT_EQ(3, htw_ring_submit(&self->r, 0));
	/* Another generation's, and the second of this one's, find none. */
	ASSERT_EQ(2, reap_n(&self->r, cqes, 2));
	EXPECT_EQ(-ENOENT, cqes[0].res);
	EXPECT_EQ(3, cqes[0].gen);
	EXPECT_EQ(-ENOENT, cqes[1].res);
	EXPECT_EQ(4, cqes[1].gen);
	EXPECT_EQ(0, reap_for(&self->r, cqes, 4, 30));
	EXPECT_EQ(0, htw_fdinfo_value(self->fd, "ring_armed"));
}

TEST_F(ring, each_bad_entry_gets_its_own_error)
{
	static const struct htw_sqe bad[] = {
		{ .op = 0, .slot = 0 },
		{ .op = 3, .slot = 0 },
		{ .op = HTW_SQE_ARM, .slot = 0, .flags = 1 },
		{ .op = HTW_SQE_ARM, .slot = 64 },
		{ .op = HTW_SQE_ARM, .slot = ~0U },
		{ .op = HTW_SQE_ARM, .slot = 0, .deadline = HTW_TIME_MAX + 1 },
		{ .op = HTW_SQE_CANCEL, .slot = 0, .deadline = 1 },
	};
	struct htw_ring *r = &self->r;
	struct htw_cqe cqes[16];
	unsigned int i, n = ARRAY_SIZE(bad);
	__u64 t0 = now();

	for (i = 0; i < n; i++) {
		r->sqes[r->sq_tail & (r->sq_entries - 1)] = bad[i];
		r->sqes[r->sq_tail & (r->sq_entries - 1)].gen = 100 + i;
		r->sq_tail++;
	}
	/* A good one among them is armed, and fires. */
	ASSERT_EQ(0, htw_ring_arm(r, 2, 1, t0 + 10 * MS));
	ASSERT_EQ(n + 1, htw_ring_submit(r, 0));
	ASSERT_EQ(n + 1, reap_n(r, cqes, n + 1));
	for (i = 0; i < n; i++) {
		EXPECT_EQ(-EINVAL, cqes[i].res) TH_LOG("entry %u", i);
		EXPECT_EQ(100 + i, cqes[i].gen);
		EXPECT_EQ(bad[i].slot, cqes[i].slot);
	}
	EXPECT_EQ(0, cqes[n].res);
	EXPECT_EQ(2, cqes[n].slot);
}

/*
 * On a ring of 8 slots and 8 completions, all due at @t0: generation 1's
 * expiries fill the completion ring and one is reaped (into @cqes); of
 * generation 2's, one fits and seven wait for room.
 */
static void fill_with_seven_waiting(struct __test_metadata *_metadata,
				    struct htw_ring *r, struct htw_cqe *cqes,
				    __u64 t0)
{
	unsigned int i;

	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, htw_ring_arm(r, i, 1, t0));
	ASSERT_EQ(8, htw_ring_submit(r, 0));
	ASSERT_EQ(0, htw_ring_submit(r, 8));
	/* One reaped: room for one, and generation 2's arms are taken. */
	ASSERT_EQ(1, htw_ring_reap(r, cqes, 1));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, htw_ring_arm(r, i, 2, t0));
	ASSERT_EQ(8, htw_ring_submit(r, 0));
	while (htw_fdinfo_value(r->fd, "ring_waiting") < 7) {
		ASSERT_GT(t0 + HTW_WAIT_MS * MS, now());
		usleep(1000);
		ASSERT_EQ(0, htw_ring_submit(r, 0));
	}
}

/*
 * A completion ring left full: the timers wait in the kernel, the
 * submission ring waits too, and nothing is lost or doubled once the
 * program reaps.
 */
TEST(a_full_completion_ring_loses_nothing)
{
	struct htw_cqe cqes[64];
	unsigned int seen[2][8] = { { 0 } }, i, n, got;
	struct htw_ring r;
	int fd = htw_open(O_CLOEXEC);
	__u64 t0;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, htw_ring_map(fd, 8, 8, &r));
	ASSERT_EQ(8, r.cq_entries);
	t0 = now();
	fill_with_seven_waiting(_metadata, &r, cqes, t0);
	EXPECT_EQ(8, htw_fdinfo_value(fd, "ring_armed") + 1);
	EXPECT_EQ(HTW_RING_CQ_WAITING, *r.flags_p);
	/* No room for an error: the submission ring is not consumed. */
	ASSERT_EQ(0, htw_ring_cancel(&r, 0, 9));
	EXPECT_EQ(0, htw_ring_submit(&r, 0));

	/* A reap makes room, and wakes no one; a poll posts the seven. */
	got = 1 + htw_ring_reap(&r, cqes + 1, 8);
	ASSERT_EQ(9, got);
	ASSERT_EQ(1, poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, 0));
	got += htw_ring_reap(&r, cqes + got, 64 - got);
	ASSERT_EQ(16, got);
	EXPECT_EQ(0, htw_fdinfo_value(fd, "ring_waiting"));
	EXPECT_EQ(0, *r.flags_p);
	for (; got < 17; got += n) {
		n = htw_ring_reap(&r, cqes + got, 64 - got);
		if (!n)
			ASSERT_LE(0, htw_ring_submit(&r, 0));
		ASSERT_GT(t0 + HTW_WAIT_MS * MS, now());
	}
	ASSERT_EQ(17, got);
	for (i = 0; i < 16; i++) {
		ASSERT_EQ(0, cqes[i].res);
		/* In order: generation 1's eight, then generation 2's. */
		ASSERT_EQ(i < 8 ? 1 : 2, cqes[i].gen);
		ASSERT_LT(cqes[i].slot, 8);
		seen[cqes[i].gen - 1][cqes[i].slot]++;
	}
	EXPECT_EQ(-ENOENT, cqes[16].res);
	for (i = 0; i < 8; i++) {
		EXPECT_EQ(1, seen[0][i]);
		EXPECT_EQ(1, seen[1][i]);
	}
	EXPECT_EQ(0, htw_ring_reap(&r, cqes, 64));
	htw_ring_unmap(&r);
	close(fd);
}

/*
 * HTW_IOC_RING_ENTER consumes its entries before it posts the timers that
 * waited for room, as htw(4) and htw_ring_submit(3) say: a cancel of a
 * slot whose completion waits drops it, and makes none of its own.  Were
 * the waiting ones posted first, the slot's completion would come, and
 * the cancel would fail with ENOENT.
 */
TEST(enter_consumes_entries_before_posting_those_that_waited)
{
	struct htw_cqe cqes[16];
	unsigned int i, got, waiting = 8;
	struct htw_ring r;
	int fd = htw_open(O_CLOEXEC);
	__u64 t0;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, htw_ring_map(fd, 8, 8, &r));
	t0 = now();
	fill_with_seven_waiting(_metadata, &r, cqes, t0);
	/* The ring emptied by a reap, which tells the kernel nothing. */
	ASSERT_EQ(8, htw_ring_reap(&r, cqes, 16));
	ASSERT_EQ(2, cqes[7].gen);
	/* A cancel of a slot that waits, then the call. */
	for (i = 0; i < 8 && waiting == 8; i++)
		if (i != cqes[7].slot)
			waiting = i;
	ASSERT_EQ(0, htw_ring_cancel(&r, waiting, 2));
	ASSERT_EQ(1, htw_ring_submit(&r, 0));
	got = htw_ring_reap(&r, cqes, 16);
	EXPECT_EQ(6, got);
	for (i = 0; i < got; i++) {
		EXPECT_EQ(0, cqes[i].res);
		EXPECT_NE(waiting, cqes[i].slot);
	}
	EXPECT_EQ(0, htw_fdinfo_value(fd, "ring_waiting"));
	EXPECT_EQ(0, htw_fdinfo_value(fd, "ring_armed"));
	htw_ring_unmap(&r);
	close(fd);
}

/*
 * The account charges what the kernel allocates: the slots in whole pages,
 * so that a slot past a page of them costs a page.
 */
TEST(the_account_charges_the_slots_in_whole_pages)
{
	const __u32 slots[2] = { PAGE / 64, PAGE / 64 + 1 };
	__u64 base = htw_user_bytes(), charge[2];
	struct htw_ring_setup s[2];
	int k, fd;

	for (k = 0; k < 2; k++) {
		fd = htw_open(O_CLOEXEC);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, setup_ring(fd, slots[k], 256, &s[k]));
		charge[k] = htw_user_bytes() - base;
		close(fd);
		ASSERT_EQ(base, htw_user_bytes());
	}
	/* The same shared memory, and the same wheel. */
	ASSERT_EQ(s[0].rw_size, s[1].rw_size);
	ASSERT_EQ(s[0].ro_size, s[1].ro_size);
	EXPECT_EQ(PAGE, charge[1] - charge[0]);
}

/*
 * A range of either part the program zapped comes back at the next touch:
 * the same page, with what it held, and the ring works on.
 */
TEST_F(ring, a_zapped_mapping_comes_back_as_it_was)
{
	struct htw_cqe cqe;

	self->r.slots[3] = 12345;
	ASSERT_EQ(0, madvise(self->r.rw, self->r.rw_size, MADV_DONTNEED));
	EXPECT_EQ(12345, self->r.slots[3]);
	self->r.slots[3] = 0;
	ASSERT_EQ(0, htw_ring_arm(&self->r, 0, 1, now() + 10 * MS));
	ASSERT_EQ(1, htw_ring_submit(&self->r, 0));
	ASSERT_EQ(0, madvise(self->r.ro, self->r.ro_size, MADV_DONTNEED));
	ASSERT_EQ(1, reap_n(&self->r, &cqe, 1));
	EXPECT_EQ(0, cqe.slot);
	EXPECT_EQ(1, cqe.gen);
}

struct ring_waiter {
	int fd;
	__u32 min;
	pid_t tid;
	int ret;
};

static void *ring_waiter(void *arg)
{
	struct ring_waiter *w = arg;

	__atomic_store_n(&w->tid, gettid(), __ATOMIC_RELEASE);
	w->ret = enter_ring(w->fd, 0, w->min, HTW_ENTER_GETEVENTS);
	return NULL;
}

/* Wait until task @tid sleeps; 0, or -1 if it does not in HTW_WAIT_MS. */
static int wait_asleep(pid_t tid)
{
	__u64 end = now() + HTW_WAIT_MS * MS;

	while (now() < end) {
		if (htw_task_state(tid) == 'S')
			return 0;
		usleep(1000);
	}
	return -1;
}

/* Start @w, and wait until it sleeps (in its call: it does nothing else). */
static int start_waiter(pthread_t *th, struct ring_waiter *w)
{
	if (pthread_create(th, NULL, ring_waiter, w))
		return -1;
	while (!__atomic_load_n(&w->tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	return wait_asleep(w->tid);
}

static void on_usr1(int sig)
{
}

/*
 * The waiters of HTW_IOC_RING_ENTER are woken one at a time, the first
 * with something to do: a timer's expiry wakes the waiter queued first,
 * which runs it; the completion it posts is not enough for the waiter of
 * four behind it, which sleeps on, never woken.
 */
TEST(ring_waiters_are_woken_one_at_a_time)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct ring_waiter one = { .min = 1 }, four = { .min = 4 };
	pthread_t th_one, th_four;
	struct htw_ring r;
	long switches;
	int fd = htw_open(O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, htw_ring_map(fd, 8, 8, &r));
	one.fd = fd;
	four.fd = fd;
	ASSERT_EQ(0, start_waiter(&th_one, &one));
	ASSERT_EQ(0, start_waiter(&th_four, &four));
	switches = htw_task_status(four.tid, "voluntary_ctxt_switches");
	ASSERT_LE(0, switches);

	ASSERT_EQ(0, htw_ring_arm(&r, 0, 1, now() + 20 * MS));
	ASSERT_EQ(1, htw_ring_submit(&r, 0));
	ASSERT_EQ(0, pthread_join(th_one, NULL));
	EXPECT_EQ(0, one.ret);
	/* One expiry of the wheel: the wake was the mark. */
	EXPECT_EQ(1, htw_fdinfo_value(fd, "wakes"));
	/*
	 * The wake that woke "one" was done before "one" ran: had it woken
	 * "four" too, "four" would be runnable now, and would count a switch
	 * by the time it sleeps again.
	 */
	ASSERT_EQ(0, wait_asleep(four.tid));
	EXPECT_EQ(switches, htw_task_status(four.tid, "voluntary_ctxt_switches"));

	ASSERT_EQ(0, pthread_kill(th_four, SIGUSR1));
	ASSERT_EQ(0, pthread_join(th_four, NULL));
	EXPECT_EQ(-EINTR, four.ret);
	htw_ring_unmap(&r);
	close(fd);
}

/*
 * epoll registers a file's wait queue at its first poll: one set up
 * before the ring timers hears them all the same.
 */
TEST(an_epoll_from_before_the_setup_hears_the_ring)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct htw_cqe cqe;
	struct htw_ring r;
	int fd = htw_open(O_CLOEXEC), ep = epoll_create1(EPOLL_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	ASSERT_EQ(0, htw_ring_map(fd, 4, 4, &r));
	ASSERT_EQ(0, htw_ring_arm(&r, 1, 1, now() + 20 * MS));
	ASSERT_EQ(1, htw_ring_submit(&r, 0));
	/* Nothing is due yet, or a poll ran it: either way epoll says so. */
	ASSERT_EQ(1, epoll_wait(ep, &ev, 1, HTW_WAIT_MS));
	ASSERT_EQ(1, reap_n(&r, &cqe, 1));
	EXPECT_EQ(1, cqe.slot);
	htw_ring_unmap(&r);
	close(ep);
	close(fd);
}

/*
 * With EPOLLET, a program that only reaps what epoll tells of gets every
 * completion of a crowd due at once: each poll runs a batch (128 timers),
 * and one that leaves work due wakes the pollers again.
 */
TEST(an_epollet_reaper_gets_a_crowd_due_at_once)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	static struct htw_cqe cqes[1024];
	unsigned int got = 0, i;
	struct htw_ring r;
	int fd = htw_open(O_CLOEXEC), ep = epoll_create1(EPOLL_CLOEXEC);
	__u64 t0 = now();

	ASSERT_LE(0, fd);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, htw_ring_map(fd, 1024, 1024, &r));
	for (i = 0; i < 1024; i++)
		ASSERT_EQ(0, htw_ring_arm(&r, i, 1, t0 + 20 * MS));
	ASSERT_EQ(1024, htw_ring_submit(&r, 0));
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	/* No call but epoll_wait() and the reaps from now on. */
	while (got < 1024) {
		ASSERT_EQ(1, epoll_wait(ep, &ev, 1, HTW_WAIT_MS))
			TH_LOG("%u of 1024 completions, then nothing", got);
		got += htw_ring_reap(&r, cqes + got, 1024 - got);
	}
	EXPECT_EQ(0, *r.flags_p);
	htw_ring_unmap(&r);
	close(ep);
	close(fd);
}

TEST(munmap_then_close_and_close_then_munmap_free_everything)
{
	__u64 base = htw_user_bytes();
	struct htw_ring r;
	int fd, order;

	for (order = 0; order < 2; order++) {
		fd = htw_open(O_CLOEXEC);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, htw_ring_map(fd, 1000, 64, &r));
		ASSERT_EQ(0, htw_ring_arm(&r, 0, 1, now() + FAR));
		ASSERT_EQ(1, htw_ring_submit(&r, 0));
		EXPECT_LT(base, htw_user_bytes());
		if (order) {
			close(fd);
			/* The mapping holds the file: still there, still usable. */
			EXPECT_LT(base, htw_user_bytes());
			htw_ring_extend(&r, 0, now() + 2 * FAR);
			EXPECT_EQ(0, r.cqes[0].res);
			htw_ring_unmap(&r);
		} else {
			htw_ring_unmap(&r);
			EXPECT_LT(base, htw_user_bytes());
			close(fd);
		}
		EXPECT_EQ(base, htw_user_bytes()) TH_LOG("order %d", order);
	}
}

/* fork(): the child shares the slots; its store extends the parent's timer. */
TEST_F(ring, a_forked_child_shares_the_slots)
{
	struct htw_cqe cqe;
	__u64 t0 = now();
	int status;
	pid_t pid;

	/* Submitted once the child is done: the kernel reads its store. */
	ASSERT_EQ(0, htw_ring_arm(&self->r, 4, 1, t0 + 50 * MS));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		htw_ring_extend(&self->r, 4, t0 + 150 * MS);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(1, htw_ring_submit(&self->r, 0));
	ASSERT_EQ(1, reap_n(&self->r, &cqe, 1));
	EXPECT_EQ(t0 + 150 * MS, cqe.deadline);
	EXPECT_LE(t0 + 150 * MS, now());
}

/*
 * The oracle, on two CPUs: one thread pushes deadlines later by stores,
 * the kernel fires on the other, the main thread arms, cancels and reaps.
 * Each arm (a generation, never reused) ends once: in its expiry, at or
 * after its deadline and never after a deadline the program stored; or in
 * a cancel, which says -ENOENT if it came after the expiry.
 */
#define ORACLE_SLOTS	256
#define ORACLE_GENS	4194304

/* What became of an arm, by its generation. */
enum {
	GEN_NONE,
	GEN_ARMED,
	GEN_CANCELING,		/* a cancel is on its way */
	GEN_EXPIRED,
	GEN_LATE_CANCEL,	/* expired, its cancel to find none */
	GEN_ENDED,
};

/* @stored: of each slot, the latest deadline the program stored. */
struct oracle {
	struct htw_ring *r;
	__u64 stored[ORACLE_SLOTS];
	int stop;
	__u64 seed;
};

static void store_max(__u64 *p, __u64 v)
{
	__u64 old = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (old < v &&
	       !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

/*
 * Push the even slots' deadlines later, one every 50 us: often enough to
 * race their expiries, not so often that none of them ever comes (on two
 * CPUs a pusher that never rests keeps every slot alive).  The odd slots
 * expire as armed.
 */
static void *oracle_pusher(void *arg)
{
	const struct timespec rest = { .tv_nsec = 50000 };
	struct oracle *o = arg;
	__u64 seed = o->seed, d;
	unsigned int s;

	while (!__atomic_load_n(&o->stop, __ATOMIC_RELAXED)) {
		s = 2 * htw_rand_below(&seed, ORACLE_SLOTS / 2);
		d = now() + (1 + htw_rand_below(&seed, 10)) * MS;
		/* The oracle's record first: a deadline it may see acted on. */
		store_max(&o->stored[s], d);
		htw_ring_extend(o->r, s, d);
		nanosleep(&rest, NULL);
	}
	return NULL;
}

/* The oracle's verdict on one completion: 0, or why it is wrong. */
static const char *oracle_check(struct oracle *o, unsigned char *state,
				const struct htw_cqe *c)
{
	if (c->slot >= ORACLE_SLOTS || !c->gen || c->gen >= ORACLE_GENS)
		return "a completion of no arm";
	if (c->res == -ENOENT) {
		if (state[c->gen] != GEN_LATE_CANCEL)
			return "-ENOENT for a cancel that was in time";
		state[c->gen] = GEN_ENDED;
		return NULL;
	}
	if (c->res)
		return "an error";
	if (c->deadline > now())
		return "an early expiry";
	if (c->deadline > __atomic_load_n(&o->stored[c->slot], __ATOMIC_RELAXED))
		return "an expiry for a deadline never given";
	if (state[c->gen] == GEN_ARMED)
		state[c->gen] = GEN_EXPIRED;
	else if (state[c->gen] == GEN_CANCELING)
		state[c->gen] = GEN_LATE_CANCEL;
	else
		return "a second expiry, or one of a cancelled arm";
	return NULL;
}

TEST(oracle_on_two_cpus_every_arm_ends_once_never_early)
{
	static struct oracle o;
	static unsigned char state[ORACLE_GENS];
	__u64 seconds = htw_env_u64("HTW_FULL", 0) == 1 ? 20 : 3;
	__u32 cur[ORACLE_SLOTS] = { 0 }, next = 1, i;
	__u64 armed[ORACLE_SLOTS] = { 0 };
	unsigned int expired = 0, late = 0, pushed = 0;
	struct htw_cqe cqes[64];
	const char *why;
	struct htw_ring r;
	pthread_t pusher;
	__u64 end, seed, d;
	int fd = htw_open(O_CLOEXEC), n, k;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, htw_ring_map(fd, ORACLE_SLOTS, 256, &r));
	o.r = &r;
	seed = htw_now(CLOCK_MONOTONIC) | 1;
	o.seed = seed;
	TH_LOG("seed %llu", (unsigned long long)seed);
	ASSERT_EQ(0, pthread_create(&pusher, NULL, oracle_pusher, &o));

	end = now() + seconds * NSEC_PER_SEC;
	while (now() < end && next < ORACLE_GENS) {
		/* Arm a slot whose arm is not pending, or cancel one that is. */
		i = htw_rand_below(&seed, ORACLE_SLOTS);
		if (state[cur[i]] != GEN_ARMED) {
			d = now() + (1 + htw_rand_below(&seed, 10)) * MS;
			store_max(&o.stored[i], d);
			cur[i] = next++;
			armed[i] = d;
			state[cur[i]] = GEN_ARMED;
			ASSERT_EQ(0, htw_ring_arm(&r, i, cur[i], d));
		} else if (htw_rand_below(&seed, 8) == 0) {
			ASSERT_EQ(0, htw_ring_cancel(&r, i, cur[i]));
			state[cur[i]] = GEN_CANCELING;
		}
		if (htw_rand_below(&seed, 16) == 0 ||
		    r.sq_tail - *r.sq_head_p >= 200)
			ASSERT_LE(0, htw_ring_submit(&r, 0));
		n = htw_ring_reap(&r, cqes, 64);
		for (k = 0; k < n; k++) {
			why = oracle_check(&o, state, &cqes[k]);
			/* Never before the deadline this arm was given. */
			if (!why && !cqes[k].res && cqes[k].gen == cur[cqes[k].slot] &&
			    cqes[k].deadline < armed[cqes[k].slot])
				why = "an expiry before its arm's deadline";
			ASSERT_EQ(NULL, why)
				TH_LOG("%s: slot %u gen %u res %d deadline %llu",
				       why, cqes[k].slot, cqes[k].gen, cqes[k].res,
				       (unsigned long long)cqes[k].deadline);
			expired += !cqes[k].res;
			late += cqes[k].res == -ENOENT;
			/* Expiries of a deadline a store pushed later. */
			pushed += !cqes[k].res && cqes[k].gen == cur[cqes[k].slot] &&
				  cqes[k].deadline > armed[cqes[k].slot];
		}
	}
	__atomic_store_n(&o.stop, 1, __ATOMIC_RELAXED);
	pthread_join(pusher, NULL);
	/*
	 * Nothing pushes now: every arm ends, in its expiry, or in its cancel
	 * (with -ENOENT if the cancel came after the expiry).
	 */
	ASSERT_LE(0, htw_ring_submit(&r, 0));
	end = now() + HTW_WAIT_MS * MS;
	for (i = 1; i < next; i++) {
		while (state[i] == GEN_ARMED || state[i] == GEN_LATE_CANCEL) {
			ASSERT_GT(end, now()) TH_LOG("arm %u never ended", i);
			n = htw_ring_reap(&r, cqes, 64);
			for (k = 0; k < n; k++) {
				why = oracle_check(&o, state, &cqes[k]);
				ASSERT_EQ(NULL, why) TH_LOG("%s", why);
				expired += !cqes[k].res;
				late += cqes[k].res == -ENOENT;
			}
			if (!n) {
				usleep(1000);
				ASSERT_LE(0, htw_ring_submit(&r, 0));
			}
		}
	}
	TH_LOG("%u arms, %u expiries (%u of a pushed deadline), %u cancels after the expiry",
	       next - 1, expired, pushed, late);
	EXPECT_LT(0, expired);
	htw_ring_unmap(&r);
	close(fd);
}

/*
 * A hostile program: a thread writes random values over every writable
 * byte while others arm, push, cancel and reap.  Nothing breaks but its own
 * timers: every completion is well formed, no expiry is early, and the
 * memory goes back at close.
 */
struct scribble {
	struct htw_ring *r;
	int stop;
	unsigned long ops;
	__u64 seed;
};

static void *scribbler(void *arg)
{
	struct scribble *sc = arg;
	__u64 seed = sc->seed, *words = sc->r->rw;
	size_t n = sc->r->rw_size / sizeof(__u64);

	while (!__atomic_load_n(&sc->stop, __ATOMIC_RELAXED)) {
		__atomic_store_n(&words[htw_rand_below(&seed, n)], htw_rand(&seed),
				 __ATOMIC_RELAXED);
		/* On one CPU (UML), the others' turn now and then. */
		if (!(__atomic_fetch_add(&sc->ops, 1, __ATOMIC_RELAXED) % 4096))
			sched_yield();
	}
	return NULL;
}

/* The scribbler's test may take minutes where system calls are slow (UML). */
FIXTURE(scribble) {};
FIXTURE_SETUP(scribble) {}
FIXTURE_TEARDOWN(scribble) {}

TEST_F_TIMEOUT(scribble, a_scribbled_ring_harms_only_itself, 900)
{
	static struct scribble sc;
	bool full = htw_env_u64("HTW_FULL", 0) == 1;
	/*
	 * A million in check-full where the scribbler runs beside the others
	 * (two CPUs); on one (UML), where it only takes turns and each system
	 * call is a ptrace round trip, a hundred thousand.
	 */
	unsigned long target = full && sysconf(_SC_NPROCESSORS_ONLN) > 1 ?
			       1000000 : 100000;
	__u64 base = htw_user_bytes(), seed, t = 0;
	unsigned long ops = 0, cqes_seen = 0;
	struct htw_cqe cqes[64];
	struct htw_ring r;
	pthread_t th;
	int fd = htw_open(O_CLOEXEC), n, k;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, htw_ring_map(fd, 512, 64, &r));
	sc.r = &r;
	seed = htw_now(CLOCK_MONOTONIC) | 1;
	sc.seed = seed;
	TH_LOG("seed %llu", (unsigned long long)seed);
	ASSERT_EQ(0, pthread_create(&th, NULL, scribbler, &sc));
	while (ops < target) {
		__u32 s = htw_rand_below(&seed, 600), what;

		/* The clock once in 64 operations, as a server reads it. */
		if (!(ops % 64))
			t = now();
		/* Entries and stores, and a submission one time in sixteen. */
		what = htw_rand_below(&seed, 16);
		if (what < 5) {
			htw_ring_arm(&r, s % 512, s, t + htw_rand_below(&seed, 5 * MS));
		} else if (what < 10) {
			htw_ring_extend(&r, s % 512, t + htw_rand_below(&seed, 10 * MS));
		} else if (what < 15) {
			htw_ring_cancel(&r, s % 512, s);
		} else {
			/* The program's own indices may be nonsense by now. */
			r.sq_tail = *r.sq_tail_p + htw_rand_below(&seed, 70);
			n = htw_ring_submit(&r, 0);
			ASSERT_TRUE(n >= 0 || n == -EINTR) TH_LOG("%d", n);
		}
		n = htw_ring_reap(&r, cqes, 64);
		if (n > 64)
			n = 64;
		if (n)
			t = now();
		for (k = 0; k < n; k++) {
			struct htw_cqe *c = &cqes[k];

			ASSERT_TRUE(c->res == 0 || c->res == -EINVAL ||
				    c->res == -ENOENT) TH_LOG("res %d", c->res);
			if (c->res)
				continue;
			/* An expiry: of a slot that exists, not early. */
			ASSERT_LT(c->slot, 512);
			ASSERT_EQ(0, c->flags);
			ASSERT_LE(c->deadline, t);
			cqes_seen++;
		}
		ops++;
	}
	__atomic_store_n(&sc.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	TH_LOG("%lu operations, %lu scribbles, %lu expiries", ops,
	       __atomic_load_n(&sc.ops, __ATOMIC_RELAXED), cqes_seen);
	htw_ring_unmap(&r);
	close(fd);
	EXPECT_EQ(base, htw_user_bytes());
	/* The device still serves others: a new file's timer fires. */
	fd = htw_open(O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_LT(0, htw_arm_id(fd, 0, MS, 0, 9));
	ASSERT_EQ(1, poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1,
			  HTW_WAIT_MS));
	close(fd);
}

/*
 * tools/htw_idle, the idle-timeout demo, on a small scale: its own checks
 * (no early completion, no lost timeout) pass, from the tools on $PATH.
 */
TEST(idle_timeout_demo_runs_clean)
{
	char line[256];
	FILE *p = popen("htw_idle -n 200 -t 50ms -s 300ms 2>&1", "r");

	ASSERT_NE(NULL, p);
	while (fgets(line, sizeof(line), p))
		TH_LOG("%s", line);
	EXPECT_EQ(0, pclose(p));
}

int main(int argc, char **argv)
{
	return htw_test_main(argc, argv);
}
