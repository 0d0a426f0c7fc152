/* SPDX-License-Identifier: MIT */
/* Allocation failure at every site of a network scenario (issue 14, item 4:
 * sockets, accept under load), on every stack the target has: "kernel"
 * (Linux) and "lwip" over "loop" (lwIP's in-memory wire; its pbufs, PCBs
 * and segments come from malloc through net/lwip_mem.c).
 *
 * Linked with --wrap for the allocators (tests/allocwrap.h), as
 * test_allocfail is. The scenario: the runtime and the stack come up; a
 * listener; a server fiber accepts in a loop and spawns a handler per
 * connection, which echoes until the peer's end; eight clients connect at
 * once, each writes four messages (32 to 4,000 bytes: one to three
 * segments) and checks the echo of each, and closes; the acceptor is
 * cancelled and closes the listener; the stack and the runtime go down.
 * It is run to count its allocations (the most of a few runs: with two
 * workers the order varies), then again with the Nth allocation failing,
 * for every N up to that count. Each time:
 * - a call that hit the failure returns -ENOMEM and works when retried
 *   (TRY); the other calls succeed. A failure inside lwIP (a pbuf, a
 *   segment, a PCB) reaches no call: lwIP drops the frame or the segment
 *   and TCP sends it again;
 * - a connection the server could not take is a documented outcome for its
 *   client, retried once: on "kernel" the accepted socket cannot be
 *   allocated, weft_tcp_accept returns -ENOMEM and the connection is
 *   closed, so the client's first read sees its end or -ECONNRESET (a
 *   write -EPIPE or -ECONNRESET); on "lwip" the accept callback cannot
 *   allocate and lwIP resets the connection (-ECONNRESET). Likewise a
 *   connection the kernel made for a connect that then could not allocate
 *   (-ENOMEM) reaches the server and ends without a byte. At most one of
 *   either per run;
 * - the bytes echoed are the ones sent, every client's every byte;
 * - nothing leaks: lwIP's blocks (weft_net_stats' mem_blocks) are back to
 *   what they were before the listener, and after shutdown the blocks
 *   alive, less the bare shim's pool of stack addresses (blocks_kept), are
 *   what they were after the warm-up runs (and under ASan, LeakSanitizer
 *   finds nothing unreachable, checked after every run); a leak names
 *   the blocks still live from the run and their sites.
 * Inside lwIP a failed allocation drops a frame or a segment and TCP
 * retransmits (a SYN after 3 s, data after its RTO): lwIP's timers run on
 * the runtime's clock, so "lwip" runs on the virtual clock and those
 * seconds cost no wall time. "kernel" runs on the real clock (readiness
 * that the kernel reports late would lose to a virtual deadline), and
 * nothing there waits for time to pass: every wait is bounded (30 s).
 * Every allocation is walked on every target: about 60 on "kernel" and
 * 540 on "lwip" (565 on qemu-virt), in seconds even under QEMU or ASan.
 * But not under full-system emulation of a Linux kernel (WT_SLOW, set by
 * qemu/run-rv-kernel.sh): there a run takes 1 to 3 s on a loaded machine
 * (each wake-up goes through the emulated kernel's scheduler; 45 of 534 in
 * the 120 s bound, 2026-12-02), so the walk fails every STRIDE-th
 * allocation instead, about 20 runs from the first to the last (one walk
 * took 90 s that way with 40 runs, at load 20). */
#include <stdlib.h>
#include <string.h>

#include "allocwrap.h"
#include "shim.h"
#include "testutil.h"
#include "weft_net.h"

enum { NCLI = 8, NMSG = 4, MAXMSG = 4000, MAXCONN = NCLI + 4, BALLAST = 4 };
static const size_t msg_len[NMSG] = {32, 300, 1460, MAXMSG};
#define PER_CLIENT (32 + 300 + 1460 + MAXMSG)

/* A read saw the end of the stream. */
#define END 1

static _Atomic int bad_line;   /* the first check that failed, 0: none */
static _Atomic long bad_value; /* and the value it saw */
static _Atomic long nomem;     /* calls that returned -ENOMEM (and were retried) */

#define CHECK_V(cond, v)                                                                \
	do {                                                                            \
		if (!(cond)) {                                                          \
			int zero = 0;                                                   \
			if (atomic_compare_exchange_strong(&bad_line, &zero, __LINE__)) \
				atomic_store(&bad_value, (long)(v));                    \
		}                                                                       \
	} while (0)
