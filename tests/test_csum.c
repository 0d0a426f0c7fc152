/* SPDX-License-Identifier: MIT */
/* The Linux packet device's checksum completion (kernel-shim/linux/csum.c):
 * a frame whose sender's kernel left the TCP or UDP checksum to the
 * hardware holds only the pseudo-header's sum in the field, and the packet
 * device must make it the checksum lwIP will verify. Each frame here is
 * built with its true checksum computed independently (pseudo-header and
 * segment from scratch), then given the partial field a sender leaves, and
 * completed. tests/net/packet_veth.sh does the same end to end, over a veth
 * peer with checksum offload on. Linux only: bare metal has no packet
 * sockets. */
#include <string.h>

#include "testutil.h"
#if WT_LINUX
#include "linux/csum.h"

enum { ETH = 14, TCP = 6, UDP = 17 };

static unsigned fold(uint64_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (unsigned)s;
}

static uint64_t sum_bytes(const uint8_t *p, size_t n)
{
	uint64_t s = 0;
	for (size_t i = 0; i < n; i++)
		s += i % 2 ? p[i] : (unsigned)p[i] << 8;
	return s;
}

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static unsigned get16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }

/* A frame: Ethernet, IPv4 or IPv6, then a TCP (20-byte header) or UDP
 * (8-byte header) segment with len bytes of payload. Returns its length;
 * *l4 and *field say where the segment and its checksum field are, and
 * *good what the checksum must be. The field is left holding the
 * pseudo-header's sum, folded, not inverted: what Linux's
 * __tcp_v4_send_check and udp4_hwcsum leave for CHECKSUM_PARTIAL. */
static size_t build(uint8_t *f, int v6, unsigned proto, size_t len, size_t *field, unsigned *good)
{
	memset(f, 0, 1600);
	size_t iph = v6 ? 40 : 20, l4h = proto == TCP ? 20 : 8, seg = l4h + len;
	uint8_t *ip = f + ETH, *l4 = ip + iph;
	put16(f + 12, v6 ? 0x86dd : 0x0800);
	if (v6) {
		ip[0] = 0x60;
		put16(ip + 4, (unsigned)seg);
		ip[6] = (uint8_t)proto;
		ip[7] = 64;
		for (int i = 0; i < 16; i++) {
			ip[8 + i] = (uint8_t)(0x20 + i);  /* source */
			ip[24 + i] = (uint8_t)(0xf0 - i); /* destination */
		}
	} else {
		ip[0] = 0x45;
		put16(ip + 2, (unsigned)(iph + seg));
		put16(ip + 6, 0x4000); /* don't fragment */
		ip[8] = 64;
		ip[9] = (uint8_t)proto;
		memcpy(ip + 12, (uint8_t[]){10, 78, 0, 1}, 4);
		memcpy(ip + 16, (uint8_t[]){10, 78, 0, 2}, 4);
	}
	put16(l4, 40000);
	put16(l4 + 2, 8080);
	if (proto == TCP) {
		l4[12] = 5 << 4;
		l4[13] = 0x18; /* PSH, ACK */
		put16(l4 + 14, 65535);
	} else {
		put16(l4 + 4, (unsigned)seg);
	}
	for (size_t i = 0; i < len; i++)
		l4[l4h + i] = (uint8_t)(i * 7 + 3);

	uint64_t pseudo = v6 ? sum_bytes(ip + 8, 32) : sum_bytes(ip + 12, 8);
	pseudo += proto + seg;
	*field = (size_t)(l4 - f) + (proto == TCP ? 16 : 6);
	unsigned c = ~fold(pseudo + sum_bytes(l4, seg)) & 0xffff;
	*good = proto == UDP && c == 0 ? 0xffff : c;
	put16(f + *field, fold(pseudo));
	return ETH + iph + seg;
}

static void check_one(int v6, unsigned proto, size_t len)
{
	uint8_t f[1600];
	size_t field;
	unsigned good;
	size_t n = build(f, v6, proto, len, &field, &good);
	assert_int_equal(shim_csum_complete(f, n, ETH), 1);
	if (get16(f + field) != good)
		print_message("IPv%d proto %u len %zu: got %#x, want %#x\n", v6 ? 6 : 4, proto, len,
			      get16(f + field), good);
	assert_int_equal(get16(f + field), good);
}

