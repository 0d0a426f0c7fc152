/* SPDX-License-Identifier: MIT */
/* The Milk-V Duo's Ethernet driver (drivers/dwmac.c) and its internal PHY's
 * bring-up (drivers/cv1800b_ephy.c), the same sources the board links, run
 * on Linux against a model of the device whose memory is not coherent with
 * the CPU's cache (tests/dwmac_model.c): reset and set-up, frames both
 * ways between two devices, a full transmit ring, frames lost for a full
 * receive ring and on the wire, the link from MDIO, the interrupt, and a
 * missing clean or invalidate (made so by the test, through the model)
 * caught. The PHY table is compared, register by register, with the
 * vendor's sequence written out below. Linux only: on bare metal the
 * driver is the board's, not the model's. */
#include <string.h>

#include "testutil.h"
#if WT_LINUX
#include "cv1800b_ephy.h"
#include "driver.h" /* shim_irq_register, mmio_write32: the model's here */
#include "dwmac.h"
#include "dwmac_model.h"

#define BASE_A 0x04070000u /* the CV1800B's MAC */
#define BASE_B 0x04080000u /* a second device, for the other end */
#define IRQ_A 31           /* the CV1800B's PLIC source */
#define IRQ_B 32
#define PHY_ADDR 0
#define FRAME_LEN 100

static const uint8_t MAC_A[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x0a};
static const uint8_t MAC_B[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0b};

static int setup(void **state)
{
	(void)state;
	assert_int_equal(dm_init(), 0);
	return 0;
}

/* Every page given back; no cache call outside DMA memory. */
static int teardown(void **state)
{
	(void)state;
	struct dm_cache_counts c;
	dm_cache_counts(&c);
	assert_int_equal(c.misuse, 0);
	assert_int_equal(dm_fini(), 0);
	return 0;
}

static struct dwmac *open_one(struct dm_dev **m, uintptr_t base, unsigned irq, const uint8_t mac[6],
			      int poll, int *src)
{
	*m = dm_dev_new(base, irq, PHY_ADDR);
	assert_non_null(*m);
	dm_set_link(*m, 1, 100, 1);
	struct dwmac_config cfg = {.base = base, .irq = irq, .poll = poll};
	memcpy(cfg.mac, mac, 6);
	struct dwmac *d = NULL;
	assert_int_equal(dwmac_open(&cfg, &d, src), 0);
	assert_non_null(d);
	return d;
}

/* A frame from src to dst whose payload is n, numbered. */
static size_t make_frame(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], unsigned n)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = 0x88;
	f[13] = 0xb5; /* local experimental EtherType */
	for (size_t i = 14; i < FRAME_LEN; i++)
		f[i] = (uint8_t)(n * 7 + i);
	memcpy(f + 14, &n, sizeof n);
	return FRAME_LEN;
}

static int send_frame(struct dwmac *d, const uint8_t *f, size_t len)
{
	/* In two pieces, as lwIP's pbuf chains come. */
	struct shim_iov iov[2] = {{f, 14}, {f + 14, len - 14}};
	return dwmac_send(d, iov, 2);
}

static void test_parse_mac(void **state)
{
	(void)state;
	uint8_t m[6];
	assert_int_equal(dwmac_parse_mac("02:11:22:aa:BB:cc", m), 0);
	const uint8_t want[6] = {0x02, 0x11, 0x22, 0xaa, 0xbb, 0xcc};
	assert_memory_equal(m, want, 6);
	assert_int_equal(dwmac_parse_mac(NULL, m), 0);
	const uint8_t local[6] = {0x02, 0x77, 0x65, 0x66, 0x74, 0x01};
	assert_memory_equal(m, local, 6);
	assert_int_equal(dwmac_parse_mac("", m), 0);
	assert_memory_equal(m, local, 6);
	assert_int_equal(dwmac_parse_mac("01:00:5e:00:00:01", m), -EINVAL); /* multicast */
	assert_int_equal(dwmac_parse_mac("00:00:00:00:00:00", m), -EINVAL);
	assert_int_equal(dwmac_parse_mac("02:11:22:33:44", m), -EINVAL);
	assert_int_equal(dwmac_parse_mac("02:11:22:33:44:55:66", m), -EINVAL);
	assert_int_equal(dwmac_parse_mac("02-11-22-33-44-55", m), -EINVAL);
	assert_int_equal(dwmac_parse_mac("02:11:22:33:44:5g", m), -EINVAL);
	assert_memory_equal(m, local, 6); /* untouched by a refusal */
}

/* Open resets the device, writes its address, gives it the rings and
 * starts it; the link's speed and duplex reach the MAC; close gives every
 * page back. */
static void test_open_sets_up_device(void **state)
{
	(void)state;
	struct dm_dev *m;
	int src = -1;
	struct dwmac *d = open_one(&m, BASE_A, IRQ_A, MAC_A, 0, &src);
	struct dm_counters c;
	dm_counters(m, &c);
	assert_true(c.resets >= 1);
	assert_int_equal(dm_reg(m, 0x044), 0x33221102u);
	assert_int_equal(dm_reg(m, 0x040) & 0xffff, 0x0a44u);
	assert_int_equal(dm_reg(m, 0x1018) & ((1u << 1) | (1u << 13)), (1u << 1) | (1u << 13));
	assert_int_equal(dm_reg(m, 0x000) & 0xc, 0xc); /* TE, RE */
	assert_int_equal(dm_reg(m, 0x000) & ((1u << 14) | (1u << 11)), (1u << 14) | (1u << 11));
	assert_int_not_equal(dm_reg(m, 0x100c), 0);
	assert_int_not_equal(dm_reg(m, 0x1010), 0);
	assert_int_equal(dm_reg(m, 0x100c) % DMA_CACHE_LINE, 0);
	struct dwmac_stats st;
	dwmac_stats(d, &st);
	assert_int_equal(st.by_irq, 1);
	assert_int_equal(st.phy, PHY_ADDR);
	assert_int_equal(st.link, 1);
	assert_int_equal(st.speed, 100);
	assert_int_equal(st.full_duplex, 1);
	assert_true(src >= 0);
	dwmac_close(d);
	/* Closed: the DMA is stopped and the device reset again. */
	assert_int_equal(dm_reg(m, 0x1018) & ((1u << 1) | (1u << 13)), 0);
	dm_counters(m, &c);
	assert_true(c.resets >= 2);
}

