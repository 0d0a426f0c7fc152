/* SPDX-License-Identifier: MIT */
/* An HTTP/1.1 server, one fiber per connection: keep-alive with an idle
 * timeout, a static page at / and live counters at /stats (text, or JSON with
 * /stats?json), graceful shutdown on SIGTERM or SIGINT (Linux: bare metal
 * has no signals).
 *
 * What a client sends is read into one fixed 8 KiB buffer per connection and
 * every length is checked: a malformed request line or header, or a version
 * other than HTTP/1.x, gets 400; a head over 8 KiB gets 431; a body over
 * HTTPD_MAX_BODY bytes gets 413; Transfer-Encoding (chunked) is not
 * implemented and gets 501. After any of those the connection closes.
 * Bodies announced by Content-Length are read and thrown away, so a POST to
 * / gets its 405 and the connection stays usable. A keep-alive connection
 * waits HTTPD_IDLE_MS for a request's first byte; the request, head and
 * body, must then arrive within HTTPD_REQUEST_MS of that byte (else 408 and
 * close): a client that trickles bytes cannot hold a connection longer.
 *
 * A connection that cannot be served (HTTPD_MAX_CONNS reached, no memory
 * for it or for its fiber) gets a 503 if its socket takes one at once, and
 * is closed; the first refusal of a burst is logged, with the reason.
 *
 * Environment: HTTPD_ADDR (0.0.0.0), HTTPD_PORT (8080), HTTPD_IDLE_MS (5000),
 * HTTPD_REQUEST_MS (30000), HTTPD_GRACE_MS (5000), HTTPD_MAX_CONNS (4096), HTTPD_MAX_BODY (65536), and
 * the network stack's WEFT_NET, WEFT_NETIF, WEFT_IP, WEFT_GW.
 *
 * Shutdown: the first signal stops accepting, closes connections that wait
 * for a request, lets requests in flight finish (answered with "Connection:
 * close"), and exits 0 when every connection is done; those still open after
 * HTTPD_GRACE_MS are cancelled. A second signal exits at once with status 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"
#include "weft_net.h"

#include "http/request.h"

#define HEAD_MAX 8192       /* request line and headers, the blank line included */
#define MAX_EMPTY_LINES 16  /* CR LF before a request line, ignored up to this */
#define MAX_REQUESTS 100000 /* per connection, then "Connection: close" */
#define BODY_MAX 2048       /* the largest page this server generates */
#define LINGER_BYTES (1 << 20)
#define MS 1000000LL

static struct {
	weft_addr_t addr;
	long idle_ms, request_ms, grace_ms, max_conns, max_body;
} cfg;

static _Atomic uint64_t n_open, n_accepted, n_refused, n_requests, n_errors;
static _Atomic int stopping;
static int64_t started_at;

/* ---- Connections and the supervisor ------------------------------------ */

/* A connection's state, for the supervisor's shutdown: IDLE while it waits
 * for the first byte of a request with nothing buffered (safe to cancel),
 * BUSY otherwise, KICKED once the supervisor has claimed an IDLE connection
 * to cancel it. */
enum { ST_BUSY, ST_IDLE, ST_KICKED };

struct conn {
	weft_sock_t *s;
	weft_fiber_t fiber;
	_Atomic int state;
	int must_close;           /* answer with "Connection: close", then close */
	struct conn *prev, *next; /* the supervisor's list of running connections */
	unsigned seen;            /* the supervisor's: EV_NEW and EV_DONE bits */
	size_t len;               /* bytes in buf */
	char buf[HEAD_MAX];
};

/* Everything the supervisor hears about, on one channel. A connection's
 * EV_NEW (from the acceptor) and EV_DONE (from its own fiber) may arrive in
 * either order; the connection is freed once both have. */
enum { EV_NEW = 1, EV_DONE = 2, EV_STOP = 4, EV_ACCEPTOR_DONE = 8 };

struct event {
	int kind;
	struct conn *c;
};

static weft_chan_t *events;
static weft_fiber_t acceptor, watcher;

