/* SPDX-License-Identifier: MIT */
/* Threads on the harts. The runtime's workers, a test's helper threads and
 * the boot thread ("main") are kernel threads of their own here: each has a
 * guarded stack, its own TLS block (picolibc's errno, the runtime's current
 * worker) and a place on one ring, and runs on whichever hart picks it.
 * They switch cooperatively when one waits (shim_wait, join) or yields, and
 * the timer interrupt preempts a thread that runs past its time slice while
 * another could run, so a spinning thread can never starve the rest
 * (docs/decisions/bare-threads.md). A hart with nothing to run switches to
 * its own idle context and sleeps in wfi; making a thread runnable wakes a
 * sleeping hart with an IPI (docs/decisions/bare-smp.md).
 *
 * Everything here is under the shim lock (lock.c), held across a switch:
 * the hart that switches holds it until the thread switched to lets go.
 * Each thread resumes with the interrupt state it had when it switched
 * out. */
#include <errno.h>
#include <limits.h>
#include <picolibc.h>
#include <picotls.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "bare.h"
#include "shim.h"

#define THREAD_STACK (64 * 1024)
#define IDLE_STACK (16 * 1024)
#define SLICE_NS 2000000 /* 2 ms */

enum { T_RUN, T_WAIT, T_DONE, T_IDLE };

struct shim_thread {
	void *sp;                 /* saved by arch_switch */
	void *tls;                /* the value of tp while it runs */
	struct shim_thread *next; /* the ring of every thread (not the idle ones) */
	struct hart *hart;        /* the hart it runs on; NULL while it does not */
	int state;
	/* While T_WAIT: until *word != expected, a shim_wake, or the deadline. */
	_Atomic uint32_t *word;
	uint32_t expected;
	int woken;
	int64_t deadline;
	_Atomic uint32_t done;
	void (*fn)(void *);
	void *arg;
	uint64_t fp_csr; /* its creator's FPU control state, to start with */
	struct shim_stack stack;
	void *tls_mem;
	/* Time it held a hart (shim_thread_cputime): until since, and from
	 * since on while it runs. */
	int64_t ran, since;
};

static struct shim_thread main_thread = {.next = &main_thread};
/* The running thread: each thread's TLS names the thread itself, so the
 * hart it runs on is me->hart (tp is the thread's, and sscratch the trap
 * stack's: neither is free to name the hart). */
static _Thread_local struct shim_thread *me;
/* Where the next search of the ring starts: every runnable thread gets its
 * turn. */
static struct shim_thread *rr = &main_thread;

struct hart *shim_hart_self(void) { return me->hart; }

struct shim_thread *shim_thread_cur(void) { return me; }

/* Set t as the running thread in the TLS block tls (not yet any hart's). */
static void me_set(void *tls, struct shim_thread *t)
{
	uintptr_t tp;
	__asm__("mv %0, tp" : "=r"(tp));
	*(struct shim_thread **)((char *)tls + ((uintptr_t)&me - tp)) = t;
}

void shim_thread_init(void *tls)
{
	main_thread.tls = tls;
	main_thread.hart = &shim_harts[0];
	me = &main_thread;
}

static int can_run(struct shim_thread *t, int64_t now)
{
	if (t->state == T_RUN)
		return 1;
	if (t->state != T_WAIT)
		return 0;
	return t->woken || atomic_load_explicit(t->word, memory_order_relaxed) != t->expected ||
	       (t->deadline >= 0 && now >= t->deadline);
}

/* A thread that can run and runs on no hart, from after rr round the ring;
 * NULL if none. take: it is the one picked (rr moves to it). */
static struct shim_thread *pick(int64_t now, int take)
{
	struct shim_thread *t = rr;
	do {
		t = t->next;
		if (!t->hart && can_run(t, now)) {
			if (take)
				rr = t;
			return t;
		}
	} while (t != rr);
	return NULL;
}

/* Wake up to n harts asleep in their idle loop: something may run. */
static void kick(int n)
{
	struct hart *self = me->hart;
	for (unsigned i = 0; i < shim_hart_count && n > 0; i++) {
		struct hart *h = &shim_harts[i];
		if (h != self && h->asleep) {
			h->asleep = 0;
			shim_hart_kick(h);
			n--;
		}
	}
}

/* The FPU's control state (rounding mode, exception flags) is a thread's
 * own, as a Linux thread's is: arch_switch keeps only what a call keeps, so
 * prev saves it here and puts it back when it is switched to again (a
 * preempted thread's is also in its preemption frame, trap.S; a new one
 * starts from its creator's, thread_entry). Without this a worker thread
 * preempted while a WEFT_ATTR_FPENV fiber ran in its own rounding mode
 * handed that mode to the thread switched to (test_fpenv_kept_while_preempted,
 * and test_fpenv_kept_across_workers now and then). The shim lock's depth
 * is the switching thread's too. */
