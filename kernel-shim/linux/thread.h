/* SPDX-License-Identifier: MIT */
/* A shim thread on Linux: the pthread behind it (thread.c), for the calls
 * that reach another thread (backtrace.c). */
#ifndef WEFT_SHIM_LINUX_THREAD_H
#define WEFT_SHIM_LINUX_THREAD_H

#include <pthread.h>

struct shim_thread {
	pthread_t t;
	void (*fn)(void *);
	void *arg;
};

#endif
