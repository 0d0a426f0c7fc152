/* SPDX-License-Identifier: MIT */
/* weft: stackful fibers on an M:N work-stealing scheduler, with timers,
 * cancellation, channels and futures.
 *
 * Conventions, for every call below:
 *  - Functions return 0 (or a count) on success and a negative errno on
 *    failure; they leave errno as it was.
 *  - Blocking calls take an absolute deadline in weft_now() nanoseconds:
 *    -1 waits forever, 0 tries once without blocking, anything else is the
 *    moment to give up with -ETIMEDOUT. A deadline already past behaves as 0.
 *  - Blocking calls work from fibers (they park the fiber; the worker thread
 *    runs others) and from plain OS threads (they block the thread). A
 *    plain thread's wait that needs the runtime ends when weft_shutdown
 *    stops it: weft_fd_wait with -ESRCH, and a deadline on the virtual
 *    clock (WEFT_CFG_VIRTUAL_CLOCK), which stops with the runtime, with
 *    -ETIMEDOUT; its other waits go on (see weft_shutdown).
 *  - A blocking call in a fiber returns -ECANCELED when the fiber is
 *    cancelled (weft_fiber_cancel, weft_shutdown_grace), once per request,
 *    unless the fiber holds cancellation off (weft_fiber_cancel_hold).
 *  - A stream that has ended (a channel closed and drained, a generator
 *    that has returned) answers -EPIPE, every time.
 *  - What weft_<object>_create makes, weft_<object>_destroy ends (sockets:
 *    weft_sock_close; futures, which are shared: weft_future_release drops
 *    one reference). destroy returns 0, or -EBUSY while the object is in
 *    use, freeing nothing (a safety net: destroy only once no call on it
 *    can still be running); destroy(NULL) is a no-op returning 0.
 *  - One name for each thing: a suffix means one thing wherever it is
 *    (_site: the caller's file and line, which a macro of the short name
 *    passes; _at, _until: a deadline).
 *  - Names are weft_<object>_<verb>; the runtime's own calls (init, run,
 *    now, select, dump...) are weft_<verb>.
 * This header is the contract; docs/api.md is the guide that follows it.
 */
#ifndef WEFT_H
#define WEFT_H

#include <stddef.h>
#include <stdint.h>

/* What the library exports: every public function carries WEFT_API; the
 * library is built with hidden visibility, so nothing else leaves it. */
#if defined(__GNUC__) || defined(__clang__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

/* The version of this header. While the major version is 0, each minor
 * version may change the ABI: the shared library's SONAME is
 * libweft.so.0.MINOR (libweft.so.MAJOR from 1 on). */
#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 2
#define WEFT_VERSION_PATCH 0
/* The three in one number, MAJOR * 10000 + MINOR * 100 + PATCH. */
#define WEFT_VERSION (WEFT_VERSION_MAJOR * 10000 + WEFT_VERSION_MINOR * 100 + WEFT_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the library the program runs with, as WEFT_VERSION spells
 * it: a program built against one header and linked with another library
 * can compare the two. Any thread, before weft_init too. */
WEFT_API int weft_version(void);

/* ---- Runtime ----------------------------------------------------------- */

/* Receives diagnostic text (weft_dump_to's, the stall detector's), a line
 * or so at a time (len bytes, not NUL-terminated). It may not call
 * weft_dump_to. */
typedef void (*weft_dump_fn)(const char *text, size_t len, void *ctx);

typedef struct weft_config {
	unsigned workers;  /* worker threads; 0 = $WEFT_WORKERS or CPUs (max 16) */
	size_t stack_size; /* default fiber stack bytes; 0 = $WEFT_STACK_KB or 64 KiB */
	unsigned flags;    /* WEFT_CFG_* below; 0 = defaults */
	/* The stall detector (docs/api.md, "Stalls"): a fiber that runs this
	 * many milliseconds of its worker's CPU time without a suspension
	 * point is reported, once per stall, and counted in
	 * weft_worker_stats. 0 = $WEFT_STALL_MS (0 there: off) or 100;
	 * WEFT_STALL_OFF: off; at most 3600000 (an hour). */
	int stall_ms;
	/* Where the reports go: fn(text, len, ctx) on the detector's own
	 * thread (a plain thread: it may lock and allocate, not block on
	 * fibers), or NULL for the console. */
	weft_dump_fn stall_fn;
	void *stall_ctx;
	/* Deterministic simulation (docs/debugging.md, "Simulation"): nonzero
	 * runs every worker as an actor on the calling thread, each choice
	 * drawn from this seed. 0 = $WEFT_SIM_SEED, else none. Only a program
	 * linked with libweft-sim.a runs one: libweft.a's weft_init refuses a
	 * seed with -ENOTSUP. */
	uint64_t sim_seed;
	/* The simulation's faults (docs/api.md, WEFT_SIM_FAULTS): a comma
	 * list of KEY=N, N per mille from 0 to 1000, keys alloc, stack,
	 * cancel, intr, and the simulated wire's drop, dup, delay (frames on
	 * lwIP's loopback queues; a delay holds a frame 1 to 20 ms) and part
	 * (a pair of the loop netif's simulated hosts cut for 10 ms to 90 s).
	 * NULL = $WEFT_SIM_FAULTS; "" = none. Needs a seed; libweft.a
	 * refuses faults with -ENOTSUP. */
	const char *sim_faults;
} weft_config_t;

/* weft_config_t.stall_ms: no stall detector (no thread for it). */
#define WEFT_STALL_OFF (-1)

enum {
	/* The virtual clock: weft_now() moves only when every worker is idle,
	 * and then straight to the earliest deadline, so timeouts are exact
	 * and take no wall time. Without this flag or WEFT_CFG_REAL_CLOCK,
	 * $WEFT_CLOCK decides ("virtual" or "real"; unset: real). */
	WEFT_CFG_VIRTUAL_CLOCK = 1,
	WEFT_CFG_REAL_CLOCK = 2,
	/* No worker threads: the host program runs the fibers on its own
	 * thread with weft_poll (and weft_run). workers must be 0 or 1. */
	WEFT_CFG_HOST_LOOP = 4,
	/* Leave SIGQUIT alone. By default weft_init makes SIGQUIT print
	 * weft_dump() on stderr (Linux; the process goes on running, as a
	 * JVM's does), unless the program has a SIGQUIT handler of its own. */
	WEFT_CFG_NO_QUIT_DUMP = 8,
};

/* Start the runtime: worker threads, the overflow handler (SIGSEGV/SIGBUS on
 * Linux; faults that are not a fiber's guard page go to the handler that was
 * installed before). cfg may be NULL. Call once, from a plain thread, before
 * any other weft call; again only after weft_shutdown. Returns 0, -EALREADY
 * (running), -EINVAL (workers > 16, stack_size below 4 KiB or above 1 GiB,
 * stall_ms below WEFT_STALL_OFF or above 3600000, a malformed sim_faults,
 * faults without a seed, or a malformed environment variable), -ENOTSUP (a
 * hardware shadow stack is on; a sim_seed or $WEFT_SIM_SEED, or
 * sim_faults or $WEFT_SIM_FAULTS, in a program linked with libweft.a),
 * -ENOMEM,
 * -EAGAIN (no threads), or the -errno of a failed signal set-up; every
 * failure says why in weft_init_error and on the console. */
