/* SPDX-License-Identifier: MIT */
/* The arch's bare-metal helpers (arch/arch_bare.h) on a Linux host, for a
 * driver of drivers/ built into a test against a model of its device
 * (tests/dwmac_model.c): register accesses and cache maintenance go to the
 * model, which keeps the device's view of memory apart from the CPU's.
 * Interrupts are the model's (dwmac_model.h). */
#ifndef WEFT_TEST_ARCH_BARE_CPU_H
#define WEFT_TEST_ARCH_BARE_CPU_H

#include <stddef.h>
#include <stdint.h>

struct trap_frame; /* arch_bare.h names it; nothing here traps */

static inline int irq_save(void) { return 0; }
static inline void irq_restore(int on) { (void)on; }
static inline void wfi(void) {}
/* The model's device acts inside the register accesses, under the shim
 * lock (a mutex): the compiler's ordering is all it needs (and what TSan
 * builds allow: no fences). */
static inline void dma_mb(void) { __asm__ volatile("" ::: "memory"); }
static inline void dma_wmb(void) { __asm__ volatile("" ::: "memory"); }
static inline void dma_rmb(void) { __asm__ volatile("" ::: "memory"); }
static inline uint64_t fp_csr_read(void) { return 0; }
static inline void fp_csr_write(uint64_t v) { (void)v; }
uint64_t rdtime(void);

#define DMA_CACHE_LINE 64
uint32_t mmio_read32(uintptr_t a);
void mmio_write32(uintptr_t a, uint32_t v);
void dma_cache_clean(const void *p, size_t n);
void dma_cache_inval(void *p, size_t n);
void dma_cache_flush(void *p, size_t n);

#endif
