/* SPDX-License-Identifier: MIT */
/* The template board's hooks (board/board_contract.h): the end of a run
 * through the firmware's system reset, and no extra page attributes. The
 * console is a 16550-compatible UART that board.mk names (BOARD_CONSOLE);
 * a board with another UART leaves BOARD_CONSOLE out and writes the four
 * console hooks here. A port keeps what fits its board and replaces the
 * rest (qemu-virt's board.c ends through QEMU's test device, the Duo's
 * sets the C906's page attributes). */
#include <stdint.h>

#include "arch_bare.h"
#include "board_contract.h"

/* SBI SRST: firmware without a reset device returns, and the hart waits. */
_Noreturn void board_exit(int status)
{
	sbi_system_reset(SBI_SRST_SHUTDOWN,
			 status ? SBI_SRST_REASON_FAILURE : SBI_SRST_REASON_NONE);
	for (;;)
		wfi();
}

/* A standard RISC-V core needs no bits beyond the Sv39 ones. */
uint64_t board_pte_bits(int mmio)
{
	(void)mmio;
	return 0;
}
