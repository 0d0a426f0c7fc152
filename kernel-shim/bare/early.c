/* SPDX-License-Identifier: MIT */
/* What a first boot says before the shim's own console and trap handler
 * are there, so that a board that stops between the bootloader's
 * "Starting kernel ..." and main says where: the boot line as shim_boot
 * begins (the hart, the firmware's SBI, the device tree's address, the
 * CPU's status as the firmware left it, and on a T-Head core th.sxstatus,
 * whose MAEE bit decides what the page-table entries' top bits mean), the
 * MMU line once satp is set, and the report of a trap taken before
 * shim_trap_init installs the shim's handler (start.S points stvec at
 * arch_early_trap first). They write the board's console directly: no
 * lock, no TLS, no stdio; one hart runs this early. */
#include "bare.h"

#define EXIT_TRAP 135

uint64_t shim_boot_mvendorid;

static void out(char c)
{
	if (c == '\n')
		board_console_putc('\r');
	board_console_putc(c);
}

static void say(const char *s)
{
	while (*s)
		out(*s++);
}

static void say_num(uint64_t v, unsigned base)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n)
		out(tmp[--n]);
}

static void say_hex(uint64_t v)
{
	say("0x");
	say_num(v, 16);
}

static void say_dec(uint64_t v) { say_num(v, 10); }

void shim_boot_line(unsigned long hartid, const void *dtb)
{
	say("weft: boot: hart ");
	say_dec(hartid);
	struct sbiret spec = sbi_base(SBI_BASE_SPEC_VERSION);
	if (spec.error) {
		say(", SBI 0.1 (no base extension)");
	} else {
		uint64_t v = (uint64_t)spec.value;
		say(", SBI ");
		say_dec((v >> 24) & 0x7f);
		say(".");
		say_dec(v & 0xffffff);
		long id = sbi_base(SBI_BASE_IMPL_ID).value;
		uint64_t ver = (uint64_t)sbi_base(SBI_BASE_IMPL_VERSION).value;
		if (id == SBI_IMPL_OPENSBI) {
			say(" (OpenSBI ");
			say_dec(ver >> 16);
			say(".");
			say_dec(ver & 0xffff);
		} else {
			say(" (implementation ");
			say_dec((uint64_t)id);
			say(" version ");
			say_hex(ver);
		}
		say(")");
		shim_boot_mvendorid = (uint64_t)sbi_base(SBI_BASE_MVENDORID).value;
	}
	say(", device tree ");
	say_hex((uintptr_t)dtb);
	say(", sstatus ");
	say_hex(arch_boot_sstatus);
	if (shim_boot_mvendorid == MVENDORID_THEAD) {
		uint64_t sx = th_sxstatus_read();
		say(", th.sxstatus ");
		say_hex(sx);
		say(sx & TH_SXSTATUS_MAEE ? " (MAEE on)" : " (MAEE off)");
	} else {
		say(", mvendorid ");
		say_hex(shim_boot_mvendorid);
		say(": no th.sxstatus");
	}
	say("\n");
}

void shim_mmu_line(uintptr_t ram_base, uintptr_t ram_end, int from_tree)
{
	uint64_t satp = csr_read(satp);
	say("weft: mmu: satp ");
	say_hex(satp);
	/* A mode the hart does not have leaves satp as it was (0). */
	say(satp >> 60 == 8 ? " (Sv39 on)" : " (translation off: Sv39 refused)");
	say(", RAM ");
	say_hex(ram_base);
	say("..");
	say_hex(ram_end);
	say(from_tree ? " (device tree)" : " (board.h: no usable device tree)");
	say(", page bits RAM ");
	say_hex(board_pte_bits(0));
	say(", devices ");
	say_hex(board_pte_bits(1));
	say("\n");
}

/* Set (in .data: the bss is not cleared yet, maybe) until a trap is
 * reported: a trap taken while reporting one stops silently. */
static volatile int calm = 1;

_Noreturn void shim_early_trap(struct trap_frame *f)
{
	if (!calm)
		for (;;)
			wfi();
	calm = 0;
	say("weft: early trap (before the shim's trap handler): ");
	if (f->scause & SCAUSE_INTERRUPT) {
		say("interrupt ");
		say_dec(f->scause & 0xff);
	} else {
		say("cause ");
		say_dec(f->scause);
		say(" (");
		say(shim_trap_cause_name(f->scause));
		say(")");
	}
	say(", sepc ");
	say_hex(f->sepc);
	say(", stval ");
	say_hex(f->stval);
	say(", sp ");
	say_hex(f->x[2]);
	say(", ra ");
	say_hex(f->x[1]);
	say("\n");
	board_exit(EXIT_TRAP);
}
