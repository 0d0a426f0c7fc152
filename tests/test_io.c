/* SPDX-License-Identifier: MIT */
/* The reactor and the helper threads: waiting on pipes and eventfds from
 * fibers and plain threads, readiness for reading and writing, timeouts,
 * cancellation, forgetting an fd under its waiter, two waiters on one fd,
 * many fds at once; the drained wait of net/ (weft__io_wait_drained): a
 * report that comes while nobody waits is kept for the next wait, and a
 * number closed and reused starts with nothing of the old one's; weft_offload
 * keeping workers free. The descriptors are
 * testutil's: pipes and socketpairs on Linux, in-memory ones whose ends are
 * the bare shim's I/O sources on bare metal, so the same tests drive both
 * reactors. A fiber is seen parked in its wait (wt_wait_parked) before what
 * should wake it happens. Readiness is seen while CPU-bound fibers keep
 * every worker busy, with the real clock and the virtual one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"
#include "shim.h"
#include "testutil.h"

static void test_bad_arguments(void **state)
{
	(void)state;
	assert_int_equal(weft_fd_wait(-1, WEFT_IO_IN, 0), -EINVAL);
	assert_int_equal(weft_fd_wait(0, 0, 0), -EINVAL);
	assert_int_equal(weft_fd_wait(0, 8, 0), -EINVAL);
	assert_int_equal(weft_offload(NULL, NULL, NULL), -EINVAL);
	/* Not a source: a closed fd on Linux, an unregistered device number
	 * on bare metal. */
	assert_int_equal(weft_fd_wait(999, WEFT_IO_IN, wt_ms(100)), -EBADF);
}

static void make_pipe(int p[2]) { wt_pipe(p); }

static void close_pipe(int p[2])
{
	wt_close(p[0]);
	wt_close(p[1]);
}

struct reader {
	int fd;
	int64_t deadline;
	int r; /* weft_fd_wait's result */
	char got;
	_Atomic int waiting;
	_Atomic int finished; /* set after r and got */
};

static void *read_one(void *arg)
{
	struct reader *rd = arg;
	atomic_store(&rd->waiting, 1);
	rd->r = weft_fd_wait(rd->fd, WEFT_IO_IN, rd->deadline);
	if (rd->r > 0 && wt_read(rd->fd, &rd->got, 1) != 1)
		rd->got = 0;
	atomic_store(&rd->finished, 1);
	return NULL;
}

static void test_pipe_wakes_fiber(void **state)
{
	(void)state;
	int p[2];
	make_pipe(p);
	struct reader rd = {.fd = p[0], .deadline = wt_ms(10000)};
	weft_fiber_t f = wt_spawn_named(read_one, &rd, "reader");
	assert_true(wt_wait_parked("reader", "fd"));
	assert_int_equal(wt_write(p[1], "x", 1), 1);
	wt_join(f);
	assert_int_equal(rd.r, WEFT_IO_IN);
	assert_int_equal(rd.got, 'x');
	close_pipe(p);
}

static void test_pipe_wakes_thread(void **state)
{
	(void)state;
	int p[2];
	make_pipe(p);
	struct reader rd = {.fd = p[0], .deadline = wt_ms(10000)};
	wt_thread_t t = wt_thread_start(read_one, &rd);
	/* A plain thread's wait shows nowhere (weft_dump lists fibers): the
	 * byte may come before or after it blocks; either way it gets it. */
	assert_true(wt_wait_flag(&rd.waiting));
	assert_int_equal(wt_write(p[1], "y", 1), 1);
	wt_thread_join(t);
	assert_int_equal(rd.r, WEFT_IO_IN);
	assert_int_equal(rd.got, 'y');
	close_pipe(p);
}

/* The same with one worker, idle on its futex: the thread's wait must wake
 * it to take the poll. (A fiber's wait on the one worker there is wakes
 * nobody: reactor.c, need_poller.) */
static void test_pipe_wakes_thread_one_worker(void **state)
{
	wt_restart(1, WEFT_CFG_REAL_CLOCK);
	test_pipe_wakes_thread(state);
	wt_restart_default();
}

