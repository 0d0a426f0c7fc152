/* SPDX-License-Identifier: MIT */
/* Ethernet frames for lwIP's netifs: a TAP device ("tap:NAME"), whose frames
 * never touch the kernel's TCP/IP; an AF_PACKET socket on an existing
 * interface ("packet:IFNAME"), which shares that interface and its MAC with
 * the kernel; or an AF_XDP socket on one receive queue of an existing
 * interface ("xdp:IFNAME[:QUEUE]", xdp.c), which takes that queue's frames
 * from the kernel before its stack sees them. Each device is one
 * non-blocking fd: the I/O source. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netpacket/packet.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "csum.h"
#include "linux/xdp.h"
#include "shim.h"

/* Kernel ABI from <linux/if_tun.h> and <linux/if_ether.h>, spelled out: a
 * libc without the kernel's headers (Debian's musl-gcc) has no such files. */
#ifndef TUNSETIFF
#define TUNSETIFF _IOW('T', 202, int)
#endif
#ifndef IFF_TAP
#define IFF_TAP 0x0002
#endif
#ifndef IFF_NO_PI
#define IFF_NO_PI 0x1000
#endif
#ifndef ETH_P_ALL
#define ETH_P_ALL 0x0003
#endif
#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23 /* Linux 4.20 */
#endif
#ifndef PACKET_AUXDATA
#define PACKET_AUXDATA 8
#endif
#ifndef TP_STATUS_CSUMNOTREADY
#define TP_STATUS_CSUMNOTREADY (1 << 3)
#endif
/* struct tpacket_auxdata of <linux/if_packet.h> (not every libc has it). */
struct auxdata {
	uint32_t tp_status, tp_len, tp_snaplen;
	uint16_t tp_mac, tp_net, tp_vlan_tci, tp_vlan_tpid;
};

#define MAX_IOV 16
#define TAP_TXQUEUELEN 20000
#define PACKET_RCVBUF (4 << 20)

enum { KIND_TAP = 1, KIND_PACKET = 2, KIND_XDP = 3 };

struct shim_netdev {
	int fd;
	int kind;
	struct shim_xdp *xdp; /* KIND_XDP */
};

/* Copy a NUL-terminated name, cut to fit cap bytes with its NUL. */
static void copy_name(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* An interface ioctl by name, on any socket. */
static int if_ioctl(int s, unsigned long req, const char *name, struct ifreq *ifr)
{
	copy_name(ifr->ifr_name, IFNAMSIZ, name);
	return ioctl(s, req, ifr) == 0 ? 0 : -errno;
}

static unsigned if_mtu(int s, const char *name)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	if (if_ioctl(s, SIOCGIFMTU, name, &ifr) != 0 || ifr.ifr_mtu <= 0)
		return 1500;
	return (unsigned)ifr.ifr_mtu;
}

/* A locally administered unicast address (bit 1 set, bit 0 clear in the
 * first byte), so it cannot collide with a vendor's. */
static void random_mac(uint8_t mac[6])
{
	ssize_t got = getrandom(mac, 6, GRND_NONBLOCK);
	if (got != 6) {
		int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
		got = fd >= 0 ? read(fd, mac, 6) : -1;
		if (fd >= 0)
			close(fd);
	}
	if (got != 6) { /* no entropy at all: at least differ per process and moment */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t x = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		x ^= (uint64_t)getpid() << 40;
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u; /* splitmix64's finalizer */
		x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
		x ^= x >> 31;
		memcpy(mac, &x, 6);
	}
	mac[0] = (uint8_t)((mac[0] | 0x02) & ~0x01);
}

/* Create TAP device name, or attach to it if it exists and is free. The
 * kernel side gets no address from us: the host's side of the link is the
 * administrator's business. We do bring the link up and lengthen its
 * transmit queue (the kernel's queue towards us: at the default 1000, a
 * burst from the host while no worker reads is dropped), but only a process
 * with CAP_NET_ADMIN may; a user attaching to a persistent device made for
 * it by `ip tuntap add ... user U` gets -EPERM for both, and that is fine:
 * whoever made the device configures it. */
