/* SPDX-License-Identifier: MIT */
/* virtio-net over virtio-mmio (virtio 1.x spec, 4.2 and 5.1; 2.6 for the
 * split virtqueue). Queue 0 receives, queue 1 transmits. Each queue lives in
 * one zeroed 4 KiB page from the shim's page allocator: the descriptor table
 * at 0, the available ring after it, the used ring at the next multiple of
 * VQ_ALIGN; the legacy transport is told that alignment (QueueAlign) and the
 * page's number (QueuePFN), the modern one the three addresses. RAM is
 * identity-mapped, so an address is the one the device uses.
 *
 * Every frame is a chain of two descriptors over one 2 KiB buffer: the net
 * header, then the frame. That layout is valid with or without
 * VIRTIO_F_ANY_LAYOUT, which is then not needed. Slot i of a queue is the
 * chain 2i -> 2i + 1 and owns buffer i; receive buffers go back to the
 * device as soon as their frame is copied out, transmit ones are reclaimed
 * from the used ring when the transmit path needs one or the device
 * interrupts. The only features asked for are VIRTIO_NET_F_MAC and, on the
 * modern transport, VIRTIO_F_VERSION_1: no offloads, no mergeable buffers,
 * so the header is 10 bytes (legacy) or 12 (modern) and always zero on
 * transmit.
 *
 * The shim lock (shim_big_lock) guards it; the interrupt handler runs under it
 * too (trap.c). The interrupt handler acknowledges
 * the device, reclaims transmit slots and reports the I/O source: IN while
 * the used ring of the receive queue has entries, OUT while a transmit slot
 * is free, ERR once the device asked for a reset. The device interrupts
 * for every used receive buffer and, only while the transmit ring is full,
 * for used transmit ones; the source is then asked only when armed. Without
 * the interrupt (open's poll, or a PLIC source that could not be had) the
 * source is polled: io.c asks vn_ready at every poll. */
#include "virtio_net.h"

#include <errno.h>
#include <string.h>

#include "driver.h"

/* virtio-mmio registers (4.2.2; the legacy ones from 4.2.4). */
#define MMIO_MAGIC 0x000
#define MMIO_VERSION 0x004
#define MMIO_DEVICE_ID 0x008
#define MMIO_DEVICE_FEATURES 0x010
#define MMIO_DEVICE_FEATURES_SEL 0x014
#define MMIO_DRIVER_FEATURES 0x020
#define MMIO_DRIVER_FEATURES_SEL 0x024
#define MMIO_GUEST_PAGE_SIZE 0x028 /* legacy */
#define MMIO_QUEUE_SEL 0x030
#define MMIO_QUEUE_NUM_MAX 0x034
#define MMIO_QUEUE_NUM 0x038
#define MMIO_QUEUE_ALIGN 0x03c /* legacy */
#define MMIO_QUEUE_PFN 0x040   /* legacy */
#define MMIO_QUEUE_READY 0x044 /* modern */
#define MMIO_QUEUE_NOTIFY 0x050
#define MMIO_INTERRUPT_STATUS 0x060
#define MMIO_INTERRUPT_ACK 0x064
#define MMIO_STATUS 0x070
#define MMIO_QUEUE_DESC_LOW 0x080
#define MMIO_QUEUE_DESC_HIGH 0x084
#define MMIO_QUEUE_DRIVER_LOW 0x090
#define MMIO_QUEUE_DRIVER_HIGH 0x094
#define MMIO_QUEUE_DEVICE_LOW 0x0a0
#define MMIO_QUEUE_DEVICE_HIGH 0x0a4
#define MMIO_CONFIG_GENERATION 0x0fc
#define MMIO_CONFIG 0x100

#define MAGIC 0x74726976 /* "virt" */
#define DEVICE_NET 1
#define INT_VRING 1
#define INT_CONFIG 2

#define S_ACKNOWLEDGE 1
#define S_DRIVER 2
#define S_DRIVER_OK 4
#define S_FEATURES_OK 8
#define S_NEEDS_RESET 64
#define S_FAILED 128

#define F_NET_MAC (1ull << 5)
#define F_VERSION_1 (1ull << 32)

#define DESC_F_NEXT 1
#define DESC_F_WRITE 2
#define AVAIL_F_NO_INTERRUPT 1
#define USED_F_NO_NOTIFY 1

