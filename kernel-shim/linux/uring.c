/* SPDX-License-Identifier: MIT */
/* The kernel half of the reactor on io_uring ($WEFT_IO=uring; io.c picks
 * it): readiness here (the sockets' accepts and receives by completion are
 * uring_sock.c's). Each fd gets one multishot IORING_OP_POLL_ADD for its
 * life (edge-triggered, as epoll.c's EPOLLET registration: a completion
 * each time the fd's wait queue is woken, with what it is ready for then),
 * cancelled by IORING_OP_ASYNC_CANCEL at shim_io_del (queue_cancel says why
 * not POLL_REMOVE); shim_io_arm's second look is a POLL_REMOVE that updates
 * the poll in place (the kernel looks at the fd again, as EPOLL_CTL_MOD
 * does). A kernel without multishot poll (before 5.13) gets one-shot polls,
 * armed by the runtime before each wait (shim_io_add returns 1).
 * shim_io_wake submits a NOP, whose completion ends the poller's
 * io_uring_enter; it never waits for the lock (io_wake says how).
 *
 * Raw system calls and the kernel's ABI spelled out below (the musl cross
 * toolchains have no <linux/io_uring.h>). Submissions come from any thread,
 * under one lock; completions are reaped by the one poller. A request's
 * completion runs as task work on the thread that submitted it. With
 * IORING_SETUP_COOP_TASKRUN (Linux 5.19; without it, every completion
 * interrupted that thread, at about half of HTTP's throughput) the kernel
 * runs that work when the thread next enters the kernel, and wakes it if it
 * sleeps in one (a futex, the poll): a busy worker holds its requests'
 * completions back only until its next system call or look at the ring,
 * where IORING_SQ_TASKRUN (SETUP_TASKRUN_FLAG) makes it enter the kernel to
 * run them (wait_cqe). Older kernels get the interrupting mode.
 *
 * Every feature is probed at init, never taken from the kernel's version
 * (feature.h lists them): the setup flags by a setup that the kernel
 * refuses with -EINVAL, the IORING_FEAT_* bits it answers, the opcodes by
 * IORING_REGISTER_PROBE; uring_sock.c tries its multishot requests. What
 * is missing falls back a step (multishot poll to one-shot polls, the
 * cooperative task work to the interrupting mode, completion sockets to
 * readiness; without what the readiness itself needs, to epoll: io.c),
 * each said in one line on stderr. $WEFT_IO_MISSING hides features from
 * these probes, so that each fallback is tested on a kernel that has it.
 *
 * Threads that are not the shim's (a program's own, calling weft_net_init,
 * a socket call or weft_fd_wait outside a fiber) never submit a request
 * that outlives the call: a poll, or a completion socket's multishot. Its
 * completions would run as task work on that thread, and the kernel
 * announces task work as it does a signal, so that thread's own blocking
 * calls that are never restarted (a read with SO_RCVTIMEO, nanosleep,
 * poll) would fail with EINTR, in code that never called weft there. Such
 * a thread asks the poller (defer): the poll is armed on the poller's next
 * turn, which a NOP (completed inline, leaving no task work) brings at
 * once. What completes as it is submitted (a NOP, a cancellation, a poll's
 * update, which keeps the poll's first submitter) goes from any thread;
 * every holder of the lock submits what it queued before it lets go, so a
 * submission never carries another thread's poll along. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux/feature.h"
#include "linux/io.h"
#include "linux/thread.h"
#include "linux/uring.h"

/* ---- user_data: tag << 32 | kind << 28 | fd ----------------------------
 * kind: the directions a poll watches (K_IN, K_OUT: a one-shot poll; both:
 * the multishot one); with K_CTL, a cancellation of that poll, or (tag 0)
 * an update, whose completions say nothing to the runtime. The wake's NOP
 * is WAKE_UD. */
enum { K_IN = 1, K_OUT = 2, K_BOTH = 3, K_CTL = 4 };
#define WAKE_UD (UINT64_C(8) << 28)

int shim_io_uring_refuse;
int shim_io_uring_oneshot;

/* The SQ ring and the table, for submitters on any thread; the poller's
 * reaping takes it only for a poll that ended. */
pthread_mutex_t shim_uring_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int ringfd = -1;
static void *ring_mem, *sqe_mem;
static size_t ring_len, sqe_len;
static uint32_t *sq_head, *sq_tail, *sq_flags, sq_mask, sq_entries;
static uint32_t *cq_head, *cq_tail, cq_mask;
static struct uring_sqe *sqes;
static struct uring_cqe *cqes;
static bool multishot;
/* Set by the waker that owns the next wake's NOP (submitted, or left to
 * the lock's holder: wake_wanted), cleared by the poller once it reaped the
 * NOP's completion: while set, a wake needs no NOP of its own. */
