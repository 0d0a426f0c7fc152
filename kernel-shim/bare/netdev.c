/* SPDX-License-Identifier: MIT */
/* Network devices on bare metal: "virtio" is the board's first virtio-net
 * device (drivers/virtio_net.c) on a board whose board.h names
 * virtio-mmio transports (BOARD_VIRTIO_MMIO_BASE); elsewhere there is none.
 * The Linux kinds ("tap:NAME", "packet:IFNAME", "xdp:IFNAME[:QUEUE]") do
 * not exist here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bare.h"
#include "shim.h"
#ifdef BOARD_VIRTIO_MMIO_BASE
#include "virtio_net.h"
#endif

struct shim_netdev {
#ifdef BOARD_VIRTIO_MMIO_BASE
	struct virtio_net *vn;
#else
	int none;
#endif
};

/* -ENODEV for a well-formed spec of a kind this target lacks; -EINVAL for
 * anything else but "virtio". */
static int check_spec(const char *spec)
{
	if (!spec)
		return -EINVAL;
	if (strcmp(spec, "virtio") == 0)
		return 0;
	if (strncmp(spec, "tap:", 4) == 0)
		return spec[4] ? -ENODEV : -EINVAL;
	if (strncmp(spec, "packet:", 7) == 0)
		return spec[7] ? -ENODEV : -EINVAL;
	if (strncmp(spec, "xdp:", 4) == 0)
		return spec[4] ? -ENODEV : -EINVAL;
	return -EINVAL;
}

int shim_netdev_open(const char *spec, struct shim_netdev **out, struct shim_netdev_info *info)
{
	int e = check_spec(spec);
	if (e)
		return e;
	if (!out || !info)
		return -EINVAL;
#ifdef BOARD_VIRTIO_MMIO_BASE
	struct shim_netdev *d = malloc(sizeof *d);
	if (!d)
		return -ENOMEM;
	struct virtio_mmio_slot slots[BOARD_VIRTIO_MMIO_SLOTS];
	for (unsigned i = 0; i < BOARD_VIRTIO_MMIO_SLOTS; i++)
		slots[i] = (struct virtio_mmio_slot){BOARD_VIRTIO_MMIO_BASE +
							     i * BOARD_VIRTIO_MMIO_STRIDE,
						     BOARD_VIRTIO_MMIO_IRQ(i)};
	uint8_t mac[6];
	int src;
	/* WEFT_POLL=1: poll the device instead of taking its interrupt. */
	const char *poll = shim_getenv("WEFT_POLL");
	e = virtio_net_open(slots, BOARD_VIRTIO_MMIO_SLOTS, poll && strcmp(poll, "1") == 0, &d->vn,
			    mac, &src);
	if (e) {
		free(d);
		return e;
	}
	memset(info, 0, sizeof *info);
	memcpy(info->mac, mac, sizeof mac);
	info->mtu = VIRTIO_NET_MTU;
	info->src = src;
	strcpy(info->name, "virtio-net0");
	*out = d;
	return 0;
#else
	return -ENODEV;
#endif
}

int shim_netdev_recv(struct shim_netdev *d, void *buf, size_t cap)
{
#ifdef BOARD_VIRTIO_MMIO_BASE
	return virtio_net_recv(d->vn, buf, cap);
#else
	(void)d, (void)buf, (void)cap;
	return -EBADF;
#endif
}

int shim_netdev_send(struct shim_netdev *d, const struct shim_iov *iov, int n)
{
#ifdef BOARD_VIRTIO_MMIO_BASE
	return virtio_net_send(d->vn, iov, n);
#else
	(void)d, (void)iov, (void)n;
	return -EBADF;
#endif
}

void shim_netdev_close(struct shim_netdev *d)
{
	if (!d)
		return;
#ifdef BOARD_VIRTIO_MMIO_BASE
	virtio_net_close(d->vn);
#endif
	free(d);
}
