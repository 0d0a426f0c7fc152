/* SPDX-License-Identifier: MIT */
/* weft networking: TCP and UDP sockets that park the calling fiber.
 *
 * One API over two stacks, chosen at run time (weft_net_init):
 *  - "kernel": the host kernel's sockets through the runtime's reactor
 *    (Linux only);
 *  - "lwip":   lwIP 2.1 inside the process, over a network interface that
 *    weft drives: "loop" (in memory: 127.0.0.1, ::1 and nothing else),
 *    "tap:NAME", "packet:IFNAME", "xdp:IFNAME[:QUEUE]" (Linux, kernel
 *    bypass), "virtio" (qemu-virt) or "dwmac" (the Milk-V Duo's Ethernet);
 *    a device interface has an IPv6 link-local address besides its IPv4
 *    one, and the global one of weft_net_config_t.ip6 if given.
 * A program written against it moves between the two without changes.
 *
 * IPv4 and IPv6 (weft_addr_t holds either; an IPv6 socket takes IPv6 only).
 * The conventions of weft.h hold: absolute deadlines (-1 forever, 0 try
 * once), negative errno results, -ECANCELED on cancellation. Callable from
 * fibers and from plain threads. A socket may be used by two fibers at
 * once, one reading and one writing; two concurrent readers (or writers, or
 * acceptors) get -EBUSY. Closing a socket that another fiber is blocked on
 * wakes that fiber with -EBADF; the memory is freed when the last of them
 * has returned.
 */
#ifndef WEFT_NET_H
#define WEFT_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "weft.h" /* WEFT_API */