/* No PHY answers on MDIO: -ENODEV, nothing kept. */
static void test_open_without_phy(void **state)
{
	(void)state;
	struct dm_dev *m = dm_dev_new(BASE_A, IRQ_A, 32); /* no address 32: none answers */
	assert_non_null(m);
	struct dwmac_config cfg = {.base = BASE_A, .irq = IRQ_A};
	memcpy(cfg.mac, MAC_A, 6);
	struct dwmac *d = NULL;
	int src = -1;
	assert_int_equal(dwmac_open(&cfg, &d, &src), -ENODEV);
	assert_null(d);
	struct dm_counters c;
	dm_counters(m, &c);
	assert_int_equal(c.mdio_ops, 2 * 32);
}

/* Frames both ways between two devices on one wire, by interrupt: bytes
 * intact, the FCS taken off, the receiver's source reported IN. */
static void test_send_receive(void **state)
{
	(void)state;
	struct dm_dev *ma, *mb;
	int sa, sb;
	struct dwmac *a = open_one(&ma, BASE_A, IRQ_A, MAC_A, 0, &sa);
	struct dwmac *b = open_one(&mb, BASE_B, IRQ_B, MAC_B, 0, &sb);
	dm_connect(ma, mb);
	dm_io_taken(sa);
	dm_io_taken(sb);
	uint8_t f[FRAME_LEN], got[2048];
	/* More than a ring's worth each way: the rings wrap. */
	for (unsigned n = 0; n < 3 * DWMAC_RX_DESCS; n++) {
		size_t len = make_frame(f, MAC_B, MAC_A, n);
		assert_int_equal(send_frame(a, f, len), 0);
		assert_true(dm_io_taken(sb) & SHIM_IO_IN);
		assert_int_equal(dwmac_recv(b, got, sizeof got), (int)len);
		assert_memory_equal(got, f, len);
		assert_int_equal(dwmac_recv(b, got, sizeof got), -EAGAIN);

		len = make_frame(f, MAC_A, MAC_B, n + 1000);
		assert_int_equal(send_frame(b, f, len), 0);
		assert_true(dm_io_taken(sa) & SHIM_IO_IN);
		assert_int_equal(dwmac_recv(a, got, sizeof got), (int)len);
		assert_memory_equal(got, f, len);
	}
	/* The interrupt was acknowledged: the line is down. */
	assert_false(dm_irq_line(ma));
	assert_false(dm_irq_line(mb));
	struct dwmac_stats st;
	dwmac_stats(b, &st);
	assert_int_equal(st.rx_frames, 3 * DWMAC_RX_DESCS);
	assert_int_equal(st.tx_frames, 3 * DWMAC_RX_DESCS);
	assert_true(st.irqs >= 3 * DWMAC_RX_DESCS);
	assert_int_equal(st.rx_errors + st.rx_missed + st.tx_errors, 0);
	/* A frame for someone else is not taken; a broadcast is. */
	static const uint8_t other[6] = {0x02, 0, 0, 0, 0, 0x0c};
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	size_t len = make_frame(f, other, MAC_A, 1);
	assert_int_equal(send_frame(a, f, len), 0);
	assert_int_equal(dwmac_recv(b, got, sizeof got), -EAGAIN);
	len = make_frame(f, bcast, MAC_A, 2);
	assert_int_equal(send_frame(a, f, len), 0);
	assert_int_equal(dwmac_recv(b, got, sizeof got), (int)len);
	/* Too small a buffer: -EMSGSIZE, and the frame is gone. */
	len = make_frame(f, MAC_B, MAC_A, 3);
	assert_int_equal(send_frame(a, f, len), 0);
	assert_int_equal(dwmac_recv(b, got, 20), -EMSGSIZE);
	assert_int_equal(dwmac_recv(b, got, sizeof got), -EAGAIN);
	dwmac_close(a);
	dwmac_close(b);
}

/* Sizes refused before the ring is touched. */
static void test_send_sizes(void **state)
{
	(void)state;
	struct dm_dev *m;
	int src;
	struct dwmac *d = open_one(&m, BASE_A, IRQ_A, MAC_A, 0, &src);
	static uint8_t big[DWMAC_MTU + 15];
	struct shim_iov iov = {big, 13};
	assert_int_equal(dwmac_send(d, &iov, 1), -EINVAL);
	iov.len = sizeof big;
	assert_int_equal(dwmac_send(d, &iov, 1), -EMSGSIZE);
	iov.len = sizeof big - 1; /* the largest */
	memcpy(big, MAC_B, 6);
	assert_int_equal(dwmac_send(d, &iov, 1), 0);
	uint8_t got[2048];
	assert_int_equal(dm_tx_take(m, got, sizeof got), (int)sizeof big - 1);
	iov.len = 14; /* the smallest: padded to 60 on the wire */
	assert_int_equal(dwmac_send(d, &iov, 1), 0);
	assert_int_equal(dm_tx_take(m, got, sizeof got), 60);
	assert_int_equal(dwmac_send(d, NULL, 1), -EINVAL);
	dwmac_close(d);
}

