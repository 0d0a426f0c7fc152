/* SPDX-License-Identifier: MIT */
/* Indirect-branch protection survives linking libweft. On x86_64 every
 * object of libweft carries the IBT property (a relocatable link with
 * -z cet-report=error succeeds). On aarch64 weft's own code pages are made
 * BTI-guarded (mprotect with PROT_BTI, which qemu's max CPU enforces) and
 * fibers switch there: fresh and resumed contexts, several workers. A whole
 * program linked with -z force-bti cannot run here: Debian's crtbeginS.o,
 * libgcc and the musl build have no landing pads, and the first indirect
 * call into them (frame_dummy, from musl's start-up) faults. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "testutil.h"
#if WT_LINUX
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#endif

static void *yield_some(void *arg)
{
	for (int i = 0; i < 100; i++)
		weft_fiber_yield();
	return arg;
}

static void test_switches_under_branch_protection(void **state)
{
	(void)state;
	weft_fiber_t f[16];
	for (int i = 0; i < 16; i++)
		assert_int_equal(weft_fiber_spawn(&f[i], NULL, yield_some, (void *)(intptr_t)i), 0);
	for (int i = 0; i < 16; i++) {
		void *r;
		assert_int_equal(weft_fiber_join(f[i], -1, &r, NULL), 0);
		assert_int_equal((intptr_t)r, i);
	}
}

#if defined(__aarch64__) && WT_LINUX
#define PROT_BTI_ 0x10 /* PROT_BTI, arm64 */

void arch_fiber_start(void); /* switch.S */

static int guarded; /* 0 or -1 from the mprotect */
static uintptr_t guard_lo, guard_hi;

/* Guard the pages from the lowest to the highest of these libweft functions:
 * archive members are laid out together, so that is weft's code. */
static void guard_weft_pages(void)
{
	uintptr_t fns[] = {(uintptr_t)arch_switch,
			   (uintptr_t)weft__ctx_switch,
			   (uintptr_t)weft_fiber_spawn_site,
			   (uintptr_t)weft_fiber_yield,
			   (uintptr_t)weft__run,
			   (uintptr_t)weft_init};
	uintptr_t lo = fns[0], hi = fns[0];
	for (size_t i = 1; i < sizeof fns / sizeof fns[0]; i++) {
		lo = fns[i] < lo ? fns[i] : lo;
		hi = fns[i] > hi ? fns[i] : hi;
	}
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	lo &= ~(page - 1);
	hi = (hi + page) & ~(page - 1);
	guarded = mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC | PROT_BTI_) ? -1 : 0;
	guard_lo = lo;
	guard_hi = hi;
	print_message("BTI-guarded %#lx..%#lx: %d\n", (unsigned long)lo, (unsigned long)hi,
		      guarded);
}

static void reached(void *arg)
{
	(void)arg;
	_exit(0);
}

/* br (not through x16/x17) to arch_fiber_start, whose first instruction is
 * a nop, not a landing pad: on a guarded page, a BTI fault (SIGILL). Were it
 * not enforced, arch_fiber_start would call reached(), exit status 0. */
static void test_bti_enforced(void **state)
{
	(void)state;
	assert_int_equal(guarded, 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGILL, SIG_DFL); /* not CMocka's handler */
		__asm__ volatile("mov x19, %0\n\tmov x20, #0\n\tbr %1"
				 :
				 : "r"(reached), "r"(arch_fiber_start)
				 : "x19", "x20", "memory");
		_exit(1);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	print_message("branch to a non-landing pad: status 0x%x\n", st);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGILL);
}
#else
static void test_bti_enforced(void **state)
{
	(void)state;
	print_message("aarch64 only\n");
	skip();
}
#endif

#if defined(__x86_64__) && WT_LINUX
static char lib[4096]; /* the library's objects */

/* -z shstk turns off the report of a missing SHSTK property, which weft
 * does not claim (its switch does not move a shadow stack): what is left
 * is an error for any object without IBT. */
static void test_ibt_property_in_every_object(void **state)
{
	(void)state;
	if (access(lib, R_OK) != 0) {
		print_message("no %s\n", lib);
		skip();
	}
	char cmd[8400], out[4096] = "";
	snprintf(cmd, sizeof cmd,
		 "ld -r -z cet-report=error -z shstk -o /dev/null --whole-archive '%s' 2>&1", lib);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = 0;
	int st = pclose(p);
	print_message("%s\n%s", cmd, out);
	assert_int_equal(st, 0);
	assert_null(strstr(out, "missing"));
}
#else
static void test_ibt_property_in_every_object(void **state)
{
	(void)state;
	print_message("x86_64 Linux only\n");
	skip();
}
#endif

int main(void)
{
#if defined(__aarch64__) && WT_LINUX
	guard_weft_pages();
#endif
#if defined(__x86_64__) && WT_LINUX
	/* build/<target>/tests/test_branchprot -> build/<target>/libweft-internal.a,
	 * every object of the library (what the suites link; make check does not
	 * build libweft.a, the same objects made one) */
	ssize_t n = readlink("/proc/self/exe", lib, sizeof lib - 16);
	if (n > 0) {
		lib[n] = 0;
		for (int up = 0; up < 2; up++) {
			char *slash = strrchr(lib, '/');
			if (slash)
				*slash = 0;
		}
		strcat(lib, "/libweft-internal.a");
	}
#endif
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ibt_property_in_every_object),
		cmocka_unit_test(test_bti_enforced),
		cmocka_unit_test(test_switches_under_branch_protection),
	};
	int r = WT_MAIN("branchprot", tests, wt_start, wt_stop);
#if defined(__aarch64__) && WT_LINUX
	/* The rounded range also holds crt code that exit calls indirectly
	 * (__do_global_dtors_aux) and that has no landing pad. */
	mprotect((void *)guard_lo, guard_hi - guard_lo, PROT_READ | PROT_EXEC);
#endif
	return r;
}
