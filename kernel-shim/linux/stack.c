/* SPDX-License-Identifier: MIT */
/* Guarded fiber stacks on Linux: carved from slabs, a guard under each
 * (ARCH_STACK_GUARD by default, shim_stack_guard_set).
 *
 * A separately mmap'd stack with an mprotect'd guard costs two kernel mappings,
 * and vm.max_map_count (65,530) then caps a process near 32,700 fibers. So
 * stacks of one size are carved from slabs of many, and each guard page is
 * installed with madvise(MADV_GUARD_INSTALL) (Linux 6.13+), which guards a
 * page without splitting the mapping: 100,000 stacks cost a few dozen
 * mappings. Where the kernel lacks it, or pretends (qemu-user returns 0 and
 * leaves the page writable), we fall back to mprotect(PROT_NONE), after
 * checking once that the guard really faults. Freed stacks go to a pool of
 * their size; slabs are never unmapped. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch_cpu.h"
#include "shim.h"

/* Each stack is named to valgrind from the moment it is handed out until it
 * is freed, so that a switch reads as a change of stacks rather than a wild
 * move of sp (memcheck would report every read of the new stack): in every
 * build where valgrind's client-request header is there (Debian's valgrind
 * package), so that `valgrind ./prog` works on a normal build. Outside
 * valgrind a request is a few instructions that do nothing, paid when a
 * stack is handed out or freed, not at a switch. */
#if defined(WEFT_VALGRIND) || __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define TOOL_STACK_REGISTER(lo, hi) VALGRIND_STACK_REGISTER(lo, hi)
#define TOOL_STACK_DEREGISTER(id) VALGRIND_STACK_DEREGISTER(id)
#else
#define TOOL_STACK_REGISTER(lo, hi) 0u
#define TOOL_STACK_DEREGISTER(id) ((void)(id))
#endif

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#define MAX_STACK ((size_t)1 << 30)
#define SLAB_BYTES ((size_t)16 << 20) /* carve 16 MiB at a time */
#define NCLASS 8

struct free_stack {
	struct free_stack *next;
};

/* A freed stack whose pages were given back (shim_stack_trim): nothing of
 * it is resident, so it is listed from the heap. */
struct cold_stack {
	struct cold_stack *next;
	char *base;
};

struct size_class {
	size_t size;             /* usable bytes, page multiple */
	size_t guard;            /* guard bytes below each, page multiple */
	struct free_stack *free; /* freed stacks, linked through their top */
	unsigned nfree;
	struct cold_stack *cold; /* freed stacks with no resident pages */
	char *carve, *carve_end; /* unused part of the newest slab */
};

/* shim_stack_trim leaves TRIM_KEEP freed stacks resident in each class. */
#define TRIM_KEEP 16
static _Atomic unsigned nfree_all; /* the classes' nfree, summed */
static _Atomic unsigned nclasses;  /* classes in use */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct size_class classes[NCLASS];
static size_t page;
static int guard_mode;     /* 0 unknown, 1 madvise works, 2 use mprotect */
static size_t guard_bytes; /* for new stacks; 0 = ARCH_STACK_GUARD */

static size_t page_size(void)
{
	if (!page)
		page = (size_t)sysconf(_SC_PAGESIZE);
	return page;
}

size_t shim_stack_round(size_t size)
{
	size_t p = page_size();
	return (size + p - 1) & ~(p - 1);
}

/* Does a MADV_GUARD_INSTALL'd page really fault? write() from it to a pipe
 * must fail with EFAULT rather than copy. */