static void test_ready_fd_returns_at_once(void **state)
{
	(void)state;
	int p[2];
	make_pipe(p);
	/* An empty pipe is writable at once; a deadline of 0 still polls. */
	assert_int_equal(weft_fd_wait(p[1], WEFT_IO_OUT, -1), WEFT_IO_OUT);
	assert_int_equal(wt_write(p[1], "z", 1), 1);
	struct reader rd = {.fd = p[0], .deadline = -1};
	wt_run_fiber(read_one, &rd);
	assert_int_equal(rd.r, WEFT_IO_IN);
	assert_int_equal(rd.got, 'z');
	close_pipe(p);
}

static void test_timeout(void **state)
{
	(void)state;
	int p[2];
	make_pipe(p);
	int64_t t0 = weft_now();
	struct reader rd = {.fd = p[0], .deadline = wt_ms(50)};
	wt_run_fiber(read_one, &rd);
	assert_int_equal(rd.r, -ETIMEDOUT);
	assert_true(weft_now() >= rd.deadline);
	assert_true(weft_now() - t0 >= 50 * 1000000LL);
	/* From a plain thread too; and 0 is "try once". */
	assert_int_equal(weft_fd_wait(p[0], WEFT_IO_IN, wt_ms(20)), -ETIMEDOUT);
	assert_int_equal(weft_fd_wait(p[0], WEFT_IO_IN, 0), -ETIMEDOUT);
	/* The timed-out waiter left its slot: a new one can wait. */
	assert_int_equal(wt_write(p[1], "a", 1), 1);
	assert_int_equal(weft_fd_wait(p[0], WEFT_IO_IN, wt_ms(5000)), WEFT_IO_IN);
	close_pipe(p);
}

static void test_cancel_while_waiting(void **state)
{
	(void)state;
	int p[2];
	make_pipe(p);
	struct reader rd = {.fd = p[0], .deadline = wt_ms(10000)};
	weft_fiber_t f = wt_spawn_named(read_one, &rd, "reader");
	assert_true(wt_wait_parked("reader", "fd"));
	assert_int_equal(weft_fiber_cancel(f), 0);
	wt_join(f);
	assert_int_equal(rd.r, -ECANCELED);
	/* Data that arrives later is there for the next reader. */
	assert_int_equal(wt_write(p[1], "b", 1), 1);
	rd.deadline = wt_ms(5000);
	wt_run_fiber(read_one, &rd);
	assert_int_equal(rd.r, WEFT_IO_IN);
	assert_int_equal(rd.got, 'b');
	close_pipe(p);
}

static void test_second_reader_busy(void **state)
{
	(void)state;
	int p[2];
	make_pipe(p);
	struct reader rd = {.fd = p[0], .deadline = wt_ms(10000)};
	weft_fiber_t f = wt_spawn_named(read_one, &rd, "reader");
	assert_true(wt_wait_parked("reader", "fd"));
	assert_int_equal(weft_fd_wait(p[0], WEFT_IO_IN, wt_ms(10)), -EBUSY);
	assert_int_equal(wt_write(p[1], "c", 1), 1);
	wt_join(f);
	assert_int_equal(rd.r, WEFT_IO_IN);
	close_pipe(p);
}

static void test_forget_wakes_waiter(void **state)
{
	(void)state;
	int p[2];
	make_pipe(p);
	struct reader rd = {.fd = p[0], .deadline = wt_ms(10000)};
	weft_fiber_t f = wt_spawn_named(read_one, &rd, "reader");
	assert_true(wt_wait_parked("reader", "fd"));
	weft_fd_forget(p[0]);
	wt_join(f);
	assert_int_equal(rd.r, -EBADF);
	close_pipe(p);
}

struct writer {
	int fd;
	int r;
	_Atomic int waiting;
};

static void *wait_writable(void *arg)
{
	struct writer *w = arg;
	atomic_store(&w->waiting, 1);
	w->r = weft_fd_wait(w->fd, WEFT_IO_OUT, wt_ms(10000));
	return NULL;
}

