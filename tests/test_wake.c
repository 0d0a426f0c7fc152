/* SPDX-License-Identifier: MIT */
/* Waking a worker asleep in the reactor's poll (shim_io_wake), on every
 * backend: plain threads ready fibers pinned to both workers while another
 * fiber waits on a pipe, so that an idle worker sleeps in the poll and the
 * wakes aimed at it come from several threads at once; each reply must come
 * within a bound (on epoll with the poller's drain held up: read below). And
 * weft_fiber_interrupt from a signal handler (which weft.h says takes no
 * lock) every ~200 us while fibers wait on pipes, with epoll and with
 * io_uring: the handler may stop a thread that holds the backend's lock. A
 * lost wake or a deadlock shows as a reply or progress that does not come
 * within a bound many times longer than a loaded machine takes, but far
 * shorter than any deadline that would rescue the waiter. */
#include <stdlib.h>
#include <string.h>

#include "service.h"
#include "testutil.h"
#if WT_LINUX
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
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
 * the poller stops. Left to chance, the window around the drain where the
 * flag once went wrong was hit after seconds of rounds, often not within
 * the budget; held open, within a few hundred rounds. Every other read is
 * the plain system call (the sanitizers' interceptor of read is passed by,
 * which only costs them a look at the buffers). */
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
	if (!wt_uring_works()) {
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

/* ---- weft_fiber_interrupt from a signal handler --------------------------
 * In a child process: a deadlocked worker cannot be shut down, so the child
 * runs the storm under a watchdog of its own (its main thread, which blocks
 * the signal) and exits with a status that says how it went; the parent
 * kills it if it outlives even that. The child uses no CMocka assertion:
 * one would jump back into the parent's copy of the test. */
#if WT_LINUX
#define STORM_SIGNALS 10000
#define STORM_READERS 4
#define STORM_MS 20000 /* the storm's own bound: its signals take ~2 s */
#define STORM_STALL_MS 5000

static _Atomic weft_fiber_t storm_target[STORM_READERS];
static _Atomic unsigned storm_signals;

static void on_alarm(int sig)
{
	(void)sig;
	unsigned n = atomic_fetch_add(&storm_signals, 1);
	weft_fiber_t f = atomic_load(&storm_target[n % STORM_READERS]);
	if (f)
		(void)weft_fiber_interrupt(f);
}

struct reader {
	int fd;
	_Atomic int stop;
	_Atomic long waits, cancels;
	_Atomic int failed;
};

/* Read what comes; every wait ends with a byte or an interrupt. */
static void *reader_main(void *arg)
{
	struct reader *r = arg;
	while (!atomic_load(&r->stop)) {
		char buf[64];
		long n = wt_read(r->fd, buf, sizeof buf);
		if (n > 0)
			continue;
		if (n != -EAGAIN) {
			atomic_store(&r->failed, 1);
			break;
		}
		int e = weft_fd_wait(r->fd, WEFT_IO_IN, wt_ms(60000));
		atomic_fetch_add(&r->waits, 1);
		if (e == -ECANCELED) {
			atomic_fetch_add(&r->cancels, 1);
		} else if (e < 0) {
			atomic_store(&r->failed, 1);
			break;
		}
	}
	return NULL;
}

/* The progress the watchdog looks at: every wait that ended. */
static long storm_progress(struct reader *r)
{
	long n = 0;
	for (int i = 0; i < STORM_READERS; i++)
		n += atomic_load(&r[i].waits);
	return n;
}

static void sleep_us(long us)
{
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = us % 1000000 * 1000};
	nanosleep(&ts, NULL);
}

/* The child's whole run, on backend io ("epoll", "uring"): 0 passed, else
 * the step that failed. */
