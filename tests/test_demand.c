/* SPDX-License-Identifier: MIT */
/* Demand-paged stacks: a stack costs the pages it touched, not its size.
 * On bare metal the page allocator's free count is the resident set, and
 * these tests count it (tests/test_demand.bare.sh boots them with -m 64M);
 * on Linux the kernel pages stacks in on demand itself, and the same fibers
 * run without the page counts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "shim.h"
#include "testutil.h"
#include "weft_net.h"

#define KB 1024
#define PAGE 4096

#if !WT_LINUX
/* kernel-shim/bare: the page allocator, the stack window, the fault. */
size_t shim_page_free_count(void);
int shim_vm_mapped(uintptr_t va);
int shim_vm_lazy(uintptr_t va);
int shim_stack_reclaim(void);
uint64_t shim_demand_faults(void);
#define BARE 1
#else
#define BARE 0
static size_t shim_page_free_count(void) { return 0; }
static uint64_t shim_demand_faults(void) { return 0; }
#endif

/* Pages in use since a free count of before (0 on Linux). */
static long used_since(size_t before) { return (long)before - (long)shim_page_free_count(); }

/* Write n bytes just below top, one store per page and the last byte. */
static void touch(char *top, size_t n)
{
	for (size_t off = PAGE; off <= n; off += PAGE)
		*(volatile char *)(top - off) = 1;
	*(volatile char *)(top - n) = 1;
}

/* A new stack costs nothing until touched; 6 KiB touched below its top
 * map two pages, no more, and nothing below; the guard stays a guard; a
 * freed stack gives back all but its top pages. */
static void test_touched_pages_only(void **state)
{
	(void)state;
	if (!BARE) {
		print_message(
			"Linux: the kernel's own demand paging, nothing of weft's to count\n");
		skip();
	}
#if !WT_LINUX
	shim_stack_reclaim(); /* pooled stacks come without pages */
	struct shim_stack s;
	assert_int_equal(shim_stack_alloc(64 * KB, &s), 0);
	char *top = (char *)s.base + s.size;
	size_t before = shim_page_free_count();
	uint64_t faults = shim_demand_faults();
	for (size_t off = 0; off < s.size; off += PAGE)
		assert_true(shim_vm_lazy((uintptr_t)s.base + off));
	assert_false(shim_vm_mapped((uintptr_t)s.base - 1));
	assert_false(shim_vm_lazy((uintptr_t)s.base - 1));
	memset(top - 6 * KB, 0x5a, 6 * KB);
	assert_int_equal(shim_demand_faults() - faults, 2);
	assert_int_equal(used_since(before), 2);
	assert_true(shim_vm_mapped((uintptr_t)top - 1));
	assert_true(shim_vm_mapped((uintptr_t)top - 6 * KB));
	assert_true(shim_vm_lazy((uintptr_t)top - 8 * KB - 1));
	assert_true(shim_vm_lazy((uintptr_t)s.base));
	/* The rest of the stack on demand, then back at free. */
	touch(top, s.size);
	assert_int_equal(shim_demand_faults() - faults, 16);
	assert_int_equal(used_since(before), 16);
	assert_int_equal(((volatile char *)top)[-4 * KB], 1);
	assert_int_equal(((volatile char *)top)[-6 * KB], 0x5a); /* kept while more were mapped */
	shim_stack_free(&s);
	assert_true(used_since(before) <= 2);
	shim_stack_reclaim();
	assert_int_equal(used_since(before), 0);
#endif
}

/* What a first touch costs, on the guest's clock: N fresh pages, then the
 * same pages again (mapped). Printed, not asserted. */
static void test_first_touch_cost(void **state)
{
	(void)state;
	enum { N = 256 };
	struct shim_stack s;
	assert_int_equal(shim_stack_alloc(N * PAGE, &s), 0);
	char *top = (char *)s.base + s.size;
	uint64_t faults = shim_demand_faults();
	int64_t t0 = shim_now();
	touch(top, s.size);
	int64_t t1 = shim_now();
	touch(top, s.size);
	int64_t t2 = shim_now();
	if (BARE)
		assert_int_equal(shim_demand_faults() - faults, N);
	/* Of which zeroing the page (the fault's memset of 4 KiB): */
	int64_t t3 = shim_now();
	for (int i = 0; i < N; i++)
		memset(top - (size_t)(i + 1) * PAGE, 0, PAGE);
	int64_t t4 = shim_now();
	print_message("first touch of a stack page: %lld ns (%d pages in %lld ns; touched again: "
		      "%lld ns; zeroing a page: %lld ns)\n",
		      (long long)((t1 - t0) - (t2 - t1)) / N, N, (long long)(t1 - t0),
		      (long long)(t2 - t1), (long long)(t4 - t3) / N);
	shim_stack_free(&s);
}