/* Tell the supervisor; a cancellation meant for the sender's blocking calls
 * must not lose the message, so retry a few times (each request is delivered
 * once). */
static void tell(int kind, struct conn *c)
{
	struct event ev = {kind, c};
	for (int i = 0; i < 8; i++)
		if (weft_chan_send(events, &ev, -1) != -ECANCELED)
			return;
}

/* Cancel c if it is waiting for a request: it then closes. */
static void kick(struct conn *c)
{
	int idle = ST_IDLE;
	if (atomic_compare_exchange_strong(&c->state, &idle, ST_KICKED))
		weft_fiber_cancel(c->fiber);
}

/* The supervisor's own state: only its fiber touches it. */
static struct {
	struct conn *list; /* connections whose EV_NEW came and EV_DONE not yet */
	int stop, hurry, acceptor_done;
	int64_t deadline; /* of the grace period, then of the cancellations */
} sv = {.deadline = -1};

static void sv_stop(void)
{
	if (sv.stop)
		return;
	sv.stop = 1;
	atomic_store(&stopping, 1); /* before the scan: see idle_read */
	printf("httpd: stopping: %" PRIu64 " connection(s) open\n", atomic_load(&n_open));
	fflush(stdout);
	sv.deadline = weft_deadline_in(cfg.grace_ms * MS);
	if (!sv.acceptor_done)
		weft_fiber_cancel(acceptor);
	for (struct conn *k = sv.list; k; k = k->next)
		kick(k);
}

static void sv_grace_over(void)
{
	printf("httpd: grace period over: cancelling %" PRIu64 " connection(s)\n",
	       atomic_load(&n_open));
	for (struct conn *c = sv.list; c; c = c->next)
		weft_fiber_cancel(c->fiber);
	sv.hurry = 1;
	sv.deadline = weft_deadline_in(3000 * MS);
}

/* EV_NEW or EV_DONE for c: the first links it, the second frees it. */
static void sv_conn(struct conn *c, int kind)
{
	c->seen |= (unsigned)kind;
	if (c->seen != (EV_NEW | EV_DONE)) {
		if (kind == EV_DONE) /* before EV_NEW: never linked */
			return;
		c->prev = NULL;
		c->next = sv.list;
		if (sv.list)
			sv.list->prev = c;
		sv.list = c;
		if (sv.hurry)
			weft_fiber_cancel(c->fiber);
		else if (sv.stop)
			kick(c);
		return;
	}
	if (kind == EV_DONE) { /* it is linked */
		if (c->prev)
			c->prev->next = c->next;
		else
			sv.list = c->next;
		if (c->next)
			c->next->prev = c->prev;
	}
	weft_fiber_join(c->fiber, weft_deadline_in(5000 * MS), NULL, NULL);
	free(c); /* its fiber no longer touches it once it has told EV_DONE */
	atomic_fetch_sub(&n_open, 1);
}

static void *supervise(void *arg)
{
	(void)arg;
	while (!(sv.stop && sv.acceptor_done && atomic_load(&n_open) == 0)) {
		struct event ev;
		int r = weft_chan_recv(events, &ev, sv.deadline);
		if (r == -ETIMEDOUT && !sv.hurry) {
			sv_grace_over();
			continue;
		}
		if (r != 0) {
			fprintf(stderr, "httpd: %" PRIu64 " connection(s) would not end (%s)\n",
				atomic_load(&n_open), strerror(-r));
			fflush(stdout);
			_Exit(1);
		}
		switch (ev.kind) {
		case EV_NEW:
		case EV_DONE:
			sv_conn(ev.c, ev.kind);
			break;
		case EV_STOP:
			sv_stop();
			break;
		case EV_ACCEPTOR_DONE:
			weft_fiber_join(acceptor, -1, NULL, NULL);
			sv.acceptor_done = 1;
			sv_stop(); /* if the listener failed, nothing more will come */
			break;
		}
	}
	if (watcher) {
		weft_fiber_cancel(watcher);
		weft_fiber_join(watcher, -1, NULL, NULL);
	}
	return NULL;
}

/* ---- Reading --------------------------------------------------------------- */