/* The transmit DMA held: the ring fills, the next send is refused and OUT
 * is not reported; let go, the device sends them all in order and its
 * interrupt reports OUT. */
static void test_tx_ring_full(void **state)
{
	(void)state;
	struct dm_dev *m;
	int src;
	struct dwmac *d = open_one(&m, BASE_A, IRQ_A, MAC_A, 0, &src);
	dm_tx_hold(m, 1);
	uint8_t f[FRAME_LEN], got[2048];
	for (unsigned n = 0; n < DWMAC_TX_DESCS; n++) {
		size_t len = make_frame(f, MAC_B, MAC_A, n);
		assert_int_equal(send_frame(d, f, len), 0);
	}
	size_t len = make_frame(f, MAC_B, MAC_A, 99);
	assert_int_equal(send_frame(d, f, len), -EAGAIN);
	struct dwmac_stats st;
	dwmac_stats(d, &st);
	assert_int_equal(st.tx_full, 1);
	assert_int_equal(dm_tx_take(m, got, sizeof got), -1);
	/* A waiter arms the source (as the runtime does): no room yet. */
	assert_false(dm_io_arm(src) & SHIM_IO_OUT);
	dm_io_taken(src);
	dm_tx_hold(m, 0); /* the device sends; its interrupt says there is room */
	assert_true(dm_io_taken(src) & SHIM_IO_OUT);
	for (unsigned n = 0; n < DWMAC_TX_DESCS; n++) {
		assert_int_equal(dm_tx_take(m, got, sizeof got), FRAME_LEN);
		unsigned k;
		memcpy(&k, got + 14, sizeof k);
		assert_int_equal(k, n);
	}
	assert_int_equal(dm_tx_take(m, got, sizeof got), -1);
	assert_int_equal(send_frame(d, f, len), 0);
	dwmac_close(d);
}

/* Frames arriving while every receive descriptor is full are lost (and
 * counted by the device and the driver); those before are kept in order,
 * and receiving resumes once the driver gives descriptors back. */
static void test_rx_full_ring_loses_frames(void **state)
{
	(void)state;
	struct dm_dev *m;
	int src;
	struct dwmac *d = open_one(&m, BASE_A, IRQ_A, MAC_A, 0, &src);
	uint8_t f[FRAME_LEN], got[2048];
	for (unsigned n = 0; n < DWMAC_RX_DESCS + 3; n++) {
		size_t len = make_frame(f, MAC_A, MAC_B, n);
		assert_int_equal(dm_rx_frame(m, f, len), n < DWMAC_RX_DESCS ? 0 : -1);
	}
	struct dm_counters c;
	dm_counters(m, &c);
	assert_int_equal(c.rx_missed, 3);
	assert_true(dm_reg(m, 0x1014) & (1u << 7)); /* RU */
	for (unsigned n = 0; n < DWMAC_RX_DESCS; n++) {
		assert_int_equal(dwmac_recv(d, got, sizeof got), FRAME_LEN);
		unsigned k;
		memcpy(&k, got + 14, sizeof k);
		assert_int_equal(k, n);
	}
	assert_int_equal(dwmac_recv(d, got, sizeof got), -EAGAIN);
	struct dwmac_stats st;
	dwmac_stats(d, &st);
	assert_int_equal(st.rx_missed, 3);
	size_t len = make_frame(f, MAC_A, MAC_B, 500);
	assert_int_equal(dm_rx_frame(m, f, len), 0);
	assert_int_equal(dwmac_recv(d, got, sizeof got), (int)len);
	assert_memory_equal(got, f, len);
	dwmac_close(d);
}

/* A frame the device marked bad is dropped and counted, and so are the
 * pieces of one too long for a buffer (spread over two descriptors, the
 * first without LS, the second without FS); the next good one arrives. */
static void test_bad_and_long_frames_dropped(void **state)
{
	(void)state;
	struct dm_dev *m;
	int src;
	struct dwmac *d = open_one(&m, BASE_A, IRQ_A, MAC_A, 0, &src);
	uint8_t f[1600], got[2048];
	size_t len = make_frame(f, MAC_A, MAC_B, 1);
	assert_int_equal(dm_rx_bad(m, f, len), 0);
	memset(f + FRAME_LEN, 0x3c, sizeof f - FRAME_LEN);
	assert_int_equal(dm_rx_frame(m, f, sizeof f), 0); /* 1604 bytes with its FCS */
	struct dm_counters c;
	dm_counters(m, &c);
	assert_int_equal(c.rx_frames, 2);
	len = make_frame(f, MAC_A, MAC_B, 2);
	assert_int_equal(dm_rx_frame(m, f, len), 0);
	assert_int_equal(dwmac_recv(d, got, sizeof got), (int)len);
	assert_memory_equal(got, f, len);
	struct dwmac_stats st;
	dwmac_stats(d, &st);
	assert_int_equal(st.rx_errors, 3);
	assert_int_equal(st.rx_frames, 1);
	dwmac_close(d);
}

/* A fatal bus error: the interrupt reports the source in error. */
static void test_fatal_bus_error_reported(void **state)
{
	(void)state;
	struct dm_dev *m;
	int src;
	struct dwmac *d = open_one(&m, BASE_A, IRQ_A, MAC_A, 0, &src);
	dm_io_taken(src);
	dm_fatal(m);
	assert_true(dm_io_taken(src) & SHIM_IO_ERR);
	assert_false(dm_irq_line(m));
	assert_true(dm_io_arm(src) & SHIM_IO_ERR);
	dwmac_close(d);
}

