/* SPDX-License-Identifier: MIT */
/* Names through the C library's resolver: getaddrinfo for an IPv4 stream
 * address. It blocks; net/resolve.c calls it on a helper thread. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "shim.h"

int shim_resolve(const char *name, uint32_t *ip)
{
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	int r = getaddrinfo(name, NULL, &hints, &res);
	switch (r) {
	case 0:
		break;
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
	int err = -ENOENT;
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