static void consume(struct conn *c, size_t n)
{
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

/* Take a cancellation the supervisor has issued or is about to issue, so it
 * cannot abort a later write. */
static void eat_cancel(void)
{
	int64_t until = weft_deadline_in(1000 * MS);
	for (int i = 0; i < 100000 && weft_now() < until; i++)
		if (weft_fiber_yield() == -ECANCELED)
			return;
}

/* Wait for the first bytes of a request with nothing buffered: the one wait
 * the supervisor may cancel when the server stops. */
static ssize_t idle_read(struct conn *c, int64_t deadline)
{
	ssize_t n = -ECANCELED;
	atomic_store(&c->state, ST_IDLE);
	if (!atomic_load(&stopping))
		n = weft_sock_read(c->s, c->buf, HEAD_MAX, deadline);
	int idle = ST_IDLE;
	if (atomic_compare_exchange_strong(&c->state, &idle, ST_BUSY))
		return n;
	/* Kicked: the request that raced with it is still answered. */
	c->must_close = 1;
	if (n != -ECANCELED)
		eat_cancel();
	return n > 0 ? n : -ECANCELED;
}

/* Wait for the next request's head in c->buf. Returns 0 with *r filled (the
 * head is c->buf[0..*head_len)) and *until, the request's deadline (its
 * first byte's time plus HTTPD_REQUEST_MS: the body must be in by then);
 * -1 to close without an answer; or the status to answer before closing. */
static int read_head(struct conn *c, struct http_req *r, size_t *head_len, int64_t *until)
{
	size_t scan = 0, skipped = 0;
	int64_t deadline = weft_deadline_in(cfg.idle_ms * MS);
	int started = 0, line_ok = 0;
	for (int round = 0; round < HEAD_MAX + MAX_EMPTY_LINES + 2; round++) {
		size_t k = 0;
		while (k < c->len && (c->buf[k] == '\r' || c->buf[k] == '\n'))
			k++;
		if (k) { /* RFC 9112 2.2: ignore empty lines before a request */
			skipped += k;
			if (skipped > MAX_EMPTY_LINES)
				return 400;
			consume(c, k);
			scan = 0;
		}
		if (c->len) {
			if (!started) { /* the whole request by one deadline */
				started = 1;
				deadline = weft_deadline_in(cfg.request_ms * MS);
			}
			size_t end = http_head_end(c->buf, c->len, &scan);
			if (end) {
				*head_len = end;
				*until = deadline;
				return http_parse_head(c->buf, end, r);
			}
			/* A bad request line is answered before the rest comes. */
			const char *l;
			size_t pos = 0, len;
			if (!line_ok && http_next_line(c->buf, c->len, &pos, &l, &len) == 0) {
				if (http_parse_request_line(l, len, r) != 0)
					return 400;
				line_ok = 1;
			}
			if (c->len == HEAD_MAX)
				return 431;
		}
		ssize_t n =
			c->len ? weft_sock_read(c->s, c->buf + c->len, HEAD_MAX - c->len, deadline)
			       : idle_read(c, deadline);
		if (n == -ETIMEDOUT && started)
			return 408;
		if (n <= 0)
			return -1;
		c->len += (size_t)n;
	}
	return 400;
}

/* Read and drop a body of n bytes, what is buffered first, by the request's
 * deadline. Returns 0, -ETIMEDOUT, or another error. */
static int skip_body(struct conn *c, uint64_t n, int64_t until)
{
	size_t take = c->len < n ? c->len : (size_t)n;
	consume(c, take);
	n -= take;
	while (n > 0) { /* n <= cfg.max_body: each round takes at least a byte */
		ssize_t got =
			weft_sock_read(c->s, c->buf, n < HEAD_MAX ? (size_t)n : HEAD_MAX, until);
		if (got <= 0)
			return got < 0 ? (int)got : -EPIPE;
		n -= (uint64_t)got;
	}
	return 0;
}

/* Close after an answer: send FIN, then read until the client closes (up to
 * a bound), so that what it had already sent cannot turn the close into a
 * reset that destroys the answer before the client reads it. */
static void linger(struct conn *c)
{
	if (weft_sock_shutdown(c->s, WEFT_SHUT_WR) != 0)
		return;
	int64_t until = weft_deadline_in((cfg.idle_ms < 2000 ? cfg.idle_ms : 2000) * MS);
	for (size_t total = 0; total < LINGER_BYTES;) {
		ssize_t n = weft_sock_read(c->s, c->buf, HEAD_MAX, until);
		if (n <= 0)
			return;
		total += (size_t)n;
	}
}

/* ---- Answering ---------------------------------------------------------- */

static const char page[] = "<!DOCTYPE html>\n"
			   "<html><head><meta charset=\"utf-8\"><title>weft httpd</title></head>\n"
			   "<body><h1>weft httpd</h1>\n"
			   "<p>Served by one fiber per connection on weft's M:N scheduler.</p>\n"
			   "<p>Live counters: <a href=\"/stats\">/stats</a> "
			   "(<a href=\"/stats?json\">JSON</a>).</p>\n"
			   "</body></html>\n";

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 413:
		return "Content Too Large";
	case 417:
		return "Expectation Failed";
	case 431:
		return "Request Header Fields Too Large";
	case 501:
		return "Not Implemented";
	case 503:
		return "Service Unavailable";
	default:
		return "Error";
	}
}

