/* SPDX-License-Identifier: MIT */
/* Allocation failure at every site a scenario reaches (issue 14, item 4).
 *
 * This suite is linked with --wrap for malloc, calloc, realloc,
 * aligned_alloc, free and shim_stack_alloc (tests/allocwrap.h), so every
 * allocation the runtime makes is counted and can be made to fail. One
 * scenario (init; channels, a buffered one too; futures and a combinator
 * over nine of them; a select of nine cases; a mutex, a semaphore, a wait
 * group; messages to a fiber and to a step-process; a generator; named
 * fibers with local storage, a value set in it; an offload to a helper
 * thread; sleeps; join; run; shutdown) is run once to
 * count its allocations and warm the runtime's lasting tables, then again
 * with the Nth counted allocation failing, for every N up to that count.
 * Each time:
 * - every call either succeeds or returns -ENOMEM having done nothing, so
 *   the scenario retries it once and goes on (the runtime keeps serving);
 * - every result the scenario computes is the one it computes without a
 *   failure (sums, counts, sleeps that never end before their deadline);
 * - after shutdown the blocks still allocated are no more than after the
 *   warm-up runs: nothing leaked (fewer happens: a pool the failure kept
 *   from filling); under ASan, LeakSanitizer finds no block unreachable,
 *   checked after every run.
 * Sockets, and lwIP's pools and pbufs, are walked by test_allocfail_net. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "allocwrap.h"
#include "internal.h" /* weft__starves */
#include "shim.h"     /* shim_stack_alloc, shim_stack_free */
#include "testutil.h"

/* ---- The scenario ------------------------------------------------------ */

static _Atomic int bad_line; /* the first check that failed, 0: none */
static _Atomic long nomem;   /* calls that returned -ENOMEM (and were retried) */

#define CHECK(cond)                                                                 \
	do {                                                                        \
		if (!(cond)) {                                                      \
			int zero = 0;                                               \
			atomic_compare_exchange_strong(&bad_line, &zero, __LINE__); \
		}                                                                   \
	} while (0)

/* A call that may fail for memory: retried once, and then it must work
 * (only one allocation fails per run). also: one more error that means the
 * same (weft_offload's -EAGAIN: no helper thread could start). */
#define TRY_ALSO(call, also)                         \
	({                                           \
		int r_ = (call);                     \
		if (r_ == -ENOMEM || r_ == (also)) { \
			atomic_fetch_add(&nomem, 1); \
			r_ = (call);                 \
		}                                    \
		r_;                                  \
	})
#define TRY(call) TRY_ALSO(call, -ENOMEM)

enum { NFUT = 9, NSEL = 9, NMSG = 3 };

static weft_fls_key_t key; /* keys last for the process */

struct world {
	weft_chan_t *rv, *buf;    /* rendezvous and buffered (4) */
	weft_future_t *fut[NFUT]; /* resolved by the producer */
	weft_mutex_t *mu;
	weft_sem_t *sem;
	weft_waitgroup_t *wg;
	weft_pid_t step;
	weft_fiber_t consumer;
	long sum_rv, sum_buf, sum_msg, sum_step, sum_gen, counter;
	_Atomic long step_got;
};

static void *doubled(void *arg) { return (void *)((intptr_t)arg * 2); }

static void *producer(void *arg)
{
	struct world *wd = arg;
	CHECK(TRY(weft_fls_set(key, wd)) == 0 && weft_fls_get(key) == wd);
	void *res = NULL;
	CHECK(TRY_ALSO(weft_offload(doubled, (void *)21, &res), -EAGAIN) == 0 && res == (void *)42);
	for (long i = 1; i <= 5; i++) {
		CHECK(weft_chan_send(wd->rv, &i, wt_ms(60000)) == 0);
		CHECK(weft_chan_send(wd->buf, &i, wt_ms(60000)) == 0);
	}
	for (long i = 1; i <= NMSG; i++) {
		CHECK(TRY(weft_mailbox_send(wd->consumer, &i, sizeof i, wt_ms(60000))) == 0);
		CHECK(TRY(weft_mailbox_send(wd->step, &i, sizeof i, wt_ms(60000))) == 0);
	}
	for (int i = 0; i < NFUT; i++)
		CHECK(weft_future_resolve(wd->fut[i], (void *)(intptr_t)(i + 1)) == 0);
	CHECK(weft_mutex_lock(wd->mu, -1) == 0);
	wd->counter++;
	CHECK(weft_mutex_unlock(wd->mu) == 0);
	CHECK(weft_sem_release(wd->sem) == 0);
	CHECK(weft_waitgroup_done(wd->wg) == 0);
	return NULL;
}

