/* SPDX-License-Identifier: MIT */
/* libFuzzer: lwIP's input path as weft runs it. The runtime and weft's lwIP
 * come up once (netif "loop", the in-memory wire), with a TCP listener on
 * port 80 and a UDP socket on port 7; the harness adds an Ethernet netif of
 * its own (10.0.0.2/24, its output discarded) and hands it frames as
 * lwip_netif.c's receive fiber does: a pbuf each, into netif->input, under
 * the net lock, the loopback drained after.
 *
 * The runtime is a host loop on the harness's thread with the virtual
 * clock: after each input the harness reads what the sockets got (and
 * closes what was accepted), then runs the fibers, moving the clock to
 * lwIP's next timeout, so its timers (retransmission, reassembly, ARP)
 * run between inputs, on this thread, and every fiber is parked again
 * before the next input: the run is repeatable and the leak check sees all
 * of lwIP's memory.
 *
 * The input is a run of frames, each behind two bytes (big-endian): the low
 * 11 bits its length (at most 1518); bit 15 "fill in the IPv4 header's and
 * the TCP, UDP or ICMP checksums", so that mutated frames get past the
 * checksum checks into what lies behind them; bit 14 "set this TCP
 * segment's acknowledgement number to the next sequence number the stack
 * sent" and bit 13 "set its sequence number to the last acknowledgement
 * the stack sent", so that an input can answer a SYN-ACK whose initial
 * sequence number is random and get a connection to ESTABLISHED and past. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "internal.h"
#include "lwip.h"
#include "lwip/inet_chksum.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "netif/etharp.h"
#include "netif/ethernet.h"
#include "weft_net.h"

#define FRAME_MAX 1518

static struct netif nif;
/* Not static: the sockets keep what lwIP queued for them (unread datagrams,
 * pending connections) reachable for the leak checker, which a store the
 * compiler could drop would not. */
weft_sock_t *fuzz_listener, *fuzz_udp;

static uint16_t get16(const uint8_t *p);

/* What the stack last sent over TCP: its next sequence number and its
 * acknowledgement (bits 14 and 13 of a frame's header). */
static struct {
	uint32_t snd_next, ack;
} last;

static uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }

/* The netif's output: the frame goes nowhere, but a TCP segment's numbers
 * are noted. */
static err_t discard(struct netif *n, struct pbuf *p)
{
	(void)n;
	uint8_t f[14 + 60 + 20];
	u16_t got = pbuf_copy_partial(p, f, sizeof f, 0);
	if (got < 14 + 20 || get16(f + 12) != 0x0800 || f[14 + 9] != 6)
		return ERR_OK;
	size_t ihl = (size_t)(f[14] & 15) * 4;
	if (ihl < 20 || 14 + ihl + 20 > got)
		return ERR_OK;
	const uint8_t *tcp = f + 14 + ihl;
	size_t doff = (size_t)(tcp[12] >> 4) * 4, tot = get16(f + 16);
	size_t data = tot > ihl + doff ? tot - ihl - doff : 0;
	last.snd_next = get32(tcp + 4) + (uint32_t)data + !!(tcp[13] & 0x02) + !!(tcp[13] & 0x01);
	if (tcp[13] & 0x10)
		last.ack = get32(tcp + 8);
	return ERR_OK;
}

static err_t nif_init(struct netif *n)
{
	static const uint8_t mac[6] = {0x02, 0, 0, 0, 0, 0x02};
	n->name[0] = 'f';
	n->name[1] = 'z';
	n->output = etharp_output;
	n->linkoutput = discard;
	n->mtu = 1500;
	n->hwaddr_len = 6;
	memcpy(n->hwaddr, mac, 6);
	n->flags =
		NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET | NETIF_FLAG_LINK_UP;
	return ERR_OK;
}

static void up(void)
{
	weft_config_t rc = {.workers = 1, .flags = WEFT_CFG_HOST_LOOP | WEFT_CFG_VIRTUAL_CLOCK};
	FUZZ_CHECK(weft_init(&rc) == 0);
	weft_net_config_t nc = {.stack = "lwip", .netif = "loop"};
	FUZZ_CHECK(weft_net_init(&nc) == 0);
	weft_addr_t any80 = {0}, any7 = {0};
	FUZZ_CHECK(weft_addr_parse("0.0.0.0:80", &any80) == 0);
	FUZZ_CHECK(weft_addr_parse("0.0.0.0:7", &any7) == 0);
	FUZZ_CHECK(weft_tcp_listen(&fuzz_listener, &any80, 64) == 0);
	FUZZ_CHECK(weft_udp_bind(&fuzz_udp, &any7) == 0);
	ip4_addr_t ip, mask, gw;
	IP4_ADDR(&ip, 10, 0, 0, 2);
	IP4_ADDR(&mask, 255, 255, 255, 0);
	IP4_ADDR(&gw, 10, 0, 0, 1);
	weft__lwip_lock_take();
	FUZZ_CHECK(netif_add(&nif, &ip, &mask, &gw, NULL, nif_init, ethernet_input) != NULL);
	netif_set_up(&nif);
	netif_set_link_up(&nif);
	weft__lwip_unlock();
	FUZZ_CHECK(weft_poll(0) >= 0);
}

