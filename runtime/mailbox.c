/* SPDX-License-Identifier: MIT */
/* Mailboxes: messages copied in by any number of senders and out by the one
 * owner. A message is addressed to a pid: a fiber's weft_fiber_t, or a
 * step-process's pid (bit 63 set), which the registry in pid.c maps to its
 * mailbox.
 *
 * A fiber gets its mailbox the first time a message is sent to it or it
 * uses its own (weft_mailbox_recv, weft_mailbox_*): a fiber that never uses
 * messages costs one pointer. The fiber's exit path (weft__mbox_exit, before
 * its result settles) swaps that pointer for WEFT__MBOX_GONE and closes the
 * mailbox, so a send after the fiber has ended fails with -ESRCH.
 *
 * A sender finds a fiber's mailbox through the fiber table, under a lock
 * striped by fiber (a step-process's under the registry shard's lock), and
 * takes a reference before letting go of it; the owner's exit closes the
 * mailbox under the mailbox's own lock; the last reference frees it. So a send that
 * races with the exit either queues its message before the close (which
 * frees it) or sees "closed": never freed memory. The queue itself is a
 * list under that lock; it holds at most cap messages, and senders beyond
 * that wait in line, their message handed in by the receiver that makes
 * room (first come, first served, as a channel's senders). */
#include <stdlib.h>
#include <string.h>

#include "process.h"

/* ---- Mailboxes ---------------------------------------------------------- */

void weft__mbox_init(struct weft__mbox *mb, uint64_t pid, bool step)
{
	mb->pid = pid;
	atomic_store(&mb->refs, 1);
	mb->lock = (weft__lock_t)WEFT__LOCK_INIT;
	mb->closed = 0;
	mb->step = step;
	mb->count = 0;
	mb->cap = WEFT_MAILBOX_CAP;
	mb->head = mb->tail = NULL;
	mb->senders = mb->receiver = NULL;
}

static void append(struct weft__mbox *mb, struct weft__msg *m)
{
	m->next = NULL;
	if (mb->tail)
		mb->tail->next = m;
	else
		mb->head = m;
	mb->tail = m;
	mb->count++;
}

/* Let waiting senders in while there is room (mb locked). */
static void admit(struct weft__mbox *mb)
{
	struct weft__waiter *w;
	while (mb->count < mb->cap && (w = weft__waitq_take(&mb->senders))) {
		append(mb, w->data);
		weft__waiter_complete(w, 0);
	}
}

void weft__mbox_close(struct weft__mbox *mb)
{
	if (mb->step)
		weft__pid_unregister(mb);
	weft__lock(&mb->lock);
	mb->closed = 1;
	struct weft__waiter *w;
	while ((w = weft__waitq_take(&mb->senders)))
		weft__waiter_complete(w, -ESRCH);
	weft__unlock(&mb->lock);
}

void weft__mbox_unref(struct weft__mbox *mb)
{
	if (atomic_fetch_sub_explicit(&mb->refs, 1, memory_order_acq_rel) != 1)
		return;
	while (mb->head) {
		struct weft__msg *m = mb->head;
		mb->head = m->next;
		free(m);
	}
	if (mb->step)
		weft__step_free(mb);
	else
		free(mb);
}

/* ---- A fiber's mailbox --------------------------------------------------
 * The mailbox pointer is in the fiber's cold block (made by whoever needs
 * it first), written by its creator (f itself, or a sender holding a
 * reference to f's record) and by f's exit. Creators, and readers
 * other than f, work under a lock striped by fiber, which the exit takes
 * once after swapping the pointer out: a reader that saw the mailbox is
 * done with it before the exit frees it.
 *
 * The exit sets FL_ENDING (hooks.c) and then looks for a cold block and
 * a mailbox, all seq_cst; a sender makes a mailbox and then looks at
 * FL_ENDING. So either the exit finds the sender's mailbox and closes it,
 * or the sender sees the exit begun and takes its mailbox back, and a
 * fiber that never had a mailbox costs its exit no locked instruction
 * beyond the one that sets FL_ENDING. */

