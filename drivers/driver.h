/* SPDX-License-Identifier: MIT */
/* What the bare kernel-shim offers its device drivers (drivers/): pages,
 * interrupt handlers, I/O sources, messages, the shim lock, and from the
 * arch the device barriers, register accessors and DMA cache maintenance
 * (arch_bare.h; a driver whose register accesses all go through
 * mmio_read32/mmio_write32 runs on Linux against a model of its device,
 * as dwmac.c does against tests/dwmac_model.c). A driver takes its device's
 * addresses as arguments and includes no board header. Its state shared
 * between threads and its interrupt handler is under the shim lock. */
#ifndef WEFT_BARE_DRIVER_H
#define WEFT_BARE_DRIVER_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "arch_bare.h" /* dma_*mb, mmio_read32/write32, dma_cache_* */
#include "shim.h"      /* SHIM_IO_IN, SHIM_IO_OUT, SHIM_IO_ERR */

#define PAGE_SIZE 4096UL

/* The length of the frame a send's vector iov[0..n) makes, checked as every
 * network driver's send checks it: -EINVAL (a bad vector, or fewer than
 * min bytes), -EMSGSIZE (more than max). */
static inline long driver_frame_len(const struct shim_iov *iov, int n, size_t min, size_t max)
{
	if (n < 0 || (n > 0 && !iov))
		return -EINVAL;
	size_t total = 0;
	for (int i = 0; i < n; i++) {
		if (iov[i].len && !iov[i].base)
			return -EINVAL;
		total += iov[i].len;
		if (total > max)
			return -EMSGSIZE;
	}
	return total < min ? -EINVAL : (long)total;
}

/* ---- The shim lock (lock.c) ------------------------------------------------
 * One lock for the shim's state, every hart's: taken with interrupts off on
 * the taking hart, recursive on that hart. shim_big_lock returns the interrupt
 * state for shim_big_unlock. Never held across a wait. Any context. */
int shim_big_lock(void);
void shim_big_unlock(int on);

/* ---- Pages (page.c) ------------------------------------------------------
 * RAM is identity-mapped: a page's address is the one a device uses. */

/* One zeroed 4 KiB page, or NULL. Any context but an interrupt handler. */
void *shim_page_alloc(void);
void shim_page_free(void *p);

/* ---- Device interrupts (trap.c) ------------------------------------------
 * External interrupts come through the board's PLIC, to the boot hart. A
 * handler runs with interrupts off and the shim lock held, either on the
 * trap stack or in the idle loop of thread.c
 * (which takes pending interrupts itself: it waits with interrupts off). It
 * must not wait, allocate or use stdio; it may call shim_io_report and
 * shim_wake. */
typedef void (*irq_handler)(void *arg);
/* Route PLIC source irq to fn(arg) and enable it. 0, -EINVAL, -EBUSY. */
int shim_irq_register(unsigned irq, irq_handler fn, void *arg);
/* Disable source irq and forget its handler. */
void shim_irq_unregister(unsigned irq);

/* ---- I/O sources (io.c): the bare half of the shim's I/O readiness --------
 * A driver makes a device an I/O source: the small int that the shim's I/O
 * calls know it by (the first one registered is 0). ready(arg) says what the
 * device is ready for right now (SHIM_IO_IN | OUT | ERR); it is called with
 * interrupts off when the source is armed or polled, so a readiness that
 * came before the arming is not lost. There are 16 sources; the console's
 * input is source 0 (tty.c registers it first, at boot). */
/* The new source's number, or -EMFILE when all are taken. */
int shim_io_source_add(unsigned (*ready)(void *arg), void *arg);
/* Forget src (disarms it and drops what it reported). */
void shim_io_source_remove(int src);
/* Whether src's device interrupts when it becomes ready, its handler
 * calling shim_io_report (on), or must be polled (off: the default, and the
 * fallback for a device whose interrupt could not be had). A polled source
 * is asked at every poll, and a waiting poll wakes every millisecond while
 * one is armed; one by interrupt only when armed. */
void shim_io_source_irq(int src, int on);
/* The device behind src is ready for events: if src is armed for any of
 * them (ERR always counts), queue one report, disarm src and wake the
 * poller. From an interrupt handler or a thread, interrupts on or off. */
void shim_io_report(int src, unsigned events);
/* Whether src is armed now: a waiter asked for a report that has not come
 * (0 for a source that is not registered). */
int shim_io_source_armed(int src);

/* ---- Messages (console.c) -------------------------------------------------
 * Print without stdio or the shim lock: any context, trap context too. Each
 * call's text goes out whole, not mixed with another hart's. */
void shim_puts(const char *s);
/* The calling thread's stdio output not yet written (a line in the
 * making), written now. */
void shim_console_flush(void);
void shim_put_hex(uint64_t v);
void shim_put_dec(uint64_t v);

#endif