/* Every third frame lost on the wire: the others arrive, in order. */
static void test_wire_loss(void **state)
{
	(void)state;
	struct dm_dev *ma, *mb;
	int sa, sb;
	struct dwmac *a = open_one(&ma, BASE_A, IRQ_A, MAC_A, 0, &sa);
	struct dwmac *b = open_one(&mb, BASE_B, IRQ_B, MAC_B, 0, &sb);
	dm_connect(ma, mb);
	dm_wire_loss(ma, 3);
	uint8_t f[FRAME_LEN], got[2048];
	for (unsigned n = 1; n <= 9; n++) {
		size_t len = make_frame(f, MAC_B, MAC_A, n);
		assert_int_equal(send_frame(a, f, len), 0);
	}
	unsigned seen[9], k = 0;
	int r;
	while ((r = dwmac_recv(b, got, sizeof got)) > 0 && k < 9)
		memcpy(&seen[k++], got + 14, sizeof seen[0]);
	assert_int_equal(r, -EAGAIN);
	assert_int_equal(k, 6);
	const unsigned want[6] = {1, 2, 4, 5, 7, 8};
	assert_memory_equal(seen, want, sizeof want);
	dwmac_close(a);
	dwmac_close(b);
}

/* The link from MDIO: down, then 10 Mb/s half duplex, which the MAC is
 * set to; a fall in between is seen (BMSR latches it). */
static void test_link_poll(void **state)
{
	(void)state;
	struct dm_dev *m;
	int src;
	struct dwmac *d = open_one(&m, BASE_A, IRQ_A, MAC_A, 0, &src);
	dm_set_link(m, 0, 100, 1);
	assert_int_equal(dwmac_link_poll(d), 0);
	struct dwmac_stats st;
	dwmac_stats(d, &st);
	assert_int_equal(st.link, 0);
	dm_set_link(m, 1, 10, 0);
	assert_int_equal(dwmac_link_poll(d), 1);
	dwmac_stats(d, &st);
	assert_int_equal(st.speed, 10);
	assert_int_equal(st.full_duplex, 0);
	assert_int_equal(dm_reg(m, 0x000) & ((1u << 14) | (1u << 11)), 0);
	dm_set_link(m, 1, 100, 1);
	assert_int_equal(dwmac_link_poll(d), 1);
	assert_int_equal(dm_reg(m, 0x000) & ((1u << 14) | (1u << 11)), (1u << 14) | (1u << 11));
	/* MDIO by hand: the PHY's ID, and a write that reads back. */
	assert_int_equal(dwmac_mdio_read(d, PHY_ADDR, 2), 0x0043);
	assert_int_equal(dwmac_mdio_read(d, PHY_ADDR, 3), 0x5649);
	assert_int_equal(dwmac_mdio_write(d, PHY_ADDR, 4, 0x0061), 0);
	assert_int_equal(dwmac_mdio_read(d, PHY_ADDR, 4), 0x0061);
	assert_int_equal(dwmac_mdio_read(d, 32, 4), -EINVAL);
	/* recv polls the link when idle long enough. */
	dm_set_link(m, 0, 100, 1);
	uint8_t got[2048];
	for (int i = 0; i < DWMAC_LINK_EVERY; i++)
		assert_int_equal(dwmac_recv(d, got, sizeof got), -EAGAIN);
	dwmac_stats(d, &st);
	assert_int_equal(st.link, 0);
	dwmac_close(d);
}

static void someone_else(void *arg) { (void)arg; }

/* The interrupt taken by someone else: polled, said on the console, and
 * readiness still found by asking. */
static void test_polled_fallback(void **state)
{
	(void)state;
	assert_int_equal(shim_irq_register(IRQ_A, someone_else, NULL), 0);
	dm_console();
	struct dm_dev *m;
	int src;
	struct dwmac *d = open_one(&m, BASE_A, IRQ_A, MAC_A, 0, &src);
	assert_non_null(strstr(dm_console(), "polled"));
	struct dwmac_stats st;
	dwmac_stats(d, &st);
	assert_int_equal(st.by_irq, 0);
	dwmac_close(d);
	shim_irq_unregister(IRQ_A);
	/* Asked to poll: no message. */
	d = open_one(&m, BASE_B, IRQ_B, MAC_B, 1, &src);
	assert_string_equal(dm_console(), "");
	dwmac_stats(d, &st);
	assert_int_equal(st.by_irq, 0);
	dwmac_close(d);
}

/* The model is not coherent, so a cache call left out shows. The test
 * makes the model drop one (the driver is the real one): */
static void test_missing_clean_caught(void **state)
{
	(void)state;
	struct dm_dev *ma, *mb;
	int sa, sb;
	struct dwmac *a = open_one(&ma, BASE_A, IRQ_A, MAC_A, 0, &sa);
	struct dwmac *b = open_one(&mb, BASE_B, IRQ_B, MAC_B, 0, &sb);
	dm_connect(ma, mb);
	uint8_t f[FRAME_LEN], got[2048];
	size_t len = make_frame(f, MAC_B, MAC_A, 1);
	/* Without the clean of the transmit buffer, the device sends what
	 * memory held (0xa5s: a multicast destination, so it is received),
	 * not the frame. */
	dm_cache_skip(DM_CLEAN, 0, 1);
	assert_int_equal(send_frame(a, f, len), 0);
	int r = dwmac_recv(b, got, sizeof got);
	assert_int_equal(r, (int)len);
	assert_memory_not_equal(got, f, len);
	assert_int_equal(got[0], 0xa5);
	/* Without any clean of the buffer or the descriptor, the device never
	 * sees the descriptor as its own: nothing is sent. */
	struct dm_counters before, after;
	dm_counters(ma, &before);
	dm_cache_skip(DM_CLEAN, 0, 3);
	len = make_frame(f, MAC_B, MAC_A, 2);
	assert_int_equal(send_frame(a, f, len), 0);
	dm_counters(ma, &after);
	assert_int_equal(after.tx_frames, before.tx_frames);
	assert_int_equal(dwmac_recv(b, got, sizeof got), -EAGAIN);
	struct dm_cache_counts cc;
	dm_cache_counts(&cc);
	assert_int_equal(cc.skipped, 4);
	dwmac_close(a);
	dwmac_close(b);
}

