/* SPDX-License-Identifier: MIT */
/* weft.h's promise about deadlines: -1 waits forever, and every other value
 * that is already past, any negative one included, behaves as 0. A sign slip
 * in a relative timeout (weft_now() - x, or a negative count of ns added to
 * 0) must make a call give up, never wait forever. Every blocking call of
 * weft.h is made here with the deadlines below, on something that would
 * block, from a fiber and (where the call is open to them) from a plain
 * thread. weft_net.h's calls are tested in test_net (test_negative_deadlines),
 * which has the network stacks up. */
#include <limits.h>
#include <string.h>

#include "testutil.h"

static const int64_t past[] = {-2, -5, -1000000000, INT64_MIN};
#define NPAST (sizeof past / sizeof past[0])

/* What a call made with a past deadline must not do: wait. The fiber or
 * thread making the calls is given this long to make them all (about 30
 * calls, each of which returns at once when the promise holds). */
#define ALL_CALLS_MS 20000

/* ---- Things that block ------------------------------------------------------ */

struct blockers {
	weft_sem_t *gate;     /* released at the end: lets the helpers finish */
	weft_sem_t *zero;     /* never released */
	weft_chan_t *chan;    /* unbuffered, nobody on the other end */
	weft_future_t *fut;   /* never settled */
	weft_waitgroup_t *wg; /* count 1, never done */
	weft_mutex_t *held;   /* held by the holder fiber */
	weft_mutex_t *mine;   /* for cond_wait, taken by the caller */
	weft_cond_t *cond;    /* never signalled */
	weft_fiber_t holder;  /* holds held until gate; never ends before */
	weft_fiber_t owner;   /* a mailbox of capacity 1, kept full */
	weft_gen_t *gen;      /* never yields; holds cancellation off */
	_Atomic int holding, owning, generating;
	int pipe[2]; /* nothing is written to pipe[1] */
};

static struct blockers B;

static void *holder_fn(void *arg)
{
	(void)arg;
	if (weft_mutex_lock(B.held, -1) != 0)
		return (void *)1;
	atomic_store(&B.holding, 1);
	weft_sem_acquire(B.gate, -1);
	weft_mutex_unlock(B.held);
	return NULL;
}

static void *owner_fn(void *arg)
{
	(void)arg;
	weft_mailbox_set_cap(1);
	atomic_store(&B.owning, 1);
	weft_sem_acquire(B.gate, -1);
	char m[8];
	while (weft_mailbox_recv(m, sizeof m, NULL, 0) == 0) {
	}
	return NULL;
}

static void *gen_fn(void *arg)
{
	(void)arg;
	weft_fiber_cancel_hold(); /* so that a destroy must wait for it */
	atomic_store(&B.generating, 1);
	weft_sem_acquire(B.gate, -1);
	return NULL;
}

static void blockers_make(void)
{
	memset(&B, 0, sizeof B);
	assert_int_equal(weft_sem_create(&B.gate, 0), 0);
	assert_int_equal(weft_sem_create(&B.zero, 0), 0);
	assert_int_equal(weft_chan_create(&B.chan, sizeof(int), 0), 0);
	assert_int_equal(weft_future_create(&B.fut), 0);
	assert_int_equal(weft_waitgroup_create(&B.wg), 0);
	assert_int_equal(weft_waitgroup_add(B.wg, 1), 0);
	assert_int_equal(weft_mutex_create(&B.held), 0);
	assert_int_equal(weft_mutex_create(&B.mine), 0);
	assert_int_equal(weft_cond_create(&B.cond), 0);
	assert_int_equal(weft_gen_create(&B.gen, NULL, gen_fn, NULL), 0);
	wt_pipe(B.pipe);
	B.holder = wt_spawn(holder_fn, NULL);
	B.owner = wt_spawn(owner_fn, NULL);
	assert_true(wt_wait_flag(&B.holding));
	assert_true(wt_wait_flag(&B.owning));
	/* Started, and holding cancellation off (a destroy before its start
	 * would end it without running it). */
	assert_int_equal(weft_gen_next(B.gen, 0, NULL), -ETIMEDOUT);
	assert_true(wt_wait_flag(&B.generating));
	/* Fill the owner's mailbox (capacity 1). */
	assert_int_equal(weft_mailbox_send(B.owner, "x", 1, -1), 0);
}

