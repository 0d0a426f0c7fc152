/* SPDX-License-Identifier: MIT */
/* The rest of what picolibc (and CMocka on it) expects from an operating
 * system: _exit ends the run through the board (the environment is
 * env.c's), read(0) takes the console's input (tty.c), write(1 or 2)
 * prints, and the other file calls that CMocka and abort() pull in fail
 * with ENOSYS. */
#include <errno.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include "bare.h"
#include "shim.h"

_Noreturn void _exit(int status) { board_exit(status); }

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
		long r = tty_read(buf, n);
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