#define CHECK(cond) CHECK_V(cond, 0)

/* A call that may fail for memory: retried once, and then it must work
 * (only one allocation fails per run). */
#define TRY(call)                                    \
	({                                           \
		long r_ = (call);                    \
		if (r_ == -ENOMEM) {                 \
			atomic_fetch_add(&nomem, 1); \
			r_ = (call);                 \
		}                                    \
		r_;                                  \
	})

struct world;

struct cli {
	struct world *w;
	int id;
	long echoed; /* bytes echoed back and checked */
};

struct conn {
	struct world *w;
	weft_sock_t *s;
};

struct world {
	bool lwip;
	bool ballast; /* the warm-up's: BALLAST more fibers alive throughout */
	weft_sock_t *ls;
	weft_addr_t at;
	struct cli cli[NCLI];
	struct conn conn[MAXCONN];
	weft_fiber_t handler[MAXCONN];
	int nconn;             /* connections the server took */
	_Atomic long echoed;   /* bytes the handlers echoed */
	_Atomic int empty;     /* connections that ended before a byte came */
	_Atomic int dropped;   /* connections the server could not take */
	_Atomic int acc_nomem; /* weft_tcp_accept's -ENOMEM */
	uint64_t lwip_failed;  /* allocations that failed inside lwIP */
	int64_t took;          /* conduct's time, on the runtime's clock */
};

static int64_t far(void) { return weft_deadline_in(30 * 1000000000LL); }

static void fill(uint8_t *b, int client, int msg, size_t len)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(client * 37 + msg * 11 + i * 7 + (i >> 8));
}

/* ---- The server ---------------------------------------------------------- */

static void *handler(void *arg)
{
	struct conn *c = arg;
	uint8_t buf[MAXMSG];
	long got = 0;
	int i;
	for (i = 0; i < 1000; i++) {
		ssize_t r = weft_sock_read(c->s, buf, sizeof buf, far());
		if (r == 0)
			break;
		CHECK_V(r > 0, r);
		if (r < 0)
			break;
		got += r;
		ssize_t n = weft_sock_write(c->s, buf, (size_t)r, far());
		CHECK_V(n == r, n);
		if (n != r)
			break;
		atomic_fetch_add(&c->w->echoed, r);
	}
	CHECK(i < 1000);
	if (got == 0)
		atomic_fetch_add(&c->w->empty, 1);
	CHECK(weft_sock_close(c->s) == 0);
	return NULL;
}

/* Accept until cancelled, a handler per connection; then close the
 * listener. */
static void *server(void *arg)
{
	struct world *w = arg;
	for (int tries = 0; tries < 4 * MAXCONN; tries++) {
		weft_sock_t *s;
		int r = weft_tcp_accept(w->ls, &s, NULL, far());
		if (r == -ECANCELED)
			break;
		if (r == -ENOMEM) {
			/* The connection is closed: its client sees it end. */
			atomic_fetch_add(&nomem, 1);
			atomic_fetch_add(&w->acc_nomem, 1);
			continue;
		}
		CHECK_V(r == 0, r);
		if (r)
			break;
		CHECK(w->nconn < MAXCONN);
		if (w->nconn == MAXCONN) {
			weft_sock_close(s);
			break;
		}
		struct conn *c = &w->conn[w->nconn];
		*c = (struct conn){.w = w, .s = s};
		r = (int)TRY(weft_fiber_spawn(&w->handler[w->nconn], NULL, handler, c));
		CHECK_V(r == 0, r);
		if (r) {
			weft_sock_close(s);
			break;
		}
		w->nconn++;
	}
	CHECK(weft_sock_close(w->ls) == 0);
	for (int i = 0; i < w->nconn; i++)
		CHECK(weft_fiber_join(w->handler[i], far(), NULL, NULL) == 0);
	return NULL;
}

/* ---- The clients ----------------------------------------------------------- */

/* Every message written and its echo read back and compared: 0, END (the
 * peer ended the stream), or the first error. */
