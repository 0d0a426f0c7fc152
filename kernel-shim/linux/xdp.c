/* SPDX-License-Identifier: MIT */
/* An AF_XDP device ("xdp:IFNAME[:QUEUE]"): frames of one receive queue of an
 * existing interface go straight from the driver into memory this process
 * shares with the kernel (the UMEM), past the kernel's network stack, and
 * frames to send go out the same way.
 *
 * The pieces, all the kernel's own ABI (spelled out below: Debian's musl-gcc
 * has no kernel headers, and neither libxdp nor libbpf is linked):
 * - the UMEM, FRAMES frames of FRAME bytes, half lent to the kernel for
 *   receiving through the fill ring (each comes back on the RX ring with a
 *   frame in it and goes back on the fill ring once copied out), half for
 *   sending (out on the TX ring, back on the completion ring);
 * - an XSKMAP holding the socket at its queue's index, and an XDP program of
 *   five instructions that redirects every frame of the queue to it (or, for
 *   a queue with no socket, lets the kernel have it);
 * - a BPF link attaching the program to the interface: it is detached when
 *   the link's fd closes, so at shim_netdev_close and also when the process
 *   dies any other way (a crash, SIGKILL): nothing is left on the interface.
 *   A kernel without links for XDP (before 5.9: BPF_LINK_CREATE says
 *   -EINVAL) gets the program attached through netlink (RTM_SETLINK with
 *   IFLA_XDP, only if the interface has none), said in one line; it is
 *   detached at shim_netdev_close, but a process killed before that leaves
 *   it on the interface (it then passes every frame to the kernel: the
 *   XSKMAP's slot went with the socket), and the next server is refused
 *   until `ip link set dev IFNAME xdp off`.
 * Copy mode wherever zero-copy is refused (veth, most drivers); zero-copy
 * where the driver offers it. Rings are read and written through cached
 * indexes: one acquire load sees every frame that waits, and the fill ring
 * is given back its frames in batches. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>

#include "linux/feature.h"
#include "linux/xdp.h"

/* ---- Kernel ABI (<linux/if_xdp.h>, <linux/bpf.h>) ------------------------ */

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif
enum {
	XDP_MMAP_OFFSETS_ = 1,
	XDP_RX_RING_ = 2,
	XDP_TX_RING_ = 3,
	XDP_UMEM_REG_ = 4,
	XDP_UMEM_FILL_RING_ = 5,
	XDP_UMEM_COMPLETION_RING_ = 6,
};
enum { BIND_COPY = 1 << 1, BIND_ZEROCOPY = 1 << 2, BIND_NEED_WAKEUP = 1 << 3 };
#define RING_NEED_WAKEUP 1u
#define PGOFF_RX 0ULL
#define PGOFF_TX 0x80000000ULL
#define PGOFF_FILL 0x100000000ULL
#define PGOFF_COMP 0x180000000ULL

struct umem_reg {
	uint64_t addr, len;
	uint32_t chunk_size, headroom, flags, tx_metadata_len;
};
struct ring_offset {
	uint64_t producer, consumer, desc, flags;
};
struct mmap_offsets {
	struct ring_offset rx, tx, fr, cr;
};
struct sockaddr_xdp_ {
	uint16_t family, flags;
	uint32_t ifindex, queue_id, shared_umem_fd;
};
struct desc {
	uint64_t addr;
	uint32_t len, options;
};

enum { BPF_MAP_CREATE_ = 0, BPF_MAP_UPDATE_ELEM_ = 2, BPF_PROG_LOAD_ = 5, BPF_LINK_CREATE_ = 28 };
enum {
	MAP_XSKMAP = 17,
	PROG_XDP = 6,
	ATTACH_XDP = 37,
	HELPER_REDIRECT_MAP = 51,
	PSEUDO_MAP_FD = 1
};
enum { XDP_PASS_ = 2 };

/* The fields of union bpf_attr each command reads, in its layout, and room
 * to 128 bytes: the kernel wants what it does not know to be zero. */
union bpf_attr_ {
	struct {
		uint32_t map_type, key_size, value_size, max_entries, map_flags;
	} map;
	struct {
		uint32_t map_fd, pad;
		uint64_t key, value, flags;
	} elem;
	struct {
		uint32_t prog_type, insn_cnt;
		uint64_t insns, license;
		uint32_t log_level, log_size;
		uint64_t log_buf;
		uint32_t kern_version, prog_flags;
		char prog_name[16];
	} prog;
	struct {
		uint32_t prog_fd, target_ifindex, attach_type, flags;
	} link;
	uint8_t room[128];
};

