/* SPDX-License-Identifier: MIT */
/* The kernel-shim contract: everything the runtime needs from a kernel.
 * kernel-shim/linux/ implements it with syscalls; a bare-metal shim implements
 * it on arch/ and board/. The runtime calls nothing OS-specific but these. */
#ifndef WEFT_SHIM_H
#define WEFT_SHIM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- Guarded stacks ----------------------------------------------------
 * A stack is [base, base + size), with an inaccessible guard region directly
 * below base (ARCH_STACK_GUARD bytes by default, whole pages; addresses only,
 * no memory): an overflow faults instead of corrupting memory. Stacks of one size are carved from large slabs so that
 * many thousands of them cost a handful of kernel mappings. */
struct shim_stack {
	void *base;
	size_t size;
	size_t guard;     /* bytes of guard below base */
	unsigned tool_id; /* valgrind's id of the stack (Linux, VARIANT=valgrind), else 0 */
};

/* Round a requested stack size up to what shim_stack_alloc would give. */
size_t shim_stack_round(size_t size);

/* Any thread. Returns 0, -EINVAL (size 0 or above 1 GiB), -ENOMEM. */
int shim_stack_alloc(size_t size, struct shim_stack *out);

/* Any thread. The stack goes back to a pool of its size for reuse. */
void shim_stack_free(const struct shim_stack *s);

/* Any thread. Pooled stacks beyond a few give their memory back (Linux:
 * MADV_DONTNEED; bare metal: their pages are unmapped and freed), so that
 * resident memory returns near its baseline after a burst of fibers.
 * shim_stack_trim_due says whether there is anything to give (cheap). */
void shim_stack_trim(void);
bool shim_stack_trim_due(void);

/* The guard below stacks allocated from now on: bytes rounded up to pages,
 * 0 for the default (ARCH_STACK_GUARD). 0, or -EINVAL above
 * SHIM_STACK_GUARD_MAX. Stacks already allocated keep theirs. */
#define SHIM_STACK_GUARD_MAX ((size_t)1 << 20)
int shim_stack_guard_set(size_t bytes);

/* How guard pages are made here, for diagnostics and tests: "madvise" (no
 * extra kernel mappings), "mprotect" (two mappings per stack), or another
 * shim's word. Valid after the first shim_stack_alloc. */
const char *shim_stack_guard_method(void);

/* ---- Memory ------------------------------------------------------------- */

/* The bytes malloc can ever have when the C library's heap is bounded
 * (bare metal: the free RAM above the image, which it shares with the
 * pages of stacks and page tables, so it gets less as they take more), or
 * 0 when it grows on demand (Linux). Any thread; the same value for the
 * process's life. */
size_t shim_heap_size(void);

/* ---- Time --------------------------------------------------------------- */

/* Monotonic nanoseconds since an arbitrary origin; never negative. */
int64_t shim_now(void);

/* ---- Threads and waiting ------------------------------------------------ */

typedef struct shim_thread *shim_thread_t;

/* Number of CPUs (harts) the process may run on, at least 1. */
unsigned shim_cpu_count(void);

/* Start fn(arg) on a new thread. 0, -EAGAIN, -ENOMEM. */
int shim_thread_start(shim_thread_t *out, void (*fn)(void *), void *arg);

/* Wait for the thread to return and free it. */
void shim_thread_join(shim_thread_t t);

/* Give the CPU to another thread for a moment. */
void shim_thread_yield(void);

/* The CPU time thread t has used since it started, in nanoseconds (Linux:
 * the thread's CPU clock; bare metal: the time it held the hart), -ENOSYS
 * where it cannot be known, or -errno. Time the thread waited to be run
 * does not count. Any thread, until t is joined. */
int64_t shim_thread_cputime(shim_thread_t t);

/* Interrupt thread t for a moment, wherever it is, and walk the
 * frame-pointer chain of the code it runs (arch_backtrace_at) if its stack
 * pointer is in [lo, hi): up to max return addresses into pcs, the
 * interrupted pc first. t then goes on as if nothing had happened (Linux: a
 * signal, SIGURG, whose handler returns; an interrupted system call is
 * restarted). Waits for the answer until deadline (shim_now() time).
 * Returns the count (0: t was not running on that stack), -ENOSYS (not on
 * this target: bare metal), -EBUSY (the program handles SIGURG itself),
 * -ETIMEDOUT (t did not answer in time: it blocks the signal, or a sanitizer
 * holds it back), -errno. Plain threads only, one call at a time, never
 * on t itself. */
