/* SPDX-License-Identifier: MIT */
/* Diagnostics: weft_dump names every fiber with its id, name and state, what
 * a parked one waits on, its spawn site and chain of spawners ("(gone)" for
 * an ended one), and a backtrace of a parked one; SIGQUIT prints the dump
 * (Linux) unless opted out; each worker's counters (switches, steals, parks,
 * wakes, queue depth) are readable and count what they say. The counter
 * tests use the virtual clock, so every sleep really parks. */
#include <string.h>

#include "testutil.h"

#if WT_LINUX
#include <poll.h>
#include <signal.h>
#include <unistd.h>
#endif

#define MS 1000000LL

/* ---- Capturing a dump ----------------------------------------------------- */

struct text {
	char *buf;
	size_t len, cap;
};

static void capture(const char *s, size_t n, void *ctx)
{
	struct text *t = ctx;
	if (t->len + n + 1 > t->cap) {
		size_t cap = (t->len + n + 1) * 2;
		char *b = realloc(t->buf, cap);
		if (!b)
			return;
		t->buf = b;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, s, n);
	t->len += n;
	t->buf[t->len] = 0;
}

static void dump(struct text *t)
{
	t->len = 0;
	if (t->buf)
		t->buf[0] = 0;
	assert_true(weft_dump_to(capture, t) >= 0);
}

/* The line that starts "weft: fiber ID ", or NULL. */
static const char *fiber_line(const char *text, uint64_t id, char *out, size_t cap)
{
	char key[48];
	snprintf(key, sizeof key, "weft: fiber %llu ", (unsigned long long)id);
	const char *p = text ? strstr(text, key) : NULL;
	if (!p)
		return NULL;
	const char *end = strchr(p, '\n');
	size_t n = end ? (size_t)(end - p) : strlen(p);
	/* with the lines that belong to it (indented) */
	while (end && end[1] == ' ') {
		const char *e2 = strchr(end + 1, '\n');
		n = e2 ? (size_t)(e2 - p) : strlen(p);
		end = e2;
	}
	if (n >= cap)
		n = cap - 1;
	memcpy(out, p, n);
	out[n] = 0;
	return out;
}

/* Dump until every fiber in ids has a line containing the matching want,
 * for up to 10 s (they are getting there). Returns 1 when all match. */
static int dump_until(struct text *t, const uint64_t *ids, const char *const *want, int n)
{
	char line[4096];
	for (int tries = 0; tries < 10000; tries++) {
		dump(t);
		int ok = 1;
		for (int i = 0; i < n && ok; i++)
			ok = fiber_line(t->buf, ids[i], line, sizeof line) && strstr(line, want[i]);
		if (ok)
			return 1;
		weft_sleep_until(wt_ms(1));
	}
	return 0;
}

/* ---- Fibers in each state ------------------------------------------------ */

struct world {
	_Atomic uint64_t id_sleeper, id_receiver, id_joiner, id_child, id_spinner, id_done;
	weft_chan_t *chan;
	_Atomic int stop;
};

static void *sleeper(void *arg)
{
	struct world *w = arg;
	atomic_store(&w->id_sleeper, weft_fiber_self());
	return (void *)(intptr_t)weft_sleep_until(wt_ms(600000));
}

static void *receiver(void *arg)
{
	struct world *w = arg;
	atomic_store(&w->id_receiver, weft_fiber_self());
	int v;
	return (void *)(intptr_t)weft_chan_recv(w->chan, &v, -1);
}

static void *child(void *arg)
{
	struct world *w = arg;
	atomic_store(&w->id_child, weft_fiber_self());
	return (void *)(intptr_t)weft_sleep_until(wt_ms(600000));
}

static void *joiner(void *arg)
{
	struct world *w = arg;
	atomic_store(&w->id_joiner, weft_fiber_self());
	weft_fiber_t c;
	weft_attr_t a = {.name = "child"};
	if (weft_fiber_spawn(&c, &a, child, w))
		return (void *)-1;
	void *r = NULL;
	int e = weft_fiber_join(c, -1, &r, NULL);
	if (e == -ECANCELED) {
		weft_fiber_cancel(c);
		e = weft_fiber_join(c, -1, &r, NULL);
	}
	return (void *)(intptr_t)e;
}

static void *spinner(void *arg)
{
	struct world *w = arg;
	atomic_store(&w->id_spinner, weft_fiber_self());
	while (!atomic_load(&w->stop))
		weft_fiber_yield();
	return NULL;
}

static void *done_fiber(void *arg)
{
	struct world *w = arg;
	atomic_store(&w->id_done, weft_fiber_self());
	return NULL;
}

