/* SPDX-License-Identifier: MIT */
/* Exit status and supervisors.
 *
 * Status: ok on return and exit; the error set before an exit; cancelled when a
 * request was made (delivered, or still pending at the end); an explicit
 * status overriding either; a request after the end changing nothing; the
 * errors of each call; weft_fiber_join with status NULL unchanged.
 *
 * Supervisors: a report per supervised fiber naming it (the value its
 * spawner got, the pid it had itself), with its status and result, for held and detached fibers; the
 * mailbox closed before it, local-storage destructors run before it; the
 * fiber not finished (join, weft_run) until the report is taken; a closed
 * channel dropping it; a new cancellation interrupting a report nobody
 * reads, while an old one does not; a wrong channel refused; many fibers
 * through a small buffer to a supervisor fiber; and graceful shutdown with
 * a report nobody reads (its own group, on the virtual clock). */
#include <stdbool.h>
#include <string.h>

#include "testutil.h"

#define MS 1000000LL

/* ---- Exit status -------------------------------------------------------- */

static void *ret_arg(void *arg) { return arg; }

static void *exit_arg(void *arg)
{
	weft_fiber_exit(arg);
	return NULL;
}

static void *fail_eio(void *arg)
{
	(void)arg;
	weft_fiber_set_status(-EIO);
	weft_fiber_exit(NULL);
	return (void *)1;
}

static int status_of(weft_fiber_t f, void **result)
{
	int status = 1;
	assert_int_equal(weft_fiber_join(f, wt_ms(30000), result, &status), 0);
	return status;
}

static void test_status_ok_exit_fail(void **state)
{
	(void)state;
	void *r = NULL;
	assert_int_equal(status_of(wt_spawn(ret_arg, (void *)3), &r), 0);
	assert_ptr_equal(r, (void *)3);
	assert_int_equal(status_of(wt_spawn(exit_arg, (void *)4), &r), 0);
	assert_ptr_equal(r, (void *)4);
	r = (void *)1;
	assert_int_equal(status_of(wt_spawn(fail_eio, NULL), &r), -EIO);
	assert_null(r);
	/* Join without the status works as before, on a failed fiber too. */
	r = (void *)1;
	assert_int_equal(weft_fiber_join(wt_spawn(fail_eio, NULL), wt_ms(30000), &r, NULL), 0);
	assert_null(r);
	/* status and result may be NULL. */
	assert_int_equal(weft_fiber_join(wt_spawn(ret_arg, NULL), wt_ms(30000), NULL, NULL), 0);
}

struct bad_calls {
	int set_pos, set_neg, set_zero;
};

static void *bad_calls_fn(void *arg)
{
	struct bad_calls *b = arg;
	b->set_pos = weft_fiber_set_status(1);
	b->set_neg = weft_fiber_set_status(-EIO);
	b->set_zero = weft_fiber_set_status(0); /* the last call wins */
	return arg;
}

static void test_status_errors(void **state)
{
	(void)state;
	struct bad_calls b;
	memset(&b, 1, sizeof b);
	void *r;
	assert_int_equal(status_of(wt_spawn(bad_calls_fn, &b), &r), 0);
	assert_ptr_equal(r, &b);
	assert_int_equal(b.set_pos, -EINVAL);
	assert_int_equal(b.set_neg, 0);
	assert_int_equal(b.set_zero, 0);
	/* From a plain thread. */
	assert_int_equal(weft_fiber_set_status(0), -EPERM);
	/* A failed join leaves *status alone. */
	int status = 7;
	assert_int_equal(weft_fiber_join(0, 0, NULL, &status), -ESRCH);
	assert_int_equal(status, 7);
}

/* Cancelled while waiting: the delivered request makes it "cancelled". */
static void *awaits(void *arg) { return (void *)(intptr_t)weft_future_await(arg, -1, NULL); }