int shim_thread_backtrace(shim_thread_t t, uintptr_t lo, uintptr_t hi, uintptr_t *pcs, size_t max,
			  int64_t deadline);

/* Sleep while *word == expected, until shim_wake or the absolute deadline
 * (shim_now() time; -1 forever). Returns 0 when woken or when *word differed,
 * -ETIMEDOUT at the deadline. May return 0 spuriously: callers re-check. */
int shim_wait(_Atomic uint32_t *word, uint32_t expected, int64_t deadline);

/* Wake up to n threads sleeping in shim_wait on word. */
void shim_wake(_Atomic uint32_t *word, int n);

/* ---- Environment, console, faults --------------------------------------- */

/* The value of a configuration variable, or NULL. */
const char *shim_getenv(const char *name);

/* Write to the diagnostic console (stderr). Async-signal-safe. */
void shim_console_write(const char *s, size_t n);

/* Called from the fault handler (no locks, no allocation, no stdio) with the
 * faulting address. Writes a description of the overflowing fiber into buf
 * and returns its length, or returns 0 if addr is not in a guard region. */
typedef size_t (*shim_fault_namer)(uintptr_t addr, char *buf, size_t cap);

/* Install the overflow handler once per process. 0 or -errno. */
int shim_fault_init(shim_fault_namer namer);

/* Give the calling thread its own fault-handling stack. 0 or -errno. */
int shim_fault_thread_init(void);

/* Release the calling thread's fault-handling stack (before it exits). */
void shim_fault_thread_fini(void);

/* ---- Signals --------------------------------------------------------------
 * Signals, taken as I/O: set is a mask, bit n - 1 for signal n (1 to 64).
 * Each returns -EINVAL for an empty set or a signal that does not exist,
 * cannot be blocked or is the C library's own, and -ENOTSUP where there
 * are no signals (bare metal). Any thread. */
/* Block set in the calling thread. 0 or -errno. */
int shim_signal_block(uint64_t set);
/* An I/O source that is reported readable while a signal of set is pending
 * for the process (or the calling thread); every signal of set must be
 * blocked in the calling thread (-EINVAL if not). The source or -errno. */
int shim_signal_open(uint64_t set);
/* Take one pending signal of src's set: its number, -EAGAIN (none), or
 * -errno. */
int shim_signal_take(int src);
/* Close src (the runtime has forgotten it). */
void shim_signal_close(int src);

/* ---- Diagnostics ---------------------------------------------------------- */

/* Call fn() each time the process is asked to dump its state (Linux:
 * SIGQUIT, as Go and the JVM do), on a thread of the shim's own: never from
 * a signal handler, so fn may lock, allocate and print. Only when the request
 * still has its default action: a program's own handler is left alone. fn
 * NULL removes it (the default action is back, the thread is gone). Plain
 * threads only. Returns 0, -EBUSY (the program handles the signal itself),
 * -EALREADY (installed: remove it first), -ENOSYS (no such request on this
 * target: bare metal), -errno. */
int shim_on_quit(void (*fn)(void));

/* Describe code address pc for a backtrace line ("symbol+0x1f in module",
 * or "module+0x1234" for addr2line), into buf (NUL-terminated). Returns the
 * length, 0 when nothing is known (bare metal: the image has no symbols). */
size_t shim_symbolize(uintptr_t pc, char *buf, size_t cap);

/* ---- I/O readiness (the kernel half of the reactor) ----------------------
 * An I/O source is a small non-negative int: a file descriptor on Linux, a
 * device's number on bare metal. The runtime keeps, per source, who waits for
 * what and what was reported ready; the shim only reports readiness.
 *
 * A source is registered once for its life (shim_io_add ... shim_io_del),
 * with a tag the runtime picks: every report carries it, so a report that
 * was already on its way when the source was deleted (and its number reused)
 * is told from one of the new source's. Reports are edge-triggered where the
 * shim can (Linux: epoll's EPOLLET): after add, a source is reported each
 * time it may have become ready, never again merely because it stays ready;
 * a report may be spurious. A shim that cannot watch a source by itself
 * (bare metal: its devices are asked when armed) says so from add, and then
 * reports a source once per shim_io_arm. */
