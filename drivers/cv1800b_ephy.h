/* SPDX-License-Identifier: MIT */
/* The CV1800B's internal 10/100 Ethernet PHY: its bring-up through its APB
 * register block, before MDIO is handed to the MAC (drivers/dwmac.c). The
 * sequence is the one the Milk-V Duo's own U-Boot runs (the Duo SDK's,
 * for the CV180X; docs/decisions/cv1800b-ephy-sequence.md, and
 * docs/boards/cv1800b-ethernet.md for the sources): the APB interface
 * selected, shutdown and digital reset released, the PHY ID, the analog
 * part enabled, three trims from eFuse (or the vendor's defaults when
 * eFuse has none), the 100BASE-TX MLT-3 tables, TX termination and receive
 * common-mode voltage, the link pulse, idle and 10BASE-T tables, the LED
 * signals, the receive filters, autonegotiation started, full duplex, MDIO
 * handed back. Kept as a table, so that a test can compare it with the
 * vendor's sequence, step by step. */
#ifndef WEFT_CV1800B_EPHY_H
#define WEFT_CV1800B_EPHY_H

#include <stdint.h>

/* Where the blocks it touches are (the CV1800B's: 0x03009000, 0x03050000,
 * 0x03001000, 0x05027000). */
struct cv1800b_ephy_addrs {
	uintptr_t ephy;  /* the PHY's APB registers (page select at 0x7c) */
	uintptr_t efuse; /* eFuse: valid bits at 0x120, trims at 0x1020, 0x1024 */
	/* LED pads (function select 0xe0, 0xe4; PHY select 0xb0, 0xb4): rows
	 * of blocks EPHY_PINMUX and EPHY_RTCIO write there. The Duo's table
	 * has none: its U-Boot leaves the pads to board code, and the Duo's
	 * gives SD1_CLK and SD1_CMD, the pads RT-Thread's rows hand the PHY,
	 * to SPI2 on the header. */
	uintptr_t pinmux;
	uintptr_t rtcio;
};

enum cv1800b_ephy_block { EPHY_APB, EPHY_PINMUX, EPHY_RTCIO };

enum cv1800b_ephy_op {
	EPHY_WRITE,      /* write val */
	EPHY_SET_BITS,   /* read, or val in, write back */
	EPHY_CLEAR_BITS, /* read, clear mask, write back */
	/* A trim: the eFuse's value when its valid bit is set, written into
	 * mask's bits of what the register reads; else val, written whole. */
	EPHY_TRIM_TXITUNE,  /* 0x064[15:0] <- eFuse 0x1024 bytes 3 and 2 */
	EPHY_TRIM_TXECHO,   /* 0x054[15:8] <- eFuse 0x1024 byte 1 */
	EPHY_TRIM_TXRXTERM, /* 0x058[11:4] <- eFuse 0x1020 nibbles 6 and 7 */
};

struct cv1800b_ephy_step {
	uint8_t op;    /* enum cv1800b_ephy_op */
	uint8_t block; /* enum cv1800b_ephy_block */
	uint16_t off;  /* register offset in the block */
	uint32_t val;
	uint32_t mask;
};

extern const struct cv1800b_ephy_step cv1800b_ephy_table[];
extern const unsigned cv1800b_ephy_table_len;

/* Run the table. Any thread; nothing else may touch these blocks meanwhile.
 * After it, the PHY answers on MDIO and autonegotiates. */
void cv1800b_ephy_init(const struct cv1800b_ephy_addrs *a);

#endif
