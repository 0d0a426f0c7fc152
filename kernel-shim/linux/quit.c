/* SPDX-License-Identifier: MIT */
/* SIGQUIT asks for a dump, as in Go and the JVM. The handler only counts the
 * request and wakes a thread of our own (a futex wake is async-signal-safe);
 * that thread calls the runtime's dump, which locks, allocates and prints,
 * none of which a signal handler may do. (Naming the dump's frames is
 * symbols.c's.) */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "shim.h"

static void (*quit_fn)(void);
static _Atomic uint32_t quit_seq;
static _Atomic int quit_stop;
static pthread_t quit_thread;
static struct sigaction quit_prev;

static void on_quit(int sig)
{
	(void)sig;
	atomic_fetch_add(&quit_seq, 1);
	shim_wake(&quit_seq, 1); /* keeps errno */
}

/* arg: the count when it was installed (read before the thread started, so
 * neither a request nor the stop that comes before our first look is lost). */
static void *quit_main(void *arg)
{
	uint32_t seen = (uint32_t)(uintptr_t)arg;
	while (!atomic_load(&quit_stop)) {
		shim_wait(&quit_seq, seen, -1);
		if (atomic_load(&quit_stop))
			return NULL;
		uint32_t now = atomic_load(&quit_seq);
		if (now != seen) {
			seen = now;
			quit_fn();
		}
	}
	return NULL;
}

int shim_on_quit(void (*fn)(void))
{
	if (!fn) {
		if (!quit_fn)
			return 0;
		sigaction(SIGQUIT, &quit_prev, NULL);
		atomic_store(&quit_stop, 1);
		atomic_fetch_add(&quit_seq, 1);
		shim_wake(&quit_seq, 1);
		pthread_join(quit_thread, NULL);
		quit_fn = NULL;
		return 0;
	}
	if (quit_fn)
		return -EALREADY;
	struct sigaction cur;
	if (sigaction(SIGQUIT, NULL, &cur) != 0)
		return -errno;
	if (cur.sa_handler != SIG_DFL)
		return -EBUSY;
	quit_fn = fn;
	atomic_store(&quit_stop, 0);
	/* The thread takes no signals: they go to the program's threads. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = pthread_create(&quit_thread, NULL, quit_main,
				 (void *)(uintptr_t)atomic_load(&quit_seq));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		quit_fn = NULL;
		return -err;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_quit;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGQUIT, &sa, &quit_prev) != 0) {
		err = -errno;
		atomic_store(&quit_stop, 1);
		atomic_fetch_add(&quit_seq, 1);
		shim_wake(&quit_seq, 1);
		pthread_join(quit_thread, NULL);
		quit_fn = NULL;
		return err;
	}
	return 0;
}
