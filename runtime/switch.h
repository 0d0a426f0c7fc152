/* SPDX-License-Identifier: MIT */
/* Context switches (switch.c): a context is what arch_switch switches to
 * (a fiber, or a worker's scheduler on its thread's stack); the switch
 * carries errno and tells the sanitizers. */
#ifndef WEFT_SWITCH_H
#define WEFT_SWITCH_H

#include <stdbool.h>
#include <stddef.h>

#include "arch.h"
#include "san.h"

struct weft__worker;

/* Something arch_switch can switch to: a fiber, or a worker's scheduler
 * running on the thread's own stack. Whether it keeps its own FP control
 * state is its fiber's (FF_FPENV; the state is in its cold block). */
struct weft__ctx {
	void *sp;
	/* only in sanitizer builds (san.h): */
#ifdef WEFT_SAN
	void *stack_lo; /* the stack's lowest address */
	size_t stack_len;
	void *san_fake;  /* ASan's fake-stack handle while switched out */
	void *san_fiber; /* TSan's fiber handle */
#endif
};

/* Switch from one context to another on worker w (the caller's), carrying
 * errno with each context and telling the sanitizers. dying: from will
 * never run again. Returns the worker from resumed on. */
struct weft__worker *weft__ctx_switch(struct weft__worker *w, struct weft__ctx *from,
				      struct weft__ctx *to, bool dying);
/* The same when either side may keep its own FP control state: from_fp,
 * to_fp say where (weft__fiber_fp), NULL for one that does not. */
struct weft__worker *weft__ctx_switch_fp(struct weft__worker *w, struct weft__ctx *from,
					 arch_fpenv_t *from_fp, struct weft__ctx *to,
					 arch_fpenv_t *to_fp, bool dying);

/* First call on a new fiber's stack, completing the sanitizers' view. */
void weft__ctx_entered(struct weft__ctx *self);
void weft__ctx_create(struct weft__ctx *c, void *lo, size_t len);
void weft__ctx_destroy(struct weft__ctx *c);
void weft__ctx_adopt_thread(struct weft__ctx *c);

#endif
