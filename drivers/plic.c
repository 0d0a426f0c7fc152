/* SPDX-License-Identifier: MIT */
/* The PLIC, by the register map of the RISC-V PLIC specification: a 32-bit
 * priority per source at 4 * source; per context, enable bits at
 * 0x2000 + 0x80 * context, and the threshold and claim/complete registers
 * at 0x200000 + 0x1000 * context (+0 and +4). */
#include "plic.h"

#define PRIORITY(irq) ((volatile uint32_t *)(plic_base + 4 * (uintptr_t)(irq)))
#define ENABLE(ctx, word)                                                     \
	((volatile uint32_t *)(plic_base + 0x2000 + 0x80 * (uintptr_t)(ctx) + \
			       4 * (uintptr_t)(word)))
#define THRESHOLD(ctx) ((volatile uint32_t *)(plic_base + 0x200000 + 0x1000 * (uintptr_t)(ctx)))
#define CLAIM(ctx) ((volatile uint32_t *)(plic_base + 0x200004 + 0x1000 * (uintptr_t)(ctx)))

static uintptr_t plic_base;
static unsigned plic_ndev;
static unsigned long context;

void plic_init(uintptr_t base, unsigned ndev, unsigned long ctx)
{
	plic_base = base;
	plic_ndev = ndev;
	context = ctx;
	for (unsigned w = 0; w <= plic_ndev / 32; w++)
		*ENABLE(context, w) = 0;
	*THRESHOLD(context) = 0;
}

void plic_enable(unsigned irq, unsigned priority)
{
	if (irq == 0 || irq > plic_ndev)
		return;
	*PRIORITY(irq) = priority ? priority : 1;
	*ENABLE(context, irq / 32) |= 1u << (irq % 32);
}

void plic_disable(unsigned irq)
{
	if (irq == 0 || irq > plic_ndev)
		return;
	*ENABLE(context, irq / 32) &= ~(1u << (irq % 32));
}

uint32_t plic_claim(void) { return *CLAIM(context); }

void plic_complete(uint32_t irq) { *CLAIM(context) = irq; }
