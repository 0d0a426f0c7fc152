/* SPDX-License-Identifier: MIT */
/* A first boot that explains itself (bare metal): the boot line and the MMU
 * line before main; a trap taken on the early trap vector, which start.S
 * installs before anything else, reported with its cause and address; a
 * vector instruction, with the vector unit off (sstatus.VS), reported by
 * name. Each ends the machine or needs a boot of its own, so
 * tests/test_boot.bare.sh boots this image once per case (WT_CASE=<case>)
 * and checks the console and the exit status. Linux: every test skips. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#if !WT_LINUX
#include "bare.h"

/* The boot's two lines came before main: the script reads them. */
static void lines(void) { printf("test_boot: main reached\n"); }

/* vsetvli t0, zero, e8, m1, ta, ma: with the vector unit off, an illegal
 * instruction; with it on (as OpenSBI hands it over on a CPU with V),
 * it runs and the case prints that it did. */
static void vector(void)
{
	__asm__ volatile(".4byte 0x0c0072d7" ::: "t0", "memory");
	printf("test_boot: vector instruction ran\n");
}

/* The early trap vector, put back (interrupts off, so that only the
 * fault reaches it), then a load from an address nothing maps: between
 * the devices' gigapage and RAM. */
#define UNMAPPED (BOARD_MMIO_BASE + BOARD_MMIO_SIZE + 0x123)
_Static_assert(UNMAPPED < BOARD_RAM_BASE, "an address between devices and RAM");

static void early(void)
{
	irq_save();
	csr_write(stvec, (uintptr_t)arch_early_trap);
	printf("test_boot: load from %#lx\n", (unsigned long)UNMAPPED);
	fflush(stdout);
	(void)*(volatile uint32_t *)UNMAPPED;
	printf("test_boot: the load did not trap\n");
}

static const struct {
	const char *name;
	void (*body)(void);
} cases[] = {
	{"lines", lines},
	{"vector", vector},
	{"early", early},
};

int main(void)
{
	const char *c = getenv("WT_CASE");
	for (size_t i = 0; c && i < sizeof cases / sizeof cases[0]; i++) {
		if (strcmp(c, cases[i].name) == 0) {
			cases[i].body();
			return 0;
		}
	}
	printf("test_boot: boot with WT_CASE=<case>; tests/test_boot.bare.sh does\n");
	return 2;
}
#else
int main(void)
{
	/* The cases of tests/test_boot.bare.sh, by name. */
	const struct CMUnitTest tests[] = {
		{.name = "boot_lines"},
		{.name = "boot_early_trap"},
		{.name = "boot_vector"},
	};
	return wt_skip_group("boot", tests, sizeof tests / sizeof tests[0],
			     "bare metal only (the boot lines, the early trap vector, sstatus.VS)");
}
#endif
