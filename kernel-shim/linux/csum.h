/* SPDX-License-Identifier: MIT */
/* Completing a TCP or UDP checksum the kernel left to the device
 * (csum.c). Private to the Linux shim. */
#ifndef WEFT_SHIM_LINUX_CSUM_H
#define WEFT_SHIM_LINUX_CSUM_H

#include <stddef.h>
#include <stdint.h>

/* frame holds len bytes of an Ethernet frame whose network header starts at
 * net. If it is an unfragmented IPv4 or an IPv6 packet (no extension
 * headers) carrying TCP or UDP, its checksum field, which holds the
 * pseudo-header's sum as the sender's kernel left it for the device to
 * finish, is made the full checksum; returns 1. Anything else is left as
 * it is; returns 0. */
int shim_csum_complete(uint8_t *frame, size_t len, size_t net);

#endif
