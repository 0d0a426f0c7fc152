/* SPDX-License-Identifier: MIT */
/* shim_io_*: the reactor's kernel half, forwarded to the backend $WEFT_IO
 * names (epoll, the default, or io_uring), chosen at each shim_io_init. An
 * io_uring that cannot be set up (no io_uring in the kernel or under
 * qemu-user, a seccomp filter, kernel.io_uring_disabled, a kernel without
 * the features uring.c needs) leaves epoll in its place, said once on
 * stderr. weft_init has already refused a malformed $WEFT_IO or
 * $WEFT_IO_MISSING (-EINVAL), with shim_io_config_error's text. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "linux/feature.h"
#include "linux/io.h"

static const struct shim_io_ops *_Atomic cur;

const struct shim_io_ops *shim_io_choice(void)
{
	const char *s = shim_getenv("WEFT_IO");
	if (!s || !*s || strcmp(s, "epoll") == 0)
		return &shim_io_epoll;
	if (strcmp(s, "uring") == 0)
		return &shim_io_uring;
	return NULL;
}

const char *shim_io_config_error(void)
{
	static char msg[160];
	if (shim_io_choice())
		return shim_feature_config_error();
	snprintf(msg, sizeof msg, "WEFT_IO=%.64s: not a reactor backend (epoll, uring)",
		 shim_getenv("WEFT_IO"));
	return msg;
}

const struct shim_io_ops *shim_io_current(void) { return atomic_load(&cur); }

/* Defined by uring.c: what its last init missed, and why, for the line
 * below. */
extern enum shim_feature shim_io_uring_why(const char **why);

int shim_io_init(void)
{
	const struct shim_io_ops *b = atomic_load(&cur);
	if (b)
		return 0;
	b = shim_io_choice();
	if (!b)
		return -EINVAL;
	int e = b->init();
	if (e && b == &shim_io_uring) {
		const char *why;
		enum shim_feature f = shim_io_uring_why(&why);
		(void)shim_feature_fallback(f, why); /* "...; using epoll", once */
		b = &shim_io_epoll;
		e = b->init();
	}
	if (!e)
		atomic_store(&cur, b);
	return e;
}

void shim_io_fini(void)
{
	const struct shim_io_ops *b = atomic_exchange(&cur, NULL);
	if (b)
		b->fini();
}

int shim_io_add(int src, uint32_t tag)
{
	const struct shim_io_ops *b = atomic_load(&cur);
	return b ? b->add(src, tag) : -ENOSYS;
}

int shim_io_arm(int src, uint32_t tag, unsigned events)
{
	const struct shim_io_ops *b = atomic_load(&cur);
	return b ? b->arm(src, tag, events) : -ENOSYS;
}

void shim_io_del(int src)
{
	const struct shim_io_ops *b = atomic_load(&cur);
	if (b)
		b->del(src);
}

int shim_io_poll(struct shim_io_event *ev, int max, int64_t deadline)
{
	const struct shim_io_ops *b = atomic_load(&cur);
	return b ? b->poll(ev, max, deadline) : -ENOSYS;
}

void shim_io_wake(void)
{
	const struct shim_io_ops *b = atomic_load(&cur);
	if (b)
		b->wake();
}
