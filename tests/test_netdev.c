/* SPDX-License-Identifier: MIT */
/* lwIP over a network device that has no room for a frame (its transmit
 * ring full): the frame is held back, in order, and sent once the device
 * has room, up to a bound beyond which frames are dropped and counted
 * (net/lwip_netif.c). The device is a TAP device the suite makes (Linux:
 * it needs CAP_NET_ADMIN, and skips without it) or qemu-virt's virtio-net
 * (tests/test_netdev.bare.sh boots the suite with one; booted without, the
 * tests skip). A wrapper around shim_netdev_send (the link's --wrap) takes
 * the frames in the device's place, noting the datagrams' numbers, and
 * refuses them, as a full ring does, for as long as a test says: nothing
 * leaves the machine, and the datagrams go to the broadcast address, so no
 * ARP answer is needed. */
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "testutil.h"
#include "weft_net.h"

#define HELD_MAX 1024            /* net/lwip_netif.c's TXQ_MAX */
#define SETTLE_MS 10000          /* how long held-back frames may take to go out */
#define PAYLOAD_AT (14 + 20 + 8) /* Ethernet, IPv4 (no options), UDP headers */

/* ---- The device, made full on demand -------------------------------------- */

static _Atomic int full;     /* refuse every frame, as a full ring */
static _Atomic long refused; /* frames refused so */
#define SEEN_MAX 2048
static uint32_t seen[SEEN_MAX]; /* the sequence numbers of the datagrams sent */
static _Atomic int nseen;

int __wrap_shim_netdev_send(struct shim_netdev *d, const struct shim_iov *iov, int n)
{
	(void)d;
	if (atomic_load(&full)) {
		atomic_fetch_add(&refused, 1);
		return -EAGAIN;
	}
	int r = 0; /* taken */
	/* A datagram of ours: its first 4 payload bytes are its number. */
	uint8_t frame[PAYLOAD_AT + 4];
	size_t got = 0;
	for (int i = 0; i < n && got < sizeof frame; i++) {
		size_t k = iov[i].len < sizeof frame - got ? iov[i].len : sizeof frame - got;
		memcpy(frame + got, iov[i].base, k);
		got += k;
	}
	if (r == 0 && got == sizeof frame && frame[12] == 0x08 && frame[13] == 0x00 &&
	    frame[14 + 9] == 17) {
		int k = atomic_fetch_add(&nseen, 1);
		if (k < SEEN_MAX)
			memcpy(&seen[k], frame + PAYLOAD_AT, 4);
	}
	return r;
}

/* ---- Helpers ---------------------------------------------------------------- */

#if !WT_LINUX
static int on(const char *name)
{
	const char *v = getenv(name);
	return v && strcmp(v, "1") == 0;
}
#endif

static weft_net_stats_t stats(void)
{
	weft_net_stats_t st;
	assert_int_equal(weft_net_stats(&st), 0);
	return st;
}

/* Until n frames more than before went out or were dropped, SETTLE_MS at most. */
static weft_net_stats_t settle(const weft_net_stats_t *before, uint64_t n)
{
	int64_t end = weft_deadline_in(SETTLE_MS * 1000000LL);
	weft_net_stats_t st = stats();
	while (st.frames_out - before->frames_out + st.frames_dropped - before->frames_dropped <
		       n &&
	       weft_now() < end) {
		weft_sleep_until(weft_deadline_in(10 * 1000000LL));
		st = stats();
	}
	return st;
}

static weft_sock_t *sock;
static weft_addr_t gateway; /* the broadcast address, port 9 (discard) */

/* lwIP up on the device (or the test skips, saying why), a UDP socket, and
 * a first datagram through. */
static void up(void)
{
#if WT_LINUX
	const weft_net_config_t cfg = {.stack = "lwip", .netif = "tap:wnd%d", .ip = "10.0.2.15/24"};
#else
	const weft_net_config_t cfg = {.stack = "lwip", .netif = "virtio"};
	if (!on("WEFT_NETDEV_TEST"))
		skip(); /* no virtio-net device: boot through test_netdev.bare.sh */
#endif
	if (wt_net_init_tap(&cfg) < 0)
		skip();
	weft_addr_t any = {0};
	assert_int_equal(weft_udp_bind(&sock, &any), 0);
	assert_int_equal(weft_addr_parse("255.255.255.255:9", &gateway), 0);
	atomic_store(&nseen, 0);
	uint32_t first = UINT32_MAX;
	assert_int_equal(weft_udp_sendto(sock, &first, sizeof first, &gateway, 0), 4);
	int64_t end = weft_deadline_in(SETTLE_MS * 1000000LL);
	while (atomic_load(&nseen) == 0 && weft_now() < end)
		weft_sleep_until(weft_deadline_in(10 * 1000000LL));
	assert_int_equal(atomic_load(&nseen), 1);
	assert_int_equal(seen[0], UINT32_MAX);
	atomic_store(&nseen, 0);
}