/* A reader and a writer wait on the two directions of one fd at once (a
 * socketpair end), and each wakes for its own direction only. */
static void test_reader_and_writer_on_one_fd(void **state)
{
	(void)state;
	int sv[2];
	wt_socketpair(sv);
	/* Fill sv[0]'s way out so that writing to it would block. */
	char buf[4096];
	memset(buf, 'f', sizeof buf);
	for (int i = 0; i < 100000 && wt_write(sv[0], buf, sizeof buf) > 0; i++)
		;
	struct writer w = {.fd = sv[0]};
	weft_fiber_t fw = wt_spawn_named(wait_writable, &w, "writer");
	struct reader rd = {.fd = sv[0], .deadline = wt_ms(10000)};
	weft_fiber_t fr = wt_spawn_named(read_one, &rd, "reader");
	assert_true(wt_wait_parked("writer", "fd"));
	assert_true(wt_wait_parked("reader", "fd"));
	/* Drain the other end: the writer wakes, the reader keeps waiting
	 * (the report that woke the writer would have woken it too: it is
	 * still parked once the writer has run). */
	for (int i = 0; i < 100000 && wt_read(sv[1], buf, sizeof buf) > 0; i++)
		;
	wt_join(fw);
	assert_int_equal(w.r, WEFT_IO_OUT);
	assert_true(wt_wait_parked("reader", "fd"));
	assert_int_equal(atomic_load(&rd.finished), 0); /* still waiting */
	assert_int_equal(wt_write(sv[1], "r", 1), 1);
	wt_join(fr);
	assert_int_equal(rd.r, WEFT_IO_IN);
	assert_int_equal(rd.got, 'r');
	wt_close(sv[0]);
	wt_close(sv[1]);
}

static void test_hangup_is_reported(void **state)
{
	(void)state;
	int p[2];
	make_pipe(p);
	struct reader rd = {.fd = p[0], .deadline = wt_ms(10000)};
	weft_fiber_t f = wt_spawn_named(read_one, &rd, "reader");
	assert_true(wt_wait_parked("reader", "fd"));
	wt_close(p[1]);
	wt_join(f);
	assert_true(rd.r > 0);
	assert_true(rd.r & WEFT_IO_IN);
	assert_true(rd.r & WEFT_IO_ERR);
	wt_close(p[0]);
}

/* ---- The drained wait (weft__io_wait_drained) ------------------------------ */

struct drained {
	int fd;
	int r;
};

static void *wait_drained(void *arg)
{
	struct drained *d = arg;
	d->r = weft__io_wait_drained(d->fd, WEFT_IO_IN, wt_ms(10000));
	return NULL;
}

/* A report about fd while nobody waits on it, taken from the shim by a poll:
 * a wait on another pipe (q) makes that poll, and the report about fd, which
 * came first, is in it. */
static void report_while_nobody_waits(int fd_wr, const int q[2])
{
	assert_int_equal(wt_write(fd_wr, "b", 1), 1);
	assert_int_equal(wt_write(q[1], "q", 1), 1);
	assert_int_equal(weft_fd_wait(q[0], WEFT_IO_IN, wt_ms(10000)), WEFT_IO_IN);
	char c;
	assert_int_equal(wt_read(q[0], &c, 1), 1);
}

/* Try-once drained waits on fd until one answers, for at most 10 s. The
 * report about fd may reach the runtime after q's: io_uring posts a poll's
 * completion from the thread that submitted the poll (COOP_TASKRUN), and
 * the worker that armed fd's may run after the thread that armed q's.
 * Between tries, a 1 ms wait on the drained q has the reactor polled. A
 * try-once wait never parks for long nor asks the shim to look at fd
 * again, so only a kept report can answer it: if the report were dropped
 * for want of a waiter, every try would time out. */
static int try_once_until_kept(int fd, int q0)
{
	int64_t end = wt_ms(10000);
	int r;
	while ((r = weft__io_wait_drained(fd, WEFT_IO_IN, 0)) == -ETIMEDOUT && weft_now() < end)
		assert_int_equal(weft_fd_wait(q0, WEFT_IO_IN, wt_ms(1)), -ETIMEDOUT);
	return r;
}

