/* SPDX-License-Identifier: MIT */
/* The DWMAC's on-board self-test (dwmac.h, dwmac_selftest; WEFT_SELFTEST=eth
 * runs it on the Duo). Two stages, the same frames through the driver's own
 * rings in each, every one compared byte for byte:
 *
 * 1. MAC loopback: bit 12 (LM) of the MAC configuration; what the
 *    transmitter sends, the receiver gets, inside the MAC (Synopsys DWMAC
 *    3.x; Linux's dwmac1000.h GMAC_CONTROL_LM). Tests the rings, the DMA,
 *    the descriptors and the cache maintenance.
 * 2. PHY loopback: LM off, the PHY's BMCR (clause 22 register 0) written
 *    whole over MDIO as loopback (bit 14), 100 Mb/s (bit 13) and full
 *    duplex (bit 8), autonegotiation off, the MAC set to 100 Mb/s full
 *    duplex to match, then BMSR read until the link shows (a bounded
 *    number of reads; the frames go either way): what Linux's
 *    genphy_loopback does, which is the loopback the vendor's kernel would
 *    use for this PHY (its cvitek.c matches another PHY's ID, so the
 *    generic driver takes it). Adds the RMII path and the PHY's digital
 *    side. BMCR is written back as it was after, with autonegotiation
 *    restarted if it was on.
 *
 * Frames still in the receive ring between the stages are taken out and
 * counted (each stage numbers its payloads differently, so that a late
 * frame of the first is not taken for one of the second). Then the
 * registers and the last descriptors are printed, the device closed, and
 * one verdict line per failed stage, or "pass". */
#include "dwmac.h"

#include <errno.h>
#include <string.h>

#include "driver.h"
#include "dwmac_hw.h"

#define SELFTEST_POLLS 100000 /* dwmac_recv calls a frame may take to come back */
/* BMSR reads while waiting for the link in PHY loopback: an MDIO read is
 * 64 MDC periods, about 26 us at the vendor's MDC (250 MHz / 102), so
 * about half a second, genphy_loopback's wait. */
#define PHY_LINK_READS 20000
#define DRAIN_MAX (2 * DWMAC_RX_DESCS)

enum { STAGE_MAC, STAGE_PHY, STAGES };
static const char *const stage_name[STAGES] = {"MAC loopback", "PHY loopback"};

static uint8_t frame[FRAME_MAX], got[BUF_SIZE];

static void say(const char *what) { shim_puts(what); }
static void say_hex(const char *name, uint64_t v)
{
	shim_puts(name);
	shim_put_hex(v);
}
static void say_stage(unsigned stage)
{
	say("weft: selftest eth: ");
	say(stage_name[stage]);
	say(": ");
}

/* The registers a driver author asks for first. */
static void selftest_regs(uintptr_t base)
{
	struct dwmac r = {.base = base};
	say("weft: selftest eth: MAC");
	say_hex(" version ", rd(&r, MAC_VERSION));
	say_hex(", conf ", rd(&r, MAC_CONF));
	say_hex(", filter ", rd(&r, MAC_FRAME_FILTER));
	say_hex(", MII address ", rd(&r, MAC_MII_ADDR));
	say_hex(", address 0 ", rd(&r, MAC_ADDR0_HI));
	say_hex(" ", rd(&r, MAC_ADDR0_LO));
	say("\nweft: selftest eth: DMA");
	say_hex(" bus mode ", rd(&r, DMA_BUS_MODE));
	say_hex(", op mode ", rd(&r, DMA_OP_MODE));
	say_hex(", status ", rd(&r, DMA_STATUS));
	say_hex(", int enable ", rd(&r, DMA_INT_EN));
	say_hex(", rx list ", rd(&r, DMA_RX_LIST));
	say_hex(", tx list ", rd(&r, DMA_TX_LIST));
	say("\nweft: selftest eth: DMA now at");
	say_hex(" tx desc ", rd(&r, DMA_CUR_TX_DESC));
	say_hex(", rx desc ", rd(&r, DMA_CUR_RX_DESC));
	say_hex(", tx buffer ", rd(&r, DMA_CUR_TX_BUF));
	say_hex(", rx buffer ", rd(&r, DMA_CUR_RX_BUF));
	say("\n");
}

static void selftest_desc(const char *name, unsigned i, struct ddesc *x)
{
	dma_cache_inval(x, DESC_STRIDE);
	volatile struct ddesc *v = (volatile struct ddesc *)x;
	say(name);
	shim_put_dec(i);
	say_hex(" at ", bus_addr(x));
	say_hex(": ", v->des0);
	say_hex(" ", v->des1);
	say_hex(" ", v->des2);
	say_hex(" ", v->des3);
}

/* A test frame: to and from the device's own address, the local
 * experimental EtherType, a payload numbered by the stage and k. */
