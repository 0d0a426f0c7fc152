/* SPDX-License-Identifier: MIT */
/* What the runtime offers the layer above it inside the library, net/, and
 * nothing more: its lock, wait lists a caller parks on with a deadline,
 * waiting on an I/O source, service fibers, holding the runtime open,
 * waking a step-process, its clock, and how it reads a configuration number. net/ includes this and
 * shim.h, never internal.h. Every call here may be made from a fiber or a
 * plain thread unless it says not. */
#ifndef WEFT_SERVICE_H
#define WEFT_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "lock.h"
#include "weft.h"

struct weft__fiber;

/* ---- Wait lists (waiter.c) ----------------------------------------------- */

/* A parked caller queued on a primitive, under that primitive's lock. */
struct weft__waiter {
	struct weft__waiter *next, *prev;
	struct weft__fiber *f;
	uint32_t gen;
	int done;   /* set by the waker, under the lock */
	int result; /* what the waker reports */
	void *data; /* the element buffer, for channels */
	int claim;  /* one of several waiters sharing a park (select): a
			* waker must win weft__unpark before completing it */
};

void weft__waitq_push(struct weft__waiter **head, struct weft__waiter *w);
/* Take w off the list (next and prev become NULL). */
void weft__waitq_remove(struct weft__waiter **head, struct weft__waiter *w);
struct weft__waiter *weft__waitq_pop(struct weft__waiter **head);

/* Decide whether the waker may complete w, just taken off its list (under its
 * primitive's lock). A plain waiter always; a claim waiter only if this call
 * wakes its owner: one whose park has ended another way (another case won,
 * the deadline passed, a cancellation) is dropped, and its owner, finding it
 * neither queued nor done, knows it lost. */
bool weft__waiter_claim(struct weft__waiter *w);

/* Complete w (under its primitive's lock): done, result, and wake (a claim
 * waiter was woken by its claim). */
void weft__waiter_complete(struct weft__waiter *w, int result);

/* Park on a wait list whose lock is held: queue w, unlock, park, relock, and
 * settle the race between completion and timeout/cancel. Returns w->result if
 * a waker completed w, else the park result (w removed). Lock held on return. */
int weft__waiter_wait(weft__lock_t *lock, struct weft__waiter **head, struct weft__waiter *w,
		      int64_t deadline);

/* ---- Blocking work (offload.c) ------------------------------------------ */

/* Queue fn(arg) for a helper thread, as weft_offload does, without waiting:
 * *done (the caller's reference, for weft_future_release) resolves with
 * what fn returned. A caller that stops waiting (a deadline) destroys *done
 * and leaves: the job still runs, so what fn touches must not be the
 * caller's (net/resolve.c's jobs own their state with the caller, and
 * whichever of the two ends last frees it). 0, -EINVAL (fn or done NULL),
 * -ENOMEM, -EAGAIN (no helper thread), -ESRCH (runtime not running). */
int weft__offload_start(weft_fn fn, void *arg, weft_future_t **done);

/* ---- Waitables (select.c) -------------------------------------------------
 * What weft_select waits on that the runtime does not own (weft.h's
 * WEFT_SELECT_READY): net/'s sockets. The owner embeds a struct
 * weft_waitable and fills in its operations; select calls them as it does
 * its own cases: hold before anything, then lock (every case's lock, in
 * address order), poll, and if no case is ready arm, park, disarm, and
 * release last. events is WEFT_IO_IN or WEFT_IO_OUT. */
struct weft_waitable;
struct weft__waitable_ops {
	/* Keep the object alive until release (no lock held). */
	void (*hold)(struct weft_waitable *wa);
	void (*release)(struct weft_waitable *wa);
	/* The lock its readiness changes and its waiters are queued under. */
	weft__lock_t *(*lock)(struct weft_waitable *wa);
	/* Lock held: the ready events (> 0, WEFT_IO_ERR added for an error),
	 * 0 if none, or -errno that ends the case (-EBADF closed, -EBUSY
	 * another caller waits in that direction). */
	int (*poll)(struct weft_waitable *wa, unsigned events);
	/* Lock held, poll said 0: queue w (a claim waiter; w->data holds
	 * events). Its waker must win weft__waiter_claim and then complete it
	 * with the ready events or -errno, as poll's. */
	void (*arm)(struct weft_waitable *wa, unsigned events, struct weft__waiter *w);
	/* Lock held: take w off wherever it is still queued. */
	void (*disarm)(struct weft_waitable *wa, unsigned events, struct weft__waiter *w);
};
struct weft_waitable {
	const struct weft__waitable_ops *ops;
};

/* ---- Configuration (runtime.c) ------------------------------------------ */

/* A configuration number (WEFT_WORKERS, WEFT_STACK_KB, net/'s
 * WEFT_NET_MEM_KB): s is a whole decimal number as strtoul reads it, not
 * negative, in [lo, hi]. 0 with *out set, or -EINVAL. */
