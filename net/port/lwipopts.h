/* SPDX-License-Identifier: MIT */
/* weft's lwIP configuration: NO_SYS with the raw API, the core owned by the
 * network layer's lock (net/lwip_port.c). Memory comes from malloc, so no
 * pool is sized here; what bounds memory is per connection (the windows
 * below), per listener (its backlog) and per UDP socket (its queue). */
#ifndef WEFT_LWIPOPTS_H
#define WEFT_LWIPOPTS_H

#define NO_SYS 1
#define SYS_LIGHTWEIGHT_PROT 0 /* every call into lwIP holds the net lock */
#define LWIP_SOCKET 0
#define LWIP_NETCONN 0
#define LWIP_TIMERS 1

/* Memory: the C library's malloc for the heap and for every pool. */
#define MEM_LIBC_MALLOC 1
#define MEMP_MEM_MALLOC 1
#define mem_clib_malloc weft__lwip_malloc
#define mem_clib_calloc weft__lwip_calloc
#define mem_clib_free weft__lwip_free
/* Timeouts from a static pool of MEMP_NUM_SYS_TIMEOUT records (lwIP's own
 * bound on timeouts armed at once), not malloc: net/patches/0003. A cyclic
 * timer's re-arm then cannot fail and lose the timer. */
#define LWIP_SYS_TIMEOUT_ALLOC() weft__lwip_timeout_alloc()
#define LWIP_SYS_TIMEOUT_FREE(t) weft__lwip_timeout_free(t)
#define MEM_ALIGNMENT 8
#define MEMP_NUM_TCP_PCB 4096 /* unused with MEMP_MEM_MALLOC, but checked */
#define MEMP_NUM_TCP_PCB_LISTEN 64
#define MEMP_NUM_UDP_PCB 64
#define MEMP_NUM_TCP_SEG 4096
#define PBUF_POOL_SIZE 256

/* Protocols: IPv4 with ARP, ICMP, UDP and TCP; IPv6 with ICMPv6, neighbour
 * discovery and MLD (the loop interface has ::1, a device interface its
 * link-local address; no DHCPv6). lwIP's IPv6 sockets take IPv6 only. */
#define LWIP_IPV4 1
#define LWIP_IPV6 1
#define LWIP_IPV6_DHCP6 0
#define LWIP_IPV6_MLD 1
#define LWIP_IPV6_FRAG 1
#define LWIP_IPV6_REASS 1
#define IPV6_FRAG_COPYHEADER 1 /* needed where pointers are 64-bit */
#define LWIP_ARP 1
#define LWIP_ETHERNET 1
#define LWIP_ICMP 1
#define LWIP_RAW 0
#define LWIP_UDP 1
#define LWIP_TCP 1
#define LWIP_DHCP 0
#define LWIP_AUTOIP 0
#define LWIP_IGMP 0
#define IP_REASSEMBLY 1
#define IP_FRAG 1
#define ARP_TABLE_SIZE 64
#define ARP_QUEUEING 1

/* TCP: full-size segments, windows of 16 segments (no window scaling: a
 * u16 window), listen backlogs, address reuse, keepalive, and a short MSL
 * so that TIME_WAIT does not pile up under connection churn. */
#define TCP_MSS 1460
#define TCP_WND (16 * TCP_MSS)
#define TCP_SND_BUF (16 * TCP_MSS)
#define TCP_SND_QUEUELEN (4 * TCP_SND_BUF / TCP_MSS)
#define TCP_SNDLOWAT (TCP_SND_BUF / 2)
#define TCP_OVERSIZE TCP_MSS
#define TCP_LISTEN_BACKLOG 1
#define TCP_DEFAULT_LISTEN_BACKLOG 0xff
#define TCP_MSL 1000UL
/* net/patches/0007: LAST-ACK (our FIN sent after the peer's) lasts this
 * long, not 2 * TCP_MSL, which would end it before its FIN is sent again
 * (the first RTO is 3 s): 120 s, stock lwIP's 2 * 60 s, time for five
 * backed-off retransmissions of a lost FIN. Only a PCB whose FIN goes
 * unacknowledged stays that long, and lwIP takes LAST-ACK PCBs back first
 * when it needs one (tcp_alloc's tcp_kill_state). */
#define TCP_LAST_ACK_TIMEOUT 120000UL
/* net/patches/0002: tcp_input finds its PCB in a hash of 4096 buckets
 * (32 KiB of pointers on a 64-bit target), not by walking the lists. */
#define TCP_PCB_HASH_BITS 12
#define TCP_QUEUE_OOSEQ 1
#define SO_REUSE 1
#define LWIP_TCP_KEEPALIVE 1
#define LWIP_CALLBACK_API 1
#define LWIP_WND_SCALE 0

/* Interfaces: the loopback interface is the in-memory wire (127.0.0.1, ::1);
 * its queue is drained under the net lock before the lock is let go. */
#define LWIP_NETIF_LOOPBACK 1
#define LWIP_HAVE_LOOPIF 1
#define LWIP_LOOPBACK_MAX_PBUFS 0
#define LWIP_NETIF_LOOPBACK_MULTITHREADING 0
#define LWIP_SINGLE_NETIF 0
#define LWIP_NETIF_STATUS_CALLBACK 0
#define LWIP_NETIF_LINK_CALLBACK 0

/* DNS: lwIP's client for weft_addr_resolve (net/lwip_dns.c), A and AAAA
 * queries, one server (weft_net_config_t.dns). Queries in flight at once,
 * abandoned ones included until lwIP gives up on them (about 7 s of
 * retries): DNS_TABLE_SIZE; beyond, a resolve says -EAGAIN. */
#define LWIP_DNS 1
#define DNS_TABLE_SIZE 8
#define DNS_MAX_SERVERS 1

#define LWIP_STATS 0
#define LWIP_CHKSUM_ALGORITHM 3
#define LWIP_RAND() weft__lwip_rand()

#endif
