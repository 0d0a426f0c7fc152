/* SPDX-License-Identifier: MIT */
/* lwIP's port header for weft: the C library supplies the types, errno and
 * printf; diagnostics and failed assertions go through net/lwip_port.c. */
#ifndef WEFT_LWIP_CC_H
#define WEFT_LWIP_CC_H

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#define LWIP_ERRNO_STDINCLUDE 1

/* ssize_t comes from <sys/types.h>; without SSIZE_MAX (strict C11 hides
 * it) lwIP would typedef its own, an int. */
#ifndef SSIZE_MAX
#define SSIZE_MAX LONG_MAX
#endif
#define LWIP_NO_CTYPE_H 0

/* Every CPU weft runs on is little-endian. */
#ifndef BYTE_ORDER
#define BYTE_ORDER LITTLE_ENDIAN
#endif

void weft__lwip_assert(const char *msg, const char *file, int line);
uint32_t weft__lwip_rand(void);
/* lwIP's heap and pools (MEM_LIBC_MALLOC, MEMP_MEM_MALLOC): the C library's,
 * counted in the port so that weft_net_stats shows what lwIP holds. */
void *weft__lwip_malloc(size_t size);
void *weft__lwip_calloc(size_t n, size_t size);
void weft__lwip_free(void *p);
void *weft__lwip_timeout_alloc(void);
void weft__lwip_timeout_free(void *t);

#define LWIP_PLATFORM_DIAG(x) \
	do {                  \
		printf x;     \
	} while (0)
#define LWIP_PLATFORM_ASSERT(x) weft__lwip_assert((x), __FILE__, __LINE__)

#endif