/* HUP: the peer will send nothing more (a stream's end, a hang-up); it
 * comes with IN, and is only reported, never asked for. */
enum { SHIM_IO_IN = 1, SHIM_IO_OUT = 2, SHIM_IO_ERR = 4, SHIM_IO_HUP = 8 };

struct shim_io_event {
	int src;
	uint32_t tag;    /* the tag src was added or last armed with */
	unsigned events; /* SHIM_IO_*; ERR also for hang-up, with IN and OUT */
};

/* Set up the reactor (Linux: an epoll fd and an eventfd, or with
 * $WEFT_IO=uring an io_uring; -EINVAL if $WEFT_IO names neither).
 * Idempotent between shim_io_fini calls. 0 or -errno. */
int shim_io_init(void);
void shim_io_fini(void);

/* Register src for IN, OUT and ERR, reports tagged tag (not 0). Returns 0
 * when the shim reports src's changes by itself from now on, starting with
 * what it is ready for now (edge-triggered), 1 when src is reported only
 * once per shim_io_arm (the runtime arms it before each wait), or
 * -EBADF (not a source), -EPERM (it cannot be waited on, e.g. a regular
 * file), -ENOMEM, -ENOSYS. Registering a registered source again replaces
 * its tag. Any thread. */
int shim_io_add(int src, uint32_t tag);

/* Report src once more if it is ready for any of events (IN|OUT; ERR always
 * counts) now, and (a one-shot source) once when it becomes so. The look a
 * waiter needs that has not seen src not ready: Linux re-arms the epoll
 * registration (one system call; it registers src again if it was lost).
 * 0 or -errno as shim_io_add. Any thread. */
int shim_io_arm(int src, uint32_t tag, unsigned events);

/* Stop reporting src (before it is closed). Any thread. */
void shim_io_del(int src);

/* Wait until a source is reported, shim_io_wake is called, or the absolute
 * deadline (-1 forever, 0 do not block). Writes up to max events and returns
 * their count; 0 on wake or timeout; -errno on failure. One thread at a time
 * (the runtime elects the poller). */
int shim_io_poll(struct shim_io_event *ev, int max, int64_t deadline);

/* The environment's choice of reactor backend, checked before anything is
 * set up: NULL if the shim accepts it (or has one backend and reads no
 * choice), else what is wrong, as one line naming the variable, its value
 * and what is accepted. */
const char *shim_io_config_error(void);

/* Make the current (or the next) shim_io_poll return at once. Any thread. */
void shim_io_wake(void);

/* ---- Network devices ----------------------------------------------------
 * Ethernet frames in and out, for lwIP's netifs. Non-blocking: wait for the
 * device's I/O source to be readable when recv says -EAGAIN. */
struct shim_netdev;

struct shim_netdev_info {
	uint8_t mac[6]; /* the address lwIP answers to */
	unsigned mtu;   /* payload bytes, without the 14-byte Ethernet header */
	int src;        /* I/O source: IN when frames wait, OUT when there is
			 * room again after send said -EAGAIN (where the
			 * device can tell; else the caller retries on a timer) */
	char name[32];  /* the kernel's or the device's name, for messages */
	bool batched;   /* sent frames wait for shim_netdev_flush (AF_XDP) */
};

struct shim_iov {
	const void *base;
	size_t len;
};

/* Open a device by spec:
 *   "tap:NAME"      Linux: create (or attach to) TAP device NAME; frames
 *                   bypass the kernel's TCP/IP. The MAC is a random
 *                   locally administered address.
 *   "packet:IFNAME" Linux: AF_PACKET on an existing interface, with its MAC.
 *   "virtio"        bare metal: the first virtio-net device.
 * Returns 0, -EINVAL (malformed spec), -ENODEV (no such device kind on this
 * target, or no such device), -EPERM (not allowed), -ENOMEM, -errno. */
int shim_netdev_open(const char *spec, struct shim_netdev **out, struct shim_netdev_info *info);

/* Take one received frame into buf. Returns its length; -EAGAIN when none
 * waits; -EMSGSIZE (a frame longer than cap was dropped; call again). */
int shim_netdev_recv(struct shim_netdev *d, void *buf, size_t cap);