#define NSTRIPE 16
static weft__lock_t stripes[NSTRIPE];

static weft__lock_t *stripe_of(struct weft__fiber *f)
{
	return &stripes[((uintptr_t)f / 64) % NSTRIPE];
}

static bool ending(struct weft__fiber *f) { return atomic_load(&f->life) & FL_ENDING; }

/* f's mailbox, made if it has none (stripe locked). sender: the caller is
 * not f, and makes none once f's exit has begun. -ESRCH once f has exited,
 * -ENOMEM. */
static int mbox_of(struct weft__fiber *f, bool sender, struct weft__mbox **out)
{
	if (sender && ending(f))
		return -ESRCH;
	struct weft__fiber_cold *c = weft__fiber_cold(f);
	if (!c)
		return -ENOMEM;
	struct weft__mbox *mb = atomic_load(&c->mbox);
	if (mb == WEFT__MBOX_GONE)
		return -ESRCH;
	if (!mb) {
		if (!(mb = malloc(sizeof *mb)))
			return -ENOMEM;
		weft__mbox_init(mb, f->handle, false);
		struct weft__mbox *none = NULL;
		if (!atomic_compare_exchange_strong(&c->mbox, &none, mb)) {
			/* f exited meanwhile: nobody has seen this mailbox. */
			free(mb);
			return -ESRCH;
		}
		if (sender && ending(f)) {
			/* Its exit began: take the mailbox back, unless the
			 * exit found it (then the exit closes it). */
			struct weft__mbox *mine = mb;
			if (atomic_compare_exchange_strong(&c->mbox, &mine, WEFT__MBOX_GONE))
				free(mb);
			return -ESRCH;
		}
	}
	*out = mb;
	return 0;
}

/* The calling fiber's mailbox: -EPERM from a plain thread, -ENOMEM. */
static int self_mbox(struct weft__mbox **out)
{
	struct weft__worker *w = weft__worker_self();
	struct weft__fiber *f = w ? w->cur : NULL;
	if (!f)
		return -EPERM;
	/* Only f's own exit could take it away, and f is here. */
	struct weft__fiber_cold *c = weft__cold(f);
	struct weft__mbox *mb = c ? atomic_load_explicit(&c->mbox, memory_order_acquire) : NULL;
	if (mb && mb != WEFT__MBOX_GONE) {
		*out = mb;
		return 0;
	}
	weft__lock_t *l = stripe_of(f);
	weft__lock(l);
	int e = mbox_of(f, false, out);
	weft__unlock(l);
	return e;
}

/* The calling process's mailbox: a step-process's in its callbacks, else
 * the calling fiber's. */
static int current_mbox(struct weft__mbox **out)
{
	if ((*out = weft__step_current()))
		return 0;
	return self_mbox(out);
}

void weft__mbox_exit(struct weft__fiber *self)
{
	/* FL_ENDING is set: a sender makes no mailbox from now on, or takes
	 * back the one it made (mbox_of). */
	struct weft__fiber_cold *c = atomic_load(&self->cold);
	if (!c)
		return;
	struct weft__mbox *mb = atomic_exchange(&c->mbox, WEFT__MBOX_GONE);
	if (!mb || mb == WEFT__MBOX_GONE)
		return;
	weft__lock_t *l = stripe_of(self);
	weft__lock(l);
	weft__unlock(l);
	weft__mbox_close(mb);
	weft__mbox_unref(mb);
}

/* ---- The API ------------------------------------------------------------ */

/* The mailbox of the process pid names, with a reference: a step-process's
 * from the registry, a fiber's through the fiber table (made if it has
 * none). -ESRCH (no such process, or it has ended), -ENOMEM. */
static int mbox_get(weft_pid_t pid, struct weft__mbox **out)
{
	if (pid & WEFT__PID_STEP)
		return (*out = weft__mbox_get(pid)) ? 0 : -ESRCH;
	struct weft__fiber *f;
	int e = weft__fiber_lookup(pid, false, &f);
	if (e)
		return e;
	weft__lock_t *l = stripe_of(f);
	weft__lock(l);
	struct weft__worker *w = weft__worker_self();
	if ((e = mbox_of(f, !(w && w->cur == f), out)) == 0)
		atomic_fetch_add_explicit(&(*out)->refs, 1, memory_order_relaxed);
	weft__unlock(l);
	weft__fiber_unref(f);
	return e;
}

