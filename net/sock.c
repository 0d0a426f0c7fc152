/* SPDX-License-Identifier: MIT */
/* The socket API of weft_net.h: choosing the stack at run time, checking
 * arguments, counting, and the lifetime rules every stack shares (one reader
 * and one writer at a time, closing under a blocked caller). The stacks
 * (kernel.c, lwip_sock.c) do the networking. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

static const struct net_ops *_Atomic stack; /* read without the lock */
static weft__lock_t stack_lock = WEFT__LOCK_INIT;
static _Atomic int64_t nsockets;
static _Atomic int64_t nheld; /* calls inside without a socket: resolves */
struct net_counters weft__net_count;

/* ---- Addresses ----------------------------------------------------------- */

static int parse_num(const char **p, unsigned long max, unsigned long *out)
{
	const char *s = *p;
	unsigned long v = 0;
	int n = 0;
	while (*s >= '0' && *s <= '9' && n < 6) {
		v = v * 10 + (unsigned long)(*s++ - '0');
		n++;
	}
	if (n == 0 || n > 5 || v > max)
		return -EINVAL;
	*p = s;
	*out = v;
	return 0;
}

/* "a.b.c.d" at *p into b[4]: 0 (and *p past it) or -EINVAL. */
static int parse_v4(const char **p, uint8_t b[4])
{
	const char *s = *p;
	for (int i = 0; i < 4; i++) {
		unsigned long v;
		if (parse_num(&s, 255, &v))
			return -EINVAL;
		b[i] = (uint8_t)v;
		if (i < 3 && *s++ != '.')
			return -EINVAL;
	}
	*p = s;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* RFC 4291's text form at *p, up to the first character that cannot
 * continue it: hex groups of 1 to 4 digits, one "::" standing for one or
 * more zero groups, and a dotted IPv4 tail in the last 32 bits. 0 (and *p
 * past it) or -EINVAL. */
static int parse_v6(const char **p, uint8_t out[16])
{
	const char *s = *p;
	uint8_t b[16] = {0};
	int n = 0, gap = -1; /* bytes written; where "::" stands */
	if (s[0] == ':') {
		if (s[1] != ':')
			return -EINVAL;
		gap = 0;
		s += 2;
	}
	while (n < 16) {
		const char *start = s;
		unsigned v = 0;
		int d = 0, h;
		while (d < 5 && (h = hexval(*s)) >= 0) {
			v = v << 4 | (unsigned)h;
			s++, d++;
		}
		if (d == 0)
			break; /* after "::", or the end of "::" at the start */
		/* A dotted tail: the last 32 bits. */
		if (*s == '.') {
			s = start;
			if (n > 12 || parse_v4(&s, b + n))
				return -EINVAL;
			n += 4;
			break;
		}
		if (d > 4)
			return -EINVAL;
		b[n++] = (uint8_t)(v >> 8);
		b[n++] = (uint8_t)v;
		if (*s != ':')
			break;
		if (s[1] == ':') {
			if (gap >= 0)
				return -EINVAL; /* a second "::" */
			gap = n;
			s += 2;
			continue;
		}
		s++;
		if (hexval(*s) < 0)
			return -EINVAL; /* a lone ':' ends nothing */
	}
	if (gap < 0 ? n != 16 : n == 16)
		return -EINVAL; /* too few groups, or "::" standing for none */
	if (gap >= 0) {
		memset(out, 0, 16);
		memcpy(out, b, (size_t)gap);
		memcpy(out + 16 - (n - gap), b + gap, (size_t)(n - gap));
	} else {
		memcpy(out, b, 16);
	}
	*p = s;
	return 0;
}

/* "%N" at *p, N a decimal interface index 1 to 2^32-1, into *scope; no '%'
 * leaves it 0. */
static int parse_scope(const char **p, uint32_t *scope)
{
	const char *s = *p;
	*scope = 0;
	if (*s != '%')
		return 0;
	s++;
	uint64_t v = 0;
	int n = 0;
	while (*s >= '0' && *s <= '9' && n < 11) {
		v = v * 10 + (uint64_t)(*s++ - '0');
		n++;
	}
	if (n == 0 || n > 10 || v == 0 || v > UINT32_MAX)
		return -EINVAL;
	*scope = (uint32_t)v;
	*p = s;
	return 0;
}

int weft_addr_parse(const char *s, weft_addr_t *out)
{
	if (!s || !out)
		return -EINVAL;
	weft_addr_t a = {0};
	unsigned long port = 0;
	bool bracket = *s == '[';
	const char *p = s + bracket;
	uint8_t v4[4];
	const char *q = p;
	if (!bracket && parse_v4(&q, v4) == 0 && (*q == ':' || *q == 0)) {
		memcpy(&a.ip, v4, 4); /* network byte order whatever the CPU's */
		p = q;
		if (*p == ':') {
			p++;
			if (parse_num(&p, 65535, &port))
				return -EINVAL;
		}
	} else {
		a.family = WEFT_AF_INET6;
		if (parse_v6(&p, a.ip6) || parse_scope(&p, &a.scope))
			return -EINVAL;
		if (bracket) {
			if (*p++ != ']')
				return -EINVAL;
			if (*p == ':') {
				p++;
				if (parse_num(&p, 65535, &port))
					return -EINVAL;
			}
		}
	}
	if (*p)
		return -EINVAL;
	a.port = (uint16_t)port;
	*out = a;
	return 0;
}

/* RFC 5952's text for b: lowercase, no leading zeros, the longest run of
 * two or more zero groups (the first of equals) as "::", and
 * "::ffff:a.b.c.d" for an IPv4-mapped address. Returns the length. */
static int format_v6(const uint8_t b[16], char *out, size_t cap)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (!memcmp(b, mapped, 12))
		return snprintf(out, cap, "::ffff:%u.%u.%u.%u", b[12], b[13], b[14], b[15]);
	unsigned g[8];
	int best = -1, best_len = 1;
	for (int i = 0; i < 8; i++)
		g[i] = (unsigned)b[2 * i] << 8 | b[2 * i + 1];
	for (int i = 0; i < 8;) {
		int j = i;
		while (j < 8 && g[j] == 0)
			j++;
		if (j - i > best_len) {
			best = i;
			best_len = j - i;
		}
		i = j > i ? j : i + 1;
	}
	char t[48];
	int n = 0;
	for (int i = 0; i < 8; i++) {
		if (i == best) {
			n += snprintf(t + n, sizeof t - (size_t)n, "::");
			i += best_len - 1;
			continue;
		}
		bool sep = i > 0 && i != best + best_len;
		n += snprintf(t + n, sizeof t - (size_t)n, "%s%x", sep ? ":" : "", g[i]);
	}
	return snprintf(out, cap, "%s", t);
}