#define RXQ 0
#define TXQ 1
#define VQ_MAX 128 /* descriptors: 64 frames in flight each way */
#define VQ_SLOTS (VQ_MAX / 2)
#define VQ_ALIGN 64
#define BUF_SIZE 2048
#define FRAME_MAX (VIRTIO_NET_MTU + 14)
#define FRAME_MIN 14

struct vring_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct vring_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[];
};

struct vring_used_elem {
	uint32_t id;
	uint32_t len;
};

struct vring_used {
	uint16_t flags;
	uint16_t idx;
	struct vring_used_elem ring[];
};

struct vq {
	unsigned size; /* descriptors, a power of 2; size / 2 slots */
	struct vring_desc *desc;
	volatile struct vring_avail *avail;
	volatile struct vring_used *used;
	uint16_t avail_idx; /* what avail->idx was last set to */
	uint16_t last_used; /* the next used entry to take */
	void *ring_page;
	char *buf[VQ_SLOTS]; /* slot i's buffer; even slots start a page */
};

struct virtio_net {
	uintptr_t base;
	int version;
	unsigned irq;
	unsigned hdr_len;
	int src;
	int broken; /* the device asked for a reset */
	struct vq rx, tx;
	uint16_t tx_free[VQ_SLOTS];
	unsigned tx_nfree;
	int tx_waiting; /* the ring was full: a completion interrupts */
	struct virtio_net_stats st;
};

static struct virtio_net dev0;
static int dev0_open;

static uint32_t rd(const struct virtio_net *d, unsigned off)
{
	return *(volatile uint32_t *)(d->base + off);
}
static void wr(const struct virtio_net *d, unsigned off, uint32_t v)
{
	*(volatile uint32_t *)(d->base + off) = v;
}

int virtio_net_version(const struct virtio_net *d) { return d->version; }

/* Under the shim lock. After the ring writes are visible, unless the device
 * said it needs no kick (used->flags, read after a full fence). */
static void vq_publish(struct virtio_net *d, struct vq *q, unsigned queue, unsigned slot)
{
	q->avail->ring[q->avail_idx % q->size] = (uint16_t)(2 * slot);
	dma_wmb(); /* the entry (and the descriptors) before the index */
	q->avail->idx = ++q->avail_idx;
	dma_mb(); /* the index before reading used->flags and notifying */
	if (!(q->used->flags & USED_F_NO_NOTIFY))
		wr(d, MMIO_QUEUE_NOTIFY, queue);
}

/* Under the shim lock. Take the next used entry: its slot, or -1 if there is
 * none. An entry naming no slot of ours (a device bug) is skipped. */
static int vq_take(struct vq *q, uint32_t *len)
{
	for (unsigned n = 0; n < q->size; n++) {
		if (q->last_used == q->used->idx)
			return -1;
		dma_rmb(); /* the index before the entry it covers */
		struct vring_used_elem e = q->used->ring[q->last_used % q->size];
		q->last_used++;
		if (e.id < q->size && !(e.id & 1)) {
			*len = e.len;
			return (int)(e.id / 2);
		}
	}
	return -1;
}

/* Under the shim lock. Transmit slots the device is done with go back on the
 * free list. */
static void tx_reclaim(struct virtio_net *d)
{
	uint32_t len;
	int slot;
	while (d->tx_nfree < d->tx.size / 2 && (slot = vq_take(&d->tx, &len)) >= 0)
		d->tx_free[d->tx_nfree++] = (uint16_t)slot;
}

/* Under the shim lock: what the device is ready for now (io.c asks when the
 * source is armed and at each poll). Transmit completions interrupt only
 * while the ring is full: then someone may wait for room. Turning them on
 * is followed by another look, for a completion that came before. */
static unsigned vn_ready(void *arg)
{
	struct virtio_net *d = arg;
	unsigned ev = 0;
	if (d->rx.last_used != d->rx.used->idx)
		ev |= SHIM_IO_IN;
	tx_reclaim(d);
	if (!d->tx_nfree) {
		d->tx.avail->flags = 0;
		d->tx_waiting = 1;
		dma_mb();
		tx_reclaim(d);
	}
	if (d->tx_nfree) {
		d->tx.avail->flags = AVAIL_F_NO_INTERRUPT;
		ev |= SHIM_IO_OUT;
	}
	if (d->broken)
		ev |= SHIM_IO_ERR;
	return ev;
}

/* The device interrupts while InterruptStatus is not 0: acknowledge first,
 * so that a buffer used after the look below interrupts again. */
