/* SPDX-License-Identifier: MIT */
/* The AF_XDP device behind shim_netdev's "xdp:IFNAME[:QUEUE]" (xdp.c).
 * Private to the Linux shim: netdev.c forwards to it. */
#ifndef WEFT_SHIM_LINUX_XDP_H
#define WEFT_SHIM_LINUX_XDP_H

#include <stddef.h>

#include "shim.h"

struct shim_xdp;

/* Open receive queue queue of the interface with index ifindex (spec, as
 * WEFT_NETIF gave it, names it in messages), for frames up to mtu + 14
 * bytes. On success *src is the fd to wait on. Returns 0, -ENODEV (no
 * AF_XDP), -EINVAL (no such queue), -EPERM, -EBUSY (another XDP program or
 * socket on the queue), -EMSGSIZE (an MTU larger than a frame), or -errno;
 * each failure is said on stderr with its cause (shim_xdp_refused). */
int shim_xdp_open(const char *spec, unsigned ifindex, unsigned queue, unsigned mtu,
		  struct shim_xdp **out, int *src);

/* Say on stderr why WEFT_NETIF=xdp:spec could not be had: an error number
 * alone does not name the queue or the missing right. */
void shim_xdp_refused(const char *spec, const char *why, int err);

/* shim_netdev_recv's and shim_netdev_send's contracts. */
long shim_xdp_recv(struct shim_xdp *x, void *buf, size_t cap);
int shim_xdp_send(struct shim_xdp *x, const struct shim_iov *iov, int n);

/* shim_netdev_flush's: send leaves its frames on the TX ring (up to a
 * kick's worth) and this makes the one sendto that sends them all. */
int shim_xdp_flush(struct shim_xdp *x);

/* The sendto kicks made so far (tests count them). */
unsigned long shim_xdp_kicks(const struct shim_xdp *x);

/* Detach the program (the interface's frames go back to the kernel) and
 * free everything. */
void shim_xdp_close(struct shim_xdp *x);

#endif