char *weft_addr_format(const weft_addr_t *a, char *buf, size_t cap)
{
	if (!buf || cap == 0)
		return buf;
	if (!a) {
		snprintf(buf, cap, "(null)");
		return buf;
	}
	if (a->family == WEFT_AF_INET) {
		uint8_t b[4];
		memcpy(b, &a->ip, 4);
		snprintf(buf, cap, "%u.%u.%u.%u:%u", b[0], b[1], b[2], b[3], a->port);
	} else if (a->family == WEFT_AF_INET6) {
		char v6[48], zone[16] = "";
		format_v6(a->ip6, v6, sizeof v6);
		if (a->scope)
			snprintf(zone, sizeof zone, "%%%u", (unsigned)a->scope);
		snprintf(buf, cap, "[%s%s]:%u", v6, zone, a->port);
	} else {
		snprintf(buf, cap, "(bad family)");
	}
	return buf;
}

/* An address a call may be given: a known family. */
static bool addr_ok(const weft_addr_t *a)
{
	return a && (a->family == WEFT_AF_INET || a->family == WEFT_AF_INET6);
}

/* ---- The stack ------------------------------------------------------------- */

/* The stack's part in a graceful shutdown (weft__runtime_on_grace): every
 * fiber has finished, so the stack goes down unless a socket is still open
 * (a plain thread's, or one a fiber never closed), which would be left
 * dangling: that is said on the console, and the stack stays up (-EBUSY). */