static int storm(const char *io)
{
	setenv("WEFT_IO", io, 1);
	weft_config_t cfg = {.workers = 2};
	if (weft_init(&cfg) != 0)
		return 10;
	static struct reader rd[STORM_READERS];
	weft_fiber_t f[STORM_READERS];
	int p[STORM_READERS][2];
	for (int i = 0; i < STORM_READERS; i++) {
		if (pipe2(p[i], O_NONBLOCK | O_CLOEXEC) != 0)
			return 11;
		rd[i].fd = p[i][0];
		if (weft_fiber_spawn(&f[i], NULL, reader_main, &rd[i]) != 0)
			return 11;
		atomic_store(&storm_target[i], f[i]);
	}
	/* The backend is chosen at the first wait: by now, one has begun. */
	int64_t until = wt_ms(STORM_STALL_MS);
	while (!shim_io_current() && weft_now() < until)
		sleep_us(1000);
	const struct shim_io_ops *b = shim_io_current();
	if (!b || strcmp(b->name, strcmp(io, "uring") == 0 ? "io_uring" : "epoll") != 0)
		return 12;
	/* The workers, started above, take the signals; this thread (the
	 * watchdog) blocks them, so that it cannot be stuck in a handler. */
	sigset_t alrm;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	struct sigaction sa = {0};
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) != 0 || pthread_sigmask(SIG_BLOCK, &alrm, NULL) != 0)
		return 13;
	struct itimerval it = {.it_interval = {.tv_usec = 200}, .it_value = {.tv_usec = 200}};
	if (setitimer(ITIMER_REAL, &it, NULL) != 0)
		return 13;
	/* A byte now and then takes the readers through the backend's lock
	 * (a report, a re-arm); the interrupts go through its wake. */
	int64_t end = wt_ms(STORM_MS), seen = weft_now();
	long last = storm_progress(rd);
	int status = 0;
	/* A fifth under full-system emulation of a Linux kernel (WT_SLOW, set
	 * by qemu/run-rv-kernel.sh): there 6,242 of 10,000 came in the 20 s at
	 * load 6 on 2 cores (2026-12-02). */
	long signals = getenv("WT_SLOW") != NULL ? STORM_SIGNALS / 5 : STORM_SIGNALS;
	for (unsigned n = 0; atomic_load(&storm_signals) < signals; n++) {
		int64_t now = weft_now();
		long done = storm_progress(rd);
		if (done != last) {
			last = done;
			seen = now;
		} else if (now - seen > (int64_t)STORM_STALL_MS * 1000000) {
			status = 20; /* no wait ended for STORM_STALL_MS: stuck */
			break;
		}
		if (now > end) {
			status = 21; /* moving, but too slowly */
			break;
		}
		(void)wt_write(p[n % STORM_READERS][1], "x", 1);
		sleep_us(100);
	}
	struct itimerval off = {0};
	setitimer(ITIMER_REAL, &off, NULL);
	long cancels = 0;
	for (int i = 0; i < STORM_READERS; i++)
		cancels += atomic_load(&rd[i].cancels);
	fprintf(stderr, "storm on %s: %u signals, %ld waits ended, %ld by an interrupt\n", io,
		atomic_load(&storm_signals), storm_progress(rd), cancels);
	if (status)
		return status; /* a deadlocked runtime cannot be shut down */
	for (int i = 0; i < STORM_READERS; i++) {
		atomic_store(&rd[i].stop, 1);
		(void)wt_write(p[i][1], "x", 1);
	}
	for (int i = 0; i < STORM_READERS; i++) {
		void *res;
		if (weft_fiber_join(f[i], wt_ms(STORM_STALL_MS), &res, NULL) != 0)
			return 22;
		atomic_store(&storm_target[i], 0);
		if (atomic_load(&rd[i].failed))
			return 23;
		weft_fd_forget(p[i][0]);
		close(p[i][0]);
		close(p[i][1]);
	}
	if (!cancels)
		return 24; /* the interrupts reached nobody */
	if (weft_run() != 0 || weft_shutdown() != 0)
		return 25;
	return 0;
}

/* Run storm(io) in a child: its exit status, 100 + the signal that ended
 * it, or -1 if it had to be killed. */
static int storm_in_child(const char *io)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Failed, the runtime may still run: no exit handlers then.
		 * Passed, exit: a coverage build keeps its counts. */
		int r = storm(io);
		if (r)
			_exit(r);
		exit(0);
	}
	/* The child bounds itself; this is the backstop if it cannot. */
	int status = 0;
	int64_t end = wt_ms(STORM_MS + 2 * STORM_STALL_MS);
	while (weft_now() < end) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		assert_true(w >= 0);
		if (w == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
		sleep_us(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* The storm on io, in a child, asserted to pass (what failed is said). */
static void storm_passes(const char *io)
{
	int r = storm_in_child(io);
	if (r)
		print_message("storm on %s: %s (%d)\n", io,
			      r == 20   ? "no wait ended for 5 s: a deadlock or a lost wake"
			      : r == 21 ? "too slow: the signals did not all come in 20 s"
			      : r == 24 ? "no interrupt reached a fiber"
			      : r < 0   ? "killed after 30 s"
					: "a step failed",
			      r);
	assert_int_equal(r, 0);
}
#endif

static void test_interrupt_storm_epoll(void **state)
{
	(void)state;
#if WT_LINUX
	storm_passes("epoll");
#else
	print_message("no signals on bare metal (test_irq interrupts from a PLIC "
		      "handler); skipped\n");
	skip();
#endif
}

static void test_interrupt_storm_uring(void **state)
{
	(void)state;
#if WT_LINUX
	if (!wt_uring_works()) {
		print_message("io_uring cannot be set up here: nothing to check\n");
		skip();
	}
	storm_passes("uring");
#else
	print_message("no signals on bare metal (test_irq interrupts from a PLIC "
		      "handler); skipped\n");
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
		cmocka_unit_test_teardown(test_interrupt_storm_epoll, clean_up),
		cmocka_unit_test_teardown(test_interrupt_storm_uring, clean_up),
	};
	return WT_MAIN("wake", tests, NULL, NULL);
}