static int open_tap(const char *name, int *fdp, struct shim_netdev_info *info)
{
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	copy_name(ifr.ifr_name, IFNAMSIZ, name);
	int err = ioctl(fd, TUNSETIFF, &ifr) == 0 ? 0 : -errno;
	int s = err ? -1 : socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (!err && s < 0)
		err = -errno;
	if (!err) {
		/* The kernel's name: a template like "tap%d" comes back filled. */
		char real[IFNAMSIZ];
		copy_name(real, sizeof real, ifr.ifr_name);

		memset(&ifr, 0, sizeof ifr);
		err = if_ioctl(s, SIOCGIFFLAGS, real, &ifr);
		if (!err && !(ifr.ifr_flags & IFF_UP)) {
			ifr.ifr_flags |= IFF_UP;
			err = if_ioctl(s, SIOCSIFFLAGS, real, &ifr);
		}
		if (err == -EPERM)
			err = 0;
		if (!err) {
			memset(&ifr, 0, sizeof ifr);
			ifr.ifr_qlen = TAP_TXQUEUELEN;
			err = if_ioctl(s, SIOCSIFTXQLEN, real, &ifr);
			if (err == -EPERM)
				err = 0;
		}
		if (!err) {
			random_mac(info->mac);
			info->mtu = if_mtu(s, real);
			copy_name(info->name, sizeof info->name, real);
		}
		close(s);
	}
	if (err) {
		close(fd);
		return err;
	}
	*fdp = fd;
	return 0;
}

/* The MAC, MTU and name of an existing interface, asked on socket s: 0,
 * -ENODEV (no such interface, or not Ethernet: loopback would hand lwIP its
 * own frames back, a tun device has no link header at all), or -errno. */
static int ether_info(int s, const char *name, struct shim_netdev_info *info)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	int err = if_ioctl(s, SIOCGIFHWADDR, name, &ifr);
	if (!err && ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER)
		err = -ENODEV;
	if (!err) {
		memcpy(info->mac, ifr.ifr_hwaddr.sa_data, 6);
		info->mtu = if_mtu(s, name);
		copy_name(info->name, sizeof info->name, name);
	}
	return err;
}

/* A raw socket on an existing interface, with that interface's MAC: the
 * kernel and lwIP then both see every frame for it, each taking what is
 * addressed to its own IP, so lwIP needs an address the host does not use.
 * Frames the kernel sends there are outgoing frames to a packet socket, ours
 * included; PACKET_IGNORE_OUTGOING (Linux 4.20) spares us copying them, and
 * recv drops any that still come, so lwIP never hears itself. */
static int open_packet(const char *name, int *fdp, struct shim_netdev_info *info)
{
	unsigned idx = if_nametoindex(name);
	if (idx == 0)
		return -ENODEV;
	/* Protocol 0: the socket hears nothing until bind names the interface
	 * and ETH_P_ALL, so no other interface's frames queue meanwhile. */
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno == EAFNOSUPPORT ? -ENODEV : -errno;

	int err = ether_info(fd, name, info);
	if (!err) {
		/* A deep receive queue against bursts while no worker reads:
		 * RCVBUFFORCE passes rmem_max but needs CAP_NET_ADMIN. */
		int size = PACKET_RCVBUF, one = 1;
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) != 0)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
		setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
		/* Each frame's status: whether its checksum is left to us. */
		if (setsockopt(fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof one) != 0)
			err = -errno;

		struct sockaddr_ll sll;
		memset(&sll, 0, sizeof sll);
		sll.sll_family = AF_PACKET;
		sll.sll_protocol = htons(ETH_P_ALL);
		sll.sll_ifindex = (int)idx;
		if (!err && bind(fd, (struct sockaddr *)&sll, sizeof sll) != 0)
			err = -errno;
	}
	if (err) {
		close(fd);
		return err;
	}
	*fdp = fd;
	return 0;
}

/* An AF_XDP socket on queue QUEUE (0 to 1023, default 0) of IFNAME, spec
 * "IFNAME[:QUEUE]", with the interface's MAC: the queue's frames are lwIP's
 * alone. The spec is checked before the interface is looked for. */
