/* SPDX-License-Identifier: MIT */
/* The model of tests/dwmac_model.h: a DWMAC 3.x, its PHY, non-coherent DMA
 * memory, and what drivers/driver.h offers a driver, on a Linux host. The
 * register offsets and bits are the DWMAC 3.x ones
 * (docs/boards/cv1800b-ethernet.md), written here from that list, not
 * taken from the driver. */
#include "dwmac_model.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "driver.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define ARENA_PAGES 256
#define ARENA_SIZE (ARENA_PAGES * PAGE_SIZE)
#define DEVS_MAX 4
#define IRQS_MAX 64
#define SOURCES_MAX 16
#define TXQ_MAX 64
#define FRAME_CAP 2048
#define WINDOWS_MAX 8
#define LOG_MAX 512
#define WALK_MAX 4096 /* descriptors one DMA pass may walk */

/* ---- Registers (DWMAC 3.x) ---------------------------------------------------- */
#define R_CONF 0x000
#define R_FILTER 0x004
#define R_MII_ADDR 0x010
#define R_MII_DATA 0x014
#define R_ADDR0_HI 0x040
#define R_ADDR0_LO 0x044
#define R_BUS 0x1000
#define R_TX_POLL 0x1004
#define R_RX_POLL 0x1008
#define R_RX_LIST 0x100c
#define R_TX_LIST 0x1010
#define R_STATUS 0x1014
#define R_OP 0x1018
#define R_INT_EN 0x101c
#define R_MISSED 0x1020
#define R_CUR_TX 0x1048
#define R_CUR_RX 0x104c
#define R_CUR_TX_BUF 0x1050
#define R_CUR_RX_BUF 0x1054
#define R_SPAN 0x2000

#define C_RE (1u << 2)
#define C_TE (1u << 3)
#define C_LM (1u << 12) /* loopback inside the MAC */
#define F_PR (1u << 0)
#define F_PM (1u << 4)
#define MII_GB (1u << 0)
#define MII_GW (1u << 1)
#define BUS_SWR (1u << 0)
#define OP_SR (1u << 1)
#define OP_ST (1u << 13)
#define OP_FTF (1u << 20)
#define S_TI (1u << 0)
#define S_TU (1u << 2)
#define S_RI (1u << 6)
#define S_RU (1u << 7)
#define S_FBI (1u << 13)
#define S_ERI (1u << 14)
#define S_AIS (1u << 15)
#define S_NIS (1u << 16)
#define S_NORMAL (S_TI | S_TU | S_RI | S_ERI)
#define S_ABNORMAL 0x27bau /* TPS TJT OVF UNF RU RPS RWT ETI FBI */
#define S_W1C 0x1ffffu

#define D_OWN (1u << 31)
#define RD0_FS (1u << 9)
#define RD0_LS (1u << 8)
#define RD0_ES (1u << 15)
#define RD0_CE (1u << 1)
#define RD1_DIC (1u << 31)
#define RD1_RER (1u << 25)
#define RD1_RCH (1u << 24)
#define TD1_IC (1u << 31)
#define TD1_LS (1u << 30)
#define TD1_FS (1u << 29)
#define TD1_TER (1u << 25)
#define TD1_TCH (1u << 24)
#define BS1(v) ((v)&0x7ffu)

/* ---- The machine's memory ------------------------------------------------------- */
static char *arena;    /* the CPU's view; its addresses are the bus's */
static char *dev_view; /* the device's */
static unsigned char used[ARENA_PAGES];
static unsigned skip[2], skip_after[2];
static struct dm_cache_counts cache;

static int in_arena(uintptr_t a, size_t n)
{
	uintptr_t b = (uintptr_t)arena;
	return arena && a >= b && n <= ARENA_SIZE && a - b <= ARENA_SIZE - n;
}

/* The device's view of bus address a, n bytes, or NULL. */
static char *dev_mem(uint32_t a, size_t n)
{
	if (!in_arena(a, n))
		return NULL;
	return dev_view + (a - (uintptr_t)arena);
}