#define FIBERS 5000

static weft_sem_t *ready, *gate;

/* Uses about 6 KiB of its stack, says so, and waits. */
static __attribute__((noinline)) int use_6k(void)
{
	volatile char buf[5 * KB];
	for (size_t i = 0; i < sizeof buf; i += 512)
		buf[i] = (char)(i / 512);
	return buf[512];
}

static void *alive(void *arg)
{
	(void)arg;
	int v = use_6k();
	weft_sem_release(ready);
	if (weft_sem_acquire(gate, -1) != 0)
		return (void *)1;
	return v == 1 ? NULL : (void *)2;
}

/* 5,000 fibers alive at once, each having used about 6 KiB of its 64 KiB
 * stack. On bare metal in 64 MiB their stacks cost a few pages each (16
 * each would be 320 MiB), and after they end and the stacks are trimmed the
 * pages come back but for what the runtime's caches keep. */
static void test_5000_fibers_alive(void **state)
{
	(void)state;
	static weft_fiber_t f[FIBERS];
	weft__stack_trim(0);
	size_t before = shim_page_free_count();
	print_message("free pages before: %zu (%zu KiB)\n", before, before * 4);
	assert_int_equal(weft_sem_create(&ready, 0), 0);
	assert_int_equal(weft_sem_create(&gate, 0), 0);
	for (int i = 0; i < FIBERS; i++) {
		weft_attr_t attr = {.name = "alive"};
		int err = weft_fiber_spawn(&f[i], &attr, alive, NULL);
		if (err != 0)
			print_message("spawn %d: %d, %ld pages in use\n", i, err,
				      used_since(before));
		assert_int_equal(err, 0);
	}
	for (int i = 0; i < FIBERS; i++)
		assert_int_equal(weft_sem_acquire(ready, wt_ms(60000)), 0);
	long peak = used_since(before);
	print_message("%d fibers alive: %ld pages in use, %ld bytes a fiber\n", FIBERS, peak,
		      peak * PAGE / FIBERS);
	if (BARE) {
		/* Each touched two pages, but a stack reused from a cache may
		 * have come with its top pages. */
		assert_true(peak >= 2L * FIBERS - 512);
		assert_true(peak <= 4L * FIBERS + 512); /* and not 16 (+ page tables) */
	}
	for (int i = 0; i < FIBERS; i++)
		assert_int_equal(weft_sem_release(gate), 0);
	for (int i = 0; i < FIBERS; i++)
		assert_null(wt_join(f[i]));
	weft__stack_trim(0);
	long after = used_since(before);
	print_message("after the fibers ended and a trim: %ld pages in use\n", after);
	if (BARE)
		assert_true(after * 8 < peak);
	weft_sem_destroy(ready);
	weft_sem_destroy(gate);
}

/* Fills its stack to within 1 KiB of the bottom and returns. */
static uintptr_t floor_at;

static __attribute__((noinline)) int dig(int depth)
{
	volatile char frame[256];
	frame[0] = (char)depth;
	if ((uintptr_t)frame > floor_at)
		return dig(depth + 1) + frame[0] - (char)depth;
	return 7;
}

#define DEEP_STACK (48 * KB) /* not the default size: it goes back to the shim */

static void *use_whole_stack(void *arg)
{
	(void)arg;
	volatile char here;
	floor_at = (uintptr_t)&here - (DEEP_STACK - 2 * KB);
	return (void *)(intptr_t)dig(0);
}

/* A fiber may use its whole stack, every page mapped as it goes; its pages
 * go back when its stack is freed and reclaimed. */