static void vn_irq(void *arg)
{
	struct virtio_net *d = arg;
	uint32_t isr = rd(d, MMIO_INTERRUPT_STATUS);
	wr(d, MMIO_INTERRUPT_ACK, isr);
	dma_mb();
	if ((isr & INT_CONFIG) && (rd(d, MMIO_STATUS) & S_NEEDS_RESET))
		d->broken = 1;
	int waiting = d->tx_waiting;
	unsigned ev = vn_ready(d);
	d->st.irqs++;
	if (ev & SHIM_IO_IN)
		d->st.irq_in++;
	if (waiting && (ev & SHIM_IO_OUT)) {
		d->st.irq_out++;
		d->tx_waiting = 0;
	}
	shim_io_report(d->src, ev);
}

void virtio_net_stats(const struct virtio_net *d, struct virtio_net_stats *out)
{
	int on = shim_big_lock();
	*out = d->st;
	shim_big_unlock(on);
}

/* Under the shim lock. The queue: its page, its size, its place told to the
 * device. Buffers come later. */
static int vq_setup(struct virtio_net *d, struct vq *q, unsigned queue)
{
	wr(d, MMIO_QUEUE_SEL, queue);
	if (rd(d, d->version == 1 ? MMIO_QUEUE_PFN : MMIO_QUEUE_READY))
		return -EIO; /* in use: the reset did not take */
	uint32_t max = rd(d, MMIO_QUEUE_NUM_MAX);
	unsigned size = VQ_MAX;
	while (size > max)
		size /= 2;
	if (size < 2)
		return -EIO;
	char *page = shim_page_alloc();
	if (!page)
		return -ENOMEM;
	size_t avail_off = 16 * (size_t)size;
	size_t used_off =
		(avail_off + 6 + 2 * (size_t)size + VQ_ALIGN - 1) & ~(size_t)(VQ_ALIGN - 1);
	q->size = size;
	q->ring_page = page;
	q->desc = (struct vring_desc *)page;
	q->avail = (struct vring_avail *)(page + avail_off);
	q->used = (struct vring_used *)(page + used_off);
	q->avail_idx = q->last_used = 0;
	wr(d, MMIO_QUEUE_NUM, size);
	if (d->version == 1) {
		wr(d, MMIO_QUEUE_ALIGN, VQ_ALIGN);
		wr(d, MMIO_QUEUE_PFN, (uint32_t)((uintptr_t)page / PAGE_SIZE));
	} else {
		uint64_t desc = (uintptr_t)q->desc, avail = (uintptr_t)q->avail,
			 used = (uintptr_t)q->used;
		wr(d, MMIO_QUEUE_DESC_LOW, (uint32_t)desc);
		wr(d, MMIO_QUEUE_DESC_HIGH, (uint32_t)(desc >> 32));
		wr(d, MMIO_QUEUE_DRIVER_LOW, (uint32_t)avail);
		wr(d, MMIO_QUEUE_DRIVER_HIGH, (uint32_t)(avail >> 32));
		wr(d, MMIO_QUEUE_DEVICE_LOW, (uint32_t)used);
		wr(d, MMIO_QUEUE_DEVICE_HIGH, (uint32_t)(used >> 32));
		wr(d, MMIO_QUEUE_READY, 1);
	}
	return 0;
}

/* The slots' buffers, two per page, and their descriptor chains. */
static int vq_buffers(struct virtio_net *d, struct vq *q, uint16_t flags)
{
	for (unsigned i = 0; i < q->size / 2; i++) {
		if (i % 2 == 0) {
			q->buf[i] = shim_page_alloc();
			if (!q->buf[i])
				return -ENOMEM;
		} else {
			q->buf[i] = q->buf[i - 1] + BUF_SIZE;
		}
		struct vring_desc *h = &q->desc[2 * i], *f = &q->desc[2 * i + 1];
		h->addr = (uintptr_t)q->buf[i];
		h->len = d->hdr_len;
		h->flags = DESC_F_NEXT | flags;
		h->next = (uint16_t)(2 * i + 1);
		f->addr = (uintptr_t)q->buf[i] + d->hdr_len;
		f->len = BUF_SIZE - d->hdr_len;
		f->flags = flags;
		f->next = 0;
	}
	return 0;
}

static void vq_free(struct vq *q)
{
	for (unsigned i = 0; i < VQ_SLOTS; i += 2)
		if (q->buf[i])
			shim_page_free(q->buf[i]);
	if (q->ring_page)
		shim_page_free(q->ring_page);
	memset(q, 0, sizeof *q);
}

