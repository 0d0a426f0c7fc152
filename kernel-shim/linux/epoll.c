/* SPDX-License-Identifier: MIT */
/* The kernel half of the reactor: one epoll instance with one-shot
 * registrations keyed by fd, and an eventfd that makes a blocked poll return.
 * The runtime decides who waits for what and which worker polls. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "shim.h"

static _Atomic int epfd = -1;
static int wakefd = -1;
static _Atomic int wake_pending; /* an eventfd write not yet drained */

int shim_io_init(void)
{
	if (atomic_load(&epfd) >= 0)
		return 0;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return -errno;
	int ev = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ev < 0) {
		int e = -errno;
		close(ep);
		return e;
	}
	struct epoll_event e = {.events = EPOLLIN, .data.fd = ev};
	if (epoll_ctl(ep, EPOLL_CTL_ADD, ev, &e) < 0) {
		int err = -errno;
		close(ev);
		close(ep);
		return err;
	}
	wakefd = ev;
	atomic_store(&wake_pending, 0);
	atomic_store(&epfd, ep);
	return 0;
}

void shim_io_fini(void)
{
	int ep = atomic_exchange(&epfd, -1);
	if (ep < 0)
		return;
	close(ep);
	close(wakefd);
	wakefd = -1;
}

int shim_io_arm(int src, unsigned events)
{
	int ep = atomic_load(&epfd);
	if (ep < 0)
		return -ENOSYS;
	if (src < 0 || src == wakefd)
		return -EBADF;
	struct epoll_event e = {.events = EPOLLONESHOT, .data.fd = src};
	if (events & SHIM_IO_IN)
		e.events |= EPOLLIN | EPOLLRDHUP;
	if (events & SHIM_IO_OUT)
		e.events |= EPOLLOUT;
	if (epoll_ctl(ep, EPOLL_CTL_MOD, src, &e) == 0)
		return 0;
	if (errno == ENOENT && epoll_ctl(ep, EPOLL_CTL_ADD, src, &e) == 0)
		return 0;
	return -errno;
}

void shim_io_disarm(int src)
{
	int ep = atomic_load(&epfd);
	if (ep >= 0 && src >= 0 && src != wakefd)
		epoll_ctl(ep, EPOLL_CTL_DEL, src, NULL);
}

static int timeout_ms(int64_t deadline)
{
	if (deadline < 0)
		return -1;
	int64_t left = deadline - shim_now();
	if (left <= 0)
		return 0;
	int64_t ms = (left + 999999) / 1000000; /* round up: never wake early */
	return ms > 1000000 ? 1000000 : (int)ms;
}

int shim_io_poll(struct shim_io_event *ev, int max, int64_t deadline)
{
	int ep = atomic_load(&epfd);
	if (ep < 0)
		return -ENOSYS;
	if (max <= 0)
		return -EINVAL;
	struct epoll_event got[64];
	int n;
	do
		n = epoll_wait(ep, got, max < 64 ? max : 64, timeout_ms(deadline));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	int out = 0;
	for (int i = 0; i < n; i++) {
		if (got[i].data.fd == wakefd) {
			uint64_t v;
			atomic_store(&wake_pending, 0);
			while (read(wakefd, &v, sizeof v) < 0 && errno == EINTR)
				;
			continue;
		}
		unsigned e = 0, k = got[i].events;
		if (k & (EPOLLIN | EPOLLRDHUP))
			e |= SHIM_IO_IN;
		if (k & EPOLLOUT)
			e |= SHIM_IO_OUT;
		if (k & (EPOLLERR | EPOLLHUP))
			e |= SHIM_IO_IN | SHIM_IO_OUT | SHIM_IO_ERR;
		ev[out].src = got[i].data.fd;
		ev[out].events = e;
		out++;
	}
	return out;
}

void shim_io_wake(void)
{
	if (atomic_load(&epfd) < 0 || atomic_exchange(&wake_pending, 1))
		return;
	uint64_t one = 1;
	while (write(wakefd, &one, sizeof one) < 0 && errno == EINTR)
		;
}
