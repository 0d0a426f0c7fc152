/* SPDX-License-Identifier: MIT */
/* Step-processes: a pid, a mailbox and three callbacks, without a stack.
 *
 * Runner fibers (at most one per worker, spawned when a step-process is and
 * gone when none is left) take runnable step-processes from one queue and
 * call them. A state word settles every race with a compare-and-swap, as a
 * fiber's park word does: a wake (a message, the timer, a cancellation)
 * ORs its event into the word and, if the process was idle, queues it; a
 * process that is queued or running only collects the event, and the runner
 * queues it again after the call if anything arrived meanwhile. So a
 * process is queued at most once and runs on one runner at a time.
 *
 * Timers: one min-heap of armed deadlines. Idle runners park with the
 * earliest as their deadline, and every runner fires what is due before it
 * looks at the queue. Arming only happens in a callback, on a runner that
 * will look at the heap before it parks again, so nobody sleeps past a
 * deadline. Under the virtual clock the runners' parks are ordinary timed
 * parks: the clock jumps to them. */
#include <stdlib.h>

#include "process.h"

enum { SS_IDLE = 0, SS_QUEUED = 1, SS_RUNNING = 2, SS_DONE = 3 };
#define ST(s) ((s)&3u)
#define EV_SHIFT 8
#define EV_INIT 0x80u /* init has not run yet */

struct weft_step {
	struct weft__mbox mb;   /* first: senders and the registry see this */
	_Atomic uint32_t state; /* SS_* in bits 0-1, events pending from bit 8 */
	uint32_t tslot;         /* timer heap index + 1, 0 when not armed */
	const weft_step_ops_t *ops;
	void *arg;
	struct weft_step *next; /* run queue */
	int64_t deadline;       /* the armed timer's */
};

struct runner {
	bool used;
	struct weft_step *cur; /* whose callback it is in */
};

static weft__lock_t rq_lock = WEFT__LOCK_INIT;
static struct weft_step *rq_head, *rq_tail;
static struct weft__waiter *rq_idle; /* runners parked for work */
static struct runner runners[WEFT_MAX_WORKERS];
static unsigned nrunners;
static uint64_t nlive; /* step-processes spawned and not yet closed */

/* A runner yields its worker to other fibers after this many calls. */
#define YIELD_EVERY 16

struct weft__mbox *weft__step_current(void)
{
	struct weft__worker *w = weft__worker_self();
	struct weft__fiber *f = w ? w->cur : NULL;
	/* A runner is named: it has a cold block, which says it is one. */
	struct weft__fiber_cold *c = f ? weft__cold(f) : NULL;
	if (!c || !c->step_runner)
		return NULL;
	struct weft_step *p = ((struct runner *)c->step_runner)->cur;
	return p ? &p->mb : NULL;
}

void weft__step_free(struct weft__mbox *mb) { free((struct weft_step *)mb); }

/* ---- The run queue ------------------------------------------------------ */

static void rq_push_locked(struct weft_step *p)
{
	p->next = NULL;
	if (rq_tail)
		rq_tail->next = p;
	else
		rq_head = p;
	rq_tail = p;
	struct weft__waiter *w = weft__waitq_take(&rq_idle);
	if (w)
		weft__waiter_complete(w, 0);
}

static void rq_push(struct weft_step *p)
{
	weft__lock(&rq_lock);
	rq_push_locked(p);
	weft__unlock(&rq_lock);
}

/* Give p events; queue it if it was idle. The caller keeps p allocated: a
 * reference on its mailbox, or a lock that p's end must take. */
static void post(struct weft_step *p, unsigned ev)
{
	uint32_t s = atomic_load_explicit(&p->state, memory_order_acquire);
	uint32_t n;
	do {
		if (ST(s) == SS_DONE)
			return;
		n = s | ev << EV_SHIFT;
		if (ST(s) == SS_IDLE)
			n = (n & ~3u) | SS_QUEUED;
	} while (!atomic_compare_exchange_weak_explicit(&p->state, &s, n, memory_order_acq_rel,
							memory_order_acquire));
	if (ST(s) == SS_IDLE)
		rq_push(p);
}

void weft__step_post_msg(struct weft__mbox *mb) { post((struct weft_step *)mb, WEFT_STEP_EV_MSG); }

static void post_cancel(struct weft__mbox *mb)
{
	post((struct weft_step *)mb, WEFT_STEP_EV_CANCEL);
}

/* ---- Timers ------------------------------------------------------------- */

static weft__lock_t tm_lock = WEFT__LOCK_INIT;
static struct weft_step **heap;
static size_t tlen, tcap;
static _Atomic int64_t tnext = INT64_MAX;

