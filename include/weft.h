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
 *    runs others) and from plain OS threads (they block the thread).
 *  - A blocking call in a fiber returns -ECANCELED when the fiber is
 *    cancelled (weft_fiber_cancel), once per request.
 */
#ifndef WEFT_H
#define WEFT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Runtime ----------------------------------------------------------- */

typedef struct weft_config {
	unsigned workers;        /* worker threads; 0 = $WEFT_WORKERS or CPUs (max 16) */
	size_t stack_size;       /* default fiber stack bytes; 0 = $WEFT_STACK_KB or 64 KiB */
} weft_config_t;

/* Start the runtime: worker threads, the overflow handler (SIGSEGV/SIGBUS on
 * Linux; faults that are not a fiber's guard page go to the handler that was
 * installed before). cfg may be NULL. Call once, from a plain thread, before
 * any other weft call; again only after weft_shutdown. Returns 0, -EALREADY
 * (running), -EINVAL (workers > 16, stack_size below 4 KiB or above 1 GiB, or
 * a malformed environment variable), -ENOMEM, -EAGAIN (no threads), or the
 * -errno of a failed signal set-up. */
int weft_init(const weft_config_t *cfg);

/* Block the calling plain thread until every fiber has exited. Returns 0,
 * -EPERM when called from a fiber (it would wait for itself), -ESRCH when the
 * runtime is not running. */
int weft_run(void);

/* Stop the worker threads and release the runtime; call weft_run first.
 * Handles of finished fibers not yet joined stay valid and can be joined
 * after. Do not spawn from other threads while it runs. Returns 0, -EBUSY
 * (fibers are still alive, or the network stack is up: weft_net_fini first;
 * nothing is stopped), -EPERM (called from a fiber), -ESRCH (not running). */
int weft_shutdown(void);

/* Number of worker threads, 0 if the runtime is not running. */
unsigned weft_workers(void);

/* Index [0, weft_workers()) of the worker running the calling fiber, or -1
 * from a plain thread. A fiber may move between workers at any suspension. */
int weft_worker_index(void);

/* A snapshot of the runtime's counters (each read on its own: together they
 * are not one instant). */
typedef struct weft_stats {
	unsigned workers;
	uint64_t fibers;   /* alive now: spawned and not finished */
	uint64_t spawned;  /* fibers spawned since the process started */
	uint64_t switches; /* context switches by every worker since weft_init */
} weft_stats_t;

/* 0, -EINVAL (out NULL), -ESRCH (runtime not running). */
int weft_stats(weft_stats_t *out);

/* ---- Time -------------------------------------------------------------- */

/* Monotonic time in nanoseconds: the clock every deadline is measured in. */
int64_t weft_now(void);

/* Absolute deadline ns from now (ns < 0 gives -1, forever). */
int64_t weft_deadline_in(int64_t ns);

/* Sleep until the deadline. Returns 0 once it has passed (at once for 0 or a
 * past deadline), -ECANCELED, -EINVAL for a negative deadline (it would never
 * wake). */
int weft_sleep_until(int64_t deadline);

/* ---- Fibers ------------------------------------------------------------ */

/* A fiber handle. It names one fiber for as long as the handle is held:
 * until weft_fiber_join succeeds or weft_fiber_detach. A handle's value comes
 * back only after its slot has been reused 2^32 times, so a stale handle is
 * detected (-ESRCH), not misdirected. 0 is never a valid handle. */
typedef uint64_t weft_fiber_t;

typedef void *(*weft_fn)(void *arg);

typedef struct weft_attr {
	size_t stack_size; /* bytes, 0 = the runtime default; rounded up to pages */
	const char *name;  /* copied (up to 31 chars); NULL = no name */
} weft_attr_t;

/* Create a fiber running fn(arg) and queue it. attr may be NULL. If out is
 * NULL the fiber starts detached; otherwise *out receives a handle that must
 * be joined or detached. Callable from fibers and plain threads. Returns 0,
 * -EINVAL (fn NULL; stack_size below 4 KiB or above 1 GiB), -ENOMEM (no
 * memory for the fiber or its stack: the runtime keeps running), -ESRCH
 * (runtime not running). The macro records the spawn site for diagnostics. */
#define weft_fiber_spawn(out, attr, fn, arg) \
	weft_fiber_spawn_at((out), (attr), (fn), (arg), __FILE__, __LINE__)
int weft_fiber_spawn_at(weft_fiber_t *out, const weft_attr_t *attr, weft_fn fn, void *arg,
			const char *file, int line);

/* Wait until fiber f has finished and collect what fn returned (or what it
 * passed to weft_fiber_exit) into *result (result may be NULL); the handle is
 * then released. Joining awaits the fiber's future. Returns 0; -ETIMEDOUT or
 * -ECANCELED (the handle stays valid: join again later); -ESRCH (f is not a
 * held handle: never valid, already joined or detached); -EDEADLK (f is the
 * caller); -EBUSY (another caller is already joining f). */
int weft_fiber_join(weft_fiber_t f, int64_t deadline, void **result);

/* Give up the handle: the fiber's memory is freed as soon as it finishes.
 * Returns 0, -ESRCH (not a held handle), -EBUSY (someone is joining it),
 * -EPERM (f is the caller: the handle belongs to its spawner). */
int weft_fiber_detach(weft_fiber_t f);

/* Ask fiber f to stop: the call it is blocked in, or the next call that
 * would block (or weft_fiber_yield, or weft_sleep_until), returns -ECANCELED;
 * later calls are unaffected until the next request. A call that completes
 * without waiting does not consume the request. Requests made before delivery
 * merge into one. A fiber that has not run yet gets it at its first such call.
 * Returns 0; -ESRCH (not a held handle); -EALREADY (f has already finished:
 * nothing to cancel). */
