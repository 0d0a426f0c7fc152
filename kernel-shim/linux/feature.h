/* SPDX-License-Identifier: MIT */
/* The kernel features the Linux backends probe at their setup (io_uring:
 * uring.c and uring_sock.c; AF_XDP: xdp.c), the one line on stderr each
 * fallback says, and $WEFT_IO_MISSING, the test and debug knob that makes
 * the probes report features missing (feature.c). Private to the Linux
 * shim. */
#ifndef WEFT_SHIM_LINUX_FEATURE_H
#define WEFT_SHIM_LINUX_FEATURE_H

#include <stdbool.h>
#include <stddef.h>

/* Each feature, its name in $WEFT_IO_MISSING in the comment, the Linux
 * release that brought it, and what is used without it. */
enum shim_feature {
	SF_URING,            /* io_uring: io_uring_setup (5.1) -> epoll */
	SF_SINGLE_MMAP,      /* single_mmap: IORING_FEAT_SINGLE_MMAP (5.4) -> epoll */
	SF_NODROP,           /* nodrop: IORING_FEAT_NODROP (5.5) -> epoll */
	SF_EXT_ARG,          /* ext_arg: IORING_FEAT_EXT_ARG (5.11) -> epoll */
	SF_OPCODES,          /* opcodes: IORING_REGISTER_PROBE (5.6) finds NOP,
				POLL_ADD, POLL_REMOVE, ASYNC_CANCEL -> epoll */
	SF_MULTISHOT_POLL,   /* multishot_poll: IORING_POLL_ADD_MULTI (5.13) ->
				one-shot polls armed at each wait, and no
				completion sockets */
	SF_COOP_TASKRUN,     /* coop_taskrun: IORING_SETUP_COOP_TASKRUN and
				TASKRUN_FLAG (5.19) -> completions interrupt the
				submitting thread */
	SF_MULTISHOT_ACCEPT, /* multishot_accept: IORING_OP_ACCEPT (5.5) with
				IORING_ACCEPT_MULTISHOT (5.19) -> accepts wait
				for readiness */
	SF_PBUF_RING,        /* pbuf_ring: IORING_REGISTER_PBUF_RING (5.19) ->
				receives wait for readiness */
	SF_MULTISHOT_RECV,   /* multishot_recv: IORING_OP_RECV (5.6) with
				IORING_RECV_MULTISHOT (6.0) -> receives wait for
				readiness */
	SF_XDP_LINK,         /* xdp_link: BPF_LINK_CREATE for XDP (5.9) -> the
				program attached through netlink (IFLA_XDP) */
	SF_COUNT
};

/* True when $WEFT_IO_MISSING names feature f: its probe is to report it
 * missing, as a kernel without it would. Read at each call. */
bool shim_feature_hidden(enum shim_feature f);

/* NULL when $WEFT_IO_MISSING is unset, empty or a comma-separated list of
 * the names above; otherwise the text weft_init refuses it with. */
const char *shim_feature_config_error(void);

/* "no <feature> (<its kernel name>: <why>)" into buf (why NULL: as
 * below), for a line said elsewhere (io.c's "...; using epoll"). */
void shim_feature_text(enum shim_feature f, const char *why, char *buf, size_t cap);

/* Say, once per process per feature, that feature f is missing and what is
 * used instead: "weft: <where>: no <feature> (<its kernel name>: <why>);
 * <instead>". why NULL: "Linux <release> needed"; "WEFT_IO_MISSING=<name>"
 * whenever the knob hides it.
 * True when the line was written now (false: said before). */
bool shim_feature_fallback(enum shim_feature f, const char *why);

/* Test hook: forget what was said, so that the next fallbacks speak again. */
void shim_feature_said_reset(void);

#endif