static void place(size_t i, struct weft_step *p)
{
	heap[i] = p;
	p->tslot = (uint32_t)i + 1;
}

static void sift_up(size_t i)
{
	struct weft_step *p = heap[i];
	while (i > 0 && heap[(i - 1) / 2]->deadline > p->deadline) {
		place(i, heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	place(i, p);
}

static void sift_down(size_t i)
{
	struct weft_step *p = heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= tlen)
			break;
		if (c + 1 < tlen && heap[c + 1]->deadline < heap[c]->deadline)
			c++;
		if (p->deadline <= heap[c]->deadline)
			break;
		place(i, heap[c]);
		i = c;
	}
	place(i, p);
}

static bool grow_heap(void)
{
	size_t ncap = tcap ? tcap * 2 : 64;
	struct weft_step **n = realloc(heap, ncap * sizeof *n);
	if (!n)
		return false;
	heap = n;
	tcap = ncap;
	return true;
}

static void heap_changed(void)
{
	atomic_store_explicit(&tnext, tlen ? heap[0]->deadline : INT64_MAX, memory_order_release);
}

static void timer_remove(struct weft_step *p)
{
	size_t i = p->tslot - 1;
	p->tslot = 0;
	if (i < --tlen) {
		struct weft_step *moved = heap[tlen];
		place(i, moved);
		sift_down(i);
		sift_up(moved->tslot - 1);
	}
	heap_changed();
}

static void timer_disarm(struct weft_step *p)
{
	weft__lock(&tm_lock);
	if (p->tslot)
		timer_remove(p);
	weft__unlock(&tm_lock);
}

/* Post WEFT_STEP_EV_TIMER to every process whose deadline has passed. */
static void timers_fire(void)
{
	if (atomic_load_explicit(&tnext, memory_order_acquire) > weft__now())
		return;
	weft__lock(&tm_lock);
	int64_t now = weft__now();
	while (tlen && heap[0]->deadline <= now) {
		struct weft_step *p = heap[0];
		timer_remove(p);
		post(p, WEFT_STEP_EV_TIMER); /* p ends only after disarming: it is alive */
	}
	weft__unlock(&tm_lock);
}

int weft_step_wake_at(weft_step_t *p, int64_t deadline)
{
	if (!p)
		return -EINVAL;
	/* Its own init or step: not close (it has ended), not another's. */
	if (weft__step_current() != &p->mb || ST(atomic_load(&p->state)) == SS_DONE)
		return -EPERM;
	deadline = weft__deadline_norm(deadline); /* -1 disarms; -2 is past */
	weft__lock(&tm_lock);
	int r = 0;
	if (deadline < 0) {
		if (p->tslot)
			timer_remove(p);
	} else if (p->tslot) {
		p->deadline = deadline;
		sift_down(p->tslot - 1);
		sift_up(p->tslot - 1);
	} else if (tlen == tcap && !grow_heap()) {
		r = -ENOMEM;
	} else {
		p->deadline = deadline;
		place(tlen++, p);
		sift_up(tlen - 1);
	}
	heap_changed();
	weft__unlock(&tm_lock);
	return r;
}

/* ---- Running ------------------------------------------------------------ */

/* p's last callback has returned DONE: no more wakes, no more sends; close
 * (which may still drain the mailbox); then let go of p. */
static void finish(struct weft_step *p)
{
	atomic_store_explicit(&p->state, SS_DONE, memory_order_release);
	weft__mbox_close(&p->mb);
	if (p->ops->close)
		p->ops->close(p);
	timer_disarm(p);
	weft__lock(&rq_lock);
	if (--nlive == 0) {
		/* Idle runners come round to find nothing left, and end. */
		struct weft__waiter *w;
		while ((w = weft__waitq_take(&rq_idle)))
			weft__waiter_complete(w, 0);
	}
	weft__unlock(&rq_lock);
	weft__mbox_unref(&p->mb);
}

/* One turn of p, taken off the queue: init first if it has not run, then
 * step with the events collected; back to idle, or queued again if events
 * arrived while it ran. */
static void run(struct runner *r, struct weft_step *p)
{
	unsigned ev =
		atomic_exchange_explicit(&p->state, SS_RUNNING, memory_order_acq_rel) >> EV_SHIFT;
	int res = WEFT_STEP_CONTINUE;
	r->cur = p;
	if (ev & EV_INIT) {
		ev &= ~EV_INIT;
		if (p->ops->init)
			res = p->ops->init(p);
	}
	if (res == WEFT_STEP_CONTINUE && ev)
		res = p->ops->step(p, ev);
	if (res != WEFT_STEP_CONTINUE) {
		finish(p);
		r->cur = NULL;
		return;
	}
	r->cur = NULL;
	uint32_t s = SS_RUNNING, n;
	do
		n = s >> EV_SHIFT ? (s & ~3u) | SS_QUEUED : SS_IDLE;
	while (!atomic_compare_exchange_weak_explicit(&p->state, &s, n, memory_order_acq_rel,
						      memory_order_acquire));
	if (ST(n) == SS_QUEUED)
		rq_push(p);
}

