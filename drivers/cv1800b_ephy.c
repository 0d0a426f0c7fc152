/* SPDX-License-Identifier: MIT */
/* The CV1800B internal PHY's bring-up table (cv1800b_ephy.h). Each row is
 * one register access of the sequence the Milk-V Duo's own U-Boot runs
 * (milkv-duo/duo-buildroot-sdk: board_init's PHY ID, then the PHY driver's
 * init for the CV180X; docs/decisions/cv1800b-ephy-sequence.md says why
 * this one), in its order; the comments say what the vendor says it does. The APB block shows the PHY's MII
 * registers at offset 4 * register; register 0x1f (0x7c) selects the page
 * (page << 8) for the registers 0x10..0x1e (0x40..0x78). */
#include "cv1800b_ephy.h"

#include "driver.h"

/* clang-format off */
#define W(off, v) {EPHY_WRITE, EPHY_APB, (off), (v), 0}
#define PAGE(p) W(0x07c, (uint32_t)(p) << 8)

const struct cv1800b_ephy_step cv1800b_ephy_table[] = {
	/* What the Duo's U-Boot does at board_init (cv182xa_ephy_id_init). */
	W(0x804, 0x0001), /* the PHY's registers to the APB interface */
	W(0x800, 0x0900), /* release shutdown (0x800 bit 0 to 0) */
	W(0x800, 0x0904), /* release the digital reset: MII registers work */
	W(0x008, 0x0043), /* the PHY ID (registers 2 and 3: not paged) */
	W(0x00c, 0x5649),
	/* (U-Boot gives MDIO back to the MAC here, and its PHY driver takes
	 * it again first thing: both left out.) Then that driver's
	 * cv182xa_ephy_init, its CV180X branch. Analog: power-down off,
	 * enables on (page 5, register 0x10). */
	PAGE(5),
	W(0x040, 0x0c00),
	W(0x040, 0x0c7e),
	W(0x800, 0x0906), /* release the analog reset */
	PAGE(5),
	/* Trims from eFuse, or the vendor's defaults. */
	{EPHY_TRIM_TXITUNE, EPHY_APB, 0x064, 0x5a5a, 0xffff},
	{EPHY_TRIM_TXECHO, EPHY_APB, 0x054, 0x0000, 0xff00},
	{EPHY_TRIM_TXRXTERM, EPHY_APB, 0x058, 0x0bb0, 0x0ff0},
	/* 100BASE-TX: rise update, falling phase, double TX bias current. */
	W(0x05c, 0x0c10),
	W(0x068, 0x0003),
	W(0x054, 0x0000),
	/* MLT-3 positive phase codes: +0, then +I (page 16). */
	PAGE(16),
	W(0x068, 0x1000), W(0x06c, 0x3020), W(0x070, 0x5040), W(0x074, 0x7060),
	W(0x058, 0x1708), W(0x05c, 0x3827), W(0x060, 0x5748), W(0x064, 0x7867),
	/* MLT-3 negative phase codes: -0, then -I (page 17). */
	PAGE(17),
	W(0x040, 0x9080), W(0x044, 0xb0a0), W(0x048, 0xd0c0), W(0x04c, 0xf0e0),
	W(0x050, 0x9788), W(0x054, 0xb8a7), W(0x058, 0xd7c8), W(0x05c, 0xf8e7),
	/* Page 5: TX termination on (register 0x10 bit 0), receive common-mode
	 * voltage (register 0x13 |= 0x0820). */
	PAGE(5),
	{EPHY_SET_BITS, EPHY_APB, 0x040, 0x0001, 0},
	{EPHY_SET_BITS, EPHY_APB, 0x04c, 0x0820, 0},
	/* Link pulse (page 10). */
	PAGE(10),
	W(0x040, 0x3e00), W(0x044, 0x7864), W(0x048, 0x6470), W(0x04c, 0x5f62),
	W(0x050, 0x5a5a), W(0x054, 0x5458), W(0x058, 0xb23a), W(0x05c, 0x94a0),
	W(0x060, 0x9092), W(0x064, 0x8a8e), W(0x068, 0x8688), W(0x06c, 0x8484),
	W(0x070, 0x0082),
	/* TP idle (page 11). */
	PAGE(11),
	W(0x040, 0x5252), W(0x044, 0x5252), W(0x048, 0x4b52), W(0x04c, 0x3d47),
	W(0x050, 0xaa99), W(0x054, 0x989e), W(0x058, 0x9395), W(0x05c, 0x9091),
	W(0x060, 0x8e8f), W(0x064, 0x8d8e), W(0x068, 0x8c8c), W(0x06c, 0x8b8b),
	W(0x070, 0x008a),
	/* 10BASE-T data (pages 13 to 16). */
	PAGE(13),
	W(0x040, 0x1e0a), W(0x044, 0x3862), W(0x048, 0x1e62), W(0x04c, 0x2a08),
	W(0x050, 0x244c), W(0x054, 0x1a44), W(0x058, 0x061c),
	PAGE(14),
	W(0x040, 0x2d30), W(0x044, 0x3470), W(0x048, 0x0648), W(0x04c, 0x261c),
	W(0x050, 0x3160), W(0x054, 0x2d5e),
	PAGE(15),
	W(0x040, 0x2922), W(0x044, 0x366e), W(0x048, 0x0752), W(0x04c, 0x2556),
	W(0x050, 0x2348), W(0x054, 0x0c30),
	PAGE(16),
	W(0x040, 0x1e08), W(0x044, 0x3868), W(0x048, 0x1462), W(0x04c, 0x1a0e),
	W(0x050, 0x305e), W(0x054, 0x2f62),
	/* Link, speed and duplex out to the LED signals (page 1, 0x1a[11:8]);
	 * the pads themselves are left as the board's code set them. */
	PAGE(1),
	{EPHY_CLEAR_BITS, EPHY_APB, 0x068, 0, 0x0f00},
	/* Receive: AGC swing (page 19), low- and high-pass filters (page 18,
	 * the CV180X's). */
	PAGE(19),
	W(0x058, 0x0012),
	W(0x05c, 0x6848),
	PAGE(18),
	W(0x048, 0x0801), W(0x04c, 0x1717), W(0x05c, 0x0108),
	W(0x050, 0x3afc), W(0x054, 0x08d3), W(0x060, 0x00fb),
	PAGE(0),
	W(0x800, 0x090e), /* start autonegotiation */
	/* Full duplex (MII register 0 bit 8): the PHY comes out of reset at
	 * half duplex, the vendor says. */
	{EPHY_SET_BITS, EPHY_APB, 0x000, 0x0100, 0},
	W(0x804, 0x0000), /* MDIO back to the MAC */
};
/* clang-format on */
const unsigned cv1800b_ephy_table_len = sizeof cv1800b_ephy_table / sizeof cv1800b_ephy_table[0];

