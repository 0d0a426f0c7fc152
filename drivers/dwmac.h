/* SPDX-License-Identifier: MIT */
/* A Synopsys DesignWare Ethernet MAC of the 3.x generation (GMAC, "DWMAC";
 * the CV1800B's is "snps,dwmac-3.70a"): normal 4-word descriptors in chained
 * mode, one receive and one transmit ring, frames copied through buffers of
 * its own, a PHY on MDIO polled for the link. The bus need not be coherent:
 * every descriptor and buffer owns its cache lines, cleaned and invalidated
 * around each hand-over (arch/arch_bare.h, dma_cache_*). Every register
 * access goes through mmio_read32 / mmio_write32, which tests/dwmac_model.c
 * stands in for on Linux. Several devices may be open at once. Facts and
 * sources: docs/boards/cv1800b-ethernet.md. */
#ifndef WEFT_DWMAC_H
#define WEFT_DWMAC_H

#include <stddef.h>
#include <stdint.h>

#include "shim.h"

#define DWMAC_MTU 1500
#define DWMAC_RX_DESCS 16
#define DWMAC_TX_DESCS 16

struct dwmac;

struct dwmac_config {
	uintptr_t base; /* the MAC's registers; its DMA's at base + 0x1000 */
	unsigned irq;   /* its PLIC source */
	int poll;       /* 1: poll the device instead of taking its interrupt */
	uint8_t mac[6]; /* the address it answers to (dwmac_parse_mac) */
};

/* "xx:xx:xx:xx:xx:xx" (hex, either case) into mac: 0, or -EINVAL for
 * anything else, a multicast address or all zeros. NULL or "" gives the
 * locally administered default 02:77:65:66:74:01 and 0. */
int dwmac_parse_mac(const char *s, uint8_t mac[6]);

/* Reset the device, write its address, set up both rings, start its DMA,
 * its receiver and transmitter, and find its PHY on MDIO (the first
 * address 0..31 that answers). An I/O source is registered (*src): IN
 * while a received frame waits, OUT while the transmit ring has room, ERR
 * after a fatal bus error; reported by the device's interrupt, or polled
 * (cfg->poll, or the interrupt could not be had: said on the console).
 * 0, -ENOMEM, -EIO (the reset did not finish), -ENODEV (no PHY answers),
 * -EINVAL (memory the device cannot address: above 4 GiB). */
int dwmac_open(const struct dwmac_config *cfg, struct dwmac **out, int *src);

/* One received frame (without its FCS) into buf: its length, -EAGAIN (none
 * waits), -EMSGSIZE (a frame longer than cap was dropped). Frames the
 * device marked bad are dropped and counted. Any thread. */
int dwmac_recv(struct dwmac *d, void *buf, size_t cap);

/* Queue one frame of 14..DWMAC_MTU + 14 bytes, gathered from n pieces (the
 * device pads it and appends the FCS). 0, -EAGAIN (the transmit ring is
 * full), -EMSGSIZE, -EINVAL. Any thread. */
int dwmac_send(struct dwmac *d, const struct shim_iov *iov, int n);

/* Ask the PHY for the link (BMSR, then what autonegotiation agreed on) and
 * set the MAC's speed and duplex to match: 1 up, 0 down, -EIO (MDIO did not
 * answer). dwmac_recv calls it every DWMAC_LINK_EVERY calls that find
 * nothing. Any thread but an interrupt handler. */
#define DWMAC_LINK_EVERY 256
int dwmac_link_poll(struct dwmac *d);

/* Read and write a PHY register over MDIO: the value or 0, -EIO (the
 * management interface stayed busy). */
int dwmac_mdio_read(struct dwmac *d, unsigned phy, unsigned reg);
int dwmac_mdio_write(struct dwmac *d, unsigned phy, unsigned reg, uint16_t v);

struct dwmac_stats {
	uint64_t irqs;      /* interrupts taken */
	uint64_t rx_frames; /* frames received */
	uint64_t rx_errors; /* frames the device marked bad, dropped */
	uint64_t rx_missed; /* frames the device lost for want of a descriptor */
	uint64_t tx_frames; /* frames queued to send */
	uint64_t tx_full;   /* sends refused: the ring was full (-EAGAIN) */
	uint64_t tx_errors; /* frames the device said it could not send */
	int by_irq;         /* 1: interrupt-driven; 0: polled */
	int phy;            /* the PHY's MDIO address */
	int link;           /* 1 up, 0 down, as last polled */
	int speed;          /* 10 or 100 (Mb/s) */
	int full_duplex;
};
void dwmac_stats(struct dwmac *d, struct dwmac_stats *out);

/* The self-test a board can run without a cable (WEFT_SELFTEST=eth;
 * drivers/dwmac_selftest.c): open the device polled (cfg->poll is
 * ignored), then send DWMAC_SELFTEST_FRAMES frames of different sizes
 * through the transmit ring and take each back from the receive ring, byte
 * for byte, twice: in the MAC's own loopback (MAC configuration LM), then
 * in the PHY's (clause 22 BMCR bit 14, at 100 Mb/s full duplex; BMCR is
 * written back as it was after); then close. It prints, on the console,
 * one line per frame, each stage's verdict, the registers and descriptors
 * a driver author would want (the MAC's and the DMA's, the last
 * descriptors of both rings, the PHY's ID, control, status and
 * advertisements over MDIO, the driver's counters), and a verdict line,
 * "weft: selftest eth: pass" or one "weft: selftest eth: FAIL: <stage>:
 * ..." per stage that failed. 0 pass; -EIO a frame did not come back, or
 * came back different, in either stage; what dwmac_open returned if it
 * failed. */
#define DWMAC_SELFTEST_FRAMES 3
int dwmac_selftest(const struct dwmac_config *cfg);

/* Stop the DMA, the receiver and the transmitter, reset the device (it lets
 * go of the rings), release the interrupt, the I/O source and the memory. */
void dwmac_close(struct dwmac *d);

#endif
