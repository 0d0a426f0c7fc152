/* SPDX-License-Identifier: MIT */
/* From start.S to main(): the console and the boot line, TLS, traps, the
 * device tree, memory (heap, pages, Sv39) and the MMU line, the command
 * line as environment, the interrupt controller and the console's input,
 * then main() on a guarded stack of its own, and exit() with what it
 * returns.
 *
 * RAM after boot, low to high: OpenSBI | the image | malloc's heap, growing
 * up | pages for page tables and stacks, taken from the top down: one
 * budget, shared (page.c). */
#define _DEFAULT_SOURCE /* setenv */
#include <picolibc.h>
#include <picotls.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
#include "bare.h"
#include "plic.h"
#include "shim.h"

#define MAIN_STACK (256 * 1024)

extern char __tls_base[], __image_end[];
int main(int argc, char **argv);

static void *boot_sp;

/* The command line's NAME=value words become the environment (WEFT_WORKERS=2
 * on -append, or in U-Boot's bootargs), its other words main's argv[1..]
 * (shim_bootargs_split: after a "--", every word is an argument). */
static char bootargs[512];
static struct bootwords bootwords;

static void env_from_bootargs(void)
{
	shim_bootargs_split(bootargs, &bootwords);
	for (int i = 0; i < bootwords.nenv; i++)
		setenv(bootwords.env[i].name, bootwords.env[i].value, 1);
}

/* WEFT_BOOT_TIME=1 on the command line: say when the firmware handed over
 * (_start's first instruction) and when main is called, on the guest's time
 * counter, which starts at the machine's reset. */
static void boot_time_report(uint64_t at_main)
{
	const char *s = getenv("WEFT_BOOT_TIME");
	if (!s || !*s || !strcmp(s, "0"))
		return;
	uint64_t hz = BOARD_TIMEBASE_HZ;
	shim_puts("weft: boot time: entry ");
	shim_put_dec(arch_boot_entry * 1000000 / hz);
	shim_puts(" us, main ");
	shim_put_dec(at_main * 1000000 / hz);
	shim_puts(" us, entry to main ");
	shim_put_dec((at_main - arch_boot_entry) * 1000000 / hz);
	shim_puts(" us (guest clock from reset, ");
	shim_put_dec(hz);
	shim_puts(" Hz)\n");
}

static void main_entry(void *arg)
{
	(void)arg;
	static char name[] = "weft";
	static char *argv[1 + BOOTARGS_MAX + 1];
	int argc = 0;
	argv[argc++] = name;
	for (int i = 0; i < bootwords.nargs; i++)
		argv[argc++] = bootwords.args[i];
	argv[argc] = NULL;
	boot_time_report(rdtime());
	csr_set(sstatus, SSTATUS_SIE);
	const char *selftest = getenv("WEFT_SELFTEST");
	if (selftest && *selftest)
		exit(shim_selftest(selftest) ? 1 : 0); /* instead of main */
	exit(main(argc, argv));
}

void shim_boot(unsigned long hartid, const void *dtb)
{
	/* The console first, and the boot line (early.c): a board that stops
	 * after this has said who it is. The vector unit off, T-Head's too
	 * once mvendorid says it is one (start.S did the ratified field). */
	board_console_init();
	shim_boot_line(hartid, dtb);
	vector_off(shim_boot_mvendorid);
	/* The running thread names its hart (thread.c), through its TLS:
	 * before anything takes the shim lock. Until shim_trap_init, a trap is
	 * start.S's early vector's (early.c). */
	_init_tls(__tls_base);
	_set_tls(__tls_base);
	shim_hart_boot_init(hartid);
	shim_thread_init(__tls_base);
	shim_trap_init();

	struct fdt_info fdt;
	uintptr_t ram_end = BOARD_RAM_BASE + BOARD_RAM_SIZE_DEFAULT;
	int from_tree = 0;
	/* Only a tree in RAM is read: a bootloader may pass anything in a1. */
	if ((uintptr_t)dtb < BOARD_RAM_BASE || (uintptr_t)dtb >= BOARD_RAM_END_MAX)
		dtb = NULL;
	if (shim_fdt_parse(dtb, &fdt) == 0 && fdt.ram_size && fdt.ram_base == BOARD_RAM_BASE) {
		ram_end = (uintptr_t)(fdt.ram_base + fdt.ram_size);
		from_tree = 1;
	}
	/* The device tree lies in RAM the page allocator is about to take. */
	if (fdt.bootargs)
		strncpy(bootargs, fdt.bootargs, sizeof bootargs - 1);
	if (ram_end > BOARD_RAM_END_MAX)
		ram_end = BOARD_RAM_END_MAX;
	uintptr_t free_start = (uintptr_t)__image_end;
	shim_heap_init(free_start, ram_end);
	shim_page_init(free_start, ram_end);
	shim_vm_init(BOARD_RAM_BASE, ram_end);
	shim_mmu_line(BOARD_RAM_BASE, ram_end, from_tree);
	env_from_bootargs();

	/* Device interrupts: every PLIC source off for this hart's S-mode
	 * until a driver registers a handler (trap.c). They stay with this
	 * hart; the others take their timer and the kick from an idle wfi
	 * (hart.c). */
	plic_init(BOARD_PLIC_BASE, BOARD_PLIC_NDEV, BOARD_PLIC_CONTEXT(hartid));
	csr_set(sie, SIE_STIE | SIE_SEIE | SIE_SSIE);
	shim_clock_set_timer(-1);
	shim_tty_init(); /* the console's input: I/O source 0 */
	if (shim_thread_idle_new(&shim_harts[0], 1) != 0) {
		shim_puts("weft: no memory for the idle context\n");
		_exit(1);
	}
	shim_harts_start();

	struct shim_stack st;
	if (shim_stack_alloc(MAIN_STACK, &st) != 0) {
		shim_puts("weft: no memory for the main stack\n");
		_exit(1);
	}
	void *sp = arch_frame_init((char *)st.base + st.size, main_entry, NULL);
	arch_switch(&boot_sp, sp);
	/* Not reached. _exit (libc.c), not board_exit: this reference links
	 * libc.c into every image, so picolibc's exit() and abort() find their
	 * _exit, getpid and kill even in a program that uses nothing of weft's
	 * (the linker reads libweft.a before libc). */
	_exit(1);
}
