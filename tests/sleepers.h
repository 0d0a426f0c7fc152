/* SPDX-License-Identifier: MIT */
/* For the tests of wakes: whether the workers have gone to sleep, so that a
 * wake must rouse them. A worker the OS left waiting on a loaded machine can
 * take longer than any fixed pause to get to its futex, and one still up
 * finds the work itself: the wake under test would go untested. */
#ifndef WT_SLEEPERS_H
#define WT_SLEEPERS_H

#include "testutil.h"

/* The deadline of a wait that another party ends: longer than any bound a
 * test puts on that wait (wt_join's 30 s, WT_WAKE_MS, a suite's LONG_MS), so
 * a lost wake fails that bound. A shorter one would rescue it: the woken
 * fiber sits queued while every worker sleeps until the earliest timer,
 * which is the wait's own deadline; it then runs, its wait ended, and the
 * test passes late. */
#define WT_WAIT_MS 60000
/* How long a party woken by the test's thread may take to run and end: far
 * more than a wake takes on a loaded machine, under TSan or on qemu, and
 * far less than WT_WAIT_MS. */
#define WT_WAKE_MS 5000

/* Join f, woken by this thread just before, within WT_WAKE_MS. */
static inline void wt_join_soon(weft_fiber_t f)
{
	assert_int_equal(weft_fiber_join(f, wt_ms(WT_WAKE_MS), NULL, NULL), 0);
}

#if WT_LINUX
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Call fn on /proc/self/task/<tid>/NAME, open for reading, for every
 * thread of the process but the caller's, until fn returns 0. Returns -1
 * when there is no /proc, else 0. */
static inline int wt_each_other_task(const char *name, int (*fn)(FILE *, void *), void *arg)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	long me = (long)syscall(SYS_gettid);
	struct dirent *e;
	int go = 1;
	while (go && (e = readdir(d))) {
		if (e->d_name[0] == '.' || atol(e->d_name) == me)
			continue;
		char path[80];
		snprintf(path, sizeof path, "/proc/self/task/%.32s/%.16s", e->d_name, name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue; /* it has just ended */
		go = fn(f, arg);
		fclose(f);
	}
	closedir(d);
	return 0;
}

static inline int wt_task_sleeps(FILE *f, void *all)
{
	char buf[512];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the name may hold anything */
	if (p && p[1] == ' ' && p[2] != 'S')
		*(int *)all = 0;
	return *(int *)all;
}

/* Whether every other thread of the process sleeps now (state S in its
 * /proc/self/task/<tid>/stat): idle workers on their futexes. */
static inline int wt_others_sleep(void)
{
	int all = 1;
	return wt_each_other_task("stat", wt_task_sleeps, &all) < 0 ? 1 : all;
}

static inline int wt_task_switches(FILE *f, void *sum)
{
	char line[128];
	long n;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
			*(long *)sum += n;
	return 1;
}

/* The voluntary context switches of every other thread of the process so
 * far (each is a sleep that ended: a futex wait, a poll), -1 with no
 * /proc. */
static inline long wt_others_switches(void)
{
	long sum = 0;
	return wt_each_other_task("status", wt_task_switches, &sum) < 0 ? -1 : sum;
}
#else
/* Bare metal: no way to tell (the callers pause 20 ms first). */
static inline int wt_others_sleep(void) { return 1; }
#endif

/* From a plain thread: 20 ms, then (Linux) until every other thread has
 * been seen asleep twice 1 ms apart, for at most 10 s. */
static inline void wt_let_workers_sleep(void)
{
	/* Under a seed a sleep would wait for every worker to idle, which a
	 * fiber that spins with yields never does (wt_wait_flag): points
	 * instead, among which the simulator lets the workers go idle. */
	if (wt_sim() && wt_sim_yields(200))
		return;
	weft_sleep_until(wt_ms(20)); /* a plain thread: a real sleep */
	int64_t end = wt_ms(10000);
	for (int seen = 0; seen < 2 && weft_now() < end;) {
		seen = wt_others_sleep() ? seen + 1 : 0;
		weft_sleep_until(wt_ms(1));
	}
}

#endif
