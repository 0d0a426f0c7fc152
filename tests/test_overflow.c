/* SPDX-License-Identifier: MIT */
/* A fiber that overflows its stack hits the guard page, and the fault handler
 * names it (its weft_fiber_t, name, stack size, spawn site, parent) before aborting.
 *
 * On Linux each overflow happens in a child process; the test reads the
 * child's stderr. On bare metal an overflow ends the machine, so each case is
 * a boot of its own: tests/test_overflow.bare.sh boots this image with
 * WT_CASE=<case> and checks the console and the exit status. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch_cpu.h"
#include "internal.h"
#include "shim.h"
#include "testutil.h"
#if WT_LINUX
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#endif

static volatile int limit = 1 << 30; /* never reached: the stack ends first */

static __attribute__((noinline)) int recurse(volatile char *prev, int depth)
{
	volatile char frame[512];
	frame[0] = (char)depth;
	frame[511] = prev ? prev[0] : 0;
	if (depth == limit)
		return 0;
	return recurse(frame, depth + 1) + frame[100];
}

static void *overflow(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)recurse(NULL, 0);
}

static void *spawn_overflower(void *arg)
{
	weft_attr_t attr = {.name = "deep-child", .stack_size = (size_t)(uintptr_t)arg};
	weft_fiber_t f;
	if (weft_fiber_spawn(&f, &attr, overflow, NULL) != 0)
		return (void *)1;
	weft_fiber_join(f, -1, NULL, NULL);
	return NULL;
}

/* Large frames past the end of a full stack. A fiber fills its stack to
 * within about 2 KiB of the bottom, then calls a function whose frame is 12,
 * 32 or 60 KiB and writes its lowest byte first. Another fiber's stack of the
 * same size lies just below the guard (stacks are carved upwards), so a frame
 * that jumped the guard would write into it silently; the report must name
 * the filling fiber. */
#define BIG_FRAME(kb)                                         \
	static __attribute__((noinline)) int frame_##kb(void) \
	{                                                     \
		volatile char buf[kb * 1024];                 \
		buf[0] = 1;                                   \
		buf[sizeof buf - 1] = 2;                      \
		return buf[0] + buf[sizeof buf - 1];          \
	}
BIG_FRAME(12)
BIG_FRAME(32)
BIG_FRAME(60)

#define BIG_STACK (32 * 1024)

static int (*big_frame)(void);
static uintptr_t fill_floor; /* fill the stack down to here */

static __attribute__((noinline)) int fill(int depth)
{
	volatile char frame[256];
	frame[0] = (char)depth;
	if ((uintptr_t)frame > fill_floor)
		return fill(depth + 1) + frame[0];
	return big_frame() + frame[0];
}

static void *fill_then_big(void *arg)
{
	(void)arg;
	volatile char here;
	/* The stack's top is a few hundred bytes above here. */
	fill_floor = (uintptr_t)&here - (BIG_STACK - 2048);
	return (void *)(intptr_t)fill(0);
}

static weft_sem_t *below_gate;

static void *wait_below(void *arg)
{
	(void)arg;
	weft_sem_acquire(below_gate, -1);
	return NULL;
}

static void big_frame_overflow(size_t kb)
{
	big_frame = kb == 12 ? frame_12 : kb == 32 ? frame_32 : frame_60;
	if (weft_init(NULL) != 0 || weft_sem_create(&below_gate, 0) != 0)
		_exit(3);
	weft_attr_t below = {.name = "below", .stack_size = BIG_STACK};
	weft_attr_t deep = {.name = "deep", .stack_size = BIG_STACK};
	weft_fiber_t b, f;
	if (weft_fiber_spawn(&b, &below, wait_below, NULL) != 0 ||
	    weft_fiber_spawn(&f, &deep, fill_then_big, NULL) != 0)
		_exit(4);
	weft_fiber_join(f, -1, NULL, NULL);
	weft_sem_release(below_gate);
	weft_fiber_join(b, -1, NULL, NULL);
}

/* A link of the spawn chain the report names: "grandparent" spawns
 * "parent-fiber", which spawns the overflowing "deep-child". */