WEFT_API int weft_init(const weft_config_t *cfg);

/* Why the last weft_init failed, as one line of text without a newline:
 * the variable or field, its value and what is accepted (e.g.
 * "WEFT_WORKERS=abc: not a whole number from 1 to 16"). weft_init also
 * writes it on the console (stderr), after "weft_init: ". "" before the
 * first weft_init and after one that succeeded. Valid until the next
 * weft_init; call it from the thread that called weft_init. */
WEFT_API const char *weft_init_error(void);

/* Block the calling plain thread until every fiber has exited (with
 * WEFT_CFG_HOST_LOOP: run them on it until then). Returns 0, -EPERM when
 * called from a fiber (it would wait for itself), -ESRCH when the runtime is
 * not running, -EBUSY (host loop: another thread is in weft_poll or
 * weft_run). */
WEFT_API int weft_run(void);

/* Stop the worker threads and release the runtime; call weft_run first.
 * Handles of finished fibers not yet joined stay valid and can be joined
 * after. Do not spawn from other threads while it runs. Plain threads
 * blocked in weft calls do not hold it up. Their waits that need the
 * runtime end as it stops, before what they wait in is freed: weft_fd_wait
 * returns -ESRCH (as it does once the runtime is stopped), and a timed wait
 * on the virtual clock, which stops with the runtime, times out (-ETIMEDOUT;
 * 0 from weft_sleep_until). Their other waits (on a channel, a future, a
 * mutex..., with no deadline or a real-clock one) go on, and end as those
 * objects say. Returns 0, -EBUSY (fibers are still alive, or the network
 * stack is up: weft_net_fini first, or use weft_shutdown_grace, which
 * stops it; nothing is stopped), -EPERM (called from a fiber), -ESRCH (not
 * running). */
WEFT_API int weft_shutdown(void);

/* A fiber that did not finish within weft_shutdown_grace's deadline: the
 * weft_fiber_t naming it, its name ("" if none; valid during the call) and
 * its spawn site. */
typedef void (*weft_straggler_fn)(uint64_t fiber, const char *name, const char *file, int line,
				  void *ctx);

/* Graceful shutdown: cancel every fiber (detached ones too, and those not
 * yet run; fibers spawned meanwhile start with the request pending; the
 * runtime's own service fibers are left to their owner), wait until all
 * have finished or the deadline, then take the network stack down if it is
 * up (as weft_net_fini) and stop the runtime as weft_shutdown. Returns 0
 * (all finished; the network stack and the runtime are stopped); n > 0,
 * the number of fibers that had not finished at the deadline, each passed
 * to report (NULL: printed on the console), with the runtime still running
 * (wait more with weft_run, or call again: a new request); -EBUSY (all
 * finished, but a socket is still open, so the network stack stays up and
 * the runtime running; said on the console: close it and call again);
 * -EPERM (called from a fiber); -ESRCH (not running). weft_net_fini before
 * it, or after it (-ESRCH then), does no harm. */
WEFT_API int weft_shutdown_grace(int64_t deadline, weft_straggler_fn report, void *ctx);

/* Host loop (WEFT_CFG_HOST_LOOP): run the fibers that are ready on the
 * calling thread, and those they make ready, until none is; if none was
 * ready, wait (block, or with the virtual clock move it) until one is or
 * the deadline, and run those. Returns at the deadline even with fibers
 * still ready (checked whenever a fiber parks or yields; with deadline 0
 * only when none is ready). Returns the number of fibers run (>= 0),
 * -ENOTSUP (the runtime has worker threads), -EPERM (called from a fiber),
 * -EBUSY (another thread is in weft_poll or weft_run), -ESRCH (not
 * running). A plain thread blocked in a weft call meanwhile runs nothing:
 * the host's own calls should use deadline 0. */
WEFT_API int weft_poll(int64_t deadline);

/* When weft_poll next has work, for the host's poll timeout: 0 (fibers are
 * ready now), the earliest deadline of a parked fiber, or -1 (nothing
 * scheduled; only a wake from outside, or I/O a fiber waits for, brings
 * work: a host that does not watch those fds itself should bound its
 * wait). */
WEFT_API int64_t weft_poll_next(void);

/* Number of worker threads, 0 if the runtime is not running. */
WEFT_API unsigned weft_workers(void);

/* Index [0, weft_workers()) of the worker running the calling fiber, or -1
 * from a plain thread. A fiber may move between workers at any suspension,
 * unless it is pinned (weft_fiber_pin). */
WEFT_API int weft_worker_index(void);

/* A snapshot of the runtime's counters (each read on its own: together they
 * are not one instant). */
typedef struct weft_stats {
	unsigned workers;
	uint64_t fibers;   /* alive now: spawned and not finished */
	uint64_t spawned;  /* fibers spawned since the process started */
	uint64_t switches; /* context switches by every worker since weft_init */
} weft_stats_t;

/* 0, -EINVAL (out NULL), -ESRCH (runtime not running). */
WEFT_API int weft_stats(weft_stats_t *out);

/* ---- Time -------------------------------------------------------------- */

/* Monotonic time in nanoseconds: the clock every deadline is measured in. */
WEFT_API int64_t weft_now(void);

/* Absolute deadline ns from now (ns < 0 gives -1, forever). */
WEFT_API int64_t weft_deadline_in(int64_t ns);

/* Sleep until the deadline. Returns 0 once it has passed (at once for 0 or a
 * past deadline), -ECANCELED. With -1 (no deadline) it sleeps until the
 * fiber is cancelled: a plain thread, which nobody cancels, sleeps for
 * good. */
WEFT_API int weft_sleep_until(int64_t deadline);

/* ---- Fibers ------------------------------------------------------------ */

/* A fiber's one identity: a 64-bit value never reused in the process (0
 * names no fiber), taken by every call that acts on a fiber: join and
 * detach, cancel, weft_fiber_interrupt, weft_mailbox_send (it is the fiber's
 * pid) and what diagnostics print. The spawner owns the fiber's record
 * through it (weft_fiber_spawn with out): only the owner joins or detaches,
 * once. Anyone else may use the value while the fiber lives, and after: a
 * call on a fiber that has finished and been joined (or finished detached)
 * gets -ESRCH, never another fiber. */
typedef uint64_t weft_fiber_t;

typedef void *(*weft_fn)(void *arg);

typedef struct weft_attr {
	size_t stack_size; /* bytes, 0 = the runtime default; rounded up to pages */
	const char *name;  /* copied (up to 31 chars); NULL = no name */
	/* Fiber context (below, "Fiber context"): */
	unsigned fls;                 /* local storage: WEFT_FLS_EMPTY (0), _SHARE or _COPY */
	struct weft_chan *supervisor; /* NULL, or a channel of weft_exit_t that
				       * gets {pid, status} when the fiber ends */
	unsigned flags;               /* WEFT_ATTR_* below; 0 = defaults */
} weft_attr_t;