static int probe(struct virtio_net *d, const struct virtio_mmio_slot *slots, unsigned n)
{
	for (unsigned slot = 0; slot < n; slot++) {
		d->base = slots[slot].base;
		uint32_t version = rd(d, MMIO_VERSION);
		if (rd(d, MMIO_MAGIC) == MAGIC && (version == 1 || version == 2) &&
		    rd(d, MMIO_DEVICE_ID) == DEVICE_NET) {
			d->version = (int)version;
			d->irq = slots[slot].irq;
			return 0;
		}
	}
	return -ENODEV;
}

/* 3.1.1: reset, ACKNOWLEDGE, DRIVER, features (FEATURES_OK on the modern
 * transport), the queues, DRIVER_OK. Under the shim lock. */
static int bring_up(struct virtio_net *d, uint8_t mac[6])
{
	wr(d, MMIO_STATUS, 0);
	for (int n = 0; rd(d, MMIO_STATUS) != 0; n++)
		if (n > 1000)
			return -EIO;
	uint32_t status = S_ACKNOWLEDGE;
	wr(d, MMIO_STATUS, status);
	status |= S_DRIVER;
	wr(d, MMIO_STATUS, status);

	wr(d, MMIO_DEVICE_FEATURES_SEL, 0);
	uint64_t offered = rd(d, MMIO_DEVICE_FEATURES);
	uint64_t want = F_NET_MAC;
	if (d->version == 2) {
		wr(d, MMIO_DEVICE_FEATURES_SEL, 1);
		offered |= (uint64_t)rd(d, MMIO_DEVICE_FEATURES) << 32;
		if (!(offered & F_VERSION_1))
			return -EIO;
		want |= F_VERSION_1;
	}
	uint64_t use = offered & want;
	wr(d, MMIO_DRIVER_FEATURES_SEL, 0);
	wr(d, MMIO_DRIVER_FEATURES, (uint32_t)use);
	if (d->version == 2) {
		wr(d, MMIO_DRIVER_FEATURES_SEL, 1);
		wr(d, MMIO_DRIVER_FEATURES, (uint32_t)(use >> 32));
		status |= S_FEATURES_OK;
		wr(d, MMIO_STATUS, status);
		if (!(rd(d, MMIO_STATUS) & S_FEATURES_OK))
			return -EIO;
	}
	/* Modern: the net header always has num_buffers (5.1.6). */
	d->hdr_len = d->version == 2 ? 12 : 10;

	if (use & F_NET_MAC) {
		volatile uint8_t *cfg = (volatile uint8_t *)(d->base + MMIO_CONFIG);
		for (int tries = 0; tries < 10; tries++) {
			uint32_t gen = d->version == 2 ? rd(d, MMIO_CONFIG_GENERATION) : 0;
			for (int i = 0; i < 6; i++)
				mac[i] = cfg[i];
			if (d->version == 1 || rd(d, MMIO_CONFIG_GENERATION) == gen)
				break;
		}
	} else {
		/* A locally administered address of our own. */
		static const uint8_t local[6] = {0x02, 0x77, 0x65, 0x66, 0x74, 0x00};
		memcpy(mac, local, 6);
	}

	if (d->version == 1)
		wr(d, MMIO_GUEST_PAGE_SIZE, PAGE_SIZE);
	int e;
	if ((e = vq_setup(d, &d->rx, RXQ)) || (e = vq_setup(d, &d->tx, TXQ)) ||
	    (e = vq_buffers(d, &d->rx, DESC_F_WRITE)) || (e = vq_buffers(d, &d->tx, 0)))
		return e;
	/* Every receive slot to the device; every transmit slot free. */
	for (unsigned i = 0; i < d->rx.size / 2; i++)
		d->rx.avail->ring[i] = (uint16_t)(2 * i);
	dma_wmb();
	d->rx.avail_idx = (uint16_t)(d->rx.size / 2);
	d->rx.avail->idx = d->rx.avail_idx;
	d->tx_nfree = 0;
	for (unsigned i = d->tx.size / 2; i-- > 0;)
		d->tx_free[d->tx_nfree++] = (uint16_t)i;
	d->tx.avail->flags = AVAIL_F_NO_INTERRUPT;
	dma_mb();
	status |= S_DRIVER_OK;
	wr(d, MMIO_STATUS, status);
	if (rd(d, MMIO_STATUS) & S_NEEDS_RESET)
		return -EIO;
	return 0;
}

