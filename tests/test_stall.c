/* SPDX-License-Identifier: MIT */
/* The stall detector: a fiber that spins past the threshold is reported
 * once per stall, with its id, name, spawn site, worker and (Linux x86_64)
 * a backtrace through the spinning function, and counted in
 * weft_worker_stats; a fiber that yields every millisecond is not; off is
 * off; a malformed $WEFT_STALL_MS is -EINVAL. Nothing here asserts a time:
 * every wait is for something observable, bounded in count and time. */
#include <string.h>
#include <time.h>

#include "testutil.h"

#define THRESHOLD_MS 20
/* The threshold of the tests that expect no report. A busy host can take a
 * worker (or QEMU's whole hart) off the CPU for longer than 20 ms while a
 * fiber runs between two yields, and the detector then rightly sees a
 * stall; 500 ms is far beyond any such pause, and the fibers there still
 * run for several of it, so a yield that was not a suspension point would
 * be reported. */
#define QUIET_THRESHOLD_MS 500

/* ---- The reports, as stall_fn receives them ----------------------------- */

static char text[16384];
static size_t text_len;

/* On the detector's thread. The test reads text only after
 * weft_worker_stats has counted the report, which comes after it. */
static void capture(const char *s, size_t n, void *ctx)
{
	(void)ctx;
	if (n > sizeof text - 1 - text_len)
		n = sizeof text - 1 - text_len;
	memcpy(text + text_len, s, n);
	text_len += n;
	text[text_len] = 0;
}

static void start(unsigned workers, int stall_ms)
{
	text_len = 0;
	text[0] = 0;
	weft_config_t c = {.workers = workers,
			   .flags = WEFT_CFG_REAL_CLOCK,
			   .stall_ms = stall_ms,
			   .stall_fn = capture};
	assert_int_equal(weft_init(&c), 0);
}

static uint64_t stalls(void)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < weft_workers(); i++) {
		weft_worker_stats_t s;
		assert_int_equal(weft_worker_stats(i, &s), 0);
		n += s.stalls;
	}
	return n;
}

/* Wait, polling every millisecond for at most 30 s, until at least n
 * stalls were counted. Returns the count. */
