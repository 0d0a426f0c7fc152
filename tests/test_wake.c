/* SPDX-License-Identifier: MIT */
/* Waking a worker asleep in the reactor's poll (shim_io_wake), on every
 * backend: plain threads ready fibers pinned to both workers while another
 * fiber waits on a pipe, so that an idle worker sleeps in the poll and the
 * wakes aimed at it come from several threads at once; each reply must come
 * within a bound. A lost wake shows as a reply that does not come within a
 * bound many times longer than a loaded machine takes, but far shorter than
 * any deadline that would rescue the waiter. */
#include <string.h>

#include "service.h"
#include "testutil.h"
#if WT_LINUX
#include <sys/syscall.h>
#include <unistd.h>

#include "linux/io.h"
#endif

/* How long a wake may take to reach its fiber before the test calls it
 * lost: what a loaded 2-core machine (or TSan, or qemu-user) never needs,
 * and far below the waiters' own deadlines (60 s), which would rescue them. */
#define STALL_MS 3000
/* Each waker's rounds, and the time they may take in all. */
#define ROUNDS 100000
#define BUDGET_MS 3000
#define WAKERS 3
/* Each waker's fibers on each of the 2 workers. */
#define ECHOES 4
#define NECHO (2 * ECHOES)

/* A pause of about us microseconds, without sleeping. */
static void spin_us(int64_t us)
{
	int64_t until = weft_now() + us * 1000;
	while (weft_now() < until)
		;
}

#if WT_LINUX
/* The epoll backend's poller, woken, drains its eventfd: a read of 8 bytes.
 * This executable's read takes the place of libc's (for the library's
 * objects linked in, and whatever else calls read by that name) and, while
 * slow_wake_reads is set, holds such a read up for 20 us on each side, as
 * a poller preempted there would be. The wake protocol must hold wherever
 * the poller is stopped; the window around the drain is where it did not,
 * and there a wake slipped through only once in some 10^5 (seconds of this
 * test, or never in its budget); held open, within a few hundred rounds.
 * Every other read is the plain system call. */
static _Atomic int slow_wake_reads;

static int is_eventfd(int fd)
{
	char path[40], link[40];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, link, sizeof link - 1);
	if (n < 0)
		return 0;
	link[n] = 0;
	return strcmp(link, "anon_inode:[eventfd]") == 0;
}

ssize_t wt_read_held(int fd, void *buf, size_t n) __asm__("read");
ssize_t wt_read_held(int fd, void *buf, size_t n)
{
	int held = n == 8 && atomic_load_explicit(&slow_wake_reads, memory_order_relaxed) &&
		   is_eventfd(fd);
	if (held)
		spin_us(20);
	ssize_t r = syscall(SYS_read, fd, buf, n);
	if (held)
		spin_us(20);
	return r;
}
#endif

struct echo {
	int worker;
	weft_chan_t *in, *out;
	_Atomic int failed;
};

/* Pinned to its worker: every value that comes in goes back out, until a
 * negative one. */
static void *echo_main(void *arg)
{
	struct echo *e = arg;
	if (weft_fiber_pin(e->worker) != 0) {
		atomic_store(&e->failed, 1);
		return NULL;
	}
	for (;;) {
		int v;
		if (weft_chan_recv(e->in, &v, wt_ms(60000)) != 0) {
			atomic_store(&e->failed, 1);
			break;
		}
		if (v < 0)
			break;
		if (weft_chan_send(e->out, &v, wt_ms(60000)) != 0) {
			atomic_store(&e->failed, 1);
			break;
		}
	}
	return NULL;
}

/* A plain thread: each round a value to each of its fibers, the two
 * workers' in turn, then every reply, each within STALL_MS. */
struct waker {
	struct echo echo[NECHO];
	weft_chan_t *back;
	int64_t end;
	int rounds;
	int stalled; /* the round whose reply did not come, + 1 */
};

static void *waker_main(void *arg)
{
	struct waker *k = arg;
	int r;
	for (r = 0; r < ROUNDS && weft_now() < k->end; r++) {
		/* Spaced out, so that the next wake aimed at a worker often
		 * comes while it is on its way out of the poll: the race in
		 * the poller's wake flag that loses a wake. */
		for (int i = 0; i < NECHO; i++) {
			if (weft_chan_send(k->echo[i].in, &r, wt_ms(STALL_MS)) != 0)
				goto stalled;
			spin_us(1 + r % 4);
		}
		for (int i = 0; i < NECHO; i++) {
			int v = -1;
			if (weft_chan_recv(k->back, &v, wt_ms(STALL_MS)) != 0 || v != r)
				goto stalled;
		}
		k->rounds++;
	}
	goto stop;
stalled:
	k->stalled = r + 1;
stop:;
	int stop = -1;
	for (int i = 0; i < NECHO; i++)
		(void)weft_chan_send(k->echo[i].in, &stop, wt_ms(STALL_MS));
	return NULL;
}

struct holder {
	int fd;
	int r;
};

/* Waits on the pipe: while it does, an idle worker sleeps in the poll
 * instead of on its futex. */
static void *hold_main(void *arg)
{
	struct holder *h = arg;
	h->r = weft_fd_wait(h->fd, WEFT_IO_IN, wt_ms(60000));
	return NULL;
}

