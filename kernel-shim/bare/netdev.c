/* SPDX-License-Identifier: MIT */
/* Network devices on bare metal: "virtio" is the board's first virtio-net
 * device (drivers/virtio_net.c) on a board whose board.h names
 * virtio-mmio transports (BOARD_VIRTIO_MMIO_BASE); "dwmac" is the board's
 * Synopsys DWMAC (drivers/dwmac.c, BOARD_DWMAC_BASE), its address from
 * WEFT_MAC= or a locally administered default, the CV1800B's internal PHY
 * brought up first where board.h names it (BOARD_CV1800B_EPHY_BASE);
 * elsewhere there is none. The Linux kinds ("tap:NAME", "packet:IFNAME",
 * "xdp:IFNAME[:QUEUE]") do not exist here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bare.h"
#include "shim.h"
#ifdef BOARD_VIRTIO_MMIO_BASE
#include "virtio_net.h"
#endif
#ifdef BOARD_DWMAC_BASE
#include "dwmac.h"
#ifdef BOARD_CV1800B_EPHY_BASE
#include "cv1800b_ephy.h"
#endif
#endif

struct shim_netdev {
	int dwmac; /* 1: dw, 0: vn */
#ifdef BOARD_VIRTIO_MMIO_BASE
	struct virtio_net *vn;
#endif
#ifdef BOARD_DWMAC_BASE
	struct dwmac *dw;
#endif
};

/* -ENODEV for a well-formed spec of a kind this target lacks; -EINVAL for
 * anything else but "virtio" and "dwmac". */
static int check_spec(const char *spec)
{
	if (!spec)
		return -EINVAL;
	if (strcmp(spec, "virtio") == 0 || strcmp(spec, "dwmac") == 0)
		return 0;
	if (strncmp(spec, "tap:", 4) == 0)
		return spec[4] ? -ENODEV : -EINVAL;
	if (strncmp(spec, "packet:", 7) == 0)
		return spec[7] ? -ENODEV : -EINVAL;
	if (strncmp(spec, "xdp:", 4) == 0)
		return spec[4] ? -ENODEV : -EINVAL;
	return -EINVAL;
}

/* WEFT_POLL=1: poll the device instead of taking its interrupt. (Unused
 * on a board with no network device, board/template's.) */
__attribute__((unused)) static int want_poll(void)
{
	const char *poll = shim_getenv("WEFT_POLL");
	return poll && strcmp(poll, "1") == 0;
}

static int open_virtio(struct shim_netdev *d, struct shim_netdev_info *info)
{
#ifdef BOARD_VIRTIO_MMIO_BASE
	struct virtio_mmio_slot slots[BOARD_VIRTIO_MMIO_SLOTS];
	for (unsigned i = 0; i < BOARD_VIRTIO_MMIO_SLOTS; i++)
		slots[i] = (struct virtio_mmio_slot){BOARD_VIRTIO_MMIO_BASE +
							     i * BOARD_VIRTIO_MMIO_STRIDE,
						     BOARD_VIRTIO_MMIO_IRQ(i)};
	int src;
	int e = virtio_net_open(slots, BOARD_VIRTIO_MMIO_SLOTS, want_poll(), &d->vn, info->mac,
				&src);
	if (e)
		return e;
	info->mtu = VIRTIO_NET_MTU;
	info->src = src;
	strcpy(info->name, "virtio-net0");
	return 0;
#else
	(void)d, (void)info;
	return -ENODEV;
#endif
}

#ifdef BOARD_DWMAC_BASE
/* The board's DWMAC as WEFT_MAC and WEFT_POLL ask, its internal PHY brought
 * up first where there is one: 0, or -EINVAL (WEFT_MAC, said). */
