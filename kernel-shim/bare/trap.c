/* SPDX-License-Identifier: MIT */
/* What happens on a trap: the timer interrupt drives sleeps, deadlines and
 * preemption; the software interrupt (another hart's IPI) only ends an
 * idle wfi and is cleared; an external interrupt goes to the handler a driver registered
 * for its PLIC source, and a thread that handler woke runs at once; an unexpected interrupt ends the run with status 135;
 * a page fault on a lazy stack page maps it (demand.c); any other exception
 * is fault.c's. Never a silent hang. */
#include <errno.h>
#include <string.h>

#include "bare.h"
#include "plic.h"
#include "shim.h"

#define TRAP_STACK (16 * 1024)
#define EXIT_TRAP 135

static char trap_stack[TRAP_STACK] __attribute__((aligned(16))); /* the boot hart's */

void shim_trap_hart_init(void *trap_top)
{
	csr_write(sscratch, (uintptr_t)trap_top);
	csr_write(stvec, (uintptr_t)arch_trap_entry);
}

void shim_trap_init(void) { shim_trap_hart_init(trap_stack + TRAP_STACK); }

/* ---- External interrupts ------------------------------------------------ */
static struct {
	irq_handler fn;
	void *arg;
} handlers[BOARD_PLIC_NDEV + 1];

int shim_irq_register(unsigned irq, irq_handler fn, void *arg)
{
	if (irq == 0 || irq > BOARD_PLIC_NDEV || !fn)
		return -EINVAL;
	int on = shim_big_lock(), r = -EBUSY;
	if (!handlers[irq].fn) {
		handlers[irq].fn = fn;
		handlers[irq].arg = arg;
		plic_enable(irq, 1);
		r = 0;
	}
	shim_big_unlock(on);
	return r;
}

void shim_irq_unregister(unsigned irq)
{
	if (irq == 0 || irq > BOARD_PLIC_NDEV)
		return;
	int on = shim_big_lock();
	plic_disable(irq);
	handlers[irq].fn = NULL;
	handlers[irq].arg = NULL;
	shim_big_unlock(on);
}

/* Claim until the PLIC has nothing more for this context (the boot
 * hart's: the only one that takes external interrupts). A source with no
 * handler (one that firmware left enabled) is disabled, once, with a
 * message: it would otherwise interrupt forever. Its claim is completed
 * first, while it is still enabled: the PLIC specification lets a
 * completion for a source that is not enabled for the context be ignored,
 * which would leave that source's gateway claimed for good, so that it
 * never interrupted again, even for a driver that registers it later
 * (QEMU's PLIC takes the completion anyway; Linux's plic_irq_eoi enables
 * a disabled source around its completion for the same reason).
 * Bounded, so that the idle loop in thread.c looks at its threads between
 * rounds even while a device keeps interrupting. */
void shim_trap_external(void)
{
	int on = shim_big_lock(); /* the handlers' state is the drivers', under it */
	for (int n = 0; n < 64; n++) {
		uint32_t irq = plic_claim();
		if (irq == 0)
			break;
		if (irq <= BOARD_PLIC_NDEV && handlers[irq].fn) {
			handlers[irq].fn(handlers[irq].arg);
			plic_complete(irq);
		} else {
			plic_complete(irq);
			plic_disable(irq);
			shim_puts("weft: interrupt from PLIC source ");
			shim_put_dec(irq);
			shim_puts(" with no handler: disabled\n");
		}
	}
	shim_big_unlock(on);
}

/* Make the trap return into arch_preempt_resume on the thread's own stack,
 * carrying a copy of the frame so that it can later resume exactly here. */
static void preempt(struct trap_frame *f)
{
	uintptr_t sp = (f->x[2] - TRAP_FRAME_SIZE) & ~(uintptr_t)15;
	memcpy((void *)sp, f, sizeof *f);
	f->x[2] = sp;
	f->x[10] = sp;
	f->sepc = (uintptr_t)arch_preempt_resume;
	f->sstatus = (f->sstatus | SSTATUS_SPP) & ~SSTATUS_SPIE;
}

void shim_trap(struct trap_frame *f)
{
	uint64_t cause = f->scause;
	if (cause & SCAUSE_INTERRUPT) {
		if ((cause & 0xff) == IRQ_S_TIMER) {
			if (shim_thread_tick())
				preempt(f);
			return;
		}
		if ((cause & 0xff) == IRQ_S_SOFT) {
			csr_clear(sip, SIP_SSIP); /* a kick that found this hart awake */
			return;
		}
		if ((cause & 0xff) == IRQ_S_EXTERNAL) {
			shim_trap_external();
			if (shim_thread_irq_woke())
				preempt(f);
			return;
		}
		shim_puts("weft: unexpected interrupt ");
		shim_put_dec(cause & 0xff);
		shim_puts("\n");
		board_exit(EXIT_TRAP);
	}
	if (cause == EXC_LOAD_PAGE || cause == EXC_STORE_PAGE || cause == EXC_INST_PAGE) {
		int r = shim_demand_fault(f->stval, cause == EXC_INST_PAGE);
		if (r == 0)
			return; /* mapped: the instruction runs again */
		if (r == -ENOMEM)
			shim_trap_no_page(f); /* fault.c: does not return */
	}
	shim_trap_fault(f); /* fault.c: does not return */
}
