/* SPDX-License-Identifier: MIT */
/* Synopsys DWMAC 3.x ("GMAC") with normal descriptors in chained mode.
 * Register offsets and bits: the DWMAC 3.x layout as Linux's stmmac headers
 * (dwmac1000.h, dwmac_dma.h, descs.h) and the CV1800B vendor code document
 * it (docs/boards/cv1800b-ethernet.md lists the facts and their sources).
 *
 * Memory: one page of descriptors (receive ring at 0, transmit ring at
 * half a page), each descriptor alone in a DMA_CACHE_LINE of its own and
 * naming the next in its fourth word (chained mode: the device follows
 * DES3, so the padding needs no skip length); one 2 KiB buffer per
 * descriptor, two to a page. A descriptor is the device's while OWN
 * (DES0 bit 31) is set: the driver writes the other words, cleans the
 * line, sets OWN, cleans again (the device may fetch the descriptor as
 * soon as OWN is seen, so OWN goes out last), and tells the device (poll
 * demand). It reads a descriptor only after invalidating its line. Receive
 * buffers are invalidated before the frame is read; transmit buffers
 * cleaned before the descriptor is given. The bus is then not assumed
 * coherent; on a coherent one the cache calls cost a fence.
 *
 * The shim lock (shim_big_lock) guards a device's state; its interrupt handler
 * runs under it too. The handler acknowledges the DMA status bits it saw
 * (write 1 to clear), then reports the I/O source as virtio_net.c does:
 * IN while the next receive descriptor is the driver's, OUT while a
 * transmit slot is free, ERR after a fatal bus error. Transmit completions
 * interrupt only while the ring is full (TIE is turned on then).
 *
 * The registers, the descriptors and the state are in dwmac_hw.h, which
 * the on-board self-test (dwmac_selftest.c) shares. */
#include "dwmac.h"

#include <errno.h>
#include <string.h>

#include "driver.h"
#include "dwmac_hw.h"

/* The device's view of a descriptor, read now. */
static uint32_t desc_des0(struct ddesc *x)
{
	dma_cache_inval(x, DESC_STRIDE);
	uint32_t v = ((volatile struct ddesc *)x)->des0;
	dma_rmb(); /* OWN before the rest of the descriptor and the buffer */
	return v;
}

/* Give a descriptor whose other words are written to the device: those
 * words out first, OWN last. */
static void desc_give(struct ddesc *x)
{
	dma_cache_clean(x, DESC_STRIDE);
	dma_wmb();
	((volatile struct ddesc *)x)->des0 = DES0_OWN;
	dma_cache_clean(x, DESC_STRIDE);
}

