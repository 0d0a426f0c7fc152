/* SPDX-License-Identifier: MIT */
/* The kernel half of the reactor: one epoll instance with edge-triggered
 * registrations, one per fd for its life (an epoll_ctl to add it and one to
 * delete it, none per wait), and an eventfd that makes a blocked poll
 * return. An event carries the fd and the runtime's tag for the
 * registration. The runtime decides who waits for what and which worker
 * polls. io.c forwards shim_io_* here unless $WEFT_IO says uring. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "linux/io.h"

static _Atomic int epfd = -1;
static int wakefd = -1;
/* Set by the waker that writes the eventfd, cleared by the poller after it
 * drained it: while set, a wake needs no write (see io_wake). */
static _Atomic int wake_pending;

static int io_init(void)
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
	struct epoll_event e = {.events = EPOLLIN, .data.u64 = (uint32_t)ev};
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

static void io_fini(void)
{
	int ep = atomic_exchange(&epfd, -1);
	if (ep < 0)
		return;
	close(ep);
	close(wakefd);
	wakefd = -1;
}

/* IN, OUT and the peer's shutdown, edge-triggered: a report whenever the
 * fd's wait queue is woken (data, room, a connection, a hang-up), with what
 * it is ready for then. */
static int ctl(int op, int src, uint32_t tag)
{
	int ep = atomic_load(&epfd);
	if (ep < 0)
		return -ENOSYS;
	if (src < 0 || src == wakefd || !tag)
		return -EBADF;
	struct epoll_event e = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
				.data.u64 = (uint64_t)tag << 32 | (uint32_t)src};
	if (epoll_ctl(ep, op, src, &e) == 0)
		return 0;
	/* Added again (a new tag), or lost (closed without shim_io_del and
	 * its number reused): the other operation. */
	int other = op == EPOLL_CTL_ADD ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if ((errno == EEXIST || errno == ENOENT) && epoll_ctl(ep, other, src, &e) == 0)
		return 0;
	return -errno;
}

static int io_add(int src, uint32_t tag) { return ctl(EPOLL_CTL_ADD, src, tag); }

/* EPOLL_CTL_MOD looks at the fd again and queues a report if it is ready
 * for any of the registered events now: the level look a waiter that has
 * not drained the fd needs. The registration already covers every event. */
static int io_arm(int src, uint32_t tag, unsigned events)
{
	(void)events;
	return ctl(EPOLL_CTL_MOD, src, tag);
}

static void io_del(int src)
{
	int ep = atomic_load(&epfd);
	if (ep >= 0 && src >= 0 && src != wakefd)
		epoll_ctl(ep, EPOLL_CTL_DEL, src, NULL);
}

/* Events taken from the kernel in one epoll_wait, at most (as many as the
 * runtime asks for, up to this). */
#define POLL_BATCH 256

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

/* The poller, woken through the eventfd: drain it, then clear the flag. So
 * while the flag is set, the write of the waker that set it is on its way
 * or in the eventfd, or the poller is between the two: either way the poll
 * returns (or the next one does at once), and a later waker need not
 * write. Cleared first, a waker in between would write, its count be
 * drained with the earlier one, and the flag stay set with the eventfd
 * empty: every later wake swallowed for good. The clear is an exchange: it
 * reads the last waker's exchange and synchronizes with it, so what a
 * waker that wrote nothing stored before its wake (the work it queued, its
 * worker's wake word) is seen by the look for work after the poll. */
static void drain_wake(void)
{
	uint64_t v;
	while (read(wakefd, &v, sizeof v) < 0 && errno == EINTR)
		;
	atomic_exchange(&wake_pending, 0);
}

static int io_poll(struct shim_io_event *ev, int max, int64_t deadline)
{
	int ep = atomic_load(&epfd);
	if (ep < 0)
		return -ENOSYS;
	if (max <= 0)
		return -EINVAL;
	struct epoll_event got[POLL_BATCH];
	int n;
	do
		n = epoll_wait(ep, got, max < POLL_BATCH ? max : POLL_BATCH, timeout_ms(deadline));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	int out = 0;
	for (int i = 0; i < n; i++) {
		int src = (int)(uint32_t)got[i].data.u64;
		if (src == wakefd) {
			drain_wake();
			continue;
		}
		unsigned e = 0, k = got[i].events;
		if (k & (EPOLLIN | EPOLLRDHUP))
			e |= SHIM_IO_IN;
		if (k & (EPOLLRDHUP | EPOLLHUP))
			e |= SHIM_IO_HUP;
		if (k & EPOLLOUT)
			e |= SHIM_IO_OUT;
		if (k & (EPOLLERR | EPOLLHUP))
			e |= SHIM_IO_IN | SHIM_IO_OUT | SHIM_IO_ERR;
		ev[out].src = src;
		ev[out].tag = (uint32_t)(got[i].data.u64 >> 32);
		ev[out].events = e;
		out++;
	}
	return out;
}

/* Any thread, signal handlers too (an exchange and a write, no lock): one
 * write until the poller drains it. */
static void io_wake(void)
{
	if (atomic_load(&epfd) < 0 || atomic_exchange(&wake_pending, 1))
		return;
	uint64_t one = 1;
	while (write(wakefd, &one, sizeof one) < 0 && errno == EINTR)
		;
}

const struct shim_io_ops shim_io_epoll = {
	.name = "epoll",
	.init = io_init,
	.fini = io_fini,
	.add = io_add,
	.arm = io_arm,
	.del = io_del,
	.poll = io_poll,
	.wake = io_wake,
};
