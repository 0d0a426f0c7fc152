/* SPDX-License-Identifier: MIT */
/* lwIP over the Milk-V Duo's Ethernet driver (drivers/dwmac.c), on Linux:
 * the driver runs against its model (tests/dwmac_model.c, memory not
 * coherent), and the model's wire is a TAP device this suite makes, so the
 * peer is the Linux kernel's own TCP/IP, a real client. Every frame lwIP
 * sends goes through dwmac_send, the model's transmit DMA and the TAP;
 * every frame the kernel sends comes from the TAP into the model's receive
 * ring and out through dwmac_recv. The link's --wrap of shim_netdev_*
 * puts the driver between lwIP's netif (net/lwip_netif.c) and the TAP the
 * Linux shim opened; the TAP's descriptor stays the interface's I/O
 * source. TCP and UDP echo, lwIP's side in fibers, the kernel's through
 * its sockets; a TCP transfer while the receive ring is made full, the
 * transmit ring is made full and the model's wire loses frames (the
 * wrappers cause each, deterministically, by count); HTTP with curl as
 * the client; and a second driver instance on the model's wire in the
 * kernel's place, relaying to the TAP (relay mode). It needs
 * /dev/net/tun and CAP_NET_ADMIN, and skips without them. Linux only. */
#include <string.h>

#include "testutil.h"
#if WT_LINUX
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dwmac.h"
#include "dwmac_model.h"
#include "http/request.h"
#include "shim.h"
#include "weft_net.h"

#define BASE 0x04070000u
#define IRQ 31
#define BASE_B 0x04080000u /* relay mode's second device */
#define IRQ_B 32
#define HOST_IP "10.213.27.1"
#define WEFT_IP_ "10.213.27.2"
#define PORT 7077
#define LONG_S 10

/* ---- The driver between lwIP and the TAP ------------------------------------ */
/* Frames the suite adds itself (to fill a ring), never lwIP's or the
 * kernel's: IEEE 802's local experimental EtherType. They are dropped
 * before the TAP and before lwIP. */
#define FILLER_TYPE 0x88b5

static struct {
	struct shim_netdev *tap;
	struct dwmac *d;  /* lwIP's device */
	struct dm_dev *m; /* its model */
	/* Relay mode: a second driver instance, b, the kernel's stand-in on
	 * the model's wire: what a sends arrives in b's ring and goes on to
	 * the TAP; what the kernel sends, b sends to a. */
	int relay;
	struct dwmac *b;
	struct dm_dev *mb;
	char name[32];
	uint8_t mac[6];
	/* Trouble: every rx_squeeze-th TCP segment with data from the kernel
	 * finds a's receive ring full (filled with filler frames first);
	 * every tx_squeeze-th frame lwIP sends finds a's transmit ring full
	 * (its DMA held while fillers fill it, then let go); every
	 * wire_loss-th frame a sends is lost on the model's wire. */
	unsigned rx_squeeze, tx_squeeze, wire_loss;
	/* Under the lwIP lock (the wrappers are called under it) or the shim
	 * lock (the wire): counts the tests check. */
	unsigned long rx_tcp_data, rx_squeezed, rx_lost_real;
	unsigned long tx_sends, tx_squeezed, tx_refused_real;
	unsigned long real_sent, real_on_wire, fillers_dropped, relayed_in, relayed_out;
	atomic_long to_tap, to_tap_failed, from_tap;
	/* The drivers' counters as they were closed (weft_net_fini): final,
	 * nothing moves any more. */
	int closed;
	struct dwmac_stats final_a, final_b;
} g;

int __real_shim_netdev_open(const char *spec, struct shim_netdev **out,
			    struct shim_netdev_info *info);
int __real_shim_netdev_recv(struct shim_netdev *d, void *buf, size_t cap);
int __real_shim_netdev_send(struct shim_netdev *d, const struct shim_iov *iov, int n);
void __real_shim_netdev_close(struct shim_netdev *d);

static int is_filler(const unsigned char *f, size_t len)
{
	return len >= 14 && f[12] == (FILLER_TYPE >> 8) && f[13] == (FILLER_TYPE & 0xff);
}

/* An IPv4 TCP segment that carries data. */
static int is_tcp_data(const unsigned char *f, size_t len)
{
	if (len < 14 + 20 + 20 || f[12] != 0x08 || f[13] != 0x00 || f[14 + 9] != 6)
		return 0;
	size_t ihl = (size_t)(f[14] & 15) * 4;
	size_t tot = (size_t)f[16] << 8 | f[17];
	if (14 + ihl + 20 > len)
		return 0;
	size_t thl = (size_t)(f[14 + ihl + 12] >> 4) * 4;
	return tot > ihl + thl;
}

