/* SPDX-License-Identifier: MIT */
/* Fibers (fiber.c) and their records (fibtab.c): the record, its cold
 * block, the life word, and the calls that cross files. */
#ifndef WEFT_FIBER_H
#define WEFT_FIBER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "shim.h"
#include "weft.h"
#include "future.h"
#include "switch.h"

#define WEFT_NAME_MAX 32

struct weft__worker;

enum {
	FF_FPENV = 1,   /* keeps its own FP control state (WEFT_ATTR_FPENV), in cold */
	FF_SERVICE = 2, /* the runtime's own: weft_run does not wait for it */
	FF_HIGH = 4,    /* the latency-sensitive class (WEFT_ATTR_HIGH) */
	FF_THREAD = 8,  /* a plain OS thread standing in as a fiber */
	FF_STACK = 16,  /* its stack is not of the common shape: cold->stack says */
	FF_COLD = 32,   /* to spawn: make its cold block now (a generator's fiber) */
};
/* The attribute flags a spawn copies as they are. */
_Static_assert((int)FF_FPENV == (int)WEFT_ATTR_FPENV && (int)FF_HIGH == (int)WEFT_ATTR_HIGH,
	       "FF_ = WEFT_ATTR_");

/* The bits of a fiber's life word: set and cleared with atomic operations
 * by anyone; its pin (the worker it is pinned to, plus one; 0 = none) is
 * written only by the fiber itself and its spawner, read by whoever queues
 * it (relaxed: a plain load on every CPU). */
enum {
	FL_HELD = 1,      /* its weft_fiber_t is held (not joined or detached yet) */
	FL_JOINING = 2,   /* a join or detach is using the handle */
	FL_CANCELLED = 4, /* a cancellation request was made (its exit status) */
	FL_ENDING = 8,    /* in its exit path (finish); set by the fiber */
};
#define FL_PIN_SHIFT 8
#define FL_PIN(l) ((l) >> FL_PIN_SHIFT)
/* status before weft_fiber_set_status: no status is positive */
#define WEFT__STATUS_UNSET 1

struct weft__fls;
struct weft__mbox;

/* What most fibers never use, behind one pointer allocated on first use
 * (weft__fiber_cold) and kept with the record from then on, for its next
 * lives too (a spawn clears it). A spawn that names the fiber, or whose
 * spawner has a name, or that asks for local storage, a supervisor, its own
 * FP state or an uncommon stack makes it then; a first message to the fiber
 * makes it from the sender's thread (published with a CAS). */
struct weft__fiber_cold {
	char name[WEFT_NAME_MAX];
	char parent_name[WEFT_NAME_MAX];
	/* processes (mailbox.c): NULL until the first message is sent to it
	 * or it asks for one, then its mailbox; WEFT__MBOX_GONE once it has
	 * exited */
	struct weft__mbox *_Atomic mbox;
	/* fiber context (fls.c, generator.c, supervise.c) */
	struct weft__fls *fls;        /* local-storage table, NULL = empty; only
				       * the fiber itself (and its spawns) use it */
	struct weft_gen *gen;         /* the generator it runs, or NULL */
	struct weft_chan *supervisor; /* where its end is reported, or NULL */
	void *step_runner;            /* the step-process runner it is (step.c) */
	struct shim_stack stack;      /* with FF_STACK: its stack */
	arch_fpenv_t fpenv;           /* with FF_FPENV: its FP control state,
				       * saved while switched out */
};

/* A fiber's record: 128 bytes on a 64-bit CPU (outside sanitizer builds),
 * one per fiber alive or held (fibtab.c). */
struct weft__fiber {
	struct weft__ctx ctx;
	_Atomic uint64_t park;    /* the park word (a plain thread sleeps on its low half) */
	struct weft__fiber *next; /* run-queue and pool link */
	/* identity and lifetime: the weft_fiber_t naming it; once free,
	 * WEFT__HANDLE_FREE | its slot + 1 (it keeps its slot for good) */
	_Atomic uint64_t handle;
	struct weft__future done; /* settles with the result at exit */
	union {
		/* what it runs: read when it first runs */
		struct {
			weft_fn fn;
			void *arg;
		};
		/* once it runs: what its latest park waits on
		 * (weft__park_begin_why; a string literal) and since when (its
		 * worker's stamp, stored only when it really switches out):
		 * read by weft_dump, meaningful while parked */
		struct {
			_Atomic(const char *) wait_why;
			_Atomic int64_t wait_since;
		};
	};
	/* its stack's base: size and guard are the common shape's
	 * (weft__stack_of), or with FF_STACK its cold block's; NULL until
	 * its first run (stack.c), so read and written with __atomic */
	void *stack;
	struct weft__fiber_cold *_Atomic cold; /* NULL until first needed */
	const char *file;                      /* diagnostics: the spawn site */
	weft_fiber_t parent;                   /* its spawner, 0 for a plain thread */
	_Atomic int refs;                      /* one for being alive, one for a held handle */
	_Atomic uint32_t life;                 /* FL_* and the pin */
	int line;                              /* the spawn site's, with file */
	uint32_t timer_slot;                   /* timer heap index + 1, 0 when not armed */
	/* exit status (WEFT__STATUS_UNSET until set); read once done settles */
	int status;
	uint8_t flags;        /* FF_*, set at spawn */
	uint16_t cancel_hold; /* weft_fiber_cancel_hold depth; only the fiber touches it */
};
#define WEFT__HANDLE_FREE (UINT64_C(1) << 63)
#if !defined(WEFT_SAN) && UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(struct weft__fiber) == 128, "a fiber record is 128 bytes");
#endif

