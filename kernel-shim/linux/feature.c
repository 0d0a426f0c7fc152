/* SPDX-License-Identifier: MIT */
/* The kernel features the Linux backends probe (feature.h): their names,
 * the release that brought each and what stands in for it, the one line a
 * fallback says, and $WEFT_IO_MISSING, which hides features from the
 * probes so that each fallback can be tested on a kernel that has them. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "linux/feature.h"
#include "shim.h"

static const struct {
	const char *name, *what, *ident, *since, *where, *instead;
} feat[SF_COUNT] = {
	[SF_URING] = {"io_uring", "io_uring", "io_uring_setup", "5.1", "WEFT_IO=uring",
		      "using epoll"},
	[SF_SINGLE_MMAP] = {"single_mmap", "single ring mapping", "IORING_FEAT_SINGLE_MMAP", "5.4",
			    "WEFT_IO=uring", "using epoll"},
	[SF_NODROP] = {"nodrop", "completions kept on overflow", "IORING_FEAT_NODROP", "5.5",
		       "WEFT_IO=uring", "using epoll"},
	[SF_EXT_ARG] = {"ext_arg", "timed waits", "IORING_FEAT_EXT_ARG", "5.11", "WEFT_IO=uring",
			"using epoll"},
	[SF_OPCODES] = {"opcodes", "NOP, POLL_ADD, POLL_REMOVE or ASYNC_CANCEL",
			"IORING_REGISTER_PROBE", "5.6", "WEFT_IO=uring", "using epoll"},
	[SF_MULTISHOT_POLL] = {"multishot_poll", "multishot poll", "IORING_POLL_ADD_MULTI", "5.13",
			       "WEFT_IO=uring",
			       "one-shot polls armed at each wait instead, and accepts and "
			       "receives wait for readiness"},
	[SF_COOP_TASKRUN] = {"coop_taskrun", "cooperative task work", "IORING_SETUP_COOP_TASKRUN",
			     "5.19", "WEFT_IO=uring",
			     "completions interrupt the thread that submitted them instead"},
	[SF_MULTISHOT_ACCEPT] = {"multishot_accept", "multishot accept", "IORING_ACCEPT_MULTISHOT",
				 "5.19", "WEFT_IO=uring", "accepts wait for readiness instead"},
	[SF_PBUF_RING] = {"pbuf_ring", "provided buffer rings", "IORING_REGISTER_PBUF_RING", "5.19",
			  "WEFT_IO=uring", "receives wait for readiness instead"},
	[SF_MULTISHOT_RECV] = {"multishot_recv", "multishot receive", "IORING_RECV_MULTISHOT",
			       "6.0", "WEFT_IO=uring", "receives wait for readiness instead"},
	[SF_XDP_LINK] = {"xdp_link", "XDP through a BPF link", "BPF_LINK_CREATE", "5.9",
			 "WEFT_NETIF=xdp",
			 "the program is attached through netlink instead, and stays on the "
			 "interface if the process is killed"},
};

static _Atomic unsigned said;

/* Each comma-separated word of $WEFT_IO_MISSING, as a feature's bit; bit
 * SF_COUNT for a word that names none, the first such word in *bad. */
static unsigned hidden_bad(const char **bad, size_t *badlen)
{
	const char *s = shim_getenv("WEFT_IO_MISSING");
	unsigned m = 0;
	while (s && *s) {
		size_t n = strcspn(s, ",");
		unsigned f = SF_COUNT;
		for (unsigned i = 0; i < SF_COUNT; i++)
			if (strlen(feat[i].name) == n && strncmp(s, feat[i].name, n) == 0)
				f = i;
		if (f == SF_COUNT && !(m & (1u << SF_COUNT))) {
			*bad = s;
			*badlen = n;
		}
		m |= 1u << f;
		s += n;
		if (*s == ',')
			s++;
	}
	return m;
}

static unsigned hidden(void)
{
	const char *bad;
	size_t n;
	return hidden_bad(&bad, &n);
}

bool shim_feature_hidden(enum shim_feature f) { return hidden() & (1u << f); }

const char *shim_feature_config_error(void)
{
	static char msg[160];
	const char *bad = NULL;
	size_t n = 0;
	if (!(hidden_bad(&bad, &n) & (1u << SF_COUNT)))
		return NULL;
	snprintf(msg, sizeof msg,
		 "WEFT_IO_MISSING: \"%.*s\" is not a feature weft probes "
		 "(docs/decisions/io-uring.md)",
		 (int)(n < 40 ? n : 40), bad);
	return msg;
}

void shim_feature_text(enum shim_feature f, const char *why, char *buf, size_t cap)
{
	if (shim_feature_hidden(f))
		snprintf(buf, cap, "no %s (%s: WEFT_IO_MISSING=%s)", feat[f].what, feat[f].ident,
			 feat[f].name);
	else if (why)
		snprintf(buf, cap, "no %s (%s: %s)", feat[f].what, feat[f].ident, why);
	else
		snprintf(buf, cap, "no %s (%s: Linux %s needed)", feat[f].what, feat[f].ident,
			 feat[f].since);
}

bool shim_feature_fallback(enum shim_feature f, const char *why)
{
	if (atomic_fetch_or(&said, 1u << f) & (1u << f))
		return false;
	char text[200], msg[400];
	shim_feature_text(f, why, text, sizeof text);
	int n = snprintf(msg, sizeof msg, "weft: %s: %s; %s\n", feat[f].where, text,
			 feat[f].instead);
	if (n > 0)
		shim_console_write(msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
	return true;
}

void shim_feature_said_reset(void) { atomic_store(&said, 0); }