static void blockers_free(void)
{
	for (int i = 0; i < 8; i++)
		assert_int_equal(weft_sem_release(B.gate), 0);
	assert_null(wt_join(B.holder));
	assert_null(wt_join(B.owner));
	int st = 1;
	assert_int_equal(weft_gen_destroy(B.gen, wt_ms(30000), &st), 0);
	assert_int_equal(weft_waitgroup_done(B.wg), 0);
	assert_int_equal(weft_future_resolve(B.fut, NULL), 0);
	assert_int_equal(weft_future_release(B.fut), 0);
	assert_int_equal(weft_chan_destroy(B.chan), 0);
	assert_int_equal(weft_waitgroup_destroy(B.wg), 0);
	assert_int_equal(weft_cond_destroy(B.cond), 0);
	assert_int_equal(weft_mutex_destroy(B.mine), 0);
	assert_int_equal(weft_mutex_destroy(B.held), 0);
	assert_int_equal(weft_sem_destroy(B.zero), 0);
	assert_int_equal(weft_sem_destroy(B.gate), 0);
	wt_close(B.pipe[0]);
	wt_close(B.pipe[1]);
}

/* ---- The calls ------------------------------------------------------------------ */

#define NCALLS 32

struct run {
	int64_t d;
	int thread;     /* a plain thread: no mailbox of its own */
	_Atomic int at; /* the call being made (for a report if one waits) */
	_Atomic int done;
	int n;
	const char *name[NCALLS];
	long got[NCALLS];
	long want[NCALLS];
};

static const char *current(struct run *r)
{
	int at = atomic_load(&r->at);
	return at < NCALLS && r->name[at] ? r->name[at] : "?";
}

#define CALL(r, label, expr, expected)           \
	do {                                     \
		(r)->name[(r)->n] = (label);     \
		atomic_store(&(r)->at, (r)->n);  \
		(r)->want[(r)->n] = (expected);  \
		(r)->got[(r)->n] = (long)(expr); \
		(r)->n++;                        \
	} while (0)

static void *make_calls(void *arg)
{
	struct run *r = arg;
	int64_t d = r->d;
	int v = 7;
	void *val = NULL;
	size_t idx = 0;
	weft_future_t *fs[1] = {B.fut};
	void *vals[1];

	CALL(r, "weft_sleep_until", weft_sleep_until(d), 0);
	CALL(r, "weft_fiber_join", weft_fiber_join(B.holder, d, &val, NULL), -ETIMEDOUT);
	int st = 0;
	CALL(r, "weft_fiber_join with status", weft_fiber_join(B.holder, d, &val, &st), -ETIMEDOUT);
	CALL(r, "weft_future_await", weft_future_await(B.fut, d, &val), -ETIMEDOUT);
	CALL(r, "weft_chan_send", weft_chan_send(B.chan, &v, d), -ETIMEDOUT);
	CALL(r, "weft_chan_recv", weft_chan_recv(B.chan, &v, d), -ETIMEDOUT);
	CALL(r, "weft_future_all", weft_future_all(fs, 1, d, vals, &idx), -ETIMEDOUT);
	int errs[1];
	CALL(r, "weft_future_all_settled", weft_future_all_settled(fs, 1, d, vals, errs),
	     -ETIMEDOUT);
	CALL(r, "weft_future_any", weft_future_any(fs, 1, d, &idx, &val), -ETIMEDOUT);
	CALL(r, "weft_future_race", weft_future_race(fs, 1, d, &idx, &val), -ETIMEDOUT);
	weft_select_case_t cs[2] = {
		{.op = WEFT_SELECT_RECV, .chan = B.chan, .elem = &v},
		{.op = WEFT_SELECT_FUTURE, .future = B.fut},
	};
	CALL(r, "weft_select", weft_select(cs, 2, d), -ETIMEDOUT);
	CALL(r, "weft_mutex_lock", weft_mutex_lock(B.held, d), -ETIMEDOUT);
	if (weft_mutex_lock(B.mine, -1) == 0) {
		CALL(r, "weft_cond_wait", weft_cond_wait(B.cond, B.mine, d), -ETIMEDOUT);
		/* ... and it holds the mutex again, as after any timeout. */
		CALL(r, "weft_mutex_unlock after weft_cond_wait", weft_mutex_unlock(B.mine), 0);
	}
	CALL(r, "weft_waitgroup_wait", weft_waitgroup_wait(B.wg, d), -ETIMEDOUT);
	CALL(r, "weft_sem_acquire", weft_sem_acquire(B.zero, d), -ETIMEDOUT);
	CALL(r, "weft_mailbox_send", weft_mailbox_send(B.owner, "y", 1, d), -ETIMEDOUT);
	if (!r->thread) {
		char m[8];
		CALL(r, "weft_mailbox_recv", weft_mailbox_recv(m, sizeof m, NULL, d), -ETIMEDOUT);
	}
	CALL(r, "weft_gen_next", weft_gen_next(B.gen, d, &val), -ETIMEDOUT);
	CALL(r, "weft_gen_destroy", weft_gen_destroy(B.gen, d, &st), -ETIMEDOUT);
	CALL(r, "weft_fd_wait", weft_fd_wait(B.pipe[0], WEFT_IO_IN, d), -ETIMEDOUT);
	atomic_store(&r->at, NCALLS);
	atomic_store(&r->done, 1);
	return NULL;
}

