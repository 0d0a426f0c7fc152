/* SPDX-License-Identifier: MIT */
/* Which sanitizer a build runs under: WEFT_ASAN, WEFT_TSAN, and WEFT_SAN for
 * either. The one place runtime/ asks: switch.c tells them of every switch,
 * and a context keeps their fields (switch.h) only in their builds. gcc
 * says so with __SANITIZE_*__, clang 14 only through __has_feature. */
#ifndef WEFT_SAN_H
#define WEFT_SAN_H

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WEFT_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define WEFT_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(WEFT_ASAN)
#define WEFT_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(WEFT_TSAN)
#define WEFT_TSAN 1
#endif
#if defined(WEFT_ASAN) || defined(WEFT_TSAN)
#define WEFT_SAN 1
#endif

#endif
