/* SPDX-License-Identifier: MIT */
/* The simulator (docs/decisions/simulation.md), in libweft-sim.a only (the
 * Makefile leaves it out of libweft.a). With a seed, weft_init's workers
 * and every shim_thread_start thread are actors: coroutines with stacks of
 * their own, run one at a time on the OS thread that called weft_init
 * (actor 0). At each point (sim.h's SIM_POINT, and a shim_wait that
 * sleeps) the next actor is drawn from the runnable ones with a generator
 * seeded by the seed; shim_wait and shim_wake keep a futex's meaning over
 * the table of waiting actors. Every draw goes into a digest (FNV-1a of the
 * actor, the kind of point and the value drawn: never an address), printed
 * with the seed when the last actor is joined:
 *
 *     weft sim: WEFT_SIM_SEED=0x1 steps=4242 digest=0x...
 *
 * The clock (shim_now here) is the runtime's virtual clock (time.c), forced
 * on, from a fixed epoch: it moves only when every worker is idle. What the
 * runtime measured in the shim's time while busy (the worker's spin, the
 * next-run slot's grace) is drawn instead (sim.h's SIM_DRAW). When every
 * actor waits, the earliest shim_wait deadline ends; with none, that is a
 * deadlock: the line and the actors are printed and the run aborts.
 *
 * Two more checkers abort the same way, for what no scenario's results
 * show (docs/simulation-evidence.md): a worker whose spin ends empty
 * IDLE_SPINS_MAX times in a row without a fiber run or a sleep in between
 * (a spinning idle worker), and, whenever every actor waits,
 * a fiber on the starved list while the shared tier holds stacks it could
 * have (starved for good: a sleeper drains its cache there first).
 *
 * What is per thread goes with each actor (tests/sim/tls.sh checks that
 * every _Thread_local of runtime/ and net/ is named on the next line).
 * Carried per actor: weft__tls_worker errno thread_self rng */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Here the shim's own calls: the simulator's are what sim.h maps them to. */
#undef shim_wait
#undef shim_wake
#undef shim_now
#undef shim_thread_start
#undef shim_thread_join
#undef shim_thread_yield

#define MAX_ACTORS (WEFT_MAX_WORKERS + 16)
#define ACTOR_STACK (256 * 1024)
#define SIM_EPOCH ((int64_t)1 << 40) /* about 18 minutes, in ns */
/* A worker whose spin ended empty (SIM_SPIN_END) sleeps, or runs what its
 * last look before sleeping found; seeds 1-60 of every scenario (and
 * sim_starve with stack=300) end at most 34 spins in a row without one or
 * the other (a slot's grace, work another worker took first). A worker
 * that takes for its own work it can never have spins for good. */
#define IDLE_SPINS_MAX 1000

enum { A_FREE, A_RUNNABLE, A_WAITING, A_DONE };

struct actor {
	int state;
	void *sp;                /* saved by arch_switch while it does not run */
	struct shim_stack stack; /* none for actor 0 (the calling thread's) */
	void (*fn)(void *);
	void *arg;
	struct weft__worker *tls; /* its weft__tls_worker while switched out */
	int err;                  /* its errno while switched out */
	struct weft__fiber self;  /* park.c's thread_self: its stand-in fiber */
	uint64_t select_rng;      /* select.c's rng */
	_Atomic uint32_t *word;   /* A_WAITING: on this word ... */
	int64_t deadline;         /* ... until this shim_now time (-1: none) */
	uint64_t wait_seq;        /* ... since this wait (wakes go in this order) */
	bool timed_out;
	_Atomic uint32_t exited; /* its function returned (join waits on it) */
	uint64_t spins;          /* its worker's empty spins in a row */
	uint64_t switches;       /* its worker's switch count at the last one */
};

static struct actor actors[MAX_ACTORS];
static struct actor *cur;
static bool on;
/* The OS thread the simulation runs on (every actor runs on it): another
 * one that calls into the runtime under a seed is refused (own_thread). */
