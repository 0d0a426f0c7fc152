/* SPDX-License-Identifier: MIT */
/* One- and two-byte atomics. gcc 12 does not inline them on riscv64 and the
 * bare-metal toolchain has no libatomic, so here they are: a compare-and-swap
 * loop on the aligned 32-bit word that holds the value (correct on any number
 * of harts). The C names are private; the assembler names are the ones gcc
 * calls. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The calls gcc emits must leave libweft.a, whose edge keeps
 * default-visibility globals alone (the Makefile). */
#pragma GCC visibility push(default)

static _Atomic uint32_t *word_of(volatile void *p, unsigned *shift)
{
	uintptr_t a = (uintptr_t)p;
	*shift = (unsigned)(a & 3) * 8;
	return (_Atomic uint32_t *)(a & ~(uintptr_t)3);
}

#define RMW(N, T, NAME, NEW, RET)                                                             \
	T bare_##NAME##_##N(volatile void *p, T v, int mo) __asm__("__atomic_" #NAME "_" #N); \
	T bare_##NAME##_##N(volatile void *p, T v, int mo)                                    \
	{                                                                                     \
		(void)mo;                                                                     \
		unsigned sh;                                                                  \
		_Atomic uint32_t *w = word_of(p, &sh);                                        \
		uint32_t mask = (uint32_t)(T) ~(T)0 << sh;                                    \
		uint32_t old = atomic_load(w), upd;                                           \
		T o, n;                                                                       \
		do {                                                                          \
			o = (T)((old & mask) >> sh);                                          \
			n = (T)(NEW);                                                         \
			upd = (old & ~mask) | (((uint32_t)n << sh) & mask);                   \
		} while (!atomic_compare_exchange_weak(w, &old, upd));                        \
		return RET;                                                                   \
	}

#define ALL(N, T)                                                                               \
	RMW(N, T, fetch_add, o + v, o)                                                          \
	RMW(N, T, fetch_sub, o - v, o)                                                          \
	RMW(N, T, fetch_and, o &v, o)                                                           \
	RMW(N, T, fetch_or, o | v, o)                                                           \
	RMW(N, T, fetch_xor, o ^ v, o)                                                          \
	RMW(N, T, fetch_nand, ~(o & v), o)                                                      \
	RMW(N, T, add_fetch, o + v, n)                                                          \
	RMW(N, T, sub_fetch, o - v, n)                                                          \
	RMW(N, T, and_fetch, o &v, n)                                                           \
	RMW(N, T, or_fetch, o | v, n)                                                           \
	RMW(N, T, xor_fetch, o ^ v, n)                                                          \
	RMW(N, T, nand_fetch, ~(o & v), n)                                                      \
	RMW(N, T, exchange, v, o)                                                               \
	bool bare_cas_##N(volatile void *p, void *expected, T desired, bool weak, int s,        \
			  int f) __asm__("__atomic_compare_exchange_" #N);                      \
	bool bare_cas_##N(volatile void *p, void *expected, T desired, bool weak, int s, int f) \
	{                                                                                       \
		(void)weak;                                                                     \
		(void)s;                                                                        \
		(void)f;                                                                        \
		unsigned sh;                                                                    \
		_Atomic uint32_t *w = word_of(p, &sh);                                          \
		uint32_t mask = (uint32_t)(T) ~(T)0 << sh;                                      \
		T want = *(T *)expected;                                                        \
		uint32_t old = atomic_load(w);                                                  \
		for (;;) {                                                                      \
			T cur = (T)((old & mask) >> sh);                                        \
			if (cur != want) {                                                      \
				*(T *)expected = cur;                                           \
				return false;                                                   \
			}                                                                       \
			uint32_t upd = (old & ~mask) | (((uint32_t)desired << sh) & mask);      \
			if (atomic_compare_exchange_weak(w, &old, upd))                         \
				return true;                                                    \
		}                                                                               \
	}

ALL(1, uint8_t)
ALL(2, uint16_t)

#pragma GCC visibility pop