static void test_status_cancelled_delivered(void **state)
{
	(void)state;
	weft_future_t *never;
	assert_int_equal(weft_future_create(&never), 0);
	weft_fiber_t f = wt_spawn(awaits, never);
	int status = 7;
	assert_int_equal(weft_fiber_join(f, weft_deadline_in(MS), NULL, &status), -ETIMEDOUT);
	assert_int_equal(status, 7); /* not written */
	assert_int_equal(weft_fiber_cancel(f), 0);
	void *r;
	assert_int_equal(status_of(f, &r), -ECANCELED);
	assert_ptr_equal(r, (void *)(intptr_t)-ECANCELED);
	weft_future_release(never);
}

/* Cancelled while holding off, ending without blocking again: the request
 * was never delivered, and still counts. Or the fiber says otherwise. */
struct held {
	_Atomic int cancelled;
	int override;
	int r_release;
};

static void *holds(void *arg)
{
	struct held *h = arg;
	weft_fiber_cancel_hold();
	while (!atomic_load(&h->cancelled))
		weft_fiber_yield();
	h->r_release = weft_fiber_cancel_release();
	if (h->override)
		weft_fiber_set_status(h->override == 1 ? 0 : -EIO);
	return h;
}

static int held_case(int override)
{
	struct held h = {.override = override, .r_release = 1};
	weft_fiber_t f = wt_spawn(holds, &h);
	assert_int_equal(weft_fiber_cancel(f), 0);
	atomic_store(&h.cancelled, 1);
	void *r;
	int status = status_of(f, &r);
	assert_ptr_equal(r, &h);
	assert_int_equal(h.r_release, 0);
	return status;
}

static void test_status_cancelled_pending(void **state)
{
	(void)state;
	assert_int_equal(held_case(0), -ECANCELED);
}

static void test_status_set_overrides_cancel(void **state)
{
	(void)state;
	assert_int_equal(held_case(1), 0);
	assert_int_equal(held_case(2), -EIO);
}

/* ---- Supervisors -------------------------------------------------------- */

static weft_chan_t *mkchan(size_t cap)
{
	weft_chan_t *c;
	assert_int_equal(weft_chan_create(&c, sizeof(weft_exit_t), cap), 0);
	return c;
}

static weft_fiber_t spawn_sup(weft_chan_t *c, bool held, weft_fn fn, void *arg)
{
	weft_attr_t a = {.supervisor = c};
	weft_fiber_t f = 0;
	assert_int_equal(weft_fiber_spawn(held ? &f : NULL, &a, fn, arg), 0);
	return f;
}

static weft_exit_t recv_exit(weft_chan_t *c)
{
	weft_exit_t e;
	memset(&e, 0, sizeof e);
	assert_int_equal(weft_chan_recv(c, &e, wt_ms(30000)), 0);
	return e;
}

struct kid {
	weft_pid_t pid;
	weft_fiber_t self;
	int how; /* 0 return, 1 fail -EIO, 2 exit */
};

static void *kid_fn(void *arg)
{
	struct kid *k = arg;
	k->pid = weft_fiber_self();
	k->self = weft_fiber_self();
	if (k->how == 1) {
		weft_fiber_set_status(-EIO);
		weft_fiber_exit(NULL);
	}
	if (k->how == 2)
		weft_fiber_exit((void *)0xe);
	return k;
}

static void test_report_fields(void **state)
{
	(void)state;
	weft_chan_t *c = mkchan(4);
	struct kid k[3] = {{.how = 0}, {.how = 1}, {.how = 2}};
	weft_fiber_t f[3];
	for (int i = 0; i < 3; i++)
		f[i] = spawn_sup(c, true, kid_fn, &k[i]);
	for (int n = 0; n < 3; n++) {
		weft_exit_t e = recv_exit(c);
		int i = e.fiber == f[0] ? 0 : e.fiber == f[1] ? 1 : e.fiber == f[2] ? 2 : -1;
		assert_true(i >= 0);
		assert_true(e.fiber != 0);
		assert_int_equal(e.fiber, k[i].self);
		assert_int_equal(e.fiber, k[i].pid); /* one identity */
		if (i == 0) {
			assert_int_equal(e.status, 0);
			assert_ptr_equal(e.result, &k[0]);
		} else if (i == 1) {
			assert_int_equal(e.status, -EIO);
			assert_null(e.result);
		} else {
			assert_int_equal(e.status, 0);
			assert_ptr_equal(e.result, (void *)0xe);
		}
		/* The mailbox closed before the report. */
		assert_int_equal(weft_mailbox_send(e.fiber, "x", 1, 0), -ESRCH);
	}
	int status;
	assert_int_equal(weft_fiber_join(f[1], wt_ms(30000), NULL, &status), 0);
	assert_int_equal(status, -EIO);
	wt_join(f[0]);
	wt_join(f[2]);
	assert_int_equal(weft_chan_len(c), 0);
	weft_chan_destroy(c);
}