/* rtnetlink (<linux/netlink.h>, <linux/rtnetlink.h>, <linux/if_link.h>). */
#ifndef AF_NETLINK
#define AF_NETLINK 16
#endif
enum { NETLINK_ROUTE_ = 0, RTM_SETLINK_ = 19, NLMSG_ERROR_ = 2 };
enum { NLM_F_REQUEST_ = 1, NLM_F_ACK_ = 4, NLA_F_NESTED_ = 1 << 15 };
enum { IFLA_XDP_ = 43, IFLA_XDP_FD_ = 1, IFLA_XDP_FLAGS_ = 3, IFLA_XDP_EXPECTED_FD_ = 8 };
enum { XDP_FLAGS_UPDATE_IF_NOEXIST_ = 1, XDP_FLAGS_REPLACE_ = 16 };
struct nl_hdr {
	uint32_t len;
	uint16_t type, flags;
	uint32_t seq, pid;
};
struct if_info {
	uint8_t family, pad;
	uint16_t type;
	int32_t index;
	uint32_t flags, change;
};
struct nl_attr {
	uint16_t len, type;
};

struct insn {
	uint8_t code;
	uint8_t regs; /* dst in the low nibble, src in the high (little-endian) */
	int16_t off;
	int32_t imm;
};

/* ---- The device ------------------------------------------------------------ */

#define FRAME 2048u
/* 8 MiB of UMEM, every page pinned by the kernel at XDP_UMEM_REG, so all
 * resident from then on. Without CAP_IPC_LOCK the pages count, with the
 * user's other locked memory, against RLIMIT_MEMLOCK, and a lower limit
 * makes the registration fail with ENOBUFS (said by setup). */
#define FRAMES 4096u
#define RX_FRAMES (FRAMES / 2) /* lent to the kernel to receive into */
#define RING 2048u             /* entries in each ring (a power of two) */
#define FILL_BATCH 32u         /* frames given back to the fill ring at once */
/* Frames put on the TX ring before send kicks by itself, without waiting
 * for the batch's shim_xdp_flush: a copy-mode kick sends at most 32 (the
 * kernel's TX_BATCH_SIZE in xsk_generic_xmit) and says EAGAIN for the rest,
 * so no kick is left more than one kick's worth to send. */
#define KICK_BATCH 32u
/* The fill ring holds every receive frame and the TX ring every send frame,
 * so neither can be full while we hold a frame for it: refill's batch always
 * fits, and a free send frame always has a slot. */
_Static_assert(RING >= RX_FRAMES && RING >= FRAMES - RX_FRAMES, "a ring per frame");

struct ring {
	_Atomic uint32_t *producer, *consumer;
	uint32_t *flags;
	void *desc;
	uint32_t mask;
	uint32_t cached_prod, cached_cons; /* ours, and the other side's as last read */
	void *map;
	size_t map_len;
};

struct shim_xdp {
	int fd, map_fd, prog_fd, link_fd;
	bool netlink; /* the program attached through netlink, not a link */
	uint32_t ifindex, queue;
	uint8_t *umem;
	struct ring rx, tx, fill, comp;
	uint64_t refill[FILL_BATCH]; /* received frames not yet back on the fill ring */
	unsigned nrefill;
	uint64_t *txfree; /* send frames not in flight */
	unsigned ntxfree;
	bool copy;           /* copy mode: sends go out only on a sendto */
	unsigned unkicked;   /* frames on the TX ring since the last kick */
	unsigned long kicks; /* sendto kicks made (shim_xdp_kicks) */
};

static long sys_bpf(int cmd, union bpf_attr_ *a)
{
	long r = syscall(SYS_bpf, cmd, a, sizeof *a);
	return r < 0 ? -errno : r;
}

void shim_xdp_refused(const char *spec, const char *why, int err)
{
	char msg[256];
	int n = snprintf(msg, sizeof msg, "weft: WEFT_NETIF=xdp:%s: %s (%s)\n", spec, why,
			 strerror(-err));
	if (n > 0)
		shim_console_write(msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
}

static int map_ring(struct shim_xdp *x, struct ring *r, const struct ring_offset *o, uint64_t pgoff,
		    size_t entry)
{
	r->map_len = o->desc + RING * entry;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, x->fd,
		      (off_t)pgoff);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -errno;
	}
	uint8_t *b = r->map;
	r->producer = (_Atomic uint32_t *)(b + o->producer);
	r->consumer = (_Atomic uint32_t *)(b + o->consumer);
	r->flags = (uint32_t *)(b + o->flags);
	r->desc = b + o->desc;
	r->mask = RING - 1;
	return 0;
}

