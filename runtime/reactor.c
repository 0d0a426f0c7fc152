/* SPDX-License-Identifier: MIT */
/* The reactor's waiting logic: who waits on which I/O source, for what. The
 * shim reports readiness (epoll on Linux, device interrupts on bare metal);
 * this file registers a source with the shim at its first wait, once for its
 * life (until weft__io_forget), keeps one reader slot and one writer slot
 * per source, and completes them when a report comes.
 *
 * Reports are edges: a source that stays ready is not reported again. What
 * a report says while nobody waits for it is kept (the source's ready bits)
 * for the next wait of a caller that drained the source (weft__io_wait_drained:
 * its read or write said -EAGAIN), which takes the bits and returns without
 * parking; a woken waiter has taken its bits. So no edge is lost, and a
 * drained caller waits with no call to the kernel. A bit may be stale (the
 * edge was for data the caller has since read): the caller tries again,
 * gets -EAGAIN and waits again, now for a new edge. A caller that may not
 * have drained the source (weft_fd_wait: level semantics) has the shim look
 * at it again as it waits (shim_io_arm). Every report carries the tag of
 * its registration: one that was on its way when the source was forgotten
 * (and its number reused) is dropped. A shim that reports a source once per
 * arm (bare metal; shim_io_add says so) is armed, as it always was, for the
 * union of what the waiters want, at each wait and after each report.
 *
 * Who polls. While any fiber waits on I/O the reactor is never left to
 * nobody: one idle worker blocks in the poll instead of its futex (idle.c),
 * and busy workers look without blocking when their queues run dry
 * (sched.c, weft__find_work) and, since a worker that always finds work
 * never runs dry, whenever nobody has looked for IO_TICK_NS (weft__io_tick,
 * as Go's sysmon does after 10 ms). One poller at a time: an idle worker
 * that finds a busy one's quick look in progress goes to its futex, so the
 * busy one, letting go, wakes an idle worker to take the poll
 * (poll_release). A fiber that never yields still holds its worker; an idle
 * worker in the poll sees the readiness meanwhile, if there is one.
 *
 * The slots are kept under one lock, taken also around the shim's arm
 * call, so a report cannot be dispatched before its waiter is registered. */
#include <stdlib.h>
#include <string.h>

#include "fence.h"
#include "internal.h"

struct iorec {
	struct weft__waiter *rd, *wr;
	uint32_t tag;  /* of its registration with the shim; 0: not registered */
	uint8_t ready; /* reported, not yet taken: IO_ALL, and ERR_IN/ERR_OUT */
	bool ended;    /* a hang-up or an error was reported: never taken */
	bool oneshot;  /* the shim reports it once per shim_io_arm */
	bool dead;     /* closing (weft__io_close): waits fail with -EBADF */
};

static weft__lock_t io_lock = WEFT__LOCK_INIT;
static struct iorec *tab; /* indexed by source */
static size_t ntab;
static uint32_t last_tag; /* the latest registration's */
static bool io_ready;     /* shim_io_init done */
/* Registered waiters: nobody polls when 0. Changed only under io_lock
 * (waiting_add), read without it. */
static _Atomic int nwaiting;

/* Who holds the poll: nobody, a busy worker looking without blocking, or an
 * idle worker (which blocks in it until woken or its deadline). */
enum { POLL_FREE, POLL_BUSY, POLL_IDLE };
static _Atomic int polling;
/* Somebody left the poll to the busy worker holding it: an idle worker that
 * went to its futex instead, or a new waiter that woke nobody. The holder
 * wakes an idle worker as it lets go. */
static _Atomic int handoff;
/* When a poll last returned, real time (shim_now): the virtual clock stands
 * still while workers are busy, which is when weft__io_tick is needed. */
static _Atomic int64_t last_poll;

/* How long busy workers leave the reactor unlooked-at while fibers wait on
 * I/O and no idle worker blocks in it. weft__find_work calls
 * weft__io_tick every 64th look for work and whenever its own queues are
 * empty, so the clock is read no more often than that. */
#define IO_TICK_NS 1000000

#define IO_ALL (WEFT_IO_IN | WEFT_IO_OUT)
/* A kept hang-up or error, per direction: it goes to that direction's
 * next taker with WEFT_IO_ERR. */
#define ERR_IN 16
#define ERR_OUT 32

