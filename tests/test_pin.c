/* SPDX-License-Identifier: MIT */
/* Pinned fibers (weft_fiber_pin, WEFT_ATTR_PIN): a pinned fiber resumes on
 * its worker after every kind of wait (a yield, a sleep, a channel, a
 * future settled by a plain thread, I/O), with 1, 2 and 16 workers and
 * unpinned fibers keeping every worker busy and stealing; the attribute pins
 * to the spawner's worker (worker 0 from a plain thread); weft_dump shows the
 * pin; bad arguments. The checks are on weft_worker_index after each wait:
 * a pinned fiber seen once on another worker fails the test. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "sleepers.h"

#define PINNED_PER_WORKER 2
/* Bare metal has 16 I/O sources, a test pipe takes one: there the first
 * IO_FIBERS pinned fibers (on as many workers) wait on I/O. */
#define IO_FIBERS 6

struct pinned {
	int worker; /* where it pins itself */
	weft_chan_t *in;
	bool io; /* waits on a pipe too */
	int pipe[2];
	int rounds;
	_Atomic int resumes; /* waits it came back from, on its worker */
	_Atomic int strays;  /* ... on another one */
	_Atomic int failed;  /* a wait that did not end as it should */
};

static _Atomic int noise_stop;

static void check_here(struct pinned *p)
{
	if (weft_worker_index() == p->worker)
		atomic_fetch_add(&p->resumes, 1);
	else
		atomic_fetch_add(&p->strays, 1);
}

static void *pinned_main(void *arg)
{
	struct pinned *p = arg;
	if (weft_fiber_pin(p->worker) != 0) {
		atomic_fetch_add(&p->failed, 1);
		return NULL;
	}
	check_here(p);
	for (int r = 0; r < p->rounds; r++) {
		for (int i = 0; i < 3; i++) {
			weft_fiber_yield();
			check_here(p);
		}
		weft_sleep_until(weft_deadline_in(100000)); /* 0.1 ms */
		check_here(p);
		int v;
		if (weft_chan_recv(p->in, &v, wt_ms(30000)) != 0 || v != r)
			atomic_fetch_add(&p->failed, 1);
		check_here(p);
		if (!p->io)
			continue;
		if (weft_fd_wait(p->pipe[0], WEFT_IO_IN, wt_ms(30000)) <= 0)
			atomic_fetch_add(&p->failed, 1);
		check_here(p);
		char c;
		if (wt_read(p->pipe[0], &c, 1) != 1)
			atomic_fetch_add(&p->failed, 1);
	}
	return NULL;
}

/* Unpinned and CPU-bound: every worker has work, and idle ones steal. */
static void *noise(void *arg)
{
	(void)arg;
	int64_t limit = wt_ms(60000);
	while (!atomic_load(&noise_stop) && weft_now() < limit)
		for (int i = 0; i < 200 && !atomic_load(&noise_stop); i++)
			weft_fiber_yield();
	return NULL;
}

/* Feeds every pinned fiber its round's message and byte, unpinned, from
 * whatever worker runs it. */
struct feed {
	struct pinned *p;
	int n, rounds;
};

static void *feeder(void *arg)
{
	struct feed *fd = arg;
	for (int r = 0; r < fd->rounds; r++)
		for (int i = 0; i < fd->n; i++) {
			if (weft_chan_send(fd->p[i].in, &r, wt_ms(30000)) != 0)
				return (void *)1;
			if (fd->p[i].io && wt_write(fd->p[i].pipe[1], "x", 1) != 1)
				return (void *)2;
		}
	return NULL;
}