/* Entries a consumer can take: what the producer published beyond ours. */
static uint32_t cons_avail(struct ring *r)
{
	uint32_t n = r->cached_prod - r->cached_cons;
	if (n == 0) {
		r->cached_prod = atomic_load_explicit(r->producer, memory_order_acquire);
		n = r->cached_prod - r->cached_cons;
	}
	return n;
}

static void cons_release(struct ring *r, uint32_t n)
{
	r->cached_cons += n;
	atomic_store_explicit(r->consumer, r->cached_cons, memory_order_release);
}

/* Room a producer has: the ring's size beyond what the consumer has not
 * taken yet. */
static uint32_t prod_room(struct ring *r)
{
	uint32_t room = RING - (r->cached_prod - r->cached_cons);
	if (room == 0) {
		r->cached_cons = atomic_load_explicit(r->consumer, memory_order_acquire);
		room = RING - (r->cached_prod - r->cached_cons);
	}
	return room;
}

static void prod_submit(struct ring *r, uint32_t n)
{
	r->cached_prod += n;
	atomic_store_explicit(r->producer, r->cached_prod, memory_order_release);
}

/* Give the kernel back what we copied out, FILL_BATCH at a time (or all,
 * when force). */
static void refill(struct shim_xdp *x, bool force)
{
	if (x->nrefill == 0 || (!force && x->nrefill < FILL_BATCH))
		return;
	uint32_t room = prod_room(&x->fill);
	uint32_t n = x->nrefill < room ? x->nrefill : room;
	uint64_t *slots = x->fill.desc;
	for (uint32_t i = 0; i < n; i++)
		slots[(x->fill.cached_prod + i) & x->fill.mask] = x->refill[--x->nrefill];
	prod_submit(&x->fill, n);
	/* A zero-copy driver that ran dry waits to be told there is more. */
	if (atomic_load_explicit((_Atomic uint32_t *)x->fill.flags, memory_order_relaxed) &
	    RING_NEED_WAKEUP)
		(void)recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

/* Frames the kernel has sent come back to the free list. */
static void reclaim(struct shim_xdp *x)
{
	uint32_t n = cons_avail(&x->comp);
	const uint64_t *slots = x->comp.desc;
	for (uint32_t i = 0; i < n; i++)
		x->txfree[x->ntxfree++] = slots[(x->comp.cached_cons + i) & x->comp.mask];
	if (n)
		cons_release(&x->comp, n);
}

/* Attach program fd to the interface through netlink (fd -1: detach the
 * one attached, expected, if the kernel knows IFLA_XDP_EXPECTED_FD, 5.7).
 * 0 or the kernel's -errno. */
static int xdp_netlink(uint32_t ifindex, int fd, int expected, uint32_t flags)
{
	struct {
		struct nl_hdr h;
		struct if_info i;
		struct nl_attr xdp;
		struct nl_attr a_fd;
		int32_t fd;
		struct nl_attr a_flags;
		uint32_t flags;
		struct nl_attr a_exp;
		int32_t exp;
	} req;
	memset(&req, 0, sizeof req);
	size_t len = expected >= 0 ? sizeof req : offsetof(__typeof__(req), a_exp);
	req.h.len = (uint32_t)len;
	req.h.type = RTM_SETLINK_;
	req.h.flags = NLM_F_REQUEST_ | NLM_F_ACK_;
	req.h.seq = 1;
	req.i.index = (int32_t)ifindex;
	req.xdp.len = (uint16_t)(len - offsetof(__typeof__(req), xdp));
	req.xdp.type = IFLA_XDP_ | NLA_F_NESTED_;
	req.a_fd = (struct nl_attr){8, IFLA_XDP_FD_};
	req.fd = fd;
	req.a_flags = (struct nl_attr){8, IFLA_XDP_FLAGS_};
	req.flags = flags;
	req.a_exp = (struct nl_attr){8, IFLA_XDP_EXPECTED_FD_};
	req.exp = expected;
	int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE_);
	if (nl < 0)
		return -errno;
	int r = -EIO;
	if (send(nl, &req, len, 0) != (ssize_t)len) {
		r = -errno;
	} else {
		struct {
			struct nl_hdr h;
			int32_t error;
			char rest[512];
		} ans;
		struct timeval tv = {.tv_sec = 5};
		setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		ssize_t n = recv(nl, &ans, sizeof ans, 0);
		if (n < 0)
			r = -errno;
		else if ((size_t)n >= sizeof ans.h + sizeof ans.error && ans.h.type == NLMSG_ERROR_)
			r = ans.error; /* 0: the acknowledgement */
	}
	close(nl);
	return r;
}