static int probe_guard(void)
{
	size_t p = page_size();
	int fds[2], ok = 0;
	char *m = mmap(NULL, p, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (m == MAP_FAILED)
		return 2;
	if (madvise(m, p, MADV_GUARD_INSTALL) == 0 && pipe(fds) == 0) {
		ok = write(fds[1], m, 1) < 0 && errno == EFAULT;
		close(fds[0]);
		close(fds[1]);
	}
	munmap(m, p);
	return ok ? 1 : 2;
}

static int guard(char *lo, size_t len)
{
	if (!guard_mode)
		guard_mode = probe_guard();
	if (guard_mode == 1)
		return madvise(lo, len, MADV_GUARD_INSTALL) == 0 ? 0 : -errno;
	return mprotect(lo, len, PROT_NONE) == 0 ? 0 : -errno;
}

int shim_stack_guard_set(size_t bytes)
{
	if (bytes > SHIM_STACK_GUARD_MAX)
		return -EINVAL;
	pthread_mutex_lock(&lock);
	guard_bytes = shim_stack_round(bytes);
	pthread_mutex_unlock(&lock);
	return 0;
}

static size_t guard_now(void)
{
	return guard_bytes ? guard_bytes : shim_stack_round(ARCH_STACK_GUARD);
}

/* Stacks of one size and one guard share a class. */
static struct size_class *class_for(size_t size, size_t g)
{
	for (int i = 0; i < NCLASS; i++) {
		if (classes[i].size == size && classes[i].guard == g)
			return &classes[i];
		if (classes[i].size == 0) {
			classes[i].size = size;
			classes[i].guard = g;
			atomic_fetch_add_explicit(&nclasses, 1, memory_order_relaxed);
			return &classes[i];
		}
	}
	return NULL;
}

/* Carve one guard+stack from the current slab, mapping a new slab if needed.
 * Called with the lock held. */
static int carve(struct size_class *c, char **base)
{
	size_t g = c->guard, span = c->size + g;
	if (c->carve_end - c->carve < (ptrdiff_t)span) {
		size_t bytes = span > SLAB_BYTES / 4 ? span : SLAB_BYTES / span * span;
		char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
		if (m == MAP_FAILED)
			return -ENOMEM;
		c->carve = m;
		c->carve_end = m + bytes;
	}
	int err = guard(c->carve, g);
	if (err)
		return err == -EAGAIN ? -ENOMEM : err;
	*base = c->carve + g;
	c->carve += span;
	return 0;
}

static int stack_alloc(size_t size, struct shim_stack *out);

/* The runtime promises not to touch errno: failed system calls here must not
 * leak theirs into the caller's. */
int shim_stack_alloc(size_t size, struct shim_stack *out)
{
	int saved = errno;
	int r = stack_alloc(size, out);
	errno = saved;
	return r;
}

static int stack_alloc(size_t size, struct shim_stack *out)
{
	if (size == 0 || size > MAX_STACK || !out)
		return -EINVAL;
	size = shim_stack_round(size);

	pthread_mutex_lock(&lock);
	size_t g = guard_now();
	struct size_class *c = class_for(size, g);
	int err = 0;
	char *base = NULL;
	if (c && c->free) {
		struct free_stack *f = c->free;
		c->free = f->next;
		c->nfree--;
		atomic_fetch_sub_explicit(&nfree_all, 1, memory_order_relaxed);
		base = (char *)(f + 1) - size;
	} else if (c && c->cold) {
		struct cold_stack *k = c->cold;
		c->cold = k->next;
		base = k->base;
		free(k);
	} else if (c) {
		err = carve(c, &base);
	}
	pthread_mutex_unlock(&lock);

	if (!c) { /* an unusual size: a mapping of its own */
		char *m = mmap(NULL, size + g, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
		if (m == MAP_FAILED)
			return -ENOMEM;
		if (mprotect(m, g, PROT_NONE) != 0) {
			munmap(m, size + g);
			return -ENOMEM;
		}
		base = m + g;
	} else if (err) {
		return err;
	}
	out->base = base;
	out->size = size;
	out->guard = g;
	out->tool_id = TOOL_STACK_REGISTER(base, base + size);
	return 0;
}

void shim_stack_free(const struct shim_stack *s)
{
	TOOL_STACK_DEREGISTER(s->tool_id);
	pthread_mutex_lock(&lock);
	struct size_class *c = NULL;
	for (int i = 0; i < NCLASS; i++)
		if (classes[i].size == s->size && classes[i].guard == s->guard)
			c = &classes[i];
	if (c) {
		struct free_stack *f = (struct free_stack *)((char *)s->base + s->size) - 1;
		f->next = c->free;
		c->free = f;
		c->nfree++;
		atomic_fetch_add_explicit(&nfree_all, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&lock);
	if (!c)
		munmap((char *)s->base - s->guard, s->size + s->guard);
}

const char *shim_stack_guard_method(void)
{
	int saved = errno;
	pthread_mutex_lock(&lock);
	if (!guard_mode)
		guard_mode = probe_guard();
	errno = saved;
	int m = guard_mode;
	pthread_mutex_unlock(&lock);
	return m == 1 ? "madvise" : "mprotect";
}

/* Cheap, and a hint: more freed stacks than TRIM_KEEP for each class. */
bool shim_stack_trim_due(void)
{
	return atomic_load_explicit(&nfree_all, memory_order_relaxed) >
	       TRIM_KEEP * atomic_load_explicit(&nclasses, memory_order_relaxed);
}

/* The oldest freed stacks beyond TRIM_KEEP in each class give their pages
 * back: MADV_DONTNEED, so that resident memory drops at once (MADV_FREE
 * would leave it counted until the kernel needs it). The newest stay
 * resident for the next spawns. */
void shim_stack_trim(void)
{
	if (!shim_stack_trim_due())
		return;
	int saved = errno;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < NCLASS; i++) {
		struct size_class *c = &classes[i];
		if (c->nfree <= TRIM_KEEP)
			continue;
		struct free_stack **keep = &c->free;
		for (unsigned k = 0; k < TRIM_KEEP; k++)
			keep = &(*keep)->next;
		while (*keep) {
			struct free_stack *f = *keep;
			char *base = (char *)(f + 1) - c->size;
			struct cold_stack *k = malloc(sizeof *k);
			if (!k)
				break; /* stays resident, and listed */
			*keep = f->next;
			c->nfree--;
			atomic_fetch_sub_explicit(&nfree_all, 1, memory_order_relaxed);
			madvise(base, c->size, MADV_DONTNEED);
			k->base = base;
			k->next = c->cold;
			c->cold = k;
		}
	}
	pthread_mutex_unlock(&lock);
	errno = saved;
}
