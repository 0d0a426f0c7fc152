/* SPDX-License-Identifier: MIT */
/* A virtio-net device on virtio-mmio (QEMU's boards): one receive and one
 * transmit queue, the MAC from config space, frames copied through buffers
 * of its own. Legacy (virtio-mmio version 1) and modern (version 2) devices.
 * The caller names the transports to look in (the shim's netdev.c: the
 * board's BOARD_VIRTIO_MMIO_*). One device at a time (the first found). */
#ifndef WEFT_VIRTIO_NET_H
#define WEFT_VIRTIO_NET_H

#include <stddef.h>
#include <stdint.h>

#include "shim.h"

#define VIRTIO_NET_MTU 1500

struct virtio_net;

/* One virtio-mmio transport: its registers and its PLIC source. An empty
 * one reads device ID 0. */
struct virtio_mmio_slot {
	uintptr_t base;
	unsigned irq;
};

/* Find the first virtio-net device among slots[0..n) and bring it up: its
 * RX ring full, an I/O source registered (*src), reported by the device's
 * interrupt (received frames, and transmit slots coming free while the ring
 * is full). With poll, or if the interrupt cannot be had (said on the
 * console), the source is polled instead (the fallback: shim_io_source_irq).
 * Writes its MAC. 0, -ENODEV (no device), -EBUSY (open already), -ENOMEM,
 * -EIO (the device refused the features or the queues). */
int virtio_net_open(const struct virtio_mmio_slot *slots, unsigned n, int poll,
		    struct virtio_net **out, uint8_t mac[6], int *src);

/* What the device did since it was opened (for tests and measurements). */
struct virtio_net_stats {
	uint64_t irqs;      /* interrupts taken */
	uint64_t irq_in;    /* of them, with received frames waiting */
	uint64_t irq_out;   /* of them, freeing room in a full transmit ring */
	uint64_t rx_frames; /* frames received */
	uint64_t tx_frames; /* frames queued to send */
	uint64_t tx_full;   /* sends refused: the ring was full (-EAGAIN) */
	int by_irq;         /* 1: interrupt-driven; 0: polled (the fallback) */
};
void virtio_net_stats(const struct virtio_net *d, struct virtio_net_stats *out);

/* 1 (legacy) or 2 (modern): the transport's version, for messages. */
int virtio_net_version(const struct virtio_net *d);

/* One received frame into buf: its length, -EAGAIN (none waits), -EMSGSIZE
 * (a frame longer than cap was dropped). Any thread. */
int virtio_net_recv(struct virtio_net *d, void *buf, size_t cap);

/* Queue one frame of 14..VIRTIO_NET_MTU + 14 bytes, gathered from n pieces.
 * 0, -EAGAIN (the transmit ring is full), -EMSGSIZE, -EINVAL. Any thread. */
int virtio_net_send(struct virtio_net *d, const struct shim_iov *iov, int n);

/* Reset the device (it stops using the rings), release its interrupt, its
 * I/O source and its memory. */
void virtio_net_close(struct virtio_net *d);

#endif