/* The XSKMAP with our socket at its queue, the program, the link (or,
 * without links for XDP, netlink). */
static int attach(struct shim_xdp *x, const char *name)
{
	union bpf_attr_ a;
	memset(&a, 0, sizeof a);
	a.map.map_type = MAP_XSKMAP;
	a.map.key_size = 4;
	a.map.value_size = 4;
	a.map.max_entries = x->queue + 1;
	long r = sys_bpf(BPF_MAP_CREATE_, &a);
	if (r < 0) {
		shim_xdp_refused(name,
				 r == -EPERM ? "no right to make BPF maps (CAP_BPF or root)"
					     : "the kernel made no XSKMAP",
				 (int)r);
		return (int)r;
	}
	x->map_fd = (int)r;
	uint32_t key = x->queue, val = (uint32_t)x->fd;
	memset(&a, 0, sizeof a);
	a.elem.map_fd = (uint32_t)x->map_fd;
	a.elem.key = (uint64_t)(uintptr_t)&key;
	a.elem.value = (uint64_t)(uintptr_t)&val;
	r = sys_bpf(BPF_MAP_UPDATE_ELEM_, &a);
	if (r < 0) {
		shim_xdp_refused(name, "the socket could not be put in the XSKMAP", (int)r);
		return (int)r;
	}

	/* r2 = ctx->rx_queue_index; r1 = the map; r3 = XDP_PASS (what a queue
	 * without a socket gets); return bpf_redirect_map(r1, r2, r3). */
	const struct insn prog[] = {
		{0x61, 2 | 1 << 4, 16, 0},                    /* ldxw r2, [r1 + 16] */
		{0x18, 1 | PSEUDO_MAP_FD << 4, 0, x->map_fd}, /* lddw r1, map */
		{0, 0, 0, 0},                                 /* (its upper half) */
		{0xb7, 3, 0, XDP_PASS_},                      /* mov r3, XDP_PASS */
		{0x85, 0, 0, HELPER_REDIRECT_MAP},            /* call bpf_redirect_map */
		{0x95, 0, 0, 0},                              /* exit */
	};
	static const char license[] = "Dual MIT/GPL";
	memset(&a, 0, sizeof a);
	a.prog.prog_type = PROG_XDP;
	a.prog.insn_cnt = sizeof prog / sizeof prog[0];
	a.prog.insns = (uint64_t)(uintptr_t)prog;
	a.prog.license = (uint64_t)(uintptr_t)license;
	memcpy(a.prog.prog_name, "weft_xsk", 9);
	r = sys_bpf(BPF_PROG_LOAD_, &a);
	if (r < 0) {
		shim_xdp_refused(name, "the kernel refused the XDP program", (int)r);
		return (int)r;
	}
	x->prog_fd = (int)r;

	memset(&a, 0, sizeof a);
	a.link.prog_fd = (uint32_t)x->prog_fd;
	a.link.target_ifindex = x->ifindex;
	a.link.attach_type = ATTACH_XDP;
	/* A kernel without links for XDP (before 5.9) says -EINVAL. */
	r = shim_feature_hidden(SF_XDP_LINK) ? -EINVAL : sys_bpf(BPF_LINK_CREATE_, &a);
	bool nl = r == -EINVAL;
	if (nl) {
		(void)shim_feature_fallback(SF_XDP_LINK, NULL);
		r = xdp_netlink(x->ifindex, x->prog_fd, -1, XDP_FLAGS_UPDATE_IF_NOEXIST_);
		if (r == 0) {
			x->netlink = true;
			return 0;
		}
	}
	if (r < 0) {
		shim_xdp_refused(
			name,
			r != -EBUSY && r != -EEXIST ? "the XDP program could not be attached"
			: nl ? "another XDP program is attached to the interface (a server "
			       "killed before it detached leaves its own: ip link set dev "
			       "IFNAME xdp off)"
			     : "another XDP program is attached to the interface",
			(int)r);
		return (int)r;
	}
	x->link_fd = (int)r;
	return 0;
}