enum { OP_CLEAN, OP_INVAL, OP_FLUSH };
static void cache_op(int op, const void *p, size_t n)
{
	if (!n)
		return;
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(DMA_CACHE_LINE - 1);
	uintptr_t end = ((uintptr_t)p + n + DMA_CACHE_LINE - 1) & ~(uintptr_t)(DMA_CACHE_LINE - 1);
	if (!in_arena(a, end - a)) {
		cache.misuse++;
		return;
	}
	int kind = op == OP_INVAL ? DM_INVAL : DM_CLEAN;
	if (op != OP_FLUSH && skip_after[kind]) {
		skip_after[kind]--;
	} else if (op != OP_FLUSH && skip[kind]) {
		skip[kind]--;
		cache.skipped++;
		return;
	}
	char *cpu = (char *)a, *dev = dev_view + (a - (uintptr_t)arena);
	if (op == OP_INVAL) {
		memcpy(cpu, dev, end - a);
		cache.inval++;
	} else {
		memcpy(dev, cpu, end - a);
		if (op == OP_FLUSH)
			cache.flush++;
		else
			cache.clean++;
	}
}

void dma_cache_clean(const void *p, size_t n) { cache_op(OP_CLEAN, p, n); }
void dma_cache_inval(void *p, size_t n) { cache_op(OP_INVAL, p, n); }
void dma_cache_flush(void *p, size_t n) { cache_op(OP_FLUSH, p, n); }

void dm_cache_skip(int kind, unsigned after, unsigned n)
{
	skip_after[kind == DM_INVAL] = after;
	skip[kind == DM_INVAL] = n;
}
void dm_cache_counts(struct dm_cache_counts *out) { *out = cache; }

void *shim_page_alloc(void)
{
	for (unsigned i = 0; i < ARENA_PAGES; i++)
		if (!used[i]) {
			used[i] = 1;
			char *p = arena + (size_t)i * PAGE_SIZE;
			memset(p, 0, PAGE_SIZE);
			/* DRAM behind a cache the zeros were never written back from. */
			memset(dev_view + (size_t)i * PAGE_SIZE, 0xa5, PAGE_SIZE);
			return p;
		}
	return NULL;
}

void shim_page_free(void *p)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)arena;
	if (!in_arena((uintptr_t)p, PAGE_SIZE) || off % PAGE_SIZE || !used[off / PAGE_SIZE]) {
		fprintf(stderr, "dwmac_model: shim_page_free(%p): not a page of ours\n", p);
		abort();
	}
	used[off / PAGE_SIZE] = 0;
}

/* ---- Interrupts, I/O sources, the lock, the console ------------------------------ */
static struct {
	irq_handler fn;
	void *arg;
} irqs[IRQS_MAX];
static struct {
	int on;
	unsigned (*ready)(void *);
	void *arg;
	unsigned reported;
} sources[SOURCES_MAX];
static int lock_depth;
static char console[8192];
static size_t console_len;

static struct dm_dev *devs[DEVS_MAX];
static unsigned ndevs;
static int line_of(struct dm_dev *m);
static unsigned irq_of(struct dm_dev *m);

/* The shim lock: one recursive mutex, so that lwIP's threads may call the
 * driver at once (test_dwmac_lwip.c). Interrupts are taken when the
 * outermost holder lets go, as a hart takes them when they are back on. */
static pthread_mutex_t mu; /* recursive: made by dm_init */
static int in_irq;
static unsigned run_irqs(void);

int shim_big_lock(void)
{
	pthread_mutex_lock(&mu);
	lock_depth++;
	return 0;
}

void shim_big_unlock(int on)
{
	(void)on;
	if (lock_depth == 1 && !in_irq)
		run_irqs();
	lock_depth--;
	pthread_mutex_unlock(&mu);
}

unsigned dm_take_interrupts(void)
{
	shim_big_lock();
	unsigned ran = run_irqs();
	shim_big_unlock(0);
	return ran;
}

/* Under the lock. */
static unsigned run_irqs(void)
{
	unsigned ran = 0;
	in_irq = 1;
	/* Level-triggered: a handler that leaves its line up runs again, up to
	 * a bound (a device that never lets go fails the test instead). */
	for (int round = 0; round < 16; round++) {
		int any = 0;
		for (unsigned i = 0; i < ndevs; i++) {
			struct dm_dev *m = devs[i];
			if (!m || !line_of(m))
				continue;
			unsigned irq = irq_of(m);
			if (irq >= IRQS_MAX || !irqs[irq].fn)
				continue;
			irqs[irq].fn(irqs[irq].arg);
			ran++;
			any = 1;
		}
		if (!any)
			break;
	}
	in_irq = 0;
	return ran;
}