static void test_missing_inval_caught(void **state)
{
	(void)state;
	struct dm_dev *m;
	int src;
	/* Polled: no interrupt handler looks at the descriptor first. */
	struct dwmac *d = open_one(&m, BASE_A, IRQ_A, MAC_A, 1, &src);
	uint8_t f[FRAME_LEN], got[2048];
	/* Without the invalidate of the descriptor, the driver sees the OWN
	 * bit it wrote: the frame that is there is not seen. */
	size_t len = make_frame(f, MAC_A, MAC_B, 0);
	assert_int_equal(dm_rx_frame(m, f, len), 0);
	dm_cache_skip(DM_INVAL, 0, 1);
	assert_int_equal(dwmac_recv(d, got, sizeof got), -EAGAIN);
	assert_int_equal(dwmac_recv(d, got, sizeof got), (int)len); /* done right, it is */
	assert_memory_equal(got, f, len);
	/* Around the ring to the same descriptor and buffer; without the
	 * invalidate of the buffer, the driver reads the frame it read there
	 * before, not the new one. */
	for (unsigned n = 1; n < DWMAC_RX_DESCS; n++) {
		len = make_frame(f, MAC_A, MAC_B, n);
		assert_int_equal(dm_rx_frame(m, f, len), 0);
		assert_int_equal(dwmac_recv(d, got, sizeof got), (int)len);
	}
	uint8_t first[FRAME_LEN];
	make_frame(first, MAC_A, MAC_B, 0);
	len = make_frame(f, MAC_A, MAC_B, 77);
	assert_int_equal(dm_rx_frame(m, f, len), 0);
	dm_cache_skip(DM_INVAL, 1, 1); /* the descriptor's done, the buffer's not */
	assert_int_equal(dwmac_recv(d, got, sizeof got), (int)len);
	assert_memory_equal(got, first, len);
	assert_memory_not_equal(got, f, len);
	dwmac_close(d);
}

/* ---- The on-board self-test (WEFT_SELFTEST=eth) ------------------------------- */

/* The console's lines, one print each (CMocka's prints are short). */
static void print_lines(const char *out)
{
	while (*out) {
		const char *nl = strchr(out, '\n');
		int n = nl ? (int)(nl - out) : (int)strlen(out);
		print_message("%.*s\n", n, out);
		out += n + (nl != NULL);
	}
}

static struct dm_dev *selftest_dev(struct dwmac_config *cfg)
{
	struct dm_dev *m = dm_dev_new(BASE_A, IRQ_A, PHY_ADDR); /* no cable: link down */
	assert_non_null(m);
	*cfg = (struct dwmac_config){.base = BASE_A, .irq = IRQ_A};
	memcpy(cfg->mac, MAC_A, 6);
	(void)dm_console();
	return m;
}

/* The cleans and invalidates dwmac_open asks for (a device opened and
 * closed to count them): the self-test's own come after them. */
static void open_cache_calls(const struct dwmac_config *cfg, unsigned long *clean,
			     unsigned long *inval)
{
	struct dm_cache_counts a, b;
	struct dwmac *d;
	int src;
	dm_cache_counts(&a);
	assert_int_equal(dwmac_open(cfg, &d, &src), 0);
	dm_cache_counts(&b);
	dwmac_close(d);
	*clean = b.clean - a.clean;
	*inval = b.inval - a.inval;
	(void)dm_console();
}

/* Without a cable: the MAC's loopback, then the PHY's, carry the frames
 * from the transmit ring to the receive ring, none reaches the wire, both
 * loopbacks are off again after (the PHY's BMCR as it was), and the
 * console says pass with the registers. */
static void test_selftest_passes(void **state)
{
	(void)state;
	struct dwmac_config cfg;
	struct dm_dev *m = selftest_dev(&cfg);
	uint16_t bmcr = dm_phy_bmcr(m);
	assert_int_equal(dwmac_selftest(&cfg), 0);
	const char *out = dm_console();
	print_lines(out);
	assert_non_null(strstr(out, "weft: selftest eth: pass\n"));
	assert_null(strstr(out, "FAIL"));
	assert_non_null(strstr(out, "MAC loopback: frame 3 (777 bytes): ok"));
	assert_non_null(strstr(out, "MAC loopback: frame 2 (1514 bytes): ok"));
	assert_non_null(strstr(out, "MAC loopback: pass\n"));
	assert_non_null(strstr(out, "PHY loopback: BMCR 0x1000 -> 0x6100 (reads 0x6100)"));
	assert_non_null(strstr(out, ", link up at read 1\n"));
	assert_non_null(strstr(out, "PHY loopback: frame 1 (60 bytes): ok"));
	assert_non_null(strstr(out, "PHY loopback: frame 3 (777 bytes): ok"));
	assert_non_null(strstr(out, "PHY loopback: BMCR written back 0x1200, reads 0x1000"));
	assert_non_null(strstr(out, "PHY loopback: pass\n"));
	assert_non_null(strstr(out, "ID 0x43 0x5649"));
	assert_non_null(strstr(out, "link down"));
	assert_non_null(strstr(out, "6 sent, 6 received, 0 bad"));
	struct dm_counters c;
	dm_counters(m, &c);
	assert_int_equal(c.looped, DWMAC_SELFTEST_FRAMES);
	assert_int_equal(c.phy_looped, DWMAC_SELFTEST_FRAMES);
	assert_int_equal(c.rx_frames, 2 * DWMAC_SELFTEST_FRAMES);
	assert_int_equal(c.tx_frames, 0); /* nothing on the wire */
	uint8_t buf[2048];
	assert_int_equal(dm_tx_take(m, buf, sizeof buf), -1);
	assert_int_equal(dm_reg(m, 0x000) & (1u << 12), 0); /* LM off again */
	assert_int_equal(dm_phy_bmcr(m), bmcr);             /* the PHY's loopback too */
}