/* Send one frame gathered from n pieces. Returns 0; -EAGAIN (the device's
 * queue is full: the frame is not sent; lwIP's netif holds it back and
 * sends it again when there is room); -EMSGSIZE; -errno. */
int shim_netdev_send(struct shim_netdev *d, const struct shim_iov *iov, int n);

/* The end of a batch of sends: a device that holds sent frames back to
 * hand them to its hardware or kernel at once (info.batched: AF_XDP's TX
 * ring, one sendto kick for the batch) hands them over now. Until then up
 * to 31 frames may wait (a kick's worth goes at once): the caller must
 * flush soon after its last send. Returns 0 or -errno; a no-op (0) for a
 * device that sends each frame as it is given. */
int shim_netdev_flush(struct shim_netdev *d);

void shim_netdev_close(struct shim_netdev *d);

/* ---- Kernel sockets (IPv4, IPv6) -----------------------------------------
 * Non-blocking sockets of the host kernel. Each returns -errno on failure;
 * -EAGAIN means wait for the fd (an I/O source) and try again. A shim with
 * no kernel sockets returns -ENOSYS from shim_sock_open. */
enum { SHIM_SOCK_STREAM = 1, SHIM_SOCK_DGRAM = 2, SHIM_SOCK_INET6 = 16 };

struct shim_sockaddr {
	uint32_t ip;     /* IPv4, network byte order */
	uint16_t port;   /* host byte order */
	uint16_t v6;     /* 0: IPv4 (ip); 1: IPv6 (ip6, scope) */
	uint8_t ip6[16]; /* network byte order */
	uint32_t scope;  /* interface index, 0 none */
};

/* type: SHIM_SOCK_STREAM or _DGRAM, with SHIM_SOCK_INET6 for an IPv6 socket
 * (IPv6 only: IPV6_V6ONLY, so it shares a port with an IPv4 one). */
int shim_sock_open(int type); /* fd: non-blocking, close-on-exec; SO_REUSEADDR on
				      streams, TCP_NODELAY set once connected */
int shim_sock_bind(int fd, const struct shim_sockaddr *a);
int shim_sock_listen(int fd, int backlog);
/* peer may be NULL: then the peer's address is not asked for. */
int shim_sock_accept(int fd, struct shim_sockaddr *peer);     /* new fd (non-blocking) */
int shim_sock_connect(int fd, const struct shim_sockaddr *a); /* 0, -EINPROGRESS */
int shim_sock_error(int fd); /* the pending error (SO_ERROR) as -errno, or 0 */
long shim_sock_send(int fd, const void *buf, size_t len); /* count; -EPIPE, never SIGPIPE */
/* A count, 0 at end of stream. A stream socket's count short of len means
 * it had nothing more queued: what comes afterwards makes fd ready, but the
 * end of the stream or an error may have come already (reported as HUP or
 * ERR before this call), and the next call returns it. */
long shim_sock_recv(int fd, void *buf, size_t len);
long shim_sock_sendto(int fd, const void *buf, size_t len, const struct shim_sockaddr *to);
long shim_sock_recvfrom(int fd, void *buf, size_t len, struct shim_sockaddr *from);
int shim_sock_shutdown(int fd, int how); /* how: 1 read, 2 write, 3 both */
int shim_sock_name(int fd, struct shim_sockaddr *local);
int shim_sock_peer(int fd, struct shim_sockaddr *peer);
int shim_sock_close(int fd);

/* ---- Names ----------------------------------------------------------------
 * The host's resolver (Linux: getaddrinfo, so /etc/hosts and the DNS servers
 * of /etc/resolv.conf). Blocking, for as long as the resolver takes: the
 * runtime calls it on a helper thread only. name is a host name, not an
 * address. 0 and *ip (the first IPv4 address, network byte order); -ENOENT
 * (no such name, or it has no IPv4 address); -EAGAIN (no answer now: no
 * server reached, or it failed); -ENOMEM; -EIO (anything else); -ENOSYS
 * (no resolver: bare metal). */
int shim_resolve(const char *name, uint32_t *ip);
/* The same for the first IPv6 address: 0 and ip6 (network byte order) and
 * *scope (0 unless the resolver gave a zone); -ENOENT also when the name
 * has no IPv6 address. */
int shim_resolve6(const char *name, uint8_t ip6[16], uint32_t *scope);

#endif
