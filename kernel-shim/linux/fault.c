/* SPDX-License-Identifier: MIT */
/* Stack overflow reports: a SIGSEGV/SIGBUS handler on an alternate stack asks
 * the runtime whether the address is in a fiber's guard, prints which fiber
 * overflowed, and aborts. Any other fault is handed to whatever handled the
 * signal before weft_init, the way the kernel would have delivered it, while
 * weft's handler stays installed: a program's handler that recovers (a GC's
 * write barrier, a lazy mapping) does not cost later overflows their report. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
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

/* Deliver a fault that is not an overflow as the kernel would have without
 * us: to the handler that was there before (with its mask, SA_NODEFER and
 * SA_RESETHAND honoured), or by the default action. */
static void pass_on(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *prev = &previous[sig == SIGBUS];
	struct sigaction act = *prev;
	/* Sent by kill() or sigqueue() (si_code <= 0), not by a fault: the
	 * instruction does not repeat, so an ignored signal is just dropped. A
	 * real fault cannot be ignored: the kernel resets an ignored (or
	 * blocked) SIGSEGV to the default action and the process dies. */
	bool sent = si->si_code <= 0;
	if (act.sa_handler == SIG_IGN && sent)
		return;
	flush_coverage(); /* the process may die: the default, or that handler */
	if (act.sa_handler == SIG_DFL || act.sa_handler == SIG_IGN) {
		/* The default action kills the process with this signal (and a
		 * core dump). Give the signal back to the kernel: a fault
		 * repeats when we return; a sent signal is sent again, pending
		 * until this handler returns, since it is blocked while we run. */
		signal(sig, SIG_DFL);
		if (sent)
			raise(sig);
		return;
	}
	if (act.sa_flags & SA_RESETHAND) {
		/* One-shot: the kernel resets it before the call. */
		prev->sa_handler = SIG_DFL;
		prev->sa_flags = 0;
	}
	/* The mask the kernel would have set for that handler; returning from
	 * ours restores the interrupted context's mask (from uc). */
	sigset_t mask = act.sa_mask;
	if (!(act.sa_flags & SA_NODEFER))
		sigaddset(&mask, sig);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	if (act.sa_flags & SA_NODEFER) {
		sigset_t self;
		sigemptyset(&self);
		sigaddset(&self, sig);
		pthread_sigmask(SIG_UNBLOCK, &self, NULL);
	}
	if (act.sa_flags & SA_SIGINFO)
		act.sa_sigaction(sig, si, uc);
	else
		act.sa_handler(sig);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	char buf[512];
	int saved = errno;
	size_t n = namer ? namer((uintptr_t)si->si_addr, buf, sizeof buf) : 0;
	if (n) {
		shim_console_write(buf, n);
		flush_coverage();
		signal(SIGABRT, SIG_DFL);
		abort();
	}
	pass_on(sig, si, uc);
	errno = saved;
}

int shim_fault_thread_init(void)
{
	if (altstack)
		return 0;
	stack_t ss = {0};
	ss.ss_sp = mmap(NULL, ALTSTACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
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
