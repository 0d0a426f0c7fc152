/* SPDX-License-Identifier: MIT */
/* Kernel sockets on bare metal: there is no kernel, so none. shim_sock_open
 * says so (-ENOSYS, which the contract names for this); every call on an fd
 * finds none (-EBADF), as no fd was ever handed out. */
#include <errno.h>

#include "shim.h"

int shim_sock_open(int type)
{
	(void)type;
	return -ENOSYS;
}

int shim_sock_bind(int fd, const struct shim_sockaddr *a)
{
	(void)fd, (void)a;
	return -EBADF;
}

int shim_sock_listen(int fd, int backlog)
{
	(void)fd, (void)backlog;
	return -EBADF;
}

int shim_sock_accept(int fd, struct shim_sockaddr *peer)
{
	(void)fd, (void)peer;
	return -EBADF;
}

int shim_sock_connect(int fd, const struct shim_sockaddr *a)
{
	(void)fd, (void)a;
	return -EBADF;
}

int shim_sock_error(int fd)
{
	(void)fd;
	return -EBADF;
}

long shim_sock_send(int fd, const void *buf, size_t len)
{
	(void)fd, (void)buf, (void)len;
	return -EBADF;
}

long shim_sock_recv(int fd, void *buf, size_t len)
{
	(void)fd, (void)buf, (void)len;
	return -EBADF;
}

long shim_sock_sendto(int fd, const void *buf, size_t len, const struct shim_sockaddr *to)
{
	(void)fd, (void)buf, (void)len, (void)to;
	return -EBADF;
}

long shim_sock_recvfrom(int fd, void *buf, size_t len, struct shim_sockaddr *from)
{
	(void)fd, (void)buf, (void)len, (void)from;
	return -EBADF;
}

int shim_sock_shutdown(int fd, int how)
{
	(void)fd, (void)how;
	return -EBADF;
}

int shim_sock_name(int fd, struct shim_sockaddr *local)
{
	(void)fd, (void)local;
	return -EBADF;
}

int shim_sock_peer(int fd, struct shim_sockaddr *peer)
{
	(void)fd, (void)peer;
	return -EBADF;
}

int shim_sock_close(int fd)
{
	(void)fd;
	return -EBADF;
}
