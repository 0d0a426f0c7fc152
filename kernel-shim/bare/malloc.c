/* SPDX-License-Identifier: MIT */
/* malloc for the bare targets, in place of picolibc's (whose first-fit free
 * list made every malloc and free walk it: 76% of a guest's time at 10,000
 * connections, docs/decisions/bare-malloc.md). Two-level segregated fit
 * (TLSF, Masmano et al., 2004): each free block sits on the list of its size
 * class, and two levels of bitmaps find the first non-empty class that
 * fits, so malloc and free take a bounded number of steps whatever the heap
 * holds; neighbours merge on free (boundary tags).
 *
 * A block is an 8-byte header (its size T, a multiple of 16 counting the
 * header, and two flags) and then what the caller gets, 16-aligned: headers
 * sit at 8 mod 16. A free block keeps its list links at the start of that
 * space and its own address in its last 8 bytes, which the next block's
 * header follows: so a block whose predecessor is free (PREV_FREE) finds it
 * there. An end marker (T = 0, in use) closes each stretch of memory that
 * sbrk (heap.c) gave; a stretch that continues the last one takes its end
 * marker over. One lock, the shim's (a hart's, interrupts off: malloc never
 * waits), guards it all. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bare.h"
#include "shim.h"

void *sbrk(ptrdiff_t incr); /* heap.c (unistd.h declares it only for _DEFAULT_SOURCE) */

#define ALIGN 16u
#define HDR 8u
#define MIN_T 32u  /* links (16), the footer (8), the header (8) */
#define SL_LOG2 4u /* 16 classes a power of two */
#define SL_N (1u << SL_LOG2)
#define SMALL 256u /* below it, classes 16 bytes apart (first level 0) */
#define FL_N 31u   /* blocks under 2^38 bytes */
#define GROW 16384u
#define MAX_T ((size_t)1 << 37) /* the largest block: its class stays under FL_N */
#define FREE 1u
#define PREV_FREE 2u
#define FLAGS 3u

struct blk {
	size_t t;                /* T | FREE | PREV_FREE */
	struct blk *next, *prev; /* while free */
};

static struct blk *lists[FL_N][SL_N];
static uint32_t fl_map, sl_map[FL_N];
static struct blk *end_mark; /* the last stretch's end marker */
static size_t arena, in_use; /* bytes from sbrk; bytes of blocks in use */
static size_t overhead;      /* bytes of arena in no block: end markers, alignment */
static size_t nfree;         /* free blocks */

static inline size_t size_of(const struct blk *b) { return b->t & ~(size_t)FLAGS; }
static inline struct blk *next_of(struct blk *b) { return (struct blk *)((char *)b + size_of(b)); }
static inline struct blk *prev_of(struct blk *b) { return ((struct blk **)b)[-1]; }
static inline void *user_of(struct blk *b) { return (char *)b + HDR; }
static inline struct blk *blk_of(void *p) { return (struct blk *)((char *)p - HDR); }

static inline unsigned fls_sz(size_t x)
{
	return 63u - (unsigned)__builtin_clzll((unsigned long long)x);
}

/* The class of a block of T bytes. */
static void mapping(size_t t, unsigned *fl, unsigned *sl)
{
	if (t < SMALL) {
		*fl = 0;
		*sl = (unsigned)(t / ALIGN);
		return;
	}
	unsigned f = fls_sz(t);
	*sl = (unsigned)(t >> (f - SL_LOG2)) & (SL_N - 1);
	*fl = f - (fls_sz(SMALL) - 1);
}

static void insert(struct blk *b)
{
	unsigned fl, sl;
	mapping(size_of(b), &fl, &sl);
	struct blk *h = lists[fl][sl];
	b->next = h;
	b->prev = NULL;
	if (h)
		h->prev = b;
	lists[fl][sl] = b;
	fl_map |= 1u << fl;
	sl_map[fl] |= 1u << sl;
	nfree++;
}

static void unlink_free(struct blk *b)
{
	unsigned fl, sl;
	mapping(size_of(b), &fl, &sl);
	if (b->next)
		b->next->prev = b->prev;
	if (b->prev) {
		b->prev->next = b->next;
	} else {
		lists[fl][sl] = b->next;
		if (!b->next) {
			sl_map[fl] &= ~(1u << sl);
			if (!sl_map[fl])
				fl_map &= ~(1u << fl);
		}
	}
	nfree--;
}

/* Mark b (whose size is set) free: its footer, its successor's flag. */
static void set_free(struct blk *b)
{
	b->t |= FREE;
	struct blk *n = next_of(b);
	((struct blk **)n)[-1] = b;
	n->t |= PREV_FREE;
}

static void set_used(struct blk *b)
{
	b->t &= ~(size_t)FREE;
	next_of(b)->t &= ~(size_t)PREV_FREE;
}