static size_t stats_body(char *b, size_t cap, int json)
{
	weft_stats_t ws = {0};
	weft_net_stats_t ns = {0};
	weft_stats(&ws);
	weft_net_stats(&ns);
	const char *stack = weft_net_stack();
	const char *f =
		json ? "{\"fibers\": %" PRIu64 ", \"workers\": %u, \"switches\": %" PRIu64
		       ", \"spawned\": %" PRIu64 ", \"connections_open\": %" PRIu64
		       ", \"connections_accepted\": %" PRIu64 ", \"connections_refused\": %" PRIu64
		       ", \"requests\": %" PRIu64 ", \"errors\": %" PRIu64
		       ", \"uptime_ms\": %" PRId64 ", \"net_stack\": \"%s\""
		       ", \"net_sockets_open\": %" PRIu64 ", \"net_tcp_accepted\": %" PRIu64
		       ", \"net_bytes_read\": %" PRIu64 ", \"net_bytes_written\": %" PRIu64
		       ", \"net_frames_in\": %" PRIu64 ", \"net_frames_out\": %" PRIu64
		       ", \"net_frames_dropped\": %" PRIu64 ", \"net_mem_blocks\": %" PRIu64
		       ", \"net_mem_failed\": %" PRIu64 "}\n"
		     : "fibers %" PRIu64 "\nworkers %u\nswitches %" PRIu64 "\nspawned %" PRIu64
		       "\nconnections_open %" PRIu64 "\nconnections_accepted %" PRIu64
		       "\nconnections_refused %" PRIu64 "\nrequests %" PRIu64 "\nerrors %" PRIu64
		       "\nuptime_ms %" PRId64 "\nnet_stack %s"
		       "\nnet_sockets_open %" PRIu64 "\nnet_tcp_accepted %" PRIu64
		       "\nnet_bytes_read %" PRIu64 "\nnet_bytes_written %" PRIu64
		       "\nnet_frames_in %" PRIu64 "\nnet_frames_out %" PRIu64
		       "\nnet_frames_dropped %" PRIu64 "\nnet_mem_blocks %" PRIu64
		       "\nnet_mem_failed %" PRIu64 "\n";
	int n = snprintf(b, cap, f, ws.fibers, ws.workers, ws.switches, ws.spawned,
			 atomic_load(&n_open), atomic_load(&n_accepted), atomic_load(&n_refused),
			 atomic_load(&n_requests), atomic_load(&n_errors),
			 (weft_now() - started_at) / MS, stack ? stack : "down", ns.sockets_open,
			 ns.tcp_accepted, ns.bytes_read, ns.bytes_written, ns.frames_in,
			 ns.frames_out, ns.frames_dropped, ns.mem_blocks, ns.mem_failed);
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* How to send an answer. */
enum { RF_KEEP = 1, RF_HEAD_ONLY = 2, RF_HTTP10 = 4, RF_NO_STORE = 8 };

/* Send one answer: the head, and the body unless RF_HEAD_ONLY. */
static int respond(struct conn *c, int status, const char *type, const char *body, size_t blen,
		   unsigned flags)
{
	char out[512 + BODY_MAX];
	atomic_fetch_add(&n_requests, 1);
	if (status >= 400)
		atomic_fetch_add(&n_errors, 1);
	int n = snprintf(out, sizeof out,
			 "HTTP/1.1 %d %s\r\nServer: weft-httpd\r\nContent-Type: %s\r\n"
			 "Content-Length: %zu\r\n%s%s%s\r\n",
			 status, reason(status), type, blen,
			 status == 405 ? "Allow: GET, HEAD\r\n" : "",
			 flags & RF_NO_STORE ? "Cache-Control: no-store\r\n" : "",
			 !(flags & RF_KEEP)  ? "Connection: close\r\n"
			 : flags & RF_HTTP10 ? "Connection: keep-alive\r\n"
					     : "");
	if (n < 0 || (size_t)n + blen > sizeof out)
		return -1;
	size_t len = (size_t)n;
	if (!(flags & RF_HEAD_ONLY)) {
		memcpy(out + len, body, blen);
		len += blen;
	}
	ssize_t w = weft_sock_write(c->s, out, len, weft_deadline_in(cfg.idle_ms * MS));
	return w == (ssize_t)len ? 0 : -1;
}

/* A short text answer for a status other than 200. */
static int respond_status(struct conn *c, int status, unsigned flags)
{
	char body[64];
	int n = snprintf(body, sizeof body, "%d %s\n", status, reason(status));
	return respond(c, status, "text/plain", body, (size_t)n, flags);
}

/* Answer requests on c until it should close. Returns 1 when an answer
 * went out and the connection is closing (it should linger), 0 when not. */
static int serve(struct conn *c)
{
	for (int served = 0; served < MAX_REQUESTS; served++) {
		struct http_req r;
		size_t head_len = 0;
		int64_t until = -1;
		int st = read_head(c, &r, &head_len, &until);
		if (st < 0)
			return 0;
		if (st > 0)
			return respond_status(c, st, 0) == 0;
		if (r.content_length > (uint64_t)cfg.max_body)
			return respond_status(c, 413, 0) == 0;
		int which = http_route(r.target, r.target_len);
		if (which < 0)
			return respond_status(c, 400, 0) == 0;
		int get = r.method_len == 3 && memcmp(r.method, "GET", 3) == 0;
		int head = r.method_len == 4 && memcmp(r.method, "HEAD", 4) == 0;
		int status = which == 0 ? 404 : get || head ? 200 : 405;
		unsigned flags = (r.close ? 0 : RF_KEEP) | (head ? RF_HEAD_ONLY : 0) |
				 (r.minor == 0 ? RF_HTTP10 : 0);
		int expect = r.expect_continue && r.minor >= 1;
		uint64_t body_len = r.content_length;
		consume(c, head_len); /* r's pointers are stale from here */
		if (body_len > 0) {
			static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
			if (expect && status != 200) {
				/* The client waits for a word before it sends the
				 * body: answer now and close instead. */
				flags &= ~(unsigned)RF_KEEP;
			} else {
				if (expect && weft_sock_write(c->s, cont, sizeof cont - 1, until) !=
						      (ssize_t)sizeof cont - 1)
					return 0;
				int b = skip_body(c, body_len, until);
				if (b == -ETIMEDOUT)
					return respond_status(c, 408, 0) == 0;
				if (b != 0)
					return 0;
			}
		}
		if (atomic_load(&stopping) || c->must_close || served + 1 == MAX_REQUESTS)
			flags &= ~(unsigned)RF_KEEP;
		int err;
		if (status != 200) {
			err = respond_status(c, status, flags);
		} else if (which == 1) {
			err = respond(c, 200, "text/html; charset=utf-8", page, sizeof page - 1,
				      flags);
		} else {
			char body[BODY_MAX];
			size_t blen = stats_body(body, sizeof body, which == 3);
			err = respond(c, 200,
				      which == 3 ? "application/json" : "text/plain; charset=utf-8",
				      body, blen, flags | RF_NO_STORE);
		}
		if (err)
			return 0;
		if (!(flags & RF_KEEP))
			return 1;
	}
	return 1;
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	if (serve(c))
		linger(c);
	weft_sock_close(c->s);
	tell(EV_DONE, c);
	return NULL;
}

/* ---- Accepting ---------------------------------------------------------- */

/* Turn a connection away: a 503 if its socket takes it at once, then close;
 * the first refusal after a quiet second is logged, with the count so far. */
static void refuse(weft_sock_t *s, const char *why)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\n"
				   "Content-Length: 0\r\nConnection: close\r\n\r\n";
	static _Atomic int64_t last_log = INT64_MIN / 2;
	weft_sock_write(s, busy, sizeof busy - 1, 0);
	weft_sock_close(s);
	uint64_t n = atomic_fetch_add(&n_refused, 1) + 1;
	int64_t now = weft_now(), last = atomic_load(&last_log);
	if (now - last >= 1000 * MS && atomic_compare_exchange_strong(&last_log, &last, now))
		fprintf(stderr, "httpd: refusing connections: %s (%" PRIu64 " refused so far)\n",
			why, n);
}

