/* SPDX-License-Identifier: MIT */
/* select: wait on channel sends, receives and futures at once and perform
 * exactly one of them, as Go's select does.
 *
 * The caller takes the locks of every channel and future involved, in
 * address order (so two selects cannot deadlock) and each once. Holding them
 * it looks at the cases in a random order and performs the first that is
 * ready, so each ready case is equally likely. If none is, it queues a
 * waiter on every case, all sharing one park generation and marked claim,
 * releases the locks and parks. A waker (a sender, receiver, close or
 * settlement) must claim such a waiter before completing it: the claim is
 * weft__unpark, which only the first of them wins, under the lock of the
 * waker's own channel. So a rendezvous sender never hands its element to a
 * select that another case has already completed; it drops that waiter and
 * tries the next. After waking, the caller takes the locks again: the one
 * waiter marked done is the chosen case, and the rest are withdrawn. A
 * deadline or a cancellation wins the same CAS, so then no case completes.
 *
 * A READY case waits on something the runtime does not own (a socket of
 * net/): its owner's operations (struct weft__waitable_ops, service.h) give
 * its lock, look at it, and queue and withdraw the waiter, whose waker
 * claims it as a channel's does. It performs nothing, so being chosen
 * costs it nothing but the report. */
#include <limits.h>
#include <stdlib.h>

#include "internal.h"

#define STACK_CASES 8

struct slot {
	struct weft__waiter w;
	weft__lock_t *lock;
};

static _Thread_local uint64_t rng;
/* The generator: the thread's, or under a simulation the running actor's
 * (sim.c carries one per actor, as each thread has its own). */
#define RNG (*SIM_SELECT_RNG(&rng))

static uint64_t rand64(void)
{
	/* Under a simulation seed the generator's seed is drawn from it, so
	 * that a seed replays select's choices too (not an address, which
	 * ASLR moves from run to run). */
	if (!RNG)
		RNG = SIM_DRAW(UINT64_MAX, SIM_SELECT_SEED,
			       (uint64_t)weft_now() ^ (uint64_t)(uintptr_t)&RNG) |
		      1;
	/* xorshift64* */
	RNG ^= RNG >> 12;
	RNG ^= RNG << 25;
	RNG ^= RNG >> 27;
	return RNG * 0x2545f4914f6cdd1dull;
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (weft__lock_t *const *)a;
	uintptr_t y = (uintptr_t) * (weft__lock_t *const *)b;
	return x < y ? -1 : x > y;
}

/* locks[] sorted; a lock shared by several cases is taken once. */
static void lock_all(weft__lock_t **locks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (i == 0 || locks[i] != locks[i - 1])
			weft__lock(locks[i]);
}

static void unlock_all(weft__lock_t **locks, size_t n)
{
	for (size_t i = n; i-- > 0;)
		if (i == 0 || locks[i] != locks[i - 1])
			weft__unlock(locks[i]);
}

static bool valid(const weft_select_case_t *c)
{
	switch (c->op) {
	case WEFT_SELECT_NONE:
		return true;
	case WEFT_SELECT_SEND:
	case WEFT_SELECT_RECV:
		return c->chan && c->elem;
	case WEFT_SELECT_FUTURE:
		return c->future;
	case WEFT_SELECT_READY:
		return c->waitable && (c->events == WEFT_IO_IN || c->events == WEFT_IO_OUT);
	default:
		return false;
	}
}

/* Perform case c now if it is ready (locks held): true, with its result. */
static bool try_case(weft_select_case_t *c)
{
	if (c->op == WEFT_SELECT_FUTURE) {
		struct weft__future *f = (struct weft__future *)c->future;
		if (atomic_load_explicit(&f->state, memory_order_relaxed) == FS_PENDING)
			return false;
		c->result = weft__future_outcome(f, &c->value);
		return true;
	}
	if (c->op == WEFT_SELECT_READY) {
		int r = c->waitable->ops->poll(c->waitable, c->events);
		if (r == 0)
			return false;
		c->result = r;
		return true;
	}
	int r = weft__chan_try(c->chan, c->op == WEFT_SELECT_SEND, c->elem);
	if (r == -EAGAIN)
		return false;
	c->result = r;
	return true;
}

static void arm(weft_select_case_t *c, struct weft__waiter *w)
{
	if (c->op == WEFT_SELECT_READY)
		c->waitable->ops->arm(c->waitable, c->events, w);
	else if (c->op == WEFT_SELECT_FUTURE)
		weft__waitq_push(&((struct weft__future *)c->future)->waiters, w);
	else
		weft__chan_enqueue(c->chan, c->op == WEFT_SELECT_SEND, w);
}