/* Edge-triggered reports (Linux) come once per change. One that comes
 * between a caller's -EAGAIN and its wait, while nobody waits, is kept for
 * the wait; without it the wait would sleep through data already there. */
static void test_drained_wait_keeps_a_report(void **state)
{
	(void)state;
	int p[2], q[2];
	make_pipe(p);
	make_pipe(q);
	char c;
	/* Drained (empty), it parks; a byte wakes it. */
	struct drained d = {.fd = p[0]};
	weft_fiber_t f = wt_spawn_named(wait_drained, &d, "drained");
	assert_true(wt_wait_parked("drained", "fd"));
	assert_int_equal(wt_write(p[1], "a", 1), 1);
	wt_join(f);
	assert_int_equal(d.r, WEFT_IO_IN);
	assert_int_equal(wt_read(p[0], &c, 1), 1);
	assert_int_equal(wt_read(p[0], &c, 1), -EAGAIN);
	report_while_nobody_waits(p[1], q);
	/* An edge-triggered shim reported it once, while nobody waited: the
	 * kept report answers even a try-once wait. A one-shot shim (bare
	 * metal) looks at the device as the wait arms it. */
	if (WT_LINUX)
		assert_int_equal(try_once_until_kept(p[0], q[0]), WEFT_IO_IN);
	else
		assert_int_equal(weft__io_wait_drained(p[0], WEFT_IO_IN, wt_ms(10000)), WEFT_IO_IN);
	assert_int_equal(wt_read(p[0], &c, 1), 1);
	assert_int_equal(c, 'b');
	/* Taken: drained again, the next wait waits for a new report. */
	assert_int_equal(wt_read(p[0], &c, 1), -EAGAIN);
	assert_int_equal(weft__io_wait_drained(p[0], WEFT_IO_IN, wt_ms(20)), -ETIMEDOUT);
	d.r = 0;
	f = wt_spawn_named(wait_drained, &d, "drained");
	assert_true(wt_wait_parked("drained", "fd"));
	assert_int_equal(wt_write(p[1], "c", 1), 1);
	wt_join(f);
	assert_int_equal(d.r, WEFT_IO_IN);
	close_pipe(p);
	close_pipe(q);
}

/* A number forgotten, closed and reused (the lowest free one: an fd on
 * Linux, a source on bare metal) starts clean: neither the old one's kept
 * report nor its registration carries over. */
static void test_reused_number_starts_clean(void **state)
{
	(void)state;
	int p[2], q[2];
	make_pipe(p);
	make_pipe(q);
	/* Registered, with a report kept. */
	assert_int_equal(weft_fd_wait(p[0], WEFT_IO_IN, 0), -ETIMEDOUT);
	report_while_nobody_waits(p[1], q);
	int old = p[0];
	close_pipe(p);
	make_pipe(p);
	assert_int_equal(p[0], old);
	/* Empty: nothing reported for it. */
	assert_int_equal(weft__io_wait_drained(p[0], WEFT_IO_IN, 0), -ETIMEDOUT);
	assert_int_equal(weft__io_wait_drained(p[0], WEFT_IO_IN, wt_ms(20)), -ETIMEDOUT);
	/* And it is watched: a byte wakes a waiter. */
	struct drained d = {.fd = p[0]};
	weft_fiber_t f = wt_spawn_named(wait_drained, &d, "drained");
	assert_true(wt_wait_parked("drained", "fd"));
	assert_int_equal(wt_write(p[1], "n", 1), 1);
	wt_join(f);
	assert_int_equal(d.r, WEFT_IO_IN);
	char c;
	assert_int_equal(wt_read(p[0], &c, 1), 1);
	assert_int_equal(c, 'n');
	close_pipe(p);
	close_pipe(q);
}

/* 200 relays on Linux; on bare metal the shim has 8 I/O sources, 2 a pipe. */
#define NPIPES (WT_LINUX ? 200 : 3)
#define NPIPES_MAX 200

struct relay {
	int in, out;
	int r;
};