static int grace_stop(void)
{
	int r = weft_net_fini();
	if (r == -ESRCH)
		return 0; /* not up: nothing to stop */
	if (r == -EBUSY) {
		char line[128];
		int n = snprintf(line, sizeof line,
				 "weft: shutdown: %lld socket(s) still open: the network "
				 "stack stays up\n",
				 (long long)atomic_load(&nsockets));
		if (n > 0)
			shim_console_write(line,
					   (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
	}
	return r;
}

int weft_net_init(const weft_net_config_t *cfg)
{
	if (!weft__running())
		return -ESRCH;
	weft_net_config_t c = {0};
	if (cfg)
		c = *cfg;
	if (!c.stack)
		c.stack = shim_getenv("WEFT_NET");
	const struct net_ops *ops;
	if (cfg && cfg->stack && !*cfg->stack)
		return -EINVAL; /* an empty name is no stack (unset means default) */
	if (!c.stack || !*c.stack) {
		/* The kernel's where there is one. */
		int fd = shim_sock_open(SHIM_SOCK_STREAM);
		if (fd >= 0)
			shim_sock_close(fd);
		ops = fd == -ENOSYS ? &weft__net_lwip : &weft__net_kernel;
	} else if (!strcmp(c.stack, "kernel")) {
		ops = &weft__net_kernel;
	} else if (!strcmp(c.stack, "lwip")) {
		ops = &weft__net_lwip;
	} else {
		/* Said as weft_init says a bad value (docs/decisions/init-errors.md). */
		char line[120];
		int n = cfg && cfg->stack
				? snprintf(line, sizeof line,
					   "weft_net_init: weft_net_config_t.stack \"%.40s\": "
					   "not kernel or lwip\n",
					   c.stack)
				: snprintf(line, sizeof line,
					   "weft_net_init: WEFT_NET=%.40s: not kernel or lwip\n",
					   c.stack);
		if (n > 0)
			shim_console_write(line,
					   (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
		return -EINVAL;
	}
	weft__lock(&stack_lock);
	if (stack) {
		weft__unlock(&stack_lock);
		return -EALREADY;
	}
	int err = ops->init(&c);
	if (!err) {
		stack = ops;
		weft__runtime_hold(1);
	}
	weft__unlock(&stack_lock);
	if (!err)
		(void)weft__runtime_on_grace(grace_stop); /* one slot of 4: never -ENOMEM */
	return err;
}

int weft_net_fini(void)
{
	weft__lock(&stack_lock);
	if (!stack) {
		weft__unlock(&stack_lock);
		return -ESRCH;
	}
	if (atomic_load(&nsockets) != 0 || atomic_load(&nheld) != 0) {
		weft__unlock(&stack_lock);
		return -EBUSY;
	}
	stack->fini();
	stack = NULL;
	weft__runtime_hold(-1);
	weft__unlock(&stack_lock);
	return 0;
}

const struct net_ops *weft__net_hold(void)
{
	weft__lock(&stack_lock);
	const struct net_ops *ops = stack;
	if (ops)
		atomic_fetch_add(&nheld, 1);
	weft__unlock(&stack_lock);
	return ops;
}

void weft__net_release(void) { atomic_fetch_sub(&nheld, 1); }

const char *weft_net_stack(void)
{
	const struct net_ops *s = stack;
	return s ? s->name : NULL;
}

int weft_net_stats(weft_net_stats_t *out)
{
	if (!out)
		return -EINVAL;
	const struct net_ops *s = stack;
	if (!s)
		return -ESRCH;
	*out = (weft_net_stats_t){
		.sockets_open = (uint64_t)atomic_load(&nsockets),
		.tcp_accepted = atomic_load(&weft__net_count.tcp_accepted),
		.tcp_connected = atomic_load(&weft__net_count.tcp_connected),
		.bytes_read = atomic_load(&weft__net_count.bytes_read),
		.bytes_written = atomic_load(&weft__net_count.bytes_written),
	};
	if (s->stats)
		s->stats(out);
	return 0;
}

/* ---- Lifetime ------------------------------------------------------------ */

static const struct weft__waitable_ops sock_waitable;

void weft__sock_init(struct weft_sock *s, const struct net_ops *ops, int kind)
{
	s->ops = ops;
	s->wa.ops = &sock_waitable;
	s->kind = kind;
	s->family = WEFT_AF_INET;
	atomic_store(&s->refs, 1);
	atomic_store(&s->closed, 0);
	atomic_store(&s->rd_busy, 0);
	atomic_store(&s->wr_busy, 0);
	atomic_fetch_add(&nsockets, 1);
}

static void unref(struct weft_sock *s)
{
	if (atomic_fetch_sub(&s->refs, 1) == 1)
		s->ops->destroy(s);
}

/* Enter a call on s of the given kind (0: any), claiming one of its two
 * directions (NULL: none). 0 or -errno. */
static int enter(struct weft_sock *s, int kind, _Atomic int *busy)
{
	if (!s)
		return -EINVAL;
	if (kind && s->kind != kind)
		return -EINVAL;
	atomic_fetch_add(&s->refs, 1);
	if (atomic_load(&s->closed)) {
		unref(s);
		return -EBADF;
	}
	int zero = 0;
	if (busy && !atomic_compare_exchange_strong(busy, &zero, 1)) {
		unref(s);
		return -EBUSY;
	}
	return 0;
}

static void leave(struct weft_sock *s, _Atomic int *busy)
{
	if (busy)
		atomic_store(busy, 0);
	unref(s);
}

/* ---- weft_select's READY case ----------------------------------------------
 * A select holds a reference for as long as it looks at s, as a call does,
 * and takes the direction it waits for the way the stack's waiting call
 * does (the reactor's slot, lwIP's one waiter list), not rd_busy/wr_busy:
 * it may wait beside a reader on lwIP, and gets -EBUSY beside one on the
 * kernel stack. Closing wakes it with -EBADF. */

static struct weft_sock *of_wa(struct weft_waitable *wa)
{
	return (struct weft_sock *)((char *)wa - offsetof(struct weft_sock, wa));
}

static void wa_hold(struct weft_waitable *wa) { atomic_fetch_add(&of_wa(wa)->refs, 1); }
static void wa_release(struct weft_waitable *wa) { unref(of_wa(wa)); }

static weft__lock_t *wa_lock(struct weft_waitable *wa)
{
	struct weft_sock *s = of_wa(wa);
	return s->ops->wait_lock(s);
}

static int wa_poll(struct weft_waitable *wa, unsigned events)
{
	struct weft_sock *s = of_wa(wa);
	if (atomic_load(&s->closed))
		return -EBADF;
	return s->ops->wait_poll(s, events);
}

static void wa_arm(struct weft_waitable *wa, unsigned events, struct weft__waiter *w)
{
	struct weft_sock *s = of_wa(wa);
	s->ops->wait_arm(s, events, w);
}

static void wa_disarm(struct weft_waitable *wa, unsigned events, struct weft__waiter *w)
{
	struct weft_sock *s = of_wa(wa);
	s->ops->wait_disarm(s, events, w);
}

static const struct weft__waitable_ops sock_waitable = {
	.hold = wa_hold,
	.release = wa_release,
	.lock = wa_lock,
	.poll = wa_poll,
	.arm = wa_arm,
	.disarm = wa_disarm,
};

weft_waitable_t *weft_sock_waitable(weft_sock_t *s) { return s ? &s->wa : NULL; }

/* ---- Calls ----------------------------------------------------------------- */

int weft_tcp_listen(weft_sock_t **out, const weft_addr_t *local, int backlog)
{
	if (!out || !addr_ok(local) || backlog < 0 || backlog > 65535)
		return -EINVAL;
	const struct net_ops *ops = stack;
	if (!ops)
		return -ESRCH;
	int err = ops->listen(out, local, backlog ? backlog : 128);
	if (!err)
		(*out)->family = local->family;
	return err;
}

int weft_tcp_accept(weft_sock_t *ls, weft_sock_t **out, weft_addr_t *peer, int64_t deadline)
{
	if (!out)
		return -EINVAL;
	int err = enter(ls, NK_LISTEN, ls ? &ls->rd_busy : NULL);
	if (err)
		return err;
	err = ls->ops->accept(ls, out, peer, weft__deadline_norm(deadline));
	if (!err) {
		(*out)->family = ls->family;
		atomic_fetch_add(&weft__net_count.tcp_accepted, 1);
	}
	leave(ls, &ls->rd_busy);
	return err;
}

int weft_tcp_connect(weft_sock_t **out, const weft_addr_t *remote, int64_t deadline)
{
	if (!out || !addr_ok(remote) || remote->port == 0)
		return -EINVAL;
	const struct net_ops *ops = stack;
	if (!ops)
		return -ESRCH;
	int err = ops->connect(out, remote, weft__deadline_norm(deadline));
	if (!err) {
		(*out)->family = remote->family;
		atomic_fetch_add(&weft__net_count.tcp_connected, 1);
	}
	return err;
}

ssize_t weft_sock_read(weft_sock_t *s, void *buf, size_t len, int64_t deadline)
{
	if (!buf && len)
		return -EINVAL;
	int err = enter(s, NK_CONN, s ? &s->rd_busy : NULL);
	if (err)
		return err;
	ssize_t n = len ? s->ops->read(s, buf, len, weft__deadline_norm(deadline)) : 0;
	if (n > 0)
		atomic_fetch_add(&weft__net_count.bytes_read, (uint64_t)n);
	leave(s, &s->rd_busy);
	return n;
}

ssize_t weft_sock_write(weft_sock_t *s, const void *buf, size_t len, int64_t deadline)
{
	if (!buf && len)
		return -EINVAL;
	if (len > SIZE_MAX / 2) /* beyond what ssize_t counts */
		return -EINVAL;
	int err = enter(s, NK_CONN, s ? &s->wr_busy : NULL);
	if (err)
		return err;
	ssize_t n = len ? s->ops->write(s, buf, len, weft__deadline_norm(deadline)) : 0;
	if (n > 0)
		atomic_fetch_add(&weft__net_count.bytes_written, (uint64_t)n);
	leave(s, &s->wr_busy);
	return n;
}

int weft_sock_shutdown(weft_sock_t *s, int how)
{
	if (how < WEFT_SHUT_RD || how > WEFT_SHUT_RDWR)
		return -EINVAL;
	int err = enter(s, NK_CONN, NULL);
	if (err)
		return err;
	err = s->ops->shutdown(s, how);
	leave(s, NULL);
	return err;
}

int weft_sock_close(weft_sock_t *s)
{
	if (!s)
		return -EINVAL;
	int zero = 0;
	if (!atomic_compare_exchange_strong(&s->closed, &zero, 1))
		return -EBADF;
	atomic_fetch_sub(&nsockets, 1);
	s->ops->abort(s);
	unref(s);
	return 0;
}

int weft_sock_local(weft_sock_t *s, weft_addr_t *out)
{
	if (!out)
		return -EINVAL;
	int err = enter(s, 0, NULL);
	if (err)
		return err;
	err = s->ops->local(s, out);
	leave(s, NULL);
	return err;
}

int weft_sock_peer(weft_sock_t *s, weft_addr_t *out)
{
	if (!out)
		return -EINVAL;
	int err = enter(s, 0, NULL);
	if (err)
		return err;
	err = s->kind == NK_CONN ? s->ops->peer(s, out) : -ENOTCONN;
	leave(s, NULL);
	return err;
}

int weft_sock_watch(weft_sock_t *s, weft_pid_t pid)
{
	int err = enter(s, 0, NULL);
	if (err)
		return err;
	err = s->ops->watch ? s->ops->watch(s, pid) : -EOPNOTSUPP;
	leave(s, NULL);
	return err;
}

int weft_udp_bind(weft_sock_t **out, const weft_addr_t *local)
{
	if (!out || !addr_ok(local))
		return -EINVAL;
	const struct net_ops *ops = stack;
	if (!ops)
		return -ESRCH;
	int err = ops->udp_bind(out, local);
	if (!err)
		(*out)->family = local->family;
	return err;
}

#define UDP_MAX 65507

ssize_t weft_udp_sendto(weft_sock_t *s, const void *buf, size_t len, const weft_addr_t *to,
			int64_t deadline)
{
	if ((!buf && len) || !addr_ok(to) || to->port == 0)
		return -EINVAL;
	if (len > UDP_MAX)
		return -EMSGSIZE;
	int err = enter(s, NK_UDP, s ? &s->wr_busy : NULL);
	if (err)
		return err;
	if (to->family != s->family) {
		leave(s, &s->wr_busy);
		return -EAFNOSUPPORT;
	}
	ssize_t n = s->ops->sendto(s, buf, len, to, weft__deadline_norm(deadline));
	if (n > 0)
		atomic_fetch_add(&weft__net_count.bytes_written, (uint64_t)n);
	leave(s, &s->wr_busy);
	return n;
}

ssize_t weft_udp_recvfrom(weft_sock_t *s, void *buf, size_t len, weft_addr_t *from,
			  int64_t deadline)
{
	if (!buf && len)
		return -EINVAL;
	int err = enter(s, NK_UDP, s ? &s->rd_busy : NULL);
	if (err)
		return err;
	ssize_t n = s->ops->recvfrom(s, buf, len, from, weft__deadline_norm(deadline));
	if (n > 0)
		atomic_fetch_add(&weft__net_count.bytes_read, (uint64_t)n);
	leave(s, &s->rd_busy);
	return n;
}