static long exchange(struct cli *c, weft_sock_t *s)
{
	uint8_t out[MAXMSG], in[MAXMSG];
	for (int k = 0; k < NMSG; k++) {
		size_t len = msg_len[k];
		fill(out, c->id, k, len);
		ssize_t n = weft_sock_write(s, out, len, far());
		if (n < 0)
			return n;
		if ((size_t)n < len)
			return END; /* stopped short: the peer went */
		for (size_t got = 0; got < len;) {
			ssize_t r = weft_sock_read(s, in + got, len - got, far());
			if (r <= 0)
				return r ? r : END;
			got += (size_t)r;
		}
		if (memcmp(in, out, len))
			return -EILSEQ;
		c->echoed += (long)len;
	}
	return 0;
}

static void *client(void *arg)
{
	struct cli *c = arg;
	struct world *w = c->w;
	for (int attempt = 0; attempt < 2; attempt++) {
		weft_sock_t *s;
		long r = TRY(weft_tcp_connect(&s, &w->at, far()));
		CHECK_V(r == 0, r);
		if (r)
			return NULL;
		r = exchange(c, s);
		CHECK(weft_sock_close(s) == 0);
		if (r == 0)
			return NULL;
		/* The server could not take the connection: it ended before
		 * anything was echoed. Connect again. */
		bool dropped = c->echoed == 0 && (r == END || r == -ECONNRESET || r == -EPIPE);
		CHECK_V(dropped, r);
		if (!dropped)
			return NULL;
		atomic_fetch_add(&w->dropped, 1);
	}
	CHECK(0); /* dropped twice */
	return NULL;
}

/* ---- The scenario ---------------------------------------------------------- */

/* Alive until cancelled: the warm-up runs hold more fibers (and so stacks)
 * at once than a run with a failure can (a retried connection's handler),
 * so the pools that last (the stacks', whose trimmed ones each keep a
 * record) are as large after the warm-up as they will ever be. */
static void *ballast(void *arg)
{
	(void)arg;
	weft_sleep_until(far());
	return NULL;
}

/* Listen, serve the clients, close, and wait for lwIP's memory: in a fiber,
 * because a plain thread that works does not hold the virtual clock (it
 * could move on to the acceptor's deadline while the test's thread is
 * between two calls). */
static void *conduct(void *arg)
{
	struct world *w = arg;
	int64_t t0 = weft_now();
	weft_net_stats_t st0 = {0}, st = {0};
	CHECK(weft_net_stats(&st0) == 0);

	weft_addr_t local;
	CHECK(weft_addr_parse("127.0.0.1", &local) == 0);
	CHECK(TRY(weft_tcp_listen(&w->ls, &local, 2 * NCLI)) == 0);
	CHECK(weft_sock_local(w->ls, &w->at) == 0);
	weft_fiber_t sf, cf[NCLI], bf[BALLAST];
	for (int i = 0; w->ballast && i < BALLAST; i++)
		CHECK(weft_fiber_spawn(&bf[i], NULL, ballast, NULL) == 0);
	CHECK(TRY(weft_fiber_spawn(&sf, NULL, server, w)) == 0);
	for (int i = 0; i < NCLI; i++) {
		w->cli[i] = (struct cli){.w = w, .id = i};
		CHECK(TRY(weft_fiber_spawn(&cf[i], NULL, client, &w->cli[i])) == 0);
	}
	for (int i = 0; i < NCLI; i++)
		CHECK(weft_fiber_join(cf[i], far(), NULL, NULL) == 0);
	CHECK(weft_fiber_cancel(sf) == 0); /* the acceptor gets -ECANCELED */
	CHECK(weft_fiber_join(sf, far(), NULL, NULL) == 0);
	for (int i = 0; w->ballast && i < BALLAST; i++) {
		CHECK(weft_fiber_cancel(bf[i]) == 0);
		CHECK(weft_fiber_join(bf[i], far(), NULL, NULL) == 0);
	}

	/* Every byte of every client, echoed once. */
	for (int i = 0; i < NCLI; i++)
		CHECK_V(w->cli[i].echoed == PER_CLIENT, w->cli[i].echoed);
	CHECK_V(atomic_load(&w->echoed) == NCLI * PER_CLIENT, atomic_load(&w->echoed));
	/* What one failed allocation may cost: one connection. */
	int lost = atomic_load(&w->dropped) + atomic_load(&w->empty);
	CHECK_V(lost <= wt_alloc_failed(), lost);
	CHECK_V(w->nconn == NCLI + atomic_load(&w->empty), w->nconn);
	if (!w->lwip) /* the kernel's are dropped only by an accept that says so */
		CHECK_V(atomic_load(&w->dropped) <= atomic_load(&w->acc_nomem),
			atomic_load(&w->dropped));

	/* lwIP gives its connections' memory back when their TIME-WAITs
	 * (2 s) and last retransmissions are over: on the virtual clock,
	 * without wall time. */
	CHECK(weft_net_stats(&st) == 0);
	for (int i = 0; i < 1200 && st.mem_blocks > st0.mem_blocks; i++) {
		weft_sleep_until(weft_deadline_in(100000000));
		CHECK(weft_net_stats(&st) == 0);
	}
	/* No more than at the start: what lwIP held then for itself (a
	 * neighbour discovery or MLD frame on a device netif, queued when
	 * st0 was read) may be gone by now, which is no leak. */
	CHECK_V(st.mem_blocks <= st0.mem_blocks, (long)st.mem_blocks - (long)st0.mem_blocks);
	w->lwip_failed = st.mem_failed - st0.mem_failed;
	w->took = weft_now() - t0;
	return NULL;
}