/* Each fiber waits for a byte on its pipe and passes it to the next. */
static void *relay_one(void *arg)
{
	struct relay *r = arg;
	char c;
	r->r = weft_fd_wait(r->in, WEFT_IO_IN, wt_ms(20000));
	if (r->r > 0 && wt_read(r->in, &c, 1) == 1 && wt_write(r->out, &c, 1) != 1)
		r->r = -EIO;
	return NULL;
}

static void test_many_fds_in_a_chain(void **state)
{
	(void)state;
	static int p[NPIPES_MAX + 1][2];
	static struct relay r[NPIPES_MAX];
	static weft_fiber_t f[NPIPES_MAX];
	if (!WT_LINUX)
		print_message(
			"a chain of %d relays over %d pipes (the bare shim has 8 I/O sources)\n",
			NPIPES, NPIPES + 1);
	for (int i = 0; i <= NPIPES; i++)
		make_pipe(p[i]);
	for (int i = 0; i < NPIPES; i++) {
		r[i] = (struct relay){.in = p[i][0], .out = p[i + 1][1]};
		f[i] = wt_spawn(relay_one, &r[i]);
	}
	assert_int_equal(wt_write(p[0][1], "!", 1), 1);
	for (int i = 0; i < NPIPES; i++) {
		wt_join(f[i]);
		assert_int_equal(r[i].r, WEFT_IO_IN);
	}
	char c = 0;
	assert_int_equal(weft_fd_wait(p[NPIPES][0], WEFT_IO_IN, wt_ms(5000)), WEFT_IO_IN);
	assert_int_equal(wt_read(p[NPIPES][0], &c, 1), 1);
	assert_int_equal(c, '!');
	for (int i = 0; i <= NPIPES; i++)
		close_pipe(p[i]);
}

/* ---- Readiness under a CPU-bound load ------------------------------------ */

/* Every bound below is real time (shim_now): the virtual clock stands still
 * while the load runs. 60 s is far beyond what a loaded 2-core machine,
 * valgrind or qemu-virt (two workers on one emulated hart) needs. */
#define LOAD_BOUND_NS (60 * 1000000000LL)
#define LOAD_FIBERS 4

struct load {
	int p[2];
	_Atomic int started; /* load fibers that began */
	_Atomic int running; /* load fibers not yet stopped */
	_Atomic int stop;    /* set by the reader once it has its byte */
	_Atomic int gave_up; /* load fibers that reached their bound */
	_Atomic int waiting; /* the reader is about to wait */
	int r;               /* the reader's weft_fd_wait */
	char got;
	int running_at_wake; /* load fibers still running when it woke */
};

/* CPU-bound: spin a little, yield, until the reader stops it. Every worker
 * then always finds another of these queued, so none runs out of work. */
static void *spin_and_yield(void *arg)
{
	struct load *l = arg;
	int64_t end = shim_now() + LOAD_BOUND_NS;
	atomic_fetch_add(&l->running, 1);
	atomic_fetch_add(&l->started, 1);
	for (unsigned i = 1; !atomic_load(&l->stop); i++) {
		for (volatile int k = 0; k < 1000; k++)
			;
		weft_fiber_yield();
		if (i % 64 == 0 && shim_now() >= end) {
			atomic_fetch_add(&l->gave_up, 1);
			break;
		}
	}
	atomic_fetch_sub(&l->running, 1);
	return NULL;
}

/* CPU-bound and never yielding: it holds its worker until stopped. */
static void *spin_only(void *arg)
{
	struct load *l = arg;
	int64_t end = shim_now() + LOAD_BOUND_NS;
	atomic_fetch_add(&l->running, 1);
	atomic_fetch_add(&l->started, 1);
	for (unsigned i = 1; !atomic_load(&l->stop); i++) {
		if (i % 4096 == 0 && shim_now() >= end) {
			atomic_fetch_add(&l->gave_up, 1);
			break;
		}
	}
	atomic_fetch_sub(&l->running, 1);
	return NULL;
}