/* A filler frame for the device at mac (60 bytes, unicast to it). */
static void filler(unsigned char f[60], const uint8_t mac[6])
{
	memset(f, 0, 60);
	memcpy(f, mac, 6);
	memcpy(f + 6, (const uint8_t[6]){0x02, 0, 0, 0, 0, 0xfe}, 6);
	f[12] = FILLER_TYPE >> 8;
	f[13] = FILLER_TYPE & 0xff;
}

/* The model's wire, a's side: a frame a sent, to the kernel. Under the
 * shim lock. */
static void to_tap(void *arg, const void *frame, size_t len)
{
	(void)arg;
	if (is_filler(frame, len)) {
		g.fillers_dropped++;
		return;
	}
	g.real_on_wire++;
	struct shim_iov iov = {frame, len};
	if (__real_shim_netdev_send(g.tap, &iov, 1) == 0)
		atomic_fetch_add(&g.to_tap, 1);
	else
		atomic_fetch_add(&g.to_tap_failed, 1); /* lost on the wire: TCP sends again */
}

/* Relay mode: what b received (a sent it) to the TAP. */
static void relay_out(void)
{
	unsigned char f[2048];
	for (int n = 0; n < 2 * DWMAC_RX_DESCS; n++) {
		int k = dwmac_recv(g.b, f, sizeof f);
		if (k == -EAGAIN)
			return;
		if (k < 0)
			continue;
		g.relayed_out++;
		to_tap(NULL, f, (size_t)k);
	}
}

/* The kernel's address on the TAP (relay mode: b answers to it). */
static int tap_mac(const char *name, uint8_t mac[6])
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		return -errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	if (strlen(name) >= sizeof ifr.ifr_name) {
		close(s);
		return -EINVAL;
	}
	memcpy(ifr.ifr_name, name, strlen(name) + 1);
	int r = ioctl(s, SIOCGIFHWADDR, &ifr) ? -errno : 0;
	close(s);
	if (!r)
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	return r;
}

int __wrap_shim_netdev_open(const char *spec, struct shim_netdev **out,
			    struct shim_netdev_info *info)
{
	int e = __real_shim_netdev_open(spec, out, info);
	if (e)
		return e;
	g.tap = *out;
	snprintf(g.name, sizeof g.name, "%s", info->name);
	memcpy(g.mac, info->mac, 6); /* the address the kernel's ARP learns */
	g.m = dm_dev_new(BASE, IRQ, 0);
	if (!g.m) {
		__real_shim_netdev_close(g.tap);
		return -ENOMEM;
	}
	dm_set_link(g.m, 1, 100, 1);
	dm_wire_loss(g.m, g.wire_loss);
	int src;
	if (g.relay) {
		struct dwmac_config cb = {.base = BASE_B, .irq = IRQ_B};
		g.mb = dm_dev_new(BASE_B, IRQ_B, 1);
		if (!g.mb || tap_mac(g.name, cb.mac) || dwmac_open(&cb, &g.b, &src)) {
			__real_shim_netdev_close(g.tap);
			return -EIO;
		}
		dm_set_link(g.mb, 1, 100, 1);
		dm_connect(g.m, g.mb);
	} else {
		dm_wire(g.m, to_tap, NULL);
	}
	struct dwmac_config cfg = {.base = BASE, .irq = IRQ};
	memcpy(cfg.mac, g.mac, 6);
	e = dwmac_open(&cfg, &g.d, &src);
	if (e) {
		if (g.b)
			dwmac_close(g.b);
		__real_shim_netdev_close(g.tap);
		return e;
	}
	if (info->mtu > DWMAC_MTU)
		info->mtu = DWMAC_MTU;
	return 0;
}

/* A frame from the kernel into a's receive ring: through b and the
 * model's wire in relay mode, else straight onto a's wire; first filling
 * the ring when this is the segment to lose so. */
static void from_kernel(const unsigned char *f, size_t k)
{
	if (g.rx_squeeze && is_tcp_data(f, k) && ++g.rx_tcp_data % g.rx_squeeze == 0) {
		unsigned char x[60];
		filler(x, g.mac);
		for (int i = 0; i <= DWMAC_RX_DESCS && dm_rx_frame(g.m, x, sizeof x) == 0; i++)
			;
		g.rx_squeezed++;
	}
	if (g.relay) {
		struct shim_iov iov = {f, k};
		if (dwmac_send(g.b, &iov, 1) == 0)
			g.relayed_in++;
		return;
	}
	if (dm_rx_frame(g.m, f, k) && g.rx_squeeze && is_tcp_data(f, k))
		g.rx_lost_real++; /* the ring was full: the kernel sends it again */
}

