/* SPDX-License-Identifier: MIT */
/* The C library weft was built for, checked when a program links it
 * (docs/decisions/cross-libc.md). weft's objects follow one C library's
 * ABI (the sizes of pthread_mutex_t and sigset_t, FILE, errno's home), so
 * libweft.a built against musl and linked by a glibc compiler (Debian's
 * riscv64-linux-gnu-gcc instead of the musl wrapper) would link and then
 * misbehave. Neither library can be asked at link time which it is, so
 * this object refers to a function only the right one defines: glibc's
 * gnu_get_libc_version, or musl's __freadahead (a stdio_ext.h call glibc
 * lacks). With the other library that reference is undefined and the link
 * stops, the linker naming the function below, whose name says what
 * happened. On Linux libweft.a is one object (the Makefile's `cc -r`), so
 * a program that uses weft always brings this reference along. */
#include <stdio.h>

#ifdef __GLIBC__
#include <gnu/libc-version.h>

typedef const char *(*libc_marker_fn)(void);

__attribute__((used)) static libc_marker_fn
weft_was_built_for_glibc__link_it_with_a_glibc_compiler(void)
{
	return gnu_get_libc_version;
}
#else
#include <stdio_ext.h>

typedef size_t (*libc_marker_fn)(FILE *);

__attribute__((used)) static libc_marker_fn
weft_was_built_for_musl__link_it_with_a_musl_compiler(void)
{
	return __freadahead;
}
#endif