static void resume_on_its_worker(unsigned workers)
{
	wt_restart(workers, 0);
	int n = (int)workers * (workers > 2 ? 1 : PINNED_PER_WORKER), nio = 0;
	int rounds = wt_sanitized() ? 5 : 20;
	struct pinned *p = calloc((size_t)n, sizeof *p);
	assert_non_null(p);
	weft_fiber_t *pf = calloc((size_t)n, sizeof *pf), nf[2], ff;
	assert_non_null(pf);
	atomic_store(&noise_stop, 0);
	for (int i = 0; i < 2; i++)
		nf[i] = wt_spawn(noise, NULL);
	for (int i = 0; i < n; i++) {
		p[i].worker = i % (int)workers;
		p[i].rounds = rounds;
		assert_int_equal(weft_chan_create(&p[i].in, sizeof(int), 0), 0);
		if ((p[i].io = WT_LINUX || i < IO_FIBERS)) {
			wt_pipe(p[i].pipe);
			nio++;
		}
		pf[i] = wt_spawn(pinned_main, &p[i]);
	}
	struct feed fd = {p, n, rounds};
	ff = wt_spawn(feeder, &fd);
	assert_null(wt_join(ff));
	int resumes = 0, strays = 0;
	for (int i = 0; i < n; i++) {
		assert_null(wt_join(pf[i]));
		assert_int_equal(atomic_load(&p[i].failed), 0);
		resumes += atomic_load(&p[i].resumes);
		strays += atomic_load(&p[i].strays);
		if (p[i].io) {
			wt_close(p[i].pipe[0]);
			wt_close(p[i].pipe[1]);
		}
		assert_int_equal(weft_chan_destroy(p[i].in), 0);
	}
	atomic_store(&noise_stop, 1);
	for (int i = 0; i < 2; i++)
		assert_null(wt_join(nf[i]));
	print_message("%u workers: %d pinned fibers came back from %d waits, %d elsewhere\n",
		      workers, n, resumes, strays);
	/* Every wait of every round, plus the move. */
	assert_int_equal(resumes, n * (1 + rounds * 5) + nio * rounds);
	assert_int_equal(strays, 0);
	free(pf);
	free(p);
	wt_restart_default();
}

static void test_pinned_resume_1_worker(void **state)
{
	(void)state;
	resume_on_its_worker(1);
}

static void test_pinned_resume_2_workers(void **state)
{
	(void)state;
	resume_on_its_worker(2);
}

static void test_pinned_resume_16_workers(void **state)
{
	(void)state;
	resume_on_its_worker(16);
}

/* ---- A future settled by a plain thread --------------------------------- */

struct by_thread {
	weft_future_t *fut;
	int worker, seen;
	_Atomic int ran; /* its await has returned */
};

static void *await_pinned(void *arg)
{
	struct by_thread *b = arg;
	if (weft_fiber_pin(b->worker))
		return (void *)1;
	void *v;
	int r = weft_future_await(b->fut, wt_ms(30000), &v);
	b->seen = weft_worker_index();
	atomic_store(&b->ran, 1);
	if (r != 0 || v != (void *)b)
		return (void *)2;
	return NULL;
}

static void *settle_from_thread(void *arg)
{
	struct by_thread *b = arg;
	weft_future_resolve(b->fut, b);
	return NULL;
}

/* The plain thread's wake puts the fiber in its worker's inbox, and must
 * wake that worker, asleep by then (the fiber has parked; wt_let_workers_sleep).
 * The await's own deadline (30 s) would wake it anyway (an idle worker
 * sleeps until the earliest timer), so what is asserted is that the fiber
 * ran within 5 s of the wake: well under that rescue, and far more than a
 * wake takes under TSan or qemu on a loaded machine. */
static void test_pinned_woken_by_plain_thread(void **state)
{
	(void)state;
	wt_restart(2, 0);
	struct by_thread b = {.worker = 1, .seen = -1};
	assert_int_equal(weft_future_create(&b.fut), 0);
	weft_fiber_t f = wt_spawn_named(await_pinned, &b, "pinned-await");
	assert_true(wt_wait_parked("pinned-await", "future"));
	wt_let_workers_sleep();
	int64_t bound = wt_ms(5000);
	wt_thread_t t = wt_thread_start(settle_from_thread, &b);
	wt_thread_join(t);
	while (!atomic_load(&b.ran) && weft_now() < bound)
		weft_sleep_until(wt_ms(1)); /* a plain thread: a real sleep */
	int ran = atomic_load(&b.ran);
	if (!ran)
		print_message("the pinned fiber did not run within 5 s of the wake\n");
	assert_true(ran);
	assert_null(wt_join(f));
	assert_int_equal(b.seen, 1);
	assert_int_equal(weft_future_release(b.fut), 0);
	wt_restart_default();
}

/* ---- The attribute ------------------------------------------------------ */

struct attr_case {
	int parent_worker, child_worker[8];
};

