/* SPDX-License-Identifier: MIT */
/* Helpers shared by the CMocka suites. */
#include "testutil.h"

#include <string.h>

#include "shim.h"
/* In a suite built against libweft-sim.a (-DWEFT_SIM=1, tests/sim/
 * suites.conf) the shim's thread, wait and yield calls below are the
 * simulator's: under a seed a wt_thread_start thread is an actor of the
 * schedule and wt_thread_yield a point of it; without one each is the
 * shim's own. In the ordinary build this maps nothing. */
#include "sim_shim.h"

int wt_sim(void)
{
#if WEFT_SIM
	const char *s = shim_getenv("WEFT_SIM_SEED");
	return s && *s;
#else
	return 0;
#endif
}

int wt_start(void **state)
{
	(void)state;
	return weft_init(NULL) == 0 ? 0 : -1;
}

int wt_stop(void **state)
{
	(void)state;
	if (weft_run() != 0)
		return -1;
	return weft_shutdown() == 0 ? 0 : -1;
}

void wt_restart(unsigned workers, unsigned flags)
{
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	weft_config_t c = {.workers = workers, .flags = flags};
	assert_int_equal(weft_init(&c), 0);
}

void wt_restart_default(void)
{
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	assert_int_equal(weft_init(NULL), 0);
}

int wt_start_each(void **state) { return wt_start(state); }
int wt_stop_each(void **state) { return wt_stop(state); }

int64_t wt_ms(int64_t ms) { return weft_now() + ms * 1000000; }

weft_fiber_t wt_spawn(weft_fn fn, void *arg)
{
	weft_fiber_t f = 0;
	assert_int_equal(weft_fiber_spawn(&f, NULL, fn, arg), 0);
	return f;
}

weft_fiber_t wt_spawn_named(weft_fn fn, void *arg, const char *name)
{
	weft_fiber_t f = 0;
	weft_attr_t a = {.name = name};
	assert_int_equal(weft_fiber_spawn(&f, &a, fn, arg), 0);
	return f;
}

/* Under a seed a wait for another party yields through the runtime (a
 * point of the simulator from a plain thread, a yield from a fiber) instead
 * of sleeping: the virtual clock moves only once every worker is idle and
 * no plain thread runs, so a 1 ms sleep beside a fiber that spins with
 * yields would never end. Bounded by count, not time. */
#define WT_SIM_YIELDS 1000000

int wt_sim_yields(int n)
{
	for (int i = 0; i < n; i++)
		weft_fiber_yield();
	return n;
}

/* The i-th pause of such a wait: a yield, and every 10,000th a 1 ms sleep,
 * for a party that waits for the clock (a fiber's sleep, a deadline), which
 * moves only once the waiter too waits. */
static void wt_sim_pause(long i)
{
	if (i % 10000 == 9999)
		weft_sleep_until(wt_ms(1));
	else
		weft_fiber_yield();
}

struct parked_probe {
	char needle[96];
	int found;
};

/* weft_dump_to hands over a fiber's state line in one piece. */
static void find_parked(const char *text, size_t len, void *ctx)
{
	struct parked_probe *p = ctx;
	size_t n = strlen(p->needle);
	for (size_t i = 0; !p->found && i + n <= len; i++)
		p->found = memcmp(text + i, p->needle, n) == 0;
}

int wt_wait_parked(const char *name, const char *why)
{
	struct parked_probe p;
	snprintf(p.needle, sizeof p.needle, "\"%s\" parked: %s", name, why ? why : "");
	int64_t end = wt_ms(10000);
	for (long i = 0;; i++) {
		p.found = 0;
		if (weft_dump_to(find_parked, &p) < 0)
			return 0;
		if (p.found)
			return 1;
		if (weft_now() >= end || (wt_sim() && i >= WT_SIM_YIELDS))
			return 0;
		if (wt_sim())
			wt_sim_pause(i); /* as wt_wait_flag's */
		else
			weft_sleep_until(wt_ms(1));
	}
}

struct line_probe {
	char needle[64];
	char *out;
	size_t cap;
	int found;
};

/* The state line is handed over in one piece (as find_parked relies on). */
static void find_line(const char *text, size_t len, void *ctx)
{
	struct line_probe *p = ctx;
	size_t n = strlen(p->needle);
	if (p->found || len < n)
		return;
	for (size_t i = 0; i + n <= len; i++) {
		if (memcmp(text + i, p->needle, n) == 0) {
			size_t k = len < p->cap ? len : p->cap - 1;
			memcpy(p->out, text, k);
			p->out[k] = 0;
			char *nl = strchr(p->out, '\n');
			if (nl)
				*nl = 0;
			p->found = 1;
			return;
		}
	}
}