static _Atomic int wake_pending;
/* A waker found the lock held: its holder submits the NOP as it lets go
 * (shim_uring_unlock). */
static _Atomic int wake_wanted;
static char why[200];

/* A seq_cst fence. ThreadSanitizer does not model atomic_thread_fence (gcc
 * refuses it there): a seq_cst read-modify-write of one shared word, which
 * orders the two sides of the wake's handshake alike. */
#if defined(__SANITIZE_THREAD__)
static _Atomic int fence_word;
#define full_fence() ((void)atomic_fetch_add_explicit(&fence_word, 0, memory_order_seq_cst))
#else
#define full_fence() atomic_thread_fence(memory_order_seq_cst)
#endif

/* Per fd: the tag of its registration and the polls it has in the kernel
 * (bit k: a poll of kind k), so that del and a re-add cancel them. */
struct src {
	uint32_t tag;
	uint8_t polls;
	uint8_t want;  /* polls (bit k: kind k) a thread not the shim's asked for */
	bool sock;     /* and its completion socket's request */
	bool listed;   /* on the ready list */
	bool deferred; /* on the deferred list */
};
static struct src *tab;
static size_t ntab;

/* Sources whose polls (or completion socket's request) a thread that is
 * not the shim's asked for, for the poller to arm (defer). Room for every
 * source of tab, as the ready list. */
static int *dlist;
static size_t ndefer, cap_defer;
static _Atomic bool any_deferred;

/* Completion sockets to report on the poller's next turn (shim_uring_report:
 * registered, or armed, while something is queued for them). A source is
 * listed once at most, so the list has room for every source of tab: it
 * grows with tab (grow), and a report never allocates, so none is lost
 * for want of memory. */
static int *ready;
static size_t nready, cap_ready;
static _Atomic bool any_ready;

static uint32_t load_acquire(const uint32_t *p)
{
	return atomic_load_explicit((const _Atomic uint32_t *)p, memory_order_acquire);
}

static void store_release(uint32_t *p, uint32_t v)
{
	atomic_store_explicit((_Atomic uint32_t *)p, v, memory_order_release);
}

static int enter(int fd, unsigned submit, unsigned wait, unsigned flags, void *arg, size_t argsz)
{
	long r = syscall(SYS_io_uring_enter, fd, submit, wait, flags, arg, argsz);
	return r < 0 ? -errno : (int)r;
}

/* The poll mask of a kind: IN with the peer's shutdown, OUT; ERR and HUP
 * are always reported. The kernel reads poll32_events as two swapped
 * halves on a big-endian CPU. */
static uint32_t poll_mask(unsigned kind)
{
	uint32_t m = ((kind & K_IN) ? POLLIN | POLLRDHUP : 0) | ((kind & K_OUT) ? POLLOUT : 0);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	m = m << 16 | m >> 16;
#endif
	return m;
}

/* Under lock: hand the kernel every SQE it has not taken. 0 or -errno; what
 * it refused stays in the ring for the next submission. */
int shim_uring_submit(void)
{
	for (;;) {
		unsigned n = *sq_tail - load_acquire(sq_head);
		if (!n)
			return 0;
		int r = enter(atomic_load(&ringfd), n, 0, 0, NULL, 0);
		if (r == 0)
			return -EAGAIN;
		if (r < 0 && r != -EINTR)
			return r;
	}
}

/* Under lock: the next SQE, zeroed, or NULL while the kernel refuses to
 * take what fills the ring (a batch of re-arms fills it: submitted first). */
struct uring_sqe *shim_uring_sqe_get(void)
{
	uint32_t tail = *sq_tail;
	if (tail - load_acquire(sq_head) >= sq_entries &&
	    (shim_uring_submit() < 0 || tail - load_acquire(sq_head) >= sq_entries))
		return NULL;
	struct uring_sqe *s = &sqes[tail & sq_mask];
	memset(s, 0, sizeof *s);
	return s;
}

/* Under lock: publish the SQE shim_uring_sqe_get gave. */
void shim_uring_sqe_put(void) { store_release(sq_tail, *sq_tail + 1); }

static int queue_poll(int src, uint32_t tag, unsigned kind, bool multi)
{
	struct uring_sqe *s = shim_uring_sqe_get();
	if (!s)
		return -EAGAIN;
	s->opcode = OP_POLL_ADD;
	s->fd = src;
	s->op_flags = poll_mask(kind & shim_uring_sock_dirs(src));
	s->len = multi ? POLL_ADD_MULTI : 0;
	s->user_data = uring_ud(tag, kind, src);
	shim_uring_sqe_put();
	tab[src].polls |= (uint8_t)(1u << kind);
	return 0;
}

