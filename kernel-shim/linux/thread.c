/* SPDX-License-Identifier: MIT */
/* Worker threads and the futex that idle workers and blocked threads sleep on. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"
#include "thread.h"

#define FUTEX_WAIT_BITSET_PRIVATE (9 | 128)
#define FUTEX_WAKE_PRIVATE (1 | 128)
#define FUTEX_BITSET_MATCH_ANY 0xffffffffu

unsigned shim_cpu_count(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

_Thread_local bool shim_thread_own;

static void *trampoline(void *p)
{
	struct shim_thread *t = p;
	shim_thread_own = true;
	t->fn(t->arg);
	return NULL;
}

int shim_thread_start(shim_thread_t *out, void (*fn)(void *), void *arg)
{
	struct shim_thread *t = malloc(sizeof *t);
	if (!t)
		return -ENOMEM;
	t->fn = fn;
	t->arg = arg;
	int err = pthread_create(&t->t, NULL, trampoline, t);
	if (err) {
		free(t);
		return -err;
	}
	*out = t;
	return 0;
}

void shim_thread_join(shim_thread_t t)
{
	pthread_join(t->t, NULL);
	free(t);
}

void shim_thread_yield(void) { sched_yield(); }

/* The thread's CPU clock (CLOCK_THREAD_CPUTIME_ID's, for another thread):
 * time it ran, not time it waited for a CPU, so a thread the machine was
 * too busy to run is never taken for one that runs on and on. */
int64_t shim_thread_cputime(shim_thread_t t)
{
	clockid_t id;
	struct timespec ts;
	int err = pthread_getcpuclockid(t->t, &id);
	if (err)
		return -err;
	int saved = errno;
	if (clock_gettime(id, &ts) != 0) {
		err = errno;
		errno = saved;
		return -err;
	}
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int shim_wait(_Atomic uint32_t *word, uint32_t expected, int64_t deadline)
{
	struct timespec ts, *tp = NULL;
	if (deadline >= 0) {
		/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time, the
		 * clock shim_now reads. */
		ts.tv_sec = deadline / 1000000000;
		ts.tv_nsec = deadline % 1000000000;
		tp = &ts;
	}
	int saved = errno;
	long r = syscall(SYS_futex, word, FUTEX_WAIT_BITSET_PRIVATE, expected, tp, NULL,
			 FUTEX_BITSET_MATCH_ANY);
	int timed_out = r == -1 && errno == ETIMEDOUT;
	errno = saved; /* EAGAIN, EINTR, ETIMEDOUT are ours, not the caller's */
	return timed_out ? -ETIMEDOUT : 0;
}

void shim_wake(_Atomic uint32_t *word, int n)
{
	int saved = errno;
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
	errno = saved;
}