int weft_fiber_cancel(weft_fiber_t f);

/* Let other runnable fibers run; the caller is queued behind them. From a
 * plain thread it yields the CPU. Returns 0 or -ECANCELED. */
int weft_fiber_yield(void);

/* End the calling fiber with result, as if fn had returned it. Only from a
 * fiber (from a plain thread it returns -EPERM). */
int weft_fiber_exit(void *result);

/* The handle of the calling fiber, or 0 from a plain thread. The caller does
 * not own it (it must not join or detach itself). */
weft_fiber_t weft_fiber_self(void);

/* The calling fiber's id: a small number, unique in the process, the one
 * diagnostics print. 0 from a plain thread. */
uint64_t weft_fiber_id(void);

/* The calling fiber's name ("" if none), or NULL from a plain thread. */
const char *weft_fiber_name(void);

/* ---- Futures ----------------------------------------------------------- */

/* A value that settles once: resolved with a pointer or rejected with a
 * negative errno. Any number of fibers and threads may await it. */
typedef struct weft_future weft_future_t;

/* Returns 0 and a future holding one reference, or -EINVAL, -ENOMEM. */
int weft_future_create(weft_future_t **out);

/* Take another reference (for handing the future to another owner). */
weft_future_t *weft_future_retain(weft_future_t *f);

/* Drop a reference; the last one frees the future. Waiters hold their own
 * reference while they wait, so releasing during an await is safe. */
void weft_future_release(weft_future_t *f);

/* Settle with a value and wake every waiter. Returns 0, -EINVAL (f NULL),
 * -EALREADY (already settled: the first settlement stands). */
int weft_future_resolve(weft_future_t *f, void *value);

/* Settle with an error (a negative errno) and wake every waiter. Returns 0,
 * -EINVAL (f NULL or error >= 0), -EALREADY. */
int weft_future_reject(weft_future_t *f, int error);

/* Wait for f to settle. Returns 0 and the value in *value (value may be
 * NULL); or the rejection error; or -ETIMEDOUT, -ECANCELED, -EINVAL (f NULL).
 * A settled future returns at once, without a switch. */
int weft_future_await(weft_future_t *f, int64_t deadline, void **value);

/* ---- Channels ---------------------------------------------------------- */

/* A channel carries elements of a fixed size, copied in and out. Capacity 0
 * is a rendezvous: a send completes only when a receiver takes the element.
 * Safe between any fibers and plain threads. Closed as in Go: receivers
 * drain what is buffered, then get -EPIPE; a send on a closed channel gets
 * -EPIPE; blocked senders and receivers are woken with -EPIPE. */
typedef struct weft_chan weft_chan_t;

/* Returns 0 and the channel, -EINVAL (elem_size 0 or above 64 KiB, capacity
 * above 2^24), -ENOMEM. */
int weft_chan_create(weft_chan_t **out, size_t elem_size, size_t capacity);

/* Free the channel. Nobody may be using it or blocked on it. */
void weft_chan_destroy(weft_chan_t *c);

/* Copy elem_size bytes from elem into the channel. Returns 0, -EPIPE
 * (closed), -ETIMEDOUT, -ECANCELED, -EINVAL (NULL arguments). */
int weft_chan_send(weft_chan_t *c, const void *elem, int64_t deadline);

/* Copy the next element into elem. Returns 0, -EPIPE (closed and drained),
 * -ETIMEDOUT, -ECANCELED, -EINVAL (NULL arguments). */
int weft_chan_recv(weft_chan_t *c, void *elem, int64_t deadline);

/* Close the channel. Returns 0, -EPIPE (already closed), -EINVAL. */
int weft_chan_close(weft_chan_t *c);

/* Elements buffered now (a snapshot). */
size_t weft_chan_len(weft_chan_t *c);

/* ---- Waiting for file descriptors, and blocking work -------------------- */

enum { WEFT_IO_IN = 1, WEFT_IO_OUT = 2, WEFT_IO_ERR = 4 };

/* Wait until fd (a pipe, an eventfd, a socket: anything epoll can watch) is
 * ready for any of events (WEFT_IO_IN, WEFT_IO_OUT). Returns the ready events
 * (> 0; WEFT_IO_ERR is added when the fd hung up or failed); -ETIMEDOUT;
 * -ECANCELED; -EINVAL (fd < 0, events empty or unknown); -EPERM (fd cannot be
 * waited on, e.g. a regular file); -EBADF; -EBUSY (another caller waits for
 * the same direction on fd); -ENOSYS (this target has no file descriptors);
 * -ESRCH (runtime not running). One reader and one writer may wait on an fd
 * at once. Call weft_fd_forget(fd) before closing a waited-on fd. */
int weft_fd_wait(int fd, unsigned events, int64_t deadline);

/* Forget fd before it is closed: wakes its waiters with -EBADF. */
void weft_fd_forget(int fd);

/* Run fn(arg) on a helper thread, for work that must block in the kernel (a
 * file read, a name lookup) so that it stalls no worker, and wait for it.
 * The wait cannot be interrupted: a cancellation arriving meanwhile stays
 * pending for the caller's next suspension point. Returns 0 and what fn
 * returned in *result (result may be NULL); -EINVAL (fn NULL); -ENOMEM,
 * -EAGAIN (no helper thread); -ESRCH (runtime not running). At most 4 helper
 * threads exist; further calls queue. */
int weft_offload(weft_fn fn, void *arg, void **result);

#ifdef __cplusplus
}
#endif

#endif
