/* SPDX-License-Identifier: MIT */
/* The PLIC path on bare metal (qemu-virt): a source that interrupts with no
 * handler (one that firmware left enabled) is completed before the shim
 * disables it (kernel-shim/bare/trap.c), so that its gateway is not left
 * claimed and a driver that registers the source later gets its
 * interrupts.
 *
 * QEMU's PLIC takes a completion whatever the source's enable bit says;
 * the PLIC specification lets hardware ignore a completion for a source
 * that is not enabled for the context. This image is linked with
 * --wrap=plic_complete (the Makefile), and the wrapper below applies that
 * rule on top of QEMU's PLIC: a completion for a source whose enable bit
 * (read from the PLIC itself) is clear is dropped and counted. The source
 * is the console UART's receiver, in loopback. Linux: every test skips. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#if !WT_LINUX
#include "bare.h"
#include "ns16550.h"
#include "plic.h"
#include "shim.h"

static const struct ns16550 uart = {.base = BOARD_UART_BASE, .shift = BOARD_UART_SHIFT};

/* The boot hart's S-mode context takes every external interrupt (boot.c). */
static volatile uint32_t *enable_word(unsigned irq)
{
	uintptr_t ctx = BOARD_PLIC_CONTEXT(shim_harts[0].hartid);
	return (volatile uint32_t *)(BOARD_PLIC_BASE + 0x2000 + 0x80 * ctx + 4 * (irq / 32));
}

static int source_enabled(unsigned irq) { return (*enable_word(irq) >> (irq % 32)) & 1; }

static _Atomic unsigned completions, dropped;

void __real_plic_complete(uint32_t irq);
void __wrap_plic_complete(uint32_t irq);
void __wrap_plic_complete(uint32_t irq)
{
	if (!source_enabled(irq)) {
		atomic_fetch_add(&dropped, 1); /* as the specification allows */
		return;
	}
	atomic_fetch_add(&completions, 1);
	__real_plic_complete(irq);
}

static int plic_start(void **state)
{
	(void)state;
	/* No stall detector: its report, printed while the UART loops
	 * back, would come back as input. */
	weft_config_t c = {.stall_ms = WEFT_STALL_OFF};
	return weft_init(&c) == 0 ? 0 : -1;
}

static void drain(void)
{
	int s = irq_save();
	for (int n = 0; n < 4096 && ns16550_getc(&uart) >= 0; n++)
		;
	irq_restore(s);
}

/* Let other threads run until cond(arg) holds (10 s at most). */
static int await(int (*cond)(void *), void *arg)
{
	int64_t end = shim_now() + 10000000000;
	while (!cond(arg) && shim_now() < end)
		wt_thread_yield();
	return cond(arg);
}

static int console_source_off(void *arg)
{
	(void)arg;
	return !source_enabled(BOARD_CONSOLE_IRQ);
}

static _Atomic int handled;

static int was_handled(void *arg)
{
	(void)arg;
	return atomic_load(&handled) > 0;
}

static void handler(void *arg)
{
	(void)arg;
	while (ns16550_getc(&uart) >= 0)
		;
	atomic_fetch_add(&handled, 1);
}

static void test_plic_unhandled_source_does_not_stay_claimed(void **state)
{
	(void)state;
	shim_tty_irq_take(0); /* the console's source: no handler, disabled */
	drain();
	int s = irq_save();
	ns16550_loopback(&uart, 1);
	ns16550_rx_irq(&uart, 1);
	/* As firmware may leave a source: enabled, with no handler. */
	plic_enable(BOARD_CONSOLE_IRQ, 1);
	irq_restore(s);
	unsigned done0 = atomic_load(&completions), dropped0 = atomic_load(&dropped);
	ns16550_putc(&uart, 'u'); /* its line goes up: nobody handles it */
	int disabled = await(console_source_off, NULL);
	unsigned done1 = atomic_load(&completions), dropped1 = atomic_load(&dropped);
	/* The shim's message went into the looped-back receiver. */
	drain();

	/* A driver takes the source now: it must get the next interrupt. */
	int reg = shim_irq_register(BOARD_CONSOLE_IRQ, handler, NULL);
	ns16550_putc(&uart, 'h');
	int got = await(was_handled, NULL);

	s = irq_save();
	ns16550_rx_irq(&uart, 0);
	ns16550_loopback(&uart, 0);
	irq_restore(s);
	if (reg == 0)
		shim_irq_unregister(BOARD_CONSOLE_IRQ);
	drain();
	shim_tty_irq_take(1);
	printf("test_plic: unhandled source %u: disabled %d, %u completions taken, %u ignored "
	       "(disabled); afterwards its handler ran %d times\n",
	       BOARD_CONSOLE_IRQ, disabled, done1 - done0, dropped1 - dropped0,
	       atomic_load(&handled));
	assert_true(disabled);
	assert_int_equal(dropped1 - dropped0, 0);
	assert_true(done1 - done0 >= 1);
	assert_int_equal(reg, 0);
	assert_true(got);
}

/* The wrapper's rule itself: a completion for a source that is not
 * enabled is dropped (and the gateway then stays claimed: the source
 * interrupts no more, the failure the shim's order avoids). */
static void test_plic_model_ignores_completion_of_disabled_source(void **state)
{
	(void)state;
	const unsigned irq = BOARD_PLIC_NDEV; /* a source nothing here uses */
	unsigned before = atomic_load(&dropped);
	int s = irq_save();
	int was = source_enabled(irq);
	plic_complete(irq); /* wrapped: not enabled, so dropped */
	irq_restore(s);
	assert_false(was);
	assert_int_equal(atomic_load(&dropped) - before, 1);
}

#define PLIC_TEST(f) cmocka_unit_test(f)
#else
#define PLIC_TEST(f)       \
	{                  \
		.name = #f \
	}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		PLIC_TEST(test_plic_model_ignores_completion_of_disabled_source),
		PLIC_TEST(test_plic_unhandled_source_does_not_stay_claimed),
	};
#if WT_LINUX
	return wt_skip_group("plic", tests, sizeof tests / sizeof tests[0],
			     "bare metal only (the PLIC)");
#else
	return WT_MAIN("plic", tests, plic_start, wt_stop);
#endif
}