/* Cancel src's poll of kind kind (IORING_OP_ASYNC_CANCEL: POLL_REMOVE
 * gives up with -EALREADY while the poll's wake-up is being handled, and a
 * poll left behind would hold the file open after close). */
static int queue_cancel(int src, uint32_t tag, unsigned kind)
{
	struct uring_sqe *s = shim_uring_sqe_get();
	if (!s)
		return -EAGAIN;
	s->opcode = OP_ASYNC_CANCEL;
	s->fd = -1;
	s->addr = uring_ud(tag, kind, src);
	s->user_data = uring_ud(tag, K_CTL | kind, src);
	shim_uring_sqe_put();
	if ((size_t)src < ntab && tab[src].tag == tag)
		tab[src].polls &= (uint8_t) ~(1u << kind);
	return 0;
}

/* Have the kernel look at src again, keeping its multishot poll: a
 * POLL_REMOVE that updates the poll with its own events re-arms it, which
 * looks, as EPOLL_CTL_MOD does. One whose wake-up is being handled says
 * -EALREADY, and that handling looks at the fd again. */
static int queue_update(int src, uint32_t tag)
{
	struct uring_sqe *s = shim_uring_sqe_get();
	if (!s)
		return -EAGAIN;
	s->opcode = OP_POLL_REMOVE;
	s->fd = -1;
	s->addr = uring_ud(tag, K_BOTH, src);
	s->len = POLL_UPDATE_EVENTS | POLL_ADD_MULTI;
	s->op_flags = poll_mask(shim_uring_sock_dirs(src));
	s->user_data = uring_ud(0, K_CTL | K_BOTH, src);
	shim_uring_sqe_put();
	return 0;
}

/* Under lock: cancel every poll src has. */
static void remove_all(int src)
{
	for (unsigned k = K_IN; k <= K_BOTH; k++)
		if (tab[src].polls & (1u << k))
			(void)queue_cancel(src, tab[src].tag, k);
	tab[src].polls = 0;
	tab[src].want = 0;
}

/* A list of sources with room for n (ready, dlist: one entry per source at
 * most, so that adding to one never allocates). */
static int grow_list(int **list, size_t *cap, size_t n)
{
	if (n <= *cap)
		return 0;
	int *l = realloc(*list, n * sizeof *l);
	if (!l)
		return -ENOMEM;
	*list = l;
	*cap = n;
	return 0;
}

static int grow(int src)
{
	if ((size_t)src < ntab)
		return 0;
	size_t n = ntab ? ntab : 64;
	while (n <= (size_t)src)
		n *= 2;
	if (grow_list(&ready, &cap_ready, n) || grow_list(&dlist, &cap_defer, n))
		return -ENOMEM;
	struct src *t = realloc(tab, n * sizeof *t);
	if (!t)
		return -ENOMEM;
	memset(t + ntab, 0, (n - ntab) * sizeof *t);
	tab = t;
	ntab = n;
	return 0;
}

/* Why the last init failed: the feature it missed, and what the kernel
 * said (empty: the release that brought it; io.c says it). */
static enum shim_feature why_feat = SF_URING;

static int fail(int err, enum shim_feature f, const char *what)
{
	why_feat = f;
	snprintf(why, sizeof why, "%s", what ? what : "");
	return err;
}

static void unmap(void)
{
	if (ring_mem)
		munmap(ring_mem, ring_len);
	if (sqe_mem)
		munmap(sqe_mem, sqe_len);
	ring_mem = sqe_mem = NULL;
}

/* IORING_REGISTER_PROBE's answer (Linux 5.6): which opcodes the kernel
 * has. */
enum { REGISTER_PROBE = 8, OP_SUPPORTED = 1, PROBE_OPS = 64 };
struct probe_op {
	uint8_t op, resv;
	uint16_t flags;
	uint32_t resv2;
};
struct probe {
	uint8_t last_op, ops_len;
	uint16_t resv;
	uint32_t resv2[3];
	struct probe_op ops[PROBE_OPS];
};

static bool has_op(const struct probe *pr, unsigned op)
{
	return op < pr->ops_len && op <= pr->last_op && (pr->ops[op].flags & OP_SUPPORTED);
}

/* The features in use since the last init (feature.h's bits), for
 * shim_io_uring_features. */
static unsigned in_use;

