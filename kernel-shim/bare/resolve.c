/* SPDX-License-Identifier: MIT */
/* Names on bare metal: there is no host resolver (lwIP's DNS client, in
 * net/, is the bare-metal path), so shim_resolve says so. */
#include <errno.h>

#include "shim.h"

int shim_resolve(const char *name, uint32_t *ip)
{
	(void)name, (void)ip;
	return -ENOSYS;
}

int shim_resolve6(const char *name, uint8_t ip6[16], uint32_t *scope)
{
	(void)name, (void)ip6, (void)scope;
	return -ENOSYS;
}
