/* SPDX-License-Identifier: MIT */
/* lwIP's tcp_input called directly, as lwIP's own unit tests (test/unit/tcp,
 * test_tcp_input) and a TCP-level fuzzer call it: the current netif set, no
 * input netif (ip_data.current_input_netif NULL). weft enters through
 * ethernet_input, which sets both; these callers do not. weft's patch 0002
 * looks the segment's PCB up by its four-tuple and passes the input netif's
 * index along; stock lwIP reads that index only for a PCB bound to a netif.
 * Segments to a closed port (lwIP answers with a reset) and to a listener
 * (a SYN; answered with a SYN-ACK), before and after a connection over the
 * loopback exists, so the lookup walks an empty table and a filled one. */
#include <string.h>

#include "testutil.h"
#include "weft_net.h"

#include "lwip.h"
#include "lwip_sock.h"
#include "lwip/inet_chksum.h"
#include "lwip/ip.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/prot/tcp.h"

static int start(void **state)
{
	(void)state;
	if (weft_init(NULL) != 0)
		return -1;
	weft_net_config_t cfg = {.stack = "lwip", .netif = "loop"};
	return weft_net_init(&cfg) == 0 ? 0 : -1;
}

static int stop(void **state)
{
	(void)state;
	if (weft_net_fini() != 0 || weft_run() != 0)
		return -1;
	return weft_shutdown() == 0 ? 0 : -1;
}

/* Hand lwIP a TCP segment from 127.0.0.1:src_port to 127.0.0.1:dst_port as
 * lwIP's unit tests do: tcp_input with only the current netif and the
 * addresses set. Under the lwIP lock, which every call into lwIP takes. */
static void tcp_input_direct(uint16_t src_port, uint16_t dst_port, uint8_t flags)
{
	weft__lwip_lock_take();
	struct netif *lo = NULL;
	NETIF_FOREACH(lo)
	if (lo->name[0] == 'l' && lo->name[1] == 'o')
		break;
	assert_non_null(lo);
	struct pbuf *p = pbuf_alloc(PBUF_IP, TCP_HLEN, PBUF_RAM);
	assert_non_null(p);
	struct tcp_hdr *h = p->payload;
	memset(h, 0, TCP_HLEN);
	h->src = lwip_htons(src_port);
	h->dest = lwip_htons(dst_port);
	h->seqno = lwip_htonl(12345);
	TCPH_HDRLEN_FLAGS_SET(h, TCP_HLEN / 4, flags);
	h->wnd = lwip_htons(4096);
	ip_addr_t a = IPADDR4_INIT_BYTES(127, 0, 0, 1);
	h->chksum = ip_chksum_pseudo(p, IP_PROTO_TCP, p->tot_len, &a, &a);
	struct ip_hdr iph;
	memset(&iph, 0, sizeof iph);
	ip_addr_copy(ip_data.current_iphdr_src, a);
	ip_addr_copy(ip_data.current_iphdr_dest, a);
	ip_data.current_netif = lo;
	ip_data.current_input_netif = NULL;
	ip_data.current_ip4_header = &iph;
	tcp_input(p, lo);
	ip_addr_set_zero(&ip_data.current_iphdr_src);
	ip_addr_set_zero(&ip_data.current_iphdr_dest);
	ip_data.current_netif = NULL;
	ip_data.current_ip4_header = NULL;
	weft__lwip_unlock(); /* delivers what lwIP answered over the loopback */
}

struct conn {
	weft_sock_t *ls, *c, *s;
	weft_addr_t at;
	int r_connect, r_accept;
};

static void *connect_one(void *arg)
{
	struct conn *k = arg;
	k->r_connect = weft_tcp_connect(&k->c, &k->at, wt_ms(10000));
	return NULL;
}

