/* SPDX-License-Identifier: MIT */
/* The DWMAC 3.x's registers and descriptors, the clause-22 PHY registers,
 * and the driver's state: private to drivers/dwmac.c (the driver) and
 * drivers/dwmac_selftest.c (its on-board self-test). Everyone else uses
 * dwmac.h. Offsets, bits and their sources: docs/boards/cv1800b-ethernet.md. */
#ifndef WEFT_DWMAC_HW_H
#define WEFT_DWMAC_HW_H

#include "driver.h"
#include "dwmac.h"

/* ---- Registers -------------------------------------------------------------- */
/* MAC (base + 0). */
#define MAC_CONF 0x000
#define MAC_FRAME_FILTER 0x004
#define MAC_MII_ADDR 0x010
#define MAC_MII_DATA 0x014
#define MAC_VERSION 0x020
#define MAC_INT_MASK 0x03c
#define MAC_ADDR0_HI 0x040
#define MAC_ADDR0_LO 0x044

#define CONF_RE (1u << 2)
#define CONF_TE (1u << 3)
#define CONF_DM (1u << 11)  /* full duplex */
#define CONF_LM (1u << 12)  /* loopback inside the MAC (the self-test) */
#define CONF_FES (1u << 14) /* 100 Mb/s (with PS) */
#define CONF_PS (1u << 15)  /* MII port: 10/100 */
#define CONF_JD (1u << 22)  /* jabber timer off */

#define FILTER_PM (1u << 4) /* pass all multicast */

#define MII_BUSY (1u << 0)
#define MII_WRITE (1u << 1)
#define MII_CR_150_250 (4u << 2) /* MDC = clk / 102: the vendor's choice */
#define MII_REG(r) ((uint32_t)(r) << 6)
#define MII_PHY(p) ((uint32_t)(p) << 11)

/* DMA (base + 0x1000). */
#define DMA_BUS_MODE 0x1000
#define DMA_TX_POLL 0x1004
#define DMA_RX_POLL 0x1008
#define DMA_RX_LIST 0x100c
#define DMA_TX_LIST 0x1010
#define DMA_STATUS 0x1014
#define DMA_OP_MODE 0x1018
#define DMA_INT_EN 0x101c
#define DMA_MISSED 0x1020
#define DMA_CUR_TX_DESC 0x1048
#define DMA_CUR_RX_DESC 0x104c
#define DMA_CUR_TX_BUF 0x1050
#define DMA_CUR_RX_BUF 0x1054

#define BUS_SWR (1u << 0)
#define BUS_PBL(n) ((uint32_t)(n) << 8)
#define BUS_FB (1u << 16)

#define OP_SR (1u << 1)
#define OP_ST (1u << 13)
#define OP_FTF (1u << 20)
#define OP_TSF (1u << 21)
#define OP_RSF (1u << 25)

/* DMA_STATUS, and the same bits in DMA_INT_EN. */
#define ST_TI (1u << 0)
#define ST_TU (1u << 2)
#define ST_RI (1u << 6)
#define ST_RU (1u << 7)
#define ST_FBI (1u << 13)
#define ST_AIS (1u << 15)
#define ST_NIS (1u << 16)
#define ST_ACK_MASK 0x1ffffu /* the write-1-to-clear bits */

#define MISSED_COUNT(v) ((v)&0xffffu)
#define MISSED_OVERFLOW(v) (((v) >> 17) & 0x7ffu)

/* ---- Descriptors (normal, chained) -------------------------------------------- */
#define DES0_OWN (1u << 31)
/* Receive DES0. */
#define RDES0_FL(v) (((v) >> 16) & 0x3fffu)
#define RDES0_ES (1u << 15)
#define RDES0_FS (1u << 9)
#define RDES0_LS (1u << 8)
/* Receive DES1. */
#define RDES1_RCH (1u << 24)
#define RDES1_RBS1(n) ((uint32_t)(n)&0x7ffu)
/* Transmit DES0. */
#define TDES0_ES (1u << 15)
/* Transmit DES1. */
#define TDES1_IC (1u << 31)
#define TDES1_LS (1u << 30)
#define TDES1_FS (1u << 29)
#define TDES1_TCH (1u << 24)
#define TDES1_TBS1(n) ((uint32_t)(n)&0x7ffu)

