/* SPDX-License-Identifier: MIT */
/* The runtime's shared state (weft__rt) and which worker the calling thread
 * drives. Every other file reads these; this one calls nothing, so reading
 * them ties no file to the scheduler. */
#include "internal.h"

struct weft__rt weft__rt;

WEFT__TLS_IE _Thread_local struct weft__worker *weft__tls_worker;

struct weft__worker *weft__worker_self(void) { return weft__tls_worker; }

void weft__set_worker(struct weft__worker *w)
{
	weft__tls_worker = w;
	if (w)
		w->errno_loc = &errno;
}
