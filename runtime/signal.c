/* SPDX-License-Identifier: MIT */
/* Waiting for a signal: the shim makes the set an I/O source (Linux: a
 * signalfd), and the caller waits on it as on any other, so it parks alone
 * and keeps the deadline and cancellation of every wait. The source lives
 * for one call: two waiters on different sets each have their own, and
 * each occurrence of a signal is read, so taken, by one of them. */
#include "internal.h"

int weft_signal_block(uint64_t set) { return shim_signal_block(set); }

int weft_signal_wait(uint64_t set, int64_t deadline, int *signo)
{
	if (!signo || !set)
		return -EINVAL;
	if (!weft__running())
		return -ESRCH;
	int src = shim_signal_open(set);
	if (src < 0)
		return src;
	/* The reactor reads a negative deadline other than -1 as none. */
	deadline = weft__deadline_norm(deadline);
	int r;
	for (;;) {
		/* A signal already pending is taken without a wait. Each pass
		 * either takes one or waits for a report: another waiter may
		 * have taken the one reported, and then this one waits again. */
		r = shim_signal_take(src);
		if (r > 0) {
			*signo = r;
			r = 0;
			break;
		}
		if (r != -EAGAIN)
			break;
		r = weft__io_wait_drained(src, WEFT_IO_IN, deadline);
		if (r < 0)
			break;
	}
	weft__io_forget(src);
	shim_signal_close(src);
	return r;
}
