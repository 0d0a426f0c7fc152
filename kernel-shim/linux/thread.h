/* SPDX-License-Identifier: MIT */
/* A shim thread on Linux: the pthread behind it (thread.c), for the calls
 * that reach another thread (backtrace.c). */
#ifndef WEFT_SHIM_LINUX_THREAD_H
#define WEFT_SHIM_LINUX_THREAD_H

#include <pthread.h>
#include <stdbool.h>

struct shim_thread {
	pthread_t t;
	void (*fn)(void *);
	void *arg;
};

/* Set on a thread started by shim_thread_start (the runtime's workers and
 * helpers; a test's threads, too): clear on a program's own threads, to
 * whom io_uring must not tie requests that outlive the call (uring.c,
 * "Threads that are not the shim's"). */
extern _Thread_local bool shim_thread_own;

#endif