enum {
	/* The floating-point control state (rounding mode, exception masks:
	 * MXCSR and the x87 control word, FPCR, frm) belongs to the worker
	 * thread and is not switched: a fiber that changes it puts it back
	 * before it blocks or yields. A fiber spawned with this flag keeps its
	 * own instead, across every switch and move to another worker,
	 * starting from the state its spawner had. Costs a save and a load
	 * of that state at each of its switches. */
	WEFT_ATTR_FPENV = 1,
	/* Pinned to the worker it is spawned from (worker 0 when a plain
	 * thread spawns it), as weft_fiber_pin pins a running fiber. */
	WEFT_ATTR_PIN = 2,
	/* Latency-sensitive (a network poller, a UART handler): runs before
	 * the bulk fibers (those without this flag) that are runnable on
	 * the same worker, and thieves take it first; after 8 of these in a
	 * row a worker runs a bulk fiber if it has one, so bulk fibers never
	 * starve. */
	WEFT_ATTR_HIGH = 4,
};

/* Create a fiber running fn(arg) and queue it. attr may be NULL. If out is
 * NULL the fiber starts detached; otherwise *out receives a handle that must
 * be joined or detached. Callable from fibers and plain threads. Returns 0,
 * -EINVAL (fn NULL; stack_size below 4 KiB or above 1 GiB; fls not a
 * WEFT_FLS_* mode; flags other than WEFT_ATTR_*; a supervisor channel whose
 * elements are not sizeof(weft_exit_t)), -ENOMEM (no memory for the fiber, its stack or a
 * local-storage table: the runtime keeps running), -ESRCH (runtime not running). The macro records the spawn site
 * for diagnostics; a wrapper of its own can pass its caller's to
 * weft_fiber_spawn_site. */
#define weft_fiber_spawn(out, attr, fn, arg) \
	weft_fiber_spawn_site((out), (attr), (fn), (arg), __FILE__, __LINE__)
WEFT_API int weft_fiber_spawn_site(weft_fiber_t *out, const weft_attr_t *attr, weft_fn fn,
				   void *arg, const char *file, int line);

/* Wait until fiber f has finished and collect what fn returned (or what it
 * passed to weft_fiber_exit) into *result (result may be NULL) and its exit
 * status (below, "exit status") into *status (status may be NULL); f is then
 * released: its record is freed and f names nothing from then on. Only the
 * spawner that received f (or whoever it passed f to) joins. Joining awaits
 * the fiber's future. Returns 0; -ETIMEDOUT or -ECANCELED (f stays held:
 * join again later); -ESRCH (f is not held: never valid, already joined or
 * detached, or spawned with out NULL); -EDEADLK (f is the caller); -EBUSY
 * (another caller is already joining f). */
WEFT_API int weft_fiber_join(weft_fiber_t f, int64_t deadline, void **result, int *status);

/* Give up the ownership of f: the fiber's memory is freed as soon as it
 * finishes (f names it until then). Returns 0, -ESRCH (f is not held: as
 * for join), -EBUSY (someone is joining it), -EPERM (f is the caller: it
 * belongs to its spawner). */
WEFT_API int weft_fiber_detach(weft_fiber_t f);

/* Ask fiber f to stop: the call it is blocked in, or the next call that
 * would block (or weft_fiber_yield, or weft_sleep_until), returns -ECANCELED;
 * later calls are unaffected until the next request. A call that completes
 * without waiting does not consume the request. Requests made before delivery
 * merge into one. A fiber that has not run yet gets it at its first such call;
 * one that holds cancellation off, at the first after its hold ends.
 * Returns 0; -ESRCH (not a held handle); -EALREADY (f has already finished:
 * nothing to cancel). Anyone may cancel f, held or detached; -ESRCH once it
 * has finished and been joined, or finished detached. From fibers and plain
 * threads; from a signal or interrupt handler, weft_fiber_interrupt. */
WEFT_API int weft_fiber_cancel(weft_fiber_t f);

/* Let other runnable fibers run; the caller is queued behind them. From a
 * plain thread it yields the CPU. Returns 0 or -ECANCELED. */
WEFT_API int weft_fiber_yield(void);

/* Pin the calling fiber to worker `worker` in [0, weft_workers()), moving it
 * there first if it runs elsewhere, or with -1 to the worker it runs on now.
 * A pinned fiber runs only on that worker: no other worker steals it, and
 * every wake (a channel, a timer, I/O, a message, a thread outside the
 * runtime) queues it there, so it may keep thread-local state of a library
 * that knows nothing of fibers. It still waits its turn behind the worker's
 * other fibers, and a worker busy with one fiber cannot run the pinned ones
 * it holds. weft_dump shows the pin. Not a suspension point: no
 * cancellation is delivered. Returns 0, -EINVAL (worker out of range),
 * -EPERM (not called from a fiber). */
WEFT_API int weft_fiber_pin(int worker);

/* Let the calling fiber move between workers again. Returns 0, or -EPERM
 * (not called from a fiber). */
WEFT_API int weft_fiber_unpin(void);

/* Hold cancellation off around a critical section, nestable. While held, a
 * request (weft_fiber_cancel, shutdown) interrupts nothing: blocking calls
 * complete or time out as usual and it stays pending. When the outermost
 * hold is released, the next suspension point (the next call that would
 * block, or weft_fiber_yield) returns -ECANCELED; release itself does not.
 * Only the calling fiber's own state (a plain thread's too, which nobody
 * can cancel). hold returns the new depth (1 to WEFT_CANCEL_HOLD_MAX) or
 * -EOVERFLOW (already that deep: nothing changes); release the depth left
 * (0 when the hold has ended) or -EPERM (nothing held). */
#define WEFT_CANCEL_HOLD_MAX 65535
WEFT_API int weft_fiber_cancel_hold(void);
WEFT_API int weft_fiber_cancel_release(void);

/* End the calling fiber with result, as if fn had returned it; its exit
 * status is decided as for a return (to end with an error:
 * weft_fiber_set_status(err), then weft_fiber_exit(NULL)). Only from a
 * fiber (from a plain thread it returns -EPERM; from a local-storage
 * destructor run by the fiber's own exit, -EALREADY). */
WEFT_API int weft_fiber_exit(void *result);

/* The calling fiber's weft_fiber_t (also its pid), or 0 from a plain
 * thread and in a step-process's callback (it runs on no fiber of its own:
 * its pid is weft_step_pid). The caller does not own it (it must not join
 * or detach itself). */
WEFT_API weft_fiber_t weft_fiber_self(void);

/* The calling fiber's name ("" if none), or NULL from a plain thread. */
WEFT_API const char *weft_fiber_name(void);

/* ---- Futures ----------------------------------------------------------- */

/* A value that settles once: resolved with a pointer or rejected with a
 * negative errno. Any number of fibers and threads may await it. */