/* Every length from 0 to 1400 (odd ones end in half a word), both
 * transports, both IP versions. */
static void test_completes_tcp_and_udp(void **state)
{
	(void)state;
	for (size_t len = 0; len <= 1400; len += len < 64 ? 1 : 37) {
		check_one(0, TCP, len);
		check_one(0, UDP, len);
		check_one(1, TCP, len);
		check_one(1, UDP, len);
	}
}

/* A VLAN tag moves the network header: the offset the packet socket
 * reports (tp_net) is what counts. */
static void test_network_header_offset(void **state)
{
	(void)state;
	uint8_t f[1600], g[1604];
	size_t field;
	unsigned good;
	size_t n = build(f, 0, TCP, 100, &field, &good);
	memcpy(g, f, 12);
	put16(g + 12, 0x8100);
	put16(g + 14, 42);
	memcpy(g + 16, f + 12, n - 12);
	assert_int_equal(shim_csum_complete(g, n + 4, ETH + 4), 1);
	assert_int_equal(get16(g + field + 4), good);
}

/* What is not an unfragmented TCP or UDP packet that fits, or lies about
 * its length, is left exactly as it came. */
static void test_leaves_the_rest_alone(void **state)
{
	(void)state;
	uint8_t f[1600], before[1600];
	size_t field;
	unsigned good;
	size_t n;
	(void)good;

	n = build(f, 0, TCP, 50, &field, &good);
	put16(f + ETH + 6, 0x2000); /* more fragments */
	memcpy(before, f, n);
	assert_int_equal(shim_csum_complete(f, n, ETH), 0);
	assert_memory_equal(f, before, n);

	n = build(f, 0, TCP, 50, &field, &good);
	f[ETH + 9] = 1; /* ICMP */
	memcpy(before, f, n);
	assert_int_equal(shim_csum_complete(f, n, ETH), 0);
	assert_memory_equal(f, before, n);

	n = build(f, 0, UDP, 50, &field, &good);
	memcpy(before, f, n);
	assert_int_equal(shim_csum_complete(f, n - 1, ETH), 0); /* total > frame */
	assert_int_equal(shim_csum_complete(f, ETH + 10, ETH), 0);
	assert_int_equal(shim_csum_complete(f, n, n), 0); /* header past the end */
	f[ETH] = 0x43;                                    /* IHL below 5 */
	assert_int_equal(shim_csum_complete(f, n, ETH), 0);
	f[ETH] = 0x45;
	assert_memory_equal(f, before, n);

	n = build(f, 1, TCP, 50, &field, &good);
	put16(f + ETH + 4, 2000); /* payload length past the frame */
	memcpy(before, f, n);
	assert_int_equal(shim_csum_complete(f, n, ETH), 0);
	assert_int_equal(shim_csum_complete(f, ETH + 39, ETH), 0);
	assert_memory_equal(f, before, n);

	n = build(f, 1, TCP, 0, &field, &good);
	f[ETH + 6] = 0; /* a hop-by-hop extension header first */
	memcpy(before, f, n);
	assert_int_equal(shim_csum_complete(f, n, ETH), 0);
	assert_memory_equal(f, before, n);

	n = build(f, 0, TCP, 10, &field, &good);
	f[ETH] = 0x55; /* not IP */
	memcpy(before, f, n);
	assert_int_equal(shim_csum_complete(f, n, ETH), 0);
	assert_memory_equal(f, before, n);
}

#define CSUM_TEST(f) cmocka_unit_test(f)
#else
#define CSUM_TEST(f)       \
	{                  \
		.name = #f \
	}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		CSUM_TEST(test_completes_tcp_and_udp),
		CSUM_TEST(test_network_header_offset),
		CSUM_TEST(test_leaves_the_rest_alone),
	};
#if WT_LINUX
	return WT_MAIN("csum", tests, NULL, NULL);
#else
	return wt_skip_group("csum", tests, sizeof tests / sizeof tests[0],
			     "no packet sockets on bare metal");
#endif
}
