/* SPDX-License-Identifier: MIT */
/* Helpers shared by the CMocka suites.
 *
 * CMocka's assertions longjmp back to the test on the test's own thread, so
 * they may only be used there: a fiber records what it saw (in a struct, or
 * its result) and the test asserts after joining it. */
#ifndef WEFT_TESTUTIL_H
#define WEFT_TESTUTIL_H

#include <errno.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "weft.h"
#include "weft_net.h"

/* Group setup/teardown: weft_init(NULL) / weft_run + weft_shutdown. */
int wt_start(void **state);
int wt_stop(void **state);

/* Per-test setup/teardown for suites that start the runtime per test. */
int wt_start_each(void **state);
int wt_stop_each(void **state);

/* Inside a test of a suite whose group started the runtime: run it down and
 * start one of the test's own (workers, WEFT_CFG_* flags), and then the
 * group's default again (asserts on errors). */
void wt_restart(unsigned workers, unsigned flags);
void wt_restart_default(void);

/* A deadline ms milliseconds from now. */
int64_t wt_ms(int64_t ms);

/* Spawn fn(arg) as a fiber and return its handle (asserts on errors). */
weft_fiber_t wt_spawn(weft_fn fn, void *arg);

/* wt_spawn with a name (attr.name), for wt_wait_parked. */
weft_fiber_t wt_spawn_named(weft_fn fn, void *arg, const char *name);

/* Wait until the live fiber named name is parked on why (what weft_dump_to
 * prints after "parked: ", e.g. "future", "chan recv", "fd"; NULL: on
 * anything), looking at weft_dump_to's output every millisecond. Returns 1,
 * or 0 after 10 s. The observable state a test waits for instead of
 * sleeping "long enough" for another fiber to park: once it returns 1, a
 * wake or a cancellation finds the fiber committed to that wait. The name
 * should be unique among the fibers alive. */
int wt_wait_parked(const char *name, const char *why);

/* The state line weft_dump_to prints for the live fiber named name (up to
 * cap - 1 bytes, without its newline) into out. Returns 1, or 0 if no such
 * fiber was listed. */
int wt_dump_line(const char *name, char *out, size_t cap);

/* Join f within 30 s and return its result (asserts: a bug fails the test
 * instead of hanging it). */
void *wt_join(weft_fiber_t f);

/* wt_spawn + wt_join. */
void *wt_run_fiber(weft_fn fn, void *arg);

/* Wait until *flag is set, polling every millisecond, from a fiber or a
 * thread. Returns 1, or 0 after 10 s. Under a seed (wt_sim) it yields
 * through the runtime instead, and sleeps 1 ms only every 10,000th look,
 * 1,000,000 looks at most (wt_wait_parked too). */
int wt_wait_flag(_Atomic int *flag);

/* In a fiber: yield until *flag is set (at most 10 s), then once more, and
 * return how many of those yields returned -ECANCELED: what a cancellation
 * test counts to prove a request was delivered exactly once. */
int wt_yield_count_cancels(_Atomic int *flag);

/* A plain thread that is not a fiber (a pthread on Linux, a kernel-shim
 * thread on bare metal) running fn(arg): weft's calls must work from it.
 * wt_thread_start asserts, so call both on the test's own thread. */
typedef struct wt_thread *wt_thread_t;
wt_thread_t wt_thread_start(void *(*fn)(void *), void *arg);
void wt_thread_join(wt_thread_t t);
/* Give the CPU to another thread for a moment. */
void wt_thread_yield(void);

/* 1 where the suites run on Linux (fork, rlimits, /proc, signals), 0 on bare
 * metal, where the tests that need those skip and say why. */
#ifdef __linux__
#define WT_LINUX 1
#else
#define WT_LINUX 0
#endif

/* Descriptors weft_fd_wait can wait on, on every target, so the reactor's
 * tests run on bare metal too. On Linux, a pipe (p[0] reads, p[1] writes) and
 * a socketpair, non-blocking. On bare metal, in-memory ones of the same shape
 * (4 KiB each way) whose ends are I/O sources of the bare shim, registered
 * and reported as a device driver does (kernel-shim/bare/bare.h:
 * shim_io_source_add, shim_io_report); there are 8 sources in all. Both assert, so
 * call them on the test's own thread. */
void wt_pipe(int p[2]);
/* Linux: whether this machine lets a process set up an io_uring (qemu-user
 * and some sandboxes do not). */
int wt_uring_works(void);
void wt_socketpair(int sv[2]);
/* As write and read: the byte count, 0 from read at the end (the writer
 * closed), -EAGAIN (full, empty), -EPIPE (the reader closed), -errno. Any
 * fiber or thread. */
