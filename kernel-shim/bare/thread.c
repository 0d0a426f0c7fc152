/* SPDX-License-Identifier: MIT */
/* Threads on one hart. The runtime's workers, a test's helper threads and the
 * boot thread ("main") are kernel threads of their own here: each has a
 * guarded stack, its own TLS block (picolibc's errno, the runtime's current
 * worker) and a place on one ring. They switch cooperatively when one waits
 * (shim_wait, join) or yields, and the timer interrupt preempts a thread that
 * runs past its time slice while another could run, so a spinning thread can
 * never starve the rest (docs/decisions/bare-threads.md).
 *
 * One hart: interrupts off is the lock for everything here. A thread switches
 * only with interrupts off, and each resumes with the interrupt state it had
 * when it switched out. */
#include <errno.h>
#include <limits.h>
#include <picolibc.h>
#include <picotls.h>
#include <stdlib.h>
#include <string.h>
#include <sys/lock.h>

#include "arch.h"
#include "bare.h"
#include "shim.h"

#define THREAD_STACK (64 * 1024)
#define SLICE_NS 2000000 /* 2 ms */

enum { T_RUN, T_WAIT, T_DONE };

struct shim_thread {
	void *sp;                 /* saved by arch_switch */
	void *tls;                /* the value of tp while it runs */
	struct shim_thread *next; /* the ring of every thread */
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
	/* Time it held the hart (shim_thread_cputime): until since, and
	 * from since on while it is cur. */
	int64_t ran, since;
};

static struct shim_thread main_thread = {.next = &main_thread};
static struct shim_thread *cur = &main_thread;
/* When the running thread's time slice ends. A thread always gets its whole
 * slice unless it waits: were a sleeper's deadline allowed to cut it short,
 * a thread switched to after that deadline had passed would be preempted
 * at its first instruction, every time, and never run. */
static int64_t slice_end;

void thread_init(void *tls) { main_thread.tls = tls; }

unsigned shim_cpu_count(void) { return 1; }

static int can_run(struct shim_thread *t, int64_t now)
{
	if (t->state == T_RUN)
		return 1;
	if (t->state != T_WAIT)
		return 0;
	return t->woken || atomic_load_explicit(t->word, memory_order_relaxed) != t->expected ||
	       (t->deadline >= 0 && now >= t->deadline);
}

/* The FPU's control state (rounding mode, exception flags) is a thread's
 * own, as a Linux thread's is: arch_switch keeps only what a call keeps, so
 * prev saves it here and puts it back when it is switched to again (a
 * preempted thread's is also in its preemption frame, trap.S; a new one
 * starts from its creator's, thread_entry). Without this a worker thread
 * preempted while a WEFT_ATTR_FPENV fiber ran in its own rounding mode
 * handed that mode to the thread switched to (test_fpenv_kept_while_preempted,
 * and test_fpenv_kept_across_workers now and then). */
/* Interrupts off. The time up to now goes to cur. */
static void charge(int64_t now)
{
	cur->ran += now - cur->since;
	cur->since = now;
}

static void switch_to(struct shim_thread *t)
{
	struct shim_thread *prev = cur;
	uint64_t fp = fp_csr_read();
	int64_t now = shim_now();
	charge(now);
	t->since = now;
	cur = t;
	__asm__ volatile("mv tp, %0" ::"r"(t->tls) : "memory");
	arch_switch(&prev->sp, t->sp);
	fp_csr_write(fp);
}

/* The earliest deadline of a waiting thread, or -1. */
static int64_t next_deadline(void)
{
	int64_t d = -1;
	struct shim_thread *t = cur;
	do {
		if (t->state == T_WAIT && t->deadline >= 0 && (d < 0 || t->deadline < d))
			d = t->deadline;
		t = t->next;
	} while (t != cur);
	return d;
}

/* Interrupts off. Run the next thread that can run, starting after cur (so
 * every runnable thread gets its turn), cur itself last. With none, wait in
 * wfi for the timer or a device: a pending interrupt enabled in sie ends wfi
 * even with sstatus.SIE off. Re-arming the timer clears the timer's; a
 * device's is served right here (it is not taken with SIE off, and would
 * end every wfi at once while the thread its handler wakes never ran). */
static void schedule(void)
{
	for (;;) {
		int64_t now = shim_now();
		struct shim_thread *t = cur->next;
		for (;;) {
			if (can_run(t, now))
				break;
			if (t == cur) {
				t = NULL;
				break;
			}
			t = t->next;
		}
		if (t) {
			if (t->state == T_WAIT)
				t->state = T_RUN;
			slice_end = now + SLICE_NS;
			clock_set_timer(slice_end);
			if (t != cur)
				switch_to(t);
			return;
		}
		clock_set_timer(next_deadline());
		charge(shim_now());
		wfi();
		cur->since = shim_now(); /* the hart slept: nobody ran */
		if (csr_read(sip) & SIP_SEIP)
			trap_external();
	}
}

/* At the end of a slice, preempt the running thread if another can run
 * (schedule(), called on its way out, starts the next slice); else give it
 * another slice. */
int thread_tick(void)
{
	int64_t now = shim_now();
	if (now < slice_end) {
		clock_set_timer(slice_end);
		return 0;
	}
	for (struct shim_thread *t = cur->next; t != cur; t = t->next)
		if (can_run(t, now))
			return 1;
	slice_end = now + SLICE_NS;
	clock_set_timer(slice_end);
	return 0;
}