static void test_whole_stack_usable(void **state)
{
	(void)state;
#if !WT_LINUX
	shim_stack_reclaim();
#endif
	size_t before = shim_page_free_count();
	uint64_t faults = shim_demand_faults();
	weft_attr_t attr = {.name = "whole", .stack_size = DEEP_STACK};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, &attr, use_whole_stack, NULL), 0);
	assert_int_equal((intptr_t)wt_join(f), 7);
	if (BARE) {
		print_message("%llu demand faults\n",
			      (unsigned long long)(shim_demand_faults() - faults));
		assert_true(shim_demand_faults() - faults >= DEEP_STACK / PAGE - 1);
	}
	/* The join returns once the fiber has finished; its worker frees the
	 * stack when it has switched away from it, which on another hart may
	 * be a moment later: wait for the pages (2 s at most). */
	for (int i = 0; i < 2000 && used_since(before) > 1; i++) {
#if !WT_LINUX
		shim_stack_reclaim();
#endif
		if (used_since(before) > 1)
			weft_sleep_until(weft_now() + 1000000);
	}
	assert_true(used_since(before) <= 1); /* a page table for new addresses at most */
}

#if !WT_LINUX
static _Atomic int stop_spinning;
static uintptr_t boundary; /* the page below it is lazy while the thread spins */

static __attribute__((noinline)) void spin(void)
{
	while (!atomic_load_explicit(&stop_spinning, memory_order_relaxed))
		;
}

/* Spins with its sp 64 bytes above a page boundary, ~20 KiB down its
 * stack, where nothing was touched: when the timer preempts it, the trap
 * handler copies the trap frame (288 bytes) below that sp, into the lazy
 * page, and takes a page fault inside the handler. */
static void *spin_above_lazy_page(void *arg)
{
	(void)arg;
	volatile char here;
	uintptr_t sp = (uintptr_t)&here;
	uintptr_t target = ((sp - 20 * KB) & ~(uintptr_t)(PAGE - 1)) + 64;
	volatile char *pad = __builtin_alloca(sp - target);
	pad[0] = 0;
	boundary = target - 64;
	spin();
	return (void *)(uintptr_t)pad[0];
}
#endif

/* A demand fault taken inside the trap handler (preempting a thread copies
 * its frame onto its stack) is served and the handler goes on: the nested
 * trap's frame goes below the handler's own, not over it. */
static void test_fault_inside_trap_handler(void **state)
{
	(void)state;
	if (!BARE) {
		print_message("Linux: no trap handler of weft's\n");
		skip();
	}
#if !WT_LINUX
	atomic_store(&stop_spinning, 0);
	boundary = 0;
	wt_thread_t t = wt_thread_start(spin_above_lazy_page, NULL);
	int64_t deadline = shim_now() + 10 * 1000000000LL;
	int mapped = 0;
	/* Runnable, so the timer preempts the spinner within its 2 ms slice. */
	while (!mapped && shim_now() < deadline) {
		wt_thread_yield();
		mapped = boundary && shim_vm_mapped(boundary - 8);
	}
	atomic_store(&stop_spinning, 1);
	wt_thread_join(t);
	assert_true(mapped);
#endif
}

/* ---- Memory full: new work refused, the work already open goes on -------- */

#define HOG_USE (56 * KB) /* of a hog's 64 KiB stack, touched */
#define HOGS_MAX 20000    /* more RAM than this fills is not a board of this class */
#define HOGS_FREED 32     /* room made for connections once memory is full */
#define CONNS_MAX 3000
#define ECHO_PORT 7311

static weft_sem_t *hog_ready;

/* Touches HOG_USE of its stack, says so, and waits to be cancelled. */
static void *hog(void *arg)
{
	(void)arg;
	volatile char *use = __builtin_alloca(HOG_USE);
	for (size_t off = 0; off < HOG_USE; off += PAGE)
		use[off] = 1;
	weft_sem_release(hog_ready);
	weft_sleep_until(-1); /* until cancelled */
	return (void *)(uintptr_t)use[0];
}

static void *echo_conn(void *arg)
{
	weft_sock_t *s = arg;
	char buf[64];
	ssize_t n;
	while ((n = weft_sock_read(s, buf, sizeof buf, -1)) > 0)
		if (weft_sock_write(s, buf, (size_t)n, -1) != n)
			break;
	weft_sock_close(s);
	return NULL;
}

struct acceptor {
	weft_sock_t *ls;
	_Atomic int refused; /* connections closed for want of a fiber */
	_Atomic int other;   /* a spawn that failed otherwise than -ENOMEM */
};

/* A fiber per connection, as examples/echo: a spawn refused for want of
 * memory closes the connection. Ends when the listener is closed. */
static void *acceptor(void *arg)
{
	struct acceptor *a = arg;
	for (;;) {
		weft_sock_t *s;
		if (weft_tcp_accept(a->ls, &s, NULL, -1) != 0)
			return NULL;
		weft_attr_t attr = {.name = "echo"};
		int err = weft_fiber_spawn(NULL, &attr, echo_conn, s);
		if (err) {
			atomic_fetch_add(err == -ENOMEM ? &a->refused : &a->other, 1);
			weft_sock_close(s);
		}
	}
}