static weft_fiber_t spawn_named(const char *name, weft_fn fn, void *arg)
{
	weft_fiber_t f;
	weft_attr_t a = {.name = name};
	assert_int_equal(weft_fiber_spawn(&f, &a, fn, arg), 0);
	return f;
}

static void wait_id(_Atomic uint64_t *id)
{
	for (int i = 0; i < 10000 && !atomic_load(id); i++)
		weft_sleep_until(wt_ms(1));
	assert_true(atomic_load(id) != 0);
}

static void test_dump_names_each_fiber_and_state(void **state)
{
	(void)state;
	struct world w = {0};
	assert_int_equal(weft_chan_create(&w.chan, sizeof(int), 0), 0);
	weft_fiber_t fs = spawn_named("sleeper", sleeper, &w);
	weft_fiber_t fr = spawn_named("receiver", receiver, &w);
	weft_fiber_t fj = spawn_named("joiner", joiner, &w);
	weft_fiber_t fp = spawn_named("spinner", spinner, &w);
	weft_fiber_t fd = spawn_named("done", done_fiber, &w);
	wait_id(&w.id_sleeper);
	wait_id(&w.id_receiver);
	wait_id(&w.id_joiner);
	wait_id(&w.id_child);
	wait_id(&w.id_spinner);
	wait_id(&w.id_done);

	struct text t = {0};
	const uint64_t ids[] = {w.id_sleeper, w.id_receiver, w.id_joiner, w.id_child, w.id_done};
	/* The receiver's line once its park is complete (PARKED, with " for N
	 * ms"): a dump can catch it still switching out (PARKING, no
	 * duration), which a loaded machine stretches. */
	const char *const want[] = {
		"\"sleeper\" parked: sleep", "\"receiver\" parked: chan recv for ",
		"\"joiner\" parked: join", "\"child\" parked: sleep", "\"done\" finished"};
	int found = dump_until(&t, ids, want, 5);
	/* Everything is stopped before anything is asserted: a failed
	 * assertion ends the test, and its teardown's weft_run would wait
	 * for the spinner for good. */
	atomic_store(&w.stop, 1);
	assert_int_equal(weft_fiber_cancel(fs), 0);
	assert_int_equal(weft_fiber_cancel(fj), 0);
	assert_int_equal(weft_chan_close(w.chan), 0);
	intptr_t rs = (intptr_t)wt_join(fs), rr = (intptr_t)wt_join(fr);
	intptr_t rj = (intptr_t)wt_join(fj);
	wt_join(fp);
	wt_join(fd);
	weft_chan_destroy(w.chan);

	assert_true(found);
	char line[4096];
	/* The spinner yields: running on a worker, or runnable between turns. */
	assert_non_null(fiber_line(t.buf, w.id_spinner, line, sizeof line));
	assert_true(strstr(line, "\"spinner\" running on worker ") ||
		    strstr(line, "\"spinner\" runnable"));
	/* Spawn sites, and the chain: child was spawned by joiner, which the
	 * test's plain thread spawned. */
	assert_non_null(fiber_line(t.buf, w.id_sleeper, line, sizeof line));
	assert_non_null(strstr(line, "spawned at tests/test_dump.c:"));
	assert_non_null(strstr(line, "by a thread"));
	assert_non_null(fiber_line(t.buf, w.id_child, line, sizeof line));
	char chain[96];
	snprintf(chain, sizeof chain, "by fiber %llu \"joiner\" <- a thread",
		 (unsigned long long)w.id_joiner);
	assert_non_null(strstr(line, chain));
	/* A parked fiber's wait has a duration, and a backtrace (runtime/ keeps
	 * frame pointers): the resume address and at least its caller. */
	assert_non_null(fiber_line(t.buf, w.id_receiver, line, sizeof line));
	assert_non_null(strstr(line, " ms"));
	assert_non_null(strstr(line, "    #0 0x"));
	assert_non_null(strstr(line, "    #1 0x"));
#ifdef __linux__
	/* Named from the program's own symbol table (kernel-shim/linux/
	 * symbols.c), hidden and internal functions too, with the module. */
	/* A receive with no deadline parks holding the channel's lock
	 * (weft__park_locked); with one, through weft__park_end. */
	assert_true(strstr(line, " weft__park_locked+0x") || strstr(line, " weft__park_end+0x"));
	assert_non_null(strstr(line, " weft_chan_recv+0x"));
	assert_non_null(strstr(line, " in test_dump\n"));
#endif
	assert_non_null(strstr(t.buf, "weft: worker 0: "));
	assert_non_null(strstr(t.buf, "weft: end of dump"));
	assert_int_equal(rs, -ECANCELED);
	assert_int_equal(rr, -EPIPE);
	assert_int_equal(rj, 0);
	free(t.buf);
}

