/* SPDX-License-Identifier: MIT */
/* AF_XDP's batched transmit kicks (kernel-shim/linux/xdp.c): send puts a
 * frame on the TX ring without a system call, up to a kick's worth, and
 * flush makes the one sendto that sends what waits. On a veth (copy mode:
 * a frame goes out only on a kick) in a network namespace of its own, made
 * at the start and gone with the process, the suite sends batches, counts
 * the kicks, and takes the frames off the peer with a packet socket: every
 * frame of a batch arrives after its flush, with no send after it. Needs
 * CAP_SYS_ADMIN and CAP_NET_ADMIN (skips without). Linux only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#if WT_LINUX
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netpacket/packet.h>
#include <sys/socket.h>

#include "linux/xdp.h"

#define ETHERTYPE 0x88b5   /* IEEE local experimental: no other frame has it */
#define KICK_BATCH 32      /* xdp.c's */
#define RECV_MS 10000      /* how long a batch's frames may take to arrive */
#define FRAME_LEN (14 + 4) /* Ethernet header, a sequence number */

static const char *no; /* why the suite skips, or NULL */
static struct shim_xdp *xdp;
static int peer = -1; /* packet socket on the veth's other end */
static uint32_t seq;

static void make_veth(void)
{
	if (unshare(CLONE_NEWNET) != 0) {
		no = "no network namespace of our own (needs CAP_SYS_ADMIN)";
		return;
	}
	if (system("ip link add vxka type veth peer name vxkb && ip link set vxka up && "
		   "ip link set vxkb up") != 0) {
		no = "no veth pair (needs CAP_NET_ADMIN and ip(8))";
		return;
	}
	peer = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETHERTYPE));
	struct sockaddr_ll sll = {.sll_family = AF_PACKET,
				  .sll_protocol = htons(ETHERTYPE),
				  .sll_ifindex = (int)if_nametoindex("vxkb")};
	if (peer < 0 || bind(peer, (struct sockaddr *)&sll, sizeof sll) != 0) {
		no = "no packet socket";
		return;
	}
	int src;
	int e = shim_xdp_open("xdp:vxka", if_nametoindex("vxka"), 0, 1500, &xdp, &src);
	if (e)
		no = "no AF_XDP socket on the veth";
}

static void send_frame(void)
{
	uint8_t f[FRAME_LEN];
	memset(f, 0xff, 6);                              /* broadcast */
	memcpy(f + 6, (uint8_t[]){2, 0, 0, 0, 0, 1}, 6); /* locally administered */
	f[12] = ETHERTYPE >> 8;
	f[13] = ETHERTYPE & 0xff;
	memcpy(f + 14, &seq, 4);
	seq++;
	struct shim_iov iov = {f, sizeof f};
	assert_int_equal(shim_xdp_send(xdp, &iov, 1), 0);
}

/* The frames numbered first..first+n-1, in order, on the peer, RECV_MS at
 * most, and no other. */
static void expect_frames(uint32_t first, int n)
{
	int got = 0;
	int64_t end = weft_deadline_in(RECV_MS * 1000000LL);
	for (int rounds = 0; got < n && rounds < 10000; rounds++) {
		uint8_t f[64];
		ssize_t r = recv(peer, f, sizeof f, 0);
		if (r < 0) {
			assert_true(errno == EAGAIN || errno == EINTR);
			int64_t left = (end - weft_now()) / 1000000;
			if (left <= 0)
				break;
			struct pollfd p = {peer, POLLIN, 0};
			(void)poll(&p, 1, left > 100 ? 100 : (int)left);
			continue;
		}
		assert_true(r >= FRAME_LEN);
		uint32_t k;
		memcpy(&k, f + 14, 4);
		assert_int_equal(k, first + (uint32_t)got);
		got++;
	}
	assert_int_equal(got, n);
}

static void batch(int n, unsigned long kicks_sending, unsigned long kicks_flushed)
{
	unsigned long k0 = shim_xdp_kicks(xdp);
	uint32_t first = seq;
	for (int i = 0; i < n; i++)
		send_frame();
	assert_int_equal(shim_xdp_kicks(xdp) - k0, kicks_sending);
	assert_int_equal(shim_xdp_flush(xdp), 0);
	assert_int_equal(shim_xdp_kicks(xdp) - k0, kicks_flushed);
	expect_frames(first, n);
}

static void test_a_batch_is_one_kick_and_all_arrive(void **state)
{
	(void)state;
	if (no)
		skip();
	batch(8, 0, 1);
	batch(1, 0, 1);
}

static void test_a_long_batch_kicks_every_kick_batch(void **state)
{
	(void)state;
	if (no)
		skip();
	/* 2.5 kicks' worth: one kick at each full kick's worth, one at the
	 * flush for the rest. */
	int n = KICK_BATCH * 5 / 2;
	batch(n, 2, 3);
}

static void test_flush_with_nothing_sent_makes_no_kick(void **state)
{
	(void)state;
	if (no)
		skip();
	batch(3, 0, 1);
	unsigned long k0 = shim_xdp_kicks(xdp);
	assert_int_equal(shim_xdp_flush(xdp), 0);
	assert_int_equal(shim_xdp_kicks(xdp), k0);
}

#define KICK_TEST(f) cmocka_unit_test(f)
#else
#define KICK_TEST(f)       \
	{                  \
		.name = #f \
	}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		KICK_TEST(test_a_batch_is_one_kick_and_all_arrive),
		KICK_TEST(test_a_long_batch_kicks_every_kick_batch),
		KICK_TEST(test_flush_with_nothing_sent_makes_no_kick),
	};
#if WT_LINUX
	/* Before any thread: the namespace is the process's, and goes with
	 * it (the veth pair with it). */
	make_veth();
	if (no)
		printf("# test_xdp_kick: skipping: %s\n", no);
	int r = WT_MAIN("xdp_kick", tests, NULL, NULL);
	shim_xdp_close(xdp);
	return r;
#else
	return wt_skip_group("xdp_kick", tests, sizeof tests / sizeof tests[0],
			     "no AF_XDP on bare metal");
#endif
}
