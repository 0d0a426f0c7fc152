/* SPDX-License-Identifier: MIT */
/* Time from the rdtime counter (BOARD_TIMEBASE_HZ), and the one timer
 * interrupt, programmed through OpenSBI: the SBI TIME extension, or the
 * legacy call on firmware without it. */
#include <stdint.h>

#include "bare.h"
#include "shim.h"

#define NS 1000000000ull

static int have_time_ext = -1;

static int64_t ticks_to_ns(uint64_t t)
{
	return (int64_t)((t / BOARD_TIMEBASE_HZ) * NS +
			 (t % BOARD_TIMEBASE_HZ) * NS / BOARD_TIMEBASE_HZ);
}

static uint64_t ns_to_ticks(int64_t ns)
{
	uint64_t n = (uint64_t)ns;
	/* Round up: a timer must not fire before its deadline. */
	return (n / NS) * BOARD_TIMEBASE_HZ + ((n % NS) * BOARD_TIMEBASE_HZ + NS - 1) / NS;
}

int64_t shim_now(void) { return ticks_to_ns(rdtime()); }

void shim_clock_set_timer(int64_t deadline_ns)
{
	uint64_t when = deadline_ns < 0 ? UINT64_MAX : ns_to_ticks(deadline_ns);
	if (have_time_ext < 0)
		have_time_ext = sbi_call(SBI_EXT_BASE, 3, SBI_EXT_TIME, 0, 0).value != 0;
	if (have_time_ext)
		sbi_call(SBI_EXT_TIME, 0, (long)when, 0, 0);
	else
		sbi_call(0, 0, (long)when, 0, 0); /* legacy set_timer */
}