/* What find looks for to serve t bytes: t rounded up to the top of its
 * class, so that every block of the class it searches fits. */
static size_t search_size(size_t t)
{
	return t < SMALL ? t : t + ((size_t)1 << (fls_sz(t) - SL_LOG2)) - 1;
}

/* A free block of at least t bytes, off its list, or NULL. */
static struct blk *find(size_t t)
{
	size_t want = search_size(t);
	unsigned fl, sl;
	mapping(want, &fl, &sl);
	if (fl >= FL_N)
		return NULL;
	uint32_t m = sl_map[fl] & (~0u << sl);
	if (!m) {
		uint32_t f = fl + 1 < FL_N ? fl_map & (~0u << (fl + 1)) : 0;
		if (!f)
			return NULL;
		fl = (unsigned)__builtin_ctz(f);
		m = sl_map[fl];
	}
	struct blk *b = lists[fl][__builtin_ctz(m)];
	unlink_free(b);
	return b;
}

/* Free b (in use, its flags right) and merge it with free neighbours. */
static void release(struct blk *b)
{
	in_use -= size_of(b);
	if (b->t & PREV_FREE) {
		struct blk *p = prev_of(b);
		unlink_free(p);
		p->t = (p->t & PREV_FREE) + size_of(p) + size_of(b);
		b = p;
	}
	struct blk *n = next_of(b);
	if (n->t & FREE) {
		unlink_free(n);
		b->t += size_of(n);
	}
	set_free(b);
	insert(b);
}

/* Cut b (in use, size >= t) to t bytes if the rest makes a block; the rest
 * is freed. */
static void trim(struct blk *b, size_t t)
{
	size_t have = size_of(b);
	if (have - t < MIN_T)
		return;
	b->t = (b->t & FLAGS) | t;
	struct blk *r = next_of(b);
	r->t = have - t; /* in use, its predecessor too; in_use counted it in b */
	release(r);
}

/* More memory from sbrk for a block of t bytes: false when there is none. */
static int grow(size_t t)
{
	size_t want = (search_size(t) + 2 * ALIGN + GROW - 1) / GROW * GROW;
	char *p = sbrk((ptrdiff_t)want);
	if (p == (void *)-1)
		return 0;
	arena += want;
	struct blk *b;
	if (end_mark && (char *)end_mark + HDR == p) {
		b = end_mark; /* the last stretch goes on: its end marker becomes the block */
		b->t = (b->t & PREV_FREE) | want;
	} else {
		/* A new stretch: its first header at 8 mod 16, its end marker in
		 * its last 8 bytes. */
		uintptr_t h = ((uintptr_t)p + HDR + ALIGN - 1) / ALIGN * ALIGN - HDR;
		uintptr_t e = ((uintptr_t)p + want - HDR) / ALIGN * ALIGN + HDR;
		if (e > (uintptr_t)p + want - HDR)
			e -= ALIGN;
		b = (struct blk *)h;
		b->t = e - h;
		overhead += want - (e - h);
	}
	end_mark = next_of(b);
	end_mark->t = 0;
	in_use += size_of(b);
	release(b);
	return 1;
}

static size_t block_for(size_t n)
{
	if (n > MAX_T - HDR - ALIGN)
		return 0;
	size_t t = (n + HDR + ALIGN - 1) / ALIGN * ALIGN;
	return t < MIN_T ? MIN_T : t;
}

/* A block of t bytes in use, or NULL. Under the lock. */
static struct blk *take(size_t t)
{
	if (t > MAX_T) /* memalign's room; sbrk's increment must not overflow */
		return NULL;
	struct blk *b = find(t);
	if (!b) {
		if (!grow(t))
			return NULL;
		b = find(t);
		if (!b)
			return NULL;
	}
	set_used(b);
	in_use += size_of(b);
	trim(b, t);
	return b;
}

#pragma GCC visibility push(default)

void *malloc(size_t n)
{
	size_t t = block_for(n);
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	int on = shim_big_lock();
	struct blk *b = take(t);
	shim_big_unlock(on);
	if (!b) {
		errno = ENOMEM;
		return NULL;
	}
	return user_of(b);
}

void free(void *p)
{
	if (!p)
		return;
	int on = shim_big_lock();
	release(blk_of(p));
	shim_big_unlock(on);
}

void cfree(void *p) { free(p); }

void *calloc(size_t n, size_t size)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = malloc(bytes);
	if (p)
		memset(p, 0, bytes);
	return p;
}

size_t malloc_usable_size(void *p) { return p ? size_of(blk_of(p)) - HDR : 0; }

