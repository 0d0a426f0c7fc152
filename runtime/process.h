/* SPDX-License-Identifier: MIT */
/* The seam between mailboxes (mailbox.c), the registry of step-process pids
 * (pid.c) and the stackless step-processes (step.c). A mailbox belongs to a
 * fiber (allocated the first time a message is sent to it or it uses its
 * own) or is the head of a step-process. */
#ifndef WEFT_PROCESS_H
#define WEFT_PROCESS_H

#include "internal.h"

#define WEFT__MBOX_GONE ((struct weft__mbox *)1)
/* The exit path of fiber self, before its result settles: close and
 * unregister its mailbox, so that a send from then on fails with -ESRCH. */
void weft__mbox_exit(struct weft__fiber *self);

/* One message: copied in by weft_mailbox_send, out by weft_mailbox_recv. */
struct weft__msg {
	struct weft__msg *next;
	size_t len;
	unsigned char data[];
};

/* Bit 63 of a pid: a step-process's (a fiber's pid is its weft_fiber_t,
 * which never has it). */
#define WEFT__PID_STEP (UINT64_C(1) << 63)

struct weft__mbox {
	struct weft__mbox *hnext; /* registry chain (step-processes) */
	uint64_t pid;
	_Atomic int refs;    /* the owner's, plus one per sender in flight */
	weft__lock_t lock;   /* guards everything below */
	uint8_t closed;      /* the owner has ended: sends fail with -ESRCH */
	uint8_t step;        /* the head of a struct weft_step */
	uint32_t count, cap; /* messages queued, and the bound */
	struct weft__msg *head, *tail;
	struct weft__waiter *senders;  /* waiting for room; w->data is their message */
	struct weft__waiter *receiver; /* the owner fiber waiting for a message */
};

/* Initialise mb: refs 1, empty, open, named pid. */
void weft__mbox_init(struct weft__mbox *mb, uint64_t pid, bool step);

/* pid.c: give a step-process's mailbox a new pid (WEFT__PID_STEP set) and
 * publish it under that pid: from then on weft_mailbox_send finds it (0 or
 * -ENOMEM); take it out again. */
int weft__pid_register(struct weft__mbox *mb);
void weft__pid_unregister(struct weft__mbox *mb);

/* pid.c: the live step-process mailbox registered under pid, with a
 * reference, or NULL. */
struct weft__mbox *weft__mbox_get(uint64_t pid);

/* Close mb (a step-process's also leaves the registry, so sends from then
 * on fail with -ESRCH at lookup): blocked and later senders get -ESRCH.
 * Queued messages stay for the owner to drain until weft__mbox_unref frees
 * them. */
void weft__mbox_close(struct weft__mbox *mb);

/* Drop a reference; the last one frees the queued messages and, for a
 * fiber's mailbox, the mailbox (a step-process's goes with the process). */
void weft__mbox_unref(struct weft__mbox *mb);

/* Call fn on every step-process registered now, under the registry's lock
 * (fn must not take it again, or wait). */
void weft__mbox_each_step(void (*fn)(struct weft__mbox *mb));

/* step.c: the step-process whose callback the caller is running in (on a
 * runner fiber), or NULL. */
struct weft__mbox *weft__step_current(void);

/* step.c: a message was put in step-process mb's mailbox: wake it. */
void weft__step_post_msg(struct weft__mbox *mb);

/* step.c: the step-process's memory, freed with its mailbox's last ref. */
void weft__step_free(struct weft__mbox *mb);

#endif