/* Reports taken from the shim in one poll and handled under one lock, in
 * the one array below: only the poll's holder (poll_take) uses it. Not on
 * the poller's stack: a fiber that parks with nothing else queued polls on
 * its own stack (weft__find_work), and 3 KiB of reports there took every
 * such fiber into a second stack page, held as long as it lives (issue 34:
 * an echo connection's fiber on qemu-virt). */
#define POLL_MAX 256
static struct shim_io_event poll_ev[POLL_MAX];

_Static_assert((int)WEFT_IO_IN == (int)SHIM_IO_IN && (int)WEFT_IO_OUT == (int)SHIM_IO_OUT &&
		       (int)WEFT_IO_ERR == (int)SHIM_IO_ERR,
	       "public and shim event bits agree");

/* The table grown to hold src: its record, or NULL (no memory). */
static __attribute__((cold, noinline)) struct iorec *rec_grow(int src)
{
	size_t n = ntab ? ntab : 64;
	while (n <= (size_t)src)
		n *= 2;
	struct iorec *t = realloc(tab, n * sizeof *t);
	if (!t)
		return NULL;
	memset(t + ntab, 0, (n - ntab) * sizeof *t);
	tab = t;
	ntab = n;
	return &tab[src];
}

/* src's record; one made (the table grown) if create. Every wait and every
 * report looks one up: the common case is inline. */
static inline struct iorec *rec_get(int src, bool create)
{
	if ((size_t)src < ntab)
		return &tab[src];
	return create ? rec_grow(src) : NULL;
}

/* Register src with the shim at its first wait: 0 or -errno. fresh: it was
 * registered just now (an edge-triggered shim has then reported what it is
 * ready for). */
static int reg(int src, struct iorec *r, bool *fresh)
{
	*fresh = false;
	if (r->tag)
		return 0;
	uint32_t tag = ++last_tag ? last_tag : ++last_tag;
	int k = shim_io_add(src, tag);
	if (k < 0)
		return k;
	r->tag = tag;
	r->oneshot = k == 1;
	r->ready = 0;
	r->ended = false;
	*fresh = true;
	return 0;
}

/* The kept-error bits of directions dirs (IO_ALL). */
static unsigned errs_of(unsigned dirs)
{
	return ((dirs & WEFT_IO_IN) ? ERR_IN : 0) | ((dirs & WEFT_IO_OUT) ? ERR_OUT : 0);
}

/* The kept bits for events, taken: what a waiter returns. */
static unsigned take(struct iorec *r, unsigned events)
{
	unsigned errs = errs_of(events), got = r->ready & events, err = r->ready & errs;
	r->ready &= (uint8_t) ~(events | errs);
	return got | (err ? WEFT_IO_ERR : 0);
}

/* Keep what a report said that no waiter took. */
static void keep(struct iorec *r, unsigned ev)
{
	unsigned k = ev & IO_ALL;
	r->ready |= (uint8_t)(k | ((ev & WEFT_IO_ERR) ? errs_of(k) : 0));
}

/* A stream's end or an error stays: what a read that emptied the source
 * may have taken with its last bytes (weft__io_wait_emptied). */
static void note_end(struct iorec *r, unsigned ev)
{
	if (ev & (SHIM_IO_HUP | SHIM_IO_ERR))
		r->ended = true;
}

static unsigned interest(const struct iorec *r)
{
	return (r->rd ? WEFT_IO_IN : 0) | (r->wr ? WEFT_IO_OUT : 0);
}

/* Under io_lock, the only writer's: a load and a store, no locked
 * read-modify-write (two a message on the echo path). */
static void waiting_add(int d)
{
	atomic_store_explicit(&nwaiting, atomic_load_explicit(&nwaiting, memory_order_relaxed) + d,
			      memory_order_relaxed);
}

/* Take w out of its slots, if it is still there. */
static inline __attribute__((always_inline)) void slot_clear(struct iorec *r,
							     struct weft__waiter *w)
{
	bool was = false;
	if (w && r->rd == w) {
		r->rd = NULL;
		was = true;
	}
	if (w && r->wr == w) {
		r->wr = NULL;
		was = true;
	}
	if (was)
		waiting_add(-1);
}

/* Complete w with the events it asked for among ev, or with err. A select's
 * waiter (claim) that another case or its deadline has settled is only
 * dropped: false, and what it was to get is kept. */
static inline __attribute__((always_inline)) bool finish(struct iorec *r, struct weft__waiter *w,
							 unsigned ev, int err)
{
	slot_clear(r, w);
	if (!weft__waiter_claim(w))
		return false;
	unsigned want = (unsigned)(uintptr_t)w->data | WEFT_IO_ERR;
	weft__waiter_complete(w, err ? err : (int)(ev & want));
	return true;
}

