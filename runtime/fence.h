/* SPDX-License-Identifier: MIT */
/* A sequentially consistent fence that ThreadSanitizer can follow. TSan does
 * not model atomic_thread_fence (gcc refuses it under -fsanitize=thread), so
 * in TSan builds the fence is a seq_cst read-modify-write of one shared word:
 * every such RMW is totally ordered with the others, which gives the same
 * store-load ordering between the threads that use it. */
#ifndef WEFT_FENCE_H
#define WEFT_FENCE_H

#include <stdatomic.h>

#if defined(__SANITIZE_THREAD__)
extern _Atomic int weft__fence_word;
#define weft__fence() ((void)atomic_fetch_add_explicit(&weft__fence_word, 0, memory_order_seq_cst))
#else
#define weft__fence() atomic_thread_fence(memory_order_seq_cst)
#endif

#endif