static void *consumer(void *arg)
{
	struct world *wd = arg;
	long v;
	/* Five from each channel: the rendezvous one through a select of nine
	 * cases (above the eight kept on the stack: it allocates). */
	for (int k = 0; k < 5; k++) {
		weft_select_case_t cs[NSEL];
		memset(cs, 0, sizeof cs);
		cs[0] = (weft_select_case_t){.op = WEFT_SELECT_RECV, .chan = wd->rv, .elem = &v};
		int r = TRY(weft_select(cs, NSEL, wt_ms(60000)));
		CHECK(r == 0 && cs[0].result == 0);
		wd->sum_rv += v;
	}
	for (int k = 0; k < 5; k++) {
		CHECK(weft_chan_recv(wd->buf, &v, wt_ms(60000)) == 0);
		wd->sum_buf += v;
	}
	for (int k = 0; k < NMSG; k++) {
		size_t len = 0;
		CHECK(TRY(weft_mailbox_recv(&v, sizeof v, &len, wt_ms(60000))) == 0 &&
		      len == sizeof v);
		wd->sum_msg += v;
	}
	void *vals[NFUT];
	CHECK(TRY(weft_future_all(wd->fut, NFUT, wt_ms(60000), vals, NULL)) == 0);
	for (int i = 0; i < NFUT; i++)
		CHECK(vals[i] == (void *)(intptr_t)(i + 1));
	CHECK(weft_sem_acquire(wd->sem, wt_ms(60000)) == 0);
	/* A sleep never ends before its deadline, whatever the timer heap
	 * could get. */
	int64_t until = weft_deadline_in(1000000);
	CHECK(weft_sleep_until(until) == 0 && weft_now() >= until);
	return NULL;
}

static void *counting_gen(void *arg)
{
	(void)arg;
	for (long i = 1; i <= 3; i++)
		if (weft_gen_yield((void *)i))
			break;
	return NULL;
}

static int step_fn(weft_step_t *p, unsigned events)
{
	struct world *wd = weft_step_arg(p);
	long v;
	if (events & WEFT_STEP_EV_MSG)
		while (weft_mailbox_recv(&v, sizeof v, NULL, 0) == 0) {
			wd->sum_step += v;
			atomic_fetch_add(&wd->step_got, 1);
		}
	return atomic_load(&wd->step_got) == NMSG ? WEFT_STEP_DONE : WEFT_STEP_CONTINUE;
}

static const weft_step_ops_t step_ops = {.step = step_fn};

