/* SPDX-License-Identifier: MIT */
/* The network layer's private seam: the socket header every stack embeds,
 * the table of operations a stack provides, and the counters they share.
 * net/ sees the runtime through its seam (runtime/seam/service.h) and the
 * shim's contract (shim.h), never the runtime's internals or an OS. */
#ifndef WEFT_NET_PRIV_H
#define WEFT_NET_PRIV_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "service.h"
#include "shim.h"
#include "weft_net.h"

enum { NK_LISTEN = 1, NK_CONN, NK_UDP };

/* Every socket starts with this. Calls hold a reference while they run, so
 * closing a socket that another fiber is blocked on is safe: close marks
 * it, asks the stack to wake its waiters (-EBADF), and the stack's destroy
 * runs when the last call has left. */
struct weft_sock {
	const struct net_ops *ops;
	int kind;
	_Atomic int refs;
	_Atomic int closed;
	_Atomic int rd_busy; /* a reader, acceptor or receiver is inside */
	_Atomic int wr_busy; /* a writer or sender is inside */
};

struct net_ops {
	const char *name;
	int (*init)(const weft_net_config_t *cfg);
	void (*fini)(void);
	int (*listen)(struct weft_sock **out, const weft_addr_t *local, int backlog);
	int (*accept)(struct weft_sock *ls, struct weft_sock **out, weft_addr_t *peer,
		      int64_t deadline);
	int (*connect)(struct weft_sock **out, const weft_addr_t *remote, int64_t deadline);
	ssize_t (*read)(struct weft_sock *s, void *buf, size_t len, int64_t deadline);
	ssize_t (*write)(struct weft_sock *s, const void *buf, size_t len, int64_t deadline);
	int (*shutdown)(struct weft_sock *s, int how);
	int (*local)(struct weft_sock *s, weft_addr_t *out);
	int (*peer)(struct weft_sock *s, weft_addr_t *out);
	int (*udp_bind)(struct weft_sock **out, const weft_addr_t *local);
	ssize_t (*sendto)(struct weft_sock *s, const void *buf, size_t len, const weft_addr_t *to,
			  int64_t deadline);
	ssize_t (*recvfrom)(struct weft_sock *s, void *buf, size_t len, weft_addr_t *from,
			    int64_t deadline);
	/* Closing: wake every call blocked on s with -EBADF (later calls see
	 * s->closed), then, once the last call has left, free it. */
	void (*abort)(struct weft_sock *s);
	void (*destroy)(struct weft_sock *s);
	/* Have s wake step-process pid when it may have become ready (0:
	 * stop); NULL where the stack cannot (weft_sock_watch: -EOPNOTSUPP). */
	int (*watch)(struct weft_sock *s, weft_pid_t pid);
	/* Add the stack's own counters (frames). */
	void (*stats)(weft_net_stats_t *out);
};

extern const struct net_ops weft__net_kernel;
extern const struct net_ops weft__net_lwip;

/* Initialise the header of a socket a stack has just made. */
void weft__sock_init(struct weft_sock *s, const struct net_ops *ops, int kind);

/* Shared counters. */
struct net_counters {
	_Atomic uint64_t tcp_accepted, tcp_connected, bytes_read, bytes_written;
};
extern struct net_counters weft__net_count;

#endif
