# SPDX-License-Identifier: MIT
# The Milk-V Duo SDK's compiler (host-tools/gcc/riscv64-linux-musl-x86_64 in
# duo-buildroot-sdk), tuned for the T-Head C906. Put its bin/ on PATH, then:
#   make TARGET=linux-riscv64 TOOLCHAIN=board/toolchain/riscv64-unknown-linux-musl.mk
# It cannot be exercised here (the SDK is not a Debian package); the output is
# a static binary for the Duo's Linux. `make test` with it needs CMOCKA_CFLAGS
# and CMOCKA_LIBS for a CMocka built by the same compiler.
LIBC := musl
CROSS_COMPILE ?= riscv64-unknown-linux-musl-
CC := $(CROSS_COMPILE)gcc
AR := $(CROSS_COMPILE)ar
CFLAGS_ARCH := -mcpu=c906fdv -march=rv64imafdcv0p7xthead -mcmodel=medany -mabi=lp64d
LDFLAGS_ARCH := -static
DEPS :=
RUN := qemu-riscv64
