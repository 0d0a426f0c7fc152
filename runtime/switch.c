/* SPDX-License-Identifier: MIT */
/* Context switches: errno carried per context, and the switch as the
 * sanitizers need to see it. ASan must be told
 * which stack is about to run (and when one dies) or it reports every switch
 * as a stack-buffer problem; TSan keeps one shadow state per fiber. In builds
 * without sanitizers this is arch_switch and nothing else. */
#include "internal.h"

#include "san.h"
#ifdef WEFT_ASAN
#include <sanitizer/asan_interface.h>
#endif
#ifdef WEFT_TSAN
#include <sanitizer/tsan_interface.h>
#endif

void weft__ctx_create(struct weft__ctx *c, void *lo, size_t len)
{
#ifdef WEFT_SAN
	c->stack_lo = lo;
	c->stack_len = len;
	c->san_fake = NULL;
	c->san_fiber = NULL;
#else
	(void)c, (void)lo, (void)len;
#endif
#ifdef WEFT_TSAN
	c->san_fiber = __tsan_create_fiber(0);
#endif
}

void weft__ctx_destroy(struct weft__ctx *c)
{
#ifdef WEFT_TSAN
	if (c->san_fiber)
		__tsan_destroy_fiber(c->san_fiber);
	c->san_fiber = NULL;
#else
	(void)c;
#endif
}

void weft__ctx_adopt_thread(struct weft__ctx *c)
{
#ifdef WEFT_SAN
	c->stack_lo = NULL; /* learnt at the first switch away from it */
	c->stack_len = 0;
	c->san_fake = NULL;
	c->san_fiber = NULL;
#else
	(void)c;
#endif
#ifdef WEFT_TSAN
	c->san_fiber = __tsan_get_current_fiber();
#endif
}

void weft__ctx_entered(struct weft__ctx *self)
{
#ifdef WEFT_ASAN
	const void *old_lo;
	size_t old_len;
	__sanitizer_finish_switch_fiber(self->san_fake, &old_lo, &old_len);
	/* A worker's scheduler runs on the thread's stack, whose bounds we learn
	 * the first time we leave it. */
	struct weft__worker *w = weft__worker_self();
	if (w && w->sched.stack_lo == NULL && old_lo)
		w->sched.stack_lo = (void *)old_lo, w->sched.stack_len = old_len;
#else
	(void)self;
#endif
}

/* errno lives in thread-local storage, and glibc declares its accessor
 * const: a compiler may compute errno's address once per function and reuse
 * it after the switch, when the fiber may be on another thread. So errno is
 * reached through the worker: its address, taken once by the thread that
 * drives the worker (weft__set_worker), and the worker found afresh after
 * the switch (weft__worker_self, never inlined), which the caller needs
 * anyway. */

/* The floating-point control state (rounding mode, exception masks)
 * belongs to the worker: the switch leaves it alone on every CPU. A fiber
 * spawned with WEFT_ATTR_FPENV keeps its own: saved into its context when it
 * leaves, and the worker's state (saved as it came in) put back for whatever
 * runs next; on whichever worker it resumes, its own is loaded. Everything
 * between here and the switch is integer code, so loading early is safe. */
static void fp_switch(arch_fpenv_t *from_fp, arch_fpenv_t *to_fp)
{
	struct weft__worker *w = weft__worker_self();
	arch_fpenv_save(from_fp ? from_fp : &w->fpenv);
	arch_fpenv_load(to_fp ? to_fp : &w->fpenv);
}

struct weft__worker *weft__ctx_switch_fp(struct weft__worker *w, struct weft__ctx *from,
					 arch_fpenv_t *from_fp, struct weft__ctx *to,
					 arch_fpenv_t *to_fp, bool dying)
{
	if ((uintptr_t)from_fp | (uintptr_t)to_fp)
		fp_switch(from_fp, to_fp);
	return weft__ctx_switch(w, from, to, dying);
}

struct weft__worker *weft__ctx_switch(struct weft__worker *w, struct weft__ctx *from,
				      struct weft__ctx *to, bool dying)
{
	int saved_errno = *w->errno_loc;
#ifdef WEFT_ASAN
	__sanitizer_start_switch_fiber(dying ? NULL : &from->san_fake, to->stack_lo, to->stack_len);
#endif
#ifdef WEFT_TSAN
	__tsan_switch_to_fiber(to->san_fiber, 0);
#endif
	(void)dying;
	arch_switch(&from->sp, to->sp);
	weft__ctx_entered(from);
	w = weft__worker_self();
	*w->errno_loc = saved_errno;
	return w;
}