/* A frame through the driver: one waiting in its ring, or else the next
 * the kernel sent, put on the wire into the device and taken out of it.
 * -EAGAIN when both are empty (the TAP's descriptor then says when).
 * Fillers are dropped here. */
int __wrap_shim_netdev_recv(struct shim_netdev *d, void *buf, size_t cap)
{
	(void)d;
	if (g.relay)
		relay_out();
	for (int n = 0; n < 64; n++) {
		int r = dwmac_recv(g.d, buf, cap);
		if (r >= 0 && is_filler(buf, (size_t)r))
			continue;
		if (r != -EAGAIN)
			return r;
		unsigned char f[2048];
		int k = __real_shim_netdev_recv(g.tap, f, sizeof f);
		if (k < 0)
			return k;
		atomic_fetch_add(&g.from_tap, 1);
		from_kernel(f, (size_t)k);
	}
	return -EAGAIN;
}

int __wrap_shim_netdev_send(struct shim_netdev *d, const struct shim_iov *iov, int n)
{
	(void)d;
	if (g.tx_squeeze && ++g.tx_sends % g.tx_squeeze == 0) {
		/* The transmit DMA held (no carrier, say) while fillers fill
		 * the ring: this frame is refused, and lwIP's netif holds it
		 * back until the ring has room, which it has once the DMA goes
		 * on. */
		unsigned char x[60];
		filler(x, g.mac);
		struct shim_iov fi = {x, sizeof x};
		dm_tx_hold(g.m, 1);
		for (int i = 0; i <= DWMAC_TX_DESCS && dwmac_send(g.d, &fi, 1) == 0; i++)
			;
		int r = dwmac_send(g.d, iov, n);
		dm_tx_hold(g.m, 0);
		g.tx_squeezed++;
		if (r == -EAGAIN) {
			g.tx_refused_real++;
			return r;
		}
		if (r == 0)
			g.real_sent++;
		return r;
	}
	int r = dwmac_send(g.d, iov, n);
	if (r == 0)
		g.real_sent++;
	if (g.relay)
		relay_out();
	return r;
}

void __wrap_shim_netdev_close(struct shim_netdev *d)
{
	(void)d;
	dwmac_stats(g.d, &g.final_a);
	dwmac_close(g.d);
	if (g.b) {
		dwmac_stats(g.b, &g.final_b);
		dwmac_close(g.b);
	}
	g.closed = 1;
	__real_shim_netdev_close(g.tap);
}

/* ---- Helpers ------------------------------------------------------------------ */

/* The kernel's side of a socket, from this thread, again after EINTR. Under
 * WEFT_IO=uring this thread cancels the device's poll at weft_net_fini, and
 * a socket call with a timeout (SO_RCVTIMEO) in the next test then fails
 * once with EINTR, no signal involved (docs/net/kernel-uring.md, "Your own
 * threads and EINTR"). On a connected socket, TCP or UDP, read and write
 * are recv and send. */
static ssize_t k_read(int fd, void *buf, size_t n)
{
	ssize_t r;
	while ((r = read(fd, buf, n)) < 0 && errno == EINTR)
		;
	return r;
}

static ssize_t k_write(int fd, const void *buf, size_t n)
{
	ssize_t r;
	while ((r = write(fd, buf, n)) < 0 && errno == EINTR)
		;
	return r;
}

/* The kernel's side of the TAP: HOST_IP/24, up. */
static void host_side(void)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(s >= 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	assert_true(strlen(g.name) < sizeof ifr.ifr_name);
	memcpy(ifr.ifr_name, g.name, strlen(g.name) + 1);
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	sin->sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, HOST_IP, &sin->sin_addr), 1);
	assert_int_equal(ioctl(s, SIOCSIFADDR, &ifr), 0);
	assert_int_equal(inet_pton(AF_INET, "255.255.255.0", &sin->sin_addr), 1);
	assert_int_equal(ioctl(s, SIOCSIFNETMASK, &ifr), 0);
	assert_int_equal(ioctl(s, SIOCGIFFLAGS, &ifr), 0);
	ifr.ifr_flags |= IFF_UP;
	assert_int_equal(ioctl(s, SIOCSIFFLAGS, &ifr), 0);
	close(s);
}