/* The backstop on a run, in seconds of its clock: a timed join by the
 * test's plain thread. At 600 s it timed out in about one walk in 5 under
 * qemu-aarch64 on a loaded machine, though a run's conduct takes at most
 * 5.6 s of lwIP's virtual clock (the walk reports its longest): lwIP's
 * cyclic timers kept their due times from the previous run, whose clock
 * had run ahead, and the clock leapt to them. Each weft_net_init now
 * rebases them (net/lwip_port.c; test_net's
 * test_lwip_timers_after_virtual_restart): 24 walks of 24 passed then. A
 * join polled every 2 ms of real time instead made the kernel stack's
 * walk under io_uring lose a connection in 11 runs of 40, so it is not
 * used. When the backstop fires, every fiber is shown. */
#define BACKSTOP_S 300
static int64_t longest_run; /* ns, the walk's longest run on its clock */

static void scenario(struct world *w, bool lwip, bool warm)
{
	memset(w, 0, sizeof *w);
	w->lwip = lwip;
	w->ballast = warm;
	weft_config_t cfg = {.workers = 2,
			     .flags = lwip ? WEFT_CFG_VIRTUAL_CLOCK : WEFT_CFG_REAL_CLOCK};
	CHECK(TRY(weft_init(&cfg)) == 0);
	weft_net_config_t ncfg = {.stack = lwip ? "lwip" : "kernel", .netif = "loop"};
	CHECK(TRY(weft_net_init(&ncfg)) == 0);
	weft_fiber_t f;
	CHECK(TRY(weft_fiber_spawn(&f, NULL, conduct, w)) == 0);
	/* conduct's every wait is bounded: this is a backstop. When it
	 * fires, what every fiber waits on is shown (the first failed check
	 * alone would not say). */
	int joined = weft_fiber_join(f, weft_deadline_in(BACKSTOP_S * 1000000000LL), NULL, NULL);
	if (joined != 0) {
		print_message("conduct not done after %d s of its clock: every fiber:\n",
			      BACKSTOP_S);
		weft_dump();
	}
	CHECK_V(joined == 0, joined);
	if (joined == 0 && w->took > longest_run)
		longest_run = w->took;
	int r = weft_net_fini();
	CHECK_V(r == 0, r);
	r = weft_run();
	CHECK_V(r == 0, r);
	r = weft_shutdown();
	CHECK_V(r == 0, r);
}

/* Totals over the walk's runs, for its report. */
static long lost_total, lwip_failed_runs;

/* One run with the Nth allocation failing (0: none); warm: with ballast. */
static void run_once(bool lwip, long n, bool warm)
{
	static struct world w;
	wt_alloc_arm(n);
	scenario(&w, lwip, warm);
	wt_alloc_disarm();
	lost_total += atomic_load(&w.dropped) + atomic_load(&w.empty);
	lwip_failed_runs += w.lwip_failed > 0;
}

#if !WT_LINUX
size_t shim_stack_pooled(void); /* kernel-shim/bare/stack.c */
#else
static size_t shim_stack_pooled(void) { return 0; }
#endif

/* The blocks alive, less the nodes of the bare shim's pool of stack
 * addresses: a lasting table as long as the most stacks ever out at once,
 * which a run that holds one more than any before makes longer (with 4
 * harts, 19 runs of 64 did, after a failed allocation). What is left must
 * come back to the same count after every run. */
