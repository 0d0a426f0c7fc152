/* SPDX-License-Identifier: MIT */
/* milkv-duo: the C906's page attributes, and ending the run (there is no test
 * finisher: print the status, ask OpenSBI to shut down, else wait). */
#include <stdint.h>

#include "bare.h"

/* T-Head's sxstatus (CSR 0x5c0): bit 21, MAEE, turns on the extended
 * attribute bits 63..59 of a page-table entry: SO, C, B, SH, Sec. */
#define SXSTATUS_MAEE (1ull << 21)
#define PTE_THEAD_SO (1ull << 63)
#define PTE_THEAD_C (1ull << 62)
#define PTE_THEAD_B (1ull << 61)
#define PTE_THEAD_SH (1ull << 60)

_Noreturn void board_exit(int status)
{
	bare_puts("weft: exit status ");
	bare_put_dec((uint64_t)(unsigned)status);
	bare_puts("\n");
	sbi_system_reset(SBI_SRST_SHUTDOWN, status ? SBI_SRST_REASON_FAILURE : SBI_SRST_REASON_NONE);
	for (;;)
		wfi();
}

uint64_t board_pte_bits(int mmio)
{
	uint64_t sx;
	__asm__ volatile("csrr %0, 0x5c0" : "=r"(sx));
	if (!(sx & SXSTATUS_MAEE))
		return 0;
	/* RAM cacheable, bufferable, shareable; devices strongly ordered. */
	return mmio ? PTE_THEAD_SO | PTE_THEAD_SH : PTE_THEAD_C | PTE_THEAD_B | PTE_THEAD_SH;
}