struct ddesc {
	uint32_t des0, des1, des2, des3;
};

#define DESC_STRIDE DMA_CACHE_LINE
#define BUF_SIZE 2048
#define RX_BUF_LEN 1536 /* RBS1: a whole frame with its FCS, a multiple of 8 */
#define FCS_LEN 4
#define FRAME_MAX (DWMAC_MTU + 14)
#define FRAME_MIN 14
#define RESET_POLLS 1000000
#define MDIO_POLLS 100000
#define RX_BUF_PAGES (DWMAC_RX_DESCS / 2)
#define TX_BUF_PAGES (DWMAC_TX_DESCS / 2)

_Static_assert(sizeof(struct ddesc) <= DESC_STRIDE, "a descriptor in a cache line");
_Static_assert((DWMAC_RX_DESCS + DWMAC_TX_DESCS) * DESC_STRIDE <= PAGE_SIZE, "one ring page");
_Static_assert(BUF_SIZE % DMA_CACHE_LINE == 0 && PAGE_SIZE % BUF_SIZE == 0, "buffers own lines");
_Static_assert(DWMAC_RX_DESCS % 2 == 0 && DWMAC_TX_DESCS % 2 == 0, "two buffers a page");

struct dwmac {
	uintptr_t base;
	unsigned irq;
	int src;
	int broken;     /* a fatal bus error: the DMA stopped */
	int tx_waiting; /* the ring was full: TIE is on */
	char *ring;     /* the descriptor page */
	char *rx_page[RX_BUF_PAGES], *tx_page[TX_BUF_PAGES];
	unsigned rx_next;  /* the next receive descriptor to look at */
	unsigned tx_next;  /* the next transmit descriptor to fill */
	unsigned tx_dirty; /* the oldest one given to the device */
	unsigned tx_busy;  /* how many are the device's */
	unsigned idle;     /* dwmac_recv calls that found nothing, since a link poll */
	uint32_t int_en;
	uint32_t rx_status; /* DES0 of the last frame received (the self-test says it) */
	struct dwmac_stats st;
};

static inline uint32_t rd(const struct dwmac *d, unsigned off)
{
	return mmio_read32(d->base + off);
}
static inline void wr(const struct dwmac *d, unsigned off, uint32_t v)
{
	mmio_write32(d->base + off, v);
}

static inline struct ddesc *rx_desc(const struct dwmac *d, unsigned i)
{
	return (struct ddesc *)(d->ring + (size_t)i * DESC_STRIDE);
}
static inline struct ddesc *tx_desc(const struct dwmac *d, unsigned i)
{
	return (struct ddesc *)(d->ring + (size_t)(DWMAC_RX_DESCS + i) * DESC_STRIDE);
}
static inline char *rx_buf(const struct dwmac *d, unsigned i)
{
	return d->rx_page[i / 2] + (i % 2) * BUF_SIZE;
}
static inline char *tx_buf(const struct dwmac *d, unsigned i)
{
	return d->tx_page[i / 2] + (i % 2) * BUF_SIZE;
}
static inline uint32_t bus_addr(const void *p) { return (uint32_t)(uintptr_t)p; }

/* IEEE 802.3 clause 22 registers. */
#define MII_BMCR 0
#define MII_BMSR 1
#define MII_PHYSID1 2
#define MII_PHYSID2 3
#define MII_ANAR 4
#define MII_ANLPAR 5
#define BMCR_FULLDPLX (1u << 8)
#define BMCR_ANRESTART (1u << 9)
#define BMCR_ANENABLE (1u << 12)
#define BMCR_SPEED100 (1u << 13)
#define BMCR_LOOPBACK (1u << 14)
#define BMSR_LINK (1u << 2)
#define BMSR_ANEG_DONE (1u << 5)
#define ADV_10HALF (1u << 5)
#define ADV_10FULL (1u << 6)
#define ADV_100HALF (1u << 7)
#define ADV_100FULL (1u << 8)

#endif
