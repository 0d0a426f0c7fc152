/* SPDX-License-Identifier: MIT */
/* lwIP's IPv6 on a device interface (net/lwip_netif.c), against the Linux
 * kernel's own IPv6 as the peer: the suite makes a TAP device of its own
 * ("tap:wip6-PID-N"), brings lwIP up on it with a global address
 * (weft_net_config_t.ip6, or $WEFT_IP6), gives the kernel's side an
 * address of the same /64, and then the kernel's TCP connects to an lwIP
 * echo server, and an lwIP client to a kernel listener, 128 KiB each way
 * with every byte checked. Neighbour discovery has to work both ways for
 * either: the kernel's solicitation for lwIP's address goes to that
 * address's solicited-node multicast group. UDP is echoed too. The TAP
 * device is not persistent: weft_net_fini closes it and the kernel
 * removes it (checked), and so does the end of the process however it
 * ends.
 *
 * Malformed addresses (no prefix, /48, garbage, an IPv4 address, empty,
 * link-local, ...) are refused with -EINVAL before any device is touched,
 * and the refusal names the field or variable, its value and what is
 * accepted (on stderr, read back here on Linux); so are the other values
 * weft_net_init reads for lwIP. Those tests need no TAP device and run on
 * every target (bare metal: the return codes only).
 *
 * The TAP tests need /dev/net/tun, CAP_NET_ADMIN and a kernel with IPv6,
 * and skip, saying which is missing, without them. Linux only. */
#include <string.h>

#include "testutil.h"
#if WT_LINUX
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#endif

#define PORT 7391
#define LEN (128 * 1024)
#define CHUNK 4096
#define LONG_S 10
#define LWIP_IP4 "10.213.29.2/24" /* a device needs one; the kernel's side has none */

/* ---- Refusals ------------------------------------------------------------------ */

#if WT_LINUX
/* Byte i of the stream salt names. */
static uint8_t pat(size_t i, unsigned salt)
{
	return (uint8_t)((i * 131u + (i >> 9) + salt * 71u) & 0xffu);
}

/* Set (v not NULL) or unset a variable. */
static void env_set(const char *name, const char *v)
{
	if (v)
		setenv(name, v, 1);
	else
		unsetenv(name);
}

/* A copy of a variable's value, NULL if unset (free it). */
static char *env_save(const char *name)
{
	const char *v = getenv(name);
	return v ? strdup(v) : NULL;
}

/* weft_net_init(c) with stderr caught; what weft wrote into said. */
static int init_caught(const weft_net_config_t *c, char *said, size_t cap)
{
	char path[] = "/tmp/weft-ipv6tap-errXXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	fflush(stderr);
	int saved = dup(2);
	assert_true(saved >= 0);
	assert_true(dup2(fd, 2) == 2);
	int r = weft_net_init(c);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ssize_t n = pread(fd, said, cap - 1, 0);
	said[n > 0 ? n : 0] = 0;
	close(fd);
	unlink(path);
	return r;
}
#endif

/* weft_net_init(c) is -EINVAL with nothing brought up, and (Linux) what it
 * said on stderr holds each of the texts in expect (NULL-terminated). */
static void refused(const weft_net_config_t *c, const char *what, const char *const *expect)
{
	char said[1024] = "";
#if WT_LINUX
	int r = init_caught(c, said, sizeof said);
#else
	int r = weft_net_init(c);
	expect = NULL;
#endif
	const char *up = weft_net_stack();
	if (up)
		weft_net_fini();
	if (r != -EINVAL || up)
		fail_msg("%s: weft_net_init = %d, expected -EINVAL; the stack is %s", what, r,
			 up ? up : "down");
	for (; expect && *expect; expect++)
		if (!strstr(said, *expect))
			fail_msg("%s: stderr lacks \"%s\"; it has: \"%s\"", what, *expect, said);
}

/* Bad ip6 values, from the field (on "loop", where it is checked but not
 * used, and on a TAP device that is never opened) and from $WEFT_IP6 (on a
 * TAP device: the variable is read for devices only, and checked before
 * the device is opened). */