/* The report names the fiber by the value its spawner got, which is also
 * its pid: a message sent to that value while it runs reaches it. */
static void *recv_then_returns(void *arg)
{
	long v = 0;
	(void)arg;
	if (weft_mailbox_recv(&v, sizeof v, NULL, wt_ms(30000)))
		return NULL;
	return (void *)v;
}

static void test_report_names_fiber_and_pid(void **state)
{
	(void)state;
	weft_chan_t *c = mkchan(1);
	weft_fiber_t f = spawn_sup(c, true, recv_then_returns, NULL);
	long v = 77;
	assert_int_equal(weft_mailbox_send(f, &v, sizeof v, wt_ms(30000)), 0);
	weft_exit_t e = recv_exit(c);
	assert_int_equal(e.fiber, f);
	assert_ptr_equal(e.result, (void *)77);
	assert_int_equal(weft_mailbox_send(f, &v, sizeof v, 0), -ESRCH);
	wt_join(f);
	weft_chan_destroy(c);
}

static void test_detached(void **state)
{
	(void)state;
	weft_chan_t *c = mkchan(0);
	struct kid k = {.how = 1};
	assert_int_equal(spawn_sup(c, false, kid_fn, &k), 0);
	weft_exit_t e = recv_exit(c);
	assert_int_equal(e.fiber, k.pid);
	assert_int_equal(e.fiber, k.self);
	assert_int_equal(e.status, -EIO);
	/* The sender may still be inside its send: the channel must outlive
	 * it (weft_run: every fiber has finished). */
	assert_int_equal(weft_run(), 0);
	weft_chan_destroy(c);
}

/* The report is sent after local storage destructors, and the fiber has
 * not finished until the report is taken. */
static weft_fls_key_t key;
static _Atomic int dtor_ran;
static void note_dtor(void *p)
{
	(void)p;
	atomic_store(&dtor_ran, 1);
}

static void *sets_and_returns(void *arg)
{
	weft_fls_set(key, arg);
	return arg;
}

static void test_report_before_finish(void **state)
{
	(void)state;
	assert_int_equal(weft_fls_key_create(&key, note_dtor), 0);
	weft_chan_t *c = mkchan(0);
	weft_fiber_t f = spawn_sup(c, true, sets_and_returns, c);
	/* Rendezvous: it cannot have finished before a receive. */
	assert_int_equal(weft_fiber_join(f, 0, NULL, NULL), -ETIMEDOUT);
	weft_sleep_until(weft_deadline_in(MS)); /* usually blocked in the send by now */
	assert_int_equal(weft_fiber_join(f, 0, NULL, NULL), -ETIMEDOUT);
	weft_exit_t e = recv_exit(c);
	assert_int_equal(atomic_load(&dtor_ran), 1);
	assert_ptr_equal(e.result, c);
	void *r;
	assert_int_equal(status_of(f, &r), 0);
	assert_ptr_equal(r, c);
	weft_chan_destroy(c);
}

static void test_closed_channel_drops(void **state)
{
	(void)state;
	weft_chan_t *c = mkchan(0);
	assert_int_equal(weft_chan_close(c), 0);
	weft_fiber_t f = spawn_sup(c, true, ret_arg, (void *)5);
	void *r;
	assert_int_equal(status_of(f, &r), 0);
	assert_ptr_equal(r, (void *)5);
	weft_chan_destroy(c);
}

