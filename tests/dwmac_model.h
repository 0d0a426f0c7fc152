/* SPDX-License-Identifier: MIT */
/* A host-side model of a Synopsys DWMAC 3.x with normal descriptors, its
 * PHY on MDIO, and the machine around it, for tests/test_dwmac.c: the same
 * drivers/dwmac.c that the Milk-V Duo links runs on Linux against it. It
 * stands in for what drivers/driver.h and arch/arch_bare.h promise a driver
 * (the shim lock, pages, interrupts, I/O sources, register access, cache
 * maintenance; tests/dwmac_host/arch_bare_cpu.h).
 *
 * Memory is not coherent: DMA memory (what shim_page_alloc gives, an arena below
 * 4 GiB) has two views. The CPU's is the pages themselves; the device's is
 * a copy it alone reads and writes. dma_cache_clean copies whole
 * DMA_CACHE_LINEs from the CPU's view to the device's, dma_cache_inval the
 * other way, dma_cache_flush the first. So a descriptor or a buffer the
 * driver did not clean is stale for the device (it starts filled with
 * 0xa5, as DRAM behind a cache that was never written back), one it did not
 * invalidate is stale for the driver, and one that shares a line with
 * another's bytes gets them overwritten. (What the model does not do: a
 * line written back on its own, by eviction.)
 *
 * The device: the DMA registers (bus mode with its soft reset, poll
 * demands, list addresses, status with write-1-to-clear bits and the
 * normal and abnormal summaries, operation mode, interrupt enable, missed
 * frame counter), the MAC's configuration, frame filter, address 0 and
 * MDIO; descriptors walked by ownership in chained mode (DES3) or ring mode
 * (end-of-ring bit), frames spread over descriptors by buffer size, the
 * FCS appended on receive, frames lost when no descriptor is free, the
 * MAC's loopback (configuration LM: frames sent are received, not put on
 * the wire), the PHY's (BMCR bit 14: the same, and frames from the wire
 * are not received; BMSR shows the link up meanwhile). Frames
 * sent go to the peer connected (dm_connect), to a function (dm_wire) or
 * to a queue the test takes them from. The shim lock is a recursive mutex
 * and the register accessors and frame arrivals take it, so several
 * threads may call the driver at once (lwIP's, test_dwmac_lwip.c); the
 * rest (set-up, counters, cache knobs) is for the test's own thread. */
#ifndef WEFT_TEST_DWMAC_MODEL_H
#define WEFT_TEST_DWMAC_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* The machine: DMA arena, pages, interrupts, I/O sources. 0 or -1 (no
 * memory below 4 GiB could be mapped). dm_fini says how many pages were
 * left allocated, and forgets every device and window. */
int dm_init(void);
unsigned dm_fini(void);

struct dm_dev;
/* A device whose registers are at base (0x2000 bytes), interrupting on
 * PLIC source irq, with a PHY at MDIO address phy, link down. */
struct dm_dev *dm_dev_new(uintptr_t base, unsigned irq, unsigned phy);
/* Frames a sends reach b, and b's reach a. */
void dm_connect(struct dm_dev *a, struct dm_dev *b);
/* The link as the PHY reports it: up or down, and what the partner
 * advertises (10 or 100 Mb/s, full or half duplex). */
void dm_set_link(struct dm_dev *m, int up, int speed, int full);
/* A frame arrives from the wire: 0 it is in the device's memory, -1 it was
 * dropped (receiver off, filtered out, no free descriptor). */
int dm_rx_frame(struct dm_dev *m, const void *frame, size_t len);
/* As dm_rx_frame, but the frame arrives with a bad FCS: the device puts it
 * in memory marked so (error summary and CRC error in its last
 * descriptor), as with frame filtering on bad frames off. */
int dm_rx_bad(struct dm_dev *m, const void *frame, size_t len);
/* A fatal bus error: the DMA stops, status FBI. */
void dm_fatal(struct dm_dev *m);
/* The oldest frame the device sent that no peer took (without FCS): its
 * length, or -1 (none). */
