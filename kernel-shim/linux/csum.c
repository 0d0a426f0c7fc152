/* SPDX-License-Identifier: MIT */
/* A frame a packet socket receives from a veth peer (or any interface whose
 * sender offloads checksums) may be CHECKSUM_PARTIAL: the sender's kernel
 * put only the pseudo-header's sum in the TCP or UDP checksum field and left
 * the rest to a device that never ran. The packet socket says so with
 * TP_STATUS_CSUMNOTREADY in PACKET_AUXDATA; lwIP, which checks every
 * checksum, would drop the frame. The device's work is done here instead,
 * as the kernel's skb_checksum_help does: the one's-complement sum from the
 * transport header to the end, the field included, folded and inverted. */
#include "csum.h"

enum { PROTO_TCP = 6, PROTO_UDP = 17 };

static unsigned be16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }

static int complete(uint8_t *l4, size_t l4len, unsigned proto)
{
	size_t off = proto == PROTO_TCP ? 16 : proto == PROTO_UDP ? 6 : 0;
	if (!off || l4len < off + 2)
		return 0;
	uint64_t sum = 0;
	size_t i = 0;
	for (; i + 1 < l4len; i += 2)
		sum += be16(l4 + i);
	if (i < l4len)
		sum += (unsigned)l4[i] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	unsigned c = ~(unsigned)sum & 0xffff;
	if (proto == PROTO_UDP && c == 0)
		c = 0xffff; /* 0 means "no checksum" for UDP */
	l4[off] = (uint8_t)(c >> 8);
	l4[off + 1] = (uint8_t)c;
	return 1;
}

int shim_csum_complete(uint8_t *frame, size_t len, size_t net)
{
	if (net >= len)
		return 0;
	uint8_t *ip = frame + net;
	size_t room = len - net;
	switch (ip[0] >> 4) {
	case 4: {
		size_t ihl = (size_t)(ip[0] & 15) * 4;
		if (ihl < 20 || room < ihl)
			return 0;
		size_t total = be16(ip + 2);
		/* a fragment is never left partial */
		if ((be16(ip + 6) & 0x3fff) != 0 || total < ihl || total > room)
			return 0;
		return complete(ip + ihl, total - ihl, ip[9]);
	}
	case 6: {
		if (room < 40)
			return 0;
		size_t payload = be16(ip + 4);
		if (payload > room - 40)
			return 0;
		return complete(ip + 40, payload, ip[6]);
	}
	default:
		return 0;
	}
}
