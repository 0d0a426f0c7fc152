/* SPDX-License-Identifier: MIT */
/* Memory figures on the console, for measurements (mk/footprint.sh): with
 * WEFT_MEMSTAT_MS=N on the command line, the reactor's wait (shim_io_poll)
 * prints one line at most every N ms, and wakes for it:
 *
 *   weft: mem: pages_free=F pages_total=T heap_kb=H sbrk_kb=S malloc_kb=M faults=D
 *
 * F and T are the page allocator's free and total 4 KiB pages (stacks and
 * page tables; F counts the RAM heap and pages share and neither took
 * yet), H the most the heap may reach (all of that RAM), S how much malloc
 * took through sbrk (malloc never gives it back), M what malloc has handed out and not
 * had back (mallinfo, malloc.c), D the demand faults served. Unset or 0:
 * nothing is printed, and the wait is as before. */
#include <malloc.h>
#include <stdlib.h>

#include "bare.h"
#include "shim.h"

#define MS 1000000LL

static int64_t period = -1; /* ns; 0 off; -1 not read yet */
static int64_t next_at;

int64_t shim_memstat_poll(int64_t now)
{
	if (period < 0) {
		const char *s = getenv("WEFT_MEMSTAT_MS");
		long ms = s ? strtol(s, NULL, 10) : 0;
		period = ms > 0 && ms <= 3600000 ? ms * MS : 0;
		next_at = now;
	}
	if (!period)
		return -1;
	if (now < next_at)
		return next_at;
	next_at = now + period;
	struct mallinfo mi = mallinfo();
	int on = shim_big_lock(); /* one line, not interleaved with another thread's */
	shim_puts("weft: mem: pages_free=");
	shim_put_dec(shim_page_free_count());
	shim_puts(" pages_total=");
	shim_put_dec(shim_page_total_count());
	shim_puts(" heap_kb=");
	shim_put_dec(shim_heap_size() / 1024);
	shim_puts(" sbrk_kb=");
	shim_put_dec(shim_heap_used() / 1024);
	shim_puts(" malloc_kb=");
	shim_put_dec(mi.uordblks / 1024);
	shim_puts(" faults=");
	shim_put_dec(shim_demand_faults());
	shim_puts("\n");
	shim_big_unlock(on);
	return next_at;
}
