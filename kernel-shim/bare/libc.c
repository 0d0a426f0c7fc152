/* SPDX-License-Identifier: MIT */
/* The rest of what picolibc (and CMocka on it) expects from an operating
 * system: _exit ends the run through the board (the environment is
 * env.c's), read(0) takes the console's input (tty.c), write(1 or 2)
 * prints, the other file calls that CMocka and abort() pull in fail with
 * ENOSYS, and its locks are real ones. */
#include <errno.h>
#include <stdlib.h>
#include <sys/lock.h>
#include <sys/types.h>
#include <unistd.h>

#include "bare.h"
#include "shim.h"

/* These are the C library's own names, which picolibc calls: they leave
 * libweft.a, whose edge keeps default-visibility globals alone (the
 * Makefile), so they are the file's only default-visibility code. */
#pragma GCC visibility push(default)

_Noreturn void _exit(int status)
{
	shim_console_flush(); /* a last line without its newline */
	board_exit(status);
}

pid_t getpid(void) { return 1; }

int kill(pid_t pid, int sig)
{
	(void)pid;
	(void)sig;
	errno = ENOSYS;
	return -1;
}

int open(const char *path, int flags, ...)
{
	(void)path;
	(void)flags;
	errno = ENOSYS;
	return -1;
}

int close(int fd)
{
	(void)fd;
	errno = ENOSYS;
	return -1;
}

/* fd 0 is the console's input (tty.c): it never waits. */
ssize_t read(int fd, void *buf, size_t n)
{
	if (fd == 0) {
		long r = shim_tty_read(buf, n);
		if (r >= 0)
			return (ssize_t)r;
		errno = (int)-r;
		return -1;
	}
	errno = ENOSYS;
	return -1;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	if (fd == 1 || fd == 2) {
		shim_console_write(buf, n);
		return (ssize_t)n;
	}
	errno = ENOSYS;
	return -1;
}

off_t lseek(int fd, off_t off, int whence)
{
	(void)fd;
	(void)off;
	(void)whence;
	errno = ENOSYS;
	return -1;
}

/* ---- picolibc's locks (malloc, environ, stdio) ---------------------------
 * Recursive, owned by a shim thread. Held briefly and never across a wait,
 * so a contender just yields its hart until the holder (preempted inside,
 * or running on another hart) has let go. A lock's own fields are under
 * the shim lock. */
struct __lock {
	struct shim_thread *owner;
	int depth;
};
struct __lock __lock___libc_recursive_mutex;

void __retarget_lock_init(_LOCK_T *lock) { *lock = calloc(1, sizeof(struct __lock)); }
void __retarget_lock_init_recursive(_LOCK_T *lock) { __retarget_lock_init(lock); }
void __retarget_lock_close(_LOCK_T lock) { free(lock); }
void __retarget_lock_close_recursive(_LOCK_T lock) { free(lock); }

int __retarget_lock_try_acquire_recursive(_LOCK_T lock)
{
	if (!lock)
		return 1;
	int on = shim_big_lock(), got = 0;
	if (!lock->owner || lock->owner == shim_thread_cur()) {
		lock->owner = shim_thread_cur();
		lock->depth++;
		got = 1;
	}
	shim_big_unlock(on);
	return got;
}

int __retarget_lock_try_acquire(_LOCK_T lock)
{
	return __retarget_lock_try_acquire_recursive(lock);
}

void __retarget_lock_acquire_recursive(_LOCK_T lock)
{
	while (!__retarget_lock_try_acquire_recursive(lock))
		shim_thread_yield();
}

void __retarget_lock_acquire(_LOCK_T lock) { __retarget_lock_acquire_recursive(lock); }

void __retarget_lock_release_recursive(_LOCK_T lock)
{
	if (!lock)
		return;
	int on = shim_big_lock();
	if (lock->owner == shim_thread_cur() && --lock->depth == 0)
		lock->owner = NULL;
	shim_big_unlock(on);
}

void __retarget_lock_release(_LOCK_T lock) { __retarget_lock_release_recursive(lock); }

#pragma GCC visibility pop