static void test_tcp_input_without_input_netif(void **state)
{
	(void)state;
	/* Nothing open: the table is empty; a reset answers. */
	tcp_input_direct(40000, 9, TCP_SYN);
	tcp_input_direct(40001, 9, TCP_ACK);

	/* A listener and a connection to it: PCBs in the table, none bound
	 * to a netif. */
	static struct conn k;
	memset(&k, 0, sizeof k);
	weft_addr_t any = {0};
	assert_int_equal(weft_tcp_listen(&k.ls, &any, 4), 0);
	weft_addr_t local;
	assert_int_equal(weft_sock_local(k.ls, &local), 0);
	assert_int_equal(weft_addr_parse("127.0.0.1", &k.at), 0);
	k.at.port = local.port;
	weft_fiber_t f = wt_spawn(connect_one, &k);
	k.r_accept = weft_tcp_accept(k.ls, &k.s, NULL, wt_ms(10000));
	wt_join(f);
	assert_int_equal(k.r_connect, 0);
	assert_int_equal(k.r_accept, 0);

	tcp_input_direct(40002, 9, TCP_SYN);          /* closed port */
	tcp_input_direct(40003, local.port, TCP_SYN); /* the listener */
	tcp_input_direct(40003, local.port, TCP_RST); /* that half-open one */

	/* The connection is unharmed. */
	char b = 'x', got = 0;
	assert_int_equal(weft_sock_write(k.c, &b, 1, wt_ms(10000)), 1);
	assert_int_equal(weft_sock_read(k.s, &got, 1, wt_ms(10000)), 1);
	assert_int_equal(got, 'x');
	weft_sock_close(k.s);
	weft_sock_close(k.c);
	weft_sock_close(k.ls);
}

/* A small segment waiting for its reader holds about its own size of
 * lwIP's budget, not its frame's (net/lwip_tcp.c, weft__ltcp_fit): a 64-byte
 * segment left in a 1,518-byte frame, as rx_main's pbuf_realloc leaves it,
 * is copied into a block of its size and the frame freed; a segment that
 * fills most of its frame stays where it is; and without room in the
 * budget for the copy the frame stays, its bytes intact. */
static void test_small_segment_kept_at_its_size(void **state)
{
	(void)state;
	enum { FRAME = 1518, HDRS = 54, SMALL = 64, BIG = 1400 };
	weft__lwip_lock_take();
	size_t held0 = weft__lwip_mem_held(NULL);
	struct pbuf *p = pbuf_alloc(PBUF_RAW, FRAME, PBUF_RAM);
	assert_non_null(p);
	pbuf_realloc(p, HDRS + SMALL);
	assert_int_equal(pbuf_remove_header(p, HDRS), 0);
	for (int i = 0; i < SMALL; i++)
		((uint8_t *)p->payload)[i] = (uint8_t)(i * 7 + 1);
	size_t in_frame = weft__lwip_mem_held(NULL) - held0;
	struct pbuf *q = weft__ltcp_fit(p);
	size_t fitted = weft__lwip_mem_held(NULL) - held0;
	print_message("a %d-byte segment: %zu bytes held in its frame, %zu after\n", SMALL,
		      in_frame, fitted);
	assert_true(q != p);
	assert_true(in_frame > FRAME);
	/* The segment, a pbuf's header and the allocator's header, aligned. */
	assert_true(fitted <= SMALL + sizeof(struct pbuf) + 64);
	assert_int_equal(q->tot_len, SMALL);
	for (int i = 0; i < SMALL; i++)
		assert_int_equal(pbuf_get_at(q, (u16_t)i), (uint8_t)(i * 7 + 1));
	pbuf_free(q);
	assert_int_equal(weft__lwip_mem_held(NULL), held0);

	/* Most of the frame: kept. */
	p = pbuf_alloc(PBUF_RAW, FRAME, PBUF_RAM);
	assert_non_null(p);
	pbuf_realloc(p, HDRS + BIG);
	assert_int_equal(pbuf_remove_header(p, HDRS), 0);
	assert_ptr_equal(weft__ltcp_fit(p), p);
	pbuf_free(p);

	/* No room for the copy: the frame is kept. */
	p = pbuf_alloc(PBUF_RAW, FRAME, PBUF_RAM);
	assert_non_null(p);
	pbuf_realloc(p, HDRS + SMALL);
	assert_int_equal(pbuf_remove_header(p, HDRS), 0);
	memset(p->payload, 0x5a, SMALL);
	size_t budget = weft__lwip_budget();
	weft__lwip_set_budget(weft__lwip_mem_held(NULL));
	q = weft__ltcp_fit(p);
	weft__lwip_set_budget(budget);
	assert_ptr_equal(q, p);
	assert_int_equal(pbuf_get_at(q, SMALL - 1), 0x5a);
	pbuf_free(q);
	weft__lwip_unlock();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp_input_without_input_netif),
		cmocka_unit_test(test_small_segment_kept_at_its_size),
	};
	return WT_MAIN("lwip_input", tests, start, stop);
}