int virtio_net_open(const struct virtio_mmio_slot *slots, unsigned n, int poll,
		    struct virtio_net **out, uint8_t mac[6], int *src)
{
	int on = shim_big_lock();
	if (dev0_open) {
		shim_big_unlock(on);
		return -EBUSY;
	}
	struct virtio_net *d = &dev0;
	memset(d, 0, sizeof *d);
	d->src = -1;
	int e = probe(d, slots, n);
	if (!e)
		e = bring_up(d, mac);
	if (!e) {
		d->src = shim_io_source_add(vn_ready, d);
		if (d->src < 0)
			e = d->src;
	}
	if (!e && !poll) {
		int r = shim_irq_register(d->irq, vn_irq, d);
		if (r == 0) {
			d->st.by_irq = 1;
			shim_io_source_irq(d->src, 1);
		} else {
			/* The fallback: polled, said once. */
			shim_puts("weft: virtio-net: no interrupt (PLIC source ");
			shim_put_dec(d->irq);
			shim_puts("): polled\n");
		}
	}
	if (e) {
		if (e != -ENODEV) {
			/* Reset first: the device lets go of the rings we free. */
			wr(d, MMIO_STATUS, 0);
			wr(d, MMIO_STATUS, S_FAILED);
		}
		if (d->src >= 0)
			shim_io_source_remove(d->src);
		vq_free(&d->rx);
		vq_free(&d->tx);
		shim_big_unlock(on);
		return e;
	}
	/* The device may notice the receive buffers only when told (the
	 * driver must not notify before DRIVER_OK, which bring_up set). */
	wr(d, MMIO_QUEUE_NOTIFY, RXQ);
	dev0_open = 1;
	shim_big_unlock(on);
	*src = d->src;
	*out = d;
	return 0;
}

int virtio_net_recv(struct virtio_net *d, void *buf, size_t cap)
{
	for (unsigned n = 0; n < d->rx.size; n++) {
		uint32_t len;
		int on = shim_big_lock();
		int slot = vq_take(&d->rx, &len);
		shim_big_unlock(on);
		if (slot < 0)
			return -EAGAIN;
		/* The slot is ours until published again: copy with interrupts on. */
		size_t frame = len > d->hdr_len ? len - d->hdr_len : 0;
		if (frame > BUF_SIZE - d->hdr_len)
			frame = BUF_SIZE - d->hdr_len;
		int r = frame > cap ? -EMSGSIZE : (int)frame;
		if (r > 0)
			memcpy(buf, d->rx.buf[slot] + d->hdr_len, frame);
		on = shim_big_lock();
		if (r > 0)
			d->st.rx_frames++;
		vq_publish(d, &d->rx, RXQ, (unsigned)slot);
		shim_big_unlock(on);
		if (r != 0)
			return r;
		/* An empty frame: nothing to hand out, try the next one. */
	}
	return -EAGAIN;
}

int virtio_net_send(struct virtio_net *d, const struct shim_iov *iov, int n)
{
	long len = driver_frame_len(iov, n, FRAME_MIN, FRAME_MAX);
	if (len < 0)
		return (int)len;
	size_t total = (size_t)len;
	int on = shim_big_lock();
	tx_reclaim(d);
	if (!d->tx_nfree) {
		d->st.tx_full++;
		shim_big_unlock(on);
		return -EAGAIN;
	}
	unsigned slot = d->tx_free[--d->tx_nfree];
	shim_big_unlock(on);
	char *p = d->tx.buf[slot];
	memset(p, 0, d->hdr_len); /* no checksum offload, no GSO */
	p += d->hdr_len;
	for (int i = 0; i < n; i++) {
		memcpy(p, iov[i].base, iov[i].len);
		p += iov[i].len;
	}
	on = shim_big_lock();
	d->tx.desc[2 * slot + 1].len = (uint32_t)total;
	d->st.tx_frames++;
	vq_publish(d, &d->tx, TXQ, slot);
	shim_big_unlock(on);
	return 0;
}

void virtio_net_close(struct virtio_net *d)
{
	if (!d)
		return;
	int on = shim_big_lock();
	if (d->st.by_irq)
		shim_irq_unregister(d->irq);
	shim_io_source_remove(d->src);
	wr(d, MMIO_STATUS, 0); /* reset: the device lets go of the rings */
	for (int n = 0; rd(d, MMIO_STATUS) != 0 && n < 1000; n++)
		;
	vq_free(&d->rx);
	vq_free(&d->tx);
	dev0_open = 0;
	shim_big_unlock(on);
}