/* A PHY that ignores BMCR's loopback bit: the MAC stage passes, the
 * frames of the PHY stage go to the wire instead of coming back, the
 * self-test fails naming the PHY stage, and BMCR is as it was after. */
static void test_selftest_fails_when_phy_ignores_loopback(void **state)
{
	(void)state;
	struct dwmac_config cfg;
	struct dm_dev *m = selftest_dev(&cfg);
	dm_phy_loopback_ignored(m, 1);
	uint16_t bmcr = dm_phy_bmcr(m);
	assert_int_equal(dwmac_selftest(&cfg), -EIO);
	const char *out = dm_console();
	print_lines(out);
	assert_non_null(strstr(out, "MAC loopback: pass\n"));
	assert_non_null(strstr(out, ", link not up in 20000 reads (going on)"));
	assert_non_null(strstr(out, "PHY loopback: frame 1 (60 bytes): nothing came back, bad"));
	assert_non_null(strstr(out, "PHY loopback: FAIL\n"));
	assert_non_null(strstr(out, "weft: selftest eth: FAIL: PHY loopback: a frame sent did not "
				    "come back (frame 1)\n"));
	assert_null(strstr(out, "FAIL: MAC loopback"));
	assert_null(strstr(out, "selftest eth: pass"));
	struct dm_counters c;
	dm_counters(m, &c);
	assert_int_equal(c.looped, DWMAC_SELFTEST_FRAMES);
	assert_int_equal(c.phy_looped, 0);
	assert_int_equal(c.tx_frames, 1); /* the PHY stage's first frame, on the wire */
	uint8_t buf[2048];
	assert_int_equal(dm_tx_take(m, buf, sizeof buf), 60);
	assert_int_equal(dm_phy_bmcr(m), bmcr);
}

/* The self-test fails, and says so, when the device sees a transmit buffer
 * the driver did not clean (the model told to drop that one clean). */
static void test_selftest_fails_on_missing_clean(void **state)
{
	(void)state;
	struct dwmac_config cfg;
	selftest_dev(&cfg);
	unsigned long clean, inval;
	open_cache_calls(&cfg, &clean, &inval);
	dm_cache_skip(DM_CLEAN, (unsigned)clean, 1); /* the first frame's buffer */
	assert_int_equal(dwmac_selftest(&cfg), -EIO);
	const char *out = dm_console();
	print_lines(out);
	assert_non_null(strstr(
		out,
		"weft: selftest eth: FAIL: MAC loopback: a frame came back different (frame 1)"));
	assert_non_null(strstr(out, "MAC loopback: frame 1 (60 bytes): byte 0 is 0xa5"));
	assert_non_null(strstr(out, "PHY loopback: pass")); /* its frames were cleaned */
	assert_null(strstr(out, "FAIL: PHY loopback"));
	assert_null(strstr(out, "selftest eth: pass"));
	struct dm_cache_counts cc;
	dm_cache_counts(&cc);
	assert_int_equal(cc.skipped, 1);
}

/* And when the driver reads a receive buffer it did not invalidate. */
static void test_selftest_fails_on_missing_inval(void **state)
{
	(void)state;
	struct dwmac_config cfg;
	selftest_dev(&cfg);
	unsigned long clean, inval;
	open_cache_calls(&cfg, &clean, &inval);
	/* The first frame's: its descriptor's invalidate done, its buffer's not. */
	dm_cache_skip(DM_INVAL, (unsigned)inval + 1, 1);
	assert_int_equal(dwmac_selftest(&cfg), -EIO);
	const char *out = dm_console();
	assert_non_null(strstr(
		out,
		"weft: selftest eth: FAIL: MAC loopback: a frame came back different (frame 1)"));
	assert_null(strstr(out, "selftest eth: pass"));
}

/* A device that does not answer: the self-test says so, with the registers. */
static void test_selftest_fails_without_phy(void **state)
{
	(void)state;
	assert_non_null(dm_dev_new(BASE_A, IRQ_A, 32)); /* no address 32: none answers */
	struct dwmac_config cfg = {.base = BASE_A, .irq = IRQ_A};
	memcpy(cfg.mac, MAC_A, 6);
	(void)dm_console();
	assert_int_equal(dwmac_selftest(&cfg), -ENODEV);
	const char *out = dm_console();
	assert_non_null(strstr(out, "FAIL: dwmac_open: no PHY answers on MDIO"));
	assert_non_null(strstr(out, "MAC version 0x1037"));
}

/* ---- The internal PHY's bring-up ------------------------------------------- */
#define EPHY 0x03009000u
#define EFUSE 0x03050000u
#define PINMUX 0x03001000u
#define RTCIO 0x05027000u

static const struct cv1800b_ephy_addrs EPHY_ADDRS = {EPHY, EFUSE, PINMUX, RTCIO};