static int dwmac_prepare(struct dwmac_config *cfg)
{
	*cfg = (struct dwmac_config){
		.base = BOARD_DWMAC_BASE, .irq = BOARD_DWMAC_IRQ, .poll = want_poll()};
	if (dwmac_parse_mac(shim_getenv("WEFT_MAC"), cfg->mac)) {
		shim_puts("weft: WEFT_MAC: not a unicast address xx:xx:xx:xx:xx:xx\n");
		return -EINVAL;
	}
#ifdef BOARD_CV1800B_EPHY_BASE
	static const struct cv1800b_ephy_addrs ephy = {
		BOARD_CV1800B_EPHY_BASE, BOARD_CV1800B_EFUSE_BASE, BOARD_CV1800B_PINMUX_BASE,
		BOARD_CV1800B_RTCIO_BASE};
	cv1800b_ephy_init(&ephy);
#endif
	return 0;
}
#endif

int shim_selftest(const char *what)
{
	if (strcmp(what, "eth") == 0) {
#ifdef BOARD_DWMAC_BASE
		struct dwmac_config cfg;
		int e = dwmac_prepare(&cfg);
		return e ? e : dwmac_selftest(&cfg);
#endif
	}
	shim_puts("weft: WEFT_SELFTEST=");
	shim_puts(what);
	shim_puts(": no such self-test on this board (the Duo's: eth)\n");
	return -ENODEV;
}

static int open_dwmac(struct shim_netdev *d, struct shim_netdev_info *info)
{
#ifdef BOARD_DWMAC_BASE
	struct dwmac_config cfg;
	int e = dwmac_prepare(&cfg);
	if (e)
		return e;
	int src;
	e = dwmac_open(&cfg, &d->dw, &src);
	if (e)
		return e;
	d->dwmac = 1;
	memcpy(info->mac, cfg.mac, sizeof cfg.mac);
	info->mtu = DWMAC_MTU;
	info->src = src;
	strcpy(info->name, "dwmac0");
	return 0;
#else
	(void)d, (void)info;
	return -ENODEV;
#endif
}

int shim_netdev_open(const char *spec, struct shim_netdev **out, struct shim_netdev_info *info)
{
	int e = check_spec(spec);
	if (e)
		return e;
	if (!out || !info)
		return -EINVAL;
	struct shim_netdev *d = calloc(1, sizeof *d);
	if (!d)
		return -ENOMEM;
	memset(info, 0, sizeof *info);
	e = strcmp(spec, "dwmac") == 0 ? open_dwmac(d, info) : open_virtio(d, info);
	if (e) {
		free(d);
		return e;
	}
	*out = d;
	return 0;
}

int shim_netdev_recv(struct shim_netdev *d, void *buf, size_t cap)
{
#ifdef BOARD_DWMAC_BASE
	if (d->dwmac)
		return dwmac_recv(d->dw, buf, cap);
#endif
#ifdef BOARD_VIRTIO_MMIO_BASE
	if (!d->dwmac)
		return virtio_net_recv(d->vn, buf, cap);
#endif
	(void)d, (void)buf, (void)cap;
	return -EBADF;
}

int shim_netdev_send(struct shim_netdev *d, const struct shim_iov *iov, int n)
{
#ifdef BOARD_DWMAC_BASE
	if (d->dwmac)
		return dwmac_send(d->dw, iov, n);
#endif
#ifdef BOARD_VIRTIO_MMIO_BASE
	if (!d->dwmac)
		return virtio_net_send(d->vn, iov, n);
#endif
	(void)d, (void)iov, (void)n;
	return -EBADF;
}

/* virtio-net and the DWMAC hand each frame to the device as it is sent. */
int shim_netdev_flush(struct shim_netdev *d)
{
	(void)d;
	return 0;
}

void shim_netdev_close(struct shim_netdev *d)
{
	if (!d)
		return;
#ifdef BOARD_DWMAC_BASE
	if (d->dwmac)
		dwmac_close(d->dw);
#endif
#ifdef BOARD_VIRTIO_MMIO_BASE
	if (!d->dwmac)
		virtio_net_close(d->vn);
#endif
	free(d);
}