static void *read_under_load(void *arg)
{
	struct load *l = arg;
	atomic_store(&l->waiting, 1);
	/* Bounded too: past the load's bound every worker is idle and, under
	 * the virtual clock, the clock jumps here. */
	l->r = weft_fd_wait(l->p[0], WEFT_IO_IN, wt_ms(60000));
	l->running_at_wake = atomic_load(&l->running);
	if (l->r > 0 && wt_read(l->p[0], &l->got, 1) != 1)
		l->got = 0;
	atomic_store(&l->stop, 1);
	return NULL;
}

/* On the test's own thread, without weft's clock or timers (they may be
 * virtual): until *v reaches want, or the bound. */
static int wait_count(_Atomic int *v, int want)
{
	int64_t end = shim_now() + LOAD_BOUND_NS;
	while (atomic_load(v) < want) {
		if (shim_now() >= end)
			return 0;
		wt_thread_yield();
	}
	return 1;
}

/* n load fibers made by fn keep the workers busy; a fiber waits for a byte
 * on a pipe and a plain thread (the test's) writes it. The reader must be
 * woken, and stop the load, while the load still runs: busy workers look at
 * the reactor at bounded intervals (reactor.c, weft__io_tick), or an idle
 * one blocks in it. A worker that always finds work never runs dry, so
 * without those looks the byte would be seen only once the load gave up.
 * The byte may come before or after the reader parks: either way only a
 * look at the reactor delivers it. */
