/* SPDX-License-Identifier: MIT */
/* A fiber per echo connection stays within its stack's top page (issue 34,
 * item 3): on bare metal a stack costs the pages its deepest call touched,
 * for as long as its fiber lives, so that is what an idle connection costs.
 * The fibers run examples/echo's own loop (examples/echo/conn.h). Each
 * fills 16 KiB below its frame with a pattern first; what is left of the
 * pattern, later, says how deep the fiber's stack went: while it waits for
 * its client after echoing, and after its close.
 *
 * On qemu-virt the suite boots with a virtio-net device
 * (test_echo_page.bare.sh), as mk/footprint.sh's echo runs: its receive
 * fiber waits on the device's I/O source, so a fiber that parks with
 * nothing else queued polls the reactor on its own stack, as it does there.
 * The clients connect to 127.0.0.1, over lwIP's loopback, whose delivery
 * runs on the writer's stack: deeper than a device's output. On Linux the
 * frames are another compiler's (and a sanitizer's), and the kernel's
 * pages are not weft's: the suite runs there without the bound. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/echo/conn.h"
#include "internal.h"
#include "shim.h"
#include "testutil.h"
#include "weft_net.h"

#if !WT_LINUX
#define BARE 1
#else
#define BARE 0
#endif

#define PAGE 4096
#define PAINT (16 * 1024) /* below the top, painted */
#define PATTERN 0x5aa5c33cf00f9669ull
#define CONNS 24
#define PORT 7313
#define BIG 6000 /* a message of several reads and segments */

struct conn_rec {
	char *top;           /* of its stack */
	_Atomic size_t end;  /* depth after its close; 0 until then */
	_Atomic int painted; /* top is set */
};

static struct conn_rec recs[CONNS];
static _Atomic int nrec;

/* The pattern from PAINT below top up to 512 bytes under this frame. */
static __attribute__((noinline)) void paint(char *top)
{
	volatile char here = 0;
	uintptr_t lim = ((uintptr_t)&here - 512) & ~(uintptr_t)7;
	for (uintptr_t p = (uintptr_t)(top - PAINT); p < lim; p += 8)
		*(volatile uint64_t *)p = PATTERN;
	(void)here;
}

/* How far below top the stack was written since paint: the lowest word
 * that is not the pattern. */
static size_t depth(const char *top)
{
	uintptr_t p = (uintptr_t)(top - PAINT);
	while (p < (uintptr_t)top && *(volatile uint64_t *)p == PATTERN)
		p += 8;
	return (size_t)((uintptr_t)top - p);
}

/* examples/echo's fiber, with the paint first and the depth after. */
static void *echo_fiber(void *arg)
{
	weft_sock_t *s = arg;
	struct shim_stack st;
	weft__stack_of(weft__self(), &st);
	char *top = (char *)st.base + st.size;
	paint(top);
	int k = atomic_fetch_add(&nrec, 1);
	struct conn_rec *r = k < CONNS ? &recs[k] : NULL;
	if (r) {
		r->top = top;
		atomic_store(&r->painted, 1);
	}
	echo_serve(s, 60000 * 1000000LL);
	weft_sock_close(s);
	if (r)
		atomic_store(&r->end, depth(top));
	return NULL;
}

static void *acceptor(void *arg)
{
	weft_sock_t *ls = arg;
	for (;;) {
		weft_sock_t *s;
		if (weft_tcp_accept(ls, &s, NULL, -1) != 0)
			return NULL;
		if (weft_fiber_spawn(NULL, &(weft_attr_t){.name = "echo"}, echo_fiber, s) != 0)
			weft_sock_close(s);
	}
}

/* len bytes over c and back within 30 s, whole: 1, else 0. */
static int echoes(weft_sock_t *c, size_t len, int k)
{
	static char out[BIG], in[BIG];
	for (size_t i = 0; i < len; i++)
		out[i] = (char)('a' + (i + (size_t)k) % 26);
	if (weft_sock_write(c, out, len, wt_ms(30000)) != (ssize_t)len)
		return 0;
	size_t got = 0;
	while (got < len) {
		ssize_t n = weft_sock_read(c, in + got, len - got, wt_ms(30000));
		if (n <= 0)
			return 0;
		got += (size_t)n;
	}
	return memcmp(in, out, len) == 0;
}

static void test_echo_fiber_within_one_page(void **state)
{
	(void)state;
#if BARE
	if (!getenv("WEFT_ECHO_PAGE_DEV")) {
		print_message("no virtio-net device: boot through test_echo_page.bare.sh\n");
		skip();
	}
	const weft_net_config_t cfg = {.stack = "lwip", .netif = "virtio"};
#else
	const weft_net_config_t cfg = {.stack = "lwip", .netif = "loop"};
#endif
	assert_int_equal(weft_net_init(&cfg), 0);
	weft_addr_t at = {.port = PORT};
	const uint8_t lo4[4] = {127, 0, 0, 1};
	memcpy(&at.ip, lo4, 4);
	weft_sock_t *ls;
	assert_int_equal(weft_tcp_listen(&ls, &at, 64), 0);
	weft_fiber_t acc;
	assert_int_equal(weft_fiber_spawn(&acc, &(weft_attr_t){.name = "acceptor"}, acceptor, ls),
			 0);

	/* Every connection echoes a small message and a big one, and all
	 * stay open. */
	weft_sock_t *c[CONNS];
	for (int k = 0; k < CONNS; k++) {
		assert_int_equal(weft_tcp_connect(&c[k], &at, wt_ms(30000)), 0);
		assert_true(echoes(c[k], 64, k));
		assert_true(echoes(c[k], BIG, k));
		assert_true(echoes(c[k], 64, k + 1));
	}
	assert_int_equal(atomic_load(&nrec), CONNS);
	size_t idle_max = 0;
	for (int k = 0; k < CONNS; k++) {
		assert_true(atomic_load(&recs[k].painted));
		size_t d = depth(recs[k].top);
		idle_max = d > idle_max ? d : idle_max;
	}

	/* Closed by the clients: each fiber closes its end, and measures. */
	for (int k = 0; k < CONNS; k++)
		weft_sock_close(c[k]);
	size_t end_max = 0;
	for (int k = 0; k < CONNS; k++) {
		for (int i = 0; i < 3000 && !atomic_load(&recs[k].end); i++)
			weft_sleep_until(wt_ms(10));
		size_t d = atomic_load(&recs[k].end);
		assert_true(d > 0);
		end_max = d > end_max ? d : end_max;
	}
	print_message("%d echo fibers (%d-byte buffer): the deepest %zu bytes below the top while "
		      "idle, %zu after the close\n",
		      CONNS, ECHO_BUF, idle_max, end_max);
	if (BARE) {
		assert_true(idle_max <= PAGE);
		assert_true(end_max <= PAGE);
	} else {
		print_message("Linux: no bound (another compiler's frames, the kernel's pages)\n");
	}

	weft_sock_close(ls);
	wt_join(acc);
	int fini = weft_net_fini();
	for (int i = 0; i < 3000 && fini == -EBUSY; i++) {
		weft_sleep_until(wt_ms(10));
		fini = weft_net_fini();
	}
	assert_int_equal(fini, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_echo_fiber_within_one_page),
	};
	return WT_MAIN("echo_page", tests, wt_start, wt_stop);
}
