# SPDX-License-Identifier: MIT
# weft: make [TARGET=linux-x86_64|linux-aarch64|linux-riscv64|qemu-virt|milkv-duo]
#            [TOOLCHAIN=file.mk] [O=dir] [VARIANT=asan|tsan|valgrind] [LIBC=musl|glibc]
#            [all|lib|tests|check|clean]
#       make run    boot httpd on qemu-system-riscv64 (qemu-virt): http://localhost:8080/
#       make debug  the same image halted under gdb-multiarch (QEMU's gdbstub)
#       make test   every target and build variant; one summary line each
#       make coverage  line coverage of linux-x86_64's suites, per directory
#       make fuzz   each libFuzzer harness for FUZZ_SECONDS (600), one at a time
#       make format / format-check  apply / check .clang-format [FORMAT_PATHS=...]
TARGET ?= linux-x86_64
.DEFAULT_GOAL := all
VARIANT ?=
WEFT_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/weft
export WEFT_CACHE

ifeq ($(wildcard board/$(TARGET)/board.mk),)
$(error unknown TARGET '$(TARGET)': one of $(notdir $(patsubst %/board.mk,%,$(wildcard board/*/board.mk))))
endif
include board/$(TARGET)/board.mk
TOOLCHAIN ?= board/toolchain/$(DEFAULT_TOOLCHAIN).mk
include $(TOOLCHAIN)

O ?= build/$(TARGET)$(if $(VARIANT),-$(VARIANT))$(if $(CROSS_ARCH),$(if $(filter glibc,$(LIBC)),-glibc))

# A build directory holds one configuration, recorded in $(O)/config when it
# is first used: a build of another into it stops here, before it can mix
# objects or run a binary of another CPU.
BUILD_CONFIG := TARGET=$(TARGET) VARIANT=$(VARIANT) LIBC=$(LIBC) TOOLCHAIN=$(TOOLCHAIN)
ifneq ($(filter-out clean test bench bench-smoke footprint run debug deps help uninstall fuzz format format-check,$(or $(MAKECMDGOALS),all)),)
BUILT_CONFIG := $(shell cat $(O)/config 2>/dev/null)
ifeq ($(BUILT_CONFIG),)
$(shell mkdir -p $(O) && echo '$(BUILD_CONFIG)' >$(O)/config)
else ifneq ($(BUILT_CONFIG),$(BUILD_CONFIG))
$(error $(O) holds a build of $(BUILT_CONFIG); this one is $(BUILD_CONFIG): choose another O=, or empty it first with make clean O=$(O))
endif
endif

# The cross toolchains get CC and CMocka from the dependency cache.
ifneq ($(CROSS_ARCH),)
DEPS_MK := $(O)/deps.mk
-include $(DEPS_MK)
$(DEPS_MK): $(TOOLCHAIN) mk/deps.sh
	@mkdir -p $(@D)
	@mk/deps.sh $(DEPS)
	@mk/deps.sh flags $(CROSS_ARCH) $(LIBC) > $@.tmp && mv $@.tmp $@
endif

CFLAGS_SAN_asan := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
CFLAGS_SAN_tsan := -fsanitize=thread
# valgrind: fiber stacks registered with valgrind (kernel-shim/linux/stack.c),
# and `check` runs VALGRIND_SUITES under memcheck, failing on any error.
CFLAGS_SAN_valgrind := -DWEFT_VALGRIND
ifneq ($(VARIANT),)
ifeq ($(CFLAGS_SAN_$(VARIANT)),)
$(error unknown VARIANT '$(VARIANT)': asan, tsan or valgrind)
endif
endif
ifeq ($(VARIANT),valgrind)
ifneq ($(SHIM),linux)
$(error VARIANT=valgrind is for the Linux targets)
endif
# Not the suites whose threads and fibers spin-wait on each other
# (test_sched, test_deque, test_select): valgrind runs one thread at a time,
# which makes them many times slower, up to their runner's bounds on a
# loaded machine; nor test_cancel (test_cancel_busy_then_send has failed
# under memcheck, for a reason not yet found), test_net (lwIP's load) or
# test_overflow (it faults on purpose).
# --fair-sched=yes: valgrind runs one thread at a time, and with its default
# lock a thread that spins on sched_yield (the suites' waits for a flag) can
# keep taking it back while the thread it waits for starves. The suites
# shrink their sizes here as under the sanitizers (wt_sanitized).
VALGRIND_SUITES ?= test_chan test_fiber test_future test_sync test_generator test_fls \
	test_combine test_supervise test_process test_holdoff test_time test_vclock \
	test_runtime test_stack test_dump test_interrupt test_poll test_io
RUN := valgrind -q --fair-sched=yes --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
endif
SAN := $(CFLAGS_SAN_$(VARIANT))

# V=1 shows the commands.
Q := $(if $(V),,@)
WARN := -Wall -Wextra -Werror
CFLAGS ?= -O2 -g
# Bare-metal boards add their board.c, the drivers they name (board.mk:
# BOARD_DRIVERS, files of drivers/), the shim's console on the driver
# BOARD_CONSOLE names (kernel-shim/bare/console_<name>.c and its driver;
# without it board.c has the console hooks), any sources and headers of
# their own (BOARD_SRCS, BOARD_INC) and the arch's entry and trap code
# (arch/<cpu>/bare/). The board contract is board/board_contract.h.
ifeq ($(SHIM),bare)
BOARD_INC += -Iarch/$(ARCH)/bare -Iboard -Iboard/$(BOARD) -Ikernel-shim/bare -Idrivers
# BOARD_DMA_CACHE := thead: devices do not see the CPU's caches, which the
# drivers clean and invalidate with the C906's own instructions
# (arch/arch_bare.h, dma_cache_*); unset, devices see the caches.
BOARD_INC += $(if $(filter thead,$(BOARD_DMA_CACHE)),-DARCH_DCACHE_THEAD)
BOARD_SRCS += $(wildcard arch/$(ARCH)/bare/*.S arch/$(ARCH)/bare/*.c) board/$(BOARD)/board.c \
	$(patsubst %,drivers/%.c,$(sort $(BOARD_DRIVERS) $(BOARD_CONSOLE))) \
	$(patsubst %,kernel-shim/bare/console_%.c,$(BOARD_CONSOLE))
else
LIBS_OS := -lpthread
endif
ALL_CFLAGS := -std=c11 $(WARN) $(CFLAGS) $(CFLAGS_ARCH) $(SAN) \
	-Iinclude -Iarch -Iarch/$(ARCH) -Ikernel-shim -Iruntime -Iruntime/seam $(BOARD_INC) -MMD -MP
# A program outside the library: the public headers only.
PUBLIC_CFLAGS := -std=c11 $(WARN) $(CFLAGS) $(CFLAGS_ARCH) $(SAN) -Iinclude -MMD -MP
ALL_LDFLAGS := $(LDFLAGS_ARCH) $(SAN) $(LDFLAGS)
LIBS := $(LIBS_OS) $(LIBS_ARCH)

# tools/gdb/weft-gdb.py rides in the library's .debug_gdb_scripts section
# (tools/gdb/scripts.c), which gdb reads to load it (docs/debugging.md).
SRCS := tools/gdb/scripts.c $(wildcard arch/$(ARCH)/*.S arch/$(ARCH)/*.c) $(BOARD_SRCS) \
	$(wildcard kernel-shim/$(SHIM)/*.c) $(filter-out runtime/sim.c runtime/sim_fault.c,$(wildcard runtime/*.c)) \
	$(filter-out net/sim_wire.c,$(wildcard net/*.c))
OBJS := $(patsubst %,$(O)/obj/%.o,$(SRCS))
PIC_OBJS := $(patsubst %,$(O)/pic/%.o,$(SRCS))

# lwIP: Debian's source package, fetched into the cache (mk/deps.sh lwip),
# or a tree of the user's own: make LWIP_DIR=/path/to/lwip. Built with
# weft's lwipopts.h and port (net/port/) into libweft.a.
ifeq ($(origin LWIP_DIR),undefined)
LWIP_DIR := $(WEFT_CACHE)/src/lwip
ifeq ($(wildcard $(LWIP_DIR)/src/Filelists.mk),)
$(info lwIP: fetching Debian's source package into $(WEFT_CACHE) (mk/deps.sh lwip))
LWIP_FETCH := $(shell mk/deps.sh lwip >&2 || echo failed)
endif
endif
ifeq ($(wildcard $(LWIP_DIR)/src/Filelists.mk),)
$(error no lwIP tree at LWIP_DIR=$(LWIP_DIR): run mk/deps.sh lwip, or point LWIP_DIR at one)
endif
LWIPDIR := $(LWIP_DIR)/src
include $(LWIPDIR)/Filelists.mk
# weft's fixes to lwIP (net/patches/*.patch, paths relative to lwIP's src/)
# are applied to a copy in the build directory; the fetched tree, or the
# user's own, is never changed.
LWIP_PATCHES := $(sort $(wildcard net/patches/*.patch))
LWIP_TREE := $(O)/lwip-src
LWIP_SRCS := $(COREFILES) $(CORE4FILES) $(CORE6FILES) $(LWIPDIR)/netif/ethernet.c
LWIP_INC := -Inet/port -I$(LWIP_TREE)/include
LWIP_OBJS := $(patsubst $(LWIPDIR)/%.c,$(O)/lwip/%.o,$(LWIP_SRCS))
LWIP_PIC_OBJS := $(patsubst $(LWIPDIR)/%.c,$(O)/lwip-pic/%.o,$(LWIP_SRCS))
# Every object of the library, lwIP's too, is built with hidden visibility
# (the library's edge, below): set before LWIP_CFLAGS reads it.
LIB_VISIBILITY := -fvisibility=hidden
# Every layer keeps frame pointers, lwIP too: weft_dump and the stall report
# walk a fiber's stack with them (arch_backtrace) from where it parked or
# spins, through net/, the shim and lwIP, up to the program's code.
LIB_FRAMES := -fno-omit-frame-pointer
# lwIP's own code with its own dialect; warnings stay on and are errors.
LWIP_CFLAGS := -std=gnu11 $(WARN) -Wno-unused-parameter $(CFLAGS) $(CFLAGS_ARCH) $(SAN) \
	$(LIB_VISIBILITY) $(LIB_FRAMES) $(LWIP_INC) $(BOARD_INC) -MMD -MP

LIB := $(O)/libweft.a
# The version, from include/weft.h's WEFT_VERSION_*. While the major is 0
# each minor may change the ABI, so the SONAME carries it (libweft.so.0.2);
# from 1 on, the major alone (docs/decisions/library-versions.md).
weft_version_part = $(shell sed -n 's/^\#define WEFT_VERSION_$(1) \([0-9]*\)$$/\1/p' include/weft.h)
WEFT_MAJOR := $(call weft_version_part,MAJOR)
WEFT_MINOR := $(call weft_version_part,MINOR)
WEFT_VERSION := $(WEFT_MAJOR).$(WEFT_MINOR).$(call weft_version_part,PATCH)
WEFT_SONAME := libweft.so.$(if $(filter 0,$(WEFT_MAJOR)),0.$(WEFT_MINOR),$(WEFT_MAJOR))
SOLIB := $(if $(and $(SHARED_LIB),$(filter-out musl,$(LIBC)),$(if $(VARIANT),,y)),$(O)/libweft.so)
# Every object of the library, its internals visible: what the tests and the
# benches that time internals link against (never installed).
INTERNAL_LIB := $(O)/libweft-internal.a
# The library's edge (docs/decisions/one-edge.md): libweft.a is one
# relocatable object that keeps global only what has default visibility,
# and libweft.so exports only that. The code is built with hidden
# visibility, so default visibility is include/weft.h's WEFT_API, plus, on
# bare metal, the names the C library and the compiler call (the shim's
# libc.c, atomic.c, sbrk, stdin/stdout/stderr, start.S's _start). Every
# other global (the runtime's weft__*, shim_*, arch_*, board_*, drivers',
# lwIP's) is made local, so a program with its own lwIP, sys_now or
# page_alloc links.
OBJCOPY ?= $(AR:ar=objcopy)
NM ?= $(AR:ar=nm)
READELF ?= $(AR:ar=readelf)

TEST_SRCS := $(filter-out tests/testutil.c,$(wildcard tests/test_*.c))
TESTS := $(patsubst tests/%.c,$(O)/tests/%,$(TEST_SRCS))
EXAMPLES := $(patsubst examples/%.c,$(O)/examples/%,$(wildcard examples/*.c))
BENCHES := $(patsubst bench/%.c,$(O)/bench/%,$(wildcard bench/*.c))

.PHONY: all lib tests check run test clean deps
all: lib $(EXAMPLES) $(BENCHES) $(BOARD_IMAGES)
lib: $(LIB) $(SOLIB)

$(O)/obj/%.o: % $(DEPS_MK)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) $(ALL_CFLAGS) $(LIB_VISIBILITY) $(LIB_FRAMES) -c $< -o $@
$(O)/pic/%.o: % $(DEPS_MK)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) $(ALL_CFLAGS) $(LIB_VISIBILITY) $(LIB_FRAMES) -fPIC -c $< -o $@

# The assembler includes the script with .incbin: a dependency make sees.
$(O)/obj/tools/gdb/scripts.c.o $(O)/pic/tools/gdb/scripts.c.o: tools/gdb/weft-gdb.py

# Each layer compiles with only the include paths it may use, so an include
# across a layer's edge does not build (docs/architecture.md, "Layers"):
# arch/ sees the arch alone; kernel-shim/ the arch, its own contract and the
# drivers', not the runtime; net/ the runtime's seam for it
# (runtime/seam/: service.h and the lock it names), not runtime/.
$(O)/obj/arch/%.o $(O)/pic/arch/%.o: ALL_CFLAGS := $(filter-out -Ikernel-shim -Ikernel-shim/bare -Idrivers -Iruntime -Iruntime/seam,$(ALL_CFLAGS))
$(O)/obj/kernel-shim/%.o $(O)/pic/kernel-shim/%.o: ALL_CFLAGS := $(filter-out -Iruntime -Iruntime/seam,$(ALL_CFLAGS))
$(O)/obj/net/%.o $(O)/pic/net/%.o: ALL_CFLAGS := $(filter-out -Iruntime,$(ALL_CFLAGS))
# A board's own code sees the board and arch contracts, never the shim's
# or a driver's: kernel-shim/, drivers/ and runtime/ are off its include
# path, so a board file that includes bare.h or ns16550.h does not build.
# A driver sees its own contract (drivers/driver.h, which names shim.h's
# readiness bits) and the arch's, never the shim's inside or the runtime.
$(O)/obj/board/%.o $(O)/pic/board/%.o: ALL_CFLAGS := $(filter-out -Ikernel-shim -Ikernel-shim/bare -Idrivers -Iruntime -Iruntime/seam,$(ALL_CFLAGS))
$(O)/obj/drivers/%.o $(O)/pic/drivers/%.o: ALL_CFLAGS := $(filter-out -Ikernel-shim/bare -Iruntime -Iruntime/seam,$(ALL_CFLAGS))
# net/ talks to lwIP: it sees lwIP's headers and weft's lwipopts.h.
$(O)/obj/net/%.o $(O)/pic/net/%.o: ALL_CFLAGS += $(LWIP_INC)
$(LWIP_TREE)/.patched: $(LWIP_PATCHES) $(LWIPDIR)/Filelists.mk
	@rm -rf $(LWIP_TREE) && mkdir -p $(LWIP_TREE)
	@$(if $(Q),echo '  PATCH   lwIP $(notdir $(LWIP_PATCHES))')
	$(Q)cp -R $(LWIPDIR)/. $(LWIP_TREE)/
	$(Q)for p in $(LWIP_PATCHES); do patch -s -p1 -d $(LWIP_TREE) <$$p || exit 1; done
	@touch $@
$(LWIP_OBJS): $(O)/lwip/%.o: $(LWIP_TREE)/.patched $(DEPS_MK)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) $(LWIP_CFLAGS) -c $(LWIP_TREE)/$*.c -o $@
$(LWIP_PIC_OBJS): $(O)/lwip-pic/%.o: $(LWIP_TREE)/.patched $(DEPS_MK)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) $(LWIP_CFLAGS) -fPIC -c $(LWIP_TREE)/$*.c -o $@
$(OBJS) $(PIC_OBJS): | $(LWIP_TREE)/.patched
# The tree's sources are the stamp's products: the lwIP objects' .d files
# name them, and when the tree is made again (removed and copied) make
# must not look for them before it is there.
$(patsubst $(LWIPDIR)/%,$(LWIP_TREE)/%,$(LWIP_SRCS)): $(LWIP_TREE)/.patched ;
# net/ includes lwIP's headers, which a new patch can change: make reads a
# header's time before the tree is patched again, so the stamp itself is a
# prerequisite.
$(filter $(O)/obj/net/% $(O)/pic/net/%,$(OBJS) $(PIC_OBJS)): $(LWIP_TREE)/.patched

# The flags the objects were compiled with: a change (a toolchain file's, a
# CFLAGS= on the command line) rebuilds them, which make's own dependencies
# would not. $(O)/cflags is rewritten only when the flags differ.
FLAGS_STAMP := $(O)/cflags
ifneq ($(filter-out clean test bench bench-smoke footprint run debug deps help uninstall fuzz,$(or $(MAKECMDGOALS),all)),)
FLAGS_NOW := $(CC) $(ALL_CFLAGS) $(LIB_VISIBILITY) $(LIB_FRAMES) | $(LWIP_CFLAGS) | $(PUBLIC_CFLAGS)
ifneq ($(shell cat $(FLAGS_STAMP) 2>/dev/null),$(strip $(FLAGS_NOW)))
$(shell mkdir -p $(O) && printf '%s\n' '$(strip $(FLAGS_NOW))' >$(FLAGS_STAMP))
endif
endif
$(OBJS) $(PIC_OBJS) $(LWIP_OBJS) $(LWIP_PIC_OBJS): $(FLAGS_STAMP)

$(INTERNAL_LIB): $(OBJS) $(LWIP_OBJS)
	@rm -f $@
	@$(if $(Q),echo '  AR      $@')
	$(Q)$(AR) rcs $@ $^
$(LIB): $(OBJS) $(LWIP_OBJS)
	@rm -f $@ $(O)/weft.o
	@$(if $(Q),echo '  AR      $@ (only default-visibility globals)')
	$(Q)$(CC) -r -nostdlib -o $(O)/weft.o $^
	$(Q)$(READELF) -sW $(O)/weft.o | \
		awk '$$5 == "GLOBAL" && $$6 == "DEFAULT" && $$7 != "UND" { print $$8 }' >$(O)/weft.syms
	$(Q)$(OBJCOPY) --keep-global-symbols=$(O)/weft.syms $(O)/weft.o
	$(Q)$(AR) rcs $@ $(O)/weft.o
# With its SONAME, and a link of that name beside it: a program linked
# here runs with LD_LIBRARY_PATH=$(O).
$(O)/libweft.so: $(PIC_OBJS) $(LWIP_PIC_OBJS)
	@$(if $(Q),echo '  LD      $@')
	$(Q)$(CC) -shared $(ALL_LDFLAGS) \
		-Wl,-soname,$(WEFT_SONAME) -o $@ $(PIC_OBJS) $(LWIP_PIC_OBJS) $(LIBS)
	$(Q)ln -sf libweft.so $(O)/$(WEFT_SONAME)

# The suites test internals too (the deque, stacks, the overflow report);
# -lm for test_fpenv's fesetround (glibc keeps it in libm).
$(O)/tests/%: tests/%.c tests/testutil.c tests/testutil.h $(INTERNAL_LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  LD      $@')
	$(Q)$(CC) $(ALL_CFLAGS) -D_GNU_SOURCE $(CMOCKA_CFLAGS) -Itests -o $@ $< tests/testutil.c \
		$(filter tests/allocwrap.c $(TEST_EXTRA_SRCS),$^) $(INTERNAL_LIB) $(CMOCKA_LIBS) $(ALL_LDFLAGS) \
		$(TEST_WRAP) $(LIBS) -lm

# test_allocfail and test_allocfail_net fail each allocation in turn: every
# one the runtime (and lwIP) makes goes through tests/allocwrap.c.
ALLOC_WRAP_TESTS := $(O)/tests/test_allocfail $(O)/tests/test_allocfail_net
$(ALLOC_WRAP_TESTS): tests/allocwrap.c tests/allocwrap.h
$(ALLOC_WRAP_TESTS): TEST_WRAP := $(foreach f,malloc calloc realloc aligned_alloc free \
	shim_stack_alloc shim_stack_free,-Wl,--wrap=$(f))
# test_dwmac runs a bare-metal driver on Linux against a model of its device
# (tests/dwmac_model.c), which stands in for the driver's contract
# (drivers/driver.h; tests/dwmac_host/ for the arch's half). On bare metal
# it skips.
ifeq ($(SHIM),linux)
$(O)/tests/test_dwmac: TEST_EXTRA_SRCS := drivers/dwmac.c drivers/dwmac_selftest.c \
	drivers/cv1800b_ephy.c tests/dwmac_model.c
$(O)/tests/test_dwmac: drivers/dwmac.c drivers/dwmac.h drivers/dwmac_hw.h drivers/dwmac_selftest.c \
	drivers/driver.h drivers/cv1800b_ephy.c drivers/cv1800b_ephy.h tests/dwmac_model.c \
	tests/dwmac_model.h tests/dwmac_host/arch_bare_cpu.h
$(O)/tests/test_dwmac: private ALL_CFLAGS += -Itests/dwmac_host -Idrivers
# test_dwmac_lwip puts the same driver and model between lwIP's netif and a
# TAP device (its link's --wrap of shim_netdev_*); its HTTP server parses
# requests with httpd's parser.
$(O)/tests/test_dwmac_lwip: TEST_EXTRA_SRCS := drivers/dwmac.c tests/dwmac_model.c \
	examples/http/request.c
$(O)/tests/test_dwmac_lwip: drivers/dwmac.c drivers/dwmac.h drivers/dwmac_hw.h drivers/driver.h \
	tests/dwmac_model.c tests/dwmac_model.h tests/dwmac_host/arch_bare_cpu.h \
	examples/http/request.c examples/http/request.h
$(O)/tests/test_dwmac_lwip: private ALL_CFLAGS += -Itests/dwmac_host -Idrivers -Iexamples
$(O)/tests/test_dwmac_lwip: TEST_WRAP := $(foreach f,open recv send close,-Wl,--wrap=shim_netdev_$(f))
endif
# test_netdev takes the network device's frames itself, and refuses them
# as a full ring does.
$(O)/tests/test_netdev: TEST_WRAP := -Wl,--wrap=shim_netdev_send
# test_plic applies the PLIC specification's rule that QEMU leaves out (a
# completion for a source that is not enabled is ignored) to the shim's calls.
$(O)/tests/test_plic: TEST_WRAP := -Wl,--wrap=plic_complete
# test_lwip_input calls into lwIP itself (tcp_input, as lwIP's own unit
# tests do): it sees lwIP's headers and net/'s ("private": not the library's
# objects, which this test's build may rebuild).
$(O)/tests/test_lwip_input: private ALL_CFLAGS += $(LWIP_INC) -Inet

# test_stall finds its spinning function's name in the stall report's
# backtrace: dladdr looks it up in the dynamic symbol table.
ifeq ($(SHIM),linux)
$(O)/tests/test_stall: TEST_WRAP := -rdynamic
endif

# Deterministic simulation (docs/decisions/simulation.md): libweft-sim.a,
# every object of libweft.a's sources built again with -DWEFT_SIM=1 into
# $(O)/sim/ (runtime/sim.h then maps the shim's thread, wait and clock calls
# to runtime/sim.c, which only this archive has), its internals visible as
# libweft-internal.a's are. Its scenarios (tests/sim/sim_*.c) link it; each
# is also linked with libweft.a ($(O)/sim/NAME.plain), whose weft_init must
# refuse a seed. make sim-build makes them; tests/sim/determinism.sh and
# mk/sim.sh --fixed run them (make test), make sim over many seeds.
SIM_LIB := $(O)/libweft-sim.a
SIM_OBJS := $(patsubst %,$(O)/sim/obj/%.o,$(SRCS) runtime/sim.c runtime/sim_fault.c net/sim_wire.c)
SIM_SCENARIOS := $(patsubst tests/sim/%.c,$(O)/sim/%,$(wildcard tests/sim/sim_*.c))
.PHONY: sim-build
sim-build: $(SIM_LIB) $(SIM_SCENARIOS) $(SIM_SCENARIOS:=.plain)
$(O)/sim/obj/%.o: % $(DEPS_MK)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) $(ALL_CFLAGS) -DWEFT_SIM=1 $(LIB_VISIBILITY) $(LIB_FRAMES) -c $< -o $@
$(O)/sim/obj/tools/gdb/scripts.c.o: tools/gdb/weft-gdb.py
$(O)/sim/obj/arch/%.o: ALL_CFLAGS := $(filter-out -Ikernel-shim -Ikernel-shim/bare -Idrivers -Iruntime -Iruntime/seam,$(ALL_CFLAGS))
$(O)/sim/obj/kernel-shim/%.o: ALL_CFLAGS := $(filter-out -Iruntime -Iruntime/seam,$(ALL_CFLAGS))
$(O)/sim/obj/net/%.o: ALL_CFLAGS := $(filter-out -Iruntime,$(ALL_CFLAGS)) $(LWIP_INC)
$(O)/sim/obj/board/%.o: ALL_CFLAGS := $(filter-out -Ikernel-shim -Ikernel-shim/bare -Idrivers -Iruntime -Iruntime/seam,$(ALL_CFLAGS))
$(O)/sim/obj/drivers/%.o: ALL_CFLAGS := $(filter-out -Ikernel-shim/bare -Iruntime -Iruntime/seam,$(ALL_CFLAGS))
$(SIM_OBJS): $(FLAGS_STAMP) | $(LWIP_TREE)/.patched
$(filter $(O)/sim/obj/net/%,$(SIM_OBJS)): $(LWIP_TREE)/.patched
$(SIM_LIB): $(SIM_OBJS) $(LWIP_OBJS)
	@rm -f $@
	@$(if $(Q),echo '  AR      $@')
	$(Q)$(AR) rcs $@ $^
# The scenarios link tests/allocwrap.c with its --wrap, as ALLOC_WRAP_TESTS
# do: the simulator's alloc= and stack= faults (runtime/sim_fault.c) fail
# allocations through its hook.
SIM_WRAP := $(foreach f,malloc calloc realloc aligned_alloc free shim_stack_alloc \
	shim_stack_free,-Wl,--wrap=$(f))
$(O)/sim/allocwrap.o: tests/allocwrap.c tests/allocwrap.h $(DEPS_MK) $(FLAGS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) $(ALL_CFLAGS) -D_GNU_SOURCE -c $< -o $@
$(O)/sim/%: tests/sim/%.c tests/sim/scenario.h $(SIM_LIB) $(O)/sim/allocwrap.o
	@mkdir -p $(@D)
	@$(if $(Q),echo '  LD      $@')
	$(Q)$(CC) $(PUBLIC_CFLAGS) -o $@ $< $(O)/sim/allocwrap.o $(SIM_LIB) $(ALL_LDFLAGS) \
		$(SIM_WRAP) $(LIBS)
$(O)/sim/%.plain: tests/sim/%.c tests/sim/scenario.h $(LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  LD      $@')
	$(Q)$(CC) $(PUBLIC_CFLAGS) -o $@ $< $(LIB) $(ALL_LDFLAGS) $(LIBS)
# The CMocka suites of tests/sim/suites.conf (the first word of each line
# that is not a comment), built again against libweft-sim.a with
# -DWEFT_SIM=1 ($(O)/sim/test_chan): testutil.c then starts its plain
# threads through the simulator and yields through it (runtime/seam/
# sim_shim.h), and each weft_init of a test takes $WEFT_SIM_SEED. mk/sim.sh
# runs them beside the scenarios.
SIM_SUITE_NAMES := $(shell sed -n 's/^\(test_[a-z0-9_]*\).*/\1/p' tests/sim/suites.conf 2>/dev/null)
SIM_SUITES := $(patsubst %,$(O)/sim/%,$(SIM_SUITE_NAMES))
sim-build: $(SIM_SUITES)
$(SIM_SUITES): $(O)/sim/test_%: tests/test_%.c tests/testutil.c tests/testutil.h tests/sleepers.h \
		tests/sim/suites.conf $(SIM_LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  LD      $@')
	$(Q)$(CC) $(ALL_CFLAGS) -DWEFT_SIM=1 -D_GNU_SOURCE $(CMOCKA_CFLAGS) -Itests -o $@ $< \
		tests/testutil.c $(SIM_LIB) $(CMOCKA_LIBS) $(ALL_LDFLAGS) $(LIBS) -lm
-include $(SIM_OBJS:.o=.d)
# make sim: every scenario over SEEDS seeds from SEED_FROM, each failing seed
# with the line that replays it (mk/sim.sh; SIM= picks scenarios, SIM_ARGS=
# words after the seed, SIM_TIMEOUT= seconds a run). A bare-metal target's
# images run through its RUN (qemu-virt: qemu/run-qemu-virt.sh), a Linux
# build of another CPU's binaries under its qemu-user (linux-aarch64:
# qemu-aarch64; not RUN_ON=kernel's guest). make exports the variables given
# on its command line to mk/sim.sh.
SIM_RUNNER := $(if $(or $(filter bare,$(SHIM)),$(if $(RUN_ON),,$(CROSS_ARCH))),$(RUN))
.PHONY: sim
sim: sim-build
	@if [ "$(SHIM)" = bare ] && [ -z "$(RUN)" ]; then \
		echo "$(TARGET): nothing here can run its images" >&2; exit 1; fi
	@mk/sim.sh $(O) $(SIM_RUNNER)

# Examples are what a user writes: the public headers and libweft.a only.
# An example may have files of its own in examples/<dir>/ (httpd's request
# parser, which tests/fuzz/ compiles too): listed as its prerequisites below.
$(O)/examples/%: examples/%.c $(LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  LD      $@')
	$(Q)$(CC) $(PUBLIC_CFLAGS) -Iexamples -o $@ $< $(filter-out $<,$(filter %.c,$^)) $(LIB) \
		$(ALL_LDFLAGS) $(LIBS)
$(O)/examples/httpd: examples/http/request.c examples/http/request.h

# tests/link/edge.sh's program with names of its own, built as a user's
# against libweft.a, and (the control, which must fail to link) against
# the internal archive.
$(O)/link/%: tests/link/%.c $(LIB)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PUBLIC_CFLAGS) -o $@ $< $(LIB) $(ALL_LDFLAGS) $(LIBS)
$(O)/link/%.internal: tests/link/%.c $(INTERNAL_LIB)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PUBLIC_CFLAGS) -o $@ $< $(INTERNAL_LIB) $(ALL_LDFLAGS) $(LIBS)

# Programs that tests/gdb/check.sh debugs: built as a user's, with -O0 so
# their own frames stay whole in a backtrace.
$(O)/tests/gdb/%: tests/gdb/%.c $(LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  LD      $@')
	$(Q)$(CC) $(PUBLIC_CFLAGS) -O0 -g -o $@ $< $(LIB) $(ALL_LDFLAGS) $(LIBS)

# bench/switch.c and bench/micro.c time internals (arch_switch,
# shim_stack_alloc) beside the public calls: they see the private headers.
$(O)/bench/%: bench/%.c $(INTERNAL_LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  LD      $@')
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(INTERNAL_LIB) $(ALL_LDFLAGS) $(LIBS)

tests: $(TESTS)
# What check runs: every suite, or under valgrind the chosen ones.
CHECK_TESTS := $(if $(filter valgrind,$(VARIANT)),$(addprefix $(O)/tests/,$(VALGRIND_SUITES)),$(TESTS))

# Boards that boot from a bootloader (board.mk: IMAGES := yes) get, for each
# example, a raw binary, a FIT image for U-Boot (the binary and the board's
# device tree, board/<board>/board.dts, in each configuration FIT_CONFIG
# names, the first the default), and a check of the ELF and the FIT against
# board.h.
ifeq ($(IMAGES),yes)
ifeq ($(FIT_CONFIG),)
$(error board/$(TARGET)/board.mk: IMAGES := yes needs FIT_CONFIG, the FIT configurations' names)
endif
BOARD_IMAGES := $(foreach e,$(EXAMPLES),$(e).bin $(e).itb $(e).checked)
all: $(BOARD_IMAGES)
endif
BOARD_DTB := $(O)/board.dtb
# dtc has no -Werror: any warning fails the build here.
$(BOARD_DTB): board/$(BOARD)/board.dts
	@mkdir -p $(@D)
	@$(if $(Q),echo '  DTC     $@')
	$(Q)dtc -I dts -O dtb -o $@ $< 2>$@.err; rc=$$?; cat $@.err >&2; \
		if [ $$rc != 0 ] || [ -s $@.err ]; then rm -f $@ $@.err; exit 1; fi; rm -f $@.err
$(O)/examples/%.bin: $(O)/examples/%
	@$(if $(Q),echo '  BIN     $@')
	$(Q)$(OBJCOPY) -O binary $< $@
$(O)/examples/%.itb: $(O)/examples/% $(O)/examples/%.bin $(BOARD_DTB) mk/fit.sh
	@$(if $(Q),echo '  FIT     $@')
	$(Q)mk/fit.sh $< $<.bin $(BOARD_DTB) "$(FIT_CONFIG)" $@ $(READELF)
$(O)/examples/%.checked: $(O)/examples/% $(O)/examples/%.itb $(BOARD_DTB) board/$(BOARD)/board.h \
		mk/check-image.sh
	$(Q)mk/check-image.sh $< board/$(BOARD)/board.h $(READELF) $(CC) $<.itb $(BOARD_DTB) "$(FIT_CONFIG)" \
		&& touch $@

# RUN_ON=kernel (linux-riscv64): the suites run on Debian's riscv64 kernel
# under qemu-system-riscv64 (2 harts, one guest for the whole run) instead of
# qemu-riscv64: qemu/run-rv-kernel.sh, the kernel cached by mk/deps.sh
# rv-kernel.
ifneq ($(RUN_ON),)
ifneq ($(TARGET)/$(RUN_ON),linux-riscv64/kernel)
$(error RUN_ON=kernel is the only RUN_ON, for TARGET=linux-riscv64)
endif
RUN := qemu/run-rv-kernel.sh
CHECK_WRAP := qemu/run-rv-kernel.sh --session
endif

# Run this configuration's suites; prints "<name>: N passed, N failed".
# WEFT_BOOTARGS=NAME=value... goes on a bare-metal image's command line;
# WEFT_IO=uring runs a Linux target's suites on the io_uring reactor, and
# QEMU_MEM=64M gives qemu-virt's machine that much RAM and QEMU_SMP=2 that
# many harts (make exports them to them; the tally line names them).
check: tests
	@if [ "$(SHIM)" = bare ] && [ -z "$(RUN)" ]; then \
		echo "$(TARGET): nothing here can run its images (make builds and checks them)" >&2; exit 1; fi
	@WEFT_SHIM=$(SHIM) $(CHECK_WRAP) mk/run-tests.sh "$(TARGET)$(if $(VARIANT),-$(VARIANT))$(if $(RUN_ON), RUN_ON=$(RUN_ON))$(if $(WEFT_BOOTARGS), $(WEFT_BOOTARGS))$(if $(WEFT_IO), WEFT_IO=$(WEFT_IO))$(if $(QEMU_MEM), QEMU_MEM=$(QEMU_MEM))$(if $(QEMU_SMP), QEMU_SMP=$(QEMU_SMP))" \
		"$(VARIANT)" "$(RUN)" $(CHECK_TESTS)

deps:
	@mk/deps.sh $(DEPS)

# clang-format over the tracked *.c/*.h (or those under FORMAT_PATHS):
# format rewrites them, format-check lists and shows what differs (mk/format.sh).
.PHONY: format format-check
format:
	@mk/format.sh fix $(FORMAT_PATHS)
format-check:
	@mk/format.sh check $(FORMAT_PATHS)

# httpd on qemu-virt over virtio-net, QEMU's user network forwarding the
# host's port $(HTTP_PORT) to the guest's port 80. A foreground program:
# Ctrl-C (or a SIGTERM to make) stops QEMU, so does QEMU's escape Ctrl-A x;
# a port already in use is said so before QEMU starts.
HTTP_PORT ?= 8080
run:
	@mk/deps.sh bare
	@$(MAKE) --no-print-directory TARGET=qemu-virt O=build/qemu-virt all
	@echo "weft: httpd on qemu-virt: http://localhost:$(HTTP_PORT)/ (Ctrl-C or Ctrl-A x stops it)"
	exec env QEMU_NETDEV=user,hostfwd=tcp:127.0.0.1:$(HTTP_PORT)-:80 QEMU_TIMEOUT=0 \
		qemu/run-qemu-virt.sh build/qemu-virt/examples/httpd WEFT_NETIF=virtio HTTPD_PORT=80

# An image of qemu-virt (default: httpd, networked as by make run) booted
# halted with QEMU's gdbstub, and gdb-multiarch attached with its symbols and
# weft's gdb extension (info fibers, fiber N bt): qemu/debug-qemu-virt.sh,
# docs/debugging.md.
# make debug DEBUG_IMAGE=build/qemu-virt/examples/hello GDB_PORT=1235
DEBUG_IMAGE ?= build/qemu-virt/examples/httpd
.PHONY: debug
debug:
	@mk/deps.sh bare
	@$(MAKE) --no-print-directory TARGET=qemu-virt O=build/qemu-virt all
	exec env QEMU_NETDEV=user,hostfwd=tcp:127.0.0.1:$(HTTP_PORT)-:80 \
		qemu/debug-qemu-virt.sh $(DEBUG_IMAGE) WEFT_NETIF=virtio HTTPD_PORT=80

# make test runs every target and variant itself; a TARGET= given to it
# would be forced into each of its builds.
test:
	@if [ "$(origin TARGET)" = "command line" ]; then \
		echo "make test runs every target and variant itself; for one configuration: make TARGET=$(TARGET) check" >&2; \
		exit 2; fi
	@mk/test-all.sh

# linux-x86_64 with gcc --coverage in build/coverage: its suites, then the
# line coverage of runtime/, net/, kernel-shim/linux/, arch/ and the floors
# make test holds runtime/ and net/ to (mk/coverage.sh).
.PHONY: coverage
coverage:
	@mk/coverage.sh

# The libFuzzer harnesses of tests/fuzz/ (clang; build/fuzz), each in turn
# for FUZZ_SECONDS (default 600), nice'd; make test replays their corpus and
# fuzzes each for a few seconds (mk/fuzz.sh check).
FUZZ_SECONDS ?= 600
export FUZZ_SECONDS
.PHONY: fuzz
fuzz:
	@mk/deps.sh host
	@mk/fuzz.sh run

# weft beside Boost.Context, Boost.Fiber, Go, an epoll server and nginx, as
# ratios (mk/bench.sh, docs/benchmarks.md); bench-smoke: every row at tiny
# sizes, to check the harness (part of make test).
.PHONY: bench bench-smoke
bench:
	@mk/bench.sh
bench-smoke:
	@mk/bench.sh --smoke

# What a connection costs in 64 MB: echo on qemu-virt -m 64M over a TAP
# device in a namespace, the most connections held at once with a fiber and
# with a step-process each, RAM per connection, image sizes, boot time
# (mk/footprint.sh, docs/boards/qemu-virt.md's Footprint; needs root).
.PHONY: footprint
footprint:
	@mk/deps.sh host
	@mk/deps.sh bare
	@$(MAKE) --no-print-directory TARGET=qemu-virt O=build/qemu-virt all
	@$(MAKE) --no-print-directory TARGET=linux-x86_64 O=build/linux-x86_64 \
		build/linux-x86_64/bench/echo_load
	@mk/footprint.sh build/linux-x86_64 build/qemu-virt

# Install the library for this target: headers, libweft.a (and libweft.so
# where it is built: libweft.so.X.Y.Z, its SONAME's link and the link
# libweft.so that -lweft finds), weft.pc for pkg-config (the shared library
# where there is one), weft-static.pc (libweft.a), a CMake package
# (find_package(weft): the imported target weft::weft, the static library),
# and share/weft/<target>.cmake, a CMake toolchain file naming the compiler
# the library was built with (as the .pc files' variable cc does).
# Into the live system (no DESTDIR) under /usr or /usr/local, ldconfig then
# updates the loader's cache (as root), so a program linked with -lweft
# starts; another prefix is not on the loader's path, which make says.
# A bare-metal board installs what makes a program outside the tree an
# image for it (docs/first-firmware.md): the headers; in lib/weft/<board>/
# its libweft.a (the start code, start.S, is in it: the linker script's
# ENTRY pulls it in), link.ld and payload.ld; lib/pkgconfig/weft-<board>.pc;
# and in share/weft/ the board's device tree (<board>.dtb), a CMake
# toolchain file (<board>.cmake, with weft_image()) and the image step
# (<board>-image: ELF -> .bin -> FIT .itb, with fit.sh). Several boards
# and a Linux target may share one PREFIX.
# make install PREFIX=/usr/local DESTDIR=; make uninstall with the same,
# which leaves the headers (and fit.sh) while another target's .pc remains.
PREFIX ?= /usr/local
DESTDIR ?=
EMPTY :=
INSTALL_SHARED := include/weft.h include/weft_net.h share/weft/weft-gdb.py
ifeq ($(SHIM),bare)
BOARD_LIBDIR := lib/weft/$(BOARD)
INSTALL_SHARED += share/weft/fit.sh
INSTALL_FILES := $(BOARD_LIBDIR)/libweft.a $(BOARD_LIBDIR)/link.ld $(BOARD_LIBDIR)/payload.ld \
	lib/pkgconfig/weft-$(BOARD).pc share/weft/$(BOARD).dtb share/weft/$(BOARD).cmake \
	share/weft/$(BOARD)-image
# The link as the tree's examples have it, the board's files taken from
# the installed tree instead (each template adds its own -L and -T).
INSTALL_LDFLAGS := $(filter-out -Lboard/common -T board/$(BOARD)/link.ld,$(LDFLAGS_ARCH))
ifneq ($(findstring board/,$(INSTALL_LDFLAGS)),)
$(error $(TOOLCHAIN): LDFLAGS_ARCH names a file of the tree that make install does not replace: $(INSTALL_LDFLAGS))
endif
BOARD_SUBST := -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(WEFT_VERSION)|g' \
	-e 's|@BOARD@|$(BOARD)|g' -e 's|@CC@|$(CC)|g' -e 's|@OBJCOPY@|$(OBJCOPY)|g' \
	-e 's|@READELF@|$(READELF)|g' -e 's|@FIT_CONFIG@|$(FIT_CONFIG)|g' \
	-e 's|@CFLAGS_ARCH@|$(strip $(CFLAGS_ARCH))|g' -e 's|@LDFLAGS@|$(strip $(INSTALL_LDFLAGS))|g'
else
INSTALL_SO := $(if $(SOLIB),lib/libweft.so.$(WEFT_VERSION) lib/$(WEFT_SONAME) lib/libweft.so)
INSTALL_FILES := lib/libweft.a lib/pkgconfig/weft.pc \
	lib/pkgconfig/weft-static.pc lib/cmake/weft/weftConfig.cmake \
	lib/cmake/weft/weftConfigVersion.cmake share/weft/$(TARGET).cmake $(INSTALL_SO)
# The compiler the library was built with (for a cross target the musl
# wrapper in $(WEFT_CACHE)), its C library and its link, which the .pc
# files (cc, libc; -static in Libs), the CMake package and the toolchain
# file share/weft/$(TARGET).cmake name (docs/cross-compiling.md).
LINUX_SUBST := -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(WEFT_VERSION)|g' \
	-e 's|@TARGET@|$(TARGET)|g' -e 's|@CC@|$(CC)|g' -e 's|@LIBC@|$(LIBC)|g' \
	-e 's|@CROSS_ARCH@|$(CROSS_ARCH)|g' -e 's|@RUN@|$(if $(CROSS_ARCH),$(RUN))|g' \
	-e 's|@LDFLAGS@|$(strip $(LDFLAGS_ARCH))|g'
endif
.PHONY: install uninstall
ifneq ($(SHIM),bare)
install: lib
	@$(if $(Q),echo '  INSTALL $(DESTDIR)$(PREFIX)')
	$(Q)install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/lib/cmake/weft $(DESTDIR)$(PREFIX)/share/weft
	$(Q)install -m 644 include/weft.h include/weft_net.h $(DESTDIR)$(PREFIX)/include/
	$(Q)install -m 644 tools/gdb/weft-gdb.py $(DESTDIR)$(PREFIX)/share/weft/
	$(Q)install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/
	$(if $(SOLIB),$(Q)install -m 755 $(SOLIB) $(DESTDIR)$(PREFIX)/lib/libweft.so.$(WEFT_VERSION) && \
		ln -sf libweft.so.$(WEFT_VERSION) $(DESTDIR)$(PREFIX)/lib/$(WEFT_SONAME) && \
		ln -sf $(WEFT_SONAME) $(DESTDIR)$(PREFIX)/lib/libweft.so)
	$(Q)sed $(LINUX_SUBST) -e 's|@LIBS@|$(strip $(LIBS))|' -e 's|@CFLAGS@|$(strip $(CFLAGS_FIBER))|' \
		mk/weft.pc.in >$(DESTDIR)$(PREFIX)/lib/pkgconfig/weft.pc
	$(Q)sed $(LINUX_SUBST) -e 's|@LIBS@|$(strip $(LIBS))|' -e 's|@CFLAGS@|$(strip $(CFLAGS_FIBER))|' \
		mk/weft-static.pc.in >$(DESTDIR)$(PREFIX)/lib/pkgconfig/weft-static.pc
	$(Q)sed -e 's|@LDFLAGS@|$(subst $(EMPTY) $(EMPTY),;,$(strip $(LDFLAGS_ARCH)))|' $(LINUX_SUBST) \
		-e 's|@LIBS@|$(subst $(EMPTY) $(EMPTY),;,$(strip $(LIBS)))|' \
		-e 's|@CFLAGS@|$(subst $(EMPTY) $(EMPTY),;,$(strip $(CFLAGS_FIBER)))|' \
		mk/weftConfig.cmake.in >$(DESTDIR)$(PREFIX)/lib/cmake/weft/weftConfig.cmake
	$(Q)sed $(LINUX_SUBST) mk/weft-toolchain.cmake.in >$(DESTDIR)$(PREFIX)/share/weft/$(TARGET).cmake
	$(Q)sed -e 's|@VERSION@|$(WEFT_VERSION)|' mk/weftConfigVersion.cmake.in \
		>$(DESTDIR)$(PREFIX)/lib/cmake/weft/weftConfigVersion.cmake
	$(if $(and $(SOLIB),$(if $(DESTDIR),,y)),$(Q)$(if $(filter /usr /usr/local,$(PREFIX)), \
		if [ "$$(id -u)" = 0 ]; then ldconfig; else echo "make install: run ldconfig as root"; fi, \
		echo "make install: $(PREFIX)/lib is not on the loader's path: link with" \
			"-Wl,-rpath,$(PREFIX)/lib (README) or set LD_LIBRARY_PATH"))
else
install: lib $(BOARD_DTB)
	@$(if $(Q),echo '  INSTALL $(DESTDIR)$(PREFIX) ($(BOARD))')
	$(Q)install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/$(BOARD_LIBDIR) $(DESTDIR)$(PREFIX)/share/weft
	$(Q)install -m 644 include/weft.h include/weft_net.h $(DESTDIR)$(PREFIX)/include/
	$(Q)install -m 644 $(LIB) board/$(BOARD)/link.ld board/common/payload.ld \
		$(DESTDIR)$(PREFIX)/$(BOARD_LIBDIR)/
	$(Q)install -m 644 $(BOARD_DTB) $(DESTDIR)$(PREFIX)/share/weft/$(BOARD).dtb
	$(Q)install -m 755 mk/fit.sh $(DESTDIR)$(PREFIX)/share/weft/fit.sh
	$(Q)install -m 644 tools/gdb/weft-gdb.py $(DESTDIR)$(PREFIX)/share/weft/
	$(Q)sed $(BOARD_SUBST) mk/weft-board.pc.in >$(DESTDIR)$(PREFIX)/lib/pkgconfig/weft-$(BOARD).pc
	$(Q)sed $(BOARD_SUBST) mk/weft-board.cmake.in >$(DESTDIR)$(PREFIX)/share/weft/$(BOARD).cmake
	$(Q)sed $(BOARD_SUBST) mk/weft-image.sh.in >$(DESTDIR)$(PREFIX)/share/weft/$(BOARD)-image
	$(Q)chmod 755 $(DESTDIR)$(PREFIX)/share/weft/$(BOARD)-image
endif
uninstall:
	$(Q)rm -f $(addprefix $(DESTDIR)$(PREFIX)/,$(INSTALL_FILES))
	$(Q)if ! ls $(DESTDIR)$(PREFIX)/lib/pkgconfig/weft*.pc >/dev/null 2>&1; then \
		rm -f $(addprefix $(DESTDIR)$(PREFIX)/,$(INSTALL_SHARED)); fi
	$(Q)rmdir $(DESTDIR)$(PREFIX)/lib/cmake/weft $(if $(BOARD_LIBDIR),$(DESTDIR)$(PREFIX)/$(BOARD_LIBDIR) \
		$(DESTDIR)$(PREFIX)/lib/weft) 2>/dev/null || true
	$(Q)rmdir $(DESTDIR)$(PREFIX)/share/weft 2>/dev/null || true

# make help: what make can do here, one line each.
.PHONY: help
help:
	@printf '%s\n' \
	'make run                boot examples/httpd on qemu-system-riscv64 (http://localhost:$(HTTP_PORT)/)' \
	'make test               every suite on every target and variant, and the checks (about 20 min)' \
	'make [all]              the library, examples and benches for TARGET (default linux-x86_64)' \
	'make lib                libweft.a (and libweft.so on linux-x86_64) for TARGET' \
	'make check              the suites of one configuration (TARGET, VARIANT, WEFT_IO, QEMU_SMP, QEMU_MEM;' \
	'                        RUN_ON=kernel: linux-riscv64 on a riscv64 kernel under qemu-system-riscv64)' \
	'make install            headers, libraries, pkg-config and CMake files (PREFIX, DESTDIR); uninstall' \
	'                        (a bare-metal board: also its link script, device tree, image step)' \
	'make bench              weft beside Go, Boost, nginx and an epoll server; bench-smoke: tiny sizes' \
	'make footprint          connections held on qemu-virt -m 64M (root: a TAP device)' \
	'make debug              an image halted under gdb-multiarch with weft'"'"'s gdb extension' \
	'make coverage           line coverage of linux-x86_64 and its floors' \
	'make sim                the simulation scenarios over SEEDS=N seeds (100; SEED_FROM=, SIM=tree ...):' \
	'                        each failing seed with the line that replays it (docs/debugging.md)' \
	'make sim-build          libweft-sim.a and the simulation scenarios (tests/sim/) for TARGET' \
	'make fuzz               the libFuzzer harnesses for FUZZ_SECONDS each' \
	'make format             clang-format the sources; format-check lists what differs' \
	'make deps               install what the build needs (Debian packages, sources into WEFT_CACHE)' \
	'make clean              empty build/ (or O=dir)' \
	'' \
	'TARGET=$(notdir $(patsubst %/board.mk,%,$(wildcard board/*/board.mk)))' \
	'VARIANT=asan|tsan|valgrind  TOOLCHAIN=file.mk  O=build-dir  LWIP_DIR=your-lwip'

# make clean empties build/; make clean O=dir empties that directory.
clean:
	rm -rf $(if $(filter command line,$(origin O)),$(O),build)

-include $(OBJS:.o=.d) $(PIC_OBJS:.o=.d) $(LWIP_OBJS:.o=.d) $(LWIP_PIC_OBJS:.o=.d)