struct echo {
	weft_sock_t *ls;
	long bytes, r_accept;
};

/* lwIP's side: accept one connection and send back all it reads. */
static void *echo_server(void *arg)
{
	struct echo *e = arg;
	weft_sock_t *s;
	weft_addr_t peer;
	e->r_accept = weft_tcp_accept(e->ls, &s, &peer, weft_deadline_in(LONG_S * 1000000000LL));
	if (e->r_accept)
		return NULL;
	char buf[4096];
	for (;;) {
		ssize_t n =
			weft_sock_read(s, buf, sizeof buf, weft_deadline_in(LONG_S * 1000000000LL));
		if (n <= 0)
			break;
		if (weft_sock_write(s, buf, (size_t)n, weft_deadline_in(LONG_S * 1000000000LL)) !=
		    n)
			break;
		e->bytes += n;
	}
	weft_sock_close(s);
	return NULL;
}

static int up(void)
{
	const weft_net_config_t cfg = {.stack = "lwip", .netif = "tap:wdm%d", .ip = WEFT_IP_ "/24"};
	if (wt_net_init_tap(&cfg) < 0)
		return -1;
	host_side();
	return 0;
}

/* lwIP stopped and the device closed: the drivers' final counters. */
static void down(struct dwmac_stats *a, struct dwmac_stats *b)
{
	assert_int_equal(weft_net_fini(), 0);
	assert_true(g.closed);
	*a = g.final_a;
	if (b)
		*b = g.final_b;
}

static int setup(void **state)
{
	(void)state;
	if (dm_init())
		return -1;
	memset(&g, 0, sizeof g);
	return wt_start(state);
}

static int teardown(void **state)
{
	int r = wt_stop(state);
	struct dm_cache_counts c;
	dm_cache_counts(&c);
	if (c.misuse || dm_fini())
		return -1; /* a cache call outside DMA memory, or pages left */
	return r;
}

/* ---- Tests -------------------------------------------------------------------- */

/* The kernel connects to lwIP's echo server through the driver and the
 * model, and 256 KiB come back as sent, in 1 KiB rounds. */
static void test_tcp_echo_with_kernel_client(void **state)
{
	(void)state;
	if (up())
		skip();
	struct echo e = {0};
	weft_addr_t any = {.port = PORT};
	assert_int_equal(weft_tcp_listen(&e.ls, &any, 4), 0);
	weft_fiber_t f = wt_spawn(echo_server, &e);

	int c = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(c >= 0);
	struct timeval tv = {.tv_sec = LONG_S};
	assert_int_equal(setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
	assert_int_equal(setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), 0);
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(PORT)};
	assert_int_equal(inet_pton(AF_INET, WEFT_IP_, &to.sin_addr), 1);
	assert_int_equal(connect(c, (struct sockaddr *)&to, sizeof to), 0);
	enum { ROUNDS = 256, CHUNK = 1024 };
	unsigned char out[CHUNK], in[CHUNK];
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < CHUNK; i++)
			out[i] = (unsigned char)(r * 31 + i);
		assert_int_equal(k_write(c, out, CHUNK), CHUNK);
		size_t got = 0;
		while (got < CHUNK) {
			ssize_t n = k_read(c, in + got, CHUNK - got);
			if (n <= 0)
				fail_msg("round %d: read %zd (%s) after %zu bytes", r, n,
					 strerror(errno), got);
			got += (size_t)n;
		}
		assert_memory_equal(in, out, CHUNK);
	}
	close(c);
	wt_join(f);
	assert_int_equal(e.r_accept, 0);
	assert_int_equal(e.bytes, ROUNDS * CHUNK);
	assert_int_equal(weft_sock_close(e.ls), 0);

	struct dwmac_stats st;
	down(&st, NULL);
	print_message("dwmac: %llu frames in, %llu out, %llu interrupts; TAP: %ld in, %ld out, "
		      "%ld refused\n",
		      (unsigned long long)st.rx_frames, (unsigned long long)st.tx_frames,
		      (unsigned long long)st.irqs, atomic_load(&g.from_tap), atomic_load(&g.to_tap),
		      atomic_load(&g.to_tap_failed));
	/* 256 KiB each way in frames of at most 1460 bytes of payload. */
	assert_true(st.rx_frames >= ROUNDS);
	assert_true(st.tx_frames >= ROUNDS);
	assert_int_equal(st.rx_errors, 0);
	struct dm_counters mc;
	dm_counters(g.m, &mc);
	assert_int_equal(mc.bus_errors, 0);
}