static void test_ip6_refused(void **state)
{
	(void)state;
	static const struct {
		const char *v, *why;
	} bad[] = {
		{"fd00::2", "no prefix length"},
		{"fd00::2/48", "/64 only"},
		{"fd00::2/128", "/64 only"},
		{"fd00::2/", "/64 only"},
		{"fd00::2/64x", "/64 only"},
		{"fd00::2/064", "/64 only"},
		{"garbage", "not an IPv6 address"},
		{"garbage/64", "not an IPv6 address"},
		{"10.0.0.2", "not an IPv6 address"},
		{"10.0.0.2/64", "not an IPv6 address"},
		{"", "not an IPv6 address"},
		{"/64", "not an IPv6 address"},
		{"[fd00::2]/64", "not an IPv6 address"},
		{"[fd00::2]:80/64", "not an IPv6 address"},
		{"fd00::2%2/64", "not an IPv6 address"},
		{"fe80::2/64", "link-local"},
		{"::/64", "not a global"},
		{"::1/64", "not a global"},
		{"ff02::1/64", "multicast"},
		{"::ffff:10.0.0.2/64", "IPv4-mapped"},
	};
#if WT_LINUX
	char *old = env_save("WEFT_IP6");
#endif
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char what[96], field[96];
		snprintf(field, sizeof field, "weft_net_config_t.ip6 \"%s\": ", bad[i].v);
		const char *const want[] = {field, bad[i].why, NULL};
		weft_net_config_t c = {.stack = "lwip", .netif = "loop", .ip6 = bad[i].v};
		snprintf(what, sizeof what, "loop, ip6 \"%s\"", bad[i].v);
		refused(&c, what, want);
		c.netif = "tap:wip6-none";
		c.ip = LWIP_IP4;
		snprintf(what, sizeof what, "tap, ip6 \"%s\"", bad[i].v);
		refused(&c, what, want);
#if WT_LINUX
		if (!*bad[i].v)
			continue; /* $WEFT_IP6 empty is unset, as $WEFT_IP is */
		char var[96];
		snprintf(var, sizeof var, "WEFT_IP6=%s: ", bad[i].v);
		const char *const want_var[] = {var, bad[i].why, NULL};
		weft_net_config_t v = {.stack = "lwip", .netif = "tap:wip6-none", .ip = LWIP_IP4};
		setenv("WEFT_IP6", bad[i].v, 1);
		snprintf(what, sizeof what, "tap, WEFT_IP6=%s", bad[i].v);
		refused(&v, what, want_var);
#endif
	}
#if WT_LINUX
	env_set("WEFT_IP6", old);
	free(old);
#endif
	assert_null(weft_net_stack());
}

/* The other values weft_net_init reads for lwIP, refused the same way. */
static void test_other_values_refused(void **state)
{
	(void)state;
	static const struct {
		weft_net_config_t c;
		const char *w1, *w2;
	} bad[] =
	{ {{.stack = "lwip", .netif = "bogus"},
	   "weft_net_config_t.netif \"bogus\": ",
	   "loop, tap:NAME"},
	  {{.stack = "lwip", .netif = ""}, "weft_net_config_t.netif \"\": ", "loop, tap:NAME"},
	  {{.stack = "lwip", .netif = "loop", .ip = "1.2.3"},
	   "weft_net_config_t.ip \"1.2.3\": ",
	   "a.b.c.d/len"},
	  {{.stack = "lwip", .netif = "loop", .ip = "10.0.0.1/33"},
	   "weft_net_config_t.ip \"10.0.0.1/33\": ",
	   "len 0 to 32"},
	  {{.stack = "lwip", .netif = "loop", .gw = "1.2.3"},
	   "weft_net_config_t.gw \"1.2.3\": ",
	   "a.b.c.d"},
	  {{.stack = "lwip", .netif = "loop", .dns = "x"},
	   "weft_net_config_t.dns \"x\": ",
	   "IPv4 or IPv6"},
	  {{.stack = "lwip", .netif = "loop", .dns = "0.0.0.0"},
	   "weft_net_config_t.dns \"0.0.0.0\": ",
	   "other than 0.0.0.0"},
	  {{.stack = "lwip", .netif = "tap:wip6-none"},
	   "netif \"tap:wip6-none\" needs an IPv4 address",
	   "WEFT_IP"},
	  {{.stack = "bogus"}, "weft_net_config_t.stack \"bogus\": ", "not kernel or lwip"},
#if WT_LINUX
	  {{.stack = "lwip", .netif = "xdp:lo:x", .ip = LWIP_IP4},
	   "WEFT_NETIF=xdp:lo:x: ",
	   "the queue is not a number from 0 to 1023"},
	  {{.stack = "lwip", .netif = "xdp::1", .ip = LWIP_IP4},
	   "WEFT_NETIF=xdp::1: ",
	   "not IFNAME[:QUEUE]"},
#endif
	};
#if WT_LINUX
	char *old_ip = env_save("WEFT_IP");
	unsetenv("WEFT_IP"); /* the last case needs it unset */
#endif
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *const want[] = {bad[i].w1, bad[i].w2, NULL};
		char what[32];
		snprintf(what, sizeof what, "config case %zu", i);
		refused(&bad[i].c, what, want);
	}