static _Thread_local bool sim_os_thread;
static uint64_t seed, rng, digest, steps, wait_seq;
static int64_t clock_ns;

static int id_of(const struct actor *a) { return (int)(a - actors); }

/* splitmix64: every draw of the run comes from here. */
static uint64_t next_rand(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void digest_u64(uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		digest ^= (v >> (8 * i)) & 0xff;
		digest *= 0x100000001b3ull;
	}
}

/* A draw below n at a point of this kind by the running actor, digested. */
static uint64_t draw(uint64_t n, enum weft__sim_kind kind)
{
	uint64_t v = n > 1 ? next_rand() % n : 0;
	digest_u64((uint64_t)id_of(cur));
	digest_u64((uint64_t)kind);
	digest_u64(v);
	steps++;
	return v;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n > 0)
		shim_console_write(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static void say_line(const char *what)
{
	char faults[96]; /* the rates, to replay (sim_fault.c) */
	weft__sim_fault_words(faults, sizeof faults);
	say("weft sim: %sWEFT_SIM_SEED=0x%llx%s%s steps=%llu digest=0x%016llx\n", what,
	    (unsigned long long)seed, *faults ? " WEFT_SIM_FAULTS=" : "", faults,
	    (unsigned long long)steps, (unsigned long long)digest);
}

static const char *state_name(int s)
{
	return s == A_RUNNABLE ? "runnable" : s == A_WAITING ? "waiting" : "done";
}

/* Every actor waits and no wait has a deadline: nothing can ever run
 * again (a lost wake). A timer armed then is one no idle worker was told
 * of. The line names the seed that replays it. */
static void deadlock(void)
{
	say_line("deadlock, every actor waits and no deadline: ");
	int64_t t = weft__timer_next();
	if (t != INT64_MAX)
		say("weft sim: a timer is armed, due in %lld ns\n", (long long)(t - weft__now()));
	for (int i = 0; i < MAX_ACTORS; i++) {
		struct actor *a = &actors[i];
		if (a->state == A_FREE)
			continue;
		struct weft__worker *w = a == cur ? weft__tls_worker : a->tls;
		if (w)
			say("weft sim:   actor %d: worker %d, %s\n", i, w->index,
			    state_name(a->state));
		else
			say("weft sim:   actor %d: thread, %s\n", i, state_name(a->state));
	}
	abort();
}

/* Under a seed, only the simulation's actors may reach the simulator: a
 * thread the program made itself (pthread_create, not shim_thread_start)
 * would run beside the schedule, not in it, and nothing it did would
 * replay. It is refused, loudly, at the first point, wait, wake or yield
 * it reaches (docs/debugging.md, "Simulation"). */
static void own_thread(void)
{
	if (on && !sim_os_thread) {
		say("weft sim: a thread the simulation did not start (pthread_create, not "
		    "shim_thread_start) called into the runtime under a seed: refused\n");
		abort();
	}
}

/* A worker's spin ended empty (SIM_SPIN_END): IDLE_SPINS_MAX of them in
 * a row, with no fiber run (its switch count) and no sleep (the actor's
 * wait) in between, is a worker spinning for good. */
static void idle_spin(void)
{
	struct weft__worker *w = weft__tls_worker;
	if (!w)
		return;
	uint64_t sw = atomic_load_explicit(&w->switches, memory_order_relaxed);
	if (sw != cur->switches) {
		cur->switches = sw;
		cur->spins = 0;
	}
	if (++cur->spins < IDLE_SPINS_MAX)
		return;
	say("weft sim: worker %d ended its spin empty %d times in a row without running a "
	    "fiber or sleeping\n",
	    w->index, IDLE_SPINS_MAX);
	say_line("spinning idle worker: ");
	abort();
}

/* Every actor waits: no fiber may wait on the starved list beside a stack
 * it could have. Every sleeping worker drained its cache into the shared
 * tier, and a stack taken from there is never refused, so a starved fiber
 * with stacks there is one nobody readied when they came back. */
static void starved_check(void)
{
	unsigned n = weft__stack_shared();
	if (!weft__starved() || !n)
		return;
	say("weft sim: every actor waits, %u fiber(s) on the starved list and %u stack(s) in "
	    "the shared tier\n",
	    atomic_load_explicit(&weft__nstarved, memory_order_relaxed), n);
	say_line("starved for good: ");
	abort();
}

int64_t weft__sim_now(void)
{
	if (!on)
		return shim_now();
	return weft__vclock_on() ? weft__now() : clock_ns;
}

/* The clock moves to t (never back). */
static void move_clock(int64_t t)
{
	if (weft__vclock_on())
		weft__vclock_set(t);
	else if (t > clock_ns)
		clock_ns = t;
}

/* When every actor waits: the earliest deadline ends (lowest id first at a
 * tie), and the clock moves to it. */
static void time_out_earliest(void)
{
	starved_check();
	struct actor *e = NULL;
	for (int i = 0; i < MAX_ACTORS; i++) {
		struct actor *a = &actors[i];
		if (a->state == A_WAITING && a->deadline >= 0 && (!e || a->deadline < e->deadline))
			e = a;
	}
	if (!e)
		deadlock();
	move_clock(e->deadline);
	e->state = A_RUNNABLE;
	e->timed_out = true;
}

/* Draw the next actor among the runnable ones, in the order of their ids. */
static struct actor *pick(enum weft__sim_kind kind)
{
	struct actor *run[MAX_ACTORS];
	int n = 0;
	for (;;) {
		for (int i = 0; i < MAX_ACTORS; i++)
			if (actors[i].state == A_RUNNABLE)
				run[n++] = &actors[i];
		if (n)
			break;
		time_out_earliest();
	}
	return run[draw((uint64_t)n, kind)];
}

/* From the running actor to a: what is per thread goes with each. */
static void switch_to(struct actor *a)
{
	struct actor *self = cur;
	if (a == self)
		return;
	self->tls = weft__tls_worker;
	self->err = errno;
	cur = a;
	weft__tls_worker = a->tls;
	errno = a->err;
	arch_switch(&self->sp, a->sp);
}

void weft__sim_point(enum weft__sim_kind kind)
{
	if (on) {
		own_thread();
		if (kind == SIM_SPIN_END)
			idle_spin();
		weft__sim_fault_point(kind); /* the cancel/interrupt actor */
		switch_to(pick(kind));
	}
}

uint64_t weft__sim_draw(uint64_t n, enum weft__sim_kind kind, uint64_t dflt)
{
	return on ? draw(n, kind) : dflt;
}

bool weft__sim_threads_run(void)
{
	if (!on)
		return false;
	/* A worker's actor has its worker in tls while switched out; one not
	 * yet started has none and counts here until it has run. */
	for (int i = 0; i < MAX_ACTORS; i++)
		if (&actors[i] != cur && actors[i].state == A_RUNNABLE && !actors[i].tls)
			return true;
	return false;
}

struct weft__fiber *weft__sim_thread_self(struct weft__fiber *tls) { return on ? &cur->self : tls; }

uint64_t *weft__sim_select_rng(uint64_t *tls) { return on ? &cur->select_rng : tls; }

/* An actor's per-thread state as a new thread's. */
static void actor_fresh(struct actor *a)
{
	a->tls = NULL;
	a->err = 0;
	a->self = (struct weft__fiber){.flags = FF_THREAD};
	a->select_rng = 0;
}

void weft__sim_start(uint64_t s)
{
	memset(actors, 0, sizeof actors);
	seed = s;
	rng = s;
	digest = 0xcbf29ce484222325ull;
	steps = 0;
	wait_seq = 0;
	clock_ns = SIM_EPOCH;
	cur = &actors[0];
	actor_fresh(cur);
	cur->state = A_RUNNABLE;
	cur->deadline = -1;
	sim_os_thread = true;
	on = true;
}

int weft__sim_wait(_Atomic uint32_t *word, uint32_t expected, int64_t deadline)
{
	if (!on)
		return shim_wait(word, expected, deadline);
	own_thread();
	if (atomic_load(word) != expected)
		return 0;
	if (deadline >= 0 && deadline <= weft__sim_now())
		return -ETIMEDOUT;
	struct actor *self = cur;
	self->state = A_WAITING;
	self->word = word;
	self->deadline = deadline;
	self->wait_seq = wait_seq++;
	self->timed_out = false;
	self->spins = 0; /* it sleeps */
	switch_to(pick(SIM_WAIT));
	/* Woken (the waker made it runnable) or its deadline ended. */
	self->word = NULL;
	return self->timed_out ? -ETIMEDOUT : 0;
}

void weft__sim_wake(_Atomic uint32_t *word, int n)
{
	if (!on) {
		shim_wake(word, n);
		return;
	}
	own_thread();
	/* The longest waiting first. */
	while (n-- > 0) {
		struct actor *first = NULL;
		for (int i = 0; i < MAX_ACTORS; i++) {
			struct actor *a = &actors[i];
			if (a->state == A_WAITING && a->word == word &&
			    (!first || a->wait_seq < first->wait_seq))
				first = a;
		}
		if (!first)
			return;
		first->state = A_RUNNABLE;
	}
}

/* An actor's first frame: its function, then never again. */
static void actor_main(void *arg)
{
	struct actor *self = arg;
	self->fn(self->arg);
	self->state = A_DONE;
	atomic_store(&self->exited, 1);
	weft__sim_wake(&self->exited, INT_MAX);
	switch_to(pick(SIM_WAIT));
	abort(); /* nobody switches to a finished actor */
}

/* Whether an actor but the calling thread's is alive or not yet joined. */
static bool any_actor(void)
{
	for (int i = 1; i < MAX_ACTORS; i++)
		if (actors[i].state != A_FREE)
			return true;
	return false;
}

int weft__sim_thread_start(shim_thread_t *out, void (*fn)(void *), void *arg)
{
	if (!on)
		return shim_thread_start(out, fn, arg);
	own_thread();
	struct actor *a = NULL;
	for (int i = 1; i < MAX_ACTORS && !a; i++)
		if (actors[i].state == A_FREE)
			a = &actors[i];
	int e = a ? shim_stack_alloc(ACTOR_STACK, &a->stack) : -EAGAIN;
	if (e) {
		/* weft_init's first worker: it gives up, and joins none (the
		 * last join would end the simulation), so it ends here. */
		if (!any_actor())
			on = false;
		return e;
	}
	a->fn = fn;
	a->arg = arg;
	actor_fresh(a);
	a->word = NULL;
	a->deadline = -1;
	atomic_store(&a->exited, 0);
	a->sp = arch_frame_init((char *)a->stack.base + a->stack.size, actor_main, a);
	a->state = A_RUNNABLE;
	*out = (shim_thread_t)(void *)a;
	return 0;
}

static struct actor *actor_of(shim_thread_t t)
{
	uintptr_t p = (uintptr_t)(void *)t;
	if (p < (uintptr_t)&actors[1] || p >= (uintptr_t)&actors[MAX_ACTORS])
		return NULL;
	return (struct actor *)(void *)t;
}

void weft__sim_thread_join(shim_thread_t t)
{
	struct actor *a = on ? actor_of(t) : NULL;
	if (!a) {
		shim_thread_join(t);
		return;
	}
	while (!atomic_load(&a->exited))
		weft__sim_wait(&a->exited, 0, -1);
	shim_stack_free(&a->stack);
	a->state = A_FREE;
	/* The last actor gone: the run ends, and says how it went. */
	if (any_actor())
		return;
	weft__sim_fault_stop();
	say_line("");
	on = false;
}

void weft__sim_thread_yield(void)
{
	if (on)
		weft__sim_point(SIM_YIELD);
	else
		shim_thread_yield();
}