/* The whole scenario, from a plain thread (the test's): init to shutdown. */
static void scenario(struct world *wd)
{
	memset(wd, 0, sizeof *wd);
	weft_config_t cfg = {.workers = 2};
	CHECK(TRY(weft_init(&cfg)) == 0);
	CHECK(TRY(weft_chan_create(&wd->rv, sizeof(long), 0)) == 0);
	CHECK(TRY(weft_chan_create(&wd->buf, sizeof(long), 4)) == 0);
	for (int i = 0; i < NFUT; i++)
		CHECK(TRY(weft_future_create(&wd->fut[i])) == 0);
	CHECK(TRY(weft_mutex_create(&wd->mu)) == 0);
	CHECK(TRY(weft_sem_create(&wd->sem, 0)) == 0);
	CHECK(TRY(weft_waitgroup_create(&wd->wg)) == 0);
	CHECK(weft_waitgroup_add(wd->wg, 1) == 0);
	CHECK(TRY(weft_step_spawn(&wd->step, &step_ops, wd)) == 0);

	weft_attr_t named = {.name = "consumer", .fls = WEFT_FLS_COPY};
	weft_fiber_t c, p;
	CHECK(TRY(weft_fiber_spawn(&c, &named, consumer, wd)) == 0);
	wd->consumer = c;
	named.name = "producer";
	CHECK(TRY(weft_fiber_spawn(&p, &named, producer, wd)) == 0);

	weft_gen_t *g;
	CHECK(TRY(weft_gen_create(&g, NULL, counting_gen, NULL)) == 0);
	void *gv;
	int r;
	while ((r = weft_gen_next(g, wt_ms(60000), &gv)) == 0)
		wd->sum_gen += (long)gv;
	CHECK(r == -EPIPE);
	CHECK(weft_gen_destroy(g, wt_ms(60000), NULL) == 0);

	CHECK(weft_fiber_join(c, wt_ms(60000), NULL, NULL) == 0);
	CHECK(weft_fiber_join(p, wt_ms(60000), NULL, NULL) == 0);
	CHECK(weft_waitgroup_wait(wd->wg, wt_ms(60000)) == 0);
	CHECK(weft_run() == 0); /* the step-process has ended too */

	CHECK(wd->sum_rv == 15 && wd->sum_buf == 15);
	CHECK(wd->sum_msg == 6 && wd->sum_step == 6 && wd->sum_gen == 6);
	CHECK(wd->counter == 1);

	CHECK(weft_chan_destroy(wd->rv) == 0);
	CHECK(weft_chan_destroy(wd->buf) == 0);
	for (int i = 0; i < NFUT; i++)
		CHECK(weft_future_release(wd->fut[i]) == 0);
	CHECK(weft_mutex_destroy(wd->mu) == 0);
	CHECK(weft_sem_destroy(wd->sem) == 0);
	CHECK(weft_waitgroup_destroy(wd->wg) == 0);
	CHECK(weft_shutdown() == 0);
}

/* One run with the Nth allocation failing (0: none). */
static void run_once(long n)
{
	static struct world wd;
	wt_alloc_arm(n);
	scenario(&wd);
	wt_alloc_disarm();
}

static void test_every_allocation_fails_once(void **state)
{
	(void)state;
	/* The suite's own runtime is down: the scenario has its own. */
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	if (!key)
		assert_int_equal(weft_fls_key_create(&key, NULL), 0);

	/* Warm-up: the runtime's lasting tables (the fiber table's chunks,
	 * the buckets of the step-process registry's 16 shards, one more per
	 * run until each has had a pid) until a few runs in a row keep
	 * nothing more; then the count of allocations a run makes. */
	long base = -1, total = 0, seen[64];
	int same = 0, runs = 0;
	while (runs < 64 && same < 3) {
		run_once(0);
		assert_int_equal(atomic_load(&bad_line), 0);
		same = wt_alloc_live() == base ? same + 1 : 0;
		base = seen[runs++] = wt_alloc_live();
		total = wt_alloc_counted();
	}
	if (same < 3) /* a run that keeps a block for good leaks */
		for (int i = 0; i < runs; i++)
			print_message("warm-up run %d: %ld blocks live after it\n", i + 1, seen[i]);
	assert_int_equal(same, 3);

	long walked = 0, retried_before = atomic_load(&nomem);
	int64_t end = wt_ms(60000 * 3);
	for (long n = 1; n <= total + total / 4 && weft_now() < end; n++) {
		run_once(n);
		walked = n;
		int line = atomic_load(&bad_line);
		long leaked = wt_alloc_live() - base;
		int lsan = wt_alloc_leak_check();
		/* Fewer than after the warm-up is no leak: a pool the failure
		 * kept from growing (the bare shim's pooled stacks). */
		if (line || leaked > 0 || lsan)
			print_message(
				"allocation %ld of about %ld failed: check at line %d, %ld blocks "
				"leaked%s\n",
				n, total, line, leaked, lsan ? ", LeakSanitizer found a leak" : "");
		assert_int_equal(line, 0);
		assert_true(leaked <= 0);
		assert_int_equal(lsan, 0);
		if (wt_alloc_failed() == 0)
			break; /* this run made fewer than n allocations: all walked */
	}
	print_message("walked %ld of %ld allocations, %ld calls returned -ENOMEM\n", walked, total,
		      atomic_load(&nomem) - retried_before);
	assert_true(walked >= total); /* not cut short by the time bound */
	assert_true(atomic_load(&nomem) > retried_before);

	assert_int_equal(weft_init(NULL), 0); /* for the suite's teardown */
}