int dm_tx_take(struct dm_dev *m, void *buf, size_t cap);
/* Frames m sends go to fn (under the shim lock), not to a peer or the
 * queue. */
void dm_wire(struct dm_dev *m, void (*fn)(void *arg, const void *frame, size_t len), void *arg);
/* Lose every nth frame this device sends (0: none). */
void dm_wire_loss(struct dm_dev *m, unsigned nth);
/* A register as the device has it (no side effect). */
uint32_t dm_reg(struct dm_dev *m, unsigned off);
/* Whether the device's interrupt line is asserted now. */
int dm_irq_line(struct dm_dev *m);

struct dm_counters {
	unsigned long rx_frames; /* frames put in memory */
	unsigned long rx_missed; /* lost: no descriptor was the device's */
	unsigned long rx_off;    /* dropped: receiver or its DMA off */
	unsigned long rx_filtered;
	unsigned long tx_frames;  /* frames sent */
	unsigned long tx_lost;    /* of them, lost on the wire (dm_wire_loss) */
	unsigned long looped;     /* frames sent that the MAC's loopback (LM) took back */
	unsigned long phy_looped; /* frames sent that the PHY's loopback (BMCR bit 14) took back */
	unsigned long bus_errors; /* DMA outside DMA memory: fatal bus error */
	unsigned long resets;     /* soft resets */
	unsigned long mdio_ops;
};
void dm_counters(struct dm_dev *m, struct dm_counters *out);

/* The PHY ignores BMCR's loopback bit (it keeps it, but frames go to the
 * wire as without it): a PHY whose loopback is elsewhere. */
void dm_phy_loopback_ignored(struct dm_dev *m, int on);
/* The PHY's BMCR (register 0) as it holds it now (no side effect). */
uint16_t dm_phy_bmcr(struct dm_dev *m);

/* Hold the transmit DMA (it leaves descriptors alone, as with no
 * carrier), or let it go on (it sends what waits). */
void dm_tx_hold(struct dm_dev *m, int on);

/* Cache maintenance: of the cleans (DM_CLEAN) or invalidates (DM_INVAL)
 * the driver asks for from now on, the first after are done and the n
 * after those are not, as if the calls were missing; and counts of those
 * done. Cache calls outside DMA memory are counted as misuse. */
enum { DM_CLEAN, DM_INVAL };
void dm_cache_skip(int kind, unsigned after, unsigned n);
struct dm_cache_counts {
	unsigned long clean, inval, flush, skipped, misuse;
};
void dm_cache_counts(struct dm_cache_counts *out);

/* The I/O sources drivers register: the events reported on src since the
 * last call (and cleared), -1 for a source not registered. */
int dm_io_taken(int src);
/* Arm src as the bare shim's io.c does: ask its device what it is ready
 * for now (under the shim lock). */
int dm_io_arm(int src);
/* Take the interrupts that are pending now (the model also takes them
 * whenever the shim lock is released). How many handlers ran. */
unsigned dm_take_interrupts(void);

/* Plain register windows (the PHY's APB block, eFuse, pin mux): 32-bit
 * registers that read what was last written or set, every write logged in
 * order. */
void dm_window_add(uintptr_t base, size_t size);
void dm_window_set(uintptr_t addr, uint32_t v);
struct dm_write {
	uintptr_t addr;
	uint32_t val;
};
/* The writes logged so far, in order (*n of them); forget them. */
const struct dm_write *dm_window_log(unsigned *n);
void dm_window_log_clear(void);
/* The window at base has pages: a write to base + sel selects page
 * (value >> 8) & 31 for the registers at base + [lo, hi) (up to 16). */
void dm_window_paged(uintptr_t base, unsigned sel, unsigned lo, unsigned hi);

/* What shim_puts wrote since the last call (and clear it). */
const char *dm_console(void);

#endif