static size_t selftest_frame(uint8_t *f, const uint8_t mac[6], unsigned stage, unsigned k)
{
	static const size_t len[DWMAC_SELFTEST_FRAMES] = {60, FRAME_MAX, 777};
	memcpy(f, mac, 6);
	memcpy(f + 6, mac, 6);
	f[12] = 0x88;
	f[13] = 0xb5;
	for (size_t i = 14; i < len[k]; i++)
		f[i] = (uint8_t)(i * 13 + k * 101 + stage * 59 + (i >> 8));
	return len[k];
}

/* The frames through the rings, each taken back and compared: NULL, or why
 * not (*bad: which frame, from 1). One line per frame. */
static const char *run_frames(struct dwmac *d, const uint8_t mac[6], unsigned stage, unsigned *bad)
{
	for (unsigned k = 0; k < DWMAC_SELFTEST_FRAMES; k++) {
		size_t len = selftest_frame(frame, mac, stage, k);
		struct shim_iov iov = {frame, len};
		int r = dwmac_send(d, &iov, 1);
		for (unsigned n = 0; r == 0 && n < SELFTEST_POLLS; n++) {
			r = dwmac_recv(d, got, sizeof got);
			if (r == -EAGAIN)
				r = 0;
			else
				break;
		}
		const char *why = NULL;
		say_stage(stage);
		say("frame ");
		shim_put_dec(k + 1);
		say(" (");
		shim_put_dec(len);
		say(" bytes): ");
		if (r == 0 || r == -EAGAIN) {
			why = "a frame sent did not come back";
			say("nothing came back, ");
		} else if (r < 0) {
			why = "a frame could not be sent or received";
			say("error ");
			shim_put_dec((uint64_t)-r);
			say(", ");
		} else if ((size_t)r != len) {
			why = "a frame came back with another length";
			shim_put_dec((uint64_t)r);
			say(" bytes back, ");
		} else {
			size_t at;
			for (at = 0; at < len && got[at] == frame[at]; at++)
				;
			if (at < len) {
				why = "a frame came back different";
				say("byte ");
				shim_put_dec(at);
				say_hex(" is ", got[at]);
				say_hex(", sent ", frame[at]);
				say(", ");
			}
		}
		say(why ? "bad\n" : "ok\n");
		if (why) {
			*bad = k + 1;
			return why;
		}
	}
	return NULL;
}

/* Frames still in the receive ring (late ones): taken out; how many. */
static unsigned drain(struct dwmac *d)
{
	unsigned n = 0;
	while (n < DRAIN_MAX && dwmac_recv(d, got, sizeof got) != -EAGAIN)
		n++;
	return n;
}

static void say_mdio_reg(const char *name, int v)
{
	say(name);
	if (v < 0)
		say("(no answer)");
	else
		shim_put_hex((uint32_t)v);
}

/* Stage 2: the PHY's loopback, BMCR restored after. */
static const char *phy_stage(struct dwmac *d, const uint8_t mac[6], unsigned phy, unsigned *bad)
{
	const char *why = NULL;
	int was = dwmac_mdio_read(d, phy, MII_BMCR);
	if (was < 0)
		return "MDIO did not answer";
	int on = shim_big_lock();
	wr(d, MAC_CONF, (rd(d, MAC_CONF) & ~CONF_LM) | CONF_FES | CONF_DM);
	shim_big_unlock(on);
	if (dwmac_mdio_write(d, phy, MII_BMCR, BMCR_LOOPBACK | BMCR_SPEED100 | BMCR_FULLDPLX))
		why = "MDIO did not answer";
	int now = dwmac_mdio_read(d, phy, MII_BMCR), bmsr = -1;
	unsigned reads = 0;
	while (!why && reads < PHY_LINK_READS) {
		bmsr = dwmac_mdio_read(d, phy, MII_BMSR);
		reads++;
		if (bmsr < 0)
			why = "MDIO did not answer";
		else if (bmsr & BMSR_LINK)
			break;
	}
	say_stage(STAGE_PHY);
	say_mdio_reg("BMCR ", was);
	say_hex(" -> ", BMCR_LOOPBACK | BMCR_SPEED100 | BMCR_FULLDPLX);
	say_mdio_reg(" (reads ", now);
	say_mdio_reg("), BMSR ", bmsr);
	say(bmsr >= 0 && (bmsr & BMSR_LINK) ? ", link up at read " : ", link not up in ");
	shim_put_dec(reads);
	say(bmsr >= 0 && (bmsr & BMSR_LINK) ? "\n" : " reads (going on)\n");
	if (!why)
		why = run_frames(d, mac, STAGE_PHY, bad);
	/* As it was; autonegotiation restarted if it was on. */
	uint16_t back = (uint16_t)((unsigned)was & ~BMCR_LOOPBACK);
	if (back & BMCR_ANENABLE)
		back |= BMCR_ANRESTART;
	int e = dwmac_mdio_write(d, phy, MII_BMCR, back);
	say_stage(STAGE_PHY);
	say_mdio_reg("BMCR written back ", e ? -1 : back);
	say_mdio_reg(", reads ", dwmac_mdio_read(d, phy, MII_BMCR));
	say("\n");
	if (e && !why)
		why = "MDIO did not answer (BMCR not restored)";
	return why;
}