/* ---- The chain of spawners, through one that has ended ------------------ */

struct chain {
	_Atomic uint64_t id_a, id_b, id_c;
	_Atomic int a_may_end;
	weft_future_t *hold;
};

static void *chain_c(void *arg)
{
	struct chain *c = arg;
	atomic_store(&c->id_c, weft_fiber_self());
	return (void *)(intptr_t)weft_future_await(c->hold, -1, NULL);
}

static void *chain_b(void *arg)
{
	struct chain *c = arg;
	atomic_store(&c->id_b, weft_fiber_self());
	weft_attr_t a = {.name = "c"};
	if (weft_fiber_spawn(NULL, &a, chain_c, c))
		return (void *)-1;
	return (void *)(intptr_t)weft_future_await(c->hold, -1, NULL);
}

static void *chain_a(void *arg)
{
	struct chain *c = arg;
	atomic_store(&c->id_a, weft_fiber_self());
	weft_attr_t a = {.name = "b"};
	if (weft_fiber_spawn(NULL, &a, chain_b, c))
		return (void *)-1;
	while (!atomic_load(&c->a_may_end))
		weft_sleep_until(wt_ms(1));
	return NULL;
}

static void test_dump_chain_through_gone_parent(void **state)
{
	(void)state;
	struct chain c = {0};
	assert_int_equal(weft_future_create(&c.hold), 0);
	weft_fiber_t fa = spawn_named("a", chain_a, &c);
	wait_id(&c.id_a);
	wait_id(&c.id_b);
	wait_id(&c.id_c);
	struct text t = {0};
	char want_c[128];
	snprintf(want_c, sizeof want_c, "by fiber %llu \"b\" <- fiber %llu \"a\" <- a thread",
		 (unsigned long long)c.id_b, (unsigned long long)c.id_a);
	const uint64_t ids[] = {c.id_c};
	const char *const w1[] = {want_c};
	assert_true(dump_until(&t, ids, w1, 1));

	/* a ends and is joined: its record is gone, its name is remembered. */
	atomic_store(&c.a_may_end, 1);
	wt_join(fa);
	char want_gone[128];
	snprintf(want_gone, sizeof want_gone, "by fiber %llu \"b\" <- fiber %llu \"a\" (gone)",
		 (unsigned long long)c.id_b, (unsigned long long)c.id_a);
	const char *const w2[] = {want_gone};
	assert_true(dump_until(&t, ids, w2, 1));

	assert_int_equal(weft_future_resolve(c.hold, NULL), 0);
	weft_future_release(c.hold);
	free(t.buf);
}

static void test_dump_errors(void **state)
{
	(void)state;
	assert_int_equal(weft_dump_to(NULL, NULL), -EINVAL);
	weft_worker_stats_t s;
	assert_int_equal(weft_worker_stats(0, NULL), -EINVAL);
	assert_int_equal(weft_worker_stats(weft_workers(), &s), -EINVAL);
	assert_int_equal(weft_worker_stats(0, &s), 0);
}

static void test_dump_not_running(void **state)
{
	(void)state;
	struct text t = {0};
	weft_worker_stats_t s;
	assert_int_equal(weft_dump_to(capture, &t), -ESRCH);
	assert_int_equal(weft_dump(), -ESRCH);
	assert_int_equal(weft_worker_stats(0, &s), -ESRCH);
}

/* ---- Counters ------------------------------------------------------------ */

#define NSLEEP 50

static void totals(weft_worker_stats_t *sum)
{
	*sum = (weft_worker_stats_t){0};
	for (unsigned i = 0; i < weft_workers(); i++) {
		weft_worker_stats_t s;
		assert_int_equal(weft_worker_stats(i, &s), 0);
		sum->switches += s.switches;
		sum->steals += s.steals;
		sum->parks += s.parks;
		sum->wakes += s.wakes;
		assert_true(s.queued <= 256);
	}
}

static void *sleep_n(void *arg)
{
	(void)arg;
	for (int i = 0; i < NSLEEP; i++)
		if (weft_sleep_until(weft_deadline_in(MS)))
			return (void *)-1;
	return NULL;
}

/* Under the virtual clock a sleep always parks (time stands still while the
 * fiber runs), and the worker that moves the clock wakes it. */
static void test_stats_count_parks_and_wakes(void **state)
{
	(void)state;
	weft_config_t cfg = {.flags = WEFT_CFG_VIRTUAL_CLOCK};
	assert_int_equal(weft_init(&cfg), 0);
	weft_worker_stats_t before, after;
	totals(&before);
	assert_null(wt_run_fiber(sleep_n, NULL));
	totals(&after);
	assert_true(after.parks - before.parks >= NSLEEP);
	assert_true(after.wakes - before.wakes >= NSLEEP);
	assert_true(after.switches - before.switches >= 2 * NSLEEP);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
}