static void *accept_loop(void *arg)
{
	weft_sock_t *ls = arg;
	while (!atomic_load(&stopping)) {
		weft_sock_t *s;
		int r = weft_tcp_accept(ls, &s, NULL, -1);
		if (r == -ECANCELED || r == -EBADF || r == -EINVAL)
			break;
		if (r < 0) { /* out of memory or descriptors: let some close */
			weft_sleep_until(weft_deadline_in(20 * MS));
			continue;
		}
		atomic_fetch_add(&n_accepted, 1);
		if (atomic_load(&n_open) >= (uint64_t)cfg.max_conns) {
			refuse(s, "HTTPD_MAX_CONNS connections open");
			continue;
		}
		struct conn *c = calloc(1, sizeof *c);
		if (!c) {
			refuse(s, "no memory for a connection");
			continue;
		}
		c->s = s;
		atomic_fetch_add(&n_open, 1);
		weft_attr_t attr = {.name = "http-conn"};
		int err = weft_fiber_spawn(&c->fiber, &attr, conn_main, c);
		if (err != 0) {
			free(c);
			atomic_fetch_sub(&n_open, 1);
			refuse(s,
			       err == -ENOMEM ? "no memory for a fiber" : "cannot spawn a fiber");
			continue;
		}
		tell(EV_NEW, c);
	}
	weft_sock_close(ls);
	tell(EV_ACCEPTOR_DONE, NULL);
	return NULL;
}

