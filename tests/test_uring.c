/* SPDX-License-Identifier: MIT */
/* Choosing the Linux reactor's backend ($WEFT_IO, kernel-shim/linux/io.c):
 * a malformed value fails weft_init; "uring" where io_uring cannot be set
 * up (here: the shim's test hook, as a kernel without it, qemu-user or a
 * seccomp filter would refuse) says so once on stderr and runs on epoll;
 * "uring" where it can runs on io_uring, with multishot polls and with the
 * one-shot polls of a kernel older than 5.13 (the other hook): a byte, a
 * hang-up and a writer's room reach their waiters, a report that came
 * while nobody waited is kept, and a number closed and reused starts
 * clean. The whole of test_io, test_net and the rest run on io_uring in
 * make test's WEFT_IO=uring pass. Linux only. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#if WT_LINUX
#include <sys/syscall.h>

#include "linux/io.h"
#include "service.h"

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

/* Start the runtime with $WEFT_IO=value. */
static int start_with(const char *value)
{
	setenv("WEFT_IO", value, 1);
	weft_config_t cfg = {.workers = 2};
	return weft_init(&cfg);
}

static void stop(void)
{
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	unsetenv("WEFT_IO");
}

struct waiter {
	int fd;
	unsigned events;
	int r;
};

static void *wait_one(void *arg)
{
	struct waiter *w = arg;
	w->r = weft_fd_wait(w->fd, w->events, wt_ms(20000));
	return NULL;
}

static void *wait_drained(void *arg)
{
	struct waiter *w = arg;
	w->r = weft__io_wait_drained(w->fd, w->events, wt_ms(20000));
	return NULL;
}

/* What every backend must do, on the one now in use. */
static void readiness_works(void)
{
	int p[2];
	wt_pipe(p);
	/* A byte wakes a parked reader. */
	struct waiter w = {.fd = p[0], .events = WEFT_IO_IN};
	weft_fiber_t f = wt_spawn_named(wait_one, &w, "reader");
	assert_true(wt_wait_parked("reader", "fd"));
	assert_int_equal(wt_write(p[1], "x", 1), 1);
	wt_join(f);
	assert_int_equal(w.r, WEFT_IO_IN);
	char c;
	assert_int_equal(wt_read(p[0], &c, 1), 1);
	/* A report while nobody waits is kept for a drained wait. */
	assert_int_equal(wt_write(p[1], "y", 1), 1);
	struct waiter d = {.fd = p[0], .events = WEFT_IO_IN};
	wt_run_fiber(wait_drained, &d); /* kept, or on its way: it comes */
	assert_int_equal(d.r, WEFT_IO_IN);
	assert_int_equal(wt_read(p[0], &c, 1), 1);
	/* Room to write: at once. */
	struct waiter o = {.fd = p[1], .events = WEFT_IO_OUT};
	wt_run_fiber(wait_one, &o);
	assert_int_equal(o.r, WEFT_IO_OUT);
	/* The writer's end closed: the reader sees it. */
	f = wt_spawn_named(wait_one, &w, "reader");
	assert_true(wt_wait_parked("reader", "fd"));
	wt_close(p[1]);
	wt_join(f);
	assert_true(w.r & WEFT_IO_IN);
	/* Forgotten, closed, reused: nothing of the old one's. */
	int old = p[0];
	wt_close(p[0]);
	wt_pipe(p);
	assert_int_equal(p[0], old);
	assert_int_equal(weft__io_wait_drained(p[0], WEFT_IO_IN, wt_ms(20)), -ETIMEDOUT);
	f = wt_spawn_named(wait_one, &w, "reader");
	assert_true(wt_wait_parked("reader", "fd"));
	assert_int_equal(wt_write(p[1], "z", 1), 1);
	wt_join(f);
	assert_int_equal(w.r, WEFT_IO_IN);
	/* A regular file cannot be waited on, as with epoll. */
	int reg = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(reg >= 0);
	assert_int_equal(weft_fd_wait(reg, WEFT_IO_IN, 0), -EPERM);
	close(reg);
	wt_close(p[0]);
	wt_close(p[1]);
}

static void test_bad_value_fails_init(void **state)
{
	(void)state;
	setenv("WEFT_IO", "kqueue", 1);
	assert_int_equal(weft_init(NULL), -EINVAL);
	setenv("WEFT_IO", "uring ", 1);
	assert_int_equal(weft_init(NULL), -EINVAL);
	unsetenv("WEFT_IO");
}

/* Run first: the line is said once per process. stderr goes to a file
 * while the runtime starts and waits. */
static void test_fallback_says_why_and_works(void **state)
{
	(void)state;
	char path[] = "/tmp/weft-uring-XXXXXX";
	int tmp = mkstemp(path);
	assert_true(tmp >= 0);
	unlink(path);
	fflush(stderr);
	int saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(tmp, 2), 2);
	shim_io_uring_refuse = ENOSYS;
	assert_int_equal(start_with("uring"), 0);
	int p[2];
	wt_pipe(p);
	struct waiter w = {.fd = p[0], .events = WEFT_IO_IN};
	assert_int_equal(wt_write(p[1], "x", 1), 1);
	wt_run_fiber(wait_one, &w);
	const struct shim_io_ops *used = shim_io_current();
	dup2(saved, 2);
	close(saved);
	shim_io_uring_refuse = 0;
	assert_int_equal(w.r, WEFT_IO_IN);
	assert_ptr_equal(used, &shim_io_epoll);
	char buf[400] = {0};
	assert_true(pread(tmp, buf, sizeof buf - 1, 0) > 0);
	close(tmp);
	assert_non_null(strstr(buf, "weft: WEFT_IO=uring: "));
	assert_non_null(strstr(buf, "using epoll"));
	assert_ptr_equal(strchr(buf, '\n'), buf + strlen(buf) - 1); /* one line */
	readiness_works();
	wt_close(p[0]);
	wt_close(p[1]);
	stop();
}

static void test_epoll_by_default(void **state)
{
	(void)state;
	assert_int_equal(start_with(""), 0);
	readiness_works();
	assert_ptr_equal(shim_io_current(), &shim_io_epoll);
	stop();
}

static void on_uring(int oneshot)
{
	if (!uring_works()) {
		print_message("io_uring cannot be set up here: nothing to check\n");
		skip();
	}
	shim_io_uring_oneshot = oneshot;
	assert_int_equal(start_with("uring"), 0);
	readiness_works();
	const struct shim_io_ops *used = shim_io_current();
	stop();
	shim_io_uring_oneshot = 0;
	assert_ptr_equal(used, &shim_io_uring);
}

static void test_uring_multishot(void **state)
{
	(void)state;
	on_uring(0);
}

static void test_uring_oneshot(void **state)
{
	(void)state;
	on_uring(1);
}

#define URING_TEST(f) cmocka_unit_test(f)
#else
#define URING_TEST(f)      \
	{                  \
		.name = #f \
	}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		URING_TEST(test_fallback_says_why_and_works),
		URING_TEST(test_bad_value_fails_init),
		URING_TEST(test_epoll_by_default),
		URING_TEST(test_uring_multishot),
		URING_TEST(test_uring_oneshot),
	};
#if WT_LINUX
	return WT_MAIN("uring", tests, NULL, NULL);
#else
	return wt_skip_group("uring", tests, sizeof tests / sizeof tests[0],
			     "the Linux shim's backends: bare metal has one reactor");
#endif
}