int wt_dump_line(const char *name, char *out, size_t cap)
{
	struct line_probe p = {.out = out, .cap = cap};
	snprintf(p.needle, sizeof p.needle, "\"%s\" ", name);
	if (cap == 0 || weft_dump_to(find_line, &p) < 0)
		return 0;
	return p.found;
}

void *wt_join(weft_fiber_t f)
{
	void *r = NULL;
	assert_int_equal(weft_fiber_join(f, wt_ms(30000), &r, NULL), 0);
	return r;
}

void *wt_run_fiber(weft_fn fn, void *arg) { return wt_join(wt_spawn(fn, arg)); }

int wt_wait_flag(_Atomic int *flag)
{
	if (wt_sim()) {
		for (long i = 0; i < WT_SIM_YIELDS && !atomic_load(flag); i++)
			wt_sim_pause(i);
		return atomic_load(flag) != 0;
	}
	int64_t end = wt_ms(10000);
	while (!atomic_load(flag)) {
		if (weft_now() >= end)
			return 0;
		weft_sleep_until(wt_ms(1));
	}
	return 1;
}

int wt_yield_count_cancels(_Atomic int *flag)
{
	int n = 0;
	/* Bounded; generously, for valgrind on a loaded machine, where the
	 * thread that sets flag may not run for seconds while this spins. */
	int64_t end = wt_ms(60000);
	while (!atomic_load(flag) && weft_now() < end)
		n += weft_fiber_yield() == -ECANCELED;
	n += weft_fiber_yield() == -ECANCELED;
	return n;
}

struct wt_thread {
	shim_thread_t t;
	void *(*fn)(void *);
	void *arg;
};

static void thread_main(void *arg)
{
	struct wt_thread *w = arg;
	w->fn(w->arg);
}

wt_thread_t wt_thread_start(void *(*fn)(void *), void *arg)
{
	struct wt_thread *w = malloc(sizeof *w);
	assert_non_null(w);
	w->fn = fn;
	w->arg = arg;
	assert_int_equal(shim_thread_start(&w->t, thread_main, w), 0);
	return w;
}

void wt_thread_join(wt_thread_t w)
{
	shim_thread_join(w->t);
	free(w);
}

void wt_thread_yield(void) { shim_thread_yield(); }

#if WT_LINUX
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

void wt_pipe(int p[2]) { assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0); }

int wt_uring_works(void)
{
#ifdef SYS_io_uring_setup
	char p[120] = {0};
	long fd = syscall(SYS_io_uring_setup, 4, p);
	if (fd < 0)
		return 0;
	close((int)fd);
	return 1;
#else
	return 0;
#endif
}

void wt_socketpair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
}

long wt_write(int fd, const void *buf, size_t n)
{
	ssize_t r = write(fd, buf, n);
	return r < 0 ? -errno : (long)r;
}

long wt_read(int fd, void *buf, size_t n)
{
	ssize_t r = read(fd, buf, n);
	return r < 0 ? -errno : (long)r;
}

void wt_close(int fd)
{
	weft_fd_forget(fd);
	close(fd);
}
#else
/* One end of an in-memory pipe or socketpair: an I/O source whose ready
 * callback says what a pipe's end would (the bare reactor asks it when it
 * arms the source and whenever it polls), and which shim_io_report wakes when
 * the other end writes, reads or closes. One hart: interrupts off is the
 * lock (threads are preempted by the timer). */
#include "bare.h"

#define WT_BUF 4096
#define WT_SOURCES 64

struct wt_end {
	int src;
	unsigned dirs; /* SHIM_IO_IN: it reads; SHIM_IO_OUT: it writes */
	int closed;
	size_t len; /* bytes in buf, written by the peer for this end */
	unsigned char buf[WT_BUF];
	struct wt_end *peer;
};

static struct wt_end *ends[WT_SOURCES]; /* by source number */

/* Interrupts off. */
static unsigned end_ready(void *arg)
{
	struct wt_end *e = arg;
	unsigned ev = 0;
	if (e->peer->closed)
		ev |= SHIM_IO_ERR;
	if ((e->dirs & SHIM_IO_IN) && (e->len || e->peer->closed))
		ev |= SHIM_IO_IN;
	if ((e->dirs & SHIM_IO_OUT) && !e->peer->closed && e->peer->len < WT_BUF)
		ev |= SHIM_IO_OUT;
	return ev;
}