/* ---- A stack at the first run, not at the spawn -------------------------
 * (docs/decisions/lazy-stacks.md) One worker, so that nothing runs until
 * the fiber that spawns yields the worker. */

static void *give_back(void *arg) { return arg; }

enum { NLAZY = 2000 };

static void *spawn_many(void *arg)
{
	long *stacks = arg;
	static weft_fiber_t kids[NLAZY];
	long before = wt_alloc_stacks();
	for (long i = 0; i < NLAZY; i++)
		if (weft_fiber_spawn(&kids[i], NULL, give_back, (void *)(i + 1)) != 0)
			return (void *)1;
	stacks[0] = wt_alloc_stacks() - before; /* asked while none had run */
	for (long i = 0; i < NLAZY; i++) {
		void *r = NULL;
		if (weft_fiber_join(kids[i], -1, &r, NULL) != 0 || r != (void *)(i + 1))
			return (void *)2;
	}
	stacks[1] = wt_alloc_stacks() - before; /* once all had run, one by one */
	return NULL;
}

static void test_spawned_fiber_holds_no_stack(void **state)
{
	(void)state;
	wt_restart(1, 0);
	long stacks[2] = {-1, -1};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, spawn_many, stacks), 0);
	void *r = (void *)-1;
	assert_int_equal(weft_fiber_join(f, -1, &r, NULL), 0);
	assert_null(r);
	/* At most the one spawn makes sure of for the worker's cache (the
	 * pools were emptied by the shutdown): 2,000 fibers spawned and not
	 * yet run hold none. Run one after another they take turns on two
	 * (the next starts while the one that ended is still on its own).
	 * With stacks taken at spawn this was 2,000 and 2,000. */
	print_message("stacks asked of the shim: %ld while %d fibers waited, %ld in all\n",
		      stacks[0], NLAZY, stacks[1]);
	assert_true(stacks[0] >= 0 && stacks[0] <= 1);
	assert_true(stacks[1] >= 0 && stacks[1] <= 2);
	wt_restart_default(); /* the group's runtime again */
}

/* A fiber whose first run finds no stack waits for one; here the fiber
 * that could free one waits for it in turn, so only the idle worker's
 * second try can end the wait. */
struct starve {
	weft_chan_t *ch;
	weft_fiber_t waiter, sender;
};

static void *receive_one(void *arg)
{
	struct starve *st = arg;
	long v = 0;
	return weft_chan_recv(st->ch, &v, -1) == 0 ? (void *)v : NULL;
}

static void *send_one(void *arg)
{
	struct starve *st = arg;
	long v = 42;
	return weft_chan_send(st->ch, &v, -1) == 0 ? (void *)1 : NULL;
}

static void *starve_main(void *arg)
{
	struct starve *st = arg;
	if (weft_fiber_spawn(&st->waiter, NULL, receive_one, st) != 0 ||
	    weft_fiber_spawn(&st->sender, NULL, send_one, st) != 0)
		return (void *)1;
	/* The waiter takes the stack in the worker's cache and parks on the
	 * channel; the sender's first run asks the shim, and is refused. */
	wt_alloc_fail_next_stack();
	void *a = NULL, *b = NULL;
	if (weft_fiber_join(st->waiter, -1, &a, NULL) != 0 ||
	    weft_fiber_join(st->sender, -1, &b, NULL) != 0)
		return (void *)2;
	return a == (void *)42 && b == (void *)1 ? NULL : (void *)3;
}

static void test_fiber_without_stack_waits_for_one(void **state)
{
	(void)state;
	wt_restart(1, 0);
	struct starve st;
	assert_int_equal(weft_chan_create(&st.ch, sizeof(long), 0), 0);
	uint64_t starves = atomic_load(&weft__starves);
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, starve_main, &st), 0);
	void *r = (void *)-1;
	assert_int_equal(weft_fiber_join(f, -1, &r, NULL), 0);
	assert_null(r);
	/* the sender's first run was refused once, and it ran all the same */
	assert_int_equal(atomic_load(&weft__starves) - starves, 1);
	assert_int_equal(weft_chan_destroy(st.ch), 0);
	wt_restart_default();
}

