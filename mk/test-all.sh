#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make test`: every target and build variant in turn (one at a time, so the
# suites that count per-worker shares are not starved by each other), one
# summary line each, then "total: N passed, N failed, N skipped" (the sum of
# every line but the Duo's). Exit 1 if any configuration failed.
set -u
cd "$(dirname "$0")/.." || exit 1
mk/deps.sh host || exit 1
# linux-riscv64 on a riscv64 kernel: Debian's kernel, busybox and the
# network scripts' tools for its guest (a 1 s no-op once cached).
mk/deps.sh rv-kernel || exit 1
jobs=$(nproc 2>/dev/null || echo 2)
configs=(
	"TARGET=linux-x86_64"
	"TARGET=linux-x86_64 VARIANT=asan"
	"TARGET=linux-x86_64 VARIANT=tsan"
	"TARGET=linux-x86_64 WEFT_IO=uring"
	"TARGET=linux-aarch64"
	"TARGET=linux-riscv64"
	"TARGET=linux-riscv64 RUN_ON=kernel"
	"TARGET=qemu-virt"
	"TARGET=qemu-virt WEFT_BOOTARGS=WEFT_WORKERS=2"
	"TARGET=qemu-virt QEMU_MEM=64M"
	"TARGET=qemu-virt QEMU_SMP=2"
	"TARGET=qemu-virt QEMU_SMP=4"
)
summary=()
failures=()
status=0
# note_failures NAME OUTPUT: keep what names a failure in OUTPUT (the
# runner's line for a failing suite, CMocka's failed tests and assertion
# lines, a sanitizer's or valgrind's first report line), at most 8 lines a
# configuration, for the section printed before the summary: a CI log often
# shows only its last lines.
note_failures()
{
	local name=$1 lines
	lines=$(printf '%s\n' "$2" | grep -E \
		'^  test_[A-Za-z0-9_]+ +[0-9]+ passed, [1-9][0-9]* failed|^\[  (FAILED|ERROR) +\] [a-z-]|^\[   LINE   \]|WARNING: ThreadSanitizer|ERROR: [A-Za-z]+Sanitizer|==[0-9]+== (Invalid|Conditional|Use of|Syscall param|[0-9,]+ bytes in)' |
		awk '!seen[$0]++' | head -8)
	[ -n "$lines" ] || return 0
	failures+=("$name:")
	while IFS= read -r l; do failures+=("  $l"); done <<<"$lines"
}
for c in "${configs[@]}"; do
	echo "== make $c check"
	# shellcheck disable=SC2086
	if ! make --no-print-directory -j"$jobs" $c tests >/dev/null; then
		# Show the build error.
		make --no-print-directory $c tests 2>&1 | tail -30
		summary+=("$c: build failed")
		status=1
		continue
	fi
	# shellcheck disable=SC2086
	out=$(make --no-print-directory $c check 2>&1)
	rc=$?
	echo "$out"
	# The tally line, not make's "Error 1" that follows it on failure.
	line=$(echo "$out" | grep -E ': [0-9]+ passed, [0-9]+ failed' | tail -1)
	summary+=("${line:-$c: no tally (exit $rc)}")
	[ $rc -eq 0 ] || { status=1; note_failures "$c" "$out"; }
done
# step NAME BUILD CMD...: make BUILD first (make's arguments; empty for
# none), then run CMD, show what it printed and keep its tally (its last
# unindented "NAME: N passed, N failed[, N skipped]" line) for the summary.
step()
{
	local name=$1 build=$2 out rc line
	shift 2
	echo "== $name"
	# shellcheck disable=SC2086
	if [ -n "$build" ] && ! make --no-print-directory -j"$jobs" $build >/dev/null; then
		summary+=("$name: build failed")
		status=1
		return
	fi
	out=$("$@" 2>&1)
	rc=$?
	echo "$out"
	line=$(echo "$out" | grep -E '^[A-Za-z0-9_.=-][A-Za-z0-9_ .=-]*: [0-9]+ passed, [0-9]+ failed' | tail -1)
	summary+=("${line:-$name: no tally (exit $rc)}")
	[ $rc -eq 0 ] || { status=1; note_failures "$name" "$out"; }
}
x86="TARGET=linux-x86_64"
# The io_uring backend's fallbacks on this kernel: test_uring, test_io,
# test_net, test_cancel and test_allocfail_net again on WEFT_IO=uring with
# WEFT_IO_MISSING hiding features from its probes, as older kernels lack
# them (tests/uring_fallbacks.sh; about 2 minutes).
step "io_uring fallbacks (tests/uring_fallbacks.sh)" "$x86 tests" \
	tests/uring_fallbacks.sh build/linux-x86_64
