/* SPDX-License-Identifier: MIT */
/* Faults on bare metal (the counterpart of kernel-shim/linux/fault.c): a
 * page fault in a fiber's guard names the fiber and ends the run (as
 * abort() would, status 134), and so does a stack page that found no memory
 * when first touched (demand.c); any other exception prints its cause, sepc
 * and stval and ends the run with status 135, a vector instruction (which
 * traps as illegal: the vector unit is off) named first as such. It runs
 * on the hart's trap stack (trap.c). */
#include "bare.h"
#include "shim.h"

#define EXIT_OVERFLOW 134
#define EXIT_TRAP 135

static shim_fault_namer namer;

int shim_fault_init(shim_fault_namer n)
{
	namer = n;
	return 0;
}

/* The trap stack is the hart's; threads need nothing of their own. */
int shim_fault_thread_init(void) { return 0; }
void shim_fault_thread_fini(void) {}

const char *shim_trap_cause_name(uint64_t c)
{
	static const char *const names[] = {"instruction address misaligned",
					    "instruction access fault",
					    "illegal instruction",
					    "breakpoint",
					    "load address misaligned",
					    "load access fault",
					    "store address misaligned",
					    "store access fault",
					    "ecall from U-mode",
					    "ecall from S-mode",
					    "reserved",
					    "ecall from M-mode",
					    "instruction page fault",
					    "load page fault",
					    "reserved",
					    "store page fault"};
	return c < sizeof names / sizeof names[0] ? names[c] : "unknown";
}

/* Out of memory inside a stack: the fiber cannot go on (its next frame has
 * nowhere to go), and ending it alone would need its stack. So, as for an
 * overflow: say so, name the fiber, stop. */
_Noreturn void shim_trap_no_page(struct trap_frame *f)
{
	shim_console_flush(); /* what the thread printed before, first */
	shim_puts("weft: out of memory: no page for the stack at ");
	shim_put_hex(f->stval);
	shim_puts(" (sepc ");
	shim_put_hex(f->sepc);
	shim_puts(")\n");
	if (namer) {
		char buf[512];
		size_t n = namer(f->stval, buf, sizeof buf);
		if (n)
			shim_console_write(buf, n);
	}
	board_exit(EXIT_OVERFLOW);
}

extern char __image_start[], __image_end[];

/* The instruction that trapped as illegal: stval holds it where the CPU
 * (or the firmware, which passes the trap on) puts it there, else it is
 * read at sepc if that lies in the image. 0 if neither. */
static uint32_t illegal_insn(const struct trap_frame *f)
{
	if ((f->stval & 3) == 3)
		return (uint32_t)f->stval;
	if (f->stval == 0 && f->sepc >= (uintptr_t)__image_start &&
	    f->sepc + 4 <= (uintptr_t)__image_end && !(f->sepc & 1)) {
		const volatile uint16_t *p = (const volatile uint16_t *)(uintptr_t)f->sepc;
		return (uint32_t)p[0] | (uint32_t)p[1] << 16;
	}
	return 0;
}

/* A vector instruction: weft keeps the vector unit off (start.S,
 * vector_off), so it traps here; say so by name. */
static void vector_report(const struct trap_frame *f)
{
	uint32_t insn = illegal_insn(f);
	if ((insn & 3) != 3 || !insn_is_vector(insn))
		return;
	shim_puts("weft: vector instruction ");
	shim_put_hex(insn);
	shim_puts(" at sepc ");
	shim_put_hex(f->sepc);
	shim_puts(": weft runs with the vector unit off (sstatus.VS) and does not save vector "
		  "registers across a thread switch, so code built for vector instructions "
		  "cannot run on it (docs/decisions/vector-state.md)\n");
}

_Noreturn void shim_trap_fault(struct trap_frame *f)
{
	uint64_t cause = f->scause;
	shim_console_flush(); /* what the thread printed before, first */
	/* Only a fault on an entry that is none can be a guard's: one inside a
	 * stack (lazy or mapped) is something else, and the namer, which also
	 * names addresses inside a stack for shim_trap_no_page, is not asked. */
	if ((cause == EXC_LOAD_PAGE || cause == EXC_STORE_PAGE || cause == EXC_INST_PAGE) &&
	    namer && !shim_vm_mapped(f->stval) && !shim_vm_lazy(f->stval)) {
		char buf[512];
		size_t n = namer(f->stval, buf, sizeof buf);
		if (n) {
			shim_console_write(buf, n);
			board_exit(EXIT_OVERFLOW);
		}
	}
	if (cause == EXC_ILLEGAL)
		vector_report(f);
	shim_puts("weft: unexpected trap: cause ");
	shim_put_dec(cause);
	shim_puts(" (");
	shim_puts(shim_trap_cause_name(cause));
	shim_puts("), sepc ");
	shim_put_hex(f->sepc);
	shim_puts(", stval ");
	shim_put_hex(f->stval);
	shim_puts(", sp ");
	shim_put_hex(f->x[2]);
	shim_puts(", ra ");
	shim_put_hex(f->x[1]);
	shim_puts("\n");
	board_exit(EXIT_TRAP);
}
