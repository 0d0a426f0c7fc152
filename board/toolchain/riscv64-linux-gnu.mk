# SPDX-License-Identifier: MIT
# Debian's riscv64-linux-gnu-gcc (rv64gc, lp64d). LIBC=musl (default): musl
# built from Debian's source package into $(WEFT_CACHE), static binaries that
# also run on the Milk-V Duo's Linux; LIBC=glibc: static glibc.
LIBC ?= musl
CROSS_ARCH := riscv64
AR := riscv64-linux-gnu-ar
# gcc 12 emits no stack-clash probes on riscv64 (the flag is kept for a gcc
# that does): the guard below each stack is 64 KiB instead (ARCH_STACK_GUARD).
# CFLAGS_FIBER: what code on a fiber's stack needs, weft's and the user's
# (the installed weft.pc's Cflags and the CMake target's options).
CFLAGS_FIBER := -fstack-clash-protection
CFLAGS_ARCH := $(CFLAGS_FIBER)
LDFLAGS_ARCH := -static
DEPS := cross riscv64 $(LIBC)
RUN := qemu-riscv64
# Sub-word atomics (a _Atomic char or bool) are library calls on rv64gc.
LIBS_ARCH := -latomic
