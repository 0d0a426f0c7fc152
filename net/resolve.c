/* SPDX-License-Identifier: MIT */
/* weft_addr_resolve: "host[:port]" to an address. What needs no network is
 * answered here, on every stack and with the stack down: a numeric address
 * (weft_addr_parse, either family) and "localhost" (127.0.0.1 or ::1, RFC
 * 6761), of the family the caller prefers. A name goes to
 * the stack that is up: the host's resolver on a helper thread for
 * "kernel" (kernel_resolve.c), lwIP's DNS client for "lwip" (lwip_dns.c). */
#include <string.h>

#include "net.h"

/* A host name as RFC 1123 allows it: letters, digits, '-' and '.', at most
 * 253 characters (one more with a final dot), labels of 1 to 63. */
static bool name_ok(const char *h, size_t n)
{
	if (n && h[n - 1] == '.')
		n--;
	if (n == 0 || n > 253)
		return false;
	size_t label = 0;
	for (size_t i = 0; i < n; i++) {
		char c = h[i];
		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		bool alnum =
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && c != '-')
			return false;
		if (++label > 63)
			return false;
	}
	return label > 0;
}

static bool is_localhost(const char *h, size_t n)
{
	static const char lh[] = "localhost";
	if (n == sizeof lh && h[n - 1] == '.')
		n--;
	if (n != sizeof lh - 1)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = h[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != lh[i])
			return false;
	}
	return true;
}

/* May pref answer with family? */
static bool allows(int pref, int family)
{
	return family == WEFT_AF_INET ? pref != WEFT_RESOLVE_INET6 : pref != WEFT_RESOLVE_INET;
}

int weft_addr_resolve_family(const char *s, int pref, weft_addr_t *out, int64_t deadline)
{
	if (!s || !out || pref < WEFT_RESOLVE_INET_FIRST || pref > WEFT_RESOLVE_INET6)
		return -EINVAL;
	deadline = weft__deadline_norm(deadline);
	weft_addr_t a;
	if (weft_addr_parse(s, &a) == 0) {
		if (!allows(pref, a.family))
			return -ENOENT; /* a number of the family not asked for */
		*out = a;
		return 0;
	}
	/* The port after the last ':' (a name has none of its own). */
	const char *colon = strrchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s);
	unsigned long port = 0;
	if (colon) {
		const char *p = colon + 1;
		int digits = 0;
		while (*p >= '0' && *p <= '9' && digits < 6) {
			port = port * 10 + (unsigned long)(*p++ - '0');
			digits++;
		}
		if (digits == 0 || digits > 5 || *p || port > 65535)
			return -EINVAL;
	}
	if (!name_ok(s, n))
		return -EINVAL;
	if (is_localhost(s, n)) {
		/* 127.0.0.1 or ::1, whichever pref takes first. */
		bool v6 = pref == WEFT_RESOLVE_INET6 || pref == WEFT_RESOLVE_INET6_FIRST;
		a = (weft_addr_t){.port = (uint16_t)port};
		if (v6) {
			a.family = WEFT_AF_INET6;
			a.ip6[15] = 1;
		} else {
			const uint8_t lo[4] = {127, 0, 0, 1};
			memcpy(&a.ip, lo, 4);
		}
		*out = a;
		return 0;
	}
	char name[256];
	memcpy(name, s, n);
	name[n] = 0;
	const struct net_ops *ops = weft__net_hold();
	if (!ops)
		return -ESRCH;
	int err = ops->resolve(name, pref, &a, deadline);
	weft__net_release();
	if (err)
		return err;
	a.port = (uint16_t)port;
	*out = a;
	return 0;
}

int weft_addr_resolve(const char *s, weft_addr_t *out, int64_t deadline)
{
	return weft_addr_resolve_family(s, WEFT_RESOLVE_INET_FIRST, out, deadline);
}