# Deterministic simulation (docs/decisions/simulation.md): libweft-sim.a's
# scenarios with one seed twice (the same output and digest) and another
# (another digest), a deadlock found and replayed, and libweft.a's refusal
# of a seed (tests/sim/determinism.sh), on linux-x86_64, linux-aarch64
# and linux-riscv64 (under qemu-user) and qemu-virt.
# Every _Thread_local of runtime/ and net/ is one the simulator carries
# per actor (tests/sim/tls.sh).
step "tests/sim/tls.sh" "" tests/sim/tls.sh
step "tests/sim/determinism.sh" "$x86 sim-build" tests/sim/determinism.sh build/linux-x86_64
step "tests/sim/determinism.sh linux-aarch64" "TARGET=linux-aarch64 sim-build" \
	tests/sim/determinism.sh build/linux-aarch64 qemu-aarch64
step "tests/sim/determinism.sh linux-riscv64" "TARGET=linux-riscv64 sim-build" \
	tests/sim/determinism.sh build/linux-riscv64 qemu-riscv64
step "tests/sim/determinism.sh qemu-virt" "TARGET=qemu-virt sim-build" \
	tests/sim/determinism.sh build/qemu-virt qemu/run-qemu-virt.sh
# The simulation's faults off the network (tests/sim/faults.sh): a rate
# that never fires leaves the schedule as it was, one that fires changes
# it, a seed with its faults replays, sim_starve holds with every fault on,
# and weft_init's refusals of malformed lists.
step "tests/sim/faults.sh" "$x86 sim-build" tests/sim/faults.sh build/linux-x86_64
step "tests/sim/faults.sh qemu-virt" "TARGET=qemu-virt sim-build" \
	tests/sim/faults.sh build/qemu-virt qemu/run-qemu-virt.sh
# Every simulation scenario over a fixed few seeds (mk/sim.sh --fixed: 8
# each on the Linux targets, 4 on qemu-virt, a boot each; make sim runs
# more), and the CMocka suites of tests/sim/suites.conf under 2 seeds on
# linux-x86_64, 1 on qemu-virt (none under qemu-user), each scenario's
# run's lines kept in BUILD_DIR/sim/fixed.lines; then the same seed's lines (output, steps and digest) must be the same on all four
# targets (tests/sim/crosstarget.sh). The files of an earlier make test are
# removed first: a target whose step does not run leaves none, and the
# comparison fails.
sim_dirs="build/linux-x86_64 build/linux-aarch64 build/linux-riscv64 build/qemu-virt"
for d in $sim_dirs; do rm -f "$d/sim/fixed.lines"; done
step "mk/sim.sh --fixed" "$x86 sim-build" mk/sim.sh --fixed build/linux-x86_64
step "mk/sim.sh --fixed linux-aarch64" "TARGET=linux-aarch64 sim-build" \
	mk/sim.sh --fixed build/linux-aarch64 qemu-aarch64
step "mk/sim.sh --fixed linux-riscv64" "TARGET=linux-riscv64 sim-build" \
	mk/sim.sh --fixed build/linux-riscv64 qemu-riscv64
step "mk/sim.sh --fixed qemu-virt" "TARGET=qemu-virt sim-build" \
	mk/sim.sh --fixed build/qemu-virt qemu/run-qemu-virt.sh