static void *child_where(void *arg)
{
	int *out = arg;
	int w = weft_worker_index();
	for (int i = 0; i < 20; i++) {
		weft_fiber_yield();
		weft_sleep_until(weft_deadline_in(50000));
		if (weft_worker_index() != w)
			return (void *)1;
	}
	*out = w;
	return NULL;
}

static void *attr_parent(void *arg)
{
	struct attr_case *a = arg;
	if (weft_fiber_pin((int)weft_workers() - 1))
		return (void *)1;
	a->parent_worker = weft_worker_index();
	weft_attr_t attr = {.flags = WEFT_ATTR_PIN};
	weft_fiber_t c[8];
	for (int i = 0; i < 8; i++)
		if (weft_fiber_spawn(&c[i], &attr, child_where, &a->child_worker[i]))
			return (void *)2;
	if (weft_fiber_unpin())
		return (void *)3;
	for (int i = 0; i < 8; i++)
		if (weft_fiber_join(c[i], wt_ms(30000), NULL, NULL))
			return (void *)4;
	return NULL;
}

static void test_attr_pins_to_the_spawners_worker(void **state)
{
	(void)state;
	wt_restart(2, 0);
	struct attr_case a;
	memset(&a, 0xff, sizeof a);
	assert_null(wt_run_fiber(attr_parent, &a));
	assert_int_equal(a.parent_worker, 1);
	for (int i = 0; i < 8; i++)
		assert_int_equal(a.child_worker[i], 1);
	/* From a plain thread: worker 0. */
	weft_attr_t attr = {.flags = WEFT_ATTR_PIN};
	int where[4];
	weft_fiber_t c[4];
	for (int i = 0; i < 4; i++)
		assert_int_equal(weft_fiber_spawn(&c[i], &attr, child_where, &where[i]), 0);
	for (int i = 0; i < 4; i++) {
		assert_null(wt_join(c[i]));
		assert_int_equal(where[i], 0);
	}
	wt_restart_default();
}

/* ---- weft_dump, errors -------------------------------------------------- */

static void *park_pinned(void *arg)
{
	weft_future_t *fut = arg;
	if (weft_fiber_pin((int)weft_workers() - 1))
		return (void *)1;
	return (void *)(intptr_t)weft_future_await(fut, wt_ms(30000), NULL);
}

static void test_dump_shows_the_pin(void **state)
{
	(void)state;
	wt_restart(2, 0);
	weft_future_t *fut;
	assert_int_equal(weft_future_create(&fut), 0);
	weft_fiber_t f = wt_spawn_named(park_pinned, fut, "pin-dumped");
	assert_true(wt_wait_parked("pin-dumped", "future"));
	char line[512];
	assert_true(wt_dump_line("pin-dumped", line, sizeof line));
	print_message("%s\n", line);
	assert_non_null(strstr(line, ", pinned to worker 1"));
	weft_future_resolve(fut, NULL);
	assert_null(wt_join(f));
	assert_int_equal(weft_future_release(fut), 0);
	wt_restart_default();
}

static void *pin_errors(void *arg)
{
	(void)arg;
	int n = (int)weft_workers();
	if (weft_fiber_pin(n) != -EINVAL || weft_fiber_pin(-2) != -EINVAL)
		return (void *)1;
	if (weft_fiber_pin(-1) != 0 || weft_fiber_unpin() != 0 || weft_fiber_unpin() != 0)
		return (void *)2;
	return NULL;
}

static void test_pin_errors(void **state)
{
	(void)state;
	assert_null(wt_run_fiber(pin_errors, NULL));
	/* Not from a fiber. */
	assert_int_equal(weft_fiber_pin(0), -EPERM);
	assert_int_equal(weft_fiber_unpin(), -EPERM);
	weft_attr_t attr = {.flags = WEFT_ATTR_HIGH << 1};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, &attr, pin_errors, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pin_errors),
		cmocka_unit_test(test_pinned_resume_1_worker),
		cmocka_unit_test(test_pinned_resume_2_workers),
		cmocka_unit_test(test_pinned_resume_16_workers),
		cmocka_unit_test(test_pinned_woken_by_plain_thread),
		cmocka_unit_test(test_attr_pins_to_the_spawners_worker),
		cmocka_unit_test(test_dump_shows_the_pin),
	};
	return WT_MAIN("pin", tests, wt_start, wt_stop);
}