static int io_init(void)
{
	if (atomic_load(&ringfd) >= 0)
		return 0;
	in_use = 0;
	if (shim_io_uring_refuse)
		return fail(-shim_io_uring_refuse, SF_URING,
			    "io_uring_setup refused by the test hook");
	if (shim_feature_hidden(SF_URING))
		return fail(-ENOSYS, SF_URING, NULL);
	/* Each flag by a trial: a kernel that does not know one refuses the
	 * setup with -EINVAL. */
	bool coop = !shim_feature_hidden(SF_COOP_TASKRUN);
	struct uring_params p = {.flags = SETUP_CQSIZE | SETUP_CLAMP |
					  (coop ? SETUP_COOP_TASKRUN | SETUP_TASKRUN_FLAG : 0),
				 .cq_entries = 4096};
	long fd = syscall(SYS_io_uring_setup, 64, &p);
	if (fd < 0 && errno == EINVAL && coop) { /* before 5.19: the interrupting mode */
		coop = false;
		p = (struct uring_params){.flags = SETUP_CQSIZE | SETUP_CLAMP, .cq_entries = 4096};
		fd = syscall(SYS_io_uring_setup, 64, &p);
	}
	if (fd < 0) {
		int e = errno;
		if (e == ENOSYS)
			return fail(-e, SF_URING,
				    "ENOSYS: a kernel without io_uring, or "
				    "qemu-user, which does not emulate it");
		if (e == EPERM)
			return fail(-e, SF_URING,
				    "EPERM: sysctl kernel.io_uring_disabled, "
				    "or a seccomp filter or container that forbids it");
		char msg[120];
		snprintf(msg, sizeof msg, "%s", strerror(e));
		return fail(-e, SF_URING, msg);
	}
	/* What the kernel says it has, less what $WEFT_IO_MISSING hides. */
	static const struct {
		enum shim_feature f;
		unsigned bit;
	} need[] = {{SF_SINGLE_MMAP, FEAT_SINGLE_MMAP},
		    {SF_NODROP, FEAT_NODROP},
		    {SF_EXT_ARG, FEAT_EXT_ARG}};
	for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
		if (!(p.features & need[i].bit) || shim_feature_hidden(need[i].f)) {
			close((int)fd);
			return fail(-ENOSYS, need[i].f, NULL);
		}
	struct probe pr = {0};
	if (syscall(SYS_io_uring_register, (int)fd, REGISTER_PROBE, &pr, PROBE_OPS) < 0) {
		char msg[120];
		snprintf(msg, sizeof msg, "IORING_REGISTER_PROBE: %s", strerror(errno));
		close((int)fd);
		return fail(-ENOSYS, SF_OPCODES, msg);
	}
	if (!has_op(&pr, OP_NOP) || !has_op(&pr, OP_POLL_ADD) || !has_op(&pr, OP_POLL_REMOVE) ||
	    !has_op(&pr, OP_ASYNC_CANCEL) || shim_feature_hidden(SF_OPCODES)) {
		close((int)fd);
		return fail(-ENOSYS, SF_OPCODES, "the kernel's IORING_REGISTER_PROBE lacks one");
	}
	ring_len = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
	size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct uring_cqe);
	if (cq_len > ring_len)
		ring_len = cq_len;
	sqe_len = p.sq_entries * sizeof(struct uring_sqe);
	ring_mem = mmap(NULL, ring_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, (int)fd,
			OFF_SQ_RING);
	sqe_mem = mmap(NULL, sqe_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, (int)fd,
		       OFF_SQES);
	if (ring_mem == MAP_FAILED || sqe_mem == MAP_FAILED) {
		int e = -errno;
		if (ring_mem == MAP_FAILED)
			ring_mem = NULL;
		if (sqe_mem == MAP_FAILED)
			sqe_mem = NULL;
		unmap();
		close((int)fd);
		return fail(e, SF_URING, "mmap of the io_uring rings failed");
	}
	char *r = ring_mem;
	sq_head = (uint32_t *)(r + p.sq_off.head);
	sq_tail = (uint32_t *)(r + p.sq_off.tail);
	sq_flags = (uint32_t *)(r + p.sq_off.flags);
	sq_mask = *(uint32_t *)(r + p.sq_off.ring_mask);
	sq_entries = p.sq_entries;
	uint32_t *array = (uint32_t *)(r + p.sq_off.array);
	for (uint32_t i = 0; i < sq_entries; i++)
		array[i] = i; /* SQE i sits at ring slot i: they go in order */
	cq_head = (uint32_t *)(r + p.cq_off.head);
	cq_tail = (uint32_t *)(r + p.cq_off.tail);
	cq_mask = *(uint32_t *)(r + p.cq_off.ring_mask);
	cqes = (struct uring_cqe *)(r + p.cq_off.cqes);
	sqes = sqe_mem;
	/* Multishot polls and their updates came in 5.13 with
	 * IORING_FEAT_RSRC_TAGS, which stands for them (before, the kernel
	 * refuses POLL_ADD_MULTI with -EINVAL). */
	multishot = (p.features & FEAT_RSRC_TAGS) && !shim_io_uring_oneshot &&
		    !shim_feature_hidden(SF_MULTISHOT_POLL);
	if (!coop)
		(void)shim_feature_fallback(SF_COOP_TASKRUN, NULL);
	if (!multishot)
		(void)shim_feature_fallback(SF_MULTISHOT_POLL,
					    shim_io_uring_oneshot ? "the test hook" : NULL);
	in_use = (coop ? 1u << SF_COOP_TASKRUN : 0) | (multishot ? 1u << SF_MULTISHOT_POLL : 0);
	atomic_store(&wake_pending, 0);
	atomic_store(&wake_wanted, 0);
	pthread_mutex_lock(&shim_uring_lock);
	atomic_store(&ringfd, (int)fd);
	shim_uring_sock_init((int)fd, multishot, has_op(&pr, OP_ACCEPT), has_op(&pr, OP_RECV));
	shim_uring_unlock();
	return 0;
}