static void end_add(struct wt_end *e)
{
	e->src = shim_io_source_add(end_ready, e);
	if (e->src < 0)
		fail_msg("no I/O source left for a test pipe (%d)", e->src);
	assert_true(e->src < WT_SOURCES);
	ends[e->src] = e;
}

static void pair(int fds[2], unsigned dirs0, unsigned dirs1)
{
	struct wt_end *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
	assert_non_null(a);
	assert_non_null(b);
	a->dirs = dirs0;
	b->dirs = dirs1;
	a->peer = b;
	b->peer = a;
	end_add(a);
	end_add(b);
	fds[0] = a->src;
	fds[1] = b->src;
}

void wt_pipe(int p[2]) { pair(p, SHIM_IO_IN, SHIM_IO_OUT); }

void wt_socketpair(int sv[2]) { pair(sv, SHIM_IO_IN | SHIM_IO_OUT, SHIM_IO_IN | SHIM_IO_OUT); }

static struct wt_end *end_of(int fd) { return fd >= 0 && fd < WT_SOURCES ? ends[fd] : NULL; }

long wt_write(int fd, const void *buf, size_t n)
{
	int on = irq_save();
	struct wt_end *e = end_of(fd);
	long r;
	if (!e || !(e->dirs & SHIM_IO_OUT)) {
		r = -EBADF;
	} else if (e->peer->closed) {
		r = -EPIPE;
	} else {
		struct wt_end *p = e->peer;
		size_t k = n < WT_BUF - p->len ? n : WT_BUF - p->len;
		memcpy(p->buf + p->len, buf, k);
		p->len += k;
		r = k ? (long)k : -EAGAIN;
		if (k)
			shim_io_report(p->src, SHIM_IO_IN);
	}
	irq_restore(on);
	return r;
}

long wt_read(int fd, void *buf, size_t n)
{
	int on = irq_save();
	struct wt_end *e = end_of(fd);
	long r;
	if (!e || !(e->dirs & SHIM_IO_IN)) {
		r = -EBADF;
	} else if (e->len) {
		size_t k = n < e->len ? n : e->len;
		memcpy(buf, e->buf, k);
		memmove(e->buf, e->buf + k, e->len - k);
		e->len -= k;
		r = (long)k;
		if (!e->peer->closed)
			shim_io_report(e->peer->src, SHIM_IO_OUT);
	} else {
		r = e->peer->closed ? 0 : -EAGAIN;
	}
	irq_restore(on);
	return r;
}

void wt_close(int fd)
{
	weft_fd_forget(fd);
	int on = irq_save();
	struct wt_end *e = end_of(fd), *both = NULL;
	if (e) {
		shim_io_source_remove(e->src);
		ends[e->src] = NULL;
		e->closed = 1;
		if (!e->peer->closed)
			shim_io_report(e->peer->src, SHIM_IO_ERR);
		else
			both = e;
	}
	irq_restore(on);
	if (both) {
		free(both->peer);
		free(both);
	}
}
#endif

/* ---- Suites run on each network stack ------------------------------------ */

const weft_net_config_t wt_net_kernel = {.stack = "kernel"};
const weft_net_config_t wt_net_lwip = {.stack = "lwip", .netif = "loop"};

static const struct wt_net_suite *net_suite;
static const char *net_group_name; /* "PREFIX-kernel": what the fixtures say */
static const weft_net_config_t *net_cfg;
static int net_teardown_failures;

const weft_net_config_t *wt_net_cfg(void) { return net_cfg; }
const char *wt_net_name(void) { return net_cfg ? net_cfg->stack : NULL; }
int wt_net_is_lwip(void) { return net_cfg && strcmp(net_cfg->stack, "lwip") == 0; }

int wt_net_init_tap(const weft_net_config_t *cfg)
{
	int err = weft_net_init(cfg);
	if (err == -EPERM || err == -EACCES || err == -ENODEV) {
		print_message("no TAP device here (%d): it needs /dev/net/tun and "
			      "CAP_NET_ADMIN (root, as CI runs)\n",
			      err);
		return -1;
	}
	assert_int_equal(err, 0);
	return 0;
}