#if WT_LINUX
	/* The variables, each alone (the fields NULL). */
	static const struct {
		const char *var, *v, *w1, *w2;
	} vars[] = {
		{"WEFT_NETIF", "bogus", "WEFT_NETIF=bogus: ", "xdp:IFNAME[:QUEUE]"},
		{"WEFT_IP", "x", "WEFT_IP=x: ", "a.b.c.d/len"},
		{"WEFT_GW", "1.2.3.4.5", "WEFT_GW=1.2.3.4.5: ", "a.b.c.d"},
		{"WEFT_DNS", "::", "WEFT_DNS=::: ", "other than 0.0.0.0 and ::"},
		{"WEFT_NET_MEM_KB", "3", "WEFT_NET_MEM_KB=3: ", "from 16 to 1073741824"},
		{"WEFT_NET", "bogus", "WEFT_NET=bogus: ", "not kernel or lwip"},
	};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		char *saved = env_save(vars[i].var);
		setenv(vars[i].var, vars[i].v, 1);
		/* A TAP device named but never opened: WEFT_IP and WEFT_GW are
		 * read for devices only. */
		weft_net_config_t c = {.stack = "lwip", .netif = "tap:wip6-none", .ip = LWIP_IP4};
		if (!strcmp(vars[i].var, "WEFT_NETIF"))
			c.netif = NULL;
		if (!strcmp(vars[i].var, "WEFT_IP"))
			c.ip = NULL;
		if (!strcmp(vars[i].var, "WEFT_NET"))
			c.stack = NULL;
		const char *const want[] = {vars[i].w1, vars[i].w2, NULL};
		refused(&c, vars[i].var, want);
		env_set(vars[i].var, saved);
		free(saved);
	}
	env_set("WEFT_IP", old_ip);
	free(old_ip);
#endif
	assert_null(weft_net_stack());
}

/* ---- The TAP device ------------------------------------------------------------ */

#if WT_LINUX
static struct {
	char name[IFNAMSIZ];
	char spec[IFNAMSIZ + 8];
	char cidr6[80];       /* lwIP's, with /64 */
	struct in6_addr k, l; /* the kernel's address and lwIP's */
	uint8_t data[2][LEN]; /* the two streams */
} g;

/* struct in6_ifreq of <linux/ipv6.h> (not every libc has it). */
struct ifreq6 {
	struct in6_addr addr;
	uint32_t prefixlen;
	int ifindex;
};

/* A device of its own per test ("wip6-PID-N"): under WEFT_IO=uring a
 * closed device may outlive weft_net_fini for a moment (down), and a new
 * one of the same name would find it busy. */