static void io_fini(void)
{
	pthread_mutex_lock(&shim_uring_lock);
	int fd = atomic_load(&ringfd);
	if (fd >= 0) {
		shim_uring_sock_fini(fd);
		atomic_store(&ringfd, -1);
		close(fd); /* cancels every poll */
		unmap();
		free(tab);
		tab = NULL;
		ntab = 0;
		free(ready);
		ready = NULL;
		nready = cap_ready = 0;
		atomic_store(&any_ready, false);
		free(dlist);
		dlist = NULL;
		ndefer = cap_defer = 0;
		atomic_store(&any_deferred, false);
	}
	shim_uring_unlock();
}

/* What epoll_ctl refuses: not an fd (-EBADF), or a file that cannot be
 * waited on (-EPERM). io_uring would report those ready at once. */
static int check(int src, uint32_t tag)
{
	if (atomic_load(&ringfd) < 0)
		return -ENOSYS;
	if (src < 0 || src >= SRC_LIMIT || src == atomic_load(&ringfd) || !tag)
		return -EBADF;
	struct stat st;
	if (fstat(src, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode))
		return -EPERM;
	return 0;
}

static void queue_wake(void);

/* Under lock: src on the deferred list, and the poller woken to arm it. */
static void defer(int src)
{
	if (!tab[src].deferred) {
		dlist[ndefer++] = src; /* room for every source: grow */
		tab[src].deferred = true;
	}
	atomic_store(&any_deferred, true);
	queue_wake();
}

/* Under lock: a poll of kind for src (multishot for K_BOTH when the kernel
 * has them), or, on a thread that is not the shim's, the poller asked to
 * arm it. */
static int arm_poll(int src, uint32_t tag, unsigned kind)
{
	if (!shim_thread_own) {
		tab[src].want |= (uint8_t)(1u << kind);
		defer(src);
		return 0;
	}
	return queue_poll(src, tag, kind, multishot && kind == K_BOTH);
}

int shim_uring_defer_sock(int src)
{
	int e = src < 0 || src >= SRC_LIMIT ? -EBADF : grow(src);
	if (e)
		return e;
	tab[src].sock = true;
	defer(src);
	return 0;
}

/* On the poller, before it waits: arm what the deferred list asks for.
 * A poll the full ring refuses stays listed for the next turn. */
static void arm_deferred(void)
{
	pthread_mutex_lock(&shim_uring_lock);
	atomic_store(&any_deferred, false);
	size_t keep = 0;
	for (size_t i = 0; i < ndefer; i++) {
		int src = dlist[i];
		struct src *t = &tab[src];
		unsigned want = t->tag ? t->want : 0;
		bool sock = t->sock; /* the socket's own state decides */
		t->want = 0;
		t->sock = false;
		for (unsigned k = K_IN; k <= K_BOTH; k++)
			if ((want & (1u << k)) && !(t->polls & (1u << k)) &&
			    queue_poll(src, t->tag, k, multishot && k == K_BOTH) < 0)
				t->want |= (uint8_t)(1u << k);
		if (sock)
			shim_uring_sock_arm_deferred(src);
		if (t->want)
			dlist[keep++] = src;
		else
			t->deferred = false;
	}
	ndefer = keep;
	if (keep)
		atomic_store(&any_deferred, true);
	(void)shim_uring_submit();
	shim_uring_unlock();
}

/* Under lock: src registered with tag (a new tag, or a number whose old
 * registration was lost: its polls cancelled), its multishot poll asked
 * for if it has none. The kernel looks at src as the poll is armed. */
static int reg(int src, uint32_t tag)
{
	if (atomic_load(&ringfd) < 0)
		return -ENOSYS;
	int e = grow(src);
	if (e)
		return e;
	if (tab[src].tag != tag) {
		remove_all(src);
		tab[src].tag = tag;
	}
	if (multishot && !(tab[src].polls & (1u << K_BOTH)))
		return arm_poll(src, tag, K_BOTH);
	return 0;
}