static long blocks_kept(void) { return wt_alloc_live() - (long)shim_stack_pooled(); }

static void walk(bool lwip)
{
	const char *name = lwip ? "lwip" : "kernel";
	atomic_store(&bad_line, 0);
	/* Warm-up, with ballast: the lasting tables (the runtime's, the
	 * reactor's, lwIP's, the stacks') until a few runs in a row keep
	 * nothing more. */
	long base = -1, seen[64];
	int same = 0, runs = 0;
	while (runs < 64 && same < 3) {
		run_once(lwip, 0, true);
		if (atomic_load(&bad_line))
			fail_msg("%s, warm-up: check at line %d failed (%ld)", name,
				 atomic_load(&bad_line), atomic_load(&bad_value));
		same = blocks_kept() == base ? same + 1 : 0;
		base = seen[runs++] = blocks_kept();
	}
	if (same < 3) /* a run that keeps a block for good leaks */
		for (int i = 0; i < runs; i++)
			print_message("warm-up run %d: %ld blocks kept after it\n", i + 1, seen[i]);
	assert_int_equal(same, 3);
	assert_int_equal(wt_alloc_leak_check(), 0);
	/* The count: the most a few runs as the walk's made (with two
	 * workers the order, and the count, varies a little). */
	long total = 0;
	for (int i = 0; i < 3; i++) {
		run_once(lwip, 0, false);
		if (atomic_load(&bad_line))
			fail_msg("%s, no failure: check at line %d failed (%ld)", name,
				 atomic_load(&bad_line), atomic_load(&bad_value));
		assert_int_equal(blocks_kept(), base);
		if (wt_alloc_counted() > total)
			total = wt_alloc_counted();
	}

	long walked = 0, retried_before = atomic_load(&nomem), unreached = 0, runs_made = 0;
	long stride = getenv("WT_SLOW") != NULL ? total / 20 + 1 : 1;
	lost_total = lwip_failed_runs = 0;
	longest_run = 0;
	int64_t end = shim_now() + 120 * 1000000000LL; /* two walks within the runner's 300 s */
	for (long n = 1; n <= total && shim_now() < end; n += stride) {
		run_once(lwip, n, false);
		walked = n;
		runs_made++;
		int line = atomic_load(&bad_line);
		long leaked = blocks_kept() - base;
		int lsan = wt_alloc_leak_check();
		if (line || leaked > 0 || lsan)
			print_message("%s: allocation %ld of about %ld (called from %p) failed: "
				      "check at line %d (%ld), %ld blocks leaked%s\n",
				      name, n, total, wt_alloc_failed_site(), line,
				      atomic_load(&bad_value), leaked,
				      lsan ? ", LeakSanitizer found a leak" : "");
		if (leaked > 0)
			wt_alloc_report_live(); /* the lasting tables' included */
		assert_int_equal(line, 0);
		assert_true(leaked <= 0);
		assert_int_equal(lsan, 0);
		unreached += wt_alloc_failed() == 0; /* this run made fewer */
	}
	print_message("%s: walked %ld of %ld allocations, every %ld (%ld runs, %ld made fewer): "
		      "%ld calls returned -ENOMEM, %ld connections were lost and made again, "
		      "%ld runs failed inside lwIP; the longest run took %.1f s of its clock\n",
		      name, walked, total, stride, runs_made, unreached,
		      atomic_load(&nomem) - retried_before, lost_total, lwip_failed_runs,
		      (double)longest_run / 1e9);
	assert_true(walked + stride > total); /* not cut short by the time bound */
	assert_true(atomic_load(&nomem) > retried_before);
	if (lwip)
		assert_true(lwip_failed_runs > 0);
}

static void test_kernel_every_allocation_fails_once(void **state)
{
	(void)state;
	if (!WT_LINUX) {
		print_message("bare metal has no kernel sockets: \"lwip\" alone\n");
		skip();
	}
	walk(false);
}

static void test_lwip_every_allocation_fails_once(void **state)
{
	(void)state;
	walk(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_every_allocation_fails_once),
		cmocka_unit_test(test_lwip_every_allocation_fails_once),
	};
	return WT_MAIN("allocfail_net", tests, NULL, NULL);
}