static void disarm(weft_select_case_t *c, struct weft__waiter *w)
{
	if (c->op == WEFT_SELECT_READY) {
		c->waitable->ops->disarm(c->waitable, c->events, w);
	} else if (c->op != WEFT_SELECT_FUTURE) {
		weft__chan_dequeue(c->chan, c->op == WEFT_SELECT_SEND, w);
	} else if (w->next) {
		weft__waitq_remove(&((struct weft__future *)c->future)->waiters, w);
	}
}

/* Lock held: the chosen case, -1 if none is ready. */
static long choose(weft_select_case_t *cases, size_t *order, size_t k)
{
	/* Fisher-Yates, drawn as it goes: the first ready case in a uniformly
	 * random order is a uniformly random ready case. */
	for (size_t j = 0; j < k; j++) {
		size_t r = j + (size_t)(rand64() % (k - j));
		size_t i = order[r];
		order[r] = order[j];
		order[j] = i;
		if (try_case(&cases[i]))
			return (long)i;
	}
	return -1;
}

int weft_select(weft_select_case_t *cases, size_t n, int64_t deadline)
{
	if ((n && !cases) || n > INT_MAX)
		return -EINVAL;
	deadline = weft__deadline_norm(deadline); /* past: tries once, as 0 */
	size_t k = 0;                             /* cases that take part */
	for (size_t i = 0; i < n; i++) {
		if (!valid(&cases[i]))
			return -EINVAL;
		k += cases[i].op != WEFT_SELECT_NONE;
	}

	struct slot stack_slots[STACK_CASES];
	weft__lock_t *stack_locks[STACK_CASES];
	size_t stack_order[STACK_CASES];
	struct slot *slots = stack_slots;
	weft__lock_t **locks = stack_locks;
	size_t *order = stack_order;
	if (n > STACK_CASES) {
		slots = calloc(n, sizeof *slots);
		locks = malloc(n * sizeof *locks);
		order = malloc(n * sizeof *order);
		if (!slots || !locks || !order) {
			free(slots);
			free(locks);
			free(order);
			return -ENOMEM;
		}
	}

	for (size_t i = 0, j = 0; i < n; i++) {
		weft_select_case_t *c = &cases[i];
		if (c->op == WEFT_SELECT_NONE)
			continue;
		if (c->op == WEFT_SELECT_FUTURE) {
			weft_future_retain(c->future); /* as await does */
			slots[i].lock = &((struct weft__future *)c->future)->lock;
		} else if (c->op == WEFT_SELECT_READY) {
			c->waitable->ops->hold(c->waitable);
			slots[i].lock = c->waitable->ops->lock(c->waitable);
		} else {
			slots[i].lock = weft__chan_lock(c->chan);
		}
		locks[j] = slots[i].lock;
		order[j++] = i;
	}
	qsort(locks, k, sizeof *locks, by_address);

	struct weft__fiber *self = weft__self();
	lock_all(locks, k);
	long chosen = choose(cases, order, k);
	int r = 0;
	if (chosen >= 0) {
		unlock_all(locks, k);
	} else {
		uint32_t gen = weft__park_begin_why(self, "select");
		if (deadline != 0) {
			for (size_t j = 0; j < k; j++) {
				size_t i = order[j];
				slots[i].w = (struct weft__waiter){
					.f = self, .gen = gen, .claim = 1, .data = cases[i].elem};
				arm(&cases[i], &slots[i].w);
			}
		}
		unlock_all(locks, k);
		/* Deadline 0 queued nothing: this only settles the park, with
		 * -ETIMEDOUT or a pending cancellation. */
		r = weft__park_end(self, deadline);
		if (deadline != 0) {
			lock_all(locks, k);
			for (size_t j = 0; j < k; j++) {
				size_t i = order[j];
				if (slots[i].w.done) {
					chosen = (long)i;
					cases[i].result = slots[i].w.result;
				} else {
					disarm(&cases[i], &slots[i].w);
				}
			}
			unlock_all(locks, k);
		}
		if (chosen >= 0 && cases[chosen].op == WEFT_SELECT_FUTURE)
			cases[chosen].result = weft__future_outcome(
				(struct weft__future *)cases[chosen].future, &cases[chosen].value);
		/* A case completes only by winning the park (its claim), so a
		 * completed case and a timeout or cancellation exclude each other. */
		if (chosen < 0 && r == 0)
			r = -EINTR;
	}

	for (size_t i = 0; i < n; i++) {
		if (cases[i].op == WEFT_SELECT_FUTURE)
			weft_future_release(cases[i].future);
		else if (cases[i].op == WEFT_SELECT_READY)
			cases[i].waitable->ops->release(cases[i].waitable);
	}
	if (slots != stack_slots) {
		free(slots);
		free(locks);
		free(order);
	}
	return chosen >= 0 ? (int)chosen : r;
}