static const char *err_name(int e)
{
	switch (e) {
	case -ENOMEM:
		return "no memory";
	case -EIO:
		return "the device did not answer (reset or MDIO)";
	case -ENODEV:
		return "no PHY answers on MDIO";
	case -EINVAL:
		return "memory above 4 GiB";
	default:
		return "error";
	}
}

static void say_counters(const struct dwmac_stats *st)
{
	say("weft: selftest eth: driver: ");
	shim_put_dec(st->tx_frames);
	say(" sent, ");
	shim_put_dec(st->rx_frames);
	say(" received, ");
	shim_put_dec(st->rx_errors);
	say(" bad, ");
	shim_put_dec(st->rx_missed);
	say(" missed, ");
	shim_put_dec(st->tx_errors);
	say(" send errors, ");
	shim_put_dec(st->tx_full);
	say(" refused (ring full)\n");
}

int dwmac_selftest(const struct dwmac_config *cfg)
{
	struct dwmac_config c = *cfg;
	c.poll = 1;
	struct dwmac *d;
	int src;
	say("weft: selftest eth: DWMAC at ");
	shim_put_hex(cfg->base);
	say(", ");
	shim_put_dec(DWMAC_SELFTEST_FRAMES);
	say(" frames through the rings in MAC loopback (configuration LM), then in PHY loopback "
	    "(BMCR bit 14)\n");
	int e = dwmac_open(&c, &d, &src);
	if (e) {
		selftest_regs(cfg->base);
		say("weft: selftest eth: FAIL: dwmac_open: ");
		say(err_name(e));
		say(" (");
		shim_put_dec((uint64_t)-e);
		say(")\n");
		return e;
	}
	struct dwmac_stats st;
	dwmac_stats(d, &st);
	unsigned phy = (unsigned)st.phy;
	const char *why[STAGES];
	unsigned bad[STAGES] = {0, 0};

	int on = shim_big_lock();
	wr(d, MAC_CONF, rd(d, MAC_CONF) | CONF_LM);
	shim_big_unlock(on);
	why[STAGE_MAC] = run_frames(d, cfg->mac, STAGE_MAC, &bad[STAGE_MAC]);
	on = shim_big_lock();
	wr(d, MAC_CONF, rd(d, MAC_CONF) & ~CONF_LM);
	shim_big_unlock(on);
	unsigned late = drain(d);
	say_stage(STAGE_MAC);
	say(why[STAGE_MAC] ? "FAIL" : "pass");
	if (late) {
		say(" (");
		shim_put_dec(late);
		say(" frames came back late, dropped)");
	}
	say("\n");

	why[STAGE_PHY] = phy_stage(d, cfg->mac, phy, &bad[STAGE_PHY]);
	say_stage(STAGE_PHY);
	say(why[STAGE_PHY] ? "FAIL\n" : "pass\n");

	on = shim_big_lock();
	unsigned tx_last = (d->tx_next + DWMAC_TX_DESCS - 1) % DWMAC_TX_DESCS;
	unsigned rx_last = (d->rx_next + DWMAC_RX_DESCS - 1) % DWMAC_RX_DESCS;
	shim_big_unlock(on);
	selftest_regs(d->base);
	selftest_desc("weft: selftest eth: last tx desc ", tx_last, tx_desc(d, tx_last));
	selftest_desc("\nweft: selftest eth: last rx desc ", rx_last, rx_desc(d, rx_last));
	say_hex(" (given back; its frame's status was ", d->rx_status);
	say(")\nweft: selftest eth: PHY at MDIO address ");
	shim_put_dec(phy);
	say_mdio_reg(": ID ", dwmac_mdio_read(d, phy, MII_PHYSID1));
	say_mdio_reg(" ", dwmac_mdio_read(d, phy, MII_PHYSID2));
	say_mdio_reg(", BMCR ", dwmac_mdio_read(d, phy, MII_BMCR));
	say_mdio_reg(", BMSR ", dwmac_mdio_read(d, phy, MII_BMSR));
	say_mdio_reg(", ANAR ", dwmac_mdio_read(d, phy, MII_ANAR));
	say_mdio_reg(", ANLPAR ", dwmac_mdio_read(d, phy, MII_ANLPAR));
	dwmac_link_poll(d);
	dwmac_stats(d, &st);
	say(st.link ? ", link up " : ", link down (no cable is fine)");
	if (st.link) {
		shim_put_dec((uint64_t)st.speed);
		say(st.full_duplex ? " Mb/s full duplex" : " Mb/s half duplex");
	}
	say("\n");
	say_counters(&st);
	dwmac_close(d);
	int failed = 0;
	for (unsigned s = 0; s < STAGES; s++) {
		if (!why[s])
			continue;
		failed = 1;
		say("weft: selftest eth: FAIL: ");
		say(stage_name[s]);
		say(": ");
		say(why[s]);
		if (bad[s]) {
			say(" (frame ");
			shim_put_dec(bad[s]);
			say(")");
		}
		say("\n");
	}
	if (failed)
		return -EIO;
	say("weft: selftest eth: pass\n");
	return 0;
}
