/* SPDX-License-Identifier: MIT */
/* libFuzzer: the runtime's configuration strings, every parser of them at
 * once: addresses (weft_addr_parse: HTTPD_ADDR, WEFT_GW, weft_net_config_t's
 * gw), an interface's address with its prefix (weft__lwip_parse_cidr:
 * WEFT_IP, weft_net_config_t's ip) and the numbers (weft__parse_ulong:
 * WEFT_WORKERS, WEFT_STACK_KB). The input is one string; what a parser
 * accepts must read back the same (an address of either family, formatted
 * and parsed again). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "internal.h"
#include "lwip.h"
#include "lwip/ip4_addr.h"
#include "weft_net.h"

static void check_addr(const char *s)
{
	weft_addr_t a, b;
	int e = weft_addr_parse(s, &a);
	FUZZ_CHECK(e == 0 || e == -EINVAL);
	if (e)
		return;
	/* IPv4 "a.b.c.d[:port]", or IPv6 "v6", "v6%zone", "[v6]:port" (a
	 * dotted IPv4 tail allowed in v6): nothing else parses. */
	FUZZ_CHECK(strspn(s, "0123456789abcdefABCDEF.:[]%") == strlen(s));
	FUZZ_CHECK(a.family == WEFT_AF_INET || a.family == WEFT_AF_INET6);
	char buf[WEFT_ADDR_STRLEN];
	FUZZ_CHECK(weft_addr_format(&a, buf, sizeof buf) == buf);
	FUZZ_CHECK(weft_addr_parse(buf, &b) == 0 && a.family == b.family && a.port == b.port);
	if (a.family == WEFT_AF_INET)
		FUZZ_CHECK(a.ip == b.ip);
	else
		FUZZ_CHECK(memcmp(a.ip6, b.ip6, sizeof a.ip6) == 0 && a.scope == b.scope);
}

static void check_cidr(const char *s)
{
	ip4_addr_t ip, mask;
	int e = weft__lwip_parse_cidr(s, &ip, &mask);
	FUZZ_CHECK(e == 0 || e == -EINVAL);
	if (e)
		return;
	uint32_t m = lwip_ntohl(mask.addr);
	FUZZ_CHECK((m & (~m >> 1)) == 0); /* ones, then zeros */
	const uint8_t *b = (const uint8_t *)&ip.addr;
	int len = 0;
	while (len < 32 && (m << len) & 0x80000000u)
		len++;
	char buf[32];
	snprintf(buf, sizeof buf, "%u.%u.%u.%u/%d", b[0], b[1], b[2], b[3], len);
	ip4_addr_t ip2, mask2;
	FUZZ_CHECK(weft__lwip_parse_cidr(buf, &ip2, &mask2) == 0);
	FUZZ_CHECK(ip2.addr == ip.addr && mask2.addr == mask.addr);
}

static void check_ulong(const char *s, unsigned long lo, unsigned long hi)
{
	unsigned long v = lo - 1;
	int e = weft__parse_ulong(s, lo, hi, &v);
	FUZZ_CHECK(e == 0 || e == -EINVAL);
	if (e)
		return;
	FUZZ_CHECK(v >= lo && v <= hi);
	FUZZ_CHECK(strchr(s, '-') == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = 0;
	check_addr(s);
	check_cidr(s);
	check_ulong(s, 1, WEFT_MAX_WORKERS);   /* WEFT_WORKERS */
	check_ulong(s, 4, (1ul << 30) / 1024); /* WEFT_STACK_KB */
	free(s);
	return 0;
}
