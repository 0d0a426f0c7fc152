/* SPDX-License-Identifier: MIT */
/* The io_uring backend's private seam: the kernel's ABI as uring.c and
 * uring_sock.c use it (the musl cross toolchains have no
 * <linux/io_uring.h>), and what the two files ask of each other. uring.c
 * owns the ring, the readiness polls and the one lock; uring_sock.c keeps
 * the completion sockets (multishot accept, multishot receive into provided
 * buffers) that sock.c's accept, recv and close consult. */
#ifndef WEFT_SHIM_LINUX_URING_H
#define WEFT_SHIM_LINUX_URING_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* The same numbers on every architecture (the generic table). */
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_io_uring_enter
#define SYS_io_uring_enter 426
#endif
#ifndef SYS_io_uring_register
#define SYS_io_uring_register 427
#endif

/* ---- the kernel's ABI (include/uapi/linux/io_uring.h) ------------------- */
struct sq_offsets {
	uint32_t head, tail, ring_mask, ring_entries, flags, dropped, array, resv1;
	uint64_t user_addr;
};
struct cq_offsets {
	uint32_t head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1;
	uint64_t user_addr;
};
struct uring_params {
	uint32_t sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd,
		resv[3];
	struct sq_offsets sq_off;
	struct cq_offsets cq_off;
};
struct uring_sqe {
	uint8_t opcode, flags;
	uint16_t ioprio; /* ACCEPT, RECV: the multishot flag */
	int32_t fd;
	uint64_t off;      /* POLL_REMOVE: the updated request's new user_data */
	uint64_t addr;     /* POLL_REMOVE, ASYNC_CANCEL: the user_data it acts on */
	uint32_t len;      /* POLL_ADD, POLL_REMOVE: IORING_POLL_* flags */
	uint32_t op_flags; /* poll32_events; accept_flags; msg_flags */
	uint64_t user_data;
	uint16_t buf_index; /* with SQE_BUFFER_SELECT: the buffer group */
	uint16_t personality;
	uint32_t file_index;
	uint64_t addr3, pad2;
};
struct uring_cqe {
	uint64_t user_data;
	int32_t res;
	uint32_t flags;
};
struct getevents_arg {
	uint64_t sigmask;
	uint32_t sigmask_sz, min_wait_usec;
	uint64_t ts;
};
struct kernel_timespec {
	int64_t tv_sec;
	long long tv_nsec;
};
/* A provided buffer ring's entry; the first entry's resv is the ring's
 * tail, which the program writes. */
struct uring_buf {
	uint64_t addr;
	uint32_t len;
	uint16_t bid, resv;
};
struct uring_buf_reg {
	uint64_t ring_addr;
	uint32_t ring_entries;
	uint16_t bgid, flags;
	uint64_t resv[3];
};
_Static_assert(sizeof(struct uring_params) == 120, "io_uring_params");
_Static_assert(sizeof(struct uring_sqe) == 64, "io_uring_sqe");
_Static_assert(sizeof(struct uring_cqe) == 16, "io_uring_cqe");
_Static_assert(sizeof(struct uring_buf) == 16, "io_uring_buf");
_Static_assert(sizeof(struct uring_buf_reg) == 40, "io_uring_buf_reg");

enum {
	OP_NOP = 0,
	OP_POLL_ADD = 6,
	OP_POLL_REMOVE = 7,
	OP_ACCEPT = 13,
	OP_ASYNC_CANCEL = 14,
	OP_RECV = 27,
};
enum { POLL_ADD_MULTI = 1, POLL_UPDATE_EVENTS = 2 };
enum { ACCEPT_MULTISHOT = 1, RECV_MULTISHOT = 2 }; /* in ioprio */
enum { SQE_BUFFER_SELECT = 1 << 5 };
enum { CQE_F_BUFFER = 1, CQE_F_MORE = 2, CQE_BUFFER_SHIFT = 16 };
enum {
	SETUP_CQSIZE = 1 << 3,
	SETUP_CLAMP = 1 << 4,
	SETUP_COOP_TASKRUN = 1 << 8,
	SETUP_TASKRUN_FLAG = 1 << 9
};
enum { ENTER_GETEVENTS = 1, ENTER_EXT_ARG = 8 };
enum { SQ_CQ_OVERFLOW = 2, SQ_TASKRUN = 4 };
enum { FEAT_SINGLE_MMAP = 1, FEAT_NODROP = 2, FEAT_EXT_ARG = 1 << 8, FEAT_RSRC_TAGS = 1 << 10 };
enum { REGISTER_PBUF_RING = 22, UNREGISTER_PBUF_RING = 23 };
#define OFF_SQ_RING 0ULL
#define OFF_SQES 0x10000000ULL