struct uecho {
	weft_sock_t *s;
	int n;
	long echoed;
};

/* lwIP's side: n datagrams, each sent back to where it came from. */
static void *udp_echo(void *arg)
{
	struct uecho *u = arg;
	for (int i = 0; i < u->n; i++) {
		char buf[2048];
		weft_addr_t from;
		ssize_t k = weft_udp_recvfrom(u->s, buf, sizeof buf, &from,
					      weft_deadline_in(LONG_S * 1000000000LL));
		if (k < 0)
			break;
		if (weft_udp_sendto(u->s, buf, (size_t)k, &from,
				    weft_deadline_in(LONG_S * 1000000000LL)) == k)
			u->echoed++;
	}
	return NULL;
}

/* The kernel sends datagrams of 1 to 1472 bytes to lwIP's UDP echo through
 * the driver, one at a time, and each comes back as sent. */
static void test_udp_echo_with_kernel_client(void **state)
{
	(void)state;
	if (up())
		skip();
	enum { N = 100 };
	struct uecho u = {.n = N};
	weft_addr_t any = {.port = PORT + 1};
	assert_int_equal(weft_udp_bind(&u.s, &any), 0);
	weft_fiber_t f = wt_spawn(udp_echo, &u);
	int c = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(c >= 0);
	struct timeval tv = {.tv_sec = LONG_S};
	assert_int_equal(setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(PORT + 1)};
	assert_int_equal(inet_pton(AF_INET, WEFT_IP_, &to.sin_addr), 1);
	assert_int_equal(connect(c, (struct sockaddr *)&to, sizeof to), 0);
	unsigned char out[1472], in[2048];
	for (int i = 0; i < N; i++) {
		size_t len = 1 + (size_t)i * 1471 / (N - 1);
		for (size_t k = 0; k < len; k++)
			out[k] = (unsigned char)(i + k * 3);
		assert_int_equal(k_write(c, out, len), (ssize_t)len);
		ssize_t got = k_read(c, in, sizeof in);
		if (got != (ssize_t)len)
			fail_msg("datagram %d: %zd bytes back of %zu (%s)", i, got, len,
				 got < 0 ? strerror(errno) : "short");
		assert_memory_equal(in, out, len);
	}
	close(c);
	wt_join(f);
	assert_int_equal(u.echoed, N);
	assert_int_equal(weft_sock_close(u.s), 0);
	struct dwmac_stats st;
	down(&st, NULL);
	assert_true(st.rx_frames >= N);
	assert_true(st.tx_frames >= N);
}

/* ---- A transfer through trouble ---------------------------------------------- */

static unsigned char pat(size_t i, unsigned seed)
{
	return (unsigned char)(i * 7 + (i >> 9) * 13 + seed);
}

struct xfer {
	weft_sock_t *ls;
	size_t n;
	long r_accept, r_write;
	size_t got;
	long bad_at; /* the first byte read that was not what was sent; -1 none */
};

/* lwIP's side: read n bytes and check them, then send n bytes of its own. */
static void *sink_source(void *arg)
{
	struct xfer *x = arg;
	x->bad_at = -1;
	weft_sock_t *s;
	weft_addr_t peer;
	x->r_accept = weft_tcp_accept(x->ls, &s, &peer, weft_deadline_in(LONG_S * 1000000000LL));
	if (x->r_accept)
		return NULL;
	unsigned char buf[4096];
	while (x->got < x->n) {
		size_t want = x->n - x->got < sizeof buf ? x->n - x->got : sizeof buf;
		ssize_t k = weft_sock_read(s, buf, want, weft_deadline_in(LONG_S * 1000000000LL));
		if (k <= 0)
			break;
		for (ssize_t i = 0; i < k; i++)
			if (buf[i] != pat(x->got + (size_t)i, 1) && x->bad_at < 0)
				x->bad_at = (long)(x->got + (size_t)i);
		x->got += (size_t)k;
	}
	for (size_t at = 0; x->got == x->n && at < x->n;) {
		size_t k = x->n - at < sizeof buf ? x->n - at : sizeof buf;
		for (size_t i = 0; i < k; i++)
			buf[i] = pat(at + i, 2);
		ssize_t w = weft_sock_write(s, buf, k, weft_deadline_in(LONG_S * 1000000000LL));
		if (w != (ssize_t)k) {
			x->r_write = (long)w;
			break;
		}
		at += k;
	}
	weft_sock_close(s);
	return NULL;
}

/* The kernel sends n bytes to lwIP through the driver, then reads n back,
 * every byte checked on both sides. */