static int open_xdp(const char *spec, struct shim_netdev *d, struct shim_netdev_info *info)
{
	char name[IFNAMSIZ];
	const char *colon = strchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
	if (n == 0 || n >= IFNAMSIZ || (colon && !colon[1])) {
		shim_xdp_refused(spec, "not IFNAME[:QUEUE] (a name of 1 to 15 bytes)", -EINVAL);
		return -EINVAL;
	}
	memcpy(name, spec, n);
	name[n] = '\0';
	unsigned queue = 0;
	for (const char *p = colon ? colon + 1 : ""; *p; p++)
		if (*p < '0' || *p > '9' || (queue = queue * 10 + (unsigned)(*p - '0')) > 1023) {
			shim_xdp_refused(spec, "the queue is not a number from 0 to 1023", -EINVAL);
			return -EINVAL;
		}
	unsigned idx = if_nametoindex(name);
	int s = idx ? socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0) : -1;
	if (idx && s < 0)
		return -errno;
	int err = idx ? ether_info(s, name, info) : -ENODEV;
	if (s >= 0)
		close(s);
	if (err) {
		shim_xdp_refused(spec, idx ? "not an Ethernet interface" : "no such interface",
				 err);
		return err;
	}
	info->batched = true; /* sends wait on the TX ring for shim_netdev_flush */
	return shim_xdp_open(spec, idx, queue, info->mtu, &d->xdp, &d->fd);
}

static int netdev_open(const char *spec, struct shim_netdev **out, struct shim_netdev_info *info)
{
	if (!spec || !out || !info)
		return -EINVAL;
	/* The bare-metal shim's kinds: well formed, but not here. */
	if (strcmp(spec, "virtio") == 0 || strncmp(spec, "virtio:", 7) == 0 ||
	    strcmp(spec, "dwmac") == 0)
		return -ENODEV;
	const char *colon = strchr(spec, ':');
	if (!colon || colon == spec)
		return -EINVAL;
	const char *name = colon + 1;
	size_t kindlen = (size_t)(colon - spec), len = strlen(name);
	int kind;
	if (kindlen == 3 && memcmp(spec, "tap", 3) == 0)
		kind = KIND_TAP;
	else if (kindlen == 6 && memcmp(spec, "packet", 6) == 0)
		kind = KIND_PACKET;
	else if (kindlen == 3 && memcmp(spec, "xdp", 3) == 0)
		kind = KIND_XDP;
	else
		return -ENODEV;
	/* xdp's name may carry ":QUEUE": open_xdp checks its own. */
	if (len == 0 || (kind != KIND_XDP && len >= IFNAMSIZ))
		return -EINVAL;

	struct shim_netdev *d = calloc(1, sizeof *d);
	if (!d)
		return -ENOMEM;
	struct shim_netdev_info tmp;
	memset(&tmp, 0, sizeof tmp);
	d->fd = -1;
	int err = kind == KIND_TAP      ? open_tap(name, &d->fd, &tmp)
		  : kind == KIND_PACKET ? open_packet(name, &d->fd, &tmp)
					: open_xdp(name, d, &tmp);
	if (err) {
		free(d);
		return err;
	}
	d->kind = kind;
	tmp.src = d->fd;
	*info = tmp;
	*out = d;
	return 0;
}

/* The runtime promises not to touch errno: none of ours may leak out. */
int shim_netdev_open(const char *spec, struct shim_netdev **out, struct shim_netdev_info *info)
{
	int saved = errno;
	int r = netdev_open(spec, out, info);
	errno = saved;
	return r;
}

/* A frame whose sender left its TCP or UDP checksum to the device (a veth
 * peer with checksum offload on) gets it here: lwIP checks every checksum
 * and would drop it. A TAP device's frames never need this (the kernel
 * completes them for a TAP without a virtio-net header). */
static void finish_checksum(struct msghdr *msg, void *buf, size_t len)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_AUXDATA ||
		    c->cmsg_len < CMSG_LEN(sizeof(struct auxdata)))
			continue;
		struct auxdata aux;
		memcpy(&aux, CMSG_DATA(c), sizeof aux);
		if (aux.tp_status & TP_STATUS_CSUMNOTREADY)
			shim_csum_complete(buf, len, aux.tp_net);
	}
}

