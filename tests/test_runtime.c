/* SPDX-License-Identifier: MIT */
/* Starting and stopping the runtime: configuration and its errors, the
 * environment variables, repeated init/shutdown, a shutdown under a plain
 * thread's fd wait, and allocation failure while spawning (-ENOMEM, and the
 * runtime keeps running). */
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#if WT_LINUX
#include <sys/resource.h>
#include <sys/wait.h>
#endif

static void *ret_arg(void *arg) { return arg; }

static void test_calls_before_init(void **state)
{
	(void)state;
	weft_fiber_t f;
	assert_int_equal(weft_run(), -ESRCH);
	assert_int_equal(weft_shutdown(), -ESRCH);
	assert_int_equal(weft_workers(), 0);
	assert_int_equal(weft_fiber_spawn(&f, NULL, ret_arg, NULL), -ESRCH);
}

static void test_init_twice_and_cycles(void **state)
{
	(void)state;
	for (int i = 0; i < 5; i++) {
		assert_int_equal(weft_init(NULL), 0);
		assert_int_equal(weft_init(NULL), -EALREADY);
		weft_fiber_t f;
		void *r;
		assert_int_equal(weft_fiber_spawn(&f, NULL, ret_arg, (void *)(intptr_t)i), 0);
		assert_int_equal(weft_fiber_join(f, -1, &r, NULL), 0);
		assert_int_equal((intptr_t)r, i);
		assert_int_equal(weft_run(), 0);
		assert_int_equal(weft_shutdown(), 0);
	}
}

static void test_config_bad(void **state)
{
	(void)state;
	weft_config_t many = {.workers = 17};
	assert_int_equal(weft_init(&many), -EINVAL);
	weft_config_t tiny = {.stack_size = 1024};
	assert_int_equal(weft_init(&tiny), -EINVAL);
	weft_config_t huge = {.stack_size = (size_t)2 << 30};
	assert_int_equal(weft_init(&huge), -EINVAL);
	assert_int_equal(weft_workers(), 0);
}

static void test_config_workers(void **state)
{
	(void)state;
	weft_config_t c = {.workers = 3};
	assert_int_equal(weft_init(&c), 0);
	assert_int_equal(weft_workers(), 3);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
}

static void test_env_workers(void **state)
{
	(void)state;
	setenv("WEFT_WORKERS", "5", 1);
	assert_int_equal(weft_init(NULL), 0);
	assert_int_equal(weft_workers(), 5);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	const char *bad[] = {"0", "17", "abc", "3x", "-2"};
	for (int i = 0; i < 5; i++) {
		setenv("WEFT_WORKERS", bad[i], 1);
		assert_int_equal(weft_init(NULL), -EINVAL);
	}
	/* An explicit configuration wins over the environment. */
	weft_config_t c = {.workers = 2};
	assert_int_equal(weft_init(&c), 0);
	assert_int_equal(weft_workers(), 2);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	unsetenv("WEFT_WORKERS");
}

static void *use_stack(void *arg)
{
	size_t n = (size_t)(uintptr_t)arg;
	volatile char *buf = __builtin_alloca(n);
	memset((char *)buf, 7, n);
	return (void *)(uintptr_t)(buf[0] + buf[n - 1]);
}

static void test_env_stack_kb(void **state)
{
	(void)state;
	setenv("WEFT_STACK_KB", "256", 1);
	assert_int_equal(weft_init(NULL), 0);
	weft_fiber_t f;
	void *r;
	/* 200 KiB of locals only fit in the larger default stack. */
	assert_int_equal(weft_fiber_spawn(&f, NULL, use_stack, (void *)(uintptr_t)(200 * 1024)), 0);
	assert_int_equal(weft_fiber_join(f, -1, &r, NULL), 0);
	assert_int_equal((uintptr_t)r, 14);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	const char *bad[] = {"0", "2", "9999999999", "64k"};
	for (int i = 0; i < 4; i++) {
		setenv("WEFT_STACK_KB", bad[i], 1);
		assert_int_equal(weft_init(NULL), -EINVAL);
	}
	unsetenv("WEFT_STACK_KB");
}

/* A refused weft_init says why: the variable or field, the value, and what
 * is accepted, in weft_init_error and on the console. */
struct init_case {
	const char *var, *value; /* an environment variable, or NULL */
	weft_config_t cfg;       /* used when var is NULL */
	const char *says[3];     /* each must appear in the text */
};

