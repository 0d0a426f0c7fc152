/* SPDX-License-Identifier: MIT */
/* Supervisor-mode riscv64 for the bare kernel-shim: CSRs, interrupt
 * masking, device barriers, the time counter and the trap frame that trap.S
 * builds; what arch/arch_bare.h promises, and the CSR names the riscv64
 * shim files use. The SBI calls are sbi.h. */
#ifndef WEFT_ARCH_BARE_CPU_H
#define WEFT_ARCH_BARE_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "sbi.h"
#include "trap_frame.h"

#define csr_read(csr)                                          \
	({                                                     \
		uint64_t v_;                                   \
		__asm__ volatile("csrr %0, " #csr : "=r"(v_)); \
		v_;                                            \
	})
#define csr_write(csr, v) __asm__ volatile("csrw " #csr ", %0" ::"r"((uint64_t)(v)) : "memory")
#define csr_set(csr, v) __asm__ volatile("csrs " #csr ", %0" ::"r"((uint64_t)(v)) : "memory")
#define csr_clear(csr, v) __asm__ volatile("csrc " #csr ", %0" ::"r"((uint64_t)(v)) : "memory")

#define SSTATUS_SIE (1ull << 1)
#define SSTATUS_SPIE (1ull << 5)
#define SSTATUS_SPP (1ull << 8)
/* The vector unit's state; Off (0): every vector instruction traps. */
#define SSTATUS_VS (3ull << 9)
#define SSTATUS_FS_INITIAL (1ull << 13)
/* The vector state field of T-Head's cores (the C906's XTheadVector, RVV
 * 0.7.1), where the ratified VS field above is unused: bits 24:23. */
#define SSTATUS_VS_THEAD (3ull << 23)
#define SSTATUS_SUM (1ull << 18)
#define SIE_SSIE (1ull << 1)
#define SIE_STIE (1ull << 5)
#define SIE_SEIE (1ull << 9)
#define SIP_SSIP (1ull << 1)
#define SIP_STIP (1ull << 5)
#define SIP_SEIP (1ull << 9)

#define SCAUSE_INTERRUPT (1ull << 63)
#define IRQ_S_SOFT 1
#define IRQ_S_TIMER 5
#define IRQ_S_EXTERNAL 9
#define EXC_INST_MISALIGNED 0
#define EXC_INST_ACCESS 1
#define EXC_ILLEGAL 2
#define EXC_BREAKPOINT 3
#define EXC_LOAD_ACCESS 5
#define EXC_STORE_ACCESS 7
#define EXC_ECALL_S 9
#define EXC_INST_PAGE 12
#define EXC_LOAD_PAGE 13
#define EXC_STORE_PAGE 15

/* mvendorid (SBI's get_mvendorid) of T-Head, whose cores have th.sxstatus
 * (CSR 0x5c0; T-Head's extension specification: present wherever mvendorid
 * is this), and whose bit 21, MAEE, says the page-table entries' bits
 * 63..59 are memory attributes (the C906's XTheadMae). */
#define MVENDORID_THEAD 0x5b7
#define TH_SXSTATUS_MAEE (1ull << 21)

/* th.sxstatus: only on a core whose mvendorid is MVENDORID_THEAD, where it
 * exists (elsewhere 0x5c0 traps, or is some other vendor's CSR). */
static inline uint64_t th_sxstatus_read(void)
{
	uint64_t v;
	__asm__ volatile("csrr %0, 0x5c0" : "=r"(v));
	return v;
}

/* The vector unit off on this hart: every vector instruction then traps
 * (illegal instruction) instead of running with state that nothing saves
 * across a thread switch (docs/decisions/vector-state.md). start.S clears
 * the ratified field; T-Head's field once mvendorid is known. */
static inline void vector_off(uint64_t mvendorid)
{
	csr_clear(sstatus, SSTATUS_VS);
	if (mvendorid == MVENDORID_THEAD)
		csr_clear(sstatus, SSTATUS_VS_THEAD);
}

/* 1 if insn (32 bits) is a vector instruction, ratified (RVV 1.0) or
 * T-Head's 0.7.1, which share the encodings this looks at: the OP-V major
 * opcode (arithmetic, vsetvl{i}), loads and stores on the FP opcodes with
 * a vector width (0, 5, 6, 7; scalar FP uses 1..4), and the CSR
 * instructions on the vector CSRs (vstart, vxsat, vxrm, vcsr, vl, vtype,
 * vlenb). */
static inline int insn_is_vector(uint32_t insn)
{
	uint32_t op = insn & 0x7f, f3 = (insn >> 12) & 7, csr = insn >> 20;
	if (op == 0x57)
		return 1;
	if ((op == 0x07 || op == 0x27) && (f3 == 0 || f3 >= 5))
		return 1;
	if (op == 0x73 && f3 != 0 && f3 != 4)
		return (csr >= 0x008 && csr <= 0x00a) || csr == 0x00f ||
		       (csr >= 0xc20 && csr <= 0xc22);
	return 0;
}

/* Interrupts off; returns whether they were on. */
static inline int irq_save(void)
{
	uint64_t v;
	__asm__ volatile("csrrc %0, sstatus, %1" : "=r"(v) : "r"(SSTATUS_SIE) : "memory");
	return (v & SSTATUS_SIE) != 0;
}

static inline void irq_restore(int on)
{
	if (on)
		csr_set(sstatus, SSTATUS_SIE);
}

static inline void wfi(void) { __asm__ volatile("wfi" ::: "memory"); }

/* Ordering for devices that read and write RAM: dma_mb() puts every earlier
 * memory and device access before every later one (ring writes before the
 * register store that notifies the device); dma_wmb() orders memory stores,
 * dma_rmb() memory loads. */
static inline void dma_mb(void) { __asm__ volatile("fence iorw, iorw" ::: "memory"); }
static inline void dma_wmb(void) { __asm__ volatile("fence w, w" ::: "memory"); }
static inline void dma_rmb(void) { __asm__ volatile("fence r, r" ::: "memory"); }

/* Device registers: uncached, strongly ordered on every riscv64 board here
 * (PMAs or, on the C906, the page attributes weft maps I/O with). */
static inline uint32_t mmio_read32(uintptr_t a) { return *(volatile uint32_t *)a; }
static inline void mmio_write32(uintptr_t a, uint32_t v) { *(volatile uint32_t *)a = v; }

/* Cache maintenance for DMA (arch_bare.h). The C906 (T-Head's XTheadCmo,
 * enabled by OpenSBI for S-mode) has th.dcache.cva / iva / civa rs1 (clean,
 * invalidate, both, one line by virtual address) and th.sync.s (wait until
 * they are done, seen by every hart and the bus): emitted as words, the
 * assembler here knowing no T-Head extension, with the address in a0:
 * cva 0x0255000b, iva 0x0265000b, civa 0x0275000b, sync.s 0x0190000b (the
 * encodings Linux's riscv errata for T-Head use). Elsewhere (qemu-virt)
 * devices see the caches: a fence only. */
#define DMA_CACHE_LINE 64
#ifdef ARCH_DCACHE_THEAD
#define DMA_CACHE_OP_(name, word)                                                           \
	static inline void name(uintptr_t p, size_t n)                                      \
	{                                                                                   \
		uintptr_t end = p + n;                                                      \
		for (p &= ~(uintptr_t)(DMA_CACHE_LINE - 1); p < end; p += DMA_CACHE_LINE) { \
			register uintptr_t a0_ __asm__("a0") = p;                           \
			__asm__ volatile(".long " #word ::"r"(a0_) : "memory");             \
		}                                                                           \
		__asm__ volatile(".long 0x0190000b" ::: "memory");                          \
	}
DMA_CACHE_OP_(dma_cache_clean_, 0x0255000b)
DMA_CACHE_OP_(dma_cache_inval_, 0x0265000b)
DMA_CACHE_OP_(dma_cache_flush_, 0x0275000b)
#undef DMA_CACHE_OP_
#else
static inline void dma_cache_clean_(uintptr_t p, size_t n)
{
	(void)p, (void)n;
	dma_mb();
}
static inline void dma_cache_inval_(uintptr_t p, size_t n)
{
	(void)p, (void)n;
	dma_mb();
}
static inline void dma_cache_flush_(uintptr_t p, size_t n)
{
	(void)p, (void)n;
	dma_mb();
}
#endif
static inline void dma_cache_clean(const void *p, size_t n) { dma_cache_clean_((uintptr_t)p, n); }
static inline void dma_cache_inval(void *p, size_t n) { dma_cache_inval_((uintptr_t)p, n); }
static inline void dma_cache_flush(void *p, size_t n) { dma_cache_flush_((uintptr_t)p, n); }

static inline uint64_t rdtime(void)
{
	uint64_t v;
	__asm__ volatile("rdtime %0" : "=r"(v));
	return v;
}

/* The FPU's control and status word (fcsr: the rounding mode and the
 * exception flags), 0 without an FPU. */
static inline uint64_t fp_csr_read(void)
{
	uint64_t v = 0;
#ifdef __riscv_flen
	__asm__ volatile("frcsr %0" : "=r"(v));
#endif
	return v;
}

static inline void fp_csr_write(uint64_t v)
{
#ifdef __riscv_flen
	__asm__ volatile("fscsr %0" ::"r"(v) : "memory");
#else
	(void)v;
#endif
}

/* What trap.S saves, laid out as trap_frame.h says: x0..x31 (x0's slot is
 * trap.S's own, x2 is the interrupted sp), then sepc, sstatus, scause, stval. */
struct trap_frame {
	uint64_t x[32];
	uint64_t sepc, sstatus, scause, stval;
};
_Static_assert(offsetof(struct trap_frame, x[31]) == TRAP_X(31), "trap_frame.h");
_Static_assert(offsetof(struct trap_frame, sepc) == TRAP_SEPC, "trap_frame.h");
_Static_assert(offsetof(struct trap_frame, sstatus) == TRAP_SSTATUS, "trap_frame.h");
_Static_assert(offsetof(struct trap_frame, scause) == TRAP_SCAUSE, "trap_frame.h");
_Static_assert(offsetof(struct trap_frame, stval) == TRAP_STVAL, "trap_frame.h");
_Static_assert(sizeof(struct trap_frame) == TRAP_FRAME_SIZE, "trap_frame.h");

#endif