/* A new waiter: workers asleep on their futex do not poll. An idle worker
 * in the poll sees the new interest; a busy worker's quick look is asked to
 * hand the poll over as it lets go (poll_release); with nobody polling, an
 * idle worker is woken to take it. The seq_cst store and load pair with
 * poll_release's: either it sees handoff or this sees the poll free. A
 * fiber on the one worker there is needs nobody: that worker is not idle,
 * and looks at the reactor when it runs out of work (weft__find_work),
 * which saves the wake's fence on every wait (a plain thread in
 * weft_fd_wait still wakes the worker). */
static void need_poller(void)
{
	if (weft__rt.nworkers == 1 && weft__worker_self())
		return;
	int p = atomic_load(&polling);
	if (p == POLL_BUSY) {
		atomic_store(&handoff, 1);
		p = atomic_load(&polling);
	}
	if (p == POLL_FREE)
		weft__kick_idle();
}

/* How a caller comes to wait: it has not drained src (level), its last try
 * said -EAGAIN (drained), or its last read was short (emptied). */
enum { WAIT_LEVEL, WAIT_DRAINED, WAIT_EMPTIED };

/* Park until src is ready for events. Drained or emptied, kept bits answer
 * at once and an edge-triggered shim needs no look; an emptied source that
 * reported its end or an error answers at once too. Level: the shim looks
 * at src again (shim_io_arm). */
static int wait_on(int src, unsigned events, int64_t deadline, int how)
{
	bool drained = how != WAIT_LEVEL;
	if (src < 0 || !events || (events & ~IO_ALL))
		return -EINVAL;
	struct weft__waiter w = {0};
	weft__lock(&io_lock);
	/* Under the lock: weft__io_reset, which ends the waits it finds,
	 * comes after the shutdown's store, so a waiter it cannot see sees
	 * the runtime stopped. */
	int err = atomic_load(&weft__rt.running) ? 0 : -ESRCH;
	bool fresh = false;
	if (!err && !io_ready) {
		err = shim_io_init();
		io_ready = err == 0;
	}
	struct iorec *r = err ? NULL : rec_get(src, true);
	if (!err && !r)
		err = -ENOMEM;
	if (!err && r->dead)
		err = -EBADF;
	if (!err && (((events & WEFT_IO_IN) && r->rd) || ((events & WEFT_IO_OUT) && r->wr)))
		err = -EBUSY;
	if (!err)
		err = reg(src, r, &fresh);
	if (!err && drained) {
		unsigned got = take(r, events);
		if (how == WAIT_EMPTIED && r->ended)
			got |= events | WEFT_IO_ERR;
		if (got) {
			weft__unlock(&io_lock);
			return (int)got;
		}
	} else if (!err) {
		take(r, events); /* the look below reports them again if they hold */
	}
	if (!err && (r->oneshot || (!drained && !fresh)))
		err = shim_io_arm(src, r->tag, interest(r) | events);
	if (err) {
		weft__unlock(&io_lock);
		return err;
	}
	w.f = weft__self();
	w.data = (void *)(uintptr_t)events;
	w.gen = weft__park_begin_why(w.f, "fd");
	if (events & WEFT_IO_IN)
		r->rd = &w;
	if (events & WEFT_IO_OUT)
		r->wr = &w;
	waiting_add(1);
	weft__unlock(&io_lock);
	need_poller();

	int res = weft__park_end(w.f, deadline);
	/* A plain wake comes only from finish's weft__waiter_complete, which
	 * was done with w (and its slot) before the unpark whose CAS this
	 * park's end has read: the result stands without the lock (as in
	 * waiter.c), one lock a message fewer on the echo path. */
	if (res == 0 && __atomic_load_n(&w.done, __ATOMIC_ACQUIRE))
		return w.result;
	weft__lock(&io_lock);
	if (w.done) {
		if (res == -ECANCELED)
			weft__cancel_repend(w.f);
		res = w.result;
	} else {
		/* Timed out or cancelled: the source stays registered; a late
		 * report finds nobody and is kept. The table may have moved. */
		slot_clear(&tab[src], &w);
		if (!res)
			res = -EINTR;
	}
	weft__unlock(&io_lock);
	return res;
}

int weft__io_wait(int src, unsigned events, int64_t deadline)
{
	return wait_on(src, events, deadline, WAIT_LEVEL);
}