/* One message over c and back within 30 s: 1, or 0 if it did not come
 * back whole (a refused connection reads its end). */
static int echoes(weft_sock_t *c, int k)
{
	char out[48], in[48];
	memset(out, 'a' + k % 26, sizeof out);
	if (weft_sock_write(c, out, sizeof out, wt_ms(30000)) != (ssize_t)sizeof out)
		return 0;
	size_t got = 0;
	while (got < sizeof in) {
		ssize_t n = weft_sock_read(c, in + got, sizeof in - got, wt_ms(30000));
		if (n <= 0)
			return 0;
		got += (size_t)n;
	}
	return memcmp(in, out, sizeof in) == 0;
}

/* Memory filled with fibers' stacks until a spawn is refused (-ENOMEM, not
 * a hang or a crash), with room still left for malloc; a little room made; then connections over lwIP's
 * loopback, each with its own fiber, until the server's spawn is refused
 * and it closes the new connection. Every connection opened before that
 * still echoes: running low refuses new work and stalls none of the work
 * already open (issue 16 item 3). Bare metal only: on Linux the memory is
 * the kernel's. */
static void test_full_memory_refuses_new_work(void **state)
{
	(void)state;
	if (!BARE) {
		print_message("Linux: memory is the kernel's, with no budget of weft's to fill\n");
		skip();
	}
	weft_fiber_t *hogs = calloc(HOGS_MAX, sizeof *hogs);
	weft_sock_t **conns = calloc(CONNS_MAX, sizeof *conns);
	assert_non_null(hogs);
	assert_non_null(conns);
	const weft_net_config_t cfg = {.stack = "lwip", .netif = "loop"};
	assert_int_equal(weft_net_init(&cfg), 0);
	weft_addr_t at = {.port = ECHO_PORT};
	const uint8_t lo4[4] = {127, 0, 0, 1};
	memcpy(&at.ip, lo4, 4);
	struct acceptor a = {0};
	assert_int_equal(weft_tcp_listen(&a.ls, &at, 64), 0);
	weft_fiber_t acc;
	assert_int_equal(weft_fiber_spawn(&acc, &(weft_attr_t){.name = "acceptor"}, acceptor, &a),
			 0);

	/* Fill. */
	assert_int_equal(weft_sem_create(&hog_ready, 0), 0);
	int nhogs = 0, err = 0;
	while (nhogs < HOGS_MAX) {
		err = weft_fiber_spawn(&hogs[nhogs], &(weft_attr_t){.name = "hog"}, hog, NULL);
		if (err)
			break;
		assert_int_equal(weft_sem_acquire(hog_ready, wt_ms(60000)), 0);
		nhogs++;
	}
	print_message("%d hogs of %d KiB each, then spawn: %d; %zu pages free\n", nhogs,
		      HOG_USE / KB, err, shim_page_free_count());
	assert_int_equal(err, -ENOMEM);
	assert_true(nhogs > HOGS_FREED);
	/* Stacks were refused with room left for the heap, which the work
	 * already open may need (lwIP's buffers): 1 MiB is there. */
	void *room = malloc(1 << 20);
	assert_non_null(room);
	free(room);

	/* Room for some connections, not for all that are tried. */
	for (int i = nhogs - HOGS_FREED; i < nhogs; i++) {
		assert_int_equal(weft_fiber_cancel(hogs[i]), 0);
		wt_join(hogs[i]);
	}
	nhogs -= HOGS_FREED;

	/* Open connections until the server refuses one. */
	uint64_t starves = atomic_load(&weft__starves);
	int open = 0, refused_seen = 0, failed = 0;
	for (int k = 0; k < CONNS_MAX && !refused_seen; k++) {
		weft_sock_t *c;
		int r = weft_tcp_connect(&c, &at, wt_ms(30000));
		if (r != 0) {
			print_message("connection %d: connect = %d\n", k, r);
			failed = r;
			break;
		}
		if (echoes(c, k)) {
			conns[open++] = c;
		} else {
			refused_seen = 1;
			weft_sock_close(c);
		}
	}
	print_message("%d connections open and echoing, then one refused (%d refused by the "
		      "server); %zu pages free; %llu first runs found no stack\n",
		      open, atomic_load(&a.refused), shim_page_free_count(),
		      (unsigned long long)(atomic_load(&weft__starves) - starves));
	/* lwIP's own refusal (its budget, or malloc's) is a refusal too, but
	 * with the pages as the tighter limit it is the spawn's. */
	assert_int_equal(failed, 0);
	assert_true(refused_seen);
	assert_true(atomic_load(&a.refused) >= 1);
	assert_int_equal(atomic_load(&a.other), 0);
	assert_true(open > 0);

	/* Every open one still echoes. */
	int echoed = 0;
	for (int k = 0; k < open; k++)
		echoed += echoes(conns[k], k + 1);
	print_message("%d of %d echoed again\n", echoed, open);
	assert_int_equal(echoed, open);

	/* Memory given back, new work is taken again. */
	for (int k = 0; k < open; k++)
		weft_sock_close(conns[k]);
	for (int i = 0; i < nhogs; i++) {
		assert_int_equal(weft_fiber_cancel(hogs[i]), 0);
		wt_join(hogs[i]);
	}
	weft__stack_trim(0);
	weft_sock_t *c;
	assert_int_equal(weft_tcp_connect(&c, &at, wt_ms(30000)), 0);
	assert_true(echoes(c, 0));
	weft_sock_close(c);
	weft_sock_close(a.ls);
	wt_join(acc);
	/* The echo fibers see their connections' ends and finish. */
	int fini = weft_net_fini();
	for (int i = 0; i < 3000 && fini == -EBUSY; i++) {
		weft_sleep_until(wt_ms(10));
		fini = weft_net_fini();
	}
	assert_int_equal(fini, 0);
	weft_sem_destroy(hog_ready);
	free(hogs);
	free(conns);
}

