/* SPDX-License-Identifier: MIT */
/* Between the files of the "lwip" stack's sockets: lwip_sock.c (what TCP and
 * UDP share, and the table of operations), lwip_tcp.c and lwip_udp.c. Every
 * function here runs with the lwIP lock held unless it says otherwise. */
#ifndef WEFT_NET_LWIP_SOCK_H
#define WEFT_NET_LWIP_SOCK_H

#include "lwip.h"

#include "lwip/ip_addr.h"
#include "lwip/pbuf.h"

#define UDP_QUEUE 64

struct dgram {
	struct pbuf *p;
	ip_addr_t addr;
	u16_t port;
};

struct lsock {
	struct weft_sock base;
	struct tcp_pcb *pcb; /* NULL once lwIP freed it (on_err) or we let it go */
	struct udp_pcb *upcb;
	struct pbuf *rx; /* received and not read: one chain */
	bool rx_eof, shut_rd, shut_wr, connected;
	bool admitted;                  /* counted by weft__lwip_conn_admit until let go */
	int err;                        /* sticky: what the connection died of */
	weft_pid_t watch;               /* the step-process to wake when ready, or 0 */
	struct weft__waiter *rdq, *wrq; /* sock.c allows one of each */
	/* a listener's connections not yet accepted, linked by acc_next */
	struct lsock *acc_head, *acc_tail, *acc_next;
	/* a UDP socket's datagrams: a ring of UDP_QUEUE allocated with it
	 * (weft__lsock_new(true)); a TCP socket has none, which saves 1 KiB a
	 * connection */
	int qhead, qlen;
	struct dgram q[];
};

static inline struct lsock *L(struct weft_sock *s) { return (struct lsock *)s; }

/* lwIP's err_t as -errno: the one place it is converted. */
int weft__lsock_err(err_t e);
/* Complete the waiter on q, if any, with res. */
void weft__lsock_wake(struct weft__waiter **q, int res);
/* s may have become ready (data, the end, an error, room to write, a
 * connection to accept): wake the step-process watching it, if any
 * (weft_sock_watch). Forgets a watcher that has ended. */
void weft__lsock_ready(struct lsock *s);
/* Park on q; the lock is held on entry and on return. Loopback traffic
 * still queued is delivered first, and if it did anything this returns 0
 * without parking: the caller looks at its condition again. */
int weft__lsock_wait(struct weft__waiter **q, int64_t deadline);
/* A weft address's IP part as lwIP's (0), or -EINVAL (a zone beyond lwIP's
 * 255 interfaces); and lwIP's address and port as weft's. */
int weft__lsock_ip(const weft_addr_t *a, ip_addr_t *out);
weft_addr_t weft__lsock_addr(const ip_addr_t *ip, u16_t port);
/* A zeroed socket (no lock needed), with the datagram ring if udp, or NULL. */
struct lsock *weft__lsock_new(bool udp);

/* TCP (lwip_tcp.c). */
int weft__ltcp_listen(struct weft_sock **out, const weft_addr_t *local, int backlog);
int weft__ltcp_accept(struct weft_sock *ls, struct weft_sock **out, weft_addr_t *peer,
		      int64_t deadline);
int weft__ltcp_connect(struct weft_sock **out, const weft_addr_t *remote, int64_t deadline);
ssize_t weft__ltcp_read(struct weft_sock *s, void *buf, size_t len, int64_t deadline);
ssize_t weft__ltcp_write(struct weft_sock *s, const void *buf, size_t len, int64_t deadline);
int weft__ltcp_shutdown(struct weft_sock *s, int how);
/* A received segment p as it waits for a reader: copied into a block of its
 * own size when its frame's block holds more than twice that (the frame
 * freed), else (or without memory for the copy) p itself. */
struct pbuf *weft__ltcp_fit(struct pbuf *p);
/* Closing: a listener refuses what it never accepted; a connection lets its
 * pcb go (lwIP finishes sending, or resets if data was left unread). */
void weft__ltcp_abort(struct lsock *s, int kind);

/* UDP (lwip_udp.c). */
int weft__ludp_bind(struct weft_sock **out, const weft_addr_t *local);
ssize_t weft__ludp_sendto(struct weft_sock *s, const void *buf, size_t len, const weft_addr_t *to,
			  int64_t deadline);
ssize_t weft__ludp_recvfrom(struct weft_sock *s, void *buf, size_t len, weft_addr_t *from,
			    int64_t deadline);
void weft__ludp_abort(struct lsock *s);

#endif
