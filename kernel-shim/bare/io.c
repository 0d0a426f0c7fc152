/* SPDX-License-Identifier: MIT */
/* The kernel half of the reactor on bare metal. An I/O source is a device a
 * driver registered (shim_io_source_add): a small int, the first one 0. Its
 * reports are one-shot (shim_io_add says so): arming asks for one report; a device interrupt (shim_io_report from its handler) or
 * the driver's own look at the device (its ready callback, called when the
 * source is armed and at every poll) queues the report and disarms the
 * source; shim_io_poll hands the queued reports out, sleeping in shim_wait
 * until there are some, shim_io_wake is called, or the deadline passes.
 *
 * A source whose device interrupts (shim_io_source_irq) is asked only when it is
 * armed: its handler reports it. The others, and every source when its
 * device's interrupt could not be had (the fallback), are asked at every
 * poll too, and a poll that waits while one of those is armed wakes every
 * POLL_NS to ask again: polling costs a wake-up a millisecond, interrupts
 * none.
 *
 * The shim lock guards the sources. io_seq changes whenever the poller has
 * something to look at, and the poller sleeps in shim_wait while it does
 * not; every change is followed by a shim_wake, which on several harts also
 * wakes a sleeping hart to run the poller (thread.c). */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>

#include "bare.h"
#include "shim.h"

#define IO_SOURCES 16
#define POLL_NS 1000000 /* 1 ms */
#define ARMED 0x80000000u
#define IO_ALL (SHIM_IO_IN | SHIM_IO_OUT | SHIM_IO_ERR)

static struct source {
	unsigned (*ready)(void *arg); /* NULL: the slot is free */
	void *arg;
	unsigned armed;   /* ARMED | the events asked for; 0 when not armed */
	uint32_t tag;     /* the runtime's, from shim_io_add or shim_io_arm */
	unsigned pending; /* what the next poll reports */
	int by_irq;       /* its handler reports it: not asked at every poll */
} sources[IO_SOURCES];

static _Atomic uint32_t io_seq;
static int wake_pending; /* shim_io_wake since the last poll returned */
static unsigned first;   /* where the next poll starts: every source gets its turn */

static struct source *source_of(int src)
{
	if (src < 0 || src >= IO_SOURCES || !sources[src].ready)
		return NULL;
	return &sources[src];
}

/* Under the shim lock. ERR is reported whatever was asked for, with IN and OUT
 * (as epoll reports a hang-up): whoever waits for either should look. */
static void report(struct source *s, unsigned events)
{
	if (!(s->armed & ARMED))
		return;
	unsigned got =
		events & SHIM_IO_ERR ? IO_ALL : events & s->armed & (SHIM_IO_IN | SHIM_IO_OUT);
	if (!got)
		return;
	s->pending |= got;
	s->armed = 0;
	atomic_fetch_add_explicit(&io_seq, 1, memory_order_relaxed);
	shim_wake(&io_seq, INT_MAX);
}

int shim_io_source_add(unsigned (*ready)(void *arg), void *arg)
{
	if (!ready)
		return -EINVAL;
	int on = shim_big_lock(), r = -EMFILE;
	for (int i = 0; i < IO_SOURCES; i++) {
		if (!sources[i].ready) {
			sources[i] = (struct source){.ready = ready, .arg = arg};
			r = i;
			break;
		}
	}
	shim_big_unlock(on);
	return r;
}

void shim_io_source_remove(int src)
{
	int on = shim_big_lock();
	struct source *s = source_of(src);
	if (s)
		*s = (struct source){0};
	shim_big_unlock(on);
}

void shim_io_source_irq(int src, int on)
{
	int on_ = shim_big_lock();
	struct source *s = source_of(src);
	if (s)
		s->by_irq = on;
	shim_big_unlock(on_);
}

void shim_io_report(int src, unsigned events)
{
	int on = shim_big_lock();
	struct source *s = source_of(src);
	if (s)
		report(s, events);
	shim_big_unlock(on);
}