/* ---- A starved fiber gets the stacks another worker gives back ------------
 * Worker 1 makes a fiber's first run while its cache and the shared tier
 * are empty and the shim gives no stack; worker 0 holds stacks in its
 * cache and stays busy. Under the shim's pressure worker 0 gives them back
 * at its next look around, and the starved fiber must run then, not only
 * once some fiber ends (otherwise, on four harts, a connection's fiber in
 * test_demand's test_full_memory_refuses_new_work can wait for good while
 * stacks another worker gave back sit unused). */
struct giveback {
	_Atomic int phase;          /* 1: worker 0's cache is full and it is busy */
	_Atomic int ran;            /* the starved fiber ran */
	_Atomic int ran_while_busy; /* ... before worker 0's fiber gave up */
};

static void *nothing(void *arg) { return arg; }

/* Pins the caller to worker 0 and ends four children there, so that their
 * stacks wait in worker 0's cache. 0, or which step failed (1 to 3). */
static intptr_t fill_cache_on_0(void)
{
	if (weft_fiber_pin(0) != 0)
		return 1;
	weft_fiber_t k[4];
	for (int i = 0; i < 4; i++)
		if (weft_fiber_spawn(&k[i], &(weft_attr_t){.flags = WEFT_ATTR_PIN}, nothing,
				     NULL) != 0)
			return 2;
	for (int i = 0; i < 4; i++)
		if (weft_fiber_join(k[i], -1, NULL, NULL) != 0)
			return 3;
	return 0;
}

static void *first_run(void *arg)
{
	atomic_store(&((struct giveback *)arg)->ran, 1);
	return NULL;
}

#define GIVEBACK_BUSY_NS 5000000000LL /* how long worker 0 stays busy at most */

/* On worker 0: stacks into its cache (its children end there), then busy,
 * yielding, until the starved fiber ran. */
static void *busy_on_0(void *arg)
{
	struct giveback *g = arg;
	intptr_t e = fill_cache_on_0();
	if (e)
		return (void *)e;
	uint64_t starves = atomic_load(&weft__starves);
	atomic_store(&g->phase, 1);
	/* No look around (no yield) until worker 1 has starved the fiber and
	 * gone to sleep: it then can only be given the stacks here. */
	int64_t end = weft_now() + GIVEBACK_BUSY_NS;
	while ((atomic_load(&weft__starves) == starves ||
		!atomic_load(&weft__rt.workers[1].asleep)) &&
	       !atomic_load(&g->ran) && weft_now() < end)
		arch_relax();
	while (!atomic_load(&g->ran) && weft_now() < end)
		weft_fiber_yield();
	atomic_store(&g->ran_while_busy, atomic_load(&g->ran));
	return NULL;
}

/* On worker 1: spawns the fiber, then leaves no stack on its side. */
static void *starve_on_1(void *arg)
{
	struct giveback *g = arg;
	if (weft_fiber_pin(1) != 0)
		return (void *)1;
	int64_t end = weft_now() + GIVEBACK_BUSY_NS;
	while (!atomic_load(&g->phase) && weft_now() < end)
		weft_fiber_yield();
	weft_fiber_t f;
	if (weft_fiber_spawn(&f, &(weft_attr_t){.flags = WEFT_ATTR_PIN}, first_run, g) != 0)
		return (void *)2;
	weft__stack_cache_drain(weft__worker_self());
	weft__stack_trim(0);
	wt_alloc_stack_room(0); /* the shim is out of stacks */
	return weft_fiber_join(f, -1, NULL, NULL) == 0 ? NULL : (void *)3;
}

