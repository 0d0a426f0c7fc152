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
/* More test hooks: nonzero makes the probe of multishot accept, or of
 * multishot receive into provided buffers, fail, as on a kernel without it
 * (that one then waits for readiness, said once on stderr). Read at init. */
extern int shim_io_uring_no_accept;
extern int shim_io_uring_no_recv;

/* ---- Completion sockets (uring_sock.c) -----------------------------------
 * With the io_uring backend, where the kernel has them, a listener's
 * accepts and a stream's receives are done by multishot requests and kept
 * until asked for. sock.c asks here first; each call below is a no-op
 * (false) when they are not in use (epoll, or the kernel lacks them). Any
 * thread; one accepting or reading caller per socket at a time. */
enum { SHIM_URING_ACCEPT = 1, SHIM_URING_RECV = 2 };

/* Which of them the running io_uring backend uses (0 on epoll). */
unsigned shim_io_uring_completions(void);
/* The same bits as a variable (uring_sock.c's), for sock.c's receive to
 * look at inline: an epoll receive makes no call into uring_sock.c. */
extern _Atomic unsigned shim_uring_socks;

/* The optional features (feature.h's SF_* as bits 1 << SF_*) the running
 * io_uring backend uses: SF_COOP_TASKRUN, SF_MULTISHOT_POLL,
 * SF_MULTISHOT_ACCEPT, SF_PBUF_RING and SF_MULTISHOT_RECV (the last two
 * together); 0 on epoll. What a probe found missing, or $WEFT_IO_MISSING
 * hid, is not among them. */
unsigned shim_io_uring_features(void);

/* For tests: what is queued for fd (accepted fds, or receive buffers), -1
 * when it is not a completion socket; fd -1: the receive buffers queued
 * for every socket together (at most SHIM_URING_BUFS). */
int shim_uring_held(int fd);
#define SHIM_URING_BUFS 1024
#define SHIM_URING_SOCK_BUFS 16
#define SHIM_URING_ACCEPT_MAX 64

/* A completion listener's next accepted fd (or a queued -errno, or -EAGAIN
 * while its multishot accept is in the kernel) in *res: true. false: make
 * the system call, and call shim_uring_accept_drained when it says -EAGAIN
 * (the listener becomes a completion listener). */
bool shim_uring_accept(int fd, int *res);
void shim_uring_accept_drained(int fd);

/* The same for a stream's receive: up to len queued bytes, 0 at the end,
 * a queued -errno, -EAGAIN. After a system call that said -EAGAIN or came
 * back short of len: shim_uring_recv_drained. */
bool shim_uring_recv(int fd, void *buf, size_t len, long *res);
void shim_uring_recv_drained(int fd);

/* fd is about to be closed: its multishot request, if one is in the
 * kernel, is cancelled (its late completions are told by their generation
 * and dropped, their buffers given back, their accepted fds closed), and
 * what was queued goes: buffers back to the ring, accepted fds closed.
 * Unread data makes the close a reset, as the kernel does. */
void shim_uring_close(int fd);

#endif