static void *yield_some(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++)
		weft_fiber_yield();
	return NULL;
}

/* One worker has nobody to steal from. */
static void test_stats_no_steals_with_one_worker(void **state)
{
	(void)state;
	weft_config_t cfg = {.workers = 1};
	assert_int_equal(weft_init(&cfg), 0);
	weft_fiber_t f[20];
	for (int i = 0; i < 20; i++)
		f[i] = wt_spawn(yield_some, NULL);
	for (int i = 0; i < 20; i++)
		wt_join(f[i]);
	weft_worker_stats_t s;
	assert_int_equal(weft_worker_stats(0, &s), 0);
	assert_int_equal(s.steals, 0);
	assert_true(s.switches >= 20);
	assert_int_equal(weft_worker_stats(1, &s), -EINVAL);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
}

/* ---- SIGQUIT -------------------------------------------------------------- */

#if WT_LINUX
static void *park_named(void *arg) { return (void *)(intptr_t)weft_future_await(arg, -1, NULL); }

static int quit_installed(void)
{
	struct sigaction cur;
	return sigaction(SIGQUIT, NULL, &cur) == 0 && cur.sa_handler != SIG_DFL &&
	       cur.sa_handler != SIG_IGN;
}
#endif

static void test_dump_on_sigquit(void **state)
{
	(void)state;
#if WT_LINUX
	struct sigaction before;
	sigaction(SIGQUIT, NULL, &before);
	if (before.sa_handler != SIG_DFL) {
		print_message("SIGQUIT is not at its default action here: weft leaves it alone; "
			      "skipped\n");
		skip();
	}
	assert_int_equal(weft_init(NULL), 0);
	assert_true(quit_installed());
	weft_future_t *fut;
	assert_int_equal(weft_future_create(&fut), 0);
	weft_fiber_t f = spawn_named("quitter", park_named, fut);

	int p[2];
	assert_int_equal(pipe(p), 0);
	fflush(stderr);
	int saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(p[1], 2), 2);
	assert_int_equal(kill(getpid(), SIGQUIT), 0);
	struct text t = {0};
	char buf[4096];
	for (int i = 0; i < 100 && !(t.buf && strstr(t.buf, "weft: end of dump")); i++) {
		struct pollfd pfd = {.fd = p[0], .events = POLLIN};
		if (poll(&pfd, 1, 100) == 1) {
			ssize_t n = read(p[0], buf, sizeof buf);
			if (n > 0)
				capture(buf, (size_t)n, &t);
		}
	}
	dup2(saved, 2);
	close(saved);
	close(p[0]);
	close(p[1]);
	assert_non_null(t.buf);
	assert_non_null(strstr(t.buf, "\"quitter\""));
	assert_non_null(strstr(t.buf, "weft: end of dump"));

	assert_int_equal(weft_future_resolve(fut, NULL), 0);
	wt_join(f);
	weft_future_release(fut);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	/* Shutdown gives SIGQUIT its default action back. */
	struct sigaction after;
	sigaction(SIGQUIT, NULL, &after);
	assert_true(after.sa_handler == SIG_DFL);
	free(t.buf);
#else
	print_message("no signals on bare metal: weft_dump is called directly; skipped\n");
	skip();
#endif
}

static void test_quit_opt_out(void **state)
{
	(void)state;
#if WT_LINUX
	struct sigaction before;
	sigaction(SIGQUIT, NULL, &before);
	weft_config_t cfg = {.flags = WEFT_CFG_NO_QUIT_DUMP};
	assert_int_equal(weft_init(&cfg), 0);
	struct sigaction now;
	sigaction(SIGQUIT, NULL, &now);
	assert_true(now.sa_handler == before.sa_handler);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
#else
	print_message("no signals on bare metal; skipped\n");
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dump_not_running),
		cmocka_unit_test_setup_teardown(test_dump_names_each_fiber_and_state, wt_start_each,
						wt_stop_each),
		cmocka_unit_test_setup_teardown(test_dump_chain_through_gone_parent, wt_start_each,
						wt_stop_each),
		cmocka_unit_test_setup_teardown(test_dump_errors, wt_start_each, wt_stop_each),
		cmocka_unit_test(test_stats_count_parks_and_wakes),
		cmocka_unit_test(test_stats_no_steals_with_one_worker),
		cmocka_unit_test(test_dump_on_sigquit),
		cmocka_unit_test(test_quit_opt_out),
	};
	return WT_MAIN("dump", tests, NULL, NULL);
}