# shellcheck disable=SC2086 # four directories
step "tests/sim/crosstarget.sh" "" tests/sim/crosstarget.sh $sim_dirs
# The library as a user takes it: only weft_* leaves libweft.a and
# libweft.so, a program with its own sys_now links, build directories keep
# one configuration, and on qemu-virt only weft_* and the C library's
# names leave libweft.a (tests/link/edge.sh); make install, then an outside
# program built with pkg-config and with CMake, natively and for the cross
# targets as docs/cross-compiling.md says (tests/link/install.sh), and for
# the bare boards (below).
step "tests/link/edge.sh" "$x86 lib build/linux-x86_64/libweft-internal.a" \
	tests/link/edge.sh build/linux-x86_64 build/qemu-virt
# Every tracked .c/.h file as .clang-format says (mk/format.sh; clang-format
# 14 from mk/deps.sh host).
step "format (mk/format.sh check)" "" mk/format.sh check
# runtime/'s files call each other in no circle but the scheduler's core
# and the processes' (tests/link/layers.sh, from the objects' symbols).
step "tests/link/layers.sh" "$x86 lib" tests/link/layers.sh build/linux-x86_64
# docs/api.md names the error codes the header's comments name (weft_net.h's
# calls, and weft.h's in the shapes it reads), every public function is
# named on the page, and
# its contents and weft_net.h prototypes are current (tests/link/apidoc.sh).
step "tests/link/apidoc.sh" "" tests/link/apidoc.sh
# docs/debugging.md's quoted gdb sessions (linux-x86_64, qemu-user's
# riscv64, make debug's qemu-virt), dump and overflow report are what their
# commands print now (mk/debugging-doc.sh --check; the script without
# --check rewrites them).
step "mk/debugging-doc.sh --check" \
	"$x86 build/linux-x86_64/tests/gdb/parked build/linux-x86_64/tests/test_overflow build/linux-x86_64/examples/httpd" \
	bash -c 'make --no-print-directory -s TARGET=linux-riscv64 build/linux-riscv64/tests/gdb/parked >/dev/null &&
		make --no-print-directory -s TARGET=qemu-virt build/qemu-virt/examples/httpd >/dev/null &&
		exec mk/debugging-doc.sh --check'
step "tests/link/install.sh linux-x86_64" "" tests/link/install.sh linux-x86_64
step "tests/link/install.sh linux-aarch64" "" tests/link/install.sh linux-aarch64
step "tests/link/install.sh linux-riscv64" "" tests/link/install.sh linux-riscv64
# Your own firmware (docs/first-firmware.md): make install for qemu-virt and
# milkv-duo, the page's program built outside the tree with CMake and with
# pkg-config, booted on qemu-virt with argv and environment words, the
# Duo's image checked (tests/link/firmware.sh).
step "tests/link/firmware.sh" "" timeout 900 tests/link/firmware.sh
# The runner itself: programs that exit mid-suite or between groups, crash
# or hang must each be reported as failures (tests/runner/check.sh).
step "the test runner (tests/runner/check.sh)" "" tests/runner/check.sh
# The fuzz harnesses (tests/fuzz/, clang and libFuzzer in build/fuzz): every
# input of their corpus replayed, then a few seconds of fuzzing each
# (mk/fuzz.sh check; make fuzz runs them for longer).
step "fuzz harnesses (mk/fuzz.sh check)" "" mk/fuzz.sh check
# Line coverage of linux-x86_64 (its own --coverage build and run), and its
# floors for runtime/ and net/ (mk/coverage.sh).
step "make coverage" "" mk/coverage.sh
# Real clients against the examples: curl and wrk over TAP and AF_PACKET in
# a namespace and over kernel sockets, httpd's limits on loopback, curl
# against httpd on qemu-virt, 1,000 echo connections held on qemu-virt
# -m 64M (mk/net-tests.sh).
make --no-print-directory -j"$jobs" TARGET=linux-x86_64 all >/dev/null
step "network integration tests (mk/net-tests.sh)" "TARGET=qemu-virt all" mk/net-tests.sh
# The network scripts for linux-riscv64 inside a riscv64 kernel's guest
# (qemu-system-riscv64, 2 harts, Debian's riscv64 curl, wrk and iproute2
# there): echo over lwIP on TAP and on kernel sockets, with epoll and with
# io_uring, httpd and echo over lwIP on AF_PACKET and AF_XDP on a veth pair,
# httpd_tap, soak and httpd_limits at the guest's sizes
# (tests/net/rv_kernel.sh).
step "network scripts on the riscv64 kernel (tests/net/rv_kernel.sh)" \
	"TARGET=linux-riscv64 all" timeout 1200 tests/net/rv_kernel.sh build/linux-riscv64