static void *spawn_parent(void *arg)
{
	weft_attr_t attr = {.name = "parent-fiber"};
	weft_fiber_t f;
	if (weft_fiber_spawn(&f, &attr, spawn_overflower, arg) != 0)
		return (void *)1;
	weft_fiber_join(f, -1, NULL, NULL);
	return NULL;
}

#if WT_LINUX
/* Run body in a child with stderr captured; return its wait status. */
static int in_child(void (*body)(size_t), size_t arg, char *out, size_t cap)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		body(arg);
		_exit(0); /* the overflow was not caught */
	}
	close(fds[1]);
	size_t n = 0;
	ssize_t r;
	while (n < cap - 1 && (r = read(fds[0], out + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(fds[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

#endif

/* Spawn "deep" from the plain thread and let it overflow. */
static void overflow_deep(size_t stack)
{
	weft_attr_t attr = {.name = "deep", .stack_size = stack};
	weft_fiber_t f;
	if (weft_fiber_spawn(&f, &attr, overflow, NULL) != 0)
		_exit(4);
	weft_fiber_join(f, -1, NULL, NULL);
}

static void overflow_from_main(size_t stack)
{
	if (weft_init(NULL) != 0)
		_exit(3);
	overflow_deep(stack);
}

static void overflow_from_fiber(size_t stack)
{
	if (weft_init(NULL) != 0)
		_exit(3);
	weft_attr_t attr = {.name = "grandparent"};
	weft_fiber_t f;
	if (weft_fiber_spawn(&f, &attr, spawn_parent, (void *)(uintptr_t)stack) != 0)
		_exit(4);
	weft_fiber_join(f, -1, NULL, NULL);
}

#if WT_LINUX
static void expect_report(int status, const char *out, const char *name, size_t size)
{
	char want[128];
	print_message("%s", out);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	snprintf(want, sizeof want, "\"%s\" overflowed its stack of %zu bytes", name, size);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "weft: fiber "));
	assert_non_null(strstr(out, "spawned at tests/test_overflow.c:"));
}

static void test_overflow_named_default_stack(void **state)
{
	(void)state;
	char out[2048];
	int st = in_child(overflow_from_main, 0, out, sizeof out);
	expect_report(st, out, "deep", 64 * 1024);
	assert_non_null(strstr(out, "by a plain thread"));
}

static void test_overflow_small_stack_names_spawn_chain(void **state)
{
	(void)state;
	char out[2048];
	int st = in_child(overflow_from_fiber, 16 * 1024, out, sizeof out);
	expect_report(st, out, "deep-child", 16 * 1024);
	/* The whole chain, up to the plain thread that spawned the first. */
	assert_non_null(strstr(out, " by fiber "));
	assert_non_null(strstr(out, "\"parent-fiber\" <- fiber "));
	assert_non_null(strstr(out, "\"grandparent\" <- a plain thread"));
}

static void test_overflow_odd_size(void **state)
{
	(void)state;
	char out[2048];
	/* A size no pool has: a mapping of its own, guarded all the same. */
	int st = in_child(overflow_from_main, 200 * 1024 + 100, out, sizeof out);
	expect_report(st, out, "deep", 204 * 1024);
}

static void test_overflow_big_frames(void **state)
{
	(void)state;
	char out[2048];
	const size_t kbs[] = {12, 32, 60};
	for (size_t i = 0; i < 3; i++) {
		print_message("%zu KiB frame\n", kbs[i]);
		int st = in_child(big_frame_overflow, kbs[i], out, sizeof out);
		expect_report(st, out, "deep", BIG_STACK);
	}
}

/* $WEFT_GUARD_KB sets the guard of stacks allocated after weft_init; past
 * its limit weft_init refuses; unset, the CPU's default is back. */
static void guard_sizes(size_t unused)
{
	(void)unused;
	struct shim_stack s;
	setenv("WEFT_GUARD_KB", "2048", 1);
	if (weft_init(NULL) != -EINVAL)
		_exit(10);
	setenv("WEFT_GUARD_KB", "128", 1);
	if (weft_init(NULL) != 0 || shim_stack_alloc(8192, &s) != 0)
		_exit(11);
	if (s.guard != 128 * 1024)
		_exit(12);
	shim_stack_free(&s);
	weft_shutdown();
	unsetenv("WEFT_GUARD_KB");
	if (weft_init(NULL) != 0 || shim_stack_alloc(8192, &s) != 0)
		_exit(13);
	if (s.guard != shim_stack_round(ARCH_STACK_GUARD))
		_exit(14);
	_exit(0);
}

static void test_guard_size_configurable(void **state)
{
	(void)state;
	char out[512];
	int st = in_child(guard_sizes, 0, out, sizeof out);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static volatile uintptr_t bad_addr = 16;

static void foreign_handler(int sig)
{
	(void)sig;
	static const char msg[] = "previous handler ran\n";
	if (write(2, msg, sizeof msg - 1) < 0)
		_exit(43);
	_exit(42);
}

static void fault_outside_stacks(size_t unused)
{
	(void)unused;
	signal(SIGSEGV, foreign_handler);
	if (weft_init(NULL) != 0)
		_exit(3);
	volatile int *bad = (volatile int *)bad_addr; /* not a fiber's guard page */
	*bad = 1;
}

/* A fault that is not a stack overflow goes to the handler the program had
 * before weft_init, untouched. */
static void test_foreign_fault_passed_on(void **state)
{
	(void)state;
	char out[512];
	int st = in_child(fault_outside_stacks, 0, out, sizeof out);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 42);
	assert_non_null(strstr(out, "previous handler ran"));
	assert_null(strstr(out, "overflowed"));
}

/* A program's own SIGSEGV handler, installed before weft_init, that recovers
 * from the faults it expects: a store to a page it keeps PROT_NONE (it opens
 * the page and returns, as a GC's write barrier does) and a load from
 * bad_addr (it jumps back, as a probing library does). */
static char *owned;
static size_t owned_len;
static volatile int recovered;
static sigjmp_buf probe_env;

static void recovering_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	char *a = si->si_addr;
	if (owned && a >= owned && a < owned + owned_len) {
		size_t p = (size_t)sysconf(_SC_PAGESIZE);
		mprotect((void *)((uintptr_t)a & ~(p - 1)), p, PROT_READ | PROT_WRITE);
		recovered++;
		return;
	}
	if ((uintptr_t)a == bad_addr) {
		recovered++;
		siglongjmp(probe_env, 1);
	}
	_exit(44); /* a fault it did not expect: weft passed on an overflow */
}

static void recover_then_overflow(size_t stack)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = recovering_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	size_t p = (size_t)sysconf(_SC_PAGESIZE);
	owned_len = 2 * p;
	owned = mmap(NULL, owned_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (owned == MAP_FAILED || weft_init(NULL) != 0)
		_exit(3);
	owned[0] = 1;     /* foreign fault 1: the handler opens the page */
	owned[p + 1] = 2; /* foreign fault 2 */
	if (!sigsetjmp(probe_env, 1))
		(void)*(volatile int *)bad_addr; /* foreign fault 3: it jumps back */
	char msg[64];
	int n = snprintf(msg, sizeof msg, "recovered %d, values %d %d\n", recovered, owned[0],
			 owned[p + 1]);
	if (write(2, msg, (size_t)n) < 0)
		_exit(45);
	overflow_deep(stack);
}

/* A foreign fault the program's handler recovers from leaves weft's handler
 * in place: a later overflow is still reported. */
static void test_foreign_fault_recovered_overflow_still_reported(void **state)
{
	(void)state;
	char out[2048];
	int st = in_child(recover_then_overflow, 16 * 1024, out, sizeof out);
	assert_non_null(strstr(out, "recovered 3, values 1 2\n"));
	expect_report(st, out, "deep", 16 * 1024);
}

/* With the default action, or SIGSEGV ignored, a real fault kills the
 * process with SIGSEGV as it would without weft (the kernel does not let a
 * fault be ignored); a SIGSEGV sent to the thread (raise) is dropped when
 * ignored and kills by default. arg: bit 0 ignore, bit 1 send instead of
 * fault. Sent to this thread, not with kill() to the process: a signal sent
 * to the process may be taken by a worker thread, and the default action
 * on another thread races with the _exit below (seen once, under
 * --coverage: exit 46 instead of SIGSEGV). */
static void foreign_unhandled(size_t arg)
{
	signal(SIGSEGV, (arg & 1) ? SIG_IGN : SIG_DFL);
	if (weft_init(NULL) != 0)
		_exit(3);
	if (arg & 2) {
		raise(SIGSEGV);
		_exit(46); /* ignored: carries on */
	}
	*(volatile int *)bad_addr = 1;
}

static void test_foreign_fault_default_or_ignored(void **state)
{
	(void)state;
	char out[512];
	for (size_t arg = 0; arg < 4; arg++) {
		int st = in_child(foreign_unhandled, arg, out, sizeof out);
		print_message("case %zu: status 0x%x\n", arg, st);
		assert_null(strstr(out, "overflowed"));
		if (arg == 3) {
			assert_true(WIFEXITED(st));
			assert_int_equal(WEXITSTATUS(st), 46);
		} else {
			assert_true(WIFSIGNALED(st));
			assert_int_equal(WTERMSIG(st), SIGSEGV);
		}
	}
}

/* A fiber record made by hand: its handle, its name and a 16 KiB stack at
 * base with a 4 KiB guard (an uncommon shape, so kept in its cold block). */
static void fake_fiber(struct weft__fiber *f, struct weft__fiber_cold *cold, weft_fiber_t handle,
		       const char *name, uintptr_t base)
{
	atomic_store(&f->handle, handle);
	strcpy(cold->name, name);
	f->flags = FF_STACK;
	cold->stack = (struct shim_stack){.base = (void *)base, .size = 0x4000, .guard = 0x1000};
	f->stack = cold->stack.base;
	atomic_store(&f->cold, cold);
}

/* An overflow in the outgoing fiber's last frames during a switch: the
 * worker already names the incoming fiber (or none, for the scheduler) as
 * current, and the outgoing one is its prev until the switch is finished.
 * The fault is the outgoing fiber's. Built by hand (a worker record and two
 * fiber records with stacks far apart), since which frame of a real switch
 * crosses the guard depends on the compiler. */
static void test_overflow_in_switch_names_outgoing(void **state)
{
	(void)state;
	static struct weft__worker wk;
	static struct weft__fiber out, in;
	static struct weft__fiber_cold out_cold, in_cold; /* names and uncommon stacks */
	fake_fiber(&out, &out_cold, 7, "outgoing", 0x10000000);
	fake_fiber(&in, &in_cold, 8, "incoming", 0x20000000);
	struct weft__worker *saved = weft__worker_self();
	weft__set_worker(&wk);
	char buf[512];
	uintptr_t hit = 0x10000000 - 8; /* a push just below the outgoing stack */
	wk.cur = &in;
	wk.prev = &out;
	size_t n1 = weft__name_fault(hit, buf, sizeof buf);
	int named1 = n1 && strstr(buf, "\"outgoing\" overflowed") != NULL;
	wk.cur = NULL; /* switching to the scheduler */
	size_t n2 = weft__name_fault(hit, buf, sizeof buf);
	int named2 = n2 && strstr(buf, "\"outgoing\" overflowed") != NULL;
	wk.prev = NULL; /* switch finished: the address is nobody's */
	size_t n3 = weft__name_fault(hit, buf, sizeof buf);
	wk.cur = &in; /* the incoming fiber's own guard is still its own */
	wk.prev = &out;
	size_t n4 = weft__name_fault(0x20000000 - 8, buf, sizeof buf);
	int named4 = n4 && strstr(buf, "\"incoming\" overflowed") != NULL;
	weft__set_worker(saved);
	assert_true(named1);
	assert_true(named2);
	assert_int_equal(n3, 0);
	assert_true(named4);
}

#else

/* A store just above the newest stack: unmapped, in no fiber's guard. */
static void wild_store(size_t unused)
{
	(void)unused;
	struct shim_stack s;
	if (weft_init(NULL) != 0 || shim_stack_alloc(4096, &s) != 0)
		_exit(3);
	*(volatile int *)((char *)s.base + s.size + 64) = 1;
}

/* Demand paging: a fiber that has used every page of its stack, back up at
 * its top, then overflows: the guard below the mapped pages is still one. */
static __attribute__((noinline)) int dig(int depth)
{
	volatile char frame[256];
	frame[0] = (char)depth;
	if ((uintptr_t)frame > fill_floor)
		return dig(depth + 1) + frame[0] - (char)depth;
	return 0;
}

static void *whole_then_overflow(void *arg)
{
	volatile char here;
	fill_floor = (uintptr_t)&here - (64 * 1024 - 2048);
	if (dig(0) != 0)
		return NULL;
	return overflow(arg);
}

static void deep_use(size_t unused)
{
	(void)unused;
	weft_attr_t attr = {.name = "deep"};
	weft_fiber_t f;
	if (weft_init(NULL) != 0 || weft_fiber_spawn(&f, &attr, whole_then_overflow, NULL) != 0)
		_exit(3);
	weft_fiber_join(f, -1, NULL, NULL);
}

/* Demand paging with no page left: a fiber that has started and parked
 * grows its stack once every page is taken. kernel-shim/bare/page.c: */
void *shim_page_alloc(void);

static weft_sem_t *started;

static void *grow_when_told(void *arg)
{
	weft_sem_release(started);
	weft_sem_acquire(below_gate, -1);
	return overflow(arg);
}

/* Uses 16 KiB of the caller's stack, so that what it calls next finds its
 * pages mapped. */
static __attribute__((noinline)) int pretouch(void)
{
	volatile char buf[16 * 1024];
	for (size_t i = 0; i < sizeof buf; i += 1024)
		buf[i] = 1;
	return buf[0];
}

static void no_page(size_t unused)
{
	(void)unused;
	weft_attr_t attr = {.name = "deep"};
	weft_fiber_t f;
	if (weft_init(NULL) != 0 || weft_sem_create(&below_gate, 0) != 0 ||
	    weft_sem_create(&started, 0) != 0 ||
	    weft_fiber_spawn(&f, &attr, grow_when_told, NULL) != 0)
		_exit(3);
	weft_sem_acquire(started, -1);
	if (pretouch() != 1)
		_exit(4);
	long n = 0;
	while (n < (1L << 20) && shim_page_alloc()) /* bounded: RAM is below 4 GiB */
		n++;
	weft_sem_release(below_gate);
	weft_fiber_join(f, -1, NULL, NULL);
}

static const struct {
	const char *name;
	void (*body)(size_t);
	size_t arg;
} cases[] = {
	{"default", overflow_from_main, 0},
	{"parent", overflow_from_fiber, 16 * 1024},
	{"odd", overflow_from_main, 200 * 1024 + 100},
	{"wild", wild_store, 0},
	{"deepuse", deep_use, 0},
	{"nopage", no_page, 0},
	{"frame12", big_frame_overflow, 12},
	{"frame32", big_frame_overflow, 32},
	{"frame60", big_frame_overflow, 60},
};

int main(void)
{
	const char *c = getenv("WT_CASE");
	for (size_t i = 0; c && i < sizeof cases / sizeof cases[0]; i++) {
		if (strcmp(c, cases[i].name) == 0) {
			cases[i].body(cases[i].arg);
			printf("not caught\n");
			return 0; /* the runner expects 134 or 135 */
		}
	}
	printf("test_overflow: boot with WT_CASE=<case>; tests/test_overflow.bare.sh does\n");
	return 2;
}
#endif

#if WT_LINUX
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overflow_named_default_stack),
		cmocka_unit_test(test_overflow_small_stack_names_spawn_chain),
		cmocka_unit_test(test_overflow_odd_size),
		cmocka_unit_test(test_overflow_big_frames),
		cmocka_unit_test(test_guard_size_configurable),
		cmocka_unit_test(test_overflow_in_switch_names_outgoing),
		cmocka_unit_test(test_foreign_fault_passed_on),
		cmocka_unit_test(test_foreign_fault_recovered_overflow_still_reported),
		cmocka_unit_test(test_foreign_fault_default_or_ignored),
	};
	return WT_MAIN("overflow", tests, NULL, NULL);
}
#endif