static const struct init_case init_cases[] = {
	{"WEFT_WORKERS", "abc", {0}, {"WEFT_WORKERS=abc", "from 1 to 16"}},
	{"WEFT_WORKERS", "1000", {0}, {"WEFT_WORKERS=1000", "from 1 to 16"}},
	{"WEFT_STACK_KB", "3", {0}, {"WEFT_STACK_KB=3", "from 4 to 1048576"}},
	{"WEFT_GUARD_KB", "x", {0}, {"WEFT_GUARD_KB=x", "from 4 to"}},
	{"WEFT_STALL_MS", "-1", {0}, {"WEFT_STALL_MS=-1", "from 0 to 3600000"}},
	{"WEFT_CLOCK", "fake", {0}, {"WEFT_CLOCK=fake", "real or virtual"}},
	{NULL, NULL, {.workers = 17}, {"workers 17", "at most 16"}},
	{NULL, NULL, {.stack_size = 1024}, {"stack_size 1024", "from 4096"}},
	{NULL, NULL, {.flags = 0x100}, {"flags 0x100", "unknown bits 0x100"}},
	{NULL,
	 NULL,
	 {.flags = WEFT_CFG_VIRTUAL_CLOCK | WEFT_CFG_REAL_CLOCK},
	 {"WEFT_CFG_VIRTUAL_CLOCK and WEFT_CFG_REAL_CLOCK"}},
	{NULL, NULL, {.workers = 2, .flags = WEFT_CFG_HOST_LOOP}, {"workers 2", "0 or 1"}},
	{NULL, NULL, {.stall_ms = -5}, {"stall_ms -5", "WEFT_STALL_OFF"}},
};

#if WT_LINUX
#include <fcntl.h>
/* What weft_init wrote on stderr while refusing c (Linux: fd 2 to a file). */
static void console_of(const struct init_case *c, char *out, size_t cap)
{
	char path[] = "/tmp/weft-init-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	fflush(stderr);
	int saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	int r = weft_init(c->var ? NULL : &c->cfg);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	assert_int_equal(r, -EINVAL);
	ssize_t n = pread(fd, out, cap - 1, 0);
	close(fd);
	out[n > 0 ? n : 0] = 0;
}
#endif

static void test_init_errors_say_why(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof init_cases / sizeof init_cases[0]; i++) {
		const struct init_case *c = &init_cases[i];
		if (c->var)
			setenv(c->var, c->value, 1);
		assert_int_equal(weft_init(c->var ? NULL : &c->cfg), -EINVAL);
		const char *why = weft_init_error();
		for (int k = 0; k < 3 && c->says[k]; k++) {
			if (!strstr(why, c->says[k]))
				fail_msg("case %zu: \"%s\" does not say \"%s\"", i, why,
					 c->says[k]);
		}
#if WT_LINUX
		char line[256];
		console_of(c, line, sizeof line);
		char want[256];
		snprintf(want, sizeof want, "weft_init: %s\n", why);
		assert_string_equal(line, want);
#endif
		if (c->var)
			unsetenv(c->var);
	}
	/* The reactor's backend, where the shim has a choice (Linux). */
	if (WT_LINUX) {
		setenv("WEFT_IO", "kqueue", 1);
		assert_int_equal(weft_init(NULL), -EINVAL);
		assert_non_null(strstr(weft_init_error(), "WEFT_IO=kqueue"));
		assert_non_null(strstr(weft_init_error(), "epoll, uring"));
		unsetenv("WEFT_IO");
	}
	/* A success clears it; a second init while running is refused too. */
	assert_int_equal(weft_init(NULL), 0);
	assert_string_equal(weft_init_error(), "");
	assert_int_equal(weft_init(NULL), -EALREADY);
	assert_non_null(strstr(weft_init_error(), "already running"));
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
}

static void *park_on(void *arg)
{
	return (void *)(intptr_t)weft_future_await(arg, wt_ms(60000), NULL);
}

static void test_shutdown_busy(void **state)
{
	(void)state;
	assert_int_equal(weft_init(NULL), 0);
	weft_future_t *gate;
	assert_int_equal(weft_future_create(&gate), 0);
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, park_on, gate), 0);
	assert_int_equal(weft_shutdown(), -EBUSY);
	assert_int_equal(weft_future_resolve(gate, NULL), 0);
	void *r;
	assert_int_equal(weft_fiber_join(f, -1, &r, NULL), 0);
	assert_null(r);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	weft_future_release(gate);
}

/* A plain thread blocked in weft_fd_wait when weft_shutdown stops the
 * runtime: its wait ends then with -ESRCH (the runtime is not running), and
 * nothing of the runtime is left for it to touch. Its own deadline (2 s) is
 * the one thing that would end the wait otherwise, and it is what would have
 * it clear its slot in the reactor's table after the table was freed. The
 * thread is given 100 ms to park before the shutdown; if it did not (a badly
 * loaded machine), it timed out before the shutdown began or found the
 * runtime stopped: both are allowed, and the wait it took is printed. */
struct fd_waiter {
	int fd;
	_Atomic int entered, done;
	int r;
	int64_t returned;
};