int weft__parse_ulong(const char *s, unsigned long lo, unsigned long hi, unsigned long *out);

/* ---- Time (time.c) -------------------------------------------------------
 * The runtime's clock, in ns: the shim's, or with the virtual clock
 * (WEFT_CFG_VIRTUAL_CLOCK) a counter that only moves when every worker is
 * idle, straight to the next deadline (sched.c, weft__sleep_idle). Every
 * deadline above is in it; so are lwIP's timers (sys_now). */
int64_t weft__now(void);

/* A deadline as weft.h reads it: -1 waits forever, and every other value
 * below 1 is long past, as 0 is. Where code below the public calls reads
 * "negative" as "no deadline" (the shim's waits, the host loop, the step
 * timers), or "0" as "try once without queueing", the public call passes
 * its deadline through this first, so that -2 or INT64_MIN never waits. */
static inline int64_t weft__deadline_norm(int64_t deadline) { return deadline < -1 ? 0 : deadline; }

/* ---- I/O sources (reactor.c) and the runtime's life (runtime.c) --------- */

/* Park until I/O source src is ready for events (WEFT_IO_*). Returns the
 * ready events, or -errno as weft_fd_wait. */
int weft__io_wait(int src, unsigned events, int64_t deadline);

/* The same for a caller whose last try at src for events (a read, a write,
 * an accept, a connect in progress) said -EAGAIN: it has drained src, so
 * readiness reported since its last wait returned answers at once, without
 * parking, and otherwise it waits for the next report, with no call to the
 * kernel. No report is lost, but a return may be stale (the report was for
 * what the caller has already taken): try again, and wait again on -EAGAIN.
 * For anything else weft__io_wait: it looks at src's state as it waits. */
int weft__io_wait_drained(int src, unsigned events, int64_t deadline);

/* The same for reading, for a caller whose last read of a stream was short:
 * it emptied src's queue, so it may wait without trying first. But that
 * read may also have taken the stream's end (or an error) whose report came
 * before it: once src has reported a hang-up or an error, this returns at
 * once (WEFT_IO_IN | WEFT_IO_ERR), and the next read returns the end. */
int weft__io_wait_emptied(int src, int64_t deadline);

/* Wake src's waiters with -EBADF and forget it: its registration with the
 * shim ends (a source is registered at its first wait, once for its life)
 * and what was reported about it is dropped. Waits on src work again
 * afterwards (its number may be reused once closed). */
void weft__io_forget(int src);

/* The owner of src is closing it: wake its waiters with -EBADF, and fail
 * later waits on it with -EBADF until weft__io_forget (called just before
 * the number is really closed). This closes the window between a caller's
 * last look at "closed" and its wait. */
void weft__io_close(int src);

/* For a waitable on src (the kernel stack's sockets): the lock of the
 * reactor's slots, and under it poll, arm and disarm as struct
 * weft__waitable_ops says. A select case takes src's slot of its direction
 * as a waiting caller does (-EBUSY from poll when taken). poll answers with
 * what the reactor was told and not yet given to anyone (and IN with ERR
 * once src reported its end); arm has the shim look at src again, so a
 * select that waits sees readiness that came before it (level). */
weft__lock_t *weft__io_lock(void);
int weft__io_ready_poll(int src, unsigned events);
void weft__io_ready_arm(int src, unsigned events, struct weft__waiter *w);
void weft__io_ready_disarm(int src, struct weft__waiter *w);

/* A subsystem that must be stopped before the runtime (the network stack)
 * holds it: weft_shutdown refuses with -EBUSY while a hold is taken. */
void weft__runtime_hold(int delta);

/* How a subsystem that holds the runtime (the network stack) stops itself
 * in a graceful shutdown: once every fiber has finished,
 * weft_shutdown_grace calls each registered stop on its own plain thread,
 * in the order registered, before it stops the runtime. stop returns 0
 * (stopped, its hold released; or it was not up) or -errno (it stays up:
 * weft_shutdown_grace returns that, the runtime still running). Register
 * when the subsystem first comes up; registering a stop again does
 * nothing, and a registration lasts for the process (a stop of a subsystem
 * that is down returns 0). Returns 0, or -ENOMEM (more than 4 stops). */
int weft__runtime_on_grace(int (*stop)(void));

/* The runtime is running (between weft_init and weft_shutdown). */
bool weft__running(void);

/* Spawn a service fiber: the runtime's own helpers (the network stack's
 * timer and device fibers). weft_run does not wait for them; weft_shutdown
 * refuses (-EBUSY) while any is alive, so their owner stops them first. */
int weft__spawn_service(weft_fiber_t *out, const char *name, weft_fn fn, void *arg);

/* Give step-process pid events (WEFT_STEP_EV_* bits, below bit 7) and
 * queue it if it was idle, as a message or its timer does (step.c): a
 * socket it watches became ready. 0, or -ESRCH (no live step-process). */
int weft__step_post_pid(weft_pid_t pid, unsigned events);

#endif