static void test_starved_fiber_gets_stacks_given_back(void **state)
{
	(void)state;
	wt_restart(2, 0);
	struct giveback g = {0};
	uint64_t starves = atomic_load(&weft__starves);
	weft_fiber_t a, b;
	assert_int_equal(weft_fiber_spawn(&a, NULL, busy_on_0, &g), 0);
	assert_int_equal(weft_fiber_spawn(&b, NULL, starve_on_1, &g), 0);
	void *ra = (void *)-1, *rb = (void *)-1;
	assert_int_equal(weft_fiber_join(a, -1, &ra, NULL), 0);
	assert_int_equal(weft_fiber_join(b, -1, &rb, NULL), 0);
	wt_alloc_stack_room(-1);
	assert_null(ra);
	assert_null(rb);
	/* It was refused at least once, and ran while worker 0 was busy.
	 * A refusal is tried again only after stacks went back or once
	 * before a worker sleeps: a handful of times, where a worker whose
	 * own refusals looked like stacks given back spun through millions
	 * on one hart. */
	uint64_t refused = atomic_load(&weft__starves) - starves;
	assert_true(refused >= 1);
	assert_true(refused <= 16);
	assert_true(atomic_load(&g.ran_while_busy));
	wt_restart_default();
}

/* ---- A refused retry while another worker gives its stacks back ---------
 * Worker 1 retries its starved fiber once before it sleeps (the scheduler
 * loop's weft__run) and the shim refuses it again. Between that run's look
 * at the empty shared tier and its putting the fiber back on the starved
 * list, worker 0 gives its cached stacks to the shared tier, sees nothing
 * starved, and sleeps. Worker 1, having retried once already, would sleep
 * too, beside stacks its fiber could have had: it must see that stacks went
 * back since its look, as a refused first run inside a switch does. The
 * shim's refusal holds worker 1 at that point (wt_alloc_on_stack_refused)
 * until worker 0 is asleep, so the interleaving happens every time. */
struct retry {
	_Atomic int refusals; /* stacks the shim refused since the hold was set */
	_Atomic int held;     /* worker 1 is held in the second refusal */
	_Atomic int phase;    /* 1: worker 0's cache is full and it is busy */
	_Atomic int ran;      /* the starved fiber ran */
	int joined;           /* worker 1's join of it, within RETRY_WAIT_MS */
};

#define RETRY_HOLD_NS 10000000000LL /* how long each side waits for the other at most */
#define RETRY_WAIT_MS 5000          /* the fiber runs in microseconds once let go */

static void retry_hold(void *arg)
{
	struct retry *rt = arg;
	/* The first refusal is the first run's, in the switch (no_stack);
	 * the second is the loop's retry before sleeping. */
	if (atomic_fetch_add(&rt->refusals, 1) + 1 != 2)
		return;
	atomic_store(&rt->held, 1);
	int64_t end = weft_now() + RETRY_HOLD_NS;
	while (!atomic_load(&weft__rt.workers[0].asleep) && weft_now() < end)
		wt_thread_yield();
}

static void *retry_ran(void *arg)
{
	atomic_store(&((struct retry *)arg)->ran, 1);
	return NULL;
}

/* On worker 0: stacks into its cache, then busy without a look for work
 * until worker 1 is held, then it ends and the worker goes idle. */
static void *retry_busy_0(void *arg)
{
	struct retry *rt = arg;
	intptr_t e = fill_cache_on_0();
	if (e)
		return (void *)e;
	atomic_store(&rt->phase, 1);
	int64_t end = weft_now() + RETRY_HOLD_NS;
	while (!atomic_load(&rt->held) && weft_now() < end)
		arch_relax();
	return atomic_load(&rt->held) ? NULL : (void *)4;
}

/* On worker 1: spawns the fiber with no stack left on its side, and joins
 * it (its park makes the first run). */
static void *retry_starve_1(void *arg)
{
	struct retry *rt = arg;
	if (weft_fiber_pin(1) != 0)
		return (void *)1;
	int64_t end = weft_now() + RETRY_HOLD_NS;
	while (!atomic_load(&rt->phase) && weft_now() < end)
		weft_fiber_yield();
	weft_fiber_t f;
	if (weft_fiber_spawn(&f, &(weft_attr_t){.flags = WEFT_ATTR_PIN}, retry_ran, rt) != 0)
		return (void *)2;
	weft__stack_cache_drain(weft__worker_self());
	weft__stack_trim(0);
	wt_alloc_on_stack_refused(retry_hold, rt);
	wt_alloc_stack_room(0); /* the shim is out of stacks */
	rt->joined = weft_fiber_join(f, wt_ms(RETRY_WAIT_MS), NULL, NULL);
	/* Lost, it is found again once a fiber has run here: let it end. */
	wt_alloc_stack_room(-1);
	return rt->joined == 0 || weft_fiber_join(f, -1, NULL, NULL) == 0 ? NULL : (void *)3;
}