typedef struct weft_future weft_future_t;

/* Returns 0 and a future holding one reference, or -EINVAL, -ENOMEM. */
WEFT_API int weft_future_create(weft_future_t **out);

/* Take another reference (for handing the future to another owner). */
WEFT_API weft_future_t *weft_future_retain(weft_future_t *f);

/* Drop the caller's reference (create's, or one from retain); the last one
 * frees the future. Waiters hold their own reference while they wait, so
 * releasing during an await is safe. Returns 0 (NULL: a no-op). */
WEFT_API int weft_future_release(weft_future_t *f);

/* Settle with a value and wake every waiter. Returns 0, -EINVAL (f NULL),
 * -EALREADY (already settled: the first settlement stands). */
WEFT_API int weft_future_resolve(weft_future_t *f, void *value);

/* Settle with an error (a negative errno) and wake every waiter. Returns 0,
 * -EINVAL (f NULL or error >= 0), -EALREADY. */
WEFT_API int weft_future_reject(weft_future_t *f, int error);

/* Wait for f to settle. Returns 0 and the value in *value (value may be
 * NULL); or the rejection error; or -ETIMEDOUT, -ECANCELED, -EINVAL (f NULL).
 * A settled future returns at once, without a switch. */
WEFT_API int weft_future_await(weft_future_t *f, int64_t deadline, void **value);

/* ---- Channels ---------------------------------------------------------- */

/* A channel carries elements of a fixed size, copied in and out. Capacity 0
 * is a rendezvous: a send completes only when a receiver takes the element.
 * Safe between any fibers and plain threads. Closed as in Go: receivers
 * drain what is buffered, then get -EPIPE; a send on a closed channel gets
 * -EPIPE; blocked senders and receivers are woken with -EPIPE. */
typedef struct weft_chan weft_chan_t;

/* Returns 0 and the channel, -EINVAL (elem_size 0 or above 64 KiB, capacity
 * above 2^24), -ENOMEM. */
WEFT_API int weft_chan_create(weft_chan_t **out, size_t elem_size, size_t capacity);

/* Free the channel. Returns 0, -EBUSY (a sender, receiver or select is
 * blocked on it: nothing is freed); NULL is a no-op returning 0. */
WEFT_API int weft_chan_destroy(weft_chan_t *c);

/* Copy elem_size bytes from elem into the channel. Returns 0, -EPIPE
 * (closed), -ETIMEDOUT, -ECANCELED, -EINVAL (NULL arguments). */
WEFT_API int weft_chan_send(weft_chan_t *c, const void *elem, int64_t deadline);

/* Copy the next element into elem. Returns 0, -EPIPE (closed and drained),
 * -ETIMEDOUT, -ECANCELED, -EINVAL (NULL arguments). */
WEFT_API int weft_chan_recv(weft_chan_t *c, void *elem, int64_t deadline);

/* Close the channel. Returns 0, -EPIPE (already closed), -EINVAL. */
WEFT_API int weft_chan_close(weft_chan_t *c);

/* Elements buffered now (a snapshot). */
WEFT_API size_t weft_chan_len(weft_chan_t *c);

/* ---- Cancelling futures, and combinators -------------------------------- */

/* Cancel f: if it is pending, reject it with -ECANCELED (waking its waiters)
 * and then call its cancel hook, on the caller's fiber or thread. Returns 0,
 * -EINVAL (f NULL), -EALREADY (already settled: the hook is not called). */
WEFT_API int weft_future_cancel(weft_future_t *f);

/* Set the call weft_future_cancel makes once it has rejected f: how whoever
 * settles f learns to stop (e.g. fn cancels the fiber computing it). fn NULL
 * removes it. It runs at most once, never if f settles any other way; it must
 * not block for long (race runs it before returning). Returns 0, -EINVAL
 * (f NULL), -EALREADY (f has settled: fn will never be called). */
WEFT_API int weft_future_on_cancel(weft_future_t *f, void (*fn)(void *arg), void *arg);

/* The combinators wait on n futures fs[0..n-1] at once (a future may appear
 * more than once) and hold a reference to each while they wait. If the
 * outcome is already decided they return at once, without a switch; else
 * the caller parks once per settlement that can change it, however many
 * settle together. Each returns -ETIMEDOUT at the deadline, -ECANCELED when
 * the calling fiber is cancelled (an outcome decided by then wins and the
 * request stays pending), -EINVAL (fs NULL with n > 0, or an fs[i] NULL),
 * -ENOMEM (n above 8 and no memory for the waiters); on those the futures are
 * left as they were. The out-parameters are written only as said below. */

/* Wait until every future has resolved (0, and values[i] = fs[i]'s value;
 * values may be NULL), or until one rejects: its error is returned at once,
 * without waiting for the rest, and *failed (may be NULL) = its index (the
 * lowest one, if several have rejected by the time the caller looks). n 0
 * returns 0. */
WEFT_API int weft_future_all(weft_future_t *const *fs, size_t n, int64_t deadline, void **values,
			     size_t *failed);

/* Wait until every future has settled, whichever way. Returns 0, with
 * values[i] = fs[i]'s value (NULL if rejected) and errors[i] = 0 or its
 * rejection error (either array may be NULL). n 0 returns 0. */
WEFT_API int weft_future_all_settled(weft_future_t *const *fs, size_t n, int64_t deadline,
				     void **values, int *errors);

/* Wait for the first future to resolve; rejections are skipped. Returns 0,
 * *index (may be NULL) and *value (may be NULL) of the one that resolved (the
 * lowest index if several have); or, once every future has rejected, fs[0]'s
 * rejection error. -EINVAL also for n 0 (nothing could resolve). The others
 * are left alone. */
WEFT_API int weft_future_any(weft_future_t *const *fs, size_t n, int64_t deadline, size_t *index,
			     void **value);

/* Wait for the first future to settle, either way: its outcome is returned
 * (0 and *value, or its rejection error) with *index = its index (the lowest
 * if several have settled); then every other future still pending is
 * cancelled (weft_future_cancel) before the call returns, at the winner's
 * time. index and value may be NULL. -EINVAL also for n 0. On -ETIMEDOUT and
 * -ECANCELED nothing is cancelled and *index is not written. */
WEFT_API int weft_future_race(weft_future_t *const *fs, size_t n, int64_t deadline, size_t *index,
			      void **value);

/* ---- Select ------------------------------------------------------------ */

/* Something select can wait on that another header makes: weft_net.h's
 * weft_sock_waitable (a socket). Valid as long as what it came from. */
typedef struct weft_waitable weft_waitable_t;

enum {
	WEFT_SELECT_NONE = 0, /* an empty case: ignored (as a nil channel in Go) */
	WEFT_SELECT_SEND,     /* send *elem on chan */
	WEFT_SELECT_RECV,     /* receive from chan into elem */
	WEFT_SELECT_FUTURE,   /* future settles */
	WEFT_SELECT_READY,    /* waitable becomes ready for events */
};