static void check(struct run *r, const char *who)
{
	for (int i = 0; i < r->n; i++) {
		if (r->got[i] != r->want[i]) {
			print_message("%s, deadline %lld: %s returned %ld, not %ld\n", who,
				      (long long)r->d, r->name[i], r->got[i], r->want[i]);
			fail();
		}
	}
	assert_true(r->n >= 19);
}

/* From a fiber: each call returns at once (the fiber is joined with a
 * bound; one that waited would be reported by name). */
static void test_past_deadlines_in_fiber(void **state)
{
	(void)state;
	blockers_make();
	for (size_t i = 0; i < NPAST; i++) {
		struct run r = {.d = past[i]};
		weft_fiber_t f = wt_spawn(make_calls, &r);
		int j = weft_fiber_join(f, wt_ms(ALL_CALLS_MS), NULL, NULL);
		if (j != 0) {
			print_message("fiber, deadline %lld: %s is still waiting\n", (long long)r.d,
				      current(&r));
			fail();
		}
		check(&r, "fiber");
	}
	blockers_free();
}

static void *thread_calls(void *arg) { return make_calls(arg); }

/* From a plain thread, which blocks on its own futex instead of parking. */
static void test_past_deadlines_in_thread(void **state)
{
	(void)state;
	blockers_make();
	for (size_t i = 0; i < NPAST; i++) {
		struct run r = {.d = past[i], .thread = 1};
		wt_thread_t t = wt_thread_start(thread_calls, &r);
		int64_t end = wt_ms(ALL_CALLS_MS);
		while (!atomic_load(&r.done) && weft_now() < end)
			wt_thread_yield();
		if (!atomic_load(&r.done)) {
			print_message("thread, deadline %lld: %s is still waiting\n",
				      (long long)r.d, current(&r));
			fail(); /* the thread is left blocked: the suite ends here */
		}
		wt_thread_join(t);
		check(&r, "thread");
	}
	blockers_free();
}

/* ---- weft_step_wake_at: past means "as soon as the call returns" -------------- */

struct stepper {
	int64_t d;
	_Atomic int fired;
};

static int step_init(weft_step_t *p)
{
	struct stepper *s = weft_step_arg(p);
	return weft_step_wake_at(p, s->d) == 0 ? WEFT_STEP_CONTINUE : WEFT_STEP_DONE;
}

static int step_step(weft_step_t *p, unsigned ev)
{
	struct stepper *s = weft_step_arg(p);
	if (ev & WEFT_STEP_EV_TIMER)
		atomic_store(&s->fired, 1);
	return ev & (WEFT_STEP_EV_TIMER | WEFT_STEP_EV_CANCEL) ? WEFT_STEP_DONE
							       : WEFT_STEP_CONTINUE;
}

