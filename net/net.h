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
#include "sim_shim.h" /* the simulator's clock and yield in libweft-sim.a */
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
	_Atomic int rd_busy;     /* a reader, acceptor or receiver is inside */
	_Atomic int wr_busy;     /* a writer or sender is inside */
	int family;              /* WEFT_AF_INET or _INET6, set by sock.c */
	struct weft_waitable wa; /* weft_select's READY case (sock.c) */
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
	/* A host name (checked, not numeric, not "localhost") to its address
	 * of the family pref asks for (WEFT_RESOLVE_*), port 0; deadline
	 * normalised (resolve.c). */
	int (*resolve)(const char *name, int pref, weft_addr_t *out, int64_t deadline);
	/* weft_select on s (sock.c's waitable), as struct weft__waitable_ops
	 * says: the lock, and under it poll (s not closed), arm, disarm.
	 * events: WEFT_IO_IN or WEFT_IO_OUT. */
	weft__lock_t *(*wait_lock)(struct weft_sock *s);
	int (*wait_poll)(struct weft_sock *s, unsigned events);
	void (*wait_arm)(struct weft_sock *s, unsigned events, struct weft__waiter *w);
	void (*wait_disarm)(struct weft_sock *s, unsigned events, struct weft__waiter *w);
};

extern const struct net_ops weft__net_kernel;
extern const struct net_ops weft__net_lwip;

/* Initialise the header of a socket a stack has just made. */
void weft__sock_init(struct weft_sock *s, const struct net_ops *ops, int kind);

/* The stack for a call that holds no socket (a resolve): NULL when it is
 * down; otherwise weft_net_fini refuses (-EBUSY) until the matching
 * weft__net_release. */
const struct net_ops *weft__net_hold(void);
void weft__net_release(void);

/* The stacks' resolvers (kernel_resolve.c, lwip_dns.c). */
int weft__kernel_resolve(const char *name, int pref, weft_addr_t *out, int64_t deadline);
int weft__lwip_resolve(const char *name, int pref, weft_addr_t *out, int64_t deadline);
/* For tests: what the kernel stack's helper thread calls to look a name's
 * IPv4 (IPv6) address up: shim_resolve (shim_resolve6) unless a test puts a
 * lookup of its own there. */
extern int (*weft__kresolve_fn)(const char *name, uint32_t *ip);
extern int (*weft__kresolve6_fn)(const char *name, uint8_t ip6[16], uint32_t *scope);

/* Shared counters. */
struct net_counters {
	_Atomic uint64_t tcp_accepted, tcp_connected, bytes_read, bytes_written;
};
extern struct net_counters weft__net_count;

#endif