typedef struct weft_select_case {
	int op;                    /* WEFT_SELECT_* */
	weft_chan_t *chan;         /* SEND, RECV */
	void *elem;                /* SEND: the element (only read); RECV: the buffer */
	weft_future_t *future;     /* FUTURE */
	void *value;               /* out, FUTURE resolved: its value */
	int result;                /* out, the chosen case: 0; -EPIPE (channel closed);
				* a FUTURE's rejection error; READY: the ready
				* events (> 0), or the waitable's error */
	weft_waitable_t *waitable; /* READY */
	unsigned events;           /* READY: WEFT_IO_IN or WEFT_IO_OUT (one) */
} weft_select_case_t;

/* Wait until one of the n cases can proceed, perform exactly that one, and
 * return its index (>= 0) with cases[i].result set (and .value for a
 * resolved FUTURE). Ready cases: a send that a receiver or buffer room
 * takes, a receive with an element buffered or a sender waiting, a send or
 * receive on a closed channel (result -EPIPE: after the buffer is drained, as
 * weft_chan_recv), a settled future, a waitable ready for its events. A
 * READY case performs nothing: it says (result) that the call it stands for
 * would not wait now, as poll(2) does, and like poll's that may be stale by
 * the time the caller acts, so read or write with a deadline (0 tries once).
 * Its result is the events (WEFT_IO_IN or WEFT_IO_OUT, with WEFT_IO_ERR for
 * an error or the end of a stream), or an error of the waitable's (a socket's:
 * -EBADF closed, -EBUSY another fiber reads, or writes, or selects on it
 * for that direction). When several are ready, each is equally
 * likely to be chosen. While it waits, elem must stay valid; a case that was
 * not chosen has sent or taken nothing. Returns -ETIMEDOUT (none ready by the
 * deadline; deadline 0 tries once), -ECANCELED (nothing was done), -EINVAL
 * (cases NULL with n > 0, an unknown op, a NULL chan, elem, future or
 * waitable, READY's events not exactly one of WEFT_IO_IN and WEFT_IO_OUT),
 * -ENOMEM (n above 8 and no memory). n 0, or only NONE cases, waits for the
 * deadline or a cancellation. -EINVAL also for n above INT_MAX. */
WEFT_API int weft_select(weft_select_case_t *cases, size_t n, int64_t deadline);

/* ---- Mutex, condition variable, wait group, semaphore ------------------- */

/* Fiber-aware: a caller that must wait parks (a fiber) or sleeps (a plain
 * thread); a worker thread is never blocked. Waiters are served first in,
 * first out, and a release hands the mutex or unit straight to the oldest
 * waiter. Each is created and destroyed (no static initialiser: the layout
 * stays private); destroy returns -EBUSY, freeing nothing, while the object
 * is held or waited on (a safety net: destroy only once no call on it can
 * still be running), and NULL is a no-op returning 0. create returns 0,
 * -EINVAL (out NULL), -ENOMEM. */
typedef struct weft_mutex weft_mutex_t;
typedef struct weft_cond weft_cond_t;
typedef struct weft_waitgroup weft_waitgroup_t;
typedef struct weft_sem weft_sem_t;

WEFT_API int weft_mutex_create(weft_mutex_t **out);
WEFT_API int weft_mutex_destroy(weft_mutex_t *m);

/* Take m, owned by the calling fiber (or plain thread) until it unlocks.
 * Returns 0; -ETIMEDOUT (held by another at the deadline; deadline 0 is a
 * trylock); -ECANCELED; -EDEADLK (the caller already holds it); -EINVAL. */
WEFT_API int weft_mutex_lock(weft_mutex_t *m, int64_t deadline);

/* Release m; the oldest waiter, if any, now owns it. Returns 0, -EPERM (the
 * caller does not hold m: unlocked, or held by another), -EINVAL. */
WEFT_API int weft_mutex_unlock(weft_mutex_t *m);

WEFT_API int weft_cond_create(weft_cond_t **out);
WEFT_API int weft_cond_destroy(weft_cond_t *c);

/* Atomically release m (which the caller holds) and wait for a signal on c,
 * then take m again before returning: on every return but -EPERM and
 * -EINVAL, even -ETIMEDOUT and -ECANCELED, the caller holds m. (Retaking m
 * is not interrupted: a cancellation arriving then stays pending.) Returns 0
 * (signalled: no spurious wakeups, but recheck the condition, another may
 * have changed it first), -ETIMEDOUT, -ECANCELED, -EPERM (the caller does
 * not hold m), -EINVAL. */
WEFT_API int weft_cond_wait(weft_cond_t *c, weft_mutex_t *m, int64_t deadline);

/* Wake the oldest waiter / every waiter. Returns 0, -EINVAL. */
WEFT_API int weft_cond_signal(weft_cond_t *c);
WEFT_API int weft_cond_broadcast(weft_cond_t *c);

WEFT_API int weft_waitgroup_create(weft_waitgroup_t **out);
WEFT_API int weft_waitgroup_destroy(weft_waitgroup_t *wg);

/* Add delta (may be negative) to the counter; reaching 0 wakes every waiter.
 * Returns 0, -EINVAL (wg NULL, or the counter would go below 0: unchanged),
 * -EOVERFLOW (it would pass INT64_MAX: unchanged). done is add(-1). */
WEFT_API int weft_waitgroup_add(weft_waitgroup_t *wg, int64_t delta);
WEFT_API int weft_waitgroup_done(weft_waitgroup_t *wg);

/* Wait until the counter is 0 (at once if it is). Returns 0, -ETIMEDOUT,
 * -ECANCELED, -EINVAL. */
WEFT_API int weft_waitgroup_wait(weft_waitgroup_t *wg, int64_t deadline);

/* A counting semaphore holding initial units. create also returns -EINVAL
 * for initial above WEFT_SEM_MAX. */
#define WEFT_SEM_MAX 0x7fffffffu
WEFT_API int weft_sem_create(weft_sem_t **out, unsigned initial);
WEFT_API int weft_sem_destroy(weft_sem_t *s);

/* Take one unit. Returns 0; -ETIMEDOUT (none at the deadline; deadline 0
 * tries once); -ECANCELED; -EINVAL. */
WEFT_API int weft_sem_acquire(weft_sem_t *s, int64_t deadline);

/* Give one unit back (to the oldest waiter, if any). Any caller may release.
 * Returns 0, -EOVERFLOW (already WEFT_SEM_MAX units: unchanged), -EINVAL. */
WEFT_API int weft_sem_release(weft_sem_t *s);

/* Units available now (a snapshot; 0 for NULL). */
WEFT_API unsigned weft_sem_value(weft_sem_t *s);

/* ---- Processes and messages ------------------------------------------- */

/* A process id: what messages are addressed to. A fiber's pid is its
 * weft_fiber_t; a step-process (below) has one of its own, from the same
 * space (they never collide). Never reused in the process; 0 is never a
 * pid. A fiber's mailbox (about 90 bytes) is made the first time a message
 * is sent to it or it uses its own (weft_mailbox_recv, _set_cap, _len): a fiber
 * that never uses messages costs nothing more. A process's own pid:
 * weft_fiber_self() in a fiber, weft_step_pid(p) in a step callback. Plain
 * threads have no pid; they can send. */
