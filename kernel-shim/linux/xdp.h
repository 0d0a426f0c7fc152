/* SPDX-License-Identifier: MIT */
/* The AF_XDP device behind shim_netdev's "xdp:IFNAME[:QUEUE]" (xdp.c).
 * Private to the Linux shim: netdev.c forwards to it. */
#ifndef WEFT_SHIM_LINUX_XDP_H
#define WEFT_SHIM_LINUX_XDP_H

#include <stddef.h>

#include "shim.h"

struct shim_xdp;

/* Open queue QUEUE (default 0) of interface IFNAME, as spec "IFNAME[:QUEUE]"
 * says, with frames up to mtu + 14 bytes. On success *src is the fd to wait
 * on. Returns 0, -EINVAL (malformed spec), -ENODEV (no such interface, or
 * no AF_XDP), -EPERM, -EBUSY (another XDP program on the interface), or
 * -errno; every failure but -EINVAL is said on stderr with its cause. */
int shim_xdp_open(const char *spec, unsigned mtu, struct shim_xdp **out, int *src);

/* shim_netdev_recv's and shim_netdev_send's contracts. */
long shim_xdp_recv(struct shim_xdp *x, void *buf, size_t cap);
int shim_xdp_send(struct shim_xdp *x, const struct shim_iov *iov, int n);

/* Detach the program (the interface's frames go back to the kernel) and
 * free everything. */
void shim_xdp_close(struct shim_xdp *x);

#endif
