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
 * its sockets. It needs /dev/net/tun and CAP_NET_ADMIN, and skips without them.
 * Linux only. */
#include <string.h>

#include "testutil.h"
#if WT_LINUX
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "dwmac.h"
#include "dwmac_model.h"
#include "shim.h"
#include "weft_net.h"

#define BASE 0x04070000u
#define IRQ 31
#define HOST_IP "10.213.27.1"
#define WEFT_IP_ "10.213.27.2"
#define PORT 7077
#define LONG_S 10

/* ---- The driver between lwIP and the TAP ------------------------------------ */
static struct {
	struct shim_netdev *tap;
	struct dwmac *d;
	struct dm_dev *m;
	char name[32];
	atomic_long to_tap, to_tap_failed, from_tap;
} g;

int __real_shim_netdev_open(const char *spec, struct shim_netdev **out,
			    struct shim_netdev_info *info);
int __real_shim_netdev_recv(struct shim_netdev *d, void *buf, size_t cap);
int __real_shim_netdev_send(struct shim_netdev *d, const struct shim_iov *iov, int n);
void __real_shim_netdev_close(struct shim_netdev *d);

/* The model's wire: a frame the device sent, to the kernel. Under the
 * shim lock. */
static void to_tap(void *arg, const void *frame, size_t len)
{
	(void)arg;
	struct shim_iov iov = {frame, len};
	if (__real_shim_netdev_send(g.tap, &iov, 1) == 0)
		atomic_fetch_add(&g.to_tap, 1);
	else
		atomic_fetch_add(&g.to_tap_failed, 1); /* lost on the wire: TCP sends again */
}

int __wrap_shim_netdev_open(const char *spec, struct shim_netdev **out,
			    struct shim_netdev_info *info)
{
	int e = __real_shim_netdev_open(spec, out, info);
	if (e)
		return e;
	g.tap = *out;
	snprintf(g.name, sizeof g.name, "%s", info->name);
	g.m = dm_dev_new(BASE, IRQ, 0);
	if (!g.m) {
		__real_shim_netdev_close(g.tap);
		return -ENOMEM;
	}
	dm_set_link(g.m, 1, 100, 1);
	dm_wire(g.m, to_tap, NULL);
	struct dwmac_config cfg = {.base = BASE, .irq = IRQ};
	memcpy(cfg.mac, info->mac, 6); /* the address the kernel's ARP learns */
	int src;
	e = dwmac_open(&cfg, &g.d, &src);
	if (e) {
		__real_shim_netdev_close(g.tap);
		return e;
	}
	if (info->mtu > DWMAC_MTU)
		info->mtu = DWMAC_MTU;
	return 0;
}

/* A frame through the driver: one waiting in its ring, or else the next
 * the kernel sent, put on the wire into the device and taken out of it.
 * -EAGAIN when both are empty (the TAP's descriptor then says when). */
int __wrap_shim_netdev_recv(struct shim_netdev *d, void *buf, size_t cap)
{
	(void)d;
	for (int n = 0; n < 64; n++) {
		int r = dwmac_recv(g.d, buf, cap);
		if (r != -EAGAIN)
			return r;
		unsigned char f[2048];
		int k = __real_shim_netdev_recv(g.tap, f, sizeof f);
		if (k < 0)
			return k;
		atomic_fetch_add(&g.from_tap, 1);
		dm_rx_frame(g.m, f, (size_t)k); /* filtered out, or in the ring */
	}
	return -EAGAIN;
}

int __wrap_shim_netdev_send(struct shim_netdev *d, const struct shim_iov *iov, int n)
{
	(void)d;
	return dwmac_send(g.d, iov, n);
}

void __wrap_shim_netdev_close(struct shim_netdev *d)
{
	(void)d;
	dwmac_close(g.d);
	__real_shim_netdev_close(g.tap);
}

/* ---- Helpers ------------------------------------------------------------------ */

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
	int err = weft_net_init(&cfg);
	if (err == -EPERM || err == -EACCES || err == -ENODEV) {
		print_message("no TAP device here (%d): it needs /dev/net/tun and "
			      "CAP_NET_ADMIN (root, as CI runs)\n",
			      err);
		return -1;
	}
	assert_int_equal(err, 0);
	host_side();
	return 0;
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
		assert_int_equal(write(c, out, CHUNK), CHUNK);
		size_t got = 0;
		while (got < CHUNK) {
			ssize_t n = read(c, in + got, CHUNK - got);
			if (n <= 0)
				fail_msg("round %d: read %zd after %zu bytes", r, n, got);
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
	dwmac_stats(g.d, &st);
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
	assert_int_equal(weft_net_fini(), 0);
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
		assert_int_equal(send(c, out, len, 0), (ssize_t)len);
		ssize_t got = recv(c, in, sizeof in, 0);
		if (got != (ssize_t)len)
			fail_msg("datagram %d: %zd bytes back of %zu", i, got, len);
		assert_memory_equal(in, out, len);
	}
	close(c);
	wt_join(f);
	assert_int_equal(u.echoed, N);
	assert_int_equal(weft_sock_close(u.s), 0);
	struct dwmac_stats st;
	dwmac_stats(g.d, &st);
	assert_true(st.rx_frames >= N);
	assert_true(st.tx_frames >= N);
	assert_int_equal(weft_net_fini(), 0);
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
	};
#if WT_LINUX
	return WT_MAIN("dwmac-lwip", tests, NULL, NULL);
#else
	return wt_skip_group("dwmac-lwip", tests, sizeof tests / sizeof tests[0],
			     "lwIP over the driver's model needs Linux's TAP");
#endif
}