static void names(void)
{
	static unsigned n;
	unsigned pid = (unsigned)getpid();
	snprintf(g.name, sizeof g.name, "wip6-%u-%u", pid % 1000000u, ++n % 100u);
	snprintf(g.spec, sizeof g.spec, "tap:%s", g.name);
	char k[64], l[64];
	/* A /64 of the unique-local range per process, so that two runs at
	 * once do not route into each other's device. */
	snprintf(k, sizeof k, "fd00:77:%x::1", pid & 0xffffu);
	snprintf(l, sizeof l, "fd00:77:%x::2", pid & 0xffffu);
	snprintf(g.cidr6, sizeof g.cidr6, "%s/64", l);
	assert_int_equal(inet_pton(AF_INET6, k, &g.k), 1);
	assert_int_equal(inet_pton(AF_INET6, l, &g.l), 1);
	for (size_t i = 0; i < LEN; i++) {
		g.data[0][i] = pat(i, 0);
		g.data[1][i] = pat(i, 1);
	}
}

/* Write v into the device's IPv6 setting key; 0 or -errno. */
static int conf6(const char *key, const char *v)
{
	char path[128];
	snprintf(path, sizeof path, "/proc/sys/net/ipv6/conf/%s/%s", g.name, key);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = write(fd, v, strlen(v)) == (ssize_t)strlen(v) ? 0 : -errno;
	close(fd);
	return r;
}

static void pause_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* The kernel's side: g.k/64 on the device, with no duplicate address
 * detection, and usable (a bind to it works) within LONG_S. NULL, or why
 * this machine cannot. */
static const char *host_side(void)
{
	if (conf6("disable_ipv6", "0") == -ENOENT)
		return "the kernel has no IPv6 on the device (no /proc/sys/net/ipv6/conf/NAME)";
	int r = conf6("accept_dad", "0");
	if (r)
		print_message("accept_dad not written (%d): waiting for DAD instead\n", r);
	int s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return "no AF_INET6 sockets in this kernel";
	struct ifreq6 ifr = {.addr = g.k, .prefixlen = 64};
	ifr.ifindex = (int)if_nametoindex(g.name);
	assert_true(ifr.ifindex > 0);
	assert_int_equal(ioctl(s, SIOCSIFADDR, &ifr), 0);
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = g.k};
	int ok = 0;
	for (int i = 0; i < LONG_S * 100 && !(ok = bind(s, (struct sockaddr *)&a, sizeof a) == 0);
	     i++)
		pause_ms(10); /* tentative (EADDRNOTAVAIL) until DAD is done */
	close(s);
	assert_true(ok);
	return NULL;
}

/* lwIP up on the suite's TAP device with g.cidr6 from the field (and
 * garbage in $WEFT_IP6, which the field overrides) or from $WEFT_IP6; the
 * kernel's side configured. 0, or -1 (said) when the machine cannot. */
static int up(int from_env)
{
	names();
	weft_net_config_t cfg = {.stack = "lwip", .netif = g.spec, .ip = LWIP_IP4};
	char *saved = env_save("WEFT_IP6");
	if (from_env) {
		setenv("WEFT_IP6", g.cidr6, 1);
	} else {
		setenv("WEFT_IP6", "garbage", 1);
		cfg.ip6 = g.cidr6;
	}
	int up = wt_net_init_tap(&cfg);
	env_set("WEFT_IP6", saved);
	free(saved);
	if (up < 0)
		return -1;
	const char *why = host_side();
	if (why) {
		print_message("%s\n", why);
		assert_int_equal(weft_net_fini(), 0);
		return -1;
	}
	return 0;
}

/* lwIP down, and the device gone with it: at once with epoll. With
 * WEFT_IO=uring, weft_net_fini called from a plain thread (this one) may
 * return while the ring still holds the closed descriptor (its cancelled
 * poll), and the device goes a moment later: seen once in 20 runs here,
 * and a new device of the same name was then -EBUSY. */
static void down(void)
{
	assert_int_equal(weft_net_fini(), 0);
	unsigned idx = if_nametoindex(g.name);
	for (int i = 0; idx && i < LONG_S * 100; i++) {
		pause_ms(10);
		idx = if_nametoindex(g.name);
	}
	assert_int_equal(idx, 0);
}

static int net_down(void **state)
{
	(void)state;
	if (weft_net_stack())
		weft_net_fini();
	return 0;
}