static void transfer(size_t n)
{
	struct xfer x = {.n = n};
	weft_addr_t any = {.port = PORT + 2};
	assert_int_equal(weft_tcp_listen(&x.ls, &any, 4), 0);
	weft_fiber_t f = wt_spawn(sink_source, &x);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(c >= 0);
	struct timeval tv = {.tv_sec = LONG_S};
	assert_int_equal(setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
	assert_int_equal(setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), 0);
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(PORT + 2)};
	assert_int_equal(inet_pton(AF_INET, WEFT_IP_, &to.sin_addr), 1);
	assert_int_equal(connect(c, (struct sockaddr *)&to, sizeof to), 0);
	unsigned char buf[8192];
	for (size_t at = 0; at < n;) {
		size_t k = n - at < sizeof buf ? n - at : sizeof buf;
		for (size_t i = 0; i < k; i++)
			buf[i] = pat(at + i, 1);
		ssize_t w = k_write(c, buf, k);
		if (w <= 0)
			fail_msg("write %zd (%s) after %zu of %zu bytes", w, strerror(errno), at,
				 n);
		at += (size_t)w;
	}
	size_t got = 0;
	for (;;) {
		ssize_t k = k_read(c, buf, sizeof buf);
		if (k == 0)
			break;
		if (k < 0)
			fail_msg("read %zd (%s) after %zu of %zu bytes back", k, strerror(errno),
				 got, n);
		for (ssize_t i = 0; i < k; i++)
			if (buf[i] != pat(got + (size_t)i, 2))
				fail_msg("byte %zu back: 0x%02x, sent 0x%02x", got + (size_t)i,
					 buf[i], pat(got + (size_t)i, 2));
		got += (size_t)k;
	}
	close(c);
	wt_join(f);
	assert_int_equal(x.r_accept, 0);
	assert_int_equal(x.got, n);
	assert_int_equal(x.bad_at, -1);
	assert_int_equal(x.r_write, 0);
	assert_int_equal(got, n);
	assert_int_equal(weft_sock_close(x.ls), 0);
}

/* 256 KiB each way while things go wrong under lwIP's TCP: every 20th
 * segment with data the kernel sends finds the receive ring full (the
 * device loses it and counts it missed), every 40th frame lwIP sends finds
 * the transmit ring full (refused; lwIP's netif holds it back until there
 * is room), and every 31st frame the device sends is lost on the wire.
 * TCP delivers every byte, resending what was lost; the driver's counters
 * and the model's show that the losses happened. */
static void test_tcp_through_loss_and_full_rings(void **state)
{
	(void)state;
	g.rx_squeeze = 20;
	g.tx_squeeze = 40;
	g.wire_loss = 31;
	if (up())
		skip();
	transfer(256 * 1024);

	struct dwmac_stats st;
	down(&st, NULL);
	struct dm_counters mc;
	dm_counters(g.m, &mc);
	unsigned long real_lost = g.real_sent - g.real_on_wire;
	print_message("dwmac: %llu frames in, %llu out; receive ring full %lu times: %llu "
		      "missed (%lu of them the kernel's data); transmit ring full %lu times "
		      "(%llu sends refused, %lu of them lwIP's); %lu frames lost on the wire "
		      "(%lu of them lwIP's)\n",
		      (unsigned long long)st.rx_frames, (unsigned long long)st.tx_frames,
		      g.rx_squeezed, (unsigned long long)st.rx_missed, g.rx_lost_real,
		      g.tx_squeezed, (unsigned long long)st.tx_full, g.tx_refused_real, mc.tx_lost,
		      real_lost);
	/* The receive ring was full: the device lost frames, counted missed
	 * by it and by the driver, the kernel's TCP segments among them. */
	assert_true(g.rx_squeezed > 0);
	assert_true(g.rx_lost_real > 0);
	assert_true(mc.rx_missed >= g.rx_lost_real);
	assert_true(st.rx_missed >= g.rx_lost_real);
	/* The transmit ring was full: sends refused, lwIP's among them. */
	assert_true(g.tx_squeezed > 0);
	assert_true(g.tx_refused_real > 0);
	assert_true(st.tx_full >= g.tx_refused_real);
	/* The wire lost lwIP's frames. */
	assert_true(mc.tx_lost > 0);
	assert_true(real_lost > 0);
	assert_int_equal(st.rx_errors, 0);
	assert_int_equal(st.tx_errors, 0);
	assert_int_equal(mc.bus_errors, 0);
}

/* ---- Two driver instances ------------------------------------------------------- */