#ifdef __cplusplus
extern "C" {
#endif

/* An address of either family, family 0 being IPv4: so an initializer
 * that names only ip and port ({.ip = ..., .port = 80}) or a zeroed
 * weft_addr_t is IPv4. One filled field by field must be zeroed first:
 * family is read (an unknown one is -EINVAL). */
enum { WEFT_AF_INET = 0, WEFT_AF_INET6 = 1 };

typedef struct weft_addr {
	uint32_t ip;     /* IPv4 address (family WEFT_AF_INET), network byte order */
	uint16_t port;   /* host byte order, either family */
	uint16_t family; /* WEFT_AF_INET or WEFT_AF_INET6 */
	uint8_t ip6[16]; /* IPv6 address (family WEFT_AF_INET6), network byte order */
	uint32_t scope;  /* IPv6 zone: an interface's index (fe80::1%2); 0 none */
} weft_addr_t;

/* weft_addr_format's longest text and its NUL: "[" 39 hex digits and colons
 * "%" 10 digits "]:" 5 digits. */
#define WEFT_ADDR_STRLEN 60

/* Parse an address, port 0-65535 (absent means 0):
 *   IPv4  "a.b.c.d", "a.b.c.d:port" (four decimal numbers 0-255);
 *   IPv6  "::1", "fe80::1%2" (no port), "[::1]", "[::1]:80", "[fe80::1%2]:80":
 *         RFC 4291's text (hex groups, one "::", a dotted IPv4 tail as in
 *         "::ffff:1.2.3.4"), a zone as a decimal interface index 1 to
 *         4294967295 after '%' (names are not looked up), a port only
 *         inside brackets.
 * Returns 0 or -EINVAL (NULL, or anything else; *out is left as it was). */
WEFT_API int weft_addr_parse(const char *s, weft_addr_t *out);

/* Format as "a.b.c.d:port" or "[v6]:port", v6 as RFC 5952 writes it
 * (lowercase, the longest run of zero groups as "::", "::ffff:a.b.c.d" for
 * an IPv4-mapped address) with "%scope" when scope is not 0; what
 * weft_addr_parse reads back to the same address. Returns buf. cap >= 22
 * fits any IPv4 address, WEFT_ADDR_STRLEN any address; a shorter buffer
 * gets the text cut short, NUL-terminated. An unknown family formats as
 * "(bad family)". */
WEFT_API char *weft_addr_format(const weft_addr_t *a, char *buf, size_t cap);

/* Resolve "host" or "host:port" (port 0-65535; absent means 0) to an
 * address, as weft_addr_resolve_family(s, WEFT_RESOLVE_INET_FIRST, ...). */
WEFT_API int weft_addr_resolve(const char *s, weft_addr_t *out, int64_t deadline);

/* Which family weft_addr_resolve_family answers with. */
enum {
	WEFT_RESOLVE_INET_FIRST = 0,  /* the first IPv4 address, else the first IPv6 */
	WEFT_RESOLVE_INET6_FIRST = 1, /* the first IPv6 address, else the first IPv4 */
	WEFT_RESOLVE_INET = 2,        /* IPv4 only */
	WEFT_RESOLVE_INET6 = 3,       /* IPv6 only */
};

/* Resolve "host", "host:port", or a numeric address as weft_addr_parse
 * reads it ("[::1]:80"), to an address of the family pref asks for. A
 * numeric address is itself (-ENOENT if pref excludes its family), and
 * "localhost" (any case, a final dot allowed) is 127.0.0.1 or ::1 (the
 * first that pref allows): both need no network and work with the stack
 * down. Any other name (letters, digits, '-' and '.', at most 253) is
 * asked of the stack that is up: the host's resolver (/etc/hosts, DNS) on
 * a helper thread for "kernel", lwIP's DNS client (A and AAAA queries)
 * and the server of weft_net_config_t.dns for "lwip". Returns 0 and *out;
 * -EINVAL (s or out NULL, pref unknown, a malformed name or port); -ESRCH
 * (a name, and the stack is down); -ENOENT (no such name, or it has no
 * address of the family asked; on "lwip" also when the server never
 * answered within lwIP's retries, about 7 s); -EAGAIN ("kernel": the
 * resolver reached no server; "lwip": lwIP's 8 queries in flight are all
 * taken); -EDESTADDRREQ ("lwip": no DNS server configured); -ETIMEDOUT
 * (the deadline came first; deadline 0 only answers names "lwip" has
 * cached); -ECANCELED; -ENOMEM; -EIO (another failure of the host's
 * resolver). A lookup given up on (deadline, cancellation) runs on
 * without its caller: on "kernel" it holds a helper thread (weft_offload's,
 * at most 4) until the resolver returns, and weft_shutdown waits for it;
 * on "lwip" lwIP finishes it and caches the answer. weft_net_fini refuses
 * while a resolve runs. */
WEFT_API int weft_addr_resolve_family(const char *s, int pref, weft_addr_t *out, int64_t deadline);

/* ---- The stack ---------------------------------------------------------- */

typedef struct weft_net_config {
	/* "kernel" or "lwip"; NULL = $WEFT_NET, or else "kernel" where the
	 * target has kernel sockets and "lwip" where it has not. */
	const char *stack;
	/* lwIP's interface: "loop", "tap:NAME", "packet:IFNAME",
	 * "xdp:IFNAME[:QUEUE]" (QUEUE 0 to 1023, default 0), "virtio",
	 * "dwmac" (the Milk-V Duo's Ethernet; its MAC address $WEFT_MAC);
	 * NULL = $WEFT_NETIF, or else "loop". */
	const char *netif;
	/* lwIP's address on that interface, "a.b.c.d/len" or "a.b.c.d" (then
	 * /24); NULL = $WEFT_IP, or else 10.0.2.15/24 for "virtio" (QEMU's user
	 * network). Required for "tap:", "packet:", "xdp:" and "dwmac"; checked but not
	 * used for "loop". */
	const char *ip;
	/* lwIP's default gateway; NULL = $WEFT_GW, or else 10.0.2.2 for
	 * "virtio", none otherwise. */
	const char *gw;
	/* lwIP's DNS server for weft_addr_resolve, "a.b.c.d"; NULL = $WEFT_DNS,
	 * or else 10.0.2.3 for "virtio" (QEMU's user network), none otherwise.
	 * The kernel stack uses the host's resolver and ignores it. */
	const char *dns;
	/* lwIP's global IPv6 address on a device interface, "ADDR/64" (lwIP
	 * 2.1 keeps no other prefix length: the /64 is on-link), a unicast
	 * address that is not ::, ::1, link-local or IPv4-mapped; NULL =
	 * $WEFT_IP6, or else none (the link-local address only). Usable at
	 * once: no duplicate address detection. Checked but not used for
	 * "loop". Last, so initializers written before it still compile. */
	const char *ip6;
} weft_net_config_t;

/* Bring the stack up; the runtime must be running. cfg may be NULL.
 * lwIP's memory is bounded by $WEFT_NET_MEM_KB (KiB, 16 to 2^30; unset: a
 * quarter of the free RAM on bare metal, no bound on Linux): beyond it lwIP drops
 * frames and refuses connections (mem_failed below).
 * Returns 0; -EALREADY; -ESRCH (runtime not running); -EINVAL (unknown stack
 * or netif, malformed address (ip, gw, dns, ip6) or none for a device,
 * $WEFT_NET_MEM_KB malformed or out of range: lwIP's refusals say which
 * field or variable, its value and what is accepted, on the console:
 * stderr on Linux);
 * -ENOSYS (no kernel sockets on this target); -ENOMEM; and when the
 * interface cannot be opened: -ENODEV (no such interface, not Ethernet, no
 * AF_XDP), -EPERM (no right), -EBUSY (a TAP device another process has
 * open; an AF_XDP queue taken, or another XDP program on the interface,
 * which may also be -EEXIST), -EINVAL (xdp: no such receive queue),
 * -EMSGSIZE (xdp: an MTU beyond a 2 KiB frame), -ENOBUFS (xdp: the UMEM
 * over RLIMIT_MEMLOCK), -EOPNOTSUPP (xdp: a kernel before 5.4), or another
 * error the kernel gave. AF_XDP's failures are also said on stderr. */
WEFT_API int weft_net_init(const weft_net_config_t *cfg);

/* Take the stack down. Every socket must be closed first. Returns 0,
 * -ESRCH (not up), -EBUSY (sockets are still open, or a weft_addr_resolve
 * runs: nothing changes). */
WEFT_API int weft_net_fini(void);

/* "kernel", "lwip", or NULL when the stack is down. */
WEFT_API const char *weft_net_stack(void);

/* A snapshot of the stack's counters. */
typedef struct weft_net_stats {
	uint64_t sockets_open;  /* sockets of every kind not yet closed */
	uint64_t tcp_accepted;  /* connections accepted, ever */
	uint64_t tcp_connected; /* connections made by weft_tcp_connect, ever */
	uint64_t bytes_read;
	uint64_t bytes_written;
	uint64_t frames_in;      /* lwIP: frames taken from the interface */
	uint64_t frames_out;     /* lwIP: frames given to the interface */
	uint64_t frames_dropped; /* lwIP: frames dropped, by lwIP or by the interface
	                          * (while its device is full it holds 1,024, in
	                          * order, and drops beyond) */
	uint64_t mem_blocks;     /* lwIP: blocks of memory it holds now (pbufs, PCBs,
	                           * segments); 0 for the kernel stack */
	uint64_t mem_failed;     /* lwIP: allocations that failed or were over its
	                           * budget ($WEFT_NET_MEM_KB), ever; each dropped a
	                           * frame or a segment, or refused a connection */
} weft_net_stats_t;

/* 0, -EINVAL (out NULL) or -ESRCH (not up). */
WEFT_API int weft_net_stats(weft_net_stats_t *out);

/* ---- Sockets ------------------------------------------------------------ */

typedef struct weft_sock weft_sock_t;

/* Listen on local (0.0.0.0 or :: = any address of that family; port 0 = a
 * free port, see weft_sock_local). An IPv6 listener takes IPv6 only, so an
 * IPv4 one may share its port.
 * backlog: connections completed and not yet accepted, 1..65535 (0 = 128);
 * beyond it new connections wait in SYN or are refused by the stack.
 * Returns 0; -EADDRINUSE; -EINVAL; -ENOMEM; -ESRCH (stack down). */
WEFT_API int weft_tcp_listen(weft_sock_t **out, const weft_addr_t *local, int backlog);

/* Take the next connection. Returns 0 and the socket (and the peer's address
 * if peer is not NULL); -ETIMEDOUT; -ECANCELED; -EINVAL (not a listener);
 * -EBUSY (another fiber is accepting); -EBADF (closed meanwhile); -ENOMEM
 * (the kernel stack's connection is closed, and its peer sees the end of
 * the stream or a reset; a connection lwIP has no memory for is reset
 * before any accept sees it). */
WEFT_API int weft_tcp_accept(weft_sock_t *ls, weft_sock_t **out, weft_addr_t *peer,
			     int64_t deadline);

/* Connect to remote. Returns 0 and the socket; -ECONNREFUSED; -ETIMEDOUT
 * (the deadline passed first: the attempt is aborted); -ECANCELED (likewise);
 * -EHOSTUNREACH, -ENETUNREACH (no route); -EINVAL; -ENOMEM; -ESRCH. */
WEFT_API int weft_tcp_connect(weft_sock_t **out, const weft_addr_t *remote, int64_t deadline);

/* Read up to len bytes, waiting until at least one is there. Returns the
 * count; 0 at end of stream (the peer shut down writing, or this socket's
 * reading was shut down); -ECONNRESET; -ETIMEDOUT; -ECANCELED; -EBUSY;
 * -EBADF; -EINVAL (a listener or a UDP socket). Data a reader does not take
 * stays in the socket, and the peer's sending slows to match (the window). */
WEFT_API ssize_t weft_sock_read(weft_sock_t *s, void *buf, size_t len, int64_t deadline);

/* Write all of buf. Returns len; or, when something stops it after some
 * bytes were accepted, that count (the next call reports the error); or,
 * when nothing was accepted: -EPIPE (writing was shut down, by this side or
 * by the peer's reset after a close), -ECONNRESET, -ETIMEDOUT, -ECANCELED,
 * -EBUSY, -EBADF, -EINVAL. A writer waits while the peer's window and the
 * send buffer are full: nothing buffers without bound. */
WEFT_API ssize_t weft_sock_write(weft_sock_t *s, const void *buf, size_t len, int64_t deadline);

enum { WEFT_SHUT_RD = 1, WEFT_SHUT_WR = 2, WEFT_SHUT_RDWR = 3 };

/* Shut down reading, writing (sends FIN once what was written has gone), or
 * both. Returns 0, -EINVAL (bad how, not a connection), -ENOTCONN, -EBADF. */
WEFT_API int weft_sock_shutdown(weft_sock_t *s, int how);

/* Close: a connection sends what was written and then FIN (it lingers in
 * the stack, not in the caller); a listener refuses what it had not
 * accepted. Wakes fibers blocked on s with -EBADF. The handle is invalid
 * afterwards. Returns 0 or -EINVAL (s NULL). */
WEFT_API int weft_sock_close(weft_sock_t *s);

/* s as a weft_select case (weft.h's WEFT_SELECT_READY), valid until s is
 * closed; NULL for s NULL:
 *   weft_select_case_t c = {.op = WEFT_SELECT_READY,
 *                           .waitable = weft_sock_waitable(s),
 *                           .events = WEFT_IO_IN};
 * WEFT_IO_IN: a read, accept or recvfrom would not wait (data, a
 * connection, a datagram, the end of the stream or an error: the last two
 * add WEFT_IO_ERR); WEFT_IO_OUT: a write or sendto would take some bytes
 * (or fail at once, with WEFT_IO_ERR). A listener is never writable. The
 * case performs nothing, and what it reports may be stale when the caller
 * acts (another fiber read first): read or write with a deadline. It waits
 * as a reader (writer) does: on "kernel" it takes s's one slot of that
 * direction, so it gets -EBUSY while another fiber reads (writes, selects
 * on) s that way, and a read started while it waits gets -EBUSY; on "lwip"
 * it waits beside them. Closing s wakes it with -EBADF. On "kernel" a
 * select with deadline 0 sees only the readiness the runtime has been
 * told of (a socket no fiber has waited on yet: none); with a deadline it
 * looks at s as it waits. */
WEFT_API weft_waitable_t *weft_sock_waitable(weft_sock_t *s);

/* The local and the peer address. 0, -ENOTCONN, -EINVAL. */
WEFT_API int weft_sock_local(weft_sock_t *s, weft_addr_t *out);
WEFT_API int weft_sock_peer(weft_sock_t *s, weft_addr_t *out);

/* ---- UDP ---------------------------------------------------------------- */

/* A UDP socket bound to local (port 0 = a free port), of local's family.
 * 0, -EADDRINUSE, -EINVAL, -ENOMEM, -ESRCH. */
WEFT_API int weft_udp_bind(weft_sock_t **out, const weft_addr_t *local);

/* Send one datagram (len <= 65507) to an address of s's family. Returns
 * len; -EAFNOSUPPORT (to is of the other family); -EMSGSIZE; -EHOSTUNREACH;
 * -ETIMEDOUT or -ECANCELED (the kernel stack's send buffer stayed full;
 * lwIP never waits); -EBUSY (another send on s is in progress); -EINVAL;
 * -EBADF; -ENOMEM. */
WEFT_API ssize_t weft_udp_sendto(weft_sock_t *s, const void *buf, size_t len, const weft_addr_t *to,
				 int64_t deadline);

/* Receive one datagram; a longer one is cut to len (the rest is lost, as
 * with recvfrom). Returns its length (up to len); -ETIMEDOUT; -ECANCELED;
 * -EBUSY; -EBADF; -EINVAL. A socket holds a bounded number of datagrams
 * (64); more are dropped, as a kernel's full buffer drops them. */
WEFT_API ssize_t weft_udp_recvfrom(weft_sock_t *s, void *buf, size_t len, weft_addr_t *from,
				   int64_t deadline);

/* ---- Readiness, for step-processes -------------------------------------- */

/* The event a watched socket gives a step-process's step (a bit beside
 * weft.h's WEFT_STEP_EV_MSG, _TIMER and _CANCEL). */
enum { WEFT_STEP_EV_SOCK = 8 };

/* Have s wake step-process pid, its step called with WEFT_STEP_EV_SOCK,
 * whenever s may have become ready: data, the end of the stream or an
 * error to read; room to write (what was written was acknowledged); a
 * connection to accept; a datagram. A wake is a hint: the step calls with
 * deadline 0 until one would have to wait, and a wake that finds nothing
 * new is harmless. pid is woken once at once too, for what was there
 * before.
 * One watcher a socket: a new pid replaces the old, 0 stops; a watcher
 * that has ended is forgotten, and closing s stops it. Returns 0,
 * -EINVAL (s NULL), -EBADF (closed), -ESRCH (pid is no live
 * step-process), -EOPNOTSUPP (the "kernel" stack: its step-processes look
 * for themselves, with weft_step_wake_at). docs/decisions/sock-watch.md */
WEFT_API int weft_sock_watch(weft_sock_t *s, weft_pid_t pid);

#ifdef __cplusplus
}
#endif

#endif