typedef uint64_t weft_pid_t;

#define WEFT_MSG_MAX (64 * 1024) /* bytes in one message */
#define WEFT_MAILBOX_CAP 64      /* messages a mailbox holds, by default */
#define WEFT_MAILBOX_CAP_MAX 65536

/* Copy len bytes from msg (NULL if len is 0) into pid's mailbox: a message
 * is a copy, and msg may be reused at once. Any fiber or plain thread may
 * send; one sender's messages arrive in the order sent. A full mailbox
 * (WEFT_MAILBOX_CAP messages unless its owner changed it) makes the sender
 * wait, first come first served, until the owner takes one. Returns 0 (the
 * message is queued); -ESRCH (no such process: pid 0, never given out, or
 * the process has ended: once a fiber's exit has begun, always; a sender
 * waiting when it ends too); -ETIMEDOUT (still full at the deadline;
 * deadline 0 tries once); -ECANCELED (nothing was sent); -EINVAL (msg NULL with len > 0); -EMSGSIZE
 * (len above WEFT_MSG_MAX); -ENOMEM (for the message, or for the fiber's
 * first mailbox). In a step callback it never waits (as
 * deadline 0). */
WEFT_API int weft_mailbox_send(weft_pid_t pid, const void *msg, size_t len, int64_t deadline);

/* Take the oldest message from the calling fiber's mailbox (in a step
 * callback: the step-process's), copy it into buf (cap bytes) and its length
 * into *len (len may be NULL). Returns 0; -ETIMEDOUT (empty at the deadline;
 * deadline 0 tries once); -ECANCELED; -EMSGSIZE (the oldest message is
 * longer than cap: it stays queued, and *len is its length; call again with
 * a larger buffer); -EINVAL (buf NULL with cap > 0); -EPERM (a plain thread:
 * it has no mailbox); -ENOMEM (no mailbox yet, and no memory for one). In a
 * step callback it never waits (as deadline 0). */
WEFT_API int weft_mailbox_recv(void *buf, size_t cap, size_t *len, int64_t deadline);

/* Bound the calling process's mailbox to cap messages (1 to
 * WEFT_MAILBOX_CAP_MAX); messages already queued stay, and senders waiting
 * are let in while there is room. Returns 0, -EINVAL, -EPERM (plain
 * thread), -ENOMEM. */
WEFT_API int weft_mailbox_set_cap(size_t cap);

/* Messages in the calling process's mailbox now (0 from a plain thread). */
WEFT_API size_t weft_mailbox_len(void);

/* A step-process: a pid and a mailbox like a fiber's, and callbacks instead
 * of a stack (about 140 bytes in all). Runner fibers, at most one per
 * worker, call them: init once, first; then step whenever events have
 * arrived; then close once, last. A step-process is never called on two
 * workers at once, and its callbacks must not block: weft_mailbox_send and
 * weft_mailbox_recv in them never wait; other waiting calls (sleep, channels, join)
 * would hold a runner up. weft_run waits for step-processes as for fibers
 * (a runner counts as a fiber while any step-process lives). */
typedef struct weft_step weft_step_t;

enum {
	WEFT_STEP_CONTINUE = 0, /* wait for the next events */
	WEFT_STEP_DONE = 1,     /* end: close is called, the pid stops working */
};

/* The events step is called with (several may come together). They say
 * why it was called, not what is there now: a receive may find nothing. */
enum {
	WEFT_STEP_EV_MSG = 1,    /* a message arrived: weft_mailbox_recv until -ETIMEDOUT */
	WEFT_STEP_EV_TIMER = 2,  /* the deadline of weft_step_wake_at has passed */
	WEFT_STEP_EV_CANCEL = 4, /* weft_step_cancel, or a graceful shutdown */
};

typedef struct weft_step_ops {
	/* Called first, once. Returns WEFT_STEP_CONTINUE or WEFT_STEP_DONE
	 * (any other value ends it too). NULL: nothing to do. */
	int (*init)(weft_step_t *p);
	/* Called with the events (WEFT_STEP_EV_*) that arrived since the
	 * last call. Returns as init. Required. */
	int (*step)(weft_step_t *p, unsigned events);
	/* Called last, once, whichever callback ended it; its mailbox no
	 * longer takes messages, but weft_mailbox_recv still drains what is queued
	 * (the rest is freed after). NULL: nothing to do. */
	void (*close)(weft_step_t *p);
} weft_step_ops_t;

/* Create a step-process with callbacks ops (kept, not copied: it must
 * outlive the process) and arg (weft_step_arg), and queue its init. Its pid
 * is valid at once: messages sent before init runs wait for it. out may be
 * NULL. Callable from fibers and plain threads. Returns 0, -EINVAL (ops or
 * ops->step NULL), -ENOMEM, -ESRCH (runtime not running), or why no runner
 * fiber could be started when none exists. */
WEFT_API int weft_step_spawn(weft_pid_t *out, const weft_step_ops_t *ops, void *arg);

/* p's pid, and the arg it was spawned with (0 and NULL for NULL). */
WEFT_API weft_pid_t weft_step_pid(weft_step_t *p);
WEFT_API void *weft_step_arg(weft_step_t *p);

/* From p's own init or step: call step with WEFT_STEP_EV_TIMER once the
 * deadline has passed (0 or a past deadline: as soon as the call returns).
 * One deadline per process: a new call replaces it, -1 disarms it. It fires
 * once. Returns 0, -EINVAL (p NULL), -EPERM (not in p's init or step),
 * -ENOMEM. */
WEFT_API int weft_step_wake_at(weft_step_t *p, int64_t deadline);

/* Ask step-process pid to end: its step is called with
 * WEFT_STEP_EV_CANCEL (what it does then is its own choice). Returns 0,
 * -ESRCH (not a live step-process). */
WEFT_API int weft_step_cancel(weft_pid_t pid);

/* ---- Fiber context: local storage, exit status, supervisors, generators - */

/* Fiber-local storage: up to WEFT_FLS_KEYS keys per process, each naming one
 * pointer in every fiber's table. A fiber starts with an empty table unless
 * its spawn's attr->fls says otherwise:
 *   WEFT_FLS_EMPTY  (0) nothing inherited;
 *   WEFT_FLS_SHARE  the child uses the spawner's table itself: each sees the
 *                   other's sets, for as long as both live;
 *   WEFT_FLS_COPY   a copy-on-write view: the child starts with the values
 *                   the spawner had at the spawn; later sets on either side
 *                   are not seen by the other.
 * A value is held by every table that has it (shared, or inherited by
 * copy); when the last one lets go (the value is replaced or cleared, or
 * the last fiber holding it ends) the key's destructor, if any, is called
 * with it, on the fiber that let go. So never free a value you set: clear it
 * (set NULL) and let the destructor run. Plain threads have no table: get
 * returns NULL, set -EPERM, and a spawn from a plain thread starts empty. */