/* Under lock: register src (reg), and have the kernel look at it again if
 * its multishot poll was there already; one-shot: a poll for the
 * directions in events that no poll of src watches yet (one that does
 * reports src when it is ready). */
static int look(int src, uint32_t tag, unsigned events)
{
	bool had = (size_t)src < ntab && tab[src].tag == tag && (tab[src].polls & (1u << K_BOTH));
	int e = reg(src, tag);
	if (!e && multishot && had)
		e = queue_update(src, tag);
	if (!e && !multishot && events) {
		unsigned covered = 0;
		for (unsigned k = K_IN; k <= K_BOTH; k++)
			if (tab[src].polls & (1u << k))
				covered |= k;
		unsigned want = events & K_BOTH & ~covered;
		if (want)
			e = arm_poll(src, tag, want);
	}
	if (!e)
		e = shim_uring_submit();
	return e;
}

static void wake_reaped(void);

void shim_uring_report(int src)
{
	if ((size_t)src >= ntab || tab[src].listed)
		return;
	ready[nready++] = src; /* room for every source: grow */
	tab[src].listed = true;
	atomic_store(&any_ready, true);
	queue_wake();
}

void shim_uring_remask(int src)
{
	if ((size_t)src < ntab && tab[src].tag && (tab[src].polls & (1u << K_BOTH)))
		(void)queue_update(src, tab[src].tag);
}

/* Under the lock: a completion socket with something queued is reported
 * on the poller's next turn: its look, as the kernel's for a poll. */
static void look_queued(int src, unsigned events)
{
	if (shim_uring_sock_ready(src) & (events | SHIM_IO_ERR))
		shim_uring_report(src);
}

static int io_add(int src, uint32_t tag)
{
	int e = check(src, tag);
	if (!e) {
		pthread_mutex_lock(&shim_uring_lock);
		e = look(src, tag, 0);
		if (!e)
			look_queued(src, SHIM_IO_IN);
		shim_uring_unlock();
	}
	return e ? e : multishot ? 0 : 1;
}

/* Multishot: the poll updated with its own events, which has the kernel
 * look at src again (one io_uring_enter), as EPOLL_CTL_MOD does. */
static int io_arm(int src, uint32_t tag, unsigned events)
{
	if (atomic_load(&ringfd) < 0)
		return -ENOSYS;
	if (src < 0 || src >= SRC_LIMIT || src == atomic_load(&ringfd) || !tag)
		return -EBADF;
	pthread_mutex_lock(&shim_uring_lock);
	int e = look(src, tag, events);
	if (!e)
		look_queued(src, events);
	shim_uring_unlock();
	return e;
}

/* The cancellation is taken as it is submitted; the poll lets go of src's
 * file when its task work runs (at once: the kernel interrupts the thread
 * that armed it), so the close that follows really closes it. */
static void io_del(int src)
{
	pthread_mutex_lock(&shim_uring_lock);
	if (atomic_load(&ringfd) >= 0 && src >= 0 && (size_t)src < ntab) {
		remove_all(src);
		tab[src].tag = 0;
		(void)shim_uring_submit();
	}
	shim_uring_unlock();
}

static unsigned events_of(uint32_t k)
{
	unsigned e = 0;
	if (k & (POLLIN | POLLRDHUP))
		e |= SHIM_IO_IN;
	if (k & (POLLRDHUP | POLLHUP))
		e |= SHIM_IO_HUP;
	if (k & POLLOUT)
		e |= SHIM_IO_OUT;
	if (k & (POLLERR | POLLHUP))
		e |= SHIM_IO_IN | SHIM_IO_OUT | SHIM_IO_ERR;
	return e;
}

/* Under lock: a poll of src's that ended (a one-shot poll's only
 * completion, or a multishot poll's last: the CQ ring overflowed, or it
 * was cancelled by other than del). Returns the report to give, 0 for
 * none. A multishot poll is asked for again (its look reports src if it
 * is ready); a one-shot one is armed again by the runtime for whoever
 * still waits. */
static unsigned ended(int src, uint32_t tag, unsigned kind, int res, bool *resubmit)
{
	if ((size_t)src >= ntab || tab[src].tag != tag || !(tab[src].polls & (1u << kind)))
		return 0; /* deleted, or added again, since */
	tab[src].polls &= (uint8_t) ~(1u << kind);
	if (multishot && (res >= 0 || res == -ECANCELED)) {
		*resubmit |= queue_poll(src, tag, K_BOTH, true) == 0;
		return res > 0 ? events_of((uint32_t)res) : 0;
	}
	if (res == -ECANCELED)
		return SHIM_IO_IN | SHIM_IO_OUT; /* spurious: the waiters look again */
	if (res < 0)
		return SHIM_IO_IN | SHIM_IO_OUT | SHIM_IO_ERR;
	return events_of((uint32_t)res);
}

