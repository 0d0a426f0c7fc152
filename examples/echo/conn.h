/* SPDX-License-Identifier: MIT */
/* examples/echo's fiber per connection, in a header of its own so that
 * tests/test_echo_page.c runs this very code and holds it to its promise:
 * the fiber stays within its stack's top page (4 KiB), so on bare metal,
 * where a stack costs the pages its deepest call touched, a connection
 * costs one page of stack (issue 34, docs/boards/qemu-virt.md's Footprint).
 *
 * The buffer is what decides it. The deepest path under it, measured by
 * that test on qemu-virt (a write whose segments lwIP's loopback delivers
 * to the reader on the writer's stack, deeper than a device's output),
 * takes about 1 KiB more; with the 4 KiB buffer this had until then, every
 * connection touched a second page, held as long as its fiber lives. A
 * bigger message takes more reads and writes, no more memory. */
#ifndef ECHO_CONN_H
#define ECHO_CONN_H

#include <errno.h>
#include <stdint.h>

#include "weft_net.h"

#define ECHO_BUF 1024

/* What the client sends comes back, until it closes, an error, or no data
 * for idle_ns; s stays open (the caller closes it). A write that would have
 * to wait (the peer is not reading) may wait idle_ns from then on. The
 * write is tried without a deadline first (0: no wait): it nearly always
 * takes everything at once, and then the message costs one clock read,
 * the read's, not two (docs/benchmarks.md, kernel-socket echo). */
static inline void echo_serve(weft_sock_t *s, int64_t idle_ns)
{
	char buf[ECHO_BUF];
	for (;;) {
		ssize_t n = weft_sock_read(s, buf, sizeof buf, weft_deadline_in(idle_ns));
		if (n <= 0)
			break;
		ssize_t w = weft_sock_write(s, buf, (size_t)n, 0);
		if (w == n)
			continue;
		if (w < 0 && w != -ETIMEDOUT)
			break;
		size_t sent = w > 0 ? (size_t)w : 0, rest = (size_t)n - sent;
		if (weft_sock_write(s, buf + sent, rest, weft_deadline_in(idle_ns)) !=
		    (ssize_t)rest)
			break;
	}
}

#endif
