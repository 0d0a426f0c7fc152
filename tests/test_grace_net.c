/* SPDX-License-Identifier: MIT */
/* weft_shutdown_grace with the network stack up: once every fiber has
 * finished it takes the stack down itself and stops the runtime (0), so
 * nothing is left running: no stack, no runtime, no thread of either, and
 * both start again. A socket still open (a plain thread's) keeps the stack
 * up (-EBUSY, runtime still running) until it is closed; weft_net_fini
 * before the graceful shutdown, or after it (-ESRCH), does no harm. Each
 * test on the kernel's sockets (Linux) and on lwIP over "loop", on
 * loopback only; each starts a runtime of its own. */
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "weft_net.h"

#if WT_LINUX
#include <dirent.h>
#include <unistd.h>
#endif

/* The threads of the process (Linux), or 0 where that cannot be counted.
 * A joined thread leaves /proc a moment after its join returns (under
 * qemu-user, a while after): threads waits up to 10 s for the count to
 * come back to want, or with want < 0 returns it at once. */
static int threads(int want)
{
#if WT_LINUX
	for (int i = 0;; i++) {
		DIR *d = opendir("/proc/self/task");
		if (!d)
			return 0;
		int n = 0;
		for (struct dirent *e; (e = readdir(d));)
			n += e->d_name[0] != '.';
		closedir(d);
		if (n == want || want < 0 || i == 10000)
			return n;
		usleep(1000);
	}
#else
	(void)want;
	return 0;
#endif
}

/* The process's threads when no runtime runs, counted once in main: the
 * count a graceful shutdown must come back to. Counted per test, it could
 * include the previous test's threads still leaving /proc. */
static int threads_before;

/* The count once it has held still for 200 ms (at most 10 s of waiting). */
static int threads_settled(void)
{
	int n = threads(-1);
#if WT_LINUX
	for (int same = 0, i = 0; same < 200 && i < 10000; i++) {
		usleep(1000);
		int m = threads(-1);
		same = m == n ? same + 1 : 0;
		n = m;
	}
#endif
	return n;
}
static weft_sock_t *held; /* a socket a test holds open, for the teardown */

/* A test that failed half-way leaves the runtime up: take it down. */
static int teardown(void **state)
{
	(void)state;
	weft_stats_t st;
	if (weft_stats(&st) == -ESRCH)
		return 0;
	if (held)
		weft_sock_close(held);
	held = NULL;
	(void)weft_net_fini();
	return wt_stop(state);
}

/* What a graceful shutdown must leave: nothing. */
static void assert_all_stopped(void)
{
	weft_stats_t st;
	assert_null(weft_net_stack());
	assert_int_equal(weft_stats(&st), -ESRCH);
	assert_int_equal(weft_workers(), 0);
	/* The old sequence after it is harmless. */
	assert_int_equal(weft_net_fini(), -ESRCH);
	assert_int_equal(weft_shutdown(), -ESRCH);
	assert_int_equal(threads(threads_before), threads_before);
	/* And both start again. */
	assert_int_equal(weft_init(NULL), 0);
	assert_int_equal(weft_net_init(wt_net_cfg()), 0);
	assert_int_equal(weft_net_fini(), 0);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
}

struct peer {
	weft_addr_t addr; /* the server's, once listening */
	_Atomic int listening;
	int r_accept, r_read_server, r_connect, r_read_client;
	_Atomic int reading; /* fibers that have their connection */
	_Atomic int done;
};

/* Listen, take one connection and read it until cancelled; close both. */
static void *server_main(void *arg)
{
	struct peer *p = arg;
	weft_addr_t a;
	weft_sock_t *ls = NULL, *s = NULL;
	weft_addr_parse("127.0.0.1:0", &a);
	int r = weft_tcp_listen(&ls, &a, 4);
	if (!r)
		r = weft_sock_local(ls, &p->addr);
	atomic_store(&p->listening, r == 0 ? 1 : -1);
	if (r) {
		p->r_accept = r;
		return NULL;
	}
	p->r_accept = weft_tcp_accept(ls, &s, NULL, wt_ms(30000));
	if (p->r_accept == 0) {
		char c;
		atomic_fetch_add(&p->reading, 1);
		p->r_read_server = (int)weft_sock_read(s, &c, 1, -1);
		weft_sock_close(s);
	}
	weft_sock_close(ls);
	atomic_fetch_add(&p->done, 1);
	return NULL;
}

/* Connect and read until cancelled; close. */
static void *client_main(void *arg)
{
	struct peer *p = arg;
	weft_sock_t *s;
	p->r_connect = weft_tcp_connect(&s, &p->addr, wt_ms(30000));
	if (p->r_connect == 0) {
		char c;
		atomic_fetch_add(&p->reading, 1);
		p->r_read_client = (int)weft_sock_read(s, &c, 1, -1);
		weft_sock_close(s);
	}
	atomic_fetch_add(&p->done, 1);
	return NULL;
}

static void *sleep_main(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)weft_sleep_until(-1);
}

/* Fibers blocked in the stack's calls are cancelled, close their sockets
 * and end; then the stack goes down and the runtime stops: 0. */