static void readiness_under_load(unsigned workers, unsigned flags, weft_fn fn, int n)
{
	wt_restart(workers, flags);
	struct load l = {0};
	wt_pipe(l.p);
	weft_fiber_t f[LOAD_FIBERS];
	for (int i = 0; i < n; i++)
		f[i] = wt_spawn(fn, &l);
	assert_true(wait_count(&l.started, n));
	weft_fiber_t rd = wt_spawn(read_under_load, &l);
	assert_true(wait_count(&l.waiting, 1));
	assert_int_equal(wt_write(l.p[1], "L", 1), 1);
	/* No deadline of their own: each fiber bounds itself. */
	assert_int_equal(weft_fiber_join(rd, -1, NULL, NULL), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(weft_fiber_join(f[i], -1, NULL, NULL), 0);
	assert_int_equal(l.r, WEFT_IO_IN);
	assert_int_equal(l.got, 'L');
	assert_int_equal(l.running_at_wake, n);       /* woken under the load ... */
	assert_int_equal(atomic_load(&l.gave_up), 0); /* ... which it stopped */
	wt_close(l.p[0]);
	wt_close(l.p[1]);
	wt_restart_default();
}

static void test_readiness_under_load_one_worker(void **state)
{
	(void)state;
	readiness_under_load(1, WEFT_CFG_REAL_CLOCK, spin_and_yield, LOAD_FIBERS);
}

static void test_readiness_under_load_two_workers(void **state)
{
	(void)state;
	readiness_under_load(2, WEFT_CFG_REAL_CLOCK, spin_and_yield, LOAD_FIBERS);
}

/* The interval is real time: the virtual clock does not move under load. */
static void test_readiness_under_load_virtual_clock(void **state)
{
	(void)state;
	readiness_under_load(2, WEFT_CFG_VIRTUAL_CLOCK, spin_and_yield, LOAD_FIBERS);
}

/* One fiber that never yields holds one of two workers: the other, idle,
 * blocks in the reactor's poll. */
static void test_readiness_beside_a_spinner(void **state)
{
	(void)state;
	readiness_under_load(2, WEFT_CFG_REAL_CLOCK, spin_only, 1);
}

/* ---- Offload ------------------------------------------------------------- */

struct blocker {
	_Atomic int release;
	_Atomic int started;
};

/* Blocks its helper thread (not a worker) until released. */
static void *block_in_kernel(void *arg)
{
	struct blocker *b = arg;
	atomic_store(&b->started, 1);
	for (int i = 0; i < 20000 && !atomic_load(&b->release); i++)
		wt_thread_yield();
	while (!atomic_load(&b->release))
		wt_thread_yield();
	return (void *)0x5a;
}

struct offload_call {
	struct blocker *b;
	int r;
	void *result;
	int after_cancel; /* what the next suspension returned */
};

static void *call_offload(void *arg)
{
	struct offload_call *c = arg;
	c->r = weft_offload(block_in_kernel, c->b, &c->result);
	c->after_cancel = weft_fiber_yield();
	return NULL;
}

static void *set_flag(void *arg)
{
	atomic_store((_Atomic int *)arg, 1);
	return NULL;
}

static void test_offload_leaves_workers_free(void **state)
{
	(void)state;
	/* As many blocking calls as there are workers (each on its helper
	 * thread, up to 4): if a call held its worker, no worker would be
	 * left to run set_flag and the wait below would fail. */
	enum { MAX = 4 };
	unsigned n = weft_workers() < MAX ? weft_workers() : MAX;
	struct blocker b = {0};
	struct offload_call c[MAX];
	weft_fiber_t f[MAX];
	for (unsigned i = 0; i < n; i++) {
		c[i] = (struct offload_call){.b = &b};
		f[i] = wt_spawn(call_offload, &c[i]);
	}
	assert_true(wt_wait_flag(&b.started));
	_Atomic int ran = 0;
	weft_fiber_t g = wt_spawn(set_flag, (void *)&ran);
	assert_true(wt_wait_flag(&ran));
	wt_join(g);
	atomic_store(&b.release, 1);
	for (unsigned i = 0; i < n; i++) {
		wt_join(f[i]);
		assert_int_equal(c[i].r, 0);
		assert_ptr_equal(c[i].result, (void *)0x5a);
		assert_int_equal(c[i].after_cancel, 0);
	}
}

static void test_offload_not_interrupted_by_cancel(void **state)
{
	(void)state;
	struct blocker b = {0};
	struct offload_call c = {.b = &b};
	weft_fiber_t f = wt_spawn_named(call_offload, &c, "caller");
	assert_true(wt_wait_flag(&b.started));
	/* Cancelled while it waits for the helper thread. */
	assert_true(wt_wait_parked("caller", "future"));
	assert_int_equal(weft_fiber_cancel(f), 0);
	atomic_store(&b.release, 1);
	wt_join(f);
	/* The call completed; the request waited for the next suspension. */
	assert_int_equal(c.r, 0);
	assert_ptr_equal(c.result, (void *)0x5a);
	assert_int_equal(c.after_cancel, -ECANCELED);
}

static void *return_arg(void *arg) { return arg; }

static void test_offload_more_calls_than_helpers(void **state)
{
	(void)state;
	/* More calls than helper threads, one after another from a plain
	 * thread: each completes with its own result. */
	for (int i = 0; i < 50; i++) {
		void *r = NULL;
		assert_int_equal(weft_offload(return_arg, (void *)(intptr_t)(i + 1), &r), 0);
		assert_ptr_equal(r, (void *)(intptr_t)(i + 1));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_pipe_wakes_fiber),
		cmocka_unit_test(test_pipe_wakes_thread),
		cmocka_unit_test(test_pipe_wakes_thread_one_worker),
		cmocka_unit_test(test_ready_fd_returns_at_once),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_cancel_while_waiting),
		cmocka_unit_test(test_second_reader_busy),
		cmocka_unit_test(test_forget_wakes_waiter),
		cmocka_unit_test(test_reader_and_writer_on_one_fd),
		cmocka_unit_test(test_hangup_is_reported),
		cmocka_unit_test(test_many_fds_in_a_chain),
		cmocka_unit_test(test_drained_wait_keeps_a_report),
		cmocka_unit_test(test_reused_number_starts_clean),
		cmocka_unit_test(test_readiness_under_load_one_worker),
		cmocka_unit_test(test_readiness_under_load_two_workers),
		cmocka_unit_test(test_readiness_under_load_virtual_clock),
		cmocka_unit_test(test_readiness_beside_a_spinner),
		cmocka_unit_test(test_offload_leaves_workers_free),
		cmocka_unit_test(test_offload_not_interrupted_by_cancel),
		cmocka_unit_test(test_offload_more_calls_than_helpers),
	};
	return WT_MAIN("io", tests, wt_start, wt_stop);
}
