# SPDX-License-Identifier: MIT
# Debian's aarch64-linux-gnu-gcc. LIBC=musl (default): musl built from Debian's
# source package into $(WEFT_CACHE), static binaries; LIBC=glibc: static glibc.
LIBC ?= musl
CROSS_ARCH := aarch64
AR := aarch64-linux-gnu-ar
# gcc probes a large frame every 2^guard-size bytes; its default (16) lets a
# 12 KiB frame jump the one-page guard (ARCH_STACK_GUARD), 12 does not.
# -mbranch-protection=bti: landing pads and the BTI property note in every
# object, so a program linking libweft keeps BTI (switch.S has its own).
# CFLAGS_FIBER: what code on a fiber's stack needs, weft's and the user's
# (the installed weft.pc's Cflags and the CMake target's options).
CFLAGS_FIBER := -fstack-clash-protection --param=stack-clash-protection-guard-size=12
CFLAGS_ARCH := $(CFLAGS_FIBER) -mbranch-protection=bti
LDFLAGS_ARCH := -static
DEPS := cross aarch64 $(LIBC)
RUN := qemu-aarch64
