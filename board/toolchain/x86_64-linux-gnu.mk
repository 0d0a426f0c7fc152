# SPDX-License-Identifier: MIT
# Debian's native gcc on x86_64. glibc by default; LIBC=musl builds with
# Debian's musl-gcc (library and examples; the test suites need glibc here).
LIBC ?= glibc
ifeq ($(LIBC),musl)
CC := musl-gcc
LDFLAGS_ARCH := -static
DEPS := host
else
CC := gcc
DEPS := host
CMOCKA_CFLAGS :=
CMOCKA_LIBS := -lcmocka
endif
AR := ar
# CFLAGS_FIBER: what code that runs on a fiber's stack needs, weft's and the
# user's (the installed weft.pc's Cflags and the CMake target's options):
# stack-clash probes, so a frame larger than the guard page hits it.
CFLAGS_FIBER := -fstack-clash-protection
# -fcf-protection=branch: endbr64 landing pads and the IBT property note in
# every object, so a program linking libweft keeps IBT (switch.S has its own).
CFLAGS_ARCH := $(CFLAGS_FIBER) -fcf-protection=branch
RUN :=
