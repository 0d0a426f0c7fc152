/* SPDX-License-Identifier: MIT */
/* A sequentially consistent fence that ThreadSanitizer can follow. TSan does
 * not model atomic_thread_fence (gcc refuses it under -fsanitize=thread), so
 * in TSan builds the fence is a seq_cst read-modify-write of one shared word:
 * every such RMW is totally ordered with the others, which gives the same
 * store-load ordering between the threads that use it. */
#ifndef WEFT_FENCE_H
#define WEFT_FENCE_H

#include <stdatomic.h>

#include <arch_cpu.h>

#if defined(__SANITIZE_THREAD__)
extern _Atomic int weft__fence_word;
#define weft__fence() ((void)atomic_fetch_add_explicit(&weft__fence_word, 0, memory_order_seq_cst))
#define weft__fence_after_rmw() weft__fence()
#else
#define weft__fence() atomic_thread_fence(memory_order_seq_cst)
/* weft__fence() right after an acquire-release read-modify-write: on a CPU
 * whose RMW already is a full fence (x86), only the compiler's barrier; the
 * RMW's acquire keeps the compiler from moving later loads above it. */
#define weft__fence_after_rmw() arch_fence_after_rmw()
#endif

#endif