/* A request made before the end does not interrupt the report (it was
 * dropped at the end); one made after it does. */
struct ends {
	_Atomic int go;
};

static void *cancelled_then_returns(void *arg)
{
	struct ends *e = arg;
	weft_fiber_cancel_hold();
	while (!atomic_load(&e->go))
		weft_fiber_yield();
	weft_fiber_cancel_release();
	return e; /* with the request pending */
}

static void test_old_request_keeps_report(void **state)
{
	(void)state;
	weft_chan_t *c = mkchan(0);
	struct ends e = {0};
	weft_fiber_t f = spawn_sup(c, true, cancelled_then_returns, &e);
	assert_int_equal(weft_fiber_cancel(f), 0);
	atomic_store(&e.go, 1);
	weft_sleep_until(weft_deadline_in(MS)); /* usually blocked in the send by now */
	weft_exit_t x = recv_exit(c);
	assert_int_equal(x.status, -ECANCELED);
	assert_ptr_equal(x.result, &e);
	assert_int_equal(status_of(f, NULL), -ECANCELED);
	weft_chan_destroy(c);
}

static void *marks_and_fails(void *arg)
{
	atomic_store((_Atomic int *)arg, 1);
	weft_fiber_set_status(-EIO);
	return NULL;
}

static void test_new_request_drops_report(void **state)
{
	(void)state;
	weft_chan_t *c = mkchan(0);
	_Atomic int ending = 0;
	weft_fiber_t f = spawn_sup(c, true, marks_and_fails, &ending);
	assert_int_equal(wt_wait_flag(&ending), 1);
	/* A request made before its exit began is dropped there; repeat until
	 * one lands in the report's wait and ends it. Nobody ever receives. */
	int r, status = 1;
	while ((r = weft_fiber_join(f, weft_deadline_in(MS), NULL, &status)) == -ETIMEDOUT) {
		int rc = weft_fiber_cancel(f); /* -EALREADY: the last one did it */
		assert_true(rc == 0 || rc == -EALREADY);
	}
	assert_int_equal(r, 0);
	assert_int_equal(status, -EIO);
	weft_exit_t x;
	assert_int_equal(weft_chan_recv(c, &x, 0), -ETIMEDOUT); /* dropped */
	weft_chan_destroy(c);
}

/* A request made once the fiber has ended (here: its report is taken, so
 * its status is decided, but it may not have finished yet) changes
 * nothing. */
static void test_request_after_end(void **state)
{
	(void)state;
	weft_chan_t *c = mkchan(0);
	weft_fiber_t f = spawn_sup(c, true, ret_arg, NULL);
	weft_exit_t e = recv_exit(c);
	assert_int_equal(e.status, 0);
	int r = weft_fiber_cancel(f);
	assert_true(r == 0 || r == -EALREADY);
	assert_int_equal(status_of(f, NULL), 0);
	weft_chan_destroy(c);
}

static void test_bad_channel(void **state)
{
	(void)state;
	weft_chan_t *c;
	assert_int_equal(weft_chan_create(&c, sizeof(weft_exit_t) + 1, 1), 0);
	weft_attr_t a = {.supervisor = c};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, &a, ret_arg, NULL), -EINVAL);
	assert_int_equal(weft_fiber_spawn(NULL, &a, ret_arg, NULL), -EINVAL);
	weft_chan_destroy(c);
	assert_int_equal(weft_chan_create(&c, sizeof(weft_exit_t) - 1, 1), 0);
	a.supervisor = c;
	assert_int_equal(weft_fiber_spawn(&f, &a, ret_arg, NULL), -EINVAL);
	weft_chan_destroy(c);
}

/* Many fibers through a small buffer to a supervisor fiber. */
#define KIDS 300

struct many {
	weft_chan_t *c;
	weft_pid_t pid[KIDS];
	int seen[KIDS];
	int bad;
};

struct many_kid {
	struct many *m;
	int i;
};

