/* SPDX-License-Identifier: MIT */
/* The harts the bare shim runs on (qemu-virt): WEFT_HARTS=N on the command
 * line starts N harts at most, and a hart that firmware sends into the
 * image's entry (_start) beside the boot hart stops itself there, touching
 * nothing (start.S's boot lottery). QEMU's OpenSBI v1.1 did that now and
 * then on 2 harts: the second hart cleared the bss and ran the boot again
 * under the first, and malloc handed the environment's memory out twice.
 * tests/test_harts.bare.sh boots this suite on 2 harts with WEFT_HARTS=1,
 * so that one hart stays stopped for the tests to send into _start.
 * Linux: every test skips. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#if !WT_LINUX
#include "bare.h"
#include "shim.h"

void _start(void);

#define WAIT_S 10

/* A stopped hart's SBI id, or -1. */
static long stopped_hart(void)
{
	for (unsigned long id = 0; id < BOARD_HARTS_MAX; id++) {
		struct sbiret st = sbi_hart_status(id);
		if (!st.error && st.value == SBI_HSM_STOPPED)
			return (long)id;
	}
	return -1;
}

/* Hart id's HSM status once it is STOPPED, or after WAIT_S seconds. */
static long status_when_stopped(unsigned long id)
{
	uint64_t until = rdtime() + (uint64_t)WAIT_S * BOARD_TIMEBASE_HZ;
	struct sbiret st;
	do {
		st = sbi_hart_status(id);
		if (st.error || st.value == SBI_HSM_STOPPED)
			break;
		shim_thread_yield();
	} while (rdtime() < until);
	return st.error ? -1 : st.value;
}

static void test_weft_harts_limits_the_harts(void **state)
{
	(void)state;
	const char *n = getenv("WEFT_HARTS");
	if (!n || strcmp(n, "1") != 0) {
		print_message("booted without WEFT_HARTS=1 (tests/test_harts.bare.sh sets it)\n");
		skip();
	}
	assert_int_equal(shim_cpu_count(), 1);
	/* The machine has 2 (the script's QEMU_SMP): the other is left
	 * stopped. */
	assert_true(stopped_hart() >= 0);
}

/* Set before the hart enters _start: a second boot's bss clear would zero
 * it. */
static volatile unsigned long in_bss;

static void test_second_hart_at_entry_stops_itself(void **state)
{
	(void)state;
	long id = stopped_hart();
	if (id < 0) {
		print_message("no stopped hart to send into _start (tests/test_harts.bare.sh "
			      "boots 2 harts with WEFT_HARTS=1)\n");
		skip();
	}
	const char *harts = getenv("WEFT_HARTS");
	uint64_t entry = arch_boot_entry;
	unsigned cpus = shim_cpu_count();
	char *block = malloc(64);
	assert_non_null(block);
	memset(block, 0x5a, 64);
	in_bss = 0x600dull;

	/* As firmware that releases every hart into the image would: _start
	 * with translation and interrupts off, a0 = the hart id. */
	assert_int_equal(sbi_hart_start((unsigned long)id, _start, NULL), 0);
	assert_int_equal(status_when_stopped((unsigned long)id), SBI_HSM_STOPPED);

	assert_int_equal(in_bss, 0x600d);
	assert_true(arch_boot_entry == entry); /* the hand-off time is the boot hart's */
	assert_ptr_equal(getenv("WEFT_HARTS"), harts);
	assert_int_equal(shim_cpu_count(), cpus);
	for (int i = 0; i < 64; i++)
		assert_int_equal((unsigned char)block[i], 0x5a);
	/* malloc still hands out fresh memory, not the block. */
	char *other = malloc(64);
	assert_non_null(other);
	assert_true(other + 64 <= block || block + 64 <= other);
	free(other);
	free(block);
	/* And the hart can be sent in again: it stops again. */
	assert_int_equal(sbi_hart_start((unsigned long)id, _start, NULL), 0);
	assert_int_equal(status_when_stopped((unsigned long)id), SBI_HSM_STOPPED);
	assert_int_equal(in_bss, 0x600d);
}

#define HARTS_TEST(f) cmocka_unit_test(f)
#else
#define HARTS_TEST(f)      \
	{                  \
		.name = #f \
	}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		HARTS_TEST(test_weft_harts_limits_the_harts),
		HARTS_TEST(test_second_hart_at_entry_stops_itself),
	};
#if WT_LINUX
	return wt_skip_group("harts", tests, sizeof tests / sizeof tests[0],
			     "bare metal only (SBI HSM)");
#else
	return WT_MAIN("harts", tests, NULL, NULL);
#endif
}