static void switch_to(struct shim_thread *t)
{
	struct shim_thread *prev = me;
	struct hart *h = prev->hart;
	uint64_t fp = fp_csr_read();
	unsigned depth = shim_big_depth();
	int64_t now = shim_now();
	prev->ran += now - prev->since;
	t->since = now;
	t->hart = h;
	__asm__ volatile("mv tp, %0" ::"r"(t->tls) : "memory");
	prev->hart = NULL;
	arch_switch(&prev->sp, t->sp);
	shim_big_depth_set(depth);
	fp_csr_write(fp);
}

/* The earliest deadline of a waiting thread, or -1. */
static int64_t next_deadline(void)
{
	int64_t d = -1;
	struct shim_thread *t = &main_thread;
	do {
		if (t->state == T_WAIT && t->deadline >= 0 && (d < 0 || t->deadline < d))
			d = t->deadline;
		t = t->next;
	} while (t != &main_thread);
	return d;
}

/* Run t on this hart, with a fresh slice. A thread switched away from that
 * can still run (preempted, or it yields) is one more for a sleeping
 * hart. */
static void run(struct shim_thread *t, int64_t now)
{
	struct hart *h = me->hart;
	if (t->state == T_WAIT)
		t->state = T_RUN;
	h->slice_end = now + SLICE_NS;
	shim_clock_set_timer(h->slice_end);
	if (t == me)
		return;
	if (me->state == T_RUN)
		kick(1);
	switch_to(t);
}

/* Run the next thread that can run, me itself last; with none, this
 * hart's idle context, which switches back here once me can run and this
 * hart picks it. */
static void schedule(void)
{
	int64_t now = shim_now();
	struct shim_thread *t = pick(now, 1);
	if (!t && can_run(me, now))
		t = me;
	if (t)
		run(t, now);
	else
		switch_to(me->hart->idle);
}

/* A hart's idle context, with the shim lock held: run what can run; with
 * nothing, sleep in wfi for the timer (the earliest deadline), a device
 * (the boot hart) or a kick. A pending interrupt enabled in sie ends wfi
 * even with sstatus.SIE off. The kick's IPI is cleared before looking at
 * the ring, and the hart says it sleeps under the lock it looked under: a
 * thread made runnable after the look finds it asleep and kicks it, and
 * that wfi returns at once. Re-arming the timer clears the timer's; a
 * device's is served right here (it is not taken with SIE off, and would
 * end every wfi at once while the thread its handler wakes never ran). */
static _Noreturn void idle_loop(struct hart *h)
{
	for (;;) {
		csr_clear(sip, SIP_SSIP);
		int64_t now = shim_now();
		struct shim_thread *t = pick(now, 1);
		if (t) {
			run(t, now);
			continue;
		}
		shim_clock_set_timer(next_deadline());
		h->asleep = 1;
		unsigned d = shim_big_drop();
		wfi();
		shim_big_retake(d);
		h->asleep = 0;
		if (h->index == 0 && (csr_read(sip) & SIP_SEIP)) {
			shim_trap_external();
			kick(INT_MAX);
		}
	}
}

static void idle_entry(void *arg) { idle_loop(arg); }

int shim_thread_idle_new(struct hart *h, int own_stack)
{
	size_t align = _tls_align() < 16 ? 16 : _tls_align();
	struct shim_thread *t = calloc(1, sizeof *t);
	void *tls = malloc(_tls_size() + align);
	void *stack = own_stack ? malloc(IDLE_STACK) : NULL;
	if (!t || !tls || (own_stack && !stack)) {
		free(t);
		free(tls);
		free(stack);
		return -ENOMEM;
	}
	t->state = T_IDLE;
	t->tls_mem = tls;
	t->tls = (void *)(((uintptr_t)tls + align - 1) & ~(uintptr_t)(align - 1));
	_init_tls(t->tls);
	me_set(t->tls, t);
	if (own_stack)
		t->sp = arch_frame_init((char *)stack + IDLE_STACK, idle_entry, h);
	h->idle = t;
	return 0;
}

_Noreturn void shim_thread_idle_run(struct hart *h)
{
	struct shim_thread *t = h->idle;
	t->hart = h;
	__asm__ volatile("mv tp, %0" ::"r"(t->tls) : "memory");
	shim_big_lock();
	t->since = shim_now();
	idle_loop(h);
}

/* At the end of a slice, preempt the running thread if another can run
 * (schedule(), called on its way out, starts the next slice); else give it
 * another slice. A thread always gets its whole slice unless it waits:
 * were a sleeper's deadline allowed to cut it short, a thread switched to
 * after that deadline had passed would be preempted at its first
 * instruction, every time, and never run. */
int shim_thread_tick(void)
{
	int on = shim_big_lock();
	struct hart *h = me->hart;
	int64_t now = shim_now();
	int r = 0;
	if (now < h->slice_end) {
		shim_clock_set_timer(h->slice_end);
	} else if (pick(now, 0)) {
		r = 1;
	} else {
		h->slice_end = now + SLICE_NS;
		shim_clock_set_timer(h->slice_end);
	}
	shim_big_unlock(on);
	return r;
}