/* Wait until a completion is in the ring or the deadline passes: 0, or
 * -errno. */
static int wait_cqe(int fd, int64_t deadline)
{
	for (;;) {
		if (*cq_head != load_acquire(cq_tail))
			return 0;
		if (load_acquire(sq_flags) & (SQ_CQ_OVERFLOW | SQ_TASKRUN)) {
			/* Completions kept aside, or task work waiting for a
			 * thread to enter the kernel: flush them into the ring
			 * (this thread's task work runs on the way). */
			int r = enter(fd, 0, 0, ENTER_GETEVENTS, NULL, 0);
			if (r < 0 && r != -EINTR && r != -EBUSY && r != -EAGAIN)
				return r;
			if (*cq_head != load_acquire(cq_tail))
				return 0;
		}
		struct kernel_timespec ts = {0};
		struct getevents_arg arg = {0};
		if (deadline >= 0) {
			int64_t left = deadline - shim_now();
			if (left <= 0)
				return 0;
			ts.tv_sec = left / 1000000000;
			ts.tv_nsec = left % 1000000000;
			arg.ts = (uint64_t)(uintptr_t)&ts;
		}
		int r = enter(fd, 0, 1, ENTER_GETEVENTS | ENTER_EXT_ARG, &arg, sizeof arg);
		if (r == -ETIME)
			return 0;
		if (r < 0 && r != -EINTR && r != -EBUSY && r != -EAGAIN)
			return r;
	}
}

int shim_uring_take(struct uring_cqe *out, int64_t deadline)
{
	int r = wait_cqe(atomic_load(&ringfd), deadline);
	uint32_t head = *cq_head;
	if (r < 0 || head == load_acquire(cq_tail))
		return r;
	*out = cqes[head & cq_mask];
	store_release(cq_head, head + 1);
	if (out->user_data == WAKE_UD)
		wake_reaped();
	return 1;
}

/* Under the lock: the reports shim_uring_report asked for, into ev. */
static int reported(struct shim_io_event *ev, int max)
{
	int out = 0;
	while (nready && out < max) {
		int src = ready[--nready];
		tab[src].listed = false;
		unsigned e = tab[src].tag ? shim_uring_sock_ready(src) : 0;
		if (!e)
			continue;
		ev[out].src = src;
		ev[out].tag = tab[src].tag;
		ev[out].events = e;
		out++;
	}
	if (!nready)
		atomic_store(&any_ready, false);
	return out;
}

static int io_poll(struct shim_io_event *ev, int max, int64_t deadline)
{
	int fd = atomic_load(&ringfd);
	if (fd < 0)
		return -ENOSYS;
	if (max <= 0)
		return -EINVAL;
	if (atomic_load(&any_deferred))
		arm_deferred();
	bool listed = atomic_load(&any_ready);
	int r = wait_cqe(fd, listed ? 0 : deadline);
	if (r < 0)
		return r;
	uint32_t head = *cq_head, tail = load_acquire(cq_tail);
	bool locked = false, resubmit = false;
	int out = 0;
	if (listed) {
		pthread_mutex_lock(&shim_uring_lock);
		locked = true;
		out = reported(ev, max);
	}
	while (head != tail && out < max) {
		struct uring_cqe c = cqes[head & cq_mask];
		head++;
		if (c.user_data == WAKE_UD) {
			wake_reaped();
			continue;
		}
		unsigned kind = (unsigned)(c.user_data >> 28) & 15;
		int src = (int)(c.user_data & (SRC_LIMIT - 1));
		uint32_t tag = (uint32_t)(c.user_data >> 32);
		if (!locked && (kind >= K_SOCK || !(c.flags & CQE_F_MORE) ||
				((kind & K_CTL) && tag && c.res == -EALREADY))) {
			pthread_mutex_lock(&shim_uring_lock);
			locked = true;
		}
		unsigned e;
		if (kind >= K_SOCK) {
			/* A completion socket's: reported with its registration's tag. */
			e = shim_uring_sock_cqe(&c);
			tag = (size_t)src < ntab ? tab[src].tag : 0;
			if (!tag)
				continue;
		} else if (kind & K_CTL) {
			/* A cancellation that found the poll busy: again. */
			if (tag && c.res == -EALREADY)
				resubmit |= queue_cancel(src, tag, kind & K_BOTH) == 0;
			continue;
		} else if (c.flags & CQE_F_MORE) {
			e = c.res > 0 ? events_of((uint32_t)c.res) : 0;
		} else {
			e = ended(src, tag, kind, c.res, &resubmit);
		}
		if (!e)
			continue;
		ev[out].src = src;
		ev[out].tag = tag;
		ev[out].events = e;
		out++;
	}
	store_release(cq_head, head);
	if (locked) {
		if (resubmit)
			(void)shim_uring_submit();
		shim_uring_unlock();
	}
	return out;
}