int shim_io_source_armed(int src)
{
	int on = shim_big_lock();
	struct source *s = source_of(src);
	int armed = s && (s->armed & ARMED);
	shim_big_unlock(on);
	return armed;
}

/* Nothing to set up: the sources are the drivers'. */
int shim_io_init(void) { return 0; }

/* One backend: $WEFT_IO means nothing here. */
const char *shim_io_config_error(void) { return NULL; }

void shim_io_fini(void)
{
	int on = shim_big_lock();
	for (int i = 0; i < IO_SOURCES; i++)
		sources[i].armed = sources[i].pending = 0;
	wake_pending = 0;
	shim_big_unlock(on);
}

/* A device is watched only while armed: 1, one report per arm. */
int shim_io_add(int src, uint32_t tag)
{
	int on = shim_big_lock(), r = -EBADF;
	struct source *s = source_of(src);
	if (s && tag) {
		s->tag = tag;
		r = 1;
	}
	shim_big_unlock(on);
	return r;
}

/* Arming replaces the interest and any report not yet polled, then asks the
 * device at once: what arrived before the arming is reported, not lost. */
int shim_io_arm(int src, uint32_t tag, unsigned events)
{
	int on = shim_big_lock(), r = -EBADF;
	struct source *s = source_of(src);
	if (s && tag) {
		s->tag = tag;
		s->armed = ARMED | (events & (SHIM_IO_IN | SHIM_IO_OUT));
		s->pending = 0;
		report(s, s->ready(s->arg));
		r = 0;
	}
	shim_big_unlock(on);
	return r;
}

void shim_io_del(int src)
{
	int on = shim_big_lock();
	struct source *s = source_of(src);
	if (s)
		s->armed = s->pending = s->tag = 0;
	shim_big_unlock(on);
}

/* Under the shim lock. Ask every armed device that is polled (*polled: there
 * is one), then hand out up to max reports, starting after the source the
 * last poll stopped at. */
static int collect(struct shim_io_event *ev, int max, int *polled)
{
	*polled = 0;
	for (int i = 0; i < IO_SOURCES; i++) {
		struct source *s = &sources[i];
		if (s->ready && (s->armed & ARMED) && !s->by_irq) {
			report(s, s->ready(s->arg));
			*polled |= (s->armed & ARMED) != 0;
		}
	}
	int n = 0;
	for (int k = 0; k < IO_SOURCES && n < max; k++) {
		unsigned i = (first + k) % IO_SOURCES;
		if (sources[i].pending) {
			ev[n].src = (int)i;
			ev[n].tag = sources[i].tag;
			ev[n].events = sources[i].pending;
			sources[i].pending = 0;
			n++;
			first = i + 1;
		}
	}
	return n;
}

int shim_io_poll(struct shim_io_event *ev, int max, int64_t deadline)
{
	if (!ev || max <= 0)
		return -EINVAL;
	for (;;) {
		int on = shim_big_lock(), polled;
		int n = collect(ev, max, &polled);
		int woken = wake_pending;
		wake_pending = 0;
		uint32_t seq = atomic_load_explicit(&io_seq, memory_order_relaxed);
		shim_big_unlock(on);
		if (n || woken)
			return n;
		int64_t now = shim_now();
		if (deadline >= 0 && now >= deadline)
			return 0;
		/* A report or a wake from here on changes io_seq: no lost
		 * wake-up. A polled device is asked again after POLL_NS; the
		 * memory line (WEFT_MEMSTAT_MS) is printed when it is due. */
		int64_t until = deadline;
		if (polled) {
			int64_t next = now + POLL_NS;
			if (until < 0 || next < until)
				until = next;
		}
		int64_t stat = shim_memstat_poll(now);
		if (stat >= 0 && (until < 0 || stat < until))
			until = stat;
		shim_wait(&io_seq, seq, until);
	}
}

void shim_io_wake(void)
{
	int on = shim_big_lock();
	wake_pending = 1;
	atomic_fetch_add_explicit(&io_seq, 1, memory_order_relaxed);
	shim_wake(&io_seq, INT_MAX);
	shim_big_unlock(on);
}
