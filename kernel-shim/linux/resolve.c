/* SPDX-License-Identifier: MIT */
/* Names through the C library's resolver: getaddrinfo for a stream
 * address of one family. It blocks; net/resolve.c calls it on a helper thread. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "shim.h"

/* getaddrinfo for name's stream addresses of family; its failure as
 * -errno. */
static int lookup(const char *name, int family, struct addrinfo **res)
{
	struct addrinfo hints;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM;
	int r = getaddrinfo(name, NULL, &hints, res);
	switch (r) {
	case 0:
		return 0;
	case EAI_NONAME:
#ifdef EAI_NODATA
	case EAI_NODATA:
#endif
#ifdef EAI_ADDRFAMILY
	case EAI_ADDRFAMILY:
#endif
		return -ENOENT;
	case EAI_AGAIN:
		return -EAGAIN;
	case EAI_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

int shim_resolve(const char *name, uint32_t *ip)
{
	struct addrinfo *res = NULL;
	int err = lookup(name, AF_INET, &res);
	if (err)
		return err;
	err = -ENOENT;
	for (const struct addrinfo *a = res; a; a = a->ai_next) {
		if (a->ai_family == AF_INET && a->ai_addr) {
			const struct sockaddr_in *in = (const struct sockaddr_in *)a->ai_addr;
			*ip = in->sin_addr.s_addr;
			err = 0;
			break;
		}
	}
	freeaddrinfo(res);
	return err;
}

int shim_resolve6(const char *name, uint8_t ip6[16], uint32_t *scope)
{
	struct addrinfo *res = NULL;
	int err = lookup(name, AF_INET6, &res);
	if (err)
		return err;
	err = -ENOENT;
	for (const struct addrinfo *a = res; a; a = a->ai_next) {
		if (a->ai_family == AF_INET6 && a->ai_addr) {
			const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)a->ai_addr;
			memcpy(ip6, &in6->sin6_addr, 16);
			*scope = in6->sin6_scope_id;
			err = 0;
			break;
		}
	}
	freeaddrinfo(res);
	return err;
}