int dwmac_parse_mac(const char *s, uint8_t mac[6])
{
	static const uint8_t local[6] = {0x02, 0x77, 0x65, 0x66, 0x74, 0x01};
	if (!s || !*s) {
		memcpy(mac, local, 6);
		return 0;
	}
	uint8_t m[6];
	for (int i = 0; i < 6; i++) {
		unsigned v = 0;
		for (int k = 0; k < 2; k++) {
			char c = *s++;
			unsigned h;
			if (c >= '0' && c <= '9')
				h = (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				h = (unsigned)(c - 'a' + 10);
			else if (c >= 'A' && c <= 'F')
				h = (unsigned)(c - 'A' + 10);
			else
				return -EINVAL;
			v = v * 16 + h;
		}
		m[i] = (uint8_t)v;
		if (*s != (i < 5 ? ':' : '\0'))
			return -EINVAL;
		s++;
	}
	if (m[0] & 1)
		return -EINVAL; /* multicast */
	if (!(m[0] | m[1] | m[2] | m[3] | m[4] | m[5]))
		return -EINVAL;
	memcpy(mac, m, 6);
	return 0;
}

/* ---- MDIO --------------------------------------------------------------------- */

static int mdio_wait(struct dwmac *d)
{
	for (int n = 0; n < MDIO_POLLS; n++)
		if (!(rd(d, MAC_MII_ADDR) & MII_BUSY))
			return 0;
	return -EIO;
}

int dwmac_mdio_read(struct dwmac *d, unsigned phy, unsigned reg)
{
	if (phy > 31 || reg > 31)
		return -EINVAL;
	if (mdio_wait(d))
		return -EIO;
	wr(d, MAC_MII_ADDR, MII_PHY(phy) | MII_REG(reg) | MII_CR_150_250 | MII_BUSY);
	if (mdio_wait(d))
		return -EIO;
	return (int)(rd(d, MAC_MII_DATA) & 0xffffu);
}

int dwmac_mdio_write(struct dwmac *d, unsigned phy, unsigned reg, uint16_t v)
{
	if (phy > 31 || reg > 31)
		return -EINVAL;
	if (mdio_wait(d))
		return -EIO;
	wr(d, MAC_MII_DATA, v);
	wr(d, MAC_MII_ADDR, MII_PHY(phy) | MII_REG(reg) | MII_CR_150_250 | MII_WRITE | MII_BUSY);
	return mdio_wait(d);
}

static int phy_find(struct dwmac *d)
{
	for (unsigned a = 0; a < 32; a++) {
		int id1 = dwmac_mdio_read(d, a, MII_PHYSID1);
		int id2 = dwmac_mdio_read(d, a, MII_PHYSID2);
		if (id1 < 0 || id2 < 0)
			return -EIO;
		if ((id1 != 0xffff || id2 != 0xffff) && (id1 | id2) != 0)
			return (int)a;
	}
	return -ENODEV;
}

int dwmac_link_poll(struct dwmac *d)
{
	unsigned phy = (unsigned)d->st.phy;
	/* The link bit latches low: the first read says whether it fell since
	 * the last, the second what it is. */
	int s = dwmac_mdio_read(d, phy, MII_BMSR);
	if (s >= 0)
		s = dwmac_mdio_read(d, phy, MII_BMSR);
	if (s < 0)
		return -EIO;
	int up = (s & BMSR_LINK) && (s & BMSR_ANEG_DONE);
	int speed = 10, full = 0;
	if (up) {
		int adv = dwmac_mdio_read(d, phy, MII_ANAR);
		int lpa = dwmac_mdio_read(d, phy, MII_ANLPAR);
		if (adv < 0 || lpa < 0)
			return -EIO;
		unsigned both = (unsigned)(adv & lpa);
		if (both & ADV_100FULL)
			speed = 100, full = 1;
		else if (both & ADV_100HALF)
			speed = 100;
		else if (both & ADV_10FULL)
			full = 1;
	}
	int on = shim_big_lock();
	if (up) {
		uint32_t conf = rd(d, MAC_CONF) & ~(CONF_FES | CONF_DM);
		conf |= (speed == 100 ? CONF_FES : 0) | (full ? CONF_DM : 0);
		wr(d, MAC_CONF, conf);
		d->st.speed = speed;
		d->st.full_duplex = full;
	}
	d->st.link = up;
	shim_big_unlock(on);
	return up;
}

/* ---- Rings -------------------------------------------------------------------- */

/* Under the shim lock. Transmit descriptors the device is done with come
 * back. */
static void tx_reclaim(struct dwmac *d)
{
	while (d->tx_busy) {
		uint32_t s = desc_des0(tx_desc(d, d->tx_dirty));
		if (s & DES0_OWN)
			break;
		if (s & TDES0_ES)
			d->st.tx_errors++;
		d->tx_dirty = (d->tx_dirty + 1) % DWMAC_TX_DESCS;
		d->tx_busy--;
	}
}

/* Under the shim lock. */
static void set_int_en(struct dwmac *d, uint32_t v)
{
	if (v != d->int_en) {
		d->int_en = v;
		wr(d, DMA_INT_EN, v);
	}
}

/* Under the shim lock: what the device is ready for now. */
static unsigned dw_ready(void *arg)
{
	struct dwmac *d = arg;
	unsigned ev = 0;
	if (!(desc_des0(rx_desc(d, d->rx_next)) & DES0_OWN))
		ev |= SHIM_IO_IN;
	tx_reclaim(d);
	if (d->tx_busy == DWMAC_TX_DESCS) {
		/* Full: a completion is to interrupt; then look again, for one
		 * that came before. */
		d->tx_waiting = 1;
		set_int_en(d, d->int_en | ST_TI);
		tx_reclaim(d);
	}
	if (d->tx_busy < DWMAC_TX_DESCS) {
		set_int_en(d, d->int_en & ~ST_TI);
		ev |= SHIM_IO_OUT;
	}
	if (d->broken)
		ev |= SHIM_IO_ERR;
	return ev;
}

static void dw_irq(void *arg)
{
	struct dwmac *d = arg;
	uint32_t s = rd(d, DMA_STATUS);
	wr(d, DMA_STATUS, s & ST_ACK_MASK);
	if (s & ST_FBI)
		d->broken = 1;
	d->tx_waiting = 0;
	d->st.irqs++;
	shim_io_report(d->src, dw_ready(d));
}

static void free_memory(struct dwmac *d)
{
	for (unsigned i = 0; i < RX_BUF_PAGES; i++)
		if (d->rx_page[i])
			shim_page_free(d->rx_page[i]);
	for (unsigned i = 0; i < TX_BUF_PAGES; i++)
		if (d->tx_page[i])
			shim_page_free(d->tx_page[i]);
	if (d->ring)
		shim_page_free(d->ring);
}

static int fits_bus(const void *p) { return (uintptr_t)p + PAGE_SIZE - 1 <= 0xffffffffu; }

/* The rings: every receive descriptor the device's, every transmit one
 * the driver's. */
static int rings_setup(struct dwmac *d)
{
	d->ring = shim_page_alloc();
	if (!d->ring)
		return -ENOMEM;
	if (!fits_bus(d->ring))
		return -EINVAL;
	for (unsigned i = 0; i < RX_BUF_PAGES; i++)
		if (!(d->rx_page[i] = shim_page_alloc()) || !fits_bus(d->rx_page[i]))
			return d->rx_page[i] ? -EINVAL : -ENOMEM;
	for (unsigned i = 0; i < TX_BUF_PAGES; i++)
		if (!(d->tx_page[i] = shim_page_alloc()) || !fits_bus(d->tx_page[i]))
			return d->tx_page[i] ? -EINVAL : -ENOMEM;
	/* No line of a receive buffer may be dirty while the device writes it
	 * (its write-back would overwrite the frame): shim_page_alloc zeroed them. */
	for (unsigned i = 0; i < RX_BUF_PAGES; i++)
		dma_cache_flush(d->rx_page[i], PAGE_SIZE);
	for (unsigned i = 0; i < DWMAC_RX_DESCS; i++) {
		struct ddesc *x = rx_desc(d, i);
		x->des0 = 0;
		x->des1 = RDES1_RCH | RDES1_RBS1(RX_BUF_LEN);
		x->des2 = bus_addr(rx_buf(d, i));
		x->des3 = bus_addr(rx_desc(d, (i + 1) % DWMAC_RX_DESCS));
		desc_give(x);
	}
	for (unsigned i = 0; i < DWMAC_TX_DESCS; i++) {
		struct ddesc *x = tx_desc(d, i);
		x->des0 = 0;
		x->des1 = TDES1_TCH;
		x->des2 = bus_addr(tx_buf(d, i));
		x->des3 = bus_addr(tx_desc(d, (i + 1) % DWMAC_TX_DESCS));
		dma_cache_clean(x, DESC_STRIDE);
	}
	return 0;
}

/* Reset, address, rings, DMA, MAC. */
static int bring_up(struct dwmac *d, const uint8_t mac[6])
{
	wr(d, DMA_BUS_MODE, BUS_SWR);
	int n = 0;
	while (rd(d, DMA_BUS_MODE) & BUS_SWR)
		if (++n > RESET_POLLS)
			return -EIO; /* no clock, or no PHY clock: the reset waits */
	int e = rings_setup(d);
	if (e)
		return e;
	wr(d, MAC_ADDR0_HI, (uint32_t)mac[4] | (uint32_t)mac[5] << 8);
	wr(d, MAC_ADDR0_LO,
	   (uint32_t)mac[0] | (uint32_t)mac[1] << 8 | (uint32_t)mac[2] << 16 |
		   (uint32_t)mac[3] << 24);
	wr(d, MAC_FRAME_FILTER, FILTER_PM);
	wr(d, MAC_INT_MASK, 0xffffffffu); /* the MAC's own (PMT, RGMII) interrupts: none */
	wr(d, DMA_BUS_MODE, BUS_PBL(8) | BUS_FB);
	wr(d, DMA_RX_LIST, bus_addr(rx_desc(d, 0)));
	wr(d, DMA_TX_LIST, bus_addr(tx_desc(d, 0)));
	wr(d, DMA_STATUS, ST_ACK_MASK);
	d->int_en = 0;
	set_int_en(d, ST_NIS | ST_AIS | ST_RI | ST_FBI);
	wr(d, DMA_OP_MODE, OP_FTF | OP_TSF | OP_RSF);
	for (n = 0; rd(d, DMA_OP_MODE) & OP_FTF; n++)
		if (n > RESET_POLLS)
			return -EIO; /* the transmit FIFO flush clears itself when done */
	dma_mb();                    /* the rings before the DMA starts */
	wr(d, DMA_OP_MODE, OP_TSF | OP_RSF | OP_SR | OP_ST);
	/* 100 Mb/s full duplex until the PHY says otherwise. */
	wr(d, MAC_CONF, CONF_PS | CONF_FES | CONF_DM | CONF_JD | CONF_TE | CONF_RE);
	return 0;
}

/* Under the shim lock: stop and reset; the device lets go of the rings. */
static void shut_down(struct dwmac *d)
{
	wr(d, DMA_OP_MODE, rd(d, DMA_OP_MODE) & ~(OP_SR | OP_ST));
	wr(d, MAC_CONF, rd(d, MAC_CONF) & ~(CONF_TE | CONF_RE));
	wr(d, DMA_INT_EN, 0);
	wr(d, DMA_BUS_MODE, BUS_SWR);
	for (int n = 0; (rd(d, DMA_BUS_MODE) & BUS_SWR) && n < RESET_POLLS; n++)
		;
}

int dwmac_open(const struct dwmac_config *cfg, struct dwmac **out, int *src)
{
	struct dwmac *d = shim_page_alloc();
	if (!d)
		return -ENOMEM;
	_Static_assert(sizeof(struct dwmac) <= PAGE_SIZE, "the state in a page");
	memset(d, 0, sizeof *d);
	d->base = cfg->base;
	d->irq = cfg->irq;
	d->src = -1;
	/* Nobody else knows the device yet: no lock until it is registered. */
	int e = bring_up(d, cfg->mac);
	if (!e) {
		int phy = phy_find(d);
		if (phy < 0)
			e = phy;
		else
			d->st.phy = phy;
	}
	if (!e && dwmac_link_poll(d) < 0)
		e = -EIO;
	int on = shim_big_lock();
	if (!e) {
		d->src = shim_io_source_add(dw_ready, d);
		if (d->src < 0)
			e = d->src;
	}
	if (!e && !cfg->poll) {
		if (shim_irq_register(d->irq, dw_irq, d) == 0) {
			d->st.by_irq = 1;
			shim_io_source_irq(d->src, 1);
		} else {
			shim_puts("weft: dwmac: no interrupt (PLIC source ");
			shim_put_dec(d->irq);
			shim_puts("): polled\n");
		}
	}
	if (e) {
		shut_down(d);
		if (d->src >= 0)
			shim_io_source_remove(d->src);
		shim_big_unlock(on);
		free_memory(d);
		shim_page_free(d);
		return e;
	}
	shim_big_unlock(on);
	*src = d->src;
	*out = d;
	return 0;
}

int dwmac_recv(struct dwmac *d, void *buf, size_t cap)
{
	int r = -EAGAIN;
	int on = shim_big_lock();
	for (unsigned n = 0; n < DWMAC_RX_DESCS; n++) {
		struct ddesc *x = rx_desc(d, d->rx_next);
		uint32_t s = desc_des0(x);
		if (s & DES0_OWN)
			break;
		size_t len = RDES0_FL(s);
		d->rx_status = s;
		if ((s & RDES0_ES) || !(s & RDES0_FS) || !(s & RDES0_LS) ||
		    len < FRAME_MIN + FCS_LEN || len > RX_BUF_LEN) {
			/* A bad frame, or one that spilled past a buffer (too long
			 * for us): dropped. */
			d->st.rx_errors++;
		} else {
			len -= FCS_LEN;
			if (len > cap) {
				r = -EMSGSIZE;
			} else {
				char *b = rx_buf(d, d->rx_next);
				dma_cache_inval(b, len);
				memcpy(buf, b, len);
				d->st.rx_frames++;
				r = (int)len;
			}
		}
		d->rx_next = (d->rx_next + 1) % DWMAC_RX_DESCS;
		desc_give(x);
		dma_mb();              /* the descriptor before the poll demand */
		wr(d, DMA_RX_POLL, 1); /* resumes a receive DMA that found none */
		if (r != -EAGAIN)
			break;
	}
	uint32_t missed = rd(d, DMA_MISSED);
	d->st.rx_missed += MISSED_COUNT(missed) + MISSED_OVERFLOW(missed);
	int poll_link = r == -EAGAIN && ++d->idle >= DWMAC_LINK_EVERY;
	if (poll_link)
		d->idle = 0;
	shim_big_unlock(on);
	if (poll_link)
		dwmac_link_poll(d);
	return r;
}

int dwmac_send(struct dwmac *d, const struct shim_iov *iov, int n)
{
	long len = driver_frame_len(iov, n, FRAME_MIN, FRAME_MAX);
	if (len < 0)
		return (int)len;
	size_t total = (size_t)len;
	int on = shim_big_lock();
	tx_reclaim(d);
	if (d->tx_busy == DWMAC_TX_DESCS) {
		d->st.tx_full++;
		shim_big_unlock(on);
		return -EAGAIN;
	}
	unsigned i = d->tx_next;
	char *b = tx_buf(d, i), *p = b;
	for (int k = 0; k < n; k++) {
		memcpy(p, iov[k].base, iov[k].len);
		p += iov[k].len;
	}
	dma_cache_clean(b, total);
	struct ddesc *x = tx_desc(d, i);
	x->des1 = TDES1_IC | TDES1_LS | TDES1_FS | TDES1_TCH | TDES1_TBS1(total);
	desc_give(x);
	d->tx_next = (i + 1) % DWMAC_TX_DESCS;
	d->tx_busy++;
	d->st.tx_frames++;
	dma_mb(); /* the descriptor before the poll demand */
	wr(d, DMA_TX_POLL, 1);
	shim_big_unlock(on);
	return 0;
}

void dwmac_stats(struct dwmac *d, struct dwmac_stats *out)
{
	int on = shim_big_lock();
	*out = d->st;
	shim_big_unlock(on);
}

void dwmac_close(struct dwmac *d)
{
	if (!d)
		return;
	int on = shim_big_lock();
	if (d->st.by_irq)
		shim_irq_unregister(d->irq);
	shim_io_source_remove(d->src);
	shut_down(d);
	shim_big_unlock(on);
	free_memory(d);
	shim_page_free(d);
}