/* After a device's interrupt handler ran on the trap stack: if it made a
 * waiting thread runnable (a wake, or the word it waits on changed: the
 * reactor's poller, a worker kicked by weft_fiber_interrupt), a sleeping
 * hart is woken for it and the running thread is preempted now, so the
 * woken one runs without waiting for the end of this slice. A sleeper whose
 * deadline merely passed does not count: that is the timer's, and waits for
 * the slice to end (see shim_thread_tick). */
int shim_thread_irq_woke(void)
{
	int on = shim_big_lock(), r = 0;
	struct shim_thread *t = &main_thread;
	do {
		if (t->state == T_WAIT && !t->hart &&
		    (t->woken ||
		     atomic_load_explicit(t->word, memory_order_relaxed) != t->expected))
			r = 1;
		t = t->next;
	} while (t != &main_thread);
	if (r)
		kick(INT_MAX);
	shim_big_unlock(on);
	return r;
}

int64_t shim_thread_cputime(shim_thread_t t)
{
	int on = shim_big_lock();
	int64_t ns = t->ran + (t->hart ? shim_now() - t->since : 0);
	shim_big_unlock(on);
	return ns;
}

/* Called by arch_preempt_resume on the preempted thread's own stack. */
void shim_preempted(void);
void shim_preempted(void)
{
	int on = shim_big_lock();
	schedule();
	shim_big_unlock(on);
}

void shim_thread_yield(void)
{
	int on = shim_big_lock();
	schedule();
	shim_big_unlock(on);
}

int shim_wait(_Atomic uint32_t *word, uint32_t expected, int64_t deadline)
{
	int on = shim_big_lock();
	struct shim_thread *c = me;
	int r = 0;
	if (atomic_load(word) == expected) {
		c->word = word;
		c->expected = expected;
		c->deadline = deadline;
		c->woken = 0;
		c->state = T_WAIT;
		schedule();
		if (!c->woken && atomic_load(word) == expected && deadline >= 0 &&
		    shim_now() >= deadline)
			r = -ETIMEDOUT;
		c->word = NULL;
	}
	shim_big_unlock(on);
	return r;
}

/* Also from an interrupt handler: it only marks threads, and wakes a
 * sleeping hart for each. A handler can as well just change the word a
 * thread waits on: can_run sees that, and shim_thread_irq_woke wakes a hart. */
void shim_wake(_Atomic uint32_t *word, int n)
{
	int on = shim_big_lock(), marked = 0;
	struct shim_thread *t = &main_thread;
	do {
		if (n > 0 && t->state == T_WAIT && t->word == word && !t->woken) {
			t->woken = 1;
			n--;
			marked++;
		}
		t = t->next;
	} while (t != &main_thread);
	kick(marked);
	shim_big_unlock(on);
}

static void thread_entry(void *arg)
{
	struct shim_thread *t = arg;
	/* Switched to with the shim lock held (switch_to): let it go. */
	shim_big_drop();
	/* Its creator's, as a POSIX thread's is, not whatever the thread
	 * that switched here first had. */
	fp_csr_write(t->fp_csr);
	csr_set(sstatus, SSTATUS_SIE);
	t->fn(t->arg);
	shim_big_lock();
	t->state = T_DONE;
	atomic_store(&t->done, 1);
	shim_wake(&t->done, INT_MAX);
	schedule(); /* never comes back: nothing runs a finished thread */
	abort();
}

int shim_thread_start(shim_thread_t *out, void (*fn)(void *), void *arg)
{
	struct shim_thread *t = calloc(1, sizeof *t);
	size_t align = _tls_align() < 16 ? 16 : _tls_align();
	void *tls = malloc(_tls_size() + align);
	if (!t || !tls) {
		free(t);
		free(tls);
		return -ENOMEM;
	}
	int e = shim_stack_alloc(THREAD_STACK, &t->stack);
	if (e) {
		free(t);
		free(tls);
		return e == -EINVAL ? -EAGAIN : e;
	}
	t->tls_mem = tls;
	t->tls = (void *)(((uintptr_t)tls + align - 1) & ~(uintptr_t)(align - 1));
	_init_tls(t->tls);
	me_set(t->tls, t);
	t->fn = fn;
	t->arg = arg;
	t->fp_csr = fp_csr_read();
	t->sp = arch_frame_init((char *)t->stack.base + t->stack.size, thread_entry, t);
	int on = shim_big_lock();
	t->next = main_thread.next;
	main_thread.next = t;
	kick(1);
	shim_big_unlock(on);
	*out = t;
	return 0;
}

/* Once done, t runs nowhere as soon as the lock is had: it set done with the
 * lock held, and its hart held it until the switch away from it ended. */
void shim_thread_join(shim_thread_t t)
{
	while (!atomic_load(&t->done))
		shim_wait(&t->done, 0, -1);
	int on = shim_big_lock();
	struct shim_thread *p = &main_thread;
	while (p->next != t)
		p = p->next;
	p->next = t->next;
	if (rr == t)
		rr = p;
	shim_big_unlock(on);
	shim_stack_free(&t->stack);
	free(t->tls_mem);
	free(t);
}