static void *wait_fd(void *arg)
{
	struct fd_waiter *w = arg;
	atomic_store(&w->entered, 1);
	w->r = weft_fd_wait(w->fd, WEFT_IO_IN, wt_ms(2000));
	w->returned = weft_now();
	atomic_store(&w->done, 1);
	return NULL;
}

/* Wait (at most 5 s) until *flag is set; weft_sleep_until from this plain
 * thread is a real sleep, not a timer of the runtime's. */
static int wait_set(_Atomic int *flag)
{
	int64_t end = wt_ms(5000);
	while (!atomic_load(flag) && weft_now() < end)
		weft_sleep_until(wt_ms(1));
	return atomic_load(flag);
}

static void test_shutdown_ends_plain_thread_fd_wait(void **state)
{
	(void)state;
	for (int round = 0; round < 3; round++) {
		assert_int_equal(weft_init(NULL), 0);
		int p[2];
		wt_pipe(p);
		struct fd_waiter w = {.fd = p[0], .r = 1};
		wt_thread_t t = wt_thread_start(wait_fd, &w);
		assert_true(wait_set(&w.entered));
		weft_sleep_until(wt_ms(100)); /* let it park */
		int64_t stop = weft_now();
		assert_int_equal(weft_shutdown(), 0);
		int done = wait_set(&w.done);
		wt_thread_join(t);
		assert_true(done);
		if (w.returned < stop) {
			print_message("round %d: the wait timed out before the shutdown (%d)\n",
				      round, w.r);
			assert_int_equal(w.r, -ETIMEDOUT);
		} else {
			assert_int_equal(w.r, -ESRCH);
		}
		/* The runtime is not running: a new wait fails at once. */
		assert_int_equal(weft_fd_wait(p[0], WEFT_IO_IN, wt_ms(1000)), -ESRCH);
		wt_close(p[0]);
		wt_close(p[1]);
	}
}

#if WT_LINUX
/* Limit the address space to what is mapped now plus 256 MiB. */
static int limit_memory(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long pages = 0;
	if (!f || fscanf(f, "%lu", &pages) != 1)
		return 12;
	fclose(f);
	struct rlimit rl;
	rl.rlim_cur = rl.rlim_max = pages * (unsigned long)sysconf(_SC_PAGESIZE) + (256ul << 20);
	if (setrlimit(RLIMIT_AS, &rl) != 0)
		return 13;
	return 0;
}
#endif

/* Spawn fibers with 1 MiB stacks that all stay parked until spawning fails
 * (in a child process with an address-space limit on Linux; on bare metal RAM
 * itself runs out). It must fail with -ENOMEM (not crash), the fibers already
 * spawned must still run to completion, and spawning must work again once
 * their stacks are free. Returns 0, or the step that failed. */
static int spawn_until_enomem(void)
{
	weft_config_t c = {.workers = 2};
	if (weft_init(&c) != 0)
		return 10;
	weft_future_t *gate;
	if (weft_future_create(&gate) != 0)
		return 11;
#if WT_LINUX
	int e = limit_memory();
	if (e)
		return e;
#endif
	weft_attr_t big = {.stack_size = 1 << 20};
	int n = 0, err = 0;
	for (; n < 100000; n++) {
		err = weft_fiber_spawn(NULL, &big, park_on, gate);
		if (err)
			break;
	}
	if (err != -ENOMEM)
		return 14;
	if (n < 10)
		return 15; /* the limit left no room at all: the test proves nothing */
	if (weft_future_resolve(gate, NULL) != 0)
		return 16;
	if (weft_run() != 0)
		return 17;
	weft_fiber_t h;
	void *r;
	if (weft_fiber_spawn(&h, &big, ret_arg, (void *)5) != 0 ||
	    weft_fiber_join(h, -1, &r, NULL) != 0 || r != (void *)5)
		return 18;
	if (weft_shutdown() != 0)
		return 19;
	return 0;
}

static void test_spawn_enomem_keeps_running(void **state)
{
	(void)state;
#if WT_LINUX
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/* Sanitizers reserve terabytes of shadow: RLIMIT_AS cannot work. */
	print_message("skipped under a sanitizer (RLIMIT_AS and shadow memory)\n");
	skip();
#endif
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(spawn_until_enomem());
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
#else
	assert_int_equal(spawn_until_enomem(), 0);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calls_before_init),
		cmocka_unit_test(test_init_twice_and_cycles),
		cmocka_unit_test(test_config_bad),
		cmocka_unit_test(test_config_workers),
		cmocka_unit_test(test_env_workers),
		cmocka_unit_test(test_env_stack_kb),
		cmocka_unit_test(test_init_errors_say_why),
		cmocka_unit_test(test_shutdown_busy),
		cmocka_unit_test(test_shutdown_ends_plain_thread_fd_wait),
		cmocka_unit_test(test_spawn_enomem_keeps_running),
	};
	return WT_MAIN("runtime", tests, NULL, NULL);
}