/* f's cold block, or NULL while it has none. */
static inline struct weft__fiber_cold *weft__cold(struct weft__fiber *f)
{
	return atomic_load_explicit(&f->cold, memory_order_acquire);
}
/* f's cold block, made if it has none (fibtab.c): NULL only for -ENOMEM.
 * Any thread that holds a reference to f, or f itself. */
struct weft__fiber_cold *weft__fiber_cold(struct weft__fiber *f);
/* f's name ("" when it has none). */
static inline const char *weft__fiber_name_of(struct weft__fiber *f)
{
	struct weft__fiber_cold *c = weft__cold(f);
	return c ? c->name : "";
}
/* The name of f's spawner when f was spawned ("" for none). */
static inline const char *weft__fiber_parent_name(struct weft__fiber *f)
{
	struct weft__fiber_cold *c = weft__cold(f);
	return c ? c->parent_name : "";
}
/* Copy a fiber's name (as read from another thread: perhaps changing)
 * into dst[WEFT_NAME_MAX], ended. No library call: the fault handler uses
 * it. */
static inline void weft__name_copy(char *dst, const char *src)
{
	size_t i = 0;
	for (; i < WEFT_NAME_MAX - 1 && src[i]; i++)
		dst[i] = src[i];
	dst[i] = 0;
}
/* The worker f is pinned to, plus one; 0 = none. */
static inline uint32_t weft__fiber_pin_of(struct weft__fiber *f)
{
	return FL_PIN(atomic_load_explicit(&f->life, memory_order_relaxed));
}
/* Pin f (the caller) to worker pin - 1, or unpin it (0): a CAS, since
 * others set and clear the life word's bits. */
static inline void weft__fiber_set_pin(struct weft__fiber *f, uint32_t pin)
{
	uint32_t l = atomic_load_explicit(&f->life, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(
		&f->life, &l, (l & ((1u << FL_PIN_SHIFT) - 1)) | (pin << FL_PIN_SHIFT),
		memory_order_relaxed, memory_order_relaxed))
		;
}

/* f's class, the index of its queues: 1 latency-sensitive
 * (WEFT_ATTR_HIGH), 0 bulk. Every queue but the next-run slot and the
 * yielded list comes in one of each; those two hold bulk fibers only. */
static inline int weft__fiber_class(const struct weft__fiber *f)
{
	return (f->flags & FF_HIGH) ? 1 : 0;
}

/* Where f keeps its own FP control state, or NULL (f NULL: the scheduler). */
static inline arch_fpenv_t *weft__fiber_fp(struct weft__fiber *f)
{
	if (!f || !(f->flags & FF_FPENV))
		return NULL;
	return &atomic_load_explicit(&f->cold, memory_order_relaxed)->fpenv;
}

/* fibtab.c: a free record for a spawn on w (NULL: a plain thread), its
 * handle set, or NULL (-ENOMEM); count a spawn for weft_stats. */
struct weft__fiber *weft__fiber_record_get(struct weft__worker *w);
void weft__fiber_count_spawn(struct weft__worker *w);
void weft__fiber_unref(struct weft__fiber *f);
/* Drop n references at once. */
void weft__fiber_unref_n(struct weft__fiber *f, int n);

/* fiber.c: where every fiber starts (through weft__rt.fiber_main). */
void weft__fiber_main(void *arg);
/* weft_fiber_spawn_site for a fiber that will need its cold block (a
 * generator's): made at the spawn, where -ENOMEM can still be told. */
int weft__spawn_cold(weft_fiber_t *out, const weft_attr_t *attr, weft_fn fn, void *arg,
		     const char *file, int line);

void weft__fibers_reset(void);
/* A worker's cached fiber records go back to the shared pool (its thread's
 * end, or the shutdown of the host loop's worker). */
void weft__fiber_cache_drain(struct weft__worker *w);
uint64_t weft__fibers_spawned(void);
/* Call fn on every fiber that has a record (running, queued, parked, or
 * finished with a held handle), holding a reference across the call. */
void weft__fibers_each(void (*fn)(struct weft__fiber *f, void *ctx), void *ctx);
/* For the fault handler and interrupts: the record of the fiber h names
 * while it has one, or NULL. No lock, no reference, no allocation
 * (async-signal-safe), O(1). Records are never freed while the runtime
 * runs, so the result is readable, but it may be reused at any moment:
 * copy what is needed, then check its handle again (acquire). */
struct weft__fiber *weft__fiber_peek(weft_fiber_t h);
/* The fiber h names, with a reference (drop it with weft__fiber_unref), or
 * -ESRCH. owned: only while h is held (not joined or detached yet), for
 * join and detach; otherwise while the fiber is alive or finished and still
 * held (weft__fiber_named). */
int weft__fiber_lookup(weft_fiber_t h, bool owned, struct weft__fiber **out);
/* Whether f's value still names it: while its owner holds it, and for
 * anyone but the owner also while it has not finished (a joined fiber, or a
 * detached one that has finished, is gone even if its record lingers until
 * its worker lets go of it). */
static inline bool weft__fiber_named(struct weft__fiber *f, bool owned)
{
	if (atomic_load(&f->life) & FL_HELD)
		return true;
	return !owned && atomic_load_explicit(&f->done.state, memory_order_acquire) == FS_PENDING;
}
/* A weft_fiber_t is generation << WEFT__FIBER_SLOT_BITS | slot + 1. */
#define WEFT__FIBER_SLOT_BITS 23
/* Tests only: set the generation of the slot that h names, so that a
 * generation's wrap is reached without 2^40 spawns; the last generation a
 * slot may have. */
void weft__fiber_slot_age(weft_fiber_t h, uint64_t gen);
uint64_t weft__fiber_gen_last(void);

/* Records made and not freed (the timer heap makes room for each:
 * weft__timer_reserve). */
extern _Atomic size_t weft__fiber_nrecords;

#endif