/* The vendor's sequence as the Milk-V Duo's own U-Boot runs it
 * (milkv-duo/duo-buildroot-sdk, u-boot-2021.10: board/cvitek/cv180x/
 * board.c's cv182xa_ephy_id_init, then drivers/net/phy/cvitek.c's
 * cv182xa_ephy_init with CONFIG_TARGET_CVITEK_CV180X; the MDIO hand-back
 * and re-take between the two left out), written out as the addresses and
 * values it writes, with eFuse holding no trims and page 5's 0x040 and
 * 0x04c, page 1's 0x068 and register 0 as the test leaves them before. */
/* clang-format off */
static const struct dm_write vendor[] = {
	{EPHY + 0x804, 0x0001}, {EPHY + 0x800, 0x0900}, {EPHY + 0x800, 0x0904},
	{EPHY + 0x008, 0x0043}, {EPHY + 0x00c, 0x5649},
	{EPHY + 0x07c, 0x0500}, {EPHY + 0x040, 0x0c00}, {EPHY + 0x040, 0x0c7e},
	{EPHY + 0x800, 0x0906}, {EPHY + 0x07c, 0x0500},
	{EPHY + 0x064, 0x5a5a}, {EPHY + 0x054, 0x0000}, {EPHY + 0x058, 0x0bb0},
	{EPHY + 0x05c, 0x0c10}, {EPHY + 0x068, 0x0003}, {EPHY + 0x054, 0x0000},
	{EPHY + 0x07c, 0x1000},
	{EPHY + 0x068, 0x1000}, {EPHY + 0x06c, 0x3020}, {EPHY + 0x070, 0x5040}, {EPHY + 0x074, 0x7060},
	{EPHY + 0x058, 0x1708}, {EPHY + 0x05c, 0x3827}, {EPHY + 0x060, 0x5748}, {EPHY + 0x064, 0x7867},
	{EPHY + 0x07c, 0x1100},
	{EPHY + 0x040, 0x9080}, {EPHY + 0x044, 0xb0a0}, {EPHY + 0x048, 0xd0c0}, {EPHY + 0x04c, 0xf0e0},
	{EPHY + 0x050, 0x9788}, {EPHY + 0x054, 0xb8a7}, {EPHY + 0x058, 0xd7c8}, {EPHY + 0x05c, 0xf8e7},
	{EPHY + 0x07c, 0x0500},
	{EPHY + 0x040, 0x0c7f}, /* 0x0c7e | 1: TX termination */
	{EPHY + 0x04c, 0x1823}, /* 0x1003 | 0x0820: receive common-mode voltage */
	{EPHY + 0x07c, 0x0a00},
	{EPHY + 0x040, 0x3e00}, {EPHY + 0x044, 0x7864}, {EPHY + 0x048, 0x6470}, {EPHY + 0x04c, 0x5f62},
	{EPHY + 0x050, 0x5a5a}, {EPHY + 0x054, 0x5458}, {EPHY + 0x058, 0xb23a}, {EPHY + 0x05c, 0x94a0},
	{EPHY + 0x060, 0x9092}, {EPHY + 0x064, 0x8a8e}, {EPHY + 0x068, 0x8688}, {EPHY + 0x06c, 0x8484},
	{EPHY + 0x070, 0x0082},
	{EPHY + 0x07c, 0x0b00},
	{EPHY + 0x040, 0x5252}, {EPHY + 0x044, 0x5252}, {EPHY + 0x048, 0x4b52}, {EPHY + 0x04c, 0x3d47},
	{EPHY + 0x050, 0xaa99}, {EPHY + 0x054, 0x989e}, {EPHY + 0x058, 0x9395}, {EPHY + 0x05c, 0x9091},
	{EPHY + 0x060, 0x8e8f}, {EPHY + 0x064, 0x8d8e}, {EPHY + 0x068, 0x8c8c}, {EPHY + 0x06c, 0x8b8b},
	{EPHY + 0x070, 0x008a},
	{EPHY + 0x07c, 0x0d00},
	{EPHY + 0x040, 0x1e0a}, {EPHY + 0x044, 0x3862}, {EPHY + 0x048, 0x1e62}, {EPHY + 0x04c, 0x2a08},
	{EPHY + 0x050, 0x244c}, {EPHY + 0x054, 0x1a44}, {EPHY + 0x058, 0x061c},
	{EPHY + 0x07c, 0x0e00},
	{EPHY + 0x040, 0x2d30}, {EPHY + 0x044, 0x3470}, {EPHY + 0x048, 0x0648}, {EPHY + 0x04c, 0x261c},
	{EPHY + 0x050, 0x3160}, {EPHY + 0x054, 0x2d5e},
	{EPHY + 0x07c, 0x0f00},
	{EPHY + 0x040, 0x2922}, {EPHY + 0x044, 0x366e}, {EPHY + 0x048, 0x0752}, {EPHY + 0x04c, 0x2556},
	{EPHY + 0x050, 0x2348}, {EPHY + 0x054, 0x0c30},
	{EPHY + 0x07c, 0x1000},
	{EPHY + 0x040, 0x1e08}, {EPHY + 0x044, 0x3868}, {EPHY + 0x048, 0x1462}, {EPHY + 0x04c, 0x1a0e},
	{EPHY + 0x050, 0x305e}, {EPHY + 0x054, 0x2f62},
	{EPHY + 0x07c, 0x0100}, {EPHY + 0x068, 0x30a5}, /* 0x3fa5 & ~0x0f00 */
	{EPHY + 0x07c, 0x1300}, {EPHY + 0x058, 0x0012}, {EPHY + 0x05c, 0x6848},
	{EPHY + 0x07c, 0x1200},
	{EPHY + 0x048, 0x0801}, {EPHY + 0x04c, 0x1717}, {EPHY + 0x05c, 0x0108},
	{EPHY + 0x050, 0x3afc}, {EPHY + 0x054, 0x08d3}, {EPHY + 0x060, 0x00fb},
	{EPHY + 0x07c, 0x0000}, {EPHY + 0x800, 0x090e},
	{EPHY + 0x000, 0x1100}, /* 0x1000 | 0x0100: full duplex */
	{EPHY + 0x804, 0x0000},
};