/* Two instances of the driver on the model's wire: lwIP's device (a) and
 * a second one (b, its own model device) that stands in for the kernel's
 * network card, relaying between the wire and the TAP. lwIP has one
 * device interface per process (net/lwip_netif.c: "one device at a
 * time"), so lwIP cannot be on both ends; the kernel's TCP is on the
 * other. 256 KiB each way, every frame through both drivers, both rings
 * of each and the non-coherent memory twice. */
static void test_two_devices_relayed(void **state)
{
	(void)state;
	g.relay = 1;
	if (up())
		skip();
	transfer(256 * 1024);
	struct dwmac_stats sa, sb;
	down(&sa, &sb);
	struct dm_counters ma, mb;
	dm_counters(g.m, &ma);
	dm_counters(g.mb, &mb);
	print_message("a: %llu frames in, %llu out; b: %llu in (to the TAP: %lu), %llu out "
		      "(from the TAP: %lu)\n",
		      (unsigned long long)sa.rx_frames, (unsigned long long)sa.tx_frames,
		      (unsigned long long)sb.rx_frames, g.relayed_out,
		      (unsigned long long)sb.tx_frames, g.relayed_in);
	/* Every frame lwIP sent went a -> wire -> b -> TAP; every frame the
	 * kernel sent, TAP -> b -> wire -> a. */
	assert_true(sa.tx_frames >= 2 * 256 * 1024 / 1460 / 2);
	assert_int_equal(ma.tx_frames, sa.tx_frames);
	assert_int_equal(mb.rx_frames + mb.rx_filtered + mb.rx_missed, ma.tx_frames);
	assert_int_equal(mb.rx_missed, 0);
	assert_int_equal(sb.rx_frames, g.relayed_out);
	assert_int_equal(sb.tx_frames, g.relayed_in);
	assert_int_equal(mb.tx_frames, sb.tx_frames);
	assert_int_equal(ma.rx_frames + ma.rx_filtered + ma.rx_missed, mb.tx_frames);
	assert_true(sa.rx_frames >= 2 * 256 * 1024 / 1460 / 2);
	assert_int_equal(sa.rx_errors + sb.rx_errors, 0);
	assert_int_equal(ma.bus_errors + mb.bus_errors, 0);
}

/* ---- HTTP with curl ------------------------------------------------------------ */

#define BIG_PATH "/big"
#define BIG_LEN (384 * 1024 + 77)

static unsigned char big(size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u;
	return (unsigned char)(x >> 24 ^ x >> 11);
}

struct http {
	weft_sock_t *ls;
	int requests, conns, status; /* status: what the parser refused, or 0 */
	long r_accept;
};

/* One request on s: its head read and parsed with httpd's parser
 * (examples/http/request.c), then the answer: the BIG_LEN bytes of big()
 * for BIG_PATH, 404 for anything else. 1 served (keep the connection), 0
 * the peer closed or wants to, -1 an error. */
static int http_one(struct http *h, weft_sock_t *s, char *buf, size_t cap, size_t *len)
{
	size_t scan = 0, end;
	while (!(end = http_head_end(buf, *len, &scan))) {
		if (*len == cap)
			return -1;
		ssize_t k = weft_sock_read(s, buf + *len, cap - *len,
					   weft_deadline_in(LONG_S * 1000000000LL));
		if (k <= 0)
			return k == 0 && *len == 0 ? 0 : -1;
		*len += (size_t)k;
	}
	struct http_req r;
	int st = http_parse_head(buf, end, &r);
	if (st) {
		h->status = st;
		return -1;
	}
	int found = r.target_len == strlen(BIG_PATH) && !memcmp(r.target, BIG_PATH, r.target_len);
	char head[160];
	int n = snprintf(head, sizeof head,
			 "HTTP/1.1 %s\r\nContent-Type: application/octet-stream\r\n"
			 "Content-Length: %d\r\n\r\n",
			 found ? "200 OK" : "404 Not Found", found ? BIG_LEN : 0);
	if (weft_sock_write(s, head, (size_t)n, weft_deadline_in(LONG_S * 1000000000LL)) != n)
		return -1;
	unsigned char b[4096];
	for (size_t at = 0; found && at < BIG_LEN;) {
		size_t k = BIG_LEN - at < sizeof b ? BIG_LEN - at : sizeof b;
		for (size_t i = 0; i < k; i++)
			b[i] = big(at + i);
		if (weft_sock_write(s, b, k, weft_deadline_in(LONG_S * 1000000000LL)) != (ssize_t)k)
			return -1;
		at += k;
	}
	h->requests++;
	memmove(buf, buf + end, *len - end);
	*len -= end;
	return r.close ? 0 : 1;
}