void *realloc(void *p, size_t n)
{
	if (!p)
		return malloc(n);
	size_t t = block_for(n);
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	struct blk *b = blk_of(p);
	int on = shim_big_lock();
	size_t have = size_of(b);
	if (have < t) { /* grow in place into a free successor */
		struct blk *nx = next_of(b);
		if ((nx->t & FREE) && have + size_of(nx) >= t) {
			unlink_free(nx);
			b->t += size_of(nx);
			next_of(b)->t &= ~(size_t)PREV_FREE;
			in_use += size_of(nx);
			have = size_of(b);
		}
	}
	if (have >= t) {
		trim(b, t);
		shim_big_unlock(on);
		return p;
	}
	struct blk *nb = take(t);
	shim_big_unlock(on);
	if (!nb) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(user_of(nb), p, have - HDR);
	free(p);
	return user_of(nb);
}

void *memalign(size_t align, size_t n)
{
	if (!align || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	if (align <= ALIGN)
		return malloc(n);
	size_t t = block_for(n);
	size_t room;
	if (!t || __builtin_add_overflow(t, align + MIN_T, &room)) {
		errno = ENOMEM;
		return NULL;
	}
	int on = shim_big_lock();
	struct blk *b = take(room);
	if (!b) {
		shim_big_unlock(on);
		errno = ENOMEM;
		return NULL;
	}
	/* The first aligned address at least a block beyond b's, so that what
	 * lies before it can be freed as a block of its own. */
	uintptr_t u = (uintptr_t)user_of(b);
	if (u % align) {
		uintptr_t a = (u + MIN_T + align - 1) / align * align;
		struct blk *nb = blk_of((void *)a);
		size_t lead = (uintptr_t)nb - (uintptr_t)b;
		nb->t = size_of(b) - lead; /* in use, its predecessor too (for now) */
		b->t = (b->t & FLAGS) | lead;
		release(b); /* in_use counted b whole: release takes off the lead */
		b = nb;
	}
	trim(b, t);
	shim_big_unlock(on);
	return user_of(b);
}

void *aligned_alloc(size_t align, size_t n) { return memalign(align, n); }

int posix_memalign(void **out, size_t align, size_t n)
{
	if (align % sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	int e = errno;
	void *p = memalign(align, n);
	if (!p) {
		int r = errno;
		errno = e;
		return r;
	}
	*out = p;
	return 0;
}

void *valloc(size_t n) { return memalign(PAGE_SIZE, n); }

void *pvalloc(size_t n)
{
	size_t pg = PAGE_SIZE;
	if (n > SIZE_MAX - pg) {
		errno = ENOMEM;
		return NULL;
	}
	return memalign(pg, (n + pg - 1) / pg * pg);
}

struct mallinfo mallinfo(void)
{
	struct mallinfo mi = {0};
	int on = shim_big_lock();
	mi.arena = arena;
	mi.ordblks = nfree;
	mi.uordblks = in_use;
	mi.fordblks = arena - in_use - overhead;
	shim_big_unlock(on);
	return mi;
}

void malloc_stats(void)
{
	struct mallinfo mi = mallinfo();
	fprintf(stderr, "malloc: %zu bytes from sbrk, %zu in use, %zu free in %zu blocks\n",
		mi.arena, mi.uordblks, mi.fordblks, mi.ordblks);
}

int mallopt(int param, int value)
{
	(void)param;
	(void)value;
	return 0; /* nothing to tune */
}

int malloc_trim(size_t pad)
{
	(void)pad;
	return 0; /* sbrk's memory is never given back (heap.c) */
}

#pragma GCC visibility pop

/* The heap's own check, for tests: every listed block free, in its class,
 * linked both ways, with a true footer, a successor that says PREV_FREE,
 * and no free neighbour (merging left none); the lists' bitmaps true; the
 * free, the used and the overhead adding up to what sbrk gave. Returns the
 * number of faults found (0: sound). */
int shim_malloc_check(void)
{
	int bad = 0;
	size_t count = 0, bytes = 0;
	int on = shim_big_lock();
	for (unsigned fl = 0; fl < FL_N; fl++) {
		for (unsigned sl = 0; sl < SL_N; sl++) {
			struct blk *prev = NULL;
			int listed = !!(sl_map[fl] & (1u << sl));
			if (listed != !!lists[fl][sl])
				bad++;
			for (struct blk *b = lists[fl][sl]; b && count <= nfree; b = b->next) {
				unsigned f, s;
				mapping(size_of(b), &f, &s);
				struct blk *n = next_of(b);
				if (!(b->t & FREE) || f != fl || s != sl || b->prev != prev ||
				    prev_of(n) != b || !(n->t & PREV_FREE) || (n->t & FREE) ||
				    (b->t & PREV_FREE) || size_of(b) % ALIGN || size_of(b) < MIN_T)
					bad++;
				prev = b;
				count++;
				bytes += size_of(b);
			}
		}
		if (!!(fl_map & (1u << fl)) != !!sl_map[fl])
			bad++;
	}
	if (count != nfree || bytes + in_use + overhead != arena)
		bad++;
	shim_big_unlock(on);
	return bad;
}
