/* SPDX-License-Identifier: MIT */
/* Between the lwIP port (lwip_port.c) and the lwIP sockets (lwip_sock.c).
 * lwIP's core is owned by one lock: every call into lwIP, and so every
 * callback out of it, runs under net_lock. Callbacks only queue data and
 * complete waiters; the lock is never held across a park (waits go through
 * weft__waiter_wait, which lets it go). */
#ifndef WEFT_NET_LWIP_H
#define WEFT_NET_LWIP_H

#include "net.h"

extern weft__lock_t weft__lwip_lock;

void weft__lwip_lock_take(void);

/* Deliver what the loopback queues hold, wake the timer fiber if lwIP now
 * wants it sooner; the lock stays held. Returns true if anything was
 * delivered: the caller's condition may have changed, so look again
 * before parking. */
bool weft__lwip_flush(void);

/* The simulated wire (sim_wire.c, libweft-sim.a only; lwip_port.c calls
 * these only behind WEFT__SIM_WIRE, seam/sim_fault.h). up: with the loop
 * netif (loop), add the simulated hosts; under a seed with a wire fault
 * set, take the loopback queues and, with delay, start the wire fiber (0,
 * or the spawn's error); down: stop it,
 * free what it holds, remove the hosts. take: under the lwIP lock, true
 * when the wire took n's loopback queue (each frame cut, dropped,
 * doubled, held or delivered), false when it is not up (netif_poll's
 * turn). cuts: the partitions of the pair of hosts whose ends a and b
 * are (network order) started so far, and in *now whether it is cut now
 * (0 and false when either is not a host's end); for the scenarios'
 * checks (tests/sim/sim_part.c), taking the lwIP lock. */
struct netif;
int weft__sim_wire_up(bool loop);
uint64_t weft__sim_wire_cuts(uint32_t a, uint32_t b, bool *now);
void weft__sim_wire_down(void);
bool weft__sim_wire_take(struct netif *n);

/* weft__lwip_flush, then let the lock go. */
void weft__lwip_unlock(void);

/* Bring the port up (lwIP once per process, the interface, the service
 * fibers) and down. */
int weft__lwip_up(const weft_net_config_t *cfg);
void weft__lwip_down(void);
void weft__lwip_stats(weft_net_stats_t *out);

/* Frames lwIP dropped for want of memory or queue space. */
void weft__lwip_count_drop(void);

/* Frames over an interface, for the counters. */
void weft__lwip_count_frames(uint64_t in, uint64_t out);

/* The stack is going down: service fibers end. */
bool weft__lwip_stopping(void);
/* Cancel and join a service fiber, and forget it (*f = 0). */
void weft__lwip_stop_fiber(weft_fiber_t *f);

/* lwIP's memory (lwip_mem.c): its counters into out. */
void weft__lwip_mem_stats(weft_net_stats_t *out);
/* Read lwIP's byte budget from $WEFT_NET_MEM_KB (KiB, 16 to 2^30), or
 * when that is unset or empty make it a quarter of a bounded heap
 * (shim_heap_size), or none where the heap has no bound. 0, or
 * -EINVAL (malformed or out of range: the budget is unchanged). Called by
 * every weft__lwip_up before anything comes up; lwIP already holding more
 * than a new budget keeps what it holds and gets nothing more until it is
 * below it. */
int weft__lwip_mem_config(void);
/* For tests: make every n-th allocation of lwIP's fail (0: none). */
void weft__lwip_fail_every(unsigned n);
/* For tests: the budget in bytes (SIZE_MAX: none), and setting it until the
 * next weft__lwip_mem_config. */
size_t weft__lwip_budget(void);
void weft__lwip_set_budget(size_t bytes);
/* The budget's tiers (lwip_mem.c): on, lwIP's allocations are a received
 * frame's and may take the whole budget; off (as it starts), they stop an
 * eighth short of it. rx_main turns it on around its pbuf_alloc, under the
 * lwIP lock. */
void weft__lwip_mem_rx(bool on);
/* May a listener take a new connection: true, and counted, while the
 * connections admitted and not yet gone number fewer than
 * weft__lwip_conn_limit(); false (counted in mem_failed) from then on.
 * Whatever lwIP holds besides does not change it (lwip_mem.c, CONN_RESERVE).
 * Under the lwIP lock. weft__lwip_conn_gone: an admitted connection was
 * let go (closed, or dropped before any accept took it). */
bool weft__lwip_conn_admit(void);
void weft__lwip_conn_gone(void);
/* Three quarters of the budget over a connection's reserve (LONG_MAX
 * without a budget), or what a test set (weft__lwip_set_conn_limit; -1
 * goes back to the budget's); and, for tests, the count admitted now. */
long weft__lwip_conn_limit(void);
void weft__lwip_set_conn_limit(long n);
long weft__lwip_conns_admitted(void);
/* The bytes of the block that lwIP's allocation p is the start of, its
 * header included (what the budget counts for it). */
size_t weft__lwip_block_bytes(const void *p);
/* For tests: the bytes lwIP holds now (its blocks with their size
 * headers), and in *peak (if not NULL) the most it held since the last
 * call that asked, which starts the next such period at now. */
size_t weft__lwip_mem_held(size_t *peak);

/* lwIP's DNS client (lwip_dns.c): its server from cfg->dns or $WEFT_DNS
 * (10.0.2.3 for "virtio" by default, none otherwise), under the lwIP
 * lock; 0 or -EINVAL (malformed). down forgets the queries lwIP has not
 * answered. */
int weft__lwip_dns_up(const weft_net_config_t *cfg, const char *netif);
void weft__lwip_dns_down(void);

/* The device interface (lwip_netif.c): open spec ("tap:NAME",
 * "packet:NAME", "virtio") with cfg's addresses, or close it. */
struct ip4_addr;
struct ip6_addr;
int weft__lwip_dev_open(const char *spec, const weft_net_config_t *cfg);
void weft__lwip_dev_close(void);
/* "a.b.c.d/len" (len 24 if left out): 0 or -EINVAL. */
int weft__lwip_parse_cidr(const char *s, struct ip4_addr *ip, struct ip4_addr *mask);
/* What it accepts, for a refusal. */
#define WEFT__LWIP_CIDR_FORM "not an IPv4 address a.b.c.d/len (len 0 to 32) or a.b.c.d (/24)"
/* A device's global IPv6 address, "ADDR/64": 0, or -EINVAL with *why. */
int weft__lwip_parse_ip6(const char *s, struct ip6_addr *ip, const char **why);

/* weft_net_init refused with e, saying why: "weft_net_init: <why>" on the
 * console, one line, as weft_init's refusals are said. Returns e. */
int weft__lwip_refuse(int e, const char *fmt, ...);
/* A malformed value refused (-EINVAL): named as the field
 * (weft_net_config_t.FIELD "V") when from_field, else as the
 * variable (VAR=V), with what is accepted. */
int weft__lwip_bad_value(bool from_field, const char *field, const char *var, const char *v,
			 const char *accepted);

#endif