/* The runtime runs on 2 workers, on the backend the caller chose. */
static void plain_threads_wake_the_poller(void)
{
	int p[2];
	wt_pipe(p);
	struct holder h = {.fd = p[0]};
	weft_fiber_t hf = wt_spawn_named(hold_main, &h, "holder");
	assert_true(wt_wait_parked("holder", "fd"));

	static struct waker k[WAKERS];
	weft_fiber_t ef[WAKERS][NECHO];
	wt_thread_t t[WAKERS];
	int64_t end = wt_ms(wt_sanitized() ? 2 * BUDGET_MS : BUDGET_MS);
#if WT_LINUX
	atomic_store(&slow_wake_reads, 1);
#endif
	for (int i = 0; i < WAKERS; i++) {
		memset(&k[i], 0, sizeof k[i]);
		k[i].end = end;
		assert_int_equal(weft_chan_create(&k[i].back, sizeof(int), NECHO), 0);
		for (int j = 0; j < NECHO; j++) {
			struct echo *e = &k[i].echo[j];
			e->worker = j % 2;
			e->out = k[i].back;
			assert_int_equal(weft_chan_create(&e->in, sizeof(int), 2), 0);
			ef[i][j] = wt_spawn(echo_main, e);
		}
	}
	for (int i = 0; i < WAKERS; i++)
		t[i] = wt_thread_start(waker_main, &k[i]);
	for (int i = 0; i < WAKERS; i++)
		wt_thread_join(t[i]);
#if WT_LINUX
	atomic_store(&slow_wake_reads, 0);
#endif

	/* A byte ends the holder's wait by the kernel's report, which reaches
	 * a worker in the poll even when its wake is lost, so the rest can be
	 * joined and the failure reported. */
	assert_int_equal(wt_write(p[1], "x", 1), 1);
	wt_join(hf);
	assert_int_equal(h.r, WEFT_IO_IN);
	for (int i = 0; i < WAKERS; i++) {
		for (int j = 0; j < NECHO; j++) {
			wt_join(ef[i][j]);
			assert_int_equal(atomic_load(&k[i].echo[j].failed), 0);
			assert_int_equal(weft_chan_destroy(k[i].echo[j].in), 0);
		}
		assert_int_equal(weft_chan_destroy(k[i].back), 0);
	}
	wt_close(p[0]);
	wt_close(p[1]);
	int rounds = 0;
	for (int i = 0; i < WAKERS; i++) {
		if (k[i].stalled)
			print_message("waker %d: no reply within %d ms in round %d\n", i, STALL_MS,
				      k[i].stalled - 1);
		rounds += k[i].rounds;
	}
	print_message("%d rounds\n", rounds);
	for (int i = 0; i < WAKERS; i++) {
		assert_int_equal(k[i].stalled, 0);
		assert_true(k[i].rounds > 0);
	}
}

static void start2(void)
{
	weft_config_t cfg = {.workers = 2};
	assert_int_equal(weft_init(&cfg), 0);
}

static void stop(void)
{
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
}

/* On the backend the environment chose: epoll on Linux by default, io_uring
 * in make test's WEFT_IO=uring pass, the bare shim's poll on bare metal. */
static void test_plain_threads_wake_the_poller(void **state)
{
	(void)state;
	start2();
	plain_threads_wake_the_poller();
	stop();
}

#if WT_LINUX
/* Whether this machine lets a process set up an io_uring. */
static int uring_works(void)
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

/* $WEFT_IO as the suite found it (main), put back after each test. */
static char saved_io[32];
static int had_io;

static void save_io(void)
{
	const char *s = getenv("WEFT_IO");
	had_io = s != NULL;
	snprintf(saved_io, sizeof saved_io, "%s", s ? s : "");
}

static void restore_io(void)
{
	if (had_io)
		setenv("WEFT_IO", saved_io, 1);
	else
		unsetenv("WEFT_IO");
}

/* The reactor starts at the first wait: make it, then say which backend
 * runs. */
static const struct shim_io_ops *backend(void)
{
	int p[2];
	wt_pipe(p);
	assert_int_equal(weft_fd_wait(p[1], WEFT_IO_OUT, wt_ms(5000)), WEFT_IO_OUT);
	wt_close(p[0]);
	wt_close(p[1]);
	return shim_io_current();
}
#endif

static void test_plain_threads_wake_the_poller_uring(void **state)
{
	(void)state;
#if WT_LINUX
	if (!uring_works()) {
		print_message("io_uring cannot be set up here: nothing to check\n");
		skip();
	}
	setenv("WEFT_IO", "uring", 1);
	start2();
	const struct shim_io_ops *b = backend();
	restore_io();
	assert_ptr_equal(b, &shim_io_uring);
	plain_threads_wake_the_poller();
	stop();
#else
	print_message("the Linux shim's io_uring backend: bare metal has one reactor\n");
	skip();
#endif
}

/* A failed test leaves nothing running for the next one. */
static int clean_up(void **state)
{
	(void)state;
	if (weft__running()) {
		weft_run();
		weft_shutdown();
	}
#if WT_LINUX
	restore_io();
#endif
	return 0;
}

int main(void)
{
#if WT_LINUX
	save_io();
#endif
	/* One test, for running it many times: WT_FILTER=test_name. */
	if (getenv("WT_FILTER"))
		cmocka_set_test_filter(getenv("WT_FILTER"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_plain_threads_wake_the_poller, clean_up),
		cmocka_unit_test_teardown(test_plain_threads_wake_the_poller_uring, clean_up),
	};
	return WT_MAIN("wake", tests, NULL, NULL);
}
