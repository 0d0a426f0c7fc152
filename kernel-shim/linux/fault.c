/* SPDX-License-Identifier: MIT */
/* Stack overflow reports: a SIGSEGV/SIGBUS handler on an alternate stack asks
 * the runtime whether the address is in a fiber's guard page, prints which
 * fiber overflowed, and aborts. Any other fault is handed back to the default
 * action, so ordinary crashes look as they always do. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"

#define ALTSTACK_BYTES (64 * 1024)

/* make coverage: the process is about to die of a signal, which skips the
 * exit that writes gcov's counters: write them first (libgcov; it writes
 * once per process, so a program whose own handler survives a foreign fault
 * loses the counts that follow, in that build only). */
#ifdef WEFT_COVERAGE
void __gcov_dump(void);
#define flush_coverage() __gcov_dump()
#else
#define flush_coverage() ((void)0)
#endif

static shim_fault_namer namer;
static struct sigaction previous[2]; /* SIGSEGV, SIGBUS before ours */
static _Thread_local void *altstack;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	char buf[512];
	size_t n = namer ? namer((uintptr_t)si->si_addr, buf, sizeof buf) : 0;
	if (n) {
		shim_console_write(buf, n);
		flush_coverage();
		signal(SIGABRT, SIG_DFL);
		abort();
	}
	/* Not ours: put back whatever handled it before us (the default
	 * action, or a program's own handler) and return; the faulting
	 * instruction runs again and that handler sees it. */
	flush_coverage();
	sigaction(sig, &previous[sig == SIGBUS], NULL);
}

int shim_fault_thread_init(void)
{
	if (altstack)
		return 0;
	stack_t ss = {0};
	ss.ss_sp = mmap(NULL, ALTSTACK_BYTES, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ss.ss_sp == MAP_FAILED)
		return -ENOMEM;
	ss.ss_size = ALTSTACK_BYTES;
	if (sigaltstack(&ss, NULL) != 0) {
		int err = -errno;
		munmap(ss.ss_sp, ALTSTACK_BYTES);
		return err;
	}
	altstack = ss.ss_sp;
	return 0;
}

void shim_fault_thread_fini(void)
{
	if (!altstack)
		return;
	stack_t ss = {0};
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
	munmap(altstack, ALTSTACK_BYTES);
	altstack = NULL;
}

int shim_fault_init(shim_fault_namer fn)
{
	namer = fn;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	int saved = errno, err = 0;
	const int sigs[2] = {SIGSEGV, SIGBUS};
	for (int i = 0; i < 2 && !err; i++) {
		/* Remember what handled it before us, unless that was us (a
		 * second weft_init), so a foreign fault can be handed back. */
		struct sigaction cur;
		if (sigaction(sigs[i], NULL, &cur) == 0 && cur.sa_sigaction != on_fault)
			previous[i] = cur;
		if (sigaction(sigs[i], &sa, NULL) != 0)
			err = -errno;
	}
	errno = saved;
	return err ? err : shim_fault_thread_init();
}
