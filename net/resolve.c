/* SPDX-License-Identifier: MIT */
/* weft_addr_resolve: "host[:port]" to an address. What needs no network is
 * answered here, on every stack and with the stack down: a numeric address
 * (weft_addr_parse) and "localhost" (127.0.0.1, RFC 6761). A name goes to
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

int weft_addr_resolve(const char *s, weft_addr_t *out, int64_t deadline)
{
	if (!s || !out)
		return -EINVAL;
	deadline = weft__deadline_norm(deadline);
	weft_addr_t a;
	if (weft_addr_parse(s, &a) == 0) {
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
		const uint8_t lo[4] = {127, 0, 0, 1};
		memcpy(&out->ip, lo, 4);
		out->port = (uint16_t)port;
		return 0;
	}
	char name[256];
	memcpy(name, s, n);
	name[n] = 0;
	const struct net_ops *ops = weft__net_hold();
	if (!ops)
		return -ESRCH;
	uint32_t ip = 0;
	int err = ops->resolve(name, &ip, deadline);
	weft__net_release();
	if (err)
		return err;
	out->ip = ip;
	out->port = (uint16_t)port;
	return 0;
}
