/* SPDX-License-Identifier: MIT */
/* The program tests/gdb/check.sh debugs: fibers parked in known functions
 * (a channel receive in wait_for_order, a join in supervise), then the main
 * thread stops in gdb_stop_here. `parked abort` then aborts, for a core
 * file; without it the fibers are woken, joined, and it prints "parked: ok". */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "weft.h"

static weft_chan_t *orders;

/* Where the fibers park: the backtraces must name it. */
__attribute__((noinline)) static int wait_for_order(long *order)
{
	int r = weft_chan_recv(orders, order, -1);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
	return r;
}

static void *waiter(void *arg)
{
	long order;
	(void)arg;
	return (void *)(intptr_t)wait_for_order(&order);
}

static void *supervise(void *arg)
{
	weft_attr_t attr = {.name = "child"};
	weft_fiber_t f;
	(void)arg;
	if (weft_fiber_spawn(&f, &attr, waiter, NULL) != 0)
		return (void *)1;
	void *r;
	weft_fiber_join(f, -1, &r, NULL);
	return r;
}

/* Counts the fibers switched out in a dump: only those get a backtrace
 * line ("#0 ..." or "(no backtrace)"). */
static void count_parked(const char *s, size_t n, void *ctx)
{
	if ((n > 6 && memcmp(s, "    #0 ", 7) == 0) ||
	    (n > 17 && memcmp(s, "    (no backtrace)", 18) == 0))
		++*(int *)ctx;
}

__attribute__((noinline)) void gdb_stop_here(void) { __asm__ volatile("" ::: "memory"); }

int main(int argc, char **argv)
{
	if (weft_init(NULL) != 0 || weft_chan_create(&orders, sizeof(long), 0) != 0)
		return 1;
	weft_attr_t wa = {.name = "waiter"}, sa = {.name = "supervisor"};
	weft_fiber_t w, s;
	if (weft_fiber_spawn(&w, &wa, waiter, NULL) != 0 ||
	    weft_fiber_spawn(&s, &sa, supervise, NULL) != 0)
		return 1;
	/* Until all three are switched out (10 s at most). */
	int parked = 0;
	for (int i = 0; i < 1000 && parked < 3; i++) {
		parked = 0;
		weft_sleep_until(weft_deadline_in(10 * 1000 * 1000));
		weft_dump_to(count_parked, &parked);
	}
	if (parked < 3) {
		fprintf(stderr, "parked: only %d of 3 fibers parked\n", parked);
		return 1;
	}
	gdb_stop_here();
	if (argc > 1 && strcmp(argv[1], "abort") == 0)
		abort();
	weft_chan_close(orders);
	weft_fiber_join(w, -1, NULL, NULL);
	weft_fiber_join(s, -1, NULL, NULL);
	weft_chan_destroy(orders);
	weft_shutdown();
	printf("parked: ok\n");
	return 0;
}