typedef unsigned weft_fls_key_t; /* 1..WEFT_FLS_KEYS; 0 is never a key */
#define WEFT_FLS_KEYS 64
enum { WEFT_FLS_EMPTY = 0, WEFT_FLS_SHARE = 1, WEFT_FLS_COPY = 2 };

/* Make a key, with destructor dtor (may be NULL; called with each non-NULL
 * value as its last holder lets go). Keys last for the process (also across
 * weft_shutdown and weft_init) and are never deleted. Callable any time,
 * from anywhere. Returns 0, -EINVAL (key NULL), -EAGAIN (WEFT_FLS_KEYS keys
 * already made). */
WEFT_API int weft_fls_key_create(weft_fls_key_t *key, void (*dtor)(void *value));

/* The calling fiber's value for key: NULL when unset, for a key not made,
 * from a plain thread, and in the fiber's own exit (its destructors). */
WEFT_API void *weft_fls_get(weft_fls_key_t key);

/* Set the calling fiber's value for key (NULL clears it). The value it
 * replaces is let go (its destructor runs if this was its last holder);
 * setting the value a key already has changes nothing. Returns 0, -EINVAL
 * (key not made), -EPERM (plain thread, or the fiber is ending: called from
 * a destructor run by its exit), -ENOMEM (nothing changed). */
WEFT_API int weft_fls_set(weft_fls_key_t key, void *value);

/* A fiber's exit status, decided when it ends (fn returns, or
 * weft_fiber_exit), and given by weft_fiber_join, weft_gen_destroy and the
 * supervisor report: the one set by weft_fiber_set_status if any; otherwise -ECANCELED if a cancellation request was made for it
 * before it ended (weft_fiber_cancel, weft_fiber_interrupt,
 * weft_shutdown_grace; delivered or not); otherwise 0 (ok). A request not yet delivered when it ends is
 * dropped then: its destructors and supervisor report are interrupted only
 * by a request made after that. */

/* Set the status the calling fiber will end with, overriding what the
 * runtime would record: 0 (ok: e.g. a cancellation was handled and the
 * fiber finished its work) or a negative number (an error, -errno by
 * convention; -ECANCELED means cancelled). The last call wins. Returns 0,
 * -EINVAL (status > 0), -EPERM (plain thread), -EALREADY (the fiber is
 * ending: called from a destructor run by its exit, after its status was
 * decided). */
WEFT_API int weft_fiber_set_status(int status);

/* What a supervised fiber (attr->supervisor) sends on its supervisor
 * channel as it ends: after its local-storage destructors and after its
 * mailbox has closed (a send to it fails with -ESRCH from then on), before
 * it counts as finished (join and weft_run wait for the send). The send
 * waits for room as weft_chan_send with no deadline: nothing is dropped,
 * except when the channel is closed (-EPIPE) or a cancellation request made
 * after the fiber ended interrupts the wait (weft_fiber_cancel, or
 * weft_shutdown_grace: a supervisor that stopped reading would otherwise
 * keep it from finishing). Give a supervised fiber's reports a reader, or
 * room: a supervisor that joins its children before reading their reports
 * deadlocks on a full channel. The channel must outlive its fibers. */
typedef struct weft_exit {
	weft_fiber_t fiber; /* the fiber (its pid too; a send to it fails) */
	int status;         /* its exit status: 0, -ECANCELED, or an error */
	void *result;       /* what it returned, or passed to weft_fiber_exit */
} weft_exit_t;

/* Generators: a fiber that yields values to whoever resumes it, one at a
 * time. fn(arg) runs on its own fiber (attr as for weft_fiber_spawn), only
 * while a weft_gen_next waits: created, it waits for the first next; each
 * weft_gen_yield hands a value to the waiting next and waits for the
 * following next. One resumer at a time; any fiber or plain thread. */
typedef struct weft_gen weft_gen_t;

/* Create a generator; it starts at the first weft_gen_next. Returns 0 and
 * *out (to be ended with weft_gen_destroy), or what weft_fiber_spawn returns
 * (-EINVAL also for out NULL). */
#define weft_gen_create(out, attr, fn, arg) \
	weft_gen_create_site((out), (attr), (fn), (arg), __FILE__, __LINE__)
WEFT_API int weft_gen_create_site(weft_gen_t **out, const weft_attr_t *attr, weft_fn fn, void *arg,
				  const char *file, int line);

/* Resume g (unless it is already running: a previous next timed out) and
 * wait for its next value. Returns 0 and the value in *value (value may be
 * NULL); -EPIPE once it has ended (the end of the stream, as a channel's),
 * with what fn returned (or passed to weft_fiber_exit) in *value, again on every later call; -ETIMEDOUT or -ECANCELED (the generator runs on: the
 * value it yields is kept for the next call; deadline 0 resumes it and
 * returns at once unless a value is already waiting); -EBUSY (another next
 * or a destroy is in progress on g); -EDEADLK (called by g's own fiber);
 * -EINVAL (g NULL). A waiting value is returned without a switch. */
WEFT_API int weft_gen_next(weft_gen_t *g, int64_t deadline, void **value);

/* In a generator's fiber: hand value to the resumer and wait to be resumed.
 * Returns 0 (resumed: go on); -ECANCELED (the generator is being destroyed,
 * or its fiber was cancelled: end now; after a destroy began every later
 * yield returns it too); -EPERM (not a generator's fiber). A value yielded
 * before a destroy is never taken. */
WEFT_API int weft_gen_yield(void *value);

/* End g and free it. A generator runs on a fiber, so its destroy first
 * stops it and waits: one that has not ended is cancelled (the yield or the
 * call it waits in returns -ECANCELED, and one not yet started never runs
 * fn), then waited for until the deadline; *status (may be NULL) gets its
 * exit status (0, -ECANCELED, or what it failed with). Returns 0 (g is
 * freed; NULL: a no-op); -ETIMEDOUT or -ECANCELED (it has not ended yet: g
 * stays valid, destroy it again); -EBUSY (a next is in progress);
 * -EDEADLK (called by g's own fiber). */
WEFT_API int weft_gen_destroy(weft_gen_t *g, int64_t deadline, int *status);

/* ---- Waiting for file descriptors, and blocking work -------------------- */

enum { WEFT_IO_IN = 1, WEFT_IO_OUT = 2, WEFT_IO_ERR = 4 };

/* Wait until fd (a pipe, an eventfd, a socket: anything epoll can watch) is
 * ready for any of events (WEFT_IO_IN, WEFT_IO_OUT). On bare metal fd is a
 * device's I/O source, the number its driver registered; 0 is the console's
 * input (then read(0, ...), which never waits). Returns the ready
 * events (> 0; WEFT_IO_ERR is added when the fd hung up or failed);
 * -ETIMEDOUT; -ECANCELED; -EINVAL (fd < 0, events empty or unknown); -EPERM
 * (fd cannot be waited on, e.g. a regular file); -EBADF (not an open fd, or
 * no such I/O source); -EBUSY (another caller waits for the same direction
 * on fd); -ESRCH (runtime not running, or, in a plain thread, weft_shutdown
 * stopped it during the wait). One reader and one writer may wait on an fd
 * at once. Call weft_fd_forget(fd) before closing a waited-on fd. */
