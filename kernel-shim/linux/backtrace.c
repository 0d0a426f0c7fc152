/* SPDX-License-Identifier: MIT */
/* A backtrace of another thread as it runs, for the stall detector: the
 * caller leaves a request, sends the thread SIGURG and waits; the handler,
 * on the thread's signal stack, walks the frame pointers of the interrupted
 * registers within the bounds it was given (arch_backtrace_at: no lock, no
 * allocation, only bounded reads) and answers with a futex wake. The
 * handler returns, and the thread goes on where it was.
 *
 * SIGURG because its default action is to be ignored, nothing sends it
 * unasked (only a socket whose owner was set with F_SETOWN), and Go's
 * runtime preempts with it for the same reasons. A program that handles it
 * itself keeps it: the call then says -EBUSY. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include "arch.h"
#include "shim.h"
#include "thread.h"

#define SIG SIGURG
#define MAX_PCS 64

enum { IDLE, ASKED, BUSY, DONE };

/* One request at a time (the contract): the caller writes the bounds, then
 * ASKED; the handler takes it (ASKED -> BUSY), answers, then DONE. A
 * caller that gives up takes it back (ASKED -> IDLE), so a late handler
 * finds nothing to do; one that is already BUSY is waited for. */
static struct {
	_Atomic uint32_t state;
	uintptr_t lo, hi;
	size_t max;
	uintptr_t pcs[MAX_PCS];
	size_t n;
} req;

/* The interrupted pc, frame pointer and stack pointer. */
static void regs(const ucontext_t *uc, uintptr_t *pc, uintptr_t *fp, uintptr_t *sp)
{
#if defined(__x86_64__)
	*pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	*fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	*sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
	*pc = (uintptr_t)uc->uc_mcontext.pc;
	*fp = (uintptr_t)uc->uc_mcontext.regs[29];
	*sp = (uintptr_t)uc->uc_mcontext.sp;
#elif defined(__riscv)
	/* glibc's and musl's __gregs alike: [0] pc, [2] sp, [8] s0. */
	*pc = (uintptr_t)uc->uc_mcontext.__gregs[0];
	*fp = (uintptr_t)uc->uc_mcontext.__gregs[8];
	*sp = (uintptr_t)uc->uc_mcontext.__gregs[2];
#else
#error "kernel-shim/linux/backtrace.c: no register layout for this CPU"
#endif
}

static void on_sample(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	uint32_t asked = ASKED;
	if (!atomic_compare_exchange_strong(&req.state, &asked, BUSY))
		return; /* late, or not ours: nothing was asked */
	uintptr_t pc, fp, sp;
	regs(uc, &pc, &fp, &sp);
	req.n = sp >= req.lo && sp < req.hi
			? arch_backtrace_at(pc, fp, req.lo, req.hi, req.pcs, req.max)
			: 0;
	atomic_store(&req.state, DONE);
	shim_wake(&req.state, 1); /* keeps errno */
}

/* Ours installed, or installed now if the signal still has its default. */
static int install(void)
{
	struct sigaction cur;
	if (sigaction(SIG, NULL, &cur) != 0)
		return -errno;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sample)
		return 0;
	if (cur.sa_handler != SIG_DFL)
		return -EBUSY;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sample;
	/* On the worker's signal stack (shim_fault_thread_init), not on a
	 * fiber's, which may be close to its guard. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIG, &sa, NULL) != 0)
		return -errno;
	return 0;
}

int shim_thread_backtrace(shim_thread_t t, uintptr_t lo, uintptr_t hi, uintptr_t *pcs, size_t max,
			  int64_t deadline)
{
	int saved = errno;
	int e = install();
	if (e) {
		errno = saved;
		return e;
	}
	req.lo = lo;
	req.hi = hi;
	req.max = max < MAX_PCS ? max : MAX_PCS;
	req.n = 0;
	atomic_store(&req.state, ASKED);
	e = pthread_kill(t->t, SIG);
	if (e) {
		atomic_store(&req.state, IDLE);
		errno = saved;
		return -e;
	}
	for (;;) {
		uint32_t s = atomic_load(&req.state);
		if (s == DONE)
			break;
		if (s == ASKED && shim_now() >= deadline) {
			if (atomic_compare_exchange_strong(&req.state, &s, IDLE)) {
				errno = saved;
				return -ETIMEDOUT;
			}
			continue; /* the handler took it just now: wait for it */
		}
		shim_wait(&req.state, s, s == ASKED ? deadline : -1);
	}
	size_t n = req.n;
	memcpy(pcs, req.pcs, n * sizeof *pcs);
	atomic_store(&req.state, IDLE);
	errno = saved;
	return (int)n;
}