static void test_grace_stops_stack(void **state)
{
	(void)state;
	static struct peer p;
	memset(&p, 0, sizeof p);
	weft_attr_t sa = {.name = "grace-server"}, ca = {.name = "grace-client"};
	weft_fiber_t fs, fc;
	assert_int_equal(weft_fiber_spawn(&fs, &sa, server_main, &p), 0);
	for (int i = 0; i < 10000 && !atomic_load(&p.listening); i++)
		weft_sleep_until(wt_ms(1));
	assert_int_equal(atomic_load(&p.listening), 1);
	assert_int_equal(weft_fiber_spawn(&fc, &ca, client_main, &p), 0);
	for (int i = 0; i < 10000 && atomic_load(&p.reading) < 2; i++)
		weft_sleep_until(wt_ms(1));
	assert_int_equal(atomic_load(&p.reading), 2);
	assert_true(wt_wait_parked("grace-client", NULL));
	assert_true(wt_wait_parked("grace-server", NULL));
	weft_net_stats_t ns;
	assert_int_equal(weft_net_stats(&ns), 0);
	assert_int_equal(ns.sockets_open, 3);

	assert_int_equal(weft_shutdown_grace(wt_ms(30000), NULL, NULL), 0);
	assert_int_equal(atomic_load(&p.done), 2);
	assert_int_equal(p.r_accept, 0);
	assert_int_equal(p.r_connect, 0);
	/* Each read ends cancelled, or with the end of the stream when the
	 * other side's cancellation closed it first. */
	assert_true(p.r_read_server == -ECANCELED || p.r_read_server == 0);
	assert_true(p.r_read_client == -ECANCELED || p.r_read_client == 0);
	assert_true(p.r_read_server == -ECANCELED || p.r_read_client == -ECANCELED);
	/* Finished handles stay valid after the shutdown. */
	assert_int_equal(weft_fiber_join(fs, 0, NULL), 0);
	assert_int_equal(weft_fiber_join(fc, 0, NULL), 0);
	assert_all_stopped();
}

/* A socket a plain thread still holds keeps the stack up: -EBUSY, with
 * the fibers finished and the runtime running; closed, the next call
 * stops everything. */
static void test_open_socket_keeps_stack(void **state)
{
	(void)state;
	weft_addr_t a;
	weft_sock_t *ls;
	assert_int_equal(weft_addr_parse("127.0.0.1:0", &a), 0);
	assert_int_equal(weft_tcp_listen(&ls, &a, 4), 0);
	held = ls;
	weft_attr_t at = {.name = "grace-sleeper"};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, &at, sleep_main, NULL), 0);
	assert_true(wt_wait_parked("grace-sleeper", NULL));

	assert_int_equal(weft_shutdown_grace(wt_ms(30000), NULL, NULL), -EBUSY);
	void *res;
	assert_int_equal(weft_fiber_join(f, 0, &res), 0);
	assert_int_equal((int)(intptr_t)res, -ECANCELED);
	weft_stats_t st;
	assert_int_equal(weft_stats(&st), 0); /* still running */
	assert_string_equal(weft_net_stack(), wt_net_name());
	assert_int_equal(weft_shutdown(), -EBUSY);

	held = NULL;
	assert_int_equal(weft_sock_close(ls), 0);
	assert_int_equal(weft_shutdown_grace(wt_ms(30000), NULL, NULL), 0);
	assert_all_stopped();
}

/* The old sequence still works: the stack taken down first, then the
 * graceful shutdown, which finds nothing to stop but the runtime. */
static void test_fini_first(void **state)
{
	(void)state;
	weft_attr_t at = {.name = "grace-sleeper"};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, &at, sleep_main, NULL), 0);
	assert_int_equal(weft_net_fini(), 0);
	assert_int_equal(weft_shutdown_grace(wt_ms(30000), NULL, NULL), 0);
	assert_int_equal(weft_fiber_join(f, 0, NULL), 0);
	assert_all_stopped();
}

/* With stragglers the stack is left alone: it is taken down only once
 * every fiber has finished. */
static void *hold_main(void *arg)
{
	_Atomic int *release = arg;
	weft_fiber_cancel_hold();
	while (!atomic_load(release))
		weft_sleep_until(wt_ms(1));
	weft_fiber_cancel_release();
	return NULL;
}

static void test_stragglers_keep_stack(void **state)
{
	(void)state;
	static _Atomic int release;
	atomic_store(&release, 0);
	weft_attr_t at = {.name = "grace-holder"};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, &at, hold_main, (void *)&release), 0);
	assert_int_equal(weft_shutdown_grace(wt_ms(20), NULL, NULL), 1);
	assert_string_equal(weft_net_stack(), wt_net_name());
	atomic_store(&release, 1);
	assert_int_equal(weft_shutdown_grace(wt_ms(30000), NULL, NULL), 0);
	assert_int_equal(weft_fiber_join(f, 0, NULL), 0);
	assert_all_stopped();
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test_setup_teardown(test_grace_stops_stack, wt_net_start, teardown),
	cmocka_unit_test_setup_teardown(test_open_socket_keeps_stack, wt_net_start, teardown),
	cmocka_unit_test_setup_teardown(test_fini_first, wt_net_start, teardown),
	cmocka_unit_test_setup_teardown(test_stragglers_keep_stack, wt_net_start, teardown),
};

int main(void)
{
	/* A runtime started and stopped once first: a sanitizer's own thread
	 * (TSan's starts with the first thread the process makes) is then
	 * there before every count. */
	if (weft_init(NULL) != 0 || weft_shutdown() != 0)
		return 1;
	threads_before = threads_settled();
	const struct wt_net_suite suite = {
		.prefix = "grace",
		.tests = tests,
		.n = sizeof tests / sizeof tests[0],
		.bare_why = "bare metal has no kernel sockets",
		.per_test = 1,
	};
	return wt_net_groups(&suite);
}