/* SIGTERM and SIGINT, blocked in every thread (main blocks them before
 * weft_init), are taken by this fiber. */
#define STOP_SIGNALS (WEFT_SIGNAL(SIGTERM) | WEFT_SIGNAL(SIGINT))

static void *watch_signals(void *arg)
{
	(void)arg;
	for (int seen = 0;; seen++) {
		int sig;
		int r = weft_signal_wait(STOP_SIGNALS, -1, &sig);
		if (r == -ECANCELED)
			break;
		if (r < 0) {
			fprintf(stderr, "httpd: waiting for signals: %s\n", strerror(-r));
			break;
		}
		if (seen) {
			fprintf(stderr, "httpd: signal %d again: exiting now\n", sig);
			fflush(stdout);
			_Exit(1);
		}
		printf("httpd: signal %d\n", sig);
		tell(EV_STOP, NULL);
	}
	return NULL;
}

/* ---- Start-up ------------------------------------------------------------ */

static int env_long(const char *name, long def, long min, long max, long *out)
{
	const char *s = getenv(name);
	*out = def;
	if (!s || !*s)
		return 0;
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < min || v > max) {
		fprintf(stderr, "httpd: %s=%s: not a number in [%ld, %ld]\n", name, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

static int configure(void)
{
	long port;
	const char *a = getenv("HTTPD_ADDR");
	if (weft_addr_parse(a && *a ? a : "0.0.0.0", &cfg.addr) != 0) {
		fprintf(stderr, "httpd: HTTPD_ADDR=%s: not an IPv4 address\n", a);
		return -1;
	}
	if (env_long("HTTPD_PORT", 8080, 0, 65535, &port) ||
	    env_long("HTTPD_IDLE_MS", 5000, 1, 86400000, &cfg.idle_ms) ||
	    env_long("HTTPD_REQUEST_MS", 30000, 1, 86400000, &cfg.request_ms) ||
	    env_long("HTTPD_GRACE_MS", 5000, 0, 86400000, &cfg.grace_ms) ||
	    env_long("HTTPD_MAX_CONNS", 4096, 1, 1000000, &cfg.max_conns) ||
	    env_long("HTTPD_MAX_BODY", 65536, 0, 1L << 30, &cfg.max_body))
		return -1;
	cfg.addr.port = (uint16_t)port;
	return 0;
}

int main(void)
{
	started_at = weft_now();
	if (configure() != 0)
		return 2;
	/* Before any thread starts, so that every thread inherits the mask;
	 * bare metal has no signals (-ENOTSUP) and stops only with the board. */
	int sig_err = weft_signal_block(STOP_SIGNALS);
	if (sig_err && sig_err != -ENOTSUP)
		fprintf(stderr, "httpd: blocking signals: %s (no graceful shutdown)\n",
			strerror(-sig_err));
	int err = weft_init(NULL);
	if (err) {
		fprintf(stderr, "httpd: weft_init: %s\n", strerror(-err));
		return 1;
	}
	err = weft_net_init(NULL);
	if (err) {
		fprintf(stderr, "httpd: weft_net_init: %s\n", strerror(-err));
		weft_shutdown();
		return 1;
	}
	weft_sock_t *ls;
	char name[24];
	err = weft_tcp_listen(&ls, &cfg.addr, 512);
	if (err == 0)
		err = weft_sock_local(ls, &cfg.addr);
	if (err == 0)
		err = weft_chan_create(&events, sizeof(struct event), 256);
	if (err) {
		fprintf(stderr, "httpd: listening on %s: %s\n",
			weft_addr_format(&cfg.addr, name, sizeof name), strerror(-err));
		return 1;
	}
	weft_fiber_t sup;
	weft_attr_t a1 = {.name = "http-accept"}, a2 = {.name = "http-supervisor"};
	if (weft_fiber_spawn(&acceptor, &a1, accept_loop, ls) != 0 ||
	    weft_fiber_spawn(&sup, &a2, supervise, NULL) != 0) {
		fprintf(stderr, "httpd: cannot spawn\n");
		return 1;
	}
	weft_attr_t a3 = {.name = "http-signals"};
	if (!sig_err && weft_fiber_spawn(&watcher, &a3, watch_signals, NULL) != 0)
		watcher = 0;
	printf("httpd: serving http://%s/ (stack %s)\n",
	       weft_addr_format(&cfg.addr, name, sizeof name), weft_net_stack());
	fflush(stdout);
	weft_fiber_join(sup, -1, NULL, NULL);
	weft_run();
	printf("httpd: stopped: %" PRIu64 " connections, %" PRIu64 " requests, %" PRIu64
	       " errors, %" PRIu64 " refused\n",
	       atomic_load(&n_accepted), atomic_load(&n_requests), atomic_load(&n_errors),
	       atomic_load(&n_refused));
	weft_chan_destroy(events);
	/* Every fiber has finished: this takes the network stack down and
	 * stops the runtime (a socket left open would say so, -EBUSY). */
	err = weft_shutdown_grace(weft_deadline_in(3000 * MS), NULL, NULL);
	if (err)
		fprintf(stderr, "httpd: weft_shutdown_grace: %s\n",
			err > 0 ? "fibers would not end" : strerror(-err));
	return err ? 1 : 0;
}