/* The stack window holds more than a GiB of stacks: 9,000 of the default
 * shape (64 KiB and a 64 KiB guard) reach past the 8,192 its first GiB
 * holds, and a stack beyond it is lazy, maps on a touch, and is a stack
 * like the others (issue 34: fibers of one page each, more than 8,192 of
 * them fit in 64 MiB). Last: the page tables made stay. */
#define WIDE 9000
static void test_window_beyond_one_gib(void **state)
{
	(void)state;
	if (!BARE) {
		print_message("Linux: the kernel's address space, no window of weft's\n");
		skip();
	}
#if !WT_LINUX
	struct shim_stack *s = calloc(WIDE, sizeof *s);
	assert_non_null(s);
	int n = 0;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	while (n < WIDE && shim_stack_alloc(64 * KB, &s[n]) == 0) {
		uintptr_t b = (uintptr_t)s[n].base;
		lo = b < lo ? b : lo;
		hi = b > hi ? b : hi;
		n++;
	}
	print_message("%d stacks at once, from %#lx to %#lx; %zu pages free\n", n,
		      (unsigned long)lo, (unsigned long)hi, shim_page_free_count());
	assert_int_equal(n, WIDE);
	assert_true(hi - lo >= (uintptr_t)1 << 30); /* past the first GiB */
	/* The highest: lazy, its guard none, a page on a touch. */
	struct shim_stack *top_one = NULL;
	for (int i = 0; i < n; i++)
		if ((uintptr_t)s[i].base == hi)
			top_one = &s[i];
	assert_non_null(top_one);
	char *top = (char *)top_one->base + top_one->size;
	assert_true(shim_vm_lazy((uintptr_t)top - 1));
	assert_false(shim_vm_lazy((uintptr_t)top_one->base - 1));
	assert_false(shim_vm_mapped((uintptr_t)top_one->base - 1));
	uint64_t faults = shim_demand_faults();
	*(volatile char *)(top - 1) = 7;
	assert_int_equal(shim_demand_faults() - faults, 1);
	assert_true(shim_vm_mapped((uintptr_t)top - 1));
	assert_int_equal(*(volatile char *)(top - 1), 7);
	for (int i = 0; i < n; i++)
		shim_stack_free(&s[i]);
	shim_stack_reclaim();
	free(s);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_touched_pages_only),
		cmocka_unit_test(test_first_touch_cost),
		cmocka_unit_test(test_5000_fibers_alive),
		cmocka_unit_test(test_whole_stack_usable),
		cmocka_unit_test(test_fault_inside_trap_handler),
		cmocka_unit_test(test_full_memory_refuses_new_work),
		cmocka_unit_test(test_window_beyond_one_gib),
	};
	return WT_MAIN("demand", tests, wt_start, wt_stop);
}