static void *many_kid_fn(void *arg)
{
	struct many_kid *k = arg;
	k->m->pid[k->i] = weft_fiber_self();
	if (k->i % 3 == 1)
		weft_fiber_set_status(-(k->i % 100 + 1));
	if (k->i % 3 == 2)
		weft_fiber_yield();
	return (void *)(intptr_t)k->i;
}

static void *supervisor_fn(void *arg)
{
	struct many *m = arg;
	for (int n = 0; n < KIDS; n++) {
		weft_exit_t e;
		if (weft_chan_recv(m->c, &e, wt_ms(30000))) {
			m->bad++;
			break;
		}
		intptr_t i = (intptr_t)e.result;
		if (i < 0 || i >= KIDS || m->seen[i]++ || e.fiber != m->pid[i] ||
		    e.status != (i % 3 == 1 ? -(int)(i % 100 + 1) : 0))
			m->bad++;
	}
	return NULL;
}

static void test_many_to_supervisor_fiber(void **state)
{
	(void)state;
	static struct many m;
	static struct many_kid kids[KIDS];
	static weft_fiber_t f[KIDS];
	memset(&m, 0, sizeof m);
	m.c = mkchan(8);
	weft_fiber_t sup = wt_spawn(supervisor_fn, &m);
	for (int i = 0; i < KIDS; i++) {
		kids[i] = (struct many_kid){.m = &m, .i = i};
		f[i] = spawn_sup(m.c, true, many_kid_fn, &kids[i]);
	}
	wt_join(sup);
	assert_int_equal(m.bad, 0);
	for (int i = 0; i < KIDS; i++) {
		assert_int_equal(m.seen[i], 1);
		/* Joined before the channel goes: a sender may still be in it. */
		assert_int_equal(status_of(f[i], NULL), i % 3 == 1 ? -(i % 100 + 1) : 0);
	}
	weft_chan_destroy(m.c);
}

/* ---- Shutdown with a report nobody reads (virtual clock) ---------------- */

static void test_shutdown_interrupts_report(void **state)
{
	(void)state;
	weft_config_t cfg = {.flags = WEFT_CFG_VIRTUAL_CLOCK};
	assert_int_equal(weft_init(&cfg), 0);
	weft_chan_t *c = mkchan(0);
	_Atomic int ending = 0;
	spawn_sup(c, false, marks_and_fails, &ending);
	assert_int_equal(wt_wait_flag(&ending), 1);
	/* A sweep that came before its exit began is dropped there, and the
	 * fiber waits in its report until the grace deadline (virtual: no
	 * wall time): then a second sweep, after the end, interrupts it. */
	int n = weft_shutdown_grace(wt_ms(1000), NULL, NULL);
	if (n == 1)
		n = weft_shutdown_grace(wt_ms(1000), NULL, NULL);
	assert_int_equal(n, 0); /* finished, the report dropped: nobody received */
	weft_chan_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_ok_exit_fail),
		cmocka_unit_test(test_status_errors),
		cmocka_unit_test(test_status_cancelled_delivered),
		cmocka_unit_test(test_status_cancelled_pending),
		cmocka_unit_test(test_status_set_overrides_cancel),
		cmocka_unit_test(test_report_fields),
		cmocka_unit_test(test_report_names_fiber_and_pid),
		cmocka_unit_test(test_detached),
		cmocka_unit_test(test_report_before_finish),
		cmocka_unit_test(test_closed_channel_drops),
		cmocka_unit_test(test_old_request_keeps_report),
		cmocka_unit_test(test_new_request_drops_report),
		cmocka_unit_test(test_request_after_end),
		cmocka_unit_test(test_bad_channel),
		cmocka_unit_test(test_many_to_supervisor_fiber),
	};
	const struct CMUnitTest shutdown[] = {
		cmocka_unit_test(test_shutdown_interrupts_report),
	};
	int failed = WT_MAIN("supervise", tests, wt_start, wt_stop);
	failed += WT_MAIN("supervise-shutdown", shutdown, NULL, NULL);
	return failed;
}
