/* SPDX-License-Identifier: MIT */
/* Several harts (docs/decisions/bare-smp.md). The boot hart is shim_harts[0].
 * At boot it asks SBI HSM to start every other hart id below
 * BOARD_HARTS_MAX (or up to WEFT_HARTS harts in all), waiting for one
 * that the firmware sent into _start beside it to stop itself there
 * first; each one that starts gets a record here, a boot stack
 * that becomes its idle context, a trap stack, and runs shim_hart_boot:
 * the same page tables, its own trap vector and timer, then threads.
 * External interrupts stay with the boot hart (its PLIC context alone is
 * set up); a secondary hart takes its timer and the IPI that wakes it
 * from wfi (sbi_send_ipi). Page-table changes reach the other harts'
 * TLBs through SBI RFENCE (shim_hart_fence_others). */
#include <stdatomic.h>
#include <stdlib.h>

#include "arch.h"
#include "bare.h"

#define HART_STACK (16 * 1024) /* a secondary's boot stack, then its idle context's */
#define TRAP_STACK (16 * 1024)

struct hart shim_harts[BOARD_HARTS_MAX];
unsigned shim_hart_count = 1;
/* SBI hart ids of the harts that run with translation on: the ones a
 * page-table change must reach. */
static _Atomic unsigned long translating;

void shim_hart_boot_init(unsigned long hartid)
{
	shim_harts[0].index = 0;
	shim_harts[0].hartid = hartid;
}

void shim_hart_kick(struct hart *h) { sbi_send_ipi(1ul << h->hartid, 0); }

void shim_hart_fence_others(uintptr_t va, size_t size)
{
	unsigned long mask = atomic_load_explicit(&translating, memory_order_acquire) &
			     ~(1ul << shim_hart_self()->hartid);
	if (mask)
		sbi_remote_sfence_vma(mask, 0, va, size);
}

void shim_hart_boot(unsigned long hartid, void *opaque)
{
	struct hart *h = opaque;
	(void)hartid;
	vector_off(shim_boot_mvendorid); /* T-Head's field too (start.S did the ratified one) */
	shim_vm_hart_init();
	shim_trap_hart_init(h->trap_top);
	atomic_fetch_or_explicit(&translating, 1ul << h->hartid, memory_order_release);
	csr_set(sie, SIE_STIE | SIE_SSIE);
	shim_clock_set_timer(-1);
	shim_thread_idle_run(h);
}

/* Give hart h what it boots with, once (a record whose hart did not start
 * is used for the next); 0 or -1. */
static int prepare(struct hart *h)
{
	if (h->boot_sp)
		return 0;
	char *stack = malloc(HART_STACK), *trap = malloc(TRAP_STACK);
	if (!stack || !trap || shim_thread_idle_new(h, 0) != 0) {
		free(stack);
		free(trap);
		return -1;
	}
	h->boot_sp = stack + HART_STACK;
	h->trap_top = trap + TRAP_STACK;
	return 0;
}

/* Hart id's HSM status, once it is no longer on its way in or out: a hart
 * the firmware sent into _start beside the boot hart stops itself there
 * (start.S), and is waited for here, a second at most. -1: no such hart. */
static long settled_status(unsigned long id)
{
	uint64_t until = rdtime() + BOARD_TIMEBASE_HZ;
	for (;;) {
		struct sbiret st = sbi_hart_status(id);
		if (st.error)
			return -1;
		if (st.value != SBI_HSM_STARTED && st.value != SBI_HSM_START_PENDING &&
		    st.value != SBI_HSM_STOP_PENDING)
			return st.value;
		if (rdtime() > until)
			return st.value;
		arch_relax();
	}
}

/* WEFT_HARTS=N on the command line: run on N harts at most (1: the boot
 * hart alone); unset, empty, 0 or not a number: every hart there is. */
static unsigned harts_wanted(void)
{
	const char *s = getenv("WEFT_HARTS");
	char *end;
	if (!s || !*s)
		return BOARD_HARTS_MAX;
	unsigned long n = strtoul(s, &end, 10);
	if (*end || n == 0)
		return BOARD_HARTS_MAX;
	return n < BOARD_HARTS_MAX ? (unsigned)n : BOARD_HARTS_MAX;
}

void shim_harts_start(void)
{
	unsigned want = harts_wanted();
	atomic_fetch_or_explicit(&translating, 1ul << shim_harts[0].hartid, memory_order_release);
	for (unsigned long id = 0; id < BOARD_HARTS_MAX && shim_hart_count < want; id++) {
		if (id == shim_harts[0].hartid || settled_status(id) != SBI_HSM_STOPPED)
			continue;
		struct hart *h = &shim_harts[shim_hart_count];
		h->index = shim_hart_count;
		h->hartid = id;
		if (prepare(h) != 0)
			break;
		/* The record is complete before the hart can read it: the
		 * ecall is a full barrier on this side, and the hart reads
		 * it only once started. */
		atomic_thread_fence(memory_order_release);
		if (sbi_hart_start(id, arch_hart_entry, h) == 0)
			shim_hart_count++; /* its stacks stay: the hart runs on them */
	}
}

unsigned shim_cpu_count(void) { return shim_hart_count; }