int weft__io_wait_drained(int src, unsigned events, int64_t deadline)
{
	return wait_on(src, events, deadline, WAIT_DRAINED);
}

int weft__io_wait_emptied(int src, int64_t deadline)
{
	return wait_on(src, WEFT_IO_IN, deadline, WAIT_EMPTIED);
}

/* Complete the waiters of one report and keep what they did not take; a
 * one-shot source is armed again for those left. A report of an older
 * registration is dropped. */
static void dispatch(const struct shim_io_event *e)
{
	struct iorec *r = rec_get(e->src, false);
	if (!r || !r->tag || e->tag != r->tag)
		return;
	unsigned ev = e->events, taken = 0;
	struct weft__waiter *rd = r->rd, *wr = r->wr;
	if (rd && (ev & ((unsigned)(uintptr_t)rd->data | WEFT_IO_ERR))) {
		unsigned want = (unsigned)(uintptr_t)rd->data;
		if (finish(r, rd, ev, 0))
			taken |= want;
	}
	if (wr && wr != rd && (ev & (WEFT_IO_OUT | WEFT_IO_ERR))) {
		if (finish(r, wr, ev, 0))
			taken |= WEFT_IO_OUT;
	}
	keep(r, ev & ~taken);
	note_end(r, ev);
	unsigned left = interest(r);
	if (left && r->oneshot && shim_io_arm(e->src, r->tag, left) < 0) {
		/* The source went away under its waiters. */
		rd = r->rd;
		wr = r->wr;
		if (rd)
			finish(r, rd, WEFT_IO_ERR, 0);
		if (wr && wr != rd)
			finish(r, wr, WEFT_IO_ERR, 0);
	}
}

/* ---- Select cases on a source (service.h) ---------------------------------- */

weft__lock_t *weft__io_lock(void) { return &io_lock; }

int weft__io_ready_poll(int src, unsigned events)
{
	if (src < 0 || !events || (events & ~IO_ALL))
		return -EINVAL;
	if (!atomic_load(&weft__rt.running))
		return -ESRCH;
	if (!io_ready) {
		int err = shim_io_init();
		if (err)
			return err;
		io_ready = true;
	}
	struct iorec *r = rec_get(src, true);
	if (!r)
		return -ENOMEM;
	if (r->dead)
		return -EBADF;
	if (((events & WEFT_IO_IN) && r->rd) || ((events & WEFT_IO_OUT) && r->wr))
		return -EBUSY;
	bool fresh;
	int err = reg(src, r, &fresh);
	if (err)
		return err;
	unsigned got = take(r, events);
	if ((events & WEFT_IO_IN) && r->ended)
		got |= WEFT_IO_IN | WEFT_IO_ERR;
	return (int)got;
}

void weft__io_ready_arm(int src, unsigned events, struct weft__waiter *w)
{
	struct iorec *r = &tab[src]; /* poll made it */
	w->data = (void *)(uintptr_t)events;
	if (((events & WEFT_IO_IN) && r->rd) || ((events & WEFT_IO_OUT) && r->wr)) {
		/* The same select's other case on src, same direction: that one
		 * waits, this one is busy, as poll would have said. */
		if (weft__waiter_claim(w))
			weft__waiter_complete(w, -EBUSY);
		return;
	}
	if (events & WEFT_IO_IN)
		r->rd = w;
	if (events & WEFT_IO_OUT)
		r->wr = w;
	waiting_add(1);
	int err = shim_io_arm(src, r->tag, interest(r));
	if (err)
		finish(r, w, 0, err);
	need_poller();
}

void weft__io_ready_disarm(int src, struct weft__waiter *w)
{
	struct iorec *r = rec_get(src, false);
	if (r)
		slot_clear(r, w);
}

bool weft__io_pending(void) { return atomic_load_explicit(&nwaiting, memory_order_relaxed) > 0; }

/* Take the poll as kind (POLL_BUSY or POLL_IDLE). A busy worker gives up at
 * once when it is held. An idle worker that finds a busy worker's quick
 * look in progress would go to its futex and leave nobody in the poll once
 * that look ends: it asks the holder to hand over (handoff), then looks
 * again (seq_cst, paired with poll_release's) and takes the poll if it is
 * free by now; otherwise the holder sees handoff, or an idle worker holds
 * the poll. */