static int same6(const weft_addr_t *a, const struct in6_addr *b)
{
	return a->family == WEFT_AF_INET6 && !memcmp(a->ip6, b->s6_addr, 16) && a->scope == 0;
}

/* ---- The kernel's socket calls, from this thread ----------------------------------
 * Each again after EINTR: under WEFT_IO=uring a thread that has submitted
 * to the runtime's ring (this one, closing a device at weft_net_fini) is
 * sent the kernel's task-work notifications, which interrupt a call with a
 * timeout (docs/net/kernel-uring.md, "Your own threads and EINTR"). */

static int k_socket(void)
{
	int s = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	struct timeval tv = {LONG_S, 0};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	return s;
}

/* Read exactly n bytes: n, or what came before the end or an error. */
static size_t k_read_all(int fd, uint8_t *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

static size_t k_write_all(int fd, const uint8_t *buf, size_t n)
{
	size_t put = 0;
	while (put < n) {
		ssize_t r = write(fd, buf + put, n - put);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		put += (size_t)r;
	}
	return put;
}

/* Connect, finishing one that EINTR interrupted: 0 or -errno. */
static int k_connect(int s, const struct sockaddr_in6 *to)
{
	if (connect(s, (const struct sockaddr *)to, sizeof *to) == 0)
		return 0;
	if (errno != EINTR && errno != EINPROGRESS)
		return -errno;
	struct pollfd p = {.fd = s, .events = POLLOUT};
	int r;
	while ((r = poll(&p, 1, LONG_S * 1000)) < 0 && errno == EINTR)
		;
	if (r != 1)
		return -ETIMEDOUT;
	int e = 0;
	socklen_t len = sizeof e;
	getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &len);
	return -e;
}

/* ---- lwIP's server ----------------------------------------------------------------- */

struct echo {
	weft_sock_t *ls;
	int r_accept;
	long bytes;
	weft_addr_t peer, local;
};

static void *echo_server(void *arg)
{
	struct echo *e = arg;
	weft_sock_t *s;
	e->r_accept = weft_tcp_accept(e->ls, &s, &e->peer, wt_ms(LONG_S * 1000));
	if (e->r_accept)
		return NULL;
	weft_sock_local(s, &e->local);
	char buf[CHUNK];
	for (;;) {
		ssize_t n = weft_sock_read(s, buf, sizeof buf, wt_ms(LONG_S * 1000));
		if (n <= 0)
			break;
		if (weft_sock_write(s, buf, (size_t)n, wt_ms(LONG_S * 1000)) != n)
			break;
		e->bytes += n;
	}
	weft_sock_close(s);
	return NULL;
}

/* The kernel's TCP connects to lwIP's global address (from the field; the
 * garbage in $WEFT_IP6 is not read) and 128 KiB come back as sent, in
 * rounds of 4 KiB; both ends see the other's global address. */
static void test_kernel_client_lwip_server(void **state)
{
	(void)state;
	if (up(0))
		skip();
	struct echo e = {0};
	weft_addr_t any = {.family = WEFT_AF_INET6, .port = PORT};
	assert_int_equal(weft_tcp_listen(&e.ls, &any, 4), 0);
	weft_fiber_t f = wt_spawn(echo_server, &e);

	int s = k_socket();
	struct sockaddr_in6 to = {
		.sin6_family = AF_INET6, .sin6_port = htons(PORT), .sin6_addr = g.l};
	int rc = k_connect(s, &to);
	long bad = -1, back = 0;
	struct sockaddr_in6 me;
	socklen_t mlen = sizeof me;
	int named = rc == 0 ? getsockname(s, (struct sockaddr *)&me, &mlen) : -1;
	static uint8_t in[CHUNK];
	for (size_t at = 0; rc == 0 && at < LEN; at += CHUNK) {
		if (k_write_all(s, g.data[0] + at, CHUNK) != CHUNK)
			break;
		size_t got = k_read_all(s, in, CHUNK);
		for (size_t i = 0; i < got && bad < 0; i++)
			if (in[i] != g.data[0][at + i])
				bad = (long)(at + i);
		back += (long)got;
		if (got != CHUNK)
			break;
	}
	shutdown(s, SHUT_WR);
	uint8_t extra;
	ssize_t after = -1; /* then 0: the end, lwIP closed */
	while (rc == 0 && (after = read(s, &extra, 1)) < 0 && errno == EINTR)
		;
	close(s);
	wt_join(f);
	assert_int_equal(rc, 0);
	assert_int_equal(e.r_accept, 0);
	assert_int_equal(back, LEN);
	assert_int_equal(bad, -1);
	assert_int_equal(after, 0);
	assert_int_equal(e.bytes, LEN);
	assert_int_equal(named, 0);
	assert_true(!memcmp(&me.sin6_addr, &g.k, 16)); /* the kernel's source */
	assert_true(same6(&e.peer, &g.k));
	assert_int_equal(e.peer.port, ntohs(me.sin6_port));
	assert_true(same6(&e.local, &g.l));
	assert_int_equal(e.local.port, PORT);
	assert_int_equal(weft_sock_close(e.ls), 0);
	down();
}