#define EFUSE_VALID 0x120
#define EFUSE_TRIM0 0x1020
#define EFUSE_TRIM1 0x1024
#define VALID_TXECHO (1u << 8)
#define VALID_TXITUNE (1u << 9)
#define VALID_TXRXTERM (1u << 11)

/* A trim's value from eFuse, in its register's bits, or -1 (none). */
static int64_t trim(const struct cv1800b_ephy_addrs *a, unsigned op)
{
	uint32_t valid = mmio_read32(a->efuse + EFUSE_VALID);
	switch (op) {
	case EPHY_TRIM_TXITUNE: {
		if (!(valid & VALID_TXITUNE))
			return -1;
		uint32_t e = mmio_read32(a->efuse + EFUSE_TRIM1);
		return ((e >> 24) & 0xff) | ((e >> 16) & 0xff) << 8;
	}
	case EPHY_TRIM_TXECHO: {
		if (!(valid & VALID_TXECHO))
			return -1;
		uint32_t e = mmio_read32(a->efuse + EFUSE_TRIM1);
		return ((e >> 8) & 0xff) << 8;
	}
	default: {
		if (!(valid & VALID_TXRXTERM))
			return -1;
		uint32_t e = mmio_read32(a->efuse + EFUSE_TRIM0);
		return ((e >> 28) & 0xf) << 4 | ((e >> 24) & 0xf) << 8;
	}
	}
}

void cv1800b_ephy_init(const struct cv1800b_ephy_addrs *a)
{
	for (unsigned i = 0; i < cv1800b_ephy_table_len; i++) {
		const struct cv1800b_ephy_step *s = &cv1800b_ephy_table[i];
		uintptr_t base = s->block == EPHY_PINMUX  ? a->pinmux
				 : s->block == EPHY_RTCIO ? a->rtcio
							  : a->ephy;
		uintptr_t r = base + s->off;
		switch (s->op) {
		case EPHY_WRITE:
			mmio_write32(r, s->val);
			break;
		case EPHY_SET_BITS:
			mmio_write32(r, mmio_read32(r) | s->val);
			break;
		case EPHY_CLEAR_BITS:
			mmio_write32(r, mmio_read32(r) & ~s->mask);
			break;
		default: {
			int64_t t = trim(a, s->op);
			if (t < 0)
				mmio_write32(r, s->val);
			else
				mmio_write32(r, (mmio_read32(r) & ~s->mask) | (uint32_t)t);
			break;
		}
		}
	}
}