static int setup(struct shim_xdp *x, const char *name)
{
	x->fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (x->fd < 0) {
		int e = errno == EAFNOSUPPORT ? -ENODEV : -errno;
		shim_xdp_refused(
			name, e == -ENODEV ? "this kernel has no AF_XDP" : "no AF_XDP socket", e);
		return e;
	}
	x->umem = mmap(NULL, (size_t)FRAMES * FRAME, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x->umem == MAP_FAILED) {
		x->umem = NULL;
		return -ENOMEM;
	}
	struct umem_reg reg = {
		(uint64_t)(uintptr_t)x->umem, (uint64_t)FRAMES * FRAME, FRAME, 0, 0, 0};
	uint32_t ring = RING;
	if (setsockopt(x->fd, SOL_XDP, XDP_UMEM_REG_, &reg, sizeof reg) ||
	    setsockopt(x->fd, SOL_XDP, XDP_UMEM_FILL_RING_, &ring, sizeof ring) ||
	    setsockopt(x->fd, SOL_XDP, XDP_UMEM_COMPLETION_RING_, &ring, sizeof ring) ||
	    setsockopt(x->fd, SOL_XDP, XDP_RX_RING_, &ring, sizeof ring) ||
	    setsockopt(x->fd, SOL_XDP, XDP_TX_RING_, &ring, sizeof ring)) {
		int e = -errno;
		shim_xdp_refused(name, "the UMEM and its rings were refused", e);
		return e;
	}
	struct mmap_offsets off;
	socklen_t len = sizeof off;
	if (getsockopt(x->fd, SOL_XDP, XDP_MMAP_OFFSETS_, &off, &len) || len != sizeof off) {
		shim_xdp_refused(name,
				 "the kernel gave no ring offsets (AF_XDP older than Linux 5.4)",
				 -EOPNOTSUPP);
		return -EOPNOTSUPP;
	}
	int e;
	if ((e = map_ring(x, &x->rx, &off.rx, PGOFF_RX, sizeof(struct desc))) ||
	    (e = map_ring(x, &x->tx, &off.tx, PGOFF_TX, sizeof(struct desc))) ||
	    (e = map_ring(x, &x->fill, &off.fr, PGOFF_FILL, sizeof(uint64_t))) ||
	    (e = map_ring(x, &x->comp, &off.cr, PGOFF_COMP, sizeof(uint64_t)))) {
		shim_xdp_refused(name, "the rings could not be mapped", e);
		return e;
	}
	/* The first half of the UMEM to receive into, the second to send. */
	x->txfree = malloc((FRAMES - RX_FRAMES) * sizeof *x->txfree);
	if (!x->txfree)
		return -ENOMEM;
	for (uint32_t i = RX_FRAMES; i < FRAMES; i++)
		x->txfree[x->ntxfree++] = (uint64_t)i * FRAME;
	uint64_t *slots = x->fill.desc;
	for (uint32_t i = 0; i < RX_FRAMES; i++)
		slots[i & x->fill.mask] = (uint64_t)i * FRAME;
	prod_submit(&x->fill, RX_FRAMES);

	/* Zero-copy where the driver has it, else copy mode, where every
	 * send needs a sendto to go out. */
	struct sockaddr_xdp_ sa = {AF_XDP, BIND_ZEROCOPY | BIND_NEED_WAKEUP, x->ifindex, x->queue,
				   0};
	if (bind(x->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		sa.flags = BIND_COPY | BIND_NEED_WAKEUP;
		x->copy = true;
		if (bind(x->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
			e = -errno;
			shim_xdp_refused(name,
					 e == -EINVAL
						 ? "no such receive queue on the interface"
						 : "the socket could not be bound to the queue",
					 e);
			return e;
		}
	}
	return attach(x, name);
}

void shim_xdp_close(struct shim_xdp *x)
{
	if (!x)
		return;
	/* The link first: the interface's frames go back to the kernel.
	 * Attached through netlink: detached if it is still ours (a kernel
	 * before 5.7 knows no IFLA_XDP_EXPECTED_FD: whatever is there). */
	if (x->link_fd >= 0)
		close(x->link_fd);
	if (x->netlink && xdp_netlink(x->ifindex, -1, x->prog_fd, XDP_FLAGS_REPLACE_) == -EINVAL)
		(void)xdp_netlink(x->ifindex, -1, -1, 0);
	if (x->prog_fd >= 0)
		close(x->prog_fd);
	if (x->map_fd >= 0)
		close(x->map_fd);
	struct ring *rings[] = {&x->rx, &x->tx, &x->fill, &x->comp};
	for (int i = 0; i < 4; i++)
		if (rings[i]->map)
			munmap(rings[i]->map, rings[i]->map_len);
	if (x->fd >= 0)
		close(x->fd);
	if (x->umem)
		munmap(x->umem, (size_t)FRAMES * FRAME);
	free(x->txfree);
	free(x);
}

int shim_xdp_open(const char *spec, unsigned ifindex, unsigned queue, unsigned mtu,
		  struct shim_xdp **out, int *src)
{
	if (mtu + 14 > FRAME) {
		shim_xdp_refused(spec, "the interface's MTU is larger than a UMEM frame holds",
				 -EMSGSIZE);
		return -EMSGSIZE;
	}
	struct shim_xdp *x = calloc(1, sizeof *x);
	if (!x)
		return -ENOMEM;
	x->fd = x->map_fd = x->prog_fd = x->link_fd = -1;
	x->ifindex = ifindex;
	x->queue = queue;
	int e = setup(x, spec);
	if (e) {
		shim_xdp_close(x);
		return e;
	}
	*src = x->fd;
	*out = x;
	return 0;
}

long shim_xdp_recv(struct shim_xdp *x, void *buf, size_t cap)
{
	if (cons_avail(&x->rx) == 0) {
		/* Nothing waits: what was copied out goes back now, or a
		 * quiet link would keep those frames from the kernel. */
		refill(x, true);
		if (cons_avail(&x->rx) == 0)
			return -EAGAIN;
	}
	const struct desc *d = (const struct desc *)x->rx.desc + (x->rx.cached_cons & x->rx.mask);
	uint64_t addr = d->addr;
	uint32_t len = d->len;
	cons_release(&x->rx, 1);
	long r = len <= cap ? (long)len : -EMSGSIZE;
	if (r > 0)
		memcpy(buf, x->umem + addr, len);
	/* The frame's base: in copy and aligned zero-copy mode the address
	 * may carry an offset into it. */
	x->refill[x->nrefill++] = addr - addr % FRAME;
	refill(x, false);
	return r;
}

/* Tell the kernel the TX ring has frames: in copy mode it sends only on
 * this sendto; in zero-copy mode only when the driver asked (NEED_WAKEUP).
 * 0, or -errno for an error that is not the ring's or the device's being
 * busy. */
static int kick(struct shim_xdp *x)
{
	x->unkicked = 0;
	if (!x->copy &&
	    !(atomic_load_explicit((_Atomic uint32_t *)x->tx.flags, memory_order_relaxed) &
	      RING_NEED_WAKEUP))
		return 0;
	x->kicks++;
	if (sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 && errno != EAGAIN &&
	    errno != EBUSY && errno != ENOBUFS && errno != EINTR)
		return -errno;
	return 0;
}

int shim_xdp_send(struct shim_xdp *x, const struct shim_iov *iov, int n)
{
	size_t len = 0;
	for (int i = 0; i < n; i++)
		len += iov[i].len;
	if (len > FRAME)
		return -EMSGSIZE;
	if (x->ntxfree == 0)
		reclaim(x);
	if (x->ntxfree == 0 || prod_room(&x->tx) == 0) {
		/* Full: a kick makes the kernel send and complete. */
		x->kicks++;
		x->unkicked = 0;
		(void)sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
		return -EAGAIN;
	}
	uint64_t addr = x->txfree[--x->ntxfree];
	uint8_t *p = x->umem + addr;
	for (int i = 0; i < n; i++) {
		memcpy(p, iov[i].base, iov[i].len);
		p += iov[i].len;
	}
	struct desc *d = (struct desc *)x->tx.desc + (x->tx.cached_prod & x->tx.mask);
	d->addr = addr;
	d->len = (uint32_t)len;
	d->options = 0;
	prod_submit(&x->tx, 1);
	/* The frame waits on the ring for the batch's end (shim_xdp_flush),
	 * or for a kick's worth of frames. */
	if (++x->unkicked >= KICK_BATCH) {
		int e = kick(x);
		if (e)
			return e;
	}
	reclaim(x);
	return 0;
}

int shim_xdp_flush(struct shim_xdp *x)
{
	int e = x->unkicked ? kick(x) : 0;
	reclaim(x);
	return e;
}

unsigned long shim_xdp_kicks(const struct shim_xdp *x) { return x->kicks; }
