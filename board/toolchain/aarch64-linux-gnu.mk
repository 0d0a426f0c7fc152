# SPDX-License-Identifier: MIT
# Debian's aarch64-linux-gnu-gcc. LIBC=musl (default): musl built from Debian's
# source package into $(WEFT_CACHE), static binaries; LIBC=glibc: static glibc.
LIBC ?= musl
CROSS_ARCH := aarch64
AR := aarch64-linux-gnu-ar
CFLAGS_ARCH := -fstack-clash-protection
LDFLAGS_ARCH := -static
DEPS := cross aarch64 $(LIBC)
RUN := qemu-aarch64
