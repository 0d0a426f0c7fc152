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

static shim_fault_namer namer;
static _Thread_local void *altstack;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	char buf[512];
	size_t n = namer ? namer((uintptr_t)si->si_addr, buf, sizeof buf) : 0;
	if (n) {
		shim_console_write(buf, n);
		signal(SIGABRT, SIG_DFL);
		abort();
	}
	/* Not ours: restore the default and return; the faulting instruction
	 * runs again and the kernel delivers the default action. */
	signal(sig, SIG_DFL);
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
	if (sigaction(SIGSEGV, &sa, NULL) != 0 || sigaction(SIGBUS, &sa, NULL) != 0)
		return -errno;
	return shim_fault_thread_init();
}