static uint64_t wait_stalls(uint64_t n)
{
	int64_t end = weft_now() + 30000000000LL;
	uint64_t got;
	for (int i = 0; i < 30000 && (got = stalls()) < n && weft_now() < end; i++)
		weft_sleep_until(wt_ms(1));
	return stalls();
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* ---- A spinning fiber --------------------------------------------------- */

struct spin {
	_Atomic int phase; /* the test moves it on: 0 spin, 1 yield then spin, 2 end */
	_Atomic int worker[2];
};

/* How long the worker thread has run, where the test can know it (Linux:
 * the fiber runs on it), else the clock, which runs at least as fast. */
static int64_t worker_time(void)
{
#if WT_LINUX
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
#else
	return weft_now();
#endif
}

/* Not static, and with no call in its loop: the backtrace names it
 * (tests are linked with -rdynamic on Linux), and the signal lands in it. */
void *stall_spin(void *arg);
__attribute__((noinline)) void *stall_spin(void *arg)
{
	struct spin *s = arg;
	atomic_store(&s->worker[0], weft_worker_index());
	volatile uint64_t n = 0;
	while (atomic_load_explicit(&s->phase, memory_order_relaxed) == 0)
		n++;
	if (atomic_load(&s->phase) == 1) {
		weft_fiber_yield(); /* a suspension point: the next spin is a new stall */
		atomic_store(&s->worker[1], weft_worker_index());
		while (atomic_load_explicit(&s->phase, memory_order_relaxed) == 1)
			n++;
	}
	return NULL;
}

static int spawn_line;

static weft_fiber_t spawn_spinner(struct spin *s)
{
	weft_attr_t a = {.name = "spinner"};
	weft_fiber_t f;
	/* clang-format off */
	spawn_line = __LINE__; assert_int_equal(weft_fiber_spawn(&f, &a, stall_spin, s), 0);
	/* clang-format on */
	return f;
}

static void spin_reported(unsigned workers)
{
	start(workers, THRESHOLD_MS);
	struct spin s = {.worker = {-1, -1}};
	weft_fiber_t f = spawn_spinner(&s);
	assert_int_equal(wait_stalls(1), 1);
	/* It goes on spinning for a few thresholds more (as long as the
	 * monitor takes to look several times, unless the machine is very
	 * busy): the same stall is not reported again. */
	for (int i = 0; i < 5 * THRESHOLD_MS; i++)
		weft_sleep_until(wt_ms(1));
	assert_int_equal(stalls(), 1);
	char first[sizeof text];
	memcpy(first, text, text_len + 1);

	/* A yield, then another spin: a new stall, a new report. */
	atomic_store(&s.phase, 1);
	assert_int_equal(wait_stalls(2), 2);
	atomic_store(&s.phase, 2);
	assert_null(wt_join(f));
	assert_int_equal(weft_run(), 0);
	int w0 = atomic_load(&s.worker[0]);
	assert_true(w0 >= 0 && (unsigned)w0 < workers);
	weft_worker_stats_t st;
	assert_int_equal(weft_worker_stats((unsigned)w0, &st), 0);
	assert_true(st.stalls >= 1);
	assert_int_equal(weft_shutdown(), 0);

	/* The first report: who, where from, where, how long. */
	print_message("%s", first);
	assert_int_equal(count(first, "weft: stall: "), 1);
	char want[256];
	snprintf(want, sizeof want,
		 "weft: stall: fiber %llu \"spinner\" (spawned at %s:%d) has run for ",
		 (unsigned long long)f, __FILE__, spawn_line);
	assert_non_null(strstr(first, want));
	snprintf(want, sizeof want, " ms on worker %d without a suspension point\n", w0);
	assert_non_null(strstr(first, want));
	const char *ms = strstr(first, "has run for ") + strlen("has run for ");
	assert_true(atoi(ms) >= THRESHOLD_MS);
	/* Its backtrace, where the target can take one. */
#if WT_LINUX && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
	assert_non_null(strstr(first, "    #0 0x"));
	assert_non_null(strstr(first, "stall_spin+0x"));
#elif WT_LINUX
	/* Under TSan the signal waits for the runtime's next interceptor,
	 * which a spinning loop never calls; musl's static binaries have no
	 * dladdr to name the frames. */
	assert_true(strstr(first, "    #0 0x") || strstr(first, "    (no backtrace: "));
#else
	assert_non_null(strstr(first, "    (no backtrace: not on this target)\n"));
#endif
	/* Two stalls, two reports. */
	assert_int_equal(count(text, "weft: stall: "), 2);
}

static void test_spin_reported_one_worker(void **state)
{
	(void)state;
	spin_reported(1);
}

static void test_spin_reported_two_workers(void **state)
{
	(void)state;
	spin_reported(2);
}

/* ---- A fiber that yields often ------------------------------------------ */

/* Runs for n turns of about a millisecond each (of the clock, which runs
 * at least as fast as the worker's CPU time), yielding after each. */
static void *yield_often(void *arg)
{
	int n = (int)(intptr_t)arg;
	for (int i = 0; i < n; i++) {
		int64_t t = weft_now() + 1000000;
		volatile uint64_t k = 0;
		while (weft_now() < t)
			k++;
		weft_fiber_yield();
	}
	return NULL;
}

static void test_yielding_not_reported(void **state)
{
	(void)state;
	/* Alone on one worker: each yield finds nothing else to run and
	 * returns without a switch, yet it is a suspension point. */
	start(1, QUIET_THRESHOLD_MS);
	assert_null(wt_run_fiber(yield_often, (void *)(intptr_t)(3 * QUIET_THRESHOLD_MS)));
	assert_int_equal(weft_run(), 0);
	assert_int_equal(stalls(), 0);
	assert_int_equal(weft_shutdown(), 0);
	assert_int_equal(text_len, 0);
	/* Two on two workers, yielding to whatever else runs. */
	start(2, QUIET_THRESHOLD_MS);
	weft_fiber_t a = wt_spawn(yield_often, (void *)(intptr_t)(2 * QUIET_THRESHOLD_MS));
	weft_fiber_t b = wt_spawn(yield_often, (void *)(intptr_t)(2 * QUIET_THRESHOLD_MS));
	assert_null(wt_join(a));
	assert_null(wt_join(b));
	assert_int_equal(weft_run(), 0);
	assert_int_equal(stalls(), 0);
	assert_int_equal(weft_shutdown(), 0);
	assert_int_equal(text_len, 0);
}

/* ---- Off ---------------------------------------------------------------- */

/* Spins for five thresholds of the worker's time (at most 10 s of the
 * clock): long enough that a detector would have reported it. */
static void *spin_a_while(void *arg)
{
	(void)arg;
	int64_t until = worker_time() + 5 * THRESHOLD_MS * 1000000LL;
	int64_t end = weft_now() + 10000000000LL;
	while (worker_time() < until && weft_now() < end)
		;
	return NULL;
}

static void test_off(void **state)
{
	(void)state;
	start(1, WEFT_STALL_OFF);
	assert_null(wt_run_fiber(spin_a_while, NULL));
	assert_int_equal(weft_run(), 0);
	assert_int_equal(stalls(), 0);
	assert_int_equal(weft_shutdown(), 0);
	assert_int_equal(text_len, 0);
	/* 0 in the environment is off too, when the configuration says 0. */
	setenv("WEFT_STALL_MS", "0", 1);
	start(1, 0);
	assert_null(wt_run_fiber(spin_a_while, NULL));
	assert_int_equal(weft_run(), 0);
	assert_int_equal(stalls(), 0);
	assert_int_equal(weft_shutdown(), 0);
	assert_int_equal(text_len, 0);
	/* And a threshold there turns it on. */
	char v[16];
	snprintf(v, sizeof v, "%d", THRESHOLD_MS);
	setenv("WEFT_STALL_MS", v, 1);
	start(1, 0);
	struct spin s = {.worker = {-1, -1}};
	weft_fiber_t f = spawn_spinner(&s);
	assert_int_equal(wait_stalls(1), 1);
	atomic_store(&s.phase, 2);
	assert_null(wt_join(f));
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	unsetenv("WEFT_STALL_MS");
	assert_int_equal(count(text, "weft: stall: fiber"), 1);
}

/* ---- Bad configuration -------------------------------------------------- */

static void test_bad_config(void **state)
{
	(void)state;
	const char *bad[] = {"abc", "-1", "3600001", "20ms", "99999999999999999999"};
	for (int i = 0; i < 5; i++) {
		setenv("WEFT_STALL_MS", bad[i], 1);
		assert_int_equal(weft_init(NULL), -EINVAL);
	}
	/* The configuration's own value wins, and is checked. */
	weft_config_t c = {.workers = 1, .stall_ms = THRESHOLD_MS};
	assert_int_equal(weft_init(&c), 0);
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	unsetenv("WEFT_STALL_MS");
	c.stall_ms = -2;
	assert_int_equal(weft_init(&c), -EINVAL);
	c.stall_ms = 3600001;
	assert_int_equal(weft_init(&c), -EINVAL);
	c.stall_ms = 3600000;
	assert_int_equal(weft_init(&c), 0);
	assert_int_equal(weft_shutdown(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spin_reported_one_worker),
		cmocka_unit_test(test_spin_reported_two_workers),
		cmocka_unit_test(test_yielding_not_reported),
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_bad_config),
	};
	return WT_MAIN("stall", tests, NULL, NULL);
}