# `make run` in a pseudo-terminal: Ctrl-C, Ctrl-A x and a SIGTERM to make
# stop QEMU; a port in use is said so (tests/run/make_run.sh).
step "make run in a terminal (tests/run/make_run.sh)" "TARGET=qemu-virt all" \
	timeout 600 tests/run/make_run.sh
# weft's gdb extension: a core file and a live process on linux-x86_64,
# qemu-user's gdbstub for aarch64 and riscv64, QEMU's for qemu-virt
# (tests/gdb/check.sh).
for t in linux-x86_64 linux-aarch64 linux-riscv64; do
	make --no-print-directory -j"$jobs" TARGET=$t build/$t/tests/gdb/parked >/dev/null
done
step "gdb: info fibers, fiber N bt (tests/gdb/check.sh)" \
	"TARGET=qemu-virt build/qemu-virt/tests/gdb/parked" timeout 900 tests/gdb/check.sh
# valgrind on a normal build: the examples show no memcheck error
# (tests/link/valgrind_default.sh).
step "tests/link/valgrind_default.sh" "$x86 all" tests/link/valgrind_default.sh build/linux-x86_64
# Fiber stacks registered with valgrind, a chosen set of suites under
# memcheck, any error a failure (make VARIANT=valgrind check).
step "make $x86 VARIANT=valgrind check" "$x86 VARIANT=valgrind tests" \
	make --no-print-directory $x86 VARIANT=valgrind check
# Every row of make bench at tiny sizes: the harness still builds, runs and
# writes its table, CSV and plot (mk/bench.sh --smoke; no timing is judged).
step "make bench-smoke" "" make --no-print-directory bench-smoke
# The Duo's boot path, on qemu-virt: Debian's U-Boot boots the qemu-virt FIT
# images with the Duo's own bootm command (tests/boot/uboot.sh).
step "U-Boot boots the qemu-virt FIT images (tests/boot/uboot.sh)" "TARGET=qemu-virt all" \
	timeout 600 tests/boot/uboot.sh
# The bare boards nothing here can run (board.mk: RUN empty; the Duo, and
# board/template/, a board to copy, which must build as it stands), found
# in board/: built, and their images checked against their board.h.
for mk in board/*/board.mk; do
	b=$(basename "$(dirname "$mk")")
	grep -Eq '^SHIM[[:space:]]*:?=[[:space:]]*bare[[:space:]]*$' "$mk" || continue
	grep -Eq '^RUN[[:space:]]*:?=[[:space:]]*[^[:space:]]' "$mk" && continue
	echo "== make TARGET=$b (built and checked, not run)"
	if out=$(make --no-print-directory -j"$jobs" TARGET="$b" all 2>&1); then
		echo "$out" | grep ': entry ' || true
		summary+=("$b: images built and checked against board.h (not run)")
	else
		echo "$out" | tail -30
		summary+=("$b: build failed")
		status=1
	fi
done
if [ ${#failures[@]} -gt 0 ]; then
	echo "== what failed (first lines of each; the whole output is above)"
	printf '%s\n' "${failures[@]}"
fi
echo "== summary"
tp=0 tf=0 ts=0
for s in "${summary[@]}"; do
	echo "$s"
	p=$(echo "$s" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\1/p')
	f=$(echo "$s" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\2/p')
	k=$(echo "$s" | sed -n 's/.*: [0-9]* passed, [0-9]* failed, \([0-9]*\) skipped.*/\1/p')
	case "$s" in *"(not run)") continue;; esac
	tp=$((tp + ${p:-0})) tf=$((tf + ${f:-1})) ts=$((ts + ${k:-0}))
done
echo "total: $tp passed, $tf failed, $ts skipped"
exit $status
