/* SPDX-License-Identifier: MIT */
/* Signals as I/O sources: a signalfd for the set a caller waits on, read
 * without blocking. The signals stay blocked (the program blocks them in
 * every thread before weft_init), so the kernel keeps them pending until a
 * read takes one; docs/decisions/signals.md says why this and not a
 * handler writing to a pipe or a sigwaitinfo thread. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "shim.h"

/* A signal the shim itself relies on: SIGSEGV and SIGBUS report stack
 * overflows (fault.c), SIGURG interrupts a worker for a stall report's
 * backtrace (backtrace.c). Blocked or taken by a waiter, they would not do
 * their job. */
static int own(int n) { return n == SIGSEGV || n == SIGBUS || n == SIGURG; }

/* set as a sigset_t: 0, or -EINVAL (empty, a signal the kernel does not
 * have or the C library keeps for itself, which sigaddset refuses, one
 * that cannot be blocked, or one of the shim's own). */
static int to_sigset(uint64_t set, sigset_t *out)
{
	if (!set)
		return -EINVAL;
	sigemptyset(out);
	for (int n = 1; n <= 64; n++) {
		if (!(set & (uint64_t)1 << (n - 1)))
			continue;
		if (n == SIGKILL || n == SIGSTOP || own(n) || n >= NSIG || sigaddset(out, n) != 0)
			return -EINVAL;
	}
	return 0;
}

int shim_signal_block(uint64_t set)
{
	sigset_t s;
	int e = to_sigset(set, &s);
	if (e)
		return e;
	return -pthread_sigmask(SIG_BLOCK, &s, NULL);
}

int shim_signal_open(uint64_t set)
{
	sigset_t s, cur;
	int e = to_sigset(set, &s);
	if (e)
		return e;
	/* A signal this thread does not block would run its action here, and
	 * the signalfd would never see it. */
	e = pthread_sigmask(SIG_BLOCK, NULL, &cur);
	if (e)
		return -e;
	for (int n = 1; n < NSIG; n++)
		if (sigismember(&s, n) == 1 && sigismember(&cur, n) != 1)
			return -EINVAL;
	int fd = signalfd(-1, &s, SFD_NONBLOCK | SFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int shim_signal_take(int src)
{
	struct signalfd_siginfo si;
	for (;;) {
		ssize_t n = read(src, &si, sizeof si);
		if (n == (ssize_t)sizeof si)
			return (int)si.ssi_signo;
		if (n >= 0)
			return -EIO; /* the kernel gives whole records */
		if (errno != EINTR)
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	}
}

void shim_signal_close(int src) { close(src); }