long wt_write(int fd, const void *buf, size_t n);
long wt_read(int fd, void *buf, size_t n);
/* weft_fd_forget(fd), then close it: its peer sees a hang-up. */
void wt_close(int fd);

/* ---- Suites run on each network stack (weft_net.h) ----------------------
 * wt_net_groups runs a suite's tests as two CMocka groups, "PREFIX-kernel"
 * (the kernel's sockets; on bare metal, which has none, run as skips that
 * say bare_why) and then "PREFIX-lwip" (lwIP over "loop"). Unless per_test
 * is set, each group's setup is wt_net_start and then up (if any), and its
 * teardown down (if any) and then wt_net_stop; with per_test the tests
 * bring their own fixtures (wt_net_start, or their own) and the groups none.
 * Returns the failures of both groups and of their teardowns, clamped as
 * wt_main's. */
struct wt_net_suite {
	const char *prefix;
	const struct CMUnitTest *tests;
	size_t n;
	const char *bare_why;
	/* "lwip"'s configuration; NULL: wt_net_lwip. */
	const weft_net_config_t *lwip;
	int per_test;
	int (*up)(void);
	void (*down)(void);
};
int wt_net_groups(const struct wt_net_suite *suite);

/* The two configurations: {.stack = "kernel"} and {.stack = "lwip",
 * .netif = "loop"}. */
extern const weft_net_config_t wt_net_kernel, wt_net_lwip;

/* The stack of the group running now: its configuration, its name
 * ("kernel" or "lwip"), whether it is lwIP. */
const weft_net_config_t *wt_net_cfg(void);
const char *wt_net_name(void);
int wt_net_is_lwip(void);

/* weft_net_init(cfg) for a suite that makes its own TAP device: 0 when up;
 * -1, having said why, where the machine has no TAP device for it
 * (/dev/net/tun and CAP_NET_ADMIN); any other failure fails the test. */
int wt_net_init_tap(const weft_net_config_t *cfg);

/* Fixtures: weft_init(NULL) and weft_net_init(wt_net_cfg()), undone and -1
 * (said on the output) if either fails; weft_net_fini, weft_run and
 * weft_shutdown, -1 if any fails (said, and counted in wt_net_groups'
 * result: CMocka does not count a group teardown's failure). */
int wt_net_start(void **state);
int wt_net_stop(void **state);

/* A connected TCP pair on 127.0.0.1, made from the calling thread or fiber
 * (no asserts): *c connected, *s accepted, the listener closed. 0, or the
 * first error, with everything it opened closed again. */
int wt_tcp_pair(weft_sock_t **c, weft_sock_t **s);

/* A seeded xorshift generator; the seed is printed so a failure can be
 * replayed. */
void wt_rng_seed(void);
uint64_t wt_rng_next(void);

/* Run the suite; the exit status is the number of failures, clamped. */
int wt_main(const char *name, const struct CMUnitTest *tests, size_t n, CMFixtureFunction setup,
	    CMFixtureFunction teardown);
#define WT_MAIN(name, tests, setup, teardown) \
	wt_main(name, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown)

/* Run a group that cannot work on this target as skips: each test reports
 * SKIPPED under its own name, after why is printed once. Never leave a
 * group out: mk/run-tests.sh counts the groups and tests that ran. */
int wt_skip_group(const char *name, const struct CMUnitTest *tests, size_t n, const char *why);

/* 1 when this suite runs under a simulation seed (built against
 * libweft-sim.a, tests/sim/suites.conf, with $WEFT_SIM_SEED set): every
 * worker and every wt_thread_start thread is an actor on one OS thread,
 * the clock is virtual, and each weft_init of a test takes the seed. */
int wt_sim(void);
/* Under a seed: n yields through the runtime (weft_fiber_yield: a point
 * of the simulator from a plain thread), which move no clock. Returns n. */
int wt_sim_yields(int n);
/* In a test that cannot run under a seed (a thread the simulation cannot
 * start, the real clock): skip it there, saying why. */
#define WT_SIM_SKIP(why)                                                               \
	do {                                                                           \
		if (wt_sim()) {                                                        \
			print_message("skipped under a simulation seed: %s\n", (why)); \
			skip();                                                        \
		}                                                                      \
	} while (0)

/* True when built with a sanitizer or for valgrind (make VARIANT=valgrind),
 * which run 10x or more slower: suites shrink sizes (and say so). */
int wt_sanitized(void);

#endif