static void test_refused_retry_sees_stacks_given_back(void **state)
{
	(void)state;
	wt_restart(2, 0);
	struct retry rt = {0};
	weft_fiber_t a, b;
	assert_int_equal(weft_fiber_spawn(&a, NULL, retry_busy_0, &rt), 0);
	assert_int_equal(weft_fiber_spawn(&b, NULL, retry_starve_1, &rt), 0);
	void *ra = (void *)-1, *rb = (void *)-1;
	assert_int_equal(weft_fiber_join(a, -1, &ra, NULL), 0);
	assert_int_equal(weft_fiber_join(b, -1, &rb, NULL), 0);
	wt_alloc_on_stack_refused(NULL, NULL);
	wt_alloc_stack_room(-1);
	assert_null(ra); /* worker 1 was held in its second refusal */
	assert_null(rb);
	assert_true(atomic_load(&rt.refusals) >= 2);
	/* Worker 1 found the stacks worker 0 gave back, without waiting for
	 * the join's deadline to wake a worker. */
	assert_int_equal(rt.joined, 0);
	assert_true(atomic_load(&rt.ran));
	wt_restart_default();
}

/* ---- A stack's addresses survive a failed malloc --------------------------
 * The shim's own stack calls, under the wrapper (which counts a stack as an
 * allocation): freeing a stack allocates nothing, so it goes back to its
 * pool whatever malloc does at that moment, and the next stack of its size
 * gets its addresses. (The bare shim allocated a pool node at the free, and
 * lost the addresses for good when that failed.) */
int __real_shim_stack_alloc(size_t size, struct shim_stack *out);

static void test_stack_free_allocates_nothing(void **state)
{
	(void)state;
	/* Nothing else allocates meanwhile: the suite's runtime is down. */
	assert_int_equal(weft_run(), 0);
	assert_int_equal(weft_shutdown(), 0);
	enum { SIZE = 72 * 1024, OTHER = 76 * 1024 }; /* sizes no fiber here uses */
	struct shim_stack a, b, c;
	assert_int_equal(__real_shim_stack_alloc(SIZE, &a), 0);
	wt_alloc_arm(1); /* the first allocation fails */
	shim_stack_free(&a);
	long made = wt_alloc_counted();
	wt_alloc_disarm();
	assert_int_equal(made, 0);

	/* Taken from the pool: no allocation either, and a's addresses. */
	wt_alloc_arm(1);
	assert_int_equal(__real_shim_stack_alloc(SIZE, &b), 0);
	made = wt_alloc_counted();
	wt_alloc_disarm();
	assert_int_equal(made, 0);
	assert_ptr_equal(b.base, a.base);
	shim_stack_free(&b);

	/* Fresh addresses may need an allocation (the bare shim's pool node):
	 * if it fails, the stack is refused, and the next try gets one. */
	wt_alloc_arm(1);
	int r = __real_shim_stack_alloc(OTHER, &c);
	long failed = wt_alloc_failed();
	wt_alloc_disarm();
	assert_true(r == 0 || (r == -ENOMEM && failed == 1));
	if (r != 0)
		assert_int_equal(__real_shim_stack_alloc(OTHER, &c), 0);
	memset((char *)c.base + c.size - 4096, 0x5a, 4096); /* its top page works */
	shim_stack_free(&c);
	assert_int_equal(weft_init(NULL), 0); /* for the suite's teardown */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_allocation_fails_once),
		cmocka_unit_test(test_spawned_fiber_holds_no_stack),
		cmocka_unit_test(test_fiber_without_stack_waits_for_one),
		cmocka_unit_test(test_starved_fiber_gets_stacks_given_back),
		cmocka_unit_test(test_refused_retry_sees_stacks_given_back),
		cmocka_unit_test(test_stack_free_allocates_nothing),
	};
	return WT_MAIN("allocfail", tests, wt_start, wt_stop);
}