/* After a device's interrupt handler ran on the trap stack: if it made a
 * waiting thread runnable (a wake, or the word it waits on changed: the
 * reactor's poller, a worker kicked by weft_fiber_interrupt), the running
 * thread is preempted now, so the woken one runs without waiting for the
 * end of this slice. A sleeper whose deadline merely passed does not count:
 * that is the timer's, and waits for the slice to end (see slice_end). */
int thread_irq_woke(void)
{
	for (struct shim_thread *t = cur->next; t != cur; t = t->next)
		if (t->state == T_WAIT &&
		    (t->woken ||
		     atomic_load_explicit(t->word, memory_order_relaxed) != t->expected))
			return 1;
	return 0;
}

int64_t shim_thread_cputime(shim_thread_t t)
{
	int on = irq_save();
	int64_t ns = t->ran + (t == cur ? shim_now() - t->since : 0);
	irq_restore(on);
	return ns;
}

/* Called by arch_preempt_resume on the preempted thread's own stack. */
void shim__preempted(void);
void shim__preempted(void) { schedule(); }

void shim_thread_yield(void)
{
	int on = irq_save();
	schedule();
	irq_restore(on);
}

int shim_wait(_Atomic uint32_t *word, uint32_t expected, int64_t deadline)
{
	int on = irq_save();
	int r = 0;
	if (atomic_load(word) == expected) {
		cur->word = word;
		cur->expected = expected;
		cur->deadline = deadline;
		cur->woken = 0;
		cur->state = T_WAIT;
		schedule();
		if (!cur->woken && atomic_load(word) == expected && deadline >= 0 &&
		    shim_now() >= deadline)
			r = -ETIMEDOUT;
		cur->word = NULL;
	}
	irq_restore(on);
	return r;
}

/* Also from an interrupt handler: it only marks threads, with interrupts off
 * (the ring changes only with them off). A handler can as well just change
 * the word a thread waits on: can_run sees that. */
void shim_wake(_Atomic uint32_t *word, int n)
{
	int on = irq_save();
	struct shim_thread *t = cur;
	do {
		if (n > 0 && t->state == T_WAIT && t->word == word && !t->woken) {
			t->woken = 1;
			n--;
		}
		t = t->next;
	} while (t != cur);
	irq_restore(on);
}

static void thread_entry(void *arg)
{
	struct shim_thread *t = arg;
	/* Its creator's, as a POSIX thread's is, not whatever the thread
	 * that switched here first had. */
	fp_csr_write(t->fp_csr);
	csr_set(sstatus, SSTATUS_SIE);
	t->fn(t->arg);
	irq_save();
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
	t->fn = fn;
	t->arg = arg;
	t->fp_csr = fp_csr_read();
	t->sp = arch_frame_init((char *)t->stack.base + t->stack.size, thread_entry, t);
	int on = irq_save();
	t->next = cur->next;
	cur->next = t;
	irq_restore(on);
	*out = t;
	return 0;
}

void shim_thread_join(shim_thread_t t)
{
	while (!atomic_load(&t->done))
		shim_wait(&t->done, 0, -1);
	int on = irq_save();
	struct shim_thread *p = cur;
	while (p->next != t)
		p = p->next;
	p->next = t->next;
	irq_restore(on);
	shim_stack_free(&t->stack);
	free(t->tls_mem);
	free(t);
}

/* ---- picolibc's locks (malloc, environ, stdio) ---------------------------
 * Held briefly and never across a wait, so a contender just yields the hart
 * until the holder, preempted inside, has let go. */
struct __lock {
	struct shim_thread *owner;
	int depth;
};
struct __lock __lock___libc_recursive_mutex;

void __retarget_lock_init(_LOCK_T *lock) { *lock = calloc(1, sizeof(struct __lock)); }
void __retarget_lock_init_recursive(_LOCK_T *lock) { __retarget_lock_init(lock); }
void __retarget_lock_close(_LOCK_T lock) { free(lock); }
void __retarget_lock_close_recursive(_LOCK_T lock) { free(lock); }

int __retarget_lock_try_acquire_recursive(_LOCK_T lock)
{
	if (!lock)
		return 1;
	int on = irq_save(), got = 0;
	if (!lock->owner || lock->owner == cur) {
		lock->owner = cur;
		lock->depth++;
		got = 1;
	}
	irq_restore(on);
	return got;
}

int __retarget_lock_try_acquire(_LOCK_T lock)
{
	return __retarget_lock_try_acquire_recursive(lock);
}

void __retarget_lock_acquire_recursive(_LOCK_T lock)
{
	while (!__retarget_lock_try_acquire_recursive(lock))
		shim_thread_yield();
}

void __retarget_lock_acquire(_LOCK_T lock) { __retarget_lock_acquire_recursive(lock); }

void __retarget_lock_release_recursive(_LOCK_T lock)
{
	if (!lock)
		return;
	int on = irq_save();
	if (lock->owner == cur && --lock->depth == 0)
		lock->owner = NULL;
	irq_restore(on);
}

void __retarget_lock_release(_LOCK_T lock) { __retarget_lock_release_recursive(lock); }