/* ---- lwIP's client ------------------------------------------------------------------- */

struct client {
	int r_connect;
	long sent, got, bad, after;
	weft_addr_t local;
};

/* Connect to the kernel's listener, send stream 0, read stream 1 back and
 * check it, then the end. */
static void *client_main(void *arg)
{
	struct client *c = arg;
	c->bad = -1;
	weft_addr_t to = {.family = WEFT_AF_INET6, .port = PORT + 1};
	memcpy(to.ip6, g.k.s6_addr, 16);
	weft_sock_t *s;
	c->r_connect = weft_tcp_connect(&s, &to, wt_ms(LONG_S * 1000));
	if (c->r_connect)
		return NULL;
	weft_sock_local(s, &c->local);
	c->sent = weft_sock_write(s, g.data[0], LEN, wt_ms(LONG_S * 1000));
	static uint8_t buf[CHUNK];
	while (c->got < LEN) {
		ssize_t n = weft_sock_read(s, buf, sizeof buf, wt_ms(LONG_S * 1000));
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n && c->bad < 0; i++)
			if (c->got + i >= LEN || buf[i] != g.data[1][c->got + i])
				c->bad = c->got + i;
		c->got += n;
	}
	c->after = weft_sock_read(s, buf, sizeof buf, wt_ms(LONG_S * 1000));
	weft_sock_close(s);
	return NULL;
}

/* An lwIP client connects from its global address (from $WEFT_IP6) to a
 * kernel listener on the kernel's; 128 KiB go each way, every byte
 * checked on both sides. */
static void test_lwip_client_kernel_server(void **state)
{
	(void)state;
	if (up(1))
		skip();
	int ls = k_socket();
	int one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in6 at = {
		.sin6_family = AF_INET6, .sin6_port = htons(PORT + 1), .sin6_addr = g.k};
	assert_int_equal(bind(ls, (struct sockaddr *)&at, sizeof at), 0);
	assert_int_equal(listen(ls, 4), 0);

	struct client c = {0};
	weft_fiber_t f = wt_spawn(client_main, &c);
	struct sockaddr_in6 peer;
	socklen_t plen = sizeof peer;
	int s;
	while ((s = accept(ls, (struct sockaddr *)&peer, &plen)) < 0 && errno == EINTR)
		plen = sizeof peer;
	int accept_errno = s < 0 ? errno : 0;
	close(ls);
	static uint8_t in[LEN];
	size_t got = 0, put = 0;
	if (s >= 0) {
		struct timeval tv = {LONG_S, 0};
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		got = k_read_all(s, in, LEN);
		put = k_write_all(s, g.data[1], LEN);
		shutdown(s, SHUT_WR);
	}
	wt_join(f);
	if (s >= 0)
		close(s);
	assert_int_equal(accept_errno, 0);
	assert_int_equal(c.r_connect, 0);
	assert_int_equal(c.sent, LEN);
	assert_int_equal(got, LEN);
	assert_true(!memcmp(in, g.data[0], LEN));
	assert_int_equal(put, LEN);
	assert_int_equal(c.got, LEN);
	assert_int_equal(c.bad, -1);
	assert_int_equal(c.after, 0);
	assert_true(same6(&c.local, &g.l));
	assert_true(!memcmp(&peer.sin6_addr, &g.l, 16));
	assert_int_equal(ntohs(peer.sin6_port), c.local.port);
	down();
}

