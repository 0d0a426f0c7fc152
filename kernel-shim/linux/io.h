/* SPDX-License-Identifier: MIT */
/* The Linux shim's I/O readiness backends behind shim_io_* (io.c picks one
 * at shim_io_init from $WEFT_IO): epoll (epoll.c) and io_uring (uring.c).
 * Each implements shim.h's I/O contract exactly; io.c only forwards. */
#ifndef WEFT_SHIM_LINUX_IO_H
#define WEFT_SHIM_LINUX_IO_H

#include "shim.h"

struct shim_io_ops {
	const char *name;
	int (*init)(void); /* 0 or -errno; idempotent between fini calls */
	void (*fini)(void);
	int (*add)(int src, uint32_t tag);
	int (*arm)(int src, uint32_t tag, unsigned events);
	void (*del)(int src);
	int (*poll)(struct shim_io_event *ev, int max, int64_t deadline);
	void (*wake)(void);
};

extern const struct shim_io_ops shim_io_epoll, shim_io_uring;

/* The backend $WEFT_IO names: &shim_io_epoll when unset or empty ("epoll"),
 * &shim_io_uring ("uring"), NULL when the value is neither. */
const struct shim_io_ops *shim_io_choice(void);

/* The backend shim_io_init chose, NULL before it (or after shim_io_fini). */
const struct shim_io_ops *shim_io_current(void);

/* Test hooks (tests/test_uring.c): nonzero makes the io_uring backend's
 * setup fail with -shim_io_uring_refuse, as a kernel without io_uring or a
 * seccomp filter would; shim_io_uring_oneshot makes it use re-armed one-shot
 * polls, as on a kernel without multishot poll. Read at init. */
extern int shim_io_uring_refuse;
extern int shim_io_uring_oneshot;

#endif
