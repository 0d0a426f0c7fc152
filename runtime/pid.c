/* SPDX-License-Identifier: MIT */
/* The registry of step-process pids: from a pid to its mailbox, for
 * weft_mailbox_send (a fiber's pid is its weft_fiber_t, found through the fiber
 * table). A step-process's pid is WEFT__PID_STEP plus a number from one
 * counter, never reused. Sixteen shards, each a hash table under its own lock that
 * doubles as it fills; a lookup takes a reference on the mailbox before it
 * lets go of the shard. */
#include <stdlib.h>

#include "process.h"

#define NSHARD 16

struct shard {
	weft__lock_t lock;
	uint32_t n, nb; /* entries; buckets, a power of two (0: none yet) */
	struct weft__mbox **b;
};

static struct shard shards[NSHARD];
static _Atomic uint64_t next_pid = 1;

static struct shard *shard_of(uint64_t pid) { return &shards[pid % NSHARD]; }

static size_t bucket_of(const struct shard *s, uint64_t pid)
{
	return (size_t)(((pid / NSHARD) * 0x9e3779b97f4a7c15ull) >> 32) & (s->nb - 1);
}

/* Double the buckets (shard locked). Without memory the chains just grow,
 * unless there are no buckets at all. */
static int grow(struct shard *s)
{
	uint32_t nb = s->nb ? s->nb * 2 : 16;
	struct weft__mbox **b = calloc(nb, sizeof *b);
	if (!b)
		return s->nb ? 0 : -ENOMEM;
	struct shard t = {.nb = nb, .b = b};
	for (uint32_t i = 0; i < s->nb; i++) {
		struct weft__mbox *mb = s->b[i];
		while (mb) {
			struct weft__mbox *next = mb->hnext;
			size_t k = bucket_of(&t, mb->pid);
			mb->hnext = b[k];
			b[k] = mb;
			mb = next;
		}
	}
	free(s->b);
	s->b = b;
	s->nb = nb;
	return 0;
}

int weft__pid_register(struct weft__mbox *mb)
{
	mb->pid = WEFT__PID_STEP | atomic_fetch_add(&next_pid, 1);
	struct shard *s = shard_of(mb->pid);
	weft__lock(&s->lock);
	int e = s->n >= s->nb ? grow(s) : 0;
	if (e == 0) {
		size_t k = bucket_of(s, mb->pid);
		mb->hnext = s->b[k];
		s->b[k] = mb;
		s->n++;
	}
	weft__unlock(&s->lock);
	return e;
}

struct weft__mbox *weft__mbox_get(uint64_t pid)
{
	if (!(pid & WEFT__PID_STEP))
		return NULL;
	struct shard *s = shard_of(pid);
	weft__lock(&s->lock);
	struct weft__mbox *mb = s->nb ? s->b[bucket_of(s, pid)] : NULL;
	while (mb && mb->pid != pid)
		mb = mb->hnext;
	if (mb)
		atomic_fetch_add_explicit(&mb->refs, 1, memory_order_relaxed);
	weft__unlock(&s->lock);
	return mb;
}

void weft__pid_unregister(struct weft__mbox *mb)
{
	struct shard *s = shard_of(mb->pid);
	weft__lock(&s->lock);
	struct weft__mbox **pp = &s->b[bucket_of(s, mb->pid)];
	while (*pp && *pp != mb)
		pp = &(*pp)->hnext;
	if (*pp) {
		*pp = mb->hnext;
		s->n--;
	}
	weft__unlock(&s->lock);
}

void weft__mbox_each_step(void (*fn)(struct weft__mbox *mb))
{
	for (int i = 0; i < NSHARD; i++) {
		struct shard *s = &shards[i];
		weft__lock(&s->lock);
		for (uint32_t k = 0; k < s->nb; k++)
			for (struct weft__mbox *mb = s->b[k]; mb; mb = mb->hnext)
				fn(mb);
		weft__unlock(&s->lock);
	}
}