int shim_irq_register(unsigned irq, irq_handler fn, void *arg)
{
	if (irq >= IRQS_MAX || !fn)
		return -EINVAL;
	if (irqs[irq].fn)
		return -EBUSY;
	irqs[irq].fn = fn;
	irqs[irq].arg = arg;
	return 0;
}

void shim_irq_unregister(unsigned irq)
{
	if (irq < IRQS_MAX)
		irqs[irq].fn = NULL;
}

int shim_io_source_add(unsigned (*ready)(void *arg), void *arg)
{
	for (int i = 0; i < SOURCES_MAX; i++)
		if (!sources[i].on) {
			sources[i].on = 1;
			sources[i].ready = ready;
			sources[i].arg = arg;
			sources[i].reported = 0;
			return i;
		}
	return -EMFILE;
}

void shim_io_source_remove(int src)
{
	if (src >= 0 && src < SOURCES_MAX)
		sources[src].on = 0;
}

void shim_io_source_irq(int src, int on) { (void)src, (void)on; }

void shim_io_report(int src, unsigned events)
{
	if (src >= 0 && src < SOURCES_MAX && sources[src].on)
		sources[src].reported |= events;
}

int shim_io_source_armed(int src)
{
	(void)src;
	return 0;
}

int dm_io_arm(int src)
{
	if (src < 0 || src >= SOURCES_MAX || !sources[src].on)
		return -1;
	int on = shim_big_lock();
	unsigned ev = sources[src].ready(sources[src].arg);
	shim_big_unlock(on);
	return (int)ev;
}

int dm_io_taken(int src)
{
	if (src < 0 || src >= SOURCES_MAX || !sources[src].on)
		return -1;
	int r = (int)sources[src].reported;
	sources[src].reported = 0;
	return r;
}

void shim_puts(const char *s)
{
	size_t n = strlen(s);
	if (n > sizeof console - 1 - console_len)
		n = sizeof console - 1 - console_len;
	memcpy(console + console_len, s, n);
	console_len += n;
	console[console_len] = 0;
}

void shim_put_dec(uint64_t v)
{
	char b[24];
	snprintf(b, sizeof b, "%llu", (unsigned long long)v);
	shim_puts(b);
}

void shim_put_hex(uint64_t v)
{
	char b[24];
	snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
	shim_puts(b);
}

void shim_console_flush(void) {}

const char *dm_console(void)
{
	static char out[sizeof console];
	memcpy(out, console, console_len + 1);
	console_len = 0;
	console[0] = 0;
	return out;
}

