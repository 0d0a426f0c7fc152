/* SPDX-License-Identifier: MIT */
/* The RISC-V Platform-Level Interrupt Controller, as seen from one context
 * (the boot hart's S-mode). The shim's boot.c gives it the board's
 * BOARD_PLIC_BASE, BOARD_PLIC_NDEV and BOARD_PLIC_CONTEXT(hart). Interrupts
 * off around every call (one hart: that is the lock). */
#ifndef WEFT_PLIC_H
#define WEFT_PLIC_H

#include <stdint.h>

/* Take context (the S-mode one of a hart) of the PLIC at base, whose
 * sources are 1..ndev: every source disabled for it, threshold 0 (any
 * priority above 0 interrupts). */
void plic_init(uintptr_t base, unsigned ndev, unsigned long context);

/* Let source irq (1..ndev) interrupt this context, at priority
 * 1..7. Disabling leaves its priority alone: other contexts may use it. */
void plic_enable(unsigned irq, unsigned priority);
void plic_disable(unsigned irq);

/* The highest-priority pending source, now in service (0: none), and the
 * end of its service: it may interrupt again. */
uint32_t plic_claim(void);
void plic_complete(uint32_t irq);

#endif