static void down(void)
{
	assert_int_equal(weft_sock_close(sock), 0);
	assert_int_equal(weft_net_fini(), 0);
}

/* Datagrams numbered from 0, 4 bytes each; how many lwIP took. */
static int send_numbered(int n)
{
	int sent = 0;
	for (uint32_t i = 0; i < (uint32_t)n; i++)
		if (weft_udp_sendto(sock, &i, sizeof i, &gateway, 0) == (ssize_t)sizeof i)
			sent++;
	return sent;
}

/* One round: lwIP up, n numbered datagrams sent while the device is full,
 * pause_ms later the counters (held), then room, and the counters once n
 * frames more are out or dropped (after). */
struct round {
	weft_net_stats_t before, held, after;
};

static struct round full_round(int n, int64_t pause_ms)
{
	struct round r;
	up();
	r.before = stats();
	atomic_store(&full, 1);
	assert_int_equal(send_numbered(n), n);
	if (pause_ms)
		weft_sleep_until(weft_deadline_in(pause_ms * 1000000LL));
	r.held = stats();
	atomic_store(&full, 0);
	r.after = settle(&r.before, (uint64_t)n);
	return r;
}

#define DELTA(r, when, field) ((unsigned long long)((r).when.field - (r).before.field))

/* The first n datagrams the device took were 0 .. n-1, in that order, and
 * the copies held back were freed: a leak of them would leave n more
 * blocks, where lwIP's own come and go by a few (an ARP entry's). */
static void assert_sent_in_order(const struct round *r, int n)
{
	assert_int_equal(atomic_load(&nseen), n);
	for (uint32_t i = 0; i < (uint32_t)n; i++)
		assert_int_equal(seen[i], i);
	assert_true(r->after.mem_blocks < r->before.mem_blocks + (uint64_t)n / 2);
}

/* ---- Tests ---------------------------------------------------------------- */

/* While the device is full, frames are held: none out, none dropped, even
 * after a while. Once it has room they all go, in the order sent, and the
 * copies held are freed. (Before: each was dropped at once.) */
static void test_frames_held_while_device_full_then_sent_in_order(void **state)
{
	(void)state;
	enum { N = 100 };
	struct round r = full_round(N, 50); /* the sender retries meanwhile */
	print_message("%d datagrams sent into a full device: %llu out and %llu dropped while "
		      "full (%ld refusals); then %llu out, %llu dropped\n",
		      N, DELTA(r, held, frames_out), DELTA(r, held, frames_dropped),
		      atomic_load(&refused), DELTA(r, after, frames_out),
		      DELTA(r, after, frames_dropped));
	assert_int_equal(DELTA(r, held, frames_out), 0);
	assert_int_equal(DELTA(r, held, frames_dropped), 0);
	assert_true(atomic_load(&refused) >= N);
	assert_int_equal(DELTA(r, after, frames_out), N);
	assert_int_equal(DELTA(r, after, frames_dropped), 0);
	assert_sent_in_order(&r, N);
	down();
}

/* Held frames are bounded: beyond HELD_MAX a frame is dropped and counted,
 * and the ones held still go out once there is room. */
static void test_frames_beyond_the_bound_are_dropped(void **state)
{
	(void)state;
	enum { N = HELD_MAX + 10 };
	struct round r = full_round(N, 0);
	print_message("%d datagrams sent into a full device: %llu dropped at once; then %llu "
		      "out\n",
		      N, DELTA(r, held, frames_dropped), DELTA(r, after, frames_out));
	assert_int_equal(DELTA(r, held, frames_dropped), N - HELD_MAX);
	assert_int_equal(DELTA(r, after, frames_out), HELD_MAX);
	assert_int_equal(DELTA(r, after, frames_dropped), N - HELD_MAX);
	assert_sent_in_order(&r, HELD_MAX); /* the first ones were kept */
	down();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames_held_while_device_full_then_sent_in_order),
		cmocka_unit_test(test_frames_beyond_the_bound_are_dropped),
	};
	return WT_MAIN("netdev", tests, wt_start, wt_stop);
}