/* ---- The wake --------------------------------------------------------------
 * shim_io_wake may be called anywhere, a signal handler included
 * (weft_fiber_interrupt's kick of the workers), which may have stopped a
 * thread holding shim_uring_lock: so it never waits for the lock. The waker
 * that sets wake_pending owns the next NOP. It raises wake_wanted, fences,
 * and tries the lock: taken, it submits the NOP itself; held, the holder
 * submits it as it lets go (shim_uring_unlock: it looks at wake_wanted before
 * unlocking, and again after unlocking and a fence). The waker's store,
 * fence, try and the holder's unlock, fence, load are Dekker's handshake:
 * at least one of the two sees the other, so either the try succeeds or
 * the holder sees the flag (and if its own try then fails, the next holder
 * is in the same place). The NOP is submitted by whichever thread that is,
 * and posts its completion inline, in that thread's io_uring_enter: it
 * reaches the poller without waiting for any thread's task work.
 *
 * The poller clears wake_pending after it reaped the NOP's completion, so
 * while it is set a NOP is on its way, in the CQ ring, or being reaped:
 * either way the poll returns (or the next one at once), and a later waker
 * submits nothing. The clear is an exchange, as in epoll.c, so that it
 * synchronizes with the last waker that found the flag set: what that
 * waker stored before its wake is seen by the look for work after the
 * poll. */

/* Under the lock: the NOP a waker asked for (wake_wanted), if any. One
 * that cannot be submitted leaves wake_pending clear: the next wake tries
 * again (what was queued goes with the next submission). */
static void submit_wake(void)
{
	if (!atomic_exchange(&wake_wanted, 0))
		return;
	struct uring_sqe *s = atomic_load(&ringfd) >= 0 ? shim_uring_sqe_get() : NULL;
	if (s) {
		s->opcode = OP_NOP;
		s->user_data = WAKE_UD;
		shim_uring_sqe_put();
	}
	if (!s || shim_uring_submit() < 0)
		atomic_exchange(&wake_pending, 0);
}

void shim_uring_unlock(void)
{
	for (;;) {
		if (atomic_load(&wake_wanted))
			submit_wake();
		pthread_mutex_unlock(&shim_uring_lock);
		full_fence();
		/* A waker whose try failed while we held the lock, after the
		 * look above: ours to serve, unless a new holder has it. */
		if (!atomic_load(&wake_wanted) || pthread_mutex_trylock(&shim_uring_lock) != 0)
			return;
	}
}

/* Under the lock (shim_uring_report): have the poller's wait end. */
static void queue_wake(void)
{
	if (atomic_exchange(&wake_pending, 1))
		return;
	atomic_store(&wake_wanted, 1);
	submit_wake();
}

/* The poller, having taken the NOP's completion from the CQ ring. */
static void wake_reaped(void) { atomic_exchange(&wake_pending, 0); }

/* A try, never a wait: glibc's and musl's trylock of a normal mutex is one
 * compare-and-swap, which a signal handler may make whatever the thread it
 * stopped was doing (it fails if that thread holds the lock or is taking
 * it; the unlock that follows the holder's critical section serves us). */
static void io_wake(void)
{
	if (atomic_load(&ringfd) < 0 || atomic_exchange(&wake_pending, 1))
		return;
	atomic_store(&wake_wanted, 1);
	full_fence();
	if (pthread_mutex_trylock(&shim_uring_lock) == 0)
		shim_uring_unlock();
}

enum shim_feature shim_io_uring_why(const char **what)
{
	*what = why[0] ? why : NULL;
	return why_feat;
}

unsigned shim_io_uring_features(void)
{
	if (atomic_load(&ringfd) < 0)
		return 0;
	unsigned socks = shim_io_uring_completions();
	return in_use | (socks & SHIM_URING_ACCEPT ? 1u << SF_MULTISHOT_ACCEPT : 0) |
	       (socks & SHIM_URING_RECV ? 1u << SF_PBUF_RING | 1u << SF_MULTISHOT_RECV : 0);
}

const struct shim_io_ops shim_io_uring = {
	.name = "io_uring",
	.init = io_init,
	.fini = io_fini,
	.add = io_add,
	.arm = io_arm,
	.del = io_del,
	.poll = io_poll,
	.wake = io_wake,
};