/* ---- user_data: gen << 32 | kind << 28 | fd ------------------------------
 * Kinds 1 to 7 are uring.c's polls and their cancellations (the high half
 * is the registration's tag), 8 the wake's NOP; 9 and up are uring_sock.c's
 * (the high half is the socket's generation). */
enum {
	K_SOCK = 9,
	K_ACCEPT = 9,
	K_RECV = 10,
	K_CANCEL_ACCEPT = 11,
	K_CANCEL_RECV = 12,
	K_PROBE = 13
};
#define SRC_LIMIT (1 << 28)

static inline uint64_t uring_ud(uint32_t high, unsigned kind, int src)
{
	return (uint64_t)high << 32 | (uint64_t)kind << 28 | (uint32_t)src;
}

/* ---- uring.c, for uring_sock.c ------------------------------------------ */

/* Held around every use of the SQ ring and of either file's tables. Taken
 * with pthread_mutex_lock, let go with shim_uring_unlock, never with
 * pthread_mutex_unlock: a wake that found the lock held is submitted by
 * its holder as it lets go (uring.c, the wake). */
extern pthread_mutex_t shim_uring_lock;
void shim_uring_unlock(void);

/* Under the lock: the next SQE, zeroed (NULL while the kernel refuses to
 * take more); shim_uring_sqe_put publishes it; shim_uring_submit hands the kernel
 * what it has not taken (0 or -errno). */
struct uring_sqe *shim_uring_sqe_get(void);
void shim_uring_sqe_put(void);
int shim_uring_submit(void);

/* Under the lock, before the poller runs (init, fini): wait up to the
 * absolute deadline for a completion and take it. 1, 0 at the deadline,
 * -errno. */
int shim_uring_take(struct uring_cqe *out, int64_t deadline);

/* Under the lock: src's multishot poll, if it has one, updated to the
 * directions shim_uring_sock_dirs now gives (a socket that became a completion
 * socket stops polling for IN). */
void shim_uring_remask(int src);

/* Under the lock, any thread: have the poller report src with what
 * shim_uring_sock_ready says (a completion socket that must be looked at). */
void shim_uring_report(int src);

/* Under the lock, on a thread that is not the shim's (thread.h): src's
 * completion socket wants its request armed, which the poller does
 * (shim_uring_sock_arm_deferred). 0, or -ENOMEM (src beyond the table and
 * no memory to grow it). */
int shim_uring_defer_sock(int src);

/* ---- uring_sock.c, for uring.c ------------------------------------------- */

/* Under the lock, on the poller: the request shim_uring_defer_sock asked
 * for, if src still wants one. */
void shim_uring_sock_arm_deferred(int src);

/* After the ring is up, under the lock: probe multishot accept and multishot
 * receive (a trial of each), register the provided buffer ring, and say on
 * stderr (once per process, a line each: feature.h) what falls back to
 * readiness and why. Without multishot polls (multishot false; uring.c
 * said so), neither; without IORING_OP_ACCEPT (op_accept false) or
 * IORING_OP_RECV (op_recv), not that one. */
void shim_uring_sock_init(int ringfd, bool multishot, bool op_accept, bool op_recv);

/* Under the lock, before the ring closes: cancel every multishot and wait
 * (bounded) for their last completions, close what they leave. */
void shim_uring_sock_fini(int ringfd);

/* Under the lock, on the poller: a completion of kind >= K_SOCK. Returns
 * the SHIM_IO_* report it makes for src (0: none). */
unsigned shim_uring_sock_cqe(const struct uring_cqe *c);

/* Under the lock: what src reports by itself as a completion socket
 * (SHIM_IO_IN when data, an accepted fd, an end or an error is queued, or
 * its multishot ended: the caller tries), 0 for another source. */
unsigned shim_uring_sock_ready(int src);

/* Under the lock: the directions (1 IN, 2 OUT) src's readiness poll
 * watches: none for a listener whose accepts complete, OUT for a stream
 * whose receives do, both otherwise. */
unsigned shim_uring_sock_dirs(int src);

#endif