/* What the sockets got, taken as a program would; then the fibers run, to
 * lwIP's next timeout. */
static void settle(void)
{
	static uint8_t buf[2048];
	weft_addr_t from;
	while (weft_udp_recvfrom(fuzz_udp, buf, sizeof buf, &from, 0) >= 0)
		;
	weft_sock_t *c;
	while (weft_tcp_accept(fuzz_listener, &c, &from, 0) == 0) {
		weft_sock_read(c, buf, sizeof buf, 0);
		weft_sock_close(c);
	}
	int64_t next = weft_poll_next();
	FUZZ_CHECK(weft_poll(next > 0 ? next : 0) >= 0);
}

/* lwIP's reassembly links a datagram's fragments through pointers written
 * over each fragment's IP header (struct ip_reass_helper, packed), 14 bytes
 * into its frame: unaligned, so LeakSanitizer must look for pointers at
 * every offset, or it reports queued fragments as leaked. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void) { return "use_unaligned=1"; }

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

/* One's-complement sum of b[0..n), folded, not inverted. */
static uint32_t sum(const uint8_t *b, size_t n, uint32_t acc)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		acc += get16(b + i);
	if (n & 1)
		acc += (uint32_t)b[n - 1] << 8;
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return acc;
}

/* Fill in an IPv4 frame's header checksum, and its TCP, UDP or ICMP one
 * when it is not a fragment. */
static void fix_checksums(uint8_t *f, size_t len)
{
	if (len < 14 + 20 || get16(f + 12) != 0x0800)
		return;
	uint8_t *ip = f + 14;
	size_t ihl = (size_t)(ip[0] & 15) * 4, avail = len - 14;
	if (ihl < 20 || ihl > avail)
		return;
	put16(ip + 10, 0);
	put16(ip + 10, (uint16_t)~sum(ip, ihl, 0));
	size_t tot = get16(ip + 2);
	if (tot > avail || tot < ihl || (get16(ip + 6) & 0x3fff))
		return;
	uint8_t *l4 = ip + ihl;
	size_t n = tot - ihl, at;
	uint32_t pseudo = 0;
	switch (ip[9]) {
	case 1:
		at = 2;
		break;
	case 6:
		at = 16;
		pseudo = 1;
		break;
	case 17:
		at = 6;
		pseudo = 1;
		break;
	default:
		return;
	}
	if (n < at + 2)
		return;
	put16(l4 + at, 0);
	uint32_t acc = 0;
	if (pseudo)
		acc = sum(ip + 12, 8, 0) + ip[9] + (uint32_t)n;
	uint16_t c = (uint16_t)~sum(l4, n, acc);
	if (ip[9] == 17 && c == 0)
		c = 0xffff;
	put16(l4 + at, c);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* Bits 13 and 14: a TCP segment's numbers from what the stack sent. */
static void fill_numbers(uint8_t *f, size_t len, int ack, int seq)
{
	if (len < 14 + 20 || get16(f + 12) != 0x0800 || f[14 + 9] != 6)
		return;
	size_t ihl = (size_t)(f[14] & 15) * 4;
	if (ihl < 20 || 14 + ihl + 20 > len)
		return;
	uint8_t *tcp = f + 14 + ihl;
	if (ack)
		put32(tcp + 8, last.snd_next);
	if (seq)
		put32(tcp + 4, last.ack);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		up();
		ready = 1;
	}
	uint8_t frame[FRAME_MAX];
	while (size >= 2) {
		uint16_t h = get16(data);
		size_t len = h & 0x7ff;
		data += 2;
		size -= 2;
		if (len > size)
			len = size;
		if (len > FRAME_MAX)
			len = FRAME_MAX;
		memcpy(frame, data, len);
		data += len;
		size -= len;
		if (h & 0x6000)
			fill_numbers(frame, len, h & 0x4000, h & 0x2000);
		if (h & 0x8000)
			fix_checksums(frame, len);
		weft__lwip_lock_take();
		struct pbuf *p = pbuf_alloc(PBUF_RAW, (u16_t)len, PBUF_RAM);
		if (p) {
			pbuf_take(p, frame, (u16_t)len);
			if (nif.input(p, &nif) != ERR_OK)
				pbuf_free(p);
		}
		weft__lwip_unlock();
	}
	settle();
	return 0;
}