int wt_net_start(void **state)
{
	(void)state;
	int r = weft_init(NULL);
	if (r != 0) {
		print_message("%s: weft_init: %d\n", net_group_name, r);
		return -1;
	}
	r = weft_net_init(net_cfg);
	if (r != 0) {
		print_message("%s: weft_net_init: %d\n", net_group_name, r);
		weft_run();
		weft_shutdown();
		return -1;
	}
	return 0;
}

int wt_net_stop(void **state)
{
	(void)state;
	int r = weft_net_fini(), r2 = weft_run(), r3 = weft_shutdown();
	if (r != 0 || r2 != 0 || r3 != 0) {
		print_message("%s teardown: weft_net_fini %d, weft_run %d, weft_shutdown %d\n",
			      net_group_name, r, r2, r3);
		net_teardown_failures++;
		return -1;
	}
	return 0;
}

static int net_group_setup(void **state)
{
	if (wt_net_start(state) != 0)
		return -1;
	return net_suite->up && net_suite->up() != 0 ? -1 : 0;
}

static int net_group_teardown(void **state)
{
	if (net_suite->down)
		net_suite->down();
	return wt_net_stop(state);
}

static int net_group(const struct wt_net_suite *s, const weft_net_config_t *cfg)
{
	char name[48];
	snprintf(name, sizeof name, "%s-%s", s->prefix, cfg->stack);
	net_suite = s;
	net_group_name = name;
	net_cfg = cfg;
	int failed =
		_cmocka_run_group_tests(name, s->tests, s->n, s->per_test ? NULL : net_group_setup,
					s->per_test ? NULL : net_group_teardown);
	net_group_name = NULL;
	net_cfg = NULL;
	return failed;
}

int wt_net_groups(const struct wt_net_suite *s)
{
	int failed = 0;
	net_teardown_failures = 0;
	if (WT_LINUX) {
		failed += net_group(s, &wt_net_kernel);
	} else {
		char name[48];
		snprintf(name, sizeof name, "%s-kernel", s->prefix);
		failed += wt_skip_group(name, s->tests, s->n, s->bare_why);
	}
	failed += net_group(s, s->lwip ? s->lwip : &wt_net_lwip);
	failed += net_teardown_failures;
	return failed > 100 ? 100 : failed;
}

int wt_tcp_pair(weft_sock_t **c, weft_sock_t **s)
{
	weft_sock_t *ls = NULL;
	weft_addr_t a, l;
	*c = *s = NULL;
	int r = weft_addr_parse("127.0.0.1", &a);
	if (r == 0)
		r = weft_tcp_listen(&ls, &a, 0);
	if (r == 0)
		r = weft_sock_local(ls, &l);
	if (r == 0 && l.port == 0)
		r = -EINVAL;
	if (r == 0)
		r = weft_tcp_connect(c, &l, wt_ms(10000));
	if (r == 0)
		r = weft_tcp_accept(ls, s, NULL, wt_ms(10000));
	int rc = ls ? weft_sock_close(ls) : 0;
	if (r == 0)
		r = rc;
	if (r != 0) {
		if (*c)
			weft_sock_close(*c);
		if (*s)
			weft_sock_close(*s);
		*c = *s = NULL;
	}
	return r;
}

static uint64_t rng_state;

void wt_rng_seed(void)
{
	rng_state = (uint64_t)weft_now() | 1;
	print_message("seed %llu\n", (unsigned long long)rng_state);
}

uint64_t wt_rng_next(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

int wt_sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(WEFT_VALGRIND)
	return 1;
#else
	return 0;
#endif
}

static void skipped(void **state)
{
	(void)state;
	skip();
}

int wt_skip_group(const char *name, const struct CMUnitTest *tests, size_t n, const char *why)
{
	struct CMUnitTest *copy = calloc(n, sizeof *copy);
	assert_non_null(copy);
	for (size_t i = 0; i < n; i++)
		copy[i] = (struct CMUnitTest){.name = tests[i].name, .test_func = skipped};
	print_message("%s: skipped: %s\n", name, why);
	int failed = _cmocka_run_group_tests(name, copy, n, NULL, NULL);
	free(copy);
	return failed;
}

int wt_main(const char *name, const struct CMUnitTest *tests, size_t n, CMFixtureFunction setup,
	    CMFixtureFunction teardown)
{
	int failed = _cmocka_run_group_tests(name, tests, n, setup, teardown);
	return failed > 100 ? 100 : failed;
}