/* A runner's cancellation (weft_shutdown_grace) is passed on to every
 * step-process as WEFT_STEP_EV_CANCEL. */
static void cancel_all(void) { weft__mbox_each_step(post_cancel); }

static void *runner_main(void *arg)
{
	struct runner *r = arg;
	weft__cold(weft__self())->step_runner = r; /* named: made at its spawn */
	for (unsigned n = 1;; n++) {
		timers_fire();
		weft__lock(&rq_lock);
		struct weft_step *p = rq_head;
		if (p) {
			if (!(rq_head = p->next))
				rq_tail = NULL;
		} else if (nlive == 0) {
			r->used = false;
			nrunners--;
			weft__unlock(&rq_lock);
			return NULL;
		} else {
			int64_t t = atomic_load_explicit(&tnext, memory_order_acquire);
			struct weft__waiter w = {0};
			int e = weft__waiter_wait_why(&rq_lock, &rq_idle, &w,
						      t == INT64_MAX ? -1 : t, "step runner");
			weft__unlock(&rq_lock);
			if (e == -ECANCELED)
				cancel_all();
			continue;
		}
		weft__unlock(&rq_lock);
		run(r, p);
		if (n % YIELD_EVERY == 0 && weft_fiber_yield() == -ECANCELED)
			cancel_all();
	}
}

/* One more runner, rq_lock held (spawning does not park). */
static int start_runner(void)
{
	struct runner *r = runners;
	while (r->used)
		r++;
	r->used = true;
	r->cur = NULL;
	weft_attr_t a = {.name = "weft-step-runner"};
	int e = weft__spawn_cold(NULL, &a, runner_main, r, __FILE__, __LINE__);
	if (e) {
		r->used = false;
		return e;
	}
	nrunners++;
	return 0;
}

/* ---- The API ------------------------------------------------------------ */

int weft_step_spawn(weft_pid_t *out, const weft_step_ops_t *ops, void *arg)
{
	if (!ops || !ops->step)
		return -EINVAL;
	if (!atomic_load(&weft__rt.running))
		return -ESRCH;
	struct weft_step *p = calloc(1, sizeof *p);
	if (!p)
		return -ENOMEM;
	p->ops = ops;
	p->arg = arg;
	/* Queued from the start with init pending: what arrives before it
	 * runs waits in the word. Spawned during a graceful shutdown, it
	 * starts cancelled, as a fiber does. */
	unsigned ev = EV_INIT | (atomic_load(&weft__rt.draining) ? WEFT_STEP_EV_CANCEL : 0);
	atomic_store(&p->state, SS_QUEUED | ev << EV_SHIFT);
	weft__mbox_init(&p->mb, 0, true);
	int e = weft__pid_register(&p->mb);
	if (e) {
		free(p);
		return e;
	}
	weft_pid_t pid = p->mb.pid;
	weft__lock(&rq_lock);
	if (nrunners < weft__rt.nworkers && (e = start_runner()) && nrunners == 0) {
		weft__unlock(&rq_lock);
		atomic_store(&p->state, SS_DONE);
		weft__mbox_close(&p->mb);
		weft__mbox_unref(&p->mb);
		return e;
	}
	nlive++;
	if (out)
		*out = pid; /* before it can run: its callbacks may read it */
	rq_push_locked(p);
	weft__unlock(&rq_lock);
	return 0;
}

int weft_step_cancel(weft_pid_t pid)
{
	struct weft__mbox *mb = weft__mbox_get(pid); /* step-processes only */
	if (!mb)
		return -ESRCH;
	post((struct weft_step *)mb, WEFT_STEP_EV_CANCEL);
	weft__mbox_unref(mb);
	return 0;
}

int weft__step_post_pid(weft_pid_t pid, unsigned events)
{
	struct weft__mbox *mb = weft__mbox_get(pid); /* step-processes only */
	if (!mb)
		return -ESRCH;
	post((struct weft_step *)mb, events);
	weft__mbox_unref(mb);
	return 0;
}

weft_pid_t weft_step_pid(weft_step_t *p) { return p ? p->mb.pid : 0; }

void *weft_step_arg(weft_step_t *p) { return p ? p->arg : NULL; }
