/* SPDX-License-Identifier: MIT */
/* The anchor of the echo rows of `make bench` (mk/bench.sh): a TCP echo
 * server as one would write it by hand without fibers. One thread, one
 * epoll set, level-triggered, non-blocking sockets; what a connection sends
 * is read into a 4 KiB buffer and written back; when the kernel takes only
 * part of it, the rest waits in the connection's buffer and the connection
 * waits for EPOLLOUT instead of EPOLLIN.
 *
 * Usage: echo_epoll ADDR PORT      prints "echo_epoll: listening on ADDR:PORT" */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF 4096
#define MAX_EVENTS 256

struct conn {
	int len, off; /* bytes in buf not yet written back: buf[off, len) */
	char buf[BUF];
};

static struct conn **conns; /* by descriptor */
static int nconns_max, ep;

static void drop(int fd)
{
	free(conns[fd]);
	conns[fd] = NULL;
	close(fd); /* also leaves the epoll set */
}

static int watch(int fd, unsigned events, int op)
{
	struct epoll_event ev = {.events = events, .data.fd = fd};
	return epoll_ctl(ep, op, fd, &ev);
}

/* Write back what is pending. 1: all of it, 0: the kernel is full, -1: error. */
static int flush(int fd, struct conn *c)
{
	while (c->off < c->len) {
		ssize_t w = send(fd, c->buf + c->off, (size_t)(c->len - c->off), MSG_NOSIGNAL);
		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		c->off += (int)w;
	}
	c->off = c->len = 0;
	return 1;
}

static void readable(int fd, struct conn *c)
{
	ssize_t n = recv(fd, c->buf, BUF, 0);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
		drop(fd);
		return;
	}
	if (n < 0)
		return;
	c->len = (int)n;
	c->off = 0;
	int r = flush(fd, c);
	if (r < 0)
		drop(fd);
	else if (r == 0 && watch(fd, EPOLLOUT, EPOLL_CTL_MOD) != 0)
		drop(fd);
}

static void writable(int fd, struct conn *c)
{
	int r = flush(fd, c);
	if (r < 0)
		drop(fd);
	else if (r == 1 && watch(fd, EPOLLIN, EPOLL_CTL_MOD) != 0)
		drop(fd);
}

static void accept_all(int ls)
{
	for (;;) {
		int fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return; /* EAGAIN, or out of descriptors: try at the next event */
		if (fd >= nconns_max || !(conns[fd] = calloc(1, sizeof(struct conn))) ||
		    watch(fd, EPOLLIN, EPOLL_CTL_ADD) != 0) {
			if (fd < nconns_max) {
				free(conns[fd]);
				conns[fd] = NULL;
			}
			close(fd);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s ADDR PORT\n", argv[0]);
		return 2;
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
	if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) {
		fprintf(stderr, "echo_epoll: %s: not an IPv4 address\n", argv[1]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	nconns_max = (int)sysconf(_SC_OPEN_MAX);
	if (nconns_max < 1024)
		nconns_max = 1024;
	conns = calloc((size_t)nconns_max, sizeof *conns);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!conns || ls < 0 || ep < 0 ||
	    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 4096) != 0 ||
	    watch(ls, EPOLLIN, EPOLL_CTL_ADD) != 0) {
		perror("echo_epoll");
		return 1;
	}
	printf("echo_epoll: listening on %s:%s\n", argv[1], argv[2]);
	fflush(stdout);
	struct epoll_event evs[MAX_EVENTS];
	for (;;) {
		int n = epoll_wait(ep, evs, MAX_EVENTS, -1);
		if (n < 0 && errno != EINTR) {
			perror("echo_epoll: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == ls) {
				accept_all(ls);
				continue;
			}
			struct conn *c = conns[fd];
			if (!c)
				continue;
			if (evs[i].events & EPOLLOUT)
				writable(fd, c);
			else if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
				readable(fd, c);
		}
	}
}
