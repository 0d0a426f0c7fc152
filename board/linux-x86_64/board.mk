# SPDX-License-Identifier: MIT
# Linux on x86_64: the host, natively. glibc by default; LIBC=musl uses musl-gcc.
ARCH := x86_64
SHIM := linux
DEFAULT_TOOLCHAIN := x86_64-linux-gnu
SHARED_LIB := yes