int weft_mailbox_send(weft_pid_t to, const void *msg, size_t len, int64_t deadline)
{
	if (!msg && len)
		return -EINVAL;
	if (len > WEFT_MSG_MAX)
		return -EMSGSIZE;
	/* A step-process never waits: its callbacks run on a shared runner. */
	if (weft__step_current())
		deadline = 0;
	deadline = weft__deadline_norm(deadline); /* past: tries once, as 0 */
	struct weft__mbox *mb;
	int r = mbox_get(to, &mb);
	if (r)
		return r;
	struct weft__msg *m = malloc(sizeof *m + len);
	if (!m) {
		weft__mbox_unref(mb);
		return -ENOMEM;
	}
	m->len = len;
	if (len)
		memcpy(m->data, msg, len);
	weft__lock(&mb->lock);
	if (mb->closed) {
		r = -ESRCH;
	} else if (mb->count < mb->cap && !mb->senders) {
		append(mb, m);
		struct weft__waiter *w = weft__waitq_take(&mb->receiver);
		if (w)
			weft__waiter_complete(w, 0);
		r = 0;
	} else if (deadline == 0) {
		r = -ETIMEDOUT; /* full; tried once, without parking */
	} else {
		/* The receiver that makes room appends m and completes us. */
		struct weft__waiter w = {.data = m};
		r = weft__waiter_wait_own(&mb->lock, &mb->senders, &w, deadline, "mailbox send");
	}
	weft__unlock(&mb->lock);
	if (r)
		free(m);
	else if (mb->step)
		weft__step_post_msg(mb);
	weft__mbox_unref(mb);
	return r;
}

int weft_mailbox_recv(void *buf, size_t cap, size_t *len, int64_t deadline)
{
	if (!buf && cap)
		return -EINVAL;
	struct weft__mbox *mb;
	int r = current_mbox(&mb);
	if (r)
		return r;
	if (mb->step)
		deadline = 0;
	deadline = weft__deadline_norm(deadline); /* past: tries once, as 0 */
	struct weft__msg *m = NULL;
	weft__lock(&mb->lock);
	for (;;) {
		if ((m = mb->head)) {
			if (m->len > cap) {
				/* Kept, for a second call with a buffer that fits. */
				if (len)
					*len = m->len;
				m = NULL;
				r = -EMSGSIZE;
				break;
			}
			if (!(mb->head = m->next))
				mb->tail = NULL;
			mb->count--;
			admit(mb);
			r = 0;
			break;
		}
		if (deadline == 0) {
			r = -ETIMEDOUT;
			break;
		}
		/* A sender that appends completes us; then look again. */
		struct weft__waiter w = {0};
		if ((r = weft__waiter_wait_own(&mb->lock, &mb->receiver, &w, deadline,
					       "mailbox recv")))
			break;
	}
	weft__unlock(&mb->lock);
	if (m) {
		if (m->len)
			memcpy(buf, m->data, m->len);
		if (len)
			*len = m->len;
		free(m);
	}
	return r;
}

int weft_mailbox_set_cap(size_t cap)
{
	if (cap == 0 || cap > WEFT_MAILBOX_CAP_MAX)
		return -EINVAL;
	struct weft__mbox *mb;
	int r = current_mbox(&mb);
	if (r)
		return r;
	weft__lock(&mb->lock);
	mb->cap = (uint32_t)cap;
	admit(mb);
	weft__unlock(&mb->lock);
	return 0;
}

size_t weft_mailbox_len(void)
{
	struct weft__mbox *mb;
	if (current_mbox(&mb))
		return 0;
	weft__lock(&mb->lock);
	size_t n = mb->count;
	weft__unlock(&mb->lock);
	return n;
}