/* lwIP's side: connections, one at a time, until two requests are served. */
static void *http_server(void *arg)
{
	struct http *h = arg;
	static char buf[8192];
	while (h->requests < 2 && h->conns < 4) {
		weft_sock_t *s;
		weft_addr_t peer;
		h->r_accept = weft_tcp_accept(h->ls, &s, &peer,
					      weft_deadline_in(3 * LONG_S * 1000000000LL));
		if (h->r_accept)
			return NULL;
		h->conns++;
		size_t len = 0;
		while (http_one(h, s, buf, sizeof buf, &len) == 1)
			;
		weft_sock_close(s);
	}
	return NULL;
}

/* Run argv (PATH searched) and wait for it: its exit status, or -1. Its
 * standard output goes to /dev/null if quiet. */
static int run(int quiet, char *const argv[])
{
	pid_t pid;
	posix_spawn_file_actions_t fa;
	if (posix_spawn_file_actions_init(&fa))
		return -1;
	if (quiet)
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e)
		return -1;
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A file's bytes against big(): -1 all there and equal, else the first
 * offset that differs (or the length, if it is short or long). */
static long check_big(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	long at = 0, bad = -1;
	int c;
	while ((c = getc(f)) != EOF) {
		if (bad < 0 && (at >= BIG_LEN || (unsigned char)c != big((size_t)at)))
			bad = at;
		at++;
	}
	fclose(f);
	return bad >= 0 ? bad : at == BIG_LEN ? -1 : at;
}

/* curl, the kernel's TCP under it, fetches 384 KiB twice on one
 * connection from an HTTP server on lwIP, through the driver and its
 * model; both bodies arrive byte for byte. Skips without curl. */
static void test_http_with_curl(void **state)
{
	(void)state;
	if (run(1, (char *const[]){"curl", "--version", NULL}) != 0) {
		print_message("no curl on this machine: nothing to be the real client\n");
		skip();
	}
	if (up())
		skip();
	struct http h = {0};
	weft_addr_t any = {.port = PORT + 3};
	assert_int_equal(weft_tcp_listen(&h.ls, &any, 4), 0);
	weft_fiber_t f = wt_spawn(http_server, &h);
	char dir[] = "/tmp/weft-dwmac-httpXXXXXX";
	assert_non_null(mkdtemp(dir));
	char out1[64], out2[64], url[64];
	snprintf(out1, sizeof out1, "%s/1", dir);
	snprintf(out2, sizeof out2, "%s/2", dir);
	snprintf(url, sizeof url, "http://%s:%d%s", WEFT_IP_, PORT + 3, BIG_PATH);
	int rc = run(0, (char *const[]){"curl", "-sS", "--fail", "--noproxy", "*", "--max-time",
					"30", "-o", out1, url, "-o", out2, url, NULL});
	long bad1 = check_big(out1), bad2 = check_big(out2);
	unlink(out1);
	unlink(out2);
	rmdir(dir);
	wt_join(f);
	assert_int_equal(rc, 0);
	assert_int_equal(bad1, -1);
	assert_int_equal(bad2, -1);
	assert_int_equal(h.r_accept, 0);
	assert_int_equal(h.status, 0);
	assert_int_equal(h.requests, 2);
	assert_int_equal(weft_sock_close(h.ls), 0);
	struct dwmac_stats st;
	down(&st, NULL);
	print_message("dwmac: %d requests on %d connection(s), %llu frames in, %llu out\n",
		      h.requests, h.conns, (unsigned long long)st.rx_frames,
		      (unsigned long long)st.tx_frames);
	/* Two bodies of BIG_LEN in segments of at most 1460 bytes. */
	assert_true(st.tx_frames >= 2 * BIG_LEN / 1460);
	assert_int_equal(st.rx_errors, 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#else
#define T(f)               \
	{                  \
		.name = #f \
	}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_tcp_echo_with_kernel_client),
		T(test_udp_echo_with_kernel_client),
		T(test_tcp_through_loss_and_full_rings),
		T(test_http_with_curl),
		T(test_two_devices_relayed),
	};
#if WT_LINUX
	return WT_MAIN("dwmac-lwip", tests, NULL, NULL);
#else
	return wt_skip_group("dwmac-lwip", tests, sizeof tests / sizeof tests[0],
			     "lwIP over the driver's model needs Linux's TAP");
#endif
}