uint64_t rdtime(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- The device -------------------------------------------------------------------- */
struct frame {
	size_t len;
	unsigned char b[FRAME_CAP];
};

struct dm_dev {
	uintptr_t base;
	unsigned irq;
	uint32_t r[R_SPAN / 4];
	unsigned swr_reads; /* reads of the bus mode before the reset is done */
	unsigned mii_reads; /* reads of the MII address before it is not busy */
	uint32_t cur_rx, cur_tx;
	uint32_t cur_rx_buf, cur_tx_buf; /* the buffers last used */
	uint32_t missed;
	int tx_active;
	int tx_hold;
	unsigned char tx_frame[FRAME_CAP];
	size_t tx_len;
	struct dm_dev *peer;
	void (*wire)(void *arg, const void *frame, size_t len);
	void *wire_arg;
	unsigned loss_nth, loss_count;
	struct frame txq[TXQ_MAX];
	unsigned txq_head, txq_n;
	/* The PHY. */
	unsigned phy;
	uint16_t bmcr, anar, anlpar;
	int link, link_fell;
	int lb_ignored; /* BMCR's loopback bit kept but without effect */
	struct dm_counters c;
};

static unsigned irq_of(struct dm_dev *m) { return m->irq; }

static void dev_reset(struct dm_dev *m)
{
	memset(m->r, 0, sizeof m->r);
	m->r[R_ADDR0_HI / 4] = 0x8000ffffu;
	m->r[R_ADDR0_LO / 4] = 0xffffffffu;
	m->r[0x20 / 4] = 0x1037; /* version: 3.7 */
	m->cur_rx = m->cur_tx = 0;
	m->cur_rx_buf = m->cur_tx_buf = 0;
	m->missed = 0;
	m->tx_active = 0;
	m->tx_len = 0;
}

struct dm_dev *dm_dev_new(uintptr_t base, unsigned irq, unsigned phy)
{
	if (ndevs == DEVS_MAX)
		return NULL;
	struct dm_dev *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->base = base;
	m->irq = irq;
	m->phy = phy;
	m->bmcr = 0x1000; /* autonegotiation on */
	m->anar = 0x01e1; /* 10/100, half and full, 802.3 */
	dev_reset(m);
	devs[ndevs++] = m;
	return m;
}

void dm_connect(struct dm_dev *a, struct dm_dev *b)
{
	a->peer = b;
	b->peer = a;
}

void dm_set_link(struct dm_dev *m, int up, int speed, int full)
{
	if (m->link && !up)
		m->link_fell = 1;
	m->link = up;
	m->anlpar = 0x4001; /* acknowledge, 802.3 */
	if (speed == 100)
		m->anlpar |= full ? 0x0100 : 0x0080;
	else
		m->anlpar |= full ? 0x0040 : 0x0020;
}

void dm_wire(struct dm_dev *m, void (*fn)(void *arg, const void *frame, size_t len), void *arg)
{
	m->wire = fn;
	m->wire_arg = arg;
}

void dm_wire_loss(struct dm_dev *m, unsigned nth)
{
	m->loss_nth = nth;
	m->loss_count = 0;
}

void dm_counters(struct dm_dev *m, struct dm_counters *out) { *out = m->c; }

static uint32_t status_now(struct dm_dev *m)
{
	uint32_t s = m->r[R_STATUS / 4] & ~(S_NIS | S_AIS);
	uint32_t en = m->r[R_INT_EN / 4];
	if (s & en & S_NORMAL)
		s |= S_NIS;
	if (s & en & S_ABNORMAL)
		s |= S_AIS;
	return s;
}

static int line_of(struct dm_dev *m)
{
	uint32_t s = status_now(m), en = m->r[R_INT_EN / 4];
	return ((s & S_NIS) && (en & S_NIS)) || ((s & S_AIS) && (en & S_AIS));
}

int dm_irq_line(struct dm_dev *m) { return line_of(m); }
uint32_t dm_reg(struct dm_dev *m, unsigned off)
{
	if (off == R_STATUS)
		return status_now(m);
	if (off == R_CUR_RX)
		return m->cur_rx;
	if (off == R_CUR_TX)
		return m->cur_tx;
	if (off == R_CUR_RX_BUF)
		return m->cur_rx_buf;
	if (off == R_CUR_TX_BUF)
		return m->cur_tx_buf;
	return off < R_SPAN ? m->r[off / 4] : 0;
}

static void bus_error(struct dm_dev *m)
{
	m->c.bus_errors++;
	m->r[R_STATUS / 4] |= S_FBI;
	m->r[R_OP / 4] &= ~(OP_SR | OP_ST); /* the DMA stops */
}

/* The next descriptor after d (its words w). */
static uint32_t next_desc(struct dm_dev *m, uint32_t d, const uint32_t w[4], int chained, int end,
			  unsigned list)
{
	if (chained)
		return w[3];
	if (end)
		return m->r[list / 4];
	return d + 16 + ((m->r[R_BUS / 4] >> 2) & 0x1f) * 8; /* ring mode: skip length */
}

static void deliver(struct dm_dev *m, const unsigned char *f, size_t len)
{
	m->c.tx_frames++;
	if (m->loss_nth && ++m->loss_count % m->loss_nth == 0) {
		m->c.tx_lost++;
		return;
	}
	if (m->wire) {
		m->wire(m->wire_arg, f, len);
		return;
	}
	if (m->peer) {
		dm_rx_frame(m->peer, f, len);
		return;
	}
	if (m->txq_n == TXQ_MAX) { /* the oldest goes */
		m->txq_head = (m->txq_head + 1) % TXQ_MAX;
		m->txq_n--;
	}
	struct frame *q = &m->txq[(m->txq_head + m->txq_n++) % TXQ_MAX];
	q->len = len;
	memcpy(q->b, f, len);
}

static void tx_run(struct dm_dev *m);
static int rx_frame(struct dm_dev *m, const void *frame, size_t len, int bad);

/* The PHY in loopback (BMCR bit 14, clause 22): what the MAC sends comes
 * back to it; nothing goes to the wire, nothing comes from it. */
static int phy_looping(const struct dm_dev *m) { return (m->bmcr & 0x4000) && !m->lb_ignored; }

void dm_phy_loopback_ignored(struct dm_dev *m, int on) { m->lb_ignored = on; }
uint16_t dm_phy_bmcr(struct dm_dev *m) { return m->bmcr; }

void dm_tx_hold(struct dm_dev *m, int on)
{
	shim_big_lock();
	m->tx_hold = on;
	if (!on)
		tx_run(m);
	shim_big_unlock(0);
}

int dm_tx_take(struct dm_dev *m, void *buf, size_t cap)
{
	if (!m->txq_n)
		return -1;
	struct frame *q = &m->txq[m->txq_head];
	m->txq_head = (m->txq_head + 1) % TXQ_MAX;
	m->txq_n--;
	size_t n = q->len < cap ? q->len : cap;
	memcpy(buf, q->b, n);
	return (int)q->len;
}

/* The transmit DMA: send what the driver gave, until a descriptor is not
 * the device's (then suspended, TU). */
static void tx_run(struct dm_dev *m)
{
	for (int n = 0; n < WALK_MAX && (m->r[R_OP / 4] & OP_ST) && !m->tx_hold; n++) {
		char *p = dev_mem(m->cur_tx, 16);
		if (!p) {
			bus_error(m);
			return;
		}
		uint32_t w[4];
		memcpy(w, p, 16);
		if (!(w[0] & D_OWN)) {
			m->r[R_STATUS / 4] |= S_TU;
			return;
		}
		size_t len = BS1(w[1]);
		if (w[1] & TD1_FS)
			m->tx_len = 0, m->tx_active = 1;
		const char *b = dev_mem(w[2], len);
		if (!b) {
			bus_error(m);
			return;
		}
		m->cur_tx_buf = w[2];
		if (m->tx_active && m->tx_len + len <= FRAME_CAP) {
			memcpy(m->tx_frame + m->tx_len, b, len);
			m->tx_len += len;
		}
		if ((w[1] & TD1_LS) && m->tx_active) {
			m->tx_active = 0;
			if (m->r[R_CONF / 4] & C_TE) {
				size_t fl = m->tx_len < 60 ? 60 : m->tx_len; /* padded */
				if (fl > m->tx_len)
					memset(m->tx_frame + m->tx_len, 0, fl - m->tx_len);
				if (m->r[R_CONF / 4] & C_LM) {
					m->c.looped++; /* the MAC's own receiver takes it */
					rx_frame(m, m->tx_frame, fl, 0);
				} else if (phy_looping(m)) {
					m->c.phy_looped++; /* the PHY sends it back */
					rx_frame(m, m->tx_frame, fl, 0);
				} else {
					deliver(m, m->tx_frame, fl);
				}
			}
		}
		uint32_t done = 0; /* OWN clear, no error */
		memcpy(p, &done, 4);
		if (w[1] & TD1_IC)
			m->r[R_STATUS / 4] |= S_TI;
		m->cur_tx = next_desc(m, m->cur_tx, w, w[1] & TD1_TCH, w[1] & TD1_TER, R_TX_LIST);
	}
}

static uint32_t crc32_ieee(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return ~c;
}

int dm_rx_frame(struct dm_dev *m, const void *frame, size_t len)
{
	shim_big_lock();
	int r = phy_looping(m) ? (m->c.rx_off++, -1) : rx_frame(m, frame, len, 0);
	shim_big_unlock(0);
	return r;
}

int dm_rx_bad(struct dm_dev *m, const void *frame, size_t len)
{
	shim_big_lock();
	int r = phy_looping(m) ? (m->c.rx_off++, -1) : rx_frame(m, frame, len, 1);
	shim_big_unlock(0);
	return r;
}

void dm_fatal(struct dm_dev *m)
{
	shim_big_lock();
	bus_error(m);
	shim_big_unlock(0);
}

static int rx_frame(struct dm_dev *m, const void *frame, size_t len, int bad)
{
	const unsigned char *f = frame;
	if (!(m->r[R_CONF / 4] & C_RE) || !(m->r[R_OP / 4] & OP_SR) || len < 14 ||
	    len + 4 > FRAME_CAP) {
		m->c.rx_off++;
		return -1;
	}
	uint32_t hi = m->r[R_ADDR0_HI / 4], lo = m->r[R_ADDR0_LO / 4];
	unsigned char own[6] = {(unsigned char)lo,         (unsigned char)(lo >> 8),
				(unsigned char)(lo >> 16), (unsigned char)(lo >> 24),
				(unsigned char)hi,         (unsigned char)(hi >> 8)};
	static const unsigned char bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	uint32_t filt = m->r[R_FILTER / 4];
	if (!(filt & F_PR) && memcmp(f, own, 6) && memcmp(f, bcast, 6) &&
	    !((f[0] & 1) && (filt & F_PM))) {
		m->c.rx_filtered++;
		return -1;
	}
	unsigned char full[FRAME_CAP];
	memcpy(full, f, len);
	uint32_t fcs = crc32_ieee(f, len);
	for (int i = 0; i < 4; i++)
		full[len + (size_t)i] = (unsigned char)(fcs >> (8 * i));
	size_t total = len + 4;
	/* The descriptors it needs must all be the device's, or it is lost
	 * (the FIFO overflows while the DMA waits). */
	uint32_t d = m->cur_rx;
	size_t left = total;
	for (int n = 0; left; n++) {
		char *p = dev_mem(d, 16);
		if (!p || n >= WALK_MAX) {
			bus_error(m);
			return -1;
		}
		uint32_t w[4];
		memcpy(w, p, 16);
		if (!(w[0] & D_OWN)) {
			m->r[R_STATUS / 4] |= S_RU;
			m->c.rx_missed++;
			if (m->missed < 0xffff)
				m->missed++;
			return -1;
		}
		size_t cap = BS1(w[1]);
		if (!cap) {
			bus_error(m);
			return -1;
		}
		left -= cap < left ? cap : left;
		d = next_desc(m, d, w, w[1] & RD1_RCH, w[1] & RD1_RER, R_RX_LIST);
	}
	left = total;
	size_t at = 0;
	int first = 1;
	while (left) {
		char *p = dev_mem(m->cur_rx, 16);
		uint32_t w[4];
		memcpy(w, p, 16);
		size_t k = BS1(w[1]) < left ? BS1(w[1]) : left;
		char *b = dev_mem(w[2], k);
		if (!b) {
			bus_error(m);
			return -1;
		}
		memcpy(b, full + at, k);
		m->cur_rx_buf = w[2];
		at += k;
		left -= k;
		uint32_t s = (first ? RD0_FS : 0);
		if (!left)
			s |= RD0_LS | (uint32_t)total << 16 | (bad ? RD0_ES | RD0_CE : 0);
		memcpy(p, &s, 4); /* OWN clear */
		first = 0;
		if (!left && !(w[1] & RD1_DIC))
			m->r[R_STATUS / 4] |= S_RI;
		m->cur_rx = next_desc(m, m->cur_rx, w, w[1] & RD1_RCH, w[1] & RD1_RER, R_RX_LIST);
	}
	m->c.rx_frames++;
	return 0;
}

/* ---- The PHY ----------------------------------------------------------------------- */
static uint16_t phy_read(struct dm_dev *m, unsigned reg)
{
	switch (reg) {
	case 0:
		return m->bmcr;
	case 1: {
		uint16_t s = 0x7809; /* 10/100 half/full, autonegotiation, extended */
		if (phy_looping(m))
			s |= 0x0004; /* link (its own), autonegotiation off */
		else if (m->link && !m->link_fell)
			s |= 0x0024; /* link, autonegotiation complete */
		else if (m->link)
			s |= 0x0020;
		m->link_fell = 0;
		return s;
	}
	case 2:
		return 0x0043;
	case 3:
		return 0x5649;
	case 4:
		return m->anar;
	case 5:
		return m->link ? m->anlpar : 0;
	default:
		return 0;
	}
}

static void phy_write(struct dm_dev *m, unsigned reg, uint16_t v)
{
	if (reg == 0)
		m->bmcr = v & 0x7dff; /* reset and autonegotiation restart clear themselves */
	else if (reg == 4)
		m->anar = v;
}

/* ---- Register access ----------------------------------------------------------------- */
static uint32_t dev_read(struct dm_dev *m, unsigned off)
{
	switch (off) {
	case R_BUS:
		if (m->swr_reads && --m->swr_reads == 0)
			m->r[R_BUS / 4] &= ~BUS_SWR;
		return m->r[R_BUS / 4];
	case R_MII_ADDR:
		if (m->mii_reads && --m->mii_reads == 0)
			m->r[R_MII_ADDR / 4] &= ~MII_GB;
		return m->r[R_MII_ADDR / 4];
	case R_MISSED: {
		uint32_t v = m->missed;
		m->missed = 0;
		return v;
	}
	default:
		return dm_reg(m, off);
	}
}

static void dev_write(struct dm_dev *m, unsigned off, uint32_t v)
{
	switch (off) {
	case R_BUS:
		if (v & BUS_SWR) {
			dev_reset(m);
			m->r[R_BUS / 4] = BUS_SWR;
			m->swr_reads = 3;
			m->c.resets++;
		} else if (!m->swr_reads) {
			m->r[R_BUS / 4] = v;
		}
		return;
	case R_TX_POLL:
		tx_run(m);
		break;
	case R_RX_POLL:
		break; /* receive descriptors are looked at when a frame comes */
	case R_STATUS:
		m->r[R_STATUS / 4] &= ~(v & S_W1C);
		break;
	case R_OP: {
		uint32_t was = m->r[R_OP / 4];
		m->r[R_OP / 4] = v & ~OP_FTF;
		if ((v & OP_SR) && !(was & OP_SR) && !m->cur_rx)
			m->cur_rx = m->r[R_RX_LIST / 4];
		if ((v & OP_ST) && !(was & OP_ST)) {
			if (!m->cur_tx)
				m->cur_tx = m->r[R_TX_LIST / 4];
			tx_run(m);
		}
		break;
	}
	case R_RX_LIST:
		m->r[off / 4] = v;
		m->cur_rx = v;
		break;
	case R_TX_LIST:
		m->r[off / 4] = v;
		m->cur_tx = v;
		break;
	case R_MII_ADDR:
		m->r[off / 4] = v;
		if (v & MII_GB) {
			unsigned pa = (v >> 11) & 31, reg = (v >> 6) & 31;
			m->c.mdio_ops++;
			if (v & MII_GW) {
				if (pa == m->phy)
					phy_write(m, reg, (uint16_t)m->r[R_MII_DATA / 4]);
			} else {
				m->r[R_MII_DATA / 4] = pa == m->phy ? phy_read(m, reg) : 0xffff;
			}
			m->mii_reads = 2;
		}
		break;
	default:
		if (off < R_SPAN)
			m->r[off / 4] = v;
		break;
	}
}

/* ---- Plain windows ----------------------------------------------------------------- */
static struct {
	uintptr_t base;
	size_t size;
	uint32_t *r;
	int paged;
	unsigned sel, lo, hi, page;
	uint32_t bank[32][16];
} windows[WINDOWS_MAX];
static unsigned nwindows;
static struct dm_write wlog[LOG_MAX];
static unsigned nwlog;

void dm_window_add(uintptr_t base, size_t size)
{
	if (nwindows == WINDOWS_MAX)
		abort();
	windows[nwindows].base = base;
	windows[nwindows].size = size;
	windows[nwindows].r = calloc(size / 4, 4);
	if (!windows[nwindows].r)
		abort();
	nwindows++;
}

void dm_window_paged(uintptr_t base, unsigned sel, unsigned lo, unsigned hi)
{
	for (unsigned i = 0; i < nwindows; i++)
		if (windows[i].base == base && hi - lo <= 16 * 4) {
			memset(windows[i].bank, 0, sizeof windows[i].bank);
			windows[i].paged = 1;
			windows[i].sel = sel;
			windows[i].lo = lo;
			windows[i].hi = hi;
			windows[i].page = 0;
			return;
		}
	abort();
}

static uint32_t *window_reg(uintptr_t a)
{
	for (unsigned i = 0; i < nwindows; i++)
		if (a >= windows[i].base && a - windows[i].base < windows[i].size) {
			unsigned off = (unsigned)(a - windows[i].base);
			if (windows[i].paged && off >= windows[i].lo && off < windows[i].hi)
				return &windows[i].bank[windows[i].page][(off - windows[i].lo) / 4];
			return &windows[i].r[off / 4];
		}
	return NULL;
}

/* A write to a paged window's page select. */
static void window_select(uintptr_t a, uint32_t v)
{
	for (unsigned i = 0; i < nwindows; i++)
		if (windows[i].paged && a == windows[i].base + windows[i].sel)
			windows[i].page = (v >> 8) & 31;
}

void dm_window_set(uintptr_t addr, uint32_t v)
{
	uint32_t *r = window_reg(addr);
	if (!r)
		abort();
	*r = v;
}

void dm_window_log_clear(void) { nwlog = 0; }

const struct dm_write *dm_window_log(unsigned *n)
{
	*n = nwlog;
	return wlog;
}

static struct dm_dev *dev_at(uintptr_t a)
{
	for (unsigned i = 0; i < ndevs; i++)
		if (devs[i] && a >= devs[i]->base && a - devs[i]->base < R_SPAN)
			return devs[i];
	return NULL;
}

static void bad_access(const char *what, uintptr_t a)
{
	fprintf(stderr, "dwmac_model: %s of 0x%lx: no device there\n", what, (unsigned long)a);
	abort();
}

static uint32_t read_locked(uintptr_t a)
{
	if (a % 4)
		bad_access("unaligned read", a);
	struct dm_dev *m = dev_at(a);
	if (m)
		return dev_read(m, (unsigned)(a - m->base));
	uint32_t *r = window_reg(a);
	if (!r)
		bad_access("read", a);
	return *r;
}

static void write_locked(uintptr_t a, uint32_t v)
{
	if (a % 4)
		bad_access("unaligned write", a);
	struct dm_dev *m = dev_at(a);
	if (m) {
		dev_write(m, (unsigned)(a - m->base), v);
		return;
	}
	uint32_t *r = window_reg(a);
	if (!r)
		bad_access("write", a);
	*r = v;
	window_select(a, v);
	if (nwlog < LOG_MAX)
		wlog[nwlog++] = (struct dm_write){a, v};
}

uint32_t mmio_read32(uintptr_t a)
{
	shim_big_lock();
	uint32_t v = read_locked(a);
	shim_big_unlock(0);
	return v;
}

void mmio_write32(uintptr_t a, uint32_t v)
{
	shim_big_lock();
	write_locked(a, v);
	shim_big_unlock(0);
}

/* ---- Set up, tear down -------------------------------------------------------------- */
int dm_init(void)
{
	static const uintptr_t hints[] = {0x40000000u, 0x50000000u, 0x60000000u, 0x30000000u,
					  0x20000000u, 0x70000000u, 0x10000000u};
	arena = NULL;
	for (unsigned i = 0; i < sizeof hints / sizeof hints[0] && !arena; i++) {
		void *p = mmap((void *)hints[i], ARENA_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == MAP_FAILED)
			continue;
		if ((uintptr_t)p != hints[i] || (uintptr_t)p + ARENA_SIZE > 0xffffffffu) {
			munmap(p, ARENA_SIZE); /* an old kernel took the hint as a hint */
			continue;
		}
		arena = p;
	}
	if (!arena) {
		/* No hint taken (qemu-user places guest memory itself): any
		 * place below 4 GiB will do. */
		void *p = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED && (uintptr_t)p + ARENA_SIZE <= 0xffffffffu)
			arena = p;
		else if (p != MAP_FAILED)
			munmap(p, ARENA_SIZE);
	}
	if (!arena)
		return -1;
	dev_view = malloc(ARENA_SIZE);
	if (!dev_view) {
		munmap(arena, ARENA_SIZE);
		arena = NULL;
		return -1;
	}
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&mu, &ma);
	pthread_mutexattr_destroy(&ma);
	memset(used, 0, sizeof used);
	memset(skip, 0, sizeof skip);
	memset(skip_after, 0, sizeof skip_after);
	memset(&cache, 0, sizeof cache);
	memset(irqs, 0, sizeof irqs);
	memset(sources, 0, sizeof sources);
	lock_depth = 0;
	in_irq = 0;
	console_len = 0;
	console[0] = 0;
	nwlog = 0;
	return 0;
}

unsigned dm_fini(void)
{
	unsigned left = 0;
	for (unsigned i = 0; i < ARENA_PAGES; i++)
		left += used[i];
	for (unsigned i = 0; i < ndevs; i++) {
		free(devs[i]);
		devs[i] = NULL;
	}
	ndevs = 0;
	for (unsigned i = 0; i < nwindows; i++) {
		free(windows[i].r);
		windows[i].paged = 0;
	}
	nwindows = 0;
	nwlog = 0;
	if (arena)
		munmap(arena, ARENA_SIZE);
	free(dev_view);
	arena = dev_view = NULL;
	pthread_mutex_destroy(&mu);
	return left;
}
