/* SPDX-License-Identifier: MIT */
/* The DWMAC's on-board self-test (dwmac.h, dwmac_selftest; WEFT_SELFTEST=eth
 * runs it on the Duo): the MAC's own loopback, bit 12 (LM) of the MAC
 * configuration (Synopsys DWMAC 3.x; Linux's dwmac1000.h GMAC_CONTROL_LM),
 * frames through the driver's own rings, each compared byte for byte, then
 * the registers and the last descriptors printed. */
#include "dwmac.h"

#include <errno.h>
#include <string.h>

#include "driver.h"
#include "dwmac_hw.h"

#define SELFTEST_POLLS 100000 /* dwmac_recv calls a frame may take to come back */

static void say(const char *what) { shim_puts(what); }
static void say_hex(const char *name, uint64_t v)
{
	shim_puts(name);
	shim_put_hex(v);
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
 * experimental EtherType, a payload numbered by k. */
static size_t selftest_frame(uint8_t *f, const uint8_t mac[6], unsigned k)
{
	static const size_t len[DWMAC_SELFTEST_FRAMES] = {60, FRAME_MAX, 777};
	memcpy(f, mac, 6);
	memcpy(f + 6, mac, 6);
	f[12] = 0x88;
	f[13] = 0xb5;
	for (size_t i = 14; i < len[k]; i++)
		f[i] = (uint8_t)(i * 13 + k * 101 + (i >> 8));
	return len[k];
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

int dwmac_selftest(const struct dwmac_config *cfg)
{
	struct dwmac_config c = *cfg;
	c.poll = 1;
	struct dwmac *d;
	int src;
	say("weft: selftest eth: DWMAC at ");
	shim_put_hex(cfg->base);
	say(", MAC loopback (configuration LM), ");
	shim_put_dec(DWMAC_SELFTEST_FRAMES);
	say(" frames through the rings\n");
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
	int on = shim_big_lock();
	wr(d, MAC_CONF, rd(d, MAC_CONF) | CONF_LM);
	shim_big_unlock(on);

	static uint8_t f[FRAME_MAX], got[BUF_SIZE];
	const char *why = NULL;
	unsigned k;
	size_t at = 0;
	for (k = 0; k < DWMAC_SELFTEST_FRAMES && !why; k++) {
		size_t len = selftest_frame(f, cfg->mac, k);
		struct shim_iov iov = {f, len};
		int r = dwmac_send(d, &iov, 1);
		for (unsigned n = 0; r == 0 && n < SELFTEST_POLLS; n++) {
			r = dwmac_recv(d, got, sizeof got);
			if (r == -EAGAIN)
				r = 0;
			else
				break;
		}
		say("weft: selftest eth: frame ");
		shim_put_dec(k + 1);
		say(" (");
		shim_put_dec(len);
		say(" bytes): ");
		if (r == 0 || r == -EAGAIN) {
			why = "a frame sent did not come back";
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
			for (at = 0; at < len && got[at] == f[at]; at++)
				;
			if (at < len) {
				why = "a frame came back different";
				say("byte ");
				shim_put_dec(at);
				say_hex(" is ", got[at]);
				say_hex(", sent ", f[at]);
				say(", ");
			}
		}
		say(why ? "bad\n" : "ok\n");
	}

	on = shim_big_lock();
	wr(d, MAC_CONF, rd(d, MAC_CONF) & ~CONF_LM);
	unsigned tx_last = (d->tx_next + DWMAC_TX_DESCS - 1) % DWMAC_TX_DESCS;
	unsigned rx_last = (d->rx_next + DWMAC_RX_DESCS - 1) % DWMAC_RX_DESCS;
	shim_big_unlock(on);
	selftest_regs(d->base);
	selftest_desc("weft: selftest eth: last tx desc ", tx_last, tx_desc(d, tx_last));
	selftest_desc("\nweft: selftest eth: last rx desc ", rx_last, rx_desc(d, rx_last));
	say_hex(" (given back; its frame's status was ", d->rx_status);
	say(")");
	struct dwmac_stats st;
	dwmac_stats(d, &st);
	unsigned phy = (unsigned)st.phy;
	int id1 = dwmac_mdio_read(d, phy, MII_PHYSID1), id2 = dwmac_mdio_read(d, phy, MII_PHYSID2);
	int bmcr = dwmac_mdio_read(d, phy, MII_BMCR), bmsr = dwmac_mdio_read(d, phy, MII_BMSR);
	say("\nweft: selftest eth: PHY at MDIO address ");
	shim_put_dec(phy);
	say_hex(": ID ", (uint32_t)id1);
	say_hex(" ", (uint32_t)id2);
	say_hex(", BMCR ", (uint32_t)bmcr);
	say_hex(", BMSR ", (uint32_t)bmsr);
	say(st.link ? ", link up " : ", link down (no cable is fine)");
	if (st.link) {
		shim_put_dec((uint64_t)st.speed);
		say(st.full_duplex ? " Mb/s full duplex" : " Mb/s half duplex");
	}
	say("\nweft: selftest eth: driver: ");
	shim_put_dec(st.tx_frames);
	say(" sent, ");
	shim_put_dec(st.rx_frames);
	say(" received, ");
	shim_put_dec(st.rx_errors);
	say(" bad, ");
	shim_put_dec(st.rx_missed);
	say(" missed, ");
	shim_put_dec(st.tx_errors);
	say(" send errors, ");
	shim_put_dec(st.tx_full);
	say(" refused (ring full)\n");
	dwmac_close(d);
	if (why) {
		say("weft: selftest eth: FAIL: ");
		say(why);
		say(" (frame ");
		shim_put_dec(k);
		say(")\n");
		return -EIO;
	}
	say("weft: selftest eth: pass\n");
	return 0;
}