/* ---- UDP ------------------------------------------------------------------------------- */

struct udp_echo {
	weft_sock_t *s;
	int n;
	long bad;
	weft_addr_t from;
};

/* lwIP's side: n datagrams back to where each came from. */
static void *udp_echo_main(void *arg)
{
	struct udp_echo *u = arg;
	static uint8_t buf[1500];
	for (int i = 0; i < 8; i++) {
		ssize_t n =
			weft_udp_recvfrom(u->s, buf, sizeof buf, &u->from, wt_ms(LONG_S * 1000));
		if (n <= 0 || weft_udp_sendto(u->s, buf, (size_t)n, &u->from, 0) != n)
			break;
		u->n++;
	}
	return NULL;
}

/* UDP over IPv6 both ways: the kernel sends 8 datagrams of 1,000 bytes to
 * lwIP's global address, and each comes back from it unchanged. */
static void test_udp_echo(void **state)
{
	(void)state;
	if (up(0))
		skip();
	struct udp_echo u = {0};
	weft_addr_t at = {.family = WEFT_AF_INET6, .port = PORT + 2};
	memcpy(at.ip6, g.l.s6_addr, 16);
	assert_int_equal(weft_udp_bind(&u.s, &at), 0);
	weft_fiber_t f = wt_spawn(udp_echo_main, &u);

	int s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	struct timeval tv = {LONG_S, 0};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	struct sockaddr_in6 to = {
		.sin6_family = AF_INET6, .sin6_port = htons(PORT + 2), .sin6_addr = g.l};
	int back = 0, wrong = 0, from_other = 0;
	static uint8_t in[1500];
	for (int i = 0; i < 8; i++) {
		const uint8_t *out = g.data[0] + (size_t)i * 1000;
		ssize_t r;
		while ((r = sendto(s, out, 1000, 0, (struct sockaddr *)&to, sizeof to)) < 0 &&
		       errno == EINTR)
			;
		if (r != 1000)
			break;
		struct sockaddr_in6 from;
		socklen_t flen = sizeof from;
		while ((r = recvfrom(s, in, sizeof in, 0, (struct sockaddr *)&from, &flen)) < 0 &&
		       errno == EINTR)
			flen = sizeof from;
		if (r < 0)
			break;
		back++;
		wrong += r != 1000 || memcmp(in, out, 1000);
		from_other += memcmp(&from.sin6_addr, &g.l, 16) || from.sin6_port != to.sin6_port;
	}
	close(s);
	wt_join(f);
	assert_int_equal(back, 8);
	assert_int_equal(wrong, 0);
	assert_int_equal(from_other, 0);
	assert_int_equal(u.n, 8);
	assert_true(same6(&u.from, &g.k));
	assert_int_equal(weft_sock_close(u.s), 0);
	down();
}

#define T(f) cmocka_unit_test_teardown(f, net_down)
#else
static void test_kernel_client_lwip_server(void **state)
{
	(void)state;
	print_message("needs Linux's TAP devices and the kernel's IPv6 as the peer\n");
	skip();
}

static void test_lwip_client_kernel_server(void **state)
{
	(void)state;
	print_message("needs Linux's TAP devices and the kernel's IPv6 as the peer\n");
	skip();
}

static void test_udp_echo(void **state)
{
	(void)state;
	print_message("needs Linux's TAP devices and the kernel's IPv6 as the peer\n");
	skip();
}

#define T(f) cmocka_unit_test(f)
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ip6_refused),
		cmocka_unit_test(test_other_values_refused),
		T(test_kernel_client_lwip_server),
		T(test_lwip_client_kernel_server),
		T(test_udp_echo),
	};
	return WT_MAIN("ipv6-tap", tests, wt_start, wt_stop);
}