static bool poll_take(int kind)
{
	int p = atomic_load_explicit(&polling, memory_order_relaxed);
	for (;;) {
		if (p == POLL_FREE) {
			if (atomic_compare_exchange_strong(&polling, &p, kind))
				break;
			continue;
		}
		if (kind == POLL_BUSY || p == POLL_IDLE)
			return false;
		atomic_store(&handoff, 1);
		p = atomic_load(&polling);
		if (p != POLL_FREE)
			return false;
	}
	/* An idle worker in the poll is what any handoff asked for. */
	if (kind == POLL_IDLE)
		atomic_store_explicit(&handoff, 0, memory_order_relaxed);
	return true;
}

/* Let go of the poll. A busy worker asked to hand over wakes an idle worker,
 * which comes round and blocks in the poll, if fibers still wait on I/O. An
 * idle worker leaves the poll for work: what it dispatched or a due timer
 * (their wakes rouse another idle worker, which comes round to the poll),
 * or a waker's, which picks the worker in the poll only when no other is
 * idle (idle.c). */
static void poll_release(int kind)
{
	atomic_store(&polling, POLL_FREE);
	if (kind == POLL_BUSY && atomic_load(&handoff) && atomic_exchange(&handoff, 0) &&
	    weft__io_pending())
		weft__kick_idle();
}

bool weft__io_poll(int64_t deadline, struct weft__worker *idle)
{
	if (!weft__io_pending())
		return false;
	int kind = idle ? POLL_IDLE : POLL_BUSY;
	if (!poll_take(kind))
		return false;
	if (idle) {
		/* A waker that sets idle->wake after this store sees the flag
		 * and interrupts the poll (idle.c, wake_worker). */
		atomic_store(&idle->in_poll, 1);
		weft__fence();
		if (atomic_load(&idle->wake))
			deadline = 0;
	}
	struct shim_io_event *ev = poll_ev;
	int n = shim_io_poll(ev, POLL_MAX, deadline);
	if (idle)
		atomic_store(&idle->in_poll, 0);
	atomic_store_explicit(&last_poll, shim_now(), memory_order_relaxed);
	if (n > 0) {
		weft__lock(&io_lock);
		for (int i = 0; i < n; i++)
			dispatch(&ev[i]);
		weft__unlock(&io_lock);
	}
	poll_release(kind);
	return true;
}

void weft__io_tick(void)
{
	if (!atomic_load_explicit(&nwaiting, memory_order_relaxed))
		return;
	if (atomic_load_explicit(&polling, memory_order_relaxed) != POLL_FREE)
		return;
	if (shim_now() - atomic_load_explicit(&last_poll, memory_order_relaxed) < IO_TICK_NS)
		return;
	weft__io_poll(0, NULL);
}

static void forget(int src, bool dead)
{
	if (src < 0)
		return;
	weft__lock(&io_lock);
	struct iorec *r = rec_get(src, dead);
	if (r) {
		struct weft__waiter *rd = r->rd, *wr = r->wr;
		if (rd)
			finish(r, rd, 0, -EBADF);
		if (wr && wr != rd)
			finish(r, wr, 0, -EBADF);
		r->dead = dead;
		if (r->tag && io_ready)
			shim_io_del(src);
		r->tag = 0;
		r->ready = 0;
		r->ended = false;
	}
	weft__unlock(&io_lock);
}

void weft__io_forget(int src) { forget(src, false); }

void weft__io_close(int src) { forget(src, true); }

/* At shutdown, with no fiber alive: the waiters left are plain threads in
 * weft_fd_wait. Their waits end here with -ESRCH (the runtime is not
 * running), while the table is still there; a completed waiter looks only
 * at its own record after (wait_on), so none of them touches the table
 * again, even one whose deadline passed and that waits for the lock. */
void weft__io_reset(void)
{
	weft__lock(&io_lock);
	for (size_t i = 0; i < ntab; i++) {
		struct weft__waiter *rd = tab[i].rd, *wr = tab[i].wr;
		if (rd)
			finish(&tab[i], rd, 0, -ESRCH);
		if (wr && wr != rd)
			finish(&tab[i], wr, 0, -ESRCH);
	}
	if (io_ready)
		shim_io_fini();
	io_ready = false;
	free(tab);
	tab = NULL;
	ntab = 0;
	atomic_store(&handoff, 0);
	weft__unlock(&io_lock);
}

int weft_fd_wait(int fd, unsigned events, int64_t deadline)
{
	return weft__io_wait(fd, events, deadline);
}

void weft_fd_forget(int fd) { weft__io_forget(fd); }