/* clang-format on */

static void ephy_windows(void)
{
	dm_window_add(EPHY, 0x1000);
	dm_window_paged(EPHY, 0x07c, 0x040, 0x07c);
	dm_window_add(EFUSE, 0x2000);
	dm_window_add(PINMUX, 0x1000);
	dm_window_add(RTCIO, 0x1000);
	/* Page 1's 0x068 holds something before (its LED select bits set),
	 * page 5's 0x04c and register 0 (autonegotiation on) too. */
	mmio_write32(EPHY + 0x07c, 0x0100);
	mmio_write32(EPHY + 0x068, 0x3fa5);
	mmio_write32(EPHY + 0x07c, 0x0500);
	mmio_write32(EPHY + 0x04c, 0x1003);
	mmio_write32(EPHY + 0x07c, 0x0000);
	mmio_write32(EPHY + 0x000, 0x1000);
	dm_window_log_clear();
}

static void check_sequence(const struct dm_write *want, unsigned n)
{
	unsigned got_n;
	const struct dm_write *got = dm_window_log(&got_n);
	for (unsigned i = 0; i < n && i < got_n; i++) {
		if (got[i].addr != want[i].addr || got[i].val != want[i].val)
			fail_msg("write %u: 0x%08lx <- 0x%04x, the vendor's 0x%08lx <- 0x%04x", i,
				 (unsigned long)got[i].addr, (unsigned)got[i].val,
				 (unsigned long)want[i].addr, (unsigned)want[i].val);
	}
	assert_int_equal(got_n, n);
}

static void test_ephy_matches_vendor(void **state)
{
	(void)state;
	ephy_windows();
	cv1800b_ephy_init(&EPHY_ADDRS);
	check_sequence(vendor, sizeof vendor / sizeof vendor[0]);
	/* About 110 writes, as the issue says of the vendor's sequence; none
	 * to the LED pads (the pin mux and RTC-IO windows). */
	assert_true(sizeof vendor / sizeof vendor[0] > 100);
	unsigned n;
	const struct dm_write *log = dm_window_log(&n);
	for (unsigned i = 0; i < n; i++)
		assert_true(log[i].addr >= EPHY && log[i].addr < EPHY + 0x1000);
}

/* With trims in eFuse, the three trim writes take them (the vendor's
 * arithmetic: 0x064 <- bytes 3 | 2 of 0x1024, 0x054[15:8] <- byte 1 of
 * 0x1024, 0x058[7:4] and [11:8] <- nibbles 7 and 6 of 0x1020), keeping the
 * register's other bits; every other write is unchanged. */
static void test_ephy_efuse_trims(void **state)
{
	(void)state;
	ephy_windows();
	dm_window_set(EFUSE + 0x120, (1u << 8) | (1u << 9) | (1u << 11));
	dm_window_set(EFUSE + 0x1024, 0x12345678);
	dm_window_set(EFUSE + 0x1020, 0x9a000000);
	/* What page 5's 0x054, 0x058 and 0x064 read before. */
	mmio_write32(EPHY + 0x07c, 0x0500);
	mmio_write32(EPHY + 0x054, 0x00c3);
	mmio_write32(EPHY + 0x058, 0xf00f);
	mmio_write32(EPHY + 0x064, 0xffff0000);
	mmio_write32(EPHY + 0x07c, 0x0000);
	dm_window_log_clear();
	cv1800b_ephy_init(&EPHY_ADDRS);
	struct dm_write want[sizeof vendor / sizeof vendor[0]];
	memcpy(want, vendor, sizeof vendor);
	assert_int_equal(want[10].addr, EPHY + 0x064);
	want[10].val = 0xffff0000u | 0x3412u;
	assert_int_equal(want[11].addr, EPHY + 0x054);
	want[11].val = 0x56c3u;
	assert_int_equal(want[12].addr, EPHY + 0x058);
	want[12].val = 0xf00fu | 0x9u << 4 | 0xau << 8;
	check_sequence(want, sizeof want / sizeof want[0]);
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
		T(test_parse_mac),
		T(test_open_sets_up_device),
		T(test_open_without_phy),
		T(test_send_receive),
		T(test_send_sizes),
		T(test_tx_ring_full),
		T(test_rx_full_ring_loses_frames),
		T(test_bad_and_long_frames_dropped),
		T(test_fatal_bus_error_reported),
		T(test_wire_loss),
		T(test_link_poll),
		T(test_polled_fallback),
		T(test_missing_clean_caught),
		T(test_missing_inval_caught),
		T(test_selftest_passes),
		T(test_selftest_fails_when_phy_ignores_loopback),
		T(test_selftest_fails_on_missing_clean),
		T(test_selftest_fails_on_missing_inval),
		T(test_selftest_fails_without_phy),
		T(test_ephy_matches_vendor),
		T(test_ephy_efuse_trims),
	};
#if WT_LINUX
	return WT_MAIN("dwmac", tests, NULL, NULL);
#else
	return wt_skip_group(
		"dwmac", tests, sizeof tests / sizeof tests[0],
		"the driver runs against its model on Linux; on the board, on the device");
#endif
}