WEFT_API int weft_fd_wait(int fd, unsigned events, int64_t deadline);

/* Forget fd before it is closed: wakes its waiters with -EBADF. */
WEFT_API void weft_fd_forget(int fd);

/* Run fn(arg) on a helper thread, for work that must block in the kernel (a
 * file read, a name lookup) so that it stalls no worker, and wait for it.
 * The wait cannot be interrupted: a cancellation arriving meanwhile stays
 * pending for the caller's next suspension point. Returns 0 and what fn
 * returned in *result (result may be NULL); -EINVAL (fn NULL); -ENOMEM,
 * -EAGAIN (no helper thread); -ESRCH (runtime not running). At most 4 helper
 * threads exist; further calls queue. */
WEFT_API int weft_offload(weft_fn fn, void *arg, void **result);

/* ---- Signals ------------------------------------------------------------- */

/* A set of signals, for the two calls below: bit n - 1 stands for signal n
 * (1 to 64), e.g. WEFT_SIGNAL(SIGTERM) | WEFT_SIGNAL(SIGINT). A mask, not a
 * sigset_t, so that this header needs no POSIX feature macro
 * (docs/decisions/signals.md). */
#define WEFT_SIGNAL(n) ((uint64_t)1 << ((n)-1))

/* Block the signals of set in the calling thread, so that they stay pending
 * for weft_signal_wait instead of running their action. A thread starts with
 * the mask of the thread that made it: call this before weft_init (and
 * before the program starts threads of its own), and every thread blocks
 * them. Returns 0, -EINVAL (set empty, or a signal that does not exist,
 * cannot be blocked (SIGKILL, SIGSTOP), or is the C library's own (32 and
 * 33, and 34 with musl) or the runtime's: SIGSEGV and SIGBUS (stack
 * overflows), SIGURG (stall backtraces)), -ENOTSUP (no signals: bare
 * metal). */
WEFT_API int weft_signal_block(uint64_t set);

/* Wait until one of the signals of set is pending for the process, take it
 * (it is consumed: it reaches one waiter, and its action does not run) and
 * store its number in *signo. Parks only the calling fiber (a plain thread
 * blocks). The signals must be blocked in every thread of the process
 * (weft_signal_block before weft_init), or a thread that does not block
 * one runs its action instead (for SIGTERM or SIGINT: the process ends);
 * the call checks the calling thread. What is sent to the process (kill,
 * sigqueue, the terminal, a parent) is seen; a signal sent to one thread
 * (raise, pthread_kill) only by a wait that happens to run on that thread:
 * send to the process. Several waiters for one signal: each occurrence
 * goes to one of them. A standard signal sent again while pending is
 * merged with it, as the kernel does; real-time signals queue. Returns 0;
 * -ETIMEDOUT; -ECANCELED (the signal, if one comes, is left pending);
 * -EINVAL (signo NULL, set as weft_signal_block's, or a signal of set not
 * blocked in the calling thread); -ESRCH (runtime not running, or in a
 * plain thread stopped during the wait); -ENOTSUP (bare metal); -EMFILE,
 * -ENFILE, -ENOMEM. */
WEFT_API int weft_signal_wait(uint64_t set, int64_t deadline, int *signo);

/* ---- Diagnostics and interrupts ----------------------------------------- */

/* One worker's counters since weft_init, each read on its own (relaxed): a
 * snapshot, not one instant. */
typedef struct weft_worker_stats {
	uint64_t switches; /* context switches it made */
	uint64_t steals;   /* successful steals from another worker's queue
			    * (each takes up to half of it); 0 with one worker */
	uint64_t parks;    /* fibers that parked on it and switched out (a wait
			    * that completed without sleeping is not counted) */
	uint64_t wakes;    /* parked fibers woken by code running on it (a
			    * plain thread's wakes count nowhere) */
	uint64_t queued;   /* fibers in its run queues now, both classes (not
			    * those that yielded and wait behind it, those
			    * pinned to it, nor the global queue) */
	uint64_t stalls;   /* stalls the detector reported on it: fibers that
			    * ran past weft_config_t.stall_ms without a
			    * suspension point, each counted once */
} weft_worker_stats_t;

/* Worker i's counters, i in [0, weft_workers()). Any thread. Returns 0,
 * -EINVAL (out NULL, i out of range), -ESRCH (runtime not running). */
WEFT_API int weft_worker_stats(unsigned i, weft_worker_stats_t *out);

/* Print every fiber on the console (stderr on Linux, the UART on bare
 * metal): id, name, state (running on worker N, runnable, parked, finished
 * and not joined), for a parked fiber what it waits on ("sleep", "chan
 * recv", "join", ...) and for how long, a pending or held-off cancellation,
 * its spawn site and the chain of fibers that spawned it (up to 8; "(gone)"
 * where a spawner has ended), and for a parked fiber the return addresses
 * on its stack (frame pointers; symbolised where the shim can, else
 * "module+offset" or bare addresses for addr2line); then each worker's
 * counters. A snapshot: fibers move while it reads. From fibers and plain
 * threads, not from signal or interrupt handlers (SIGQUIT does it from a
 * thread of its own). Returns the number of fibers printed, -ESRCH (runtime
 * not running). */
WEFT_API int weft_dump(void);

/* weft_dump, handing the text to fn(text, len, ctx) instead of the console.
 * Returns as weft_dump, and -EINVAL for fn NULL. */
WEFT_API int weft_dump_to(weft_dump_fn fn, void *ctx);

/* Ask the fiber to stop at its next yield point: a cancellation request,
 * as weft_fiber_cancel's (it merges with one), delivered as -ECANCELED by
 * the next weft_fiber_yield (a loop that only computes and yields), by the
 * call it is blocked in, or by its next call that would block; after its
 * hold ends if it holds cancellation off. Callable from anywhere: fibers,
 * other OS threads, signal handlers, bare-metal interrupt handlers. It
 * takes no lock, no reference and allocates nothing (it finds f in the
 * fiber table, whose records are not freed while the runtime runs: call it
 * between weft_init and the end of weft_shutdown); waking a parked fiber is
 * left to the workers, which it wakes. Returns 0, -EALREADY (the fiber has
 * finished), -ESRCH (f names no fiber now: never valid, or finished and
 * joined or detached). The same request as weft_fiber_cancel's, for the
 * places that one cannot be called from; from a fiber or a plain thread
 * call weft_fiber_cancel, which wakes a parked fiber itself instead of
 * leaving it to a worker's sweep of every fiber. */
WEFT_API int weft_fiber_interrupt(weft_fiber_t f);

#ifdef __cplusplus
}
#endif

#endif
