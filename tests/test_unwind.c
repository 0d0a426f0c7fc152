/* SPDX-License-Identifier: MIT */
/* gdb unwinds from inside arch_switch: stopped after the outgoing context's
 * registers are pushed, the backtrace goes through weft__ctx_switch to the
 * thread's start; stopped after the stack pointer moved to a new fiber, it
 * ends at arch_fiber_start. Needs a native gdb, so x86_64 Linux only; the
 * aarch64 and riscv64 switches carry the same CFI (see docs/porting.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static void *nothing(void *arg) { return arg; }

/* The program gdb runs: one worker, one fiber. */
static int child(void)
{
	weft_config_t cfg = {.workers = 1};
	weft_fiber_t f;
	if (weft_init(&cfg) != 0 || weft_fiber_spawn(&f, NULL, nothing, NULL) != 0)
		return 3;
	weft_fiber_join(f, -1, NULL, NULL);
	weft_shutdown();
	return 0;
}

#if defined(__x86_64__) && WT_LINUX
static char self[4096];
#endif

static void test_gdb_backtrace_inside_switch(void **state)
{
	(void)state;
#if defined(__x86_64__) && WT_LINUX
	if (system("gdb --version >/dev/null 2>&1") != 0) {
		print_message("no gdb (mk/deps.sh host installs it)\n");
		skip();
	}
	/* The first switch is the worker's scheduler entering the fiber.
	 * 8 instructions in (endbr64, 6 pushes, sub) the frame is pushed. 5 more: the
	 * stack pointer is the fiber's, whose frame is its first. */
	static char out[65536];
	char cmd[8192];
	snprintf(cmd, sizeof cmd,
		 "gdb -q -nx -batch -ex 'break arch_switch' -ex run "
		 "-ex 'set scheduler-locking step' -ex 'stepi 8' -ex 'echo ==1\\n' -ex bt "
		 "-ex 'stepi 5' -ex 'echo ==2\\n' -ex bt -ex kill --args '%s' child 2>&1",
		 self);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	/* Read to the end (gdb must not block on a full pipe); keep what fits. */
	size_t n = 0, r;
	char drain[4096];
	while ((r = fread(n < sizeof out - 1 ? out + n : drain, 1,
			  n < sizeof out - 1 ? sizeof out - 1 - n : sizeof drain, p)) > 0)
		if (n < sizeof out - 1)
			n += r;
	out[n] = 0;
	pclose(p);
	char *one = strstr(out, "==1\n"), *two = strstr(out, "==2\n");
	/* print_message cuts long text short: gdb's output goes out whole. */
	printf("%s\n", one ? one : out);
	fflush(stdout);
	assert_non_null(one);
	assert_non_null(two);
	*two = 0;
	two += 4;
	/* Pushed, still on the scheduler's stack: the whole chain. */
	assert_non_null(strstr(one, "#0  arch_switch"));
	assert_non_null(strstr(one, "in weft__ctx_switch"));
	assert_non_null(strstr(one, "in weft__run"));
	assert_non_null(strstr(one, "in weft__worker_main"));
	assert_null(strstr(one, "?? ()"));
	/* On the fresh fiber's stack: its first frame, and the end. */
	assert_non_null(strstr(two, "#0  arch_switch"));
	assert_non_null(strstr(two, "#1  0x"));
	assert_non_null(strstr(two, "in arch_fiber_start"));
	assert_null(strstr(two, "#2  "));
	assert_null(strstr(two, "?? ()"));
#else
	print_message("needs a native gdb: x86_64 Linux only\n");
	skip();
#endif
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();
#if defined(__x86_64__) && WT_LINUX
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0)
		self[n] = 0;
#endif
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gdb_backtrace_inside_switch),
	};
	return WT_MAIN("unwind", tests, NULL, NULL);
}