/* A TAP fd is read with read(), which cannot report a frame's full length,
 * so a byte of slack after buf catches one that did not fit. A packet socket
 * says it itself with MSG_TRUNC. Either way the frame is gone. */
static long netdev_recv(struct shim_netdev *d, void *buf, size_t cap)
{
	for (;;) {
		ssize_t r;
		if (d->kind == KIND_TAP) {
			char slack;
			struct iovec iov[2] = {{buf, cap}, {&slack, 1}};
			r = readv(d->fd, iov, 2);
		} else {
			struct sockaddr_ll sll;
			memset(&sll, 0, sizeof sll);
			struct iovec iov = {buf, cap};
			union {
				struct cmsghdr align;
				char buf[CMSG_SPACE(sizeof(struct auxdata))];
			} control;
			struct msghdr msg = {.msg_name = &sll,
					     .msg_namelen = sizeof sll,
					     .msg_iov = &iov,
					     .msg_iovlen = 1,
					     .msg_control = &control,
					     .msg_controllen = sizeof control};
			r = recvmsg(d->fd, &msg, MSG_TRUNC);
			/* Our own frames, or the host's, on their way out; and
			 * with a promiscuous interface, frames for other MACs. */
			if (r >= 0 && (sll.sll_pkttype == PACKET_OUTGOING ||
				       sll.sll_pkttype == PACKET_OTHERHOST))
				continue;
			if (r >= 0 && (size_t)r <= cap)
				finish_checksum(&msg, buf, (size_t)r);
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		}
		if ((size_t)r > cap)
			return -EMSGSIZE;
		return r;
	}
}

int shim_netdev_recv(struct shim_netdev *d, void *buf, size_t cap)
{
	if (!d || (!buf && cap))
		return -EINVAL;
	int saved = errno;
	long r = d->kind == KIND_XDP ? shim_xdp_recv(d->xdp, buf, cap) : netdev_recv(d, buf, cap);
	errno = saved;
	return (int)r;
}

int shim_netdev_send(struct shim_netdev *d, const struct shim_iov *iov, int n)
{
	if (!d || !iov || n <= 0 || n > MAX_IOV)
		return -EINVAL;
	if (d->kind == KIND_XDP) {
		int saved = errno;
		int r = shim_xdp_send(d->xdp, iov, n);
		errno = saved;
		return r;
	}
	struct iovec v[MAX_IOV];
	for (int i = 0; i < n; i++) {
		v[i].iov_base = (void *)iov[i].base;
		v[i].iov_len = iov[i].len;
	}
	int saved = errno, err;
	for (;;) {
		ssize_t r;
		if (d->kind == KIND_TAP) {
			r = writev(d->fd, v, n);
		} else {
			/* Bound to the interface: no address needed. */
			struct msghdr msg;
			memset(&msg, 0, sizeof msg);
			msg.msg_iov = v;
			msg.msg_iovlen = n;
			r = sendmsg(d->fd, &msg, 0);
		}
		if (r >= 0) {
			err = 0;
			break;
		}
		if (errno == EINTR)
			continue;
		/* A full socket buffer, or a full queue behind the device. */
		err = errno == EWOULDBLOCK || errno == ENOBUFS ? -EAGAIN : -errno;
		break;
	}
	errno = saved;
	return err;
}

/* TAP and AF_PACKET send each frame in its own system call: nothing
 * waits. AF_XDP's send leaves frames on its TX ring for one kick. */
int shim_netdev_flush(struct shim_netdev *d)
{
	if (!d || d->kind != KIND_XDP)
		return 0;
	int saved = errno;
	int r = shim_xdp_flush(d->xdp);
	errno = saved;
	return r;
}

void shim_netdev_close(struct shim_netdev *d)
{
	if (!d)
		return;
	int saved = errno;
	if (d->kind == KIND_XDP)
		shim_xdp_close(d->xdp); /* its fd too */
	else
		close(d->fd);
	errno = saved;
	free(d);
}