static const weft_step_ops_t step_ops = {.init = step_init, .step = step_step};

static void test_step_wake_at_past(void **state)
{
	(void)state;
	for (size_t i = 0; i < NPAST; i++) {
		struct stepper s = {.d = past[i]};
		weft_pid_t pid;
		assert_int_equal(weft_step_spawn(&pid, &step_ops, &s), 0);
		if (!wt_wait_flag(&s.fired)) {
			print_message("weft_step_wake_at(%lld) did not fire\n", (long long)s.d);
			fail();
		}
	}
	/* -1 still disarms: such a process is ended by a cancel, not a timer. */
	struct stepper s = {.d = -1};
	weft_pid_t pid;
	assert_int_equal(weft_step_spawn(&pid, &step_ops, &s), 0);
	weft_sleep_until(wt_ms(50));
	assert_int_equal(atomic_load(&s.fired), 0);
	assert_int_equal(weft_step_cancel(pid), 0);
}

/* ---- Calls on the runtime itself -------------------------------------------------- */

static _Atomic int stuck_started;

static void *stuck_fn(void *arg)
{
	weft_sem_t *gate = arg;
	weft_fiber_cancel_hold(); /* a straggler at any deadline */
	atomic_store(&stuck_started, 1);
	weft_sem_acquire(gate, -1);
	return NULL;
}

static int stragglers;
static void count_straggler(uint64_t fiber, const char *name, const char *file, int line, void *ctx)
{
	(void)fiber, (void)name, (void)file, (void)line, (void)ctx;
	stragglers++;
}

/* weft_shutdown_grace(past) reports the straggler at once instead of
 * waiting for it. */
static void test_shutdown_grace_past(void **state)
{
	(void)state;
	for (size_t i = 0; i < NPAST; i++) {
		assert_int_equal(weft_init(NULL), 0);
		weft_sem_t *gate;
		assert_int_equal(weft_sem_create(&gate, 0), 0);
		atomic_store(&stuck_started, 0);
		weft_fiber_t f = wt_spawn(stuck_fn, gate);
		assert_true(wt_wait_flag(&stuck_started));
		stragglers = 0;
		assert_int_equal(weft_shutdown_grace(past[i], count_straggler, NULL), 1);
		assert_int_equal(stragglers, 1);
		assert_int_equal(weft_sem_release(gate), 0);
		assert_null(wt_join(f));
		assert_int_equal(weft_shutdown_grace(-1, count_straggler, NULL), 0);
		assert_int_equal(weft_sem_destroy(gate), 0);
	}
}

/* weft_poll(past) with only a parked fiber returns instead of waiting for
 * it. */
static void test_poll_past(void **state)
{
	(void)state;
	weft_config_t cfg = {.flags = WEFT_CFG_HOST_LOOP};
	assert_int_equal(weft_init(&cfg), 0);
	weft_sem_t *gate;
	assert_int_equal(weft_sem_create(&gate, 0), 0);
	atomic_store(&stuck_started, 0);
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, stuck_fn, gate), 0);
	while (!atomic_load(&stuck_started))
		assert_true(weft_poll(0) >= 0);
	for (size_t i = 0; i < NPAST; i++)
		assert_int_equal(weft_poll(past[i]), 0);
	assert_int_equal(weft_sem_release(gate), 0);
	void *res = (void *)1;
	int64_t end = wt_ms(30000);
	int r;
	while ((r = weft_fiber_join(f, 0, &res, NULL)) == -ETIMEDOUT && weft_now() < end)
		assert_true(weft_poll(wt_ms(10)) >= 0);
	assert_int_equal(r, 0);
	assert_null(res);
	assert_int_equal(weft_sem_destroy(gate), 0);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_past_deadlines_in_fiber, wt_start_each,
						wt_stop_each),
		cmocka_unit_test_setup_teardown(test_past_deadlines_in_thread, wt_start_each,
						wt_stop_each),
		cmocka_unit_test_setup_teardown(test_step_wake_at_past, wt_start_each,
						wt_stop_each),
		cmocka_unit_test(test_shutdown_grace_past),
		cmocka_unit_test(test_poll_past),
	};
	return WT_MAIN("deadline", tests, NULL, NULL);
}
