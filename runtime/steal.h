/* SPDX-License-Identifier: MIT */
/* Work stealing (steal.c). */
#ifndef WEFT_STEAL_H
#define WEFT_STEAL_H

struct weft__worker;

/* Half of a random victim's bulk deque, one of it returned and the rest in
 * w's; with every one empty, a victim's next-run slot that has waited too
 * long. NULL: nothing. */
struct weft__fiber *weft__steal(struct weft__worker *w);
/* The idle monitor's look (idle.c): the first victim's next-run slot that
 * has held the same fiber since w's last look at it, RUNNEXT_GRACE_NS or
 * more ago, while the victim did not switch. NULL: none. */
struct weft__fiber *weft__steal_stale(struct weft__worker *w);
/* The same for the latency-sensitive class, without the slots. */
struct weft__fiber *weft__steal_high(struct weft__worker *w);

#endif
