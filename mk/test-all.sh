#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make test`: every target and build variant in turn (one at a time, so the
# suites that count per-worker shares are not starved by each other), one
# summary line each, then "total: N passed, N failed, N skipped" (the sum of
# every line but the Duo's). Exit 1 if any configuration failed.
set -u
cd "$(dirname "$0")/.."
mk/deps.sh host || exit 1
jobs=$(nproc 2>/dev/null || echo 2)
configs=(
	"TARGET=linux-x86_64"
	"TARGET=linux-x86_64 VARIANT=asan"
	"TARGET=linux-x86_64 VARIANT=tsan"
	"TARGET=linux-aarch64"
	"TARGET=linux-riscv64"
	"TARGET=qemu-virt"
	"TARGET=qemu-virt WEFT_BOOTARGS=WEFT_WORKERS=2"
)
summary=()
status=0
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
	[ $rc -eq 0 ] || status=1
done
# The library as a user takes it: only weft_* leaves libweft.a and
# libweft.so, a program with its own sys_now links, build directories keep
# one configuration (tests/link/edge.sh); make install, then an outside
# program built with pkg-config and with CMake, natively and for one cross
# target (tests/link/install.sh).
for step in "edge.sh build/linux-x86_64" "install.sh linux-x86_64" "install.sh linux-aarch64"; do
	echo "== tests/link/$step"
	if ! make --no-print-directory -j"$jobs" TARGET=linux-x86_64 lib build/linux-x86_64/libweft-internal.a >/dev/null; then
		summary+=("tests/link/$step: build failed")
		status=1
		continue
	fi
	# shellcheck disable=SC2086
	out=$(tests/link/$step 2>&1)
	rc=$?
	echo "$out"
	line=$(echo "$out" | grep -E '^[a-z0-9_-]+: [0-9]+ passed, [0-9]+ failed' | tail -1)
	summary+=("${line:-tests/link/$step: no tally (exit $rc)}")
	[ $rc -eq 0 ] || status=1
done
# The runner itself: programs that exit mid-suite or between groups, crash
# or hang must each be reported as failures (tests/runner/check.sh).
echo "== the test runner (tests/runner/check.sh)"
out=$(tests/runner/check.sh 2>&1)
rc=$?
echo "$out"
line=$(echo "$out" | grep -E '^runner: [0-9]+ passed, [0-9]+ failed' | tail -1)
summary+=("${line:-runner: no tally (exit $rc)}")
[ $rc -eq 0 ] || status=1
# The fuzz harnesses (tests/fuzz/, clang and libFuzzer in build/fuzz): every
# input of their corpus replayed, then a few seconds of fuzzing each
# (mk/fuzz.sh check; make fuzz runs them for longer).
echo "== fuzz harnesses (mk/fuzz.sh check)"
out=$(mk/fuzz.sh check 2>&1)
rc=$?
echo "$out"
line=$(echo "$out" | grep -E '^fuzz: [0-9]+ passed, [0-9]+ failed' | tail -1)
summary+=("${line:-fuzz: no tally (exit $rc)}")
[ $rc -eq 0 ] || status=1
# Line coverage of linux-x86_64 (its own --coverage build and run), and its
# floors for runtime/ and net/ (mk/coverage.sh).
echo "== make coverage"
out=$(mk/coverage.sh 2>&1)
rc=$?
echo "$out"
line=$(echo "$out" | grep -E '^coverage: [0-9]+ passed, [0-9]+ failed' | tail -1)
summary+=("${line:-coverage: no tally (exit $rc)}")
[ $rc -eq 0 ] || status=1
# Real clients against the examples: curl and wrk over TAP and AF_PACKET in a namespace
# and over kernel sockets, curl against httpd on qemu-virt (mk/net-tests.sh).
echo "== network integration tests (mk/net-tests.sh)"
if make --no-print-directory -j"$jobs" TARGET=linux-x86_64 all >/dev/null &&
	make --no-print-directory -j"$jobs" TARGET=qemu-virt all >/dev/null; then
	out=$(mk/net-tests.sh 2>&1)
	rc=$?
	echo "$out"
	summary+=("$(echo "$out" | tail -1)")
	[ $rc -eq 0 ] || status=1
else
	summary+=("net: build failed")
	status=1
fi
# `make run` in a pseudo-terminal: Ctrl-C, Ctrl-A x and a SIGTERM to make
# stop QEMU; a port in use is said so (tests/run/make_run.sh).
echo "== make run in a terminal (tests/run/make_run.sh)"
if make --no-print-directory -j"$jobs" TARGET=qemu-virt all >/dev/null; then
	out=$(timeout 600 tests/run/make_run.sh 2>&1)
	rc=$?
	echo "$out"
	line=$(echo "$out" | grep -E '^make_run: [0-9]+ passed, [0-9]+ failed' | tail -1)
	summary+=("${line:-make_run: no tally (exit $rc)}")
	[ $rc -eq 0 ] || status=1
else
	summary+=("make_run: build failed")
	status=1
fi
# weft's gdb extension: a core file and a live process on linux-x86_64,
# qemu-user's gdbstub for aarch64 and riscv64, QEMU's for qemu-virt
# (tests/gdb/check.sh).
echo "== gdb: info fibers, fiber N bt (tests/gdb/check.sh)"
gdb_built=yes
for t in linux-x86_64 linux-aarch64 linux-riscv64 qemu-virt; do
	make --no-print-directory -j"$jobs" TARGET=$t build/$t/tests/gdb/parked >/dev/null || gdb_built=no
done
if [ $gdb_built = yes ]; then
	out=$(timeout 900 tests/gdb/check.sh 2>&1)
	rc=$?
	echo "$out"
	line=$(echo "$out" | grep -E '^gdb: [0-9]+ passed, [0-9]+ failed' | tail -1)
	summary+=("${line:-gdb: no tally (exit $rc)}")
	[ $rc -eq 0 ] || status=1
else
	summary+=("gdb: build failed")
	status=1
fi
# Fiber stacks registered with valgrind, a chosen set of suites under
# memcheck, any error a failure (make VARIANT=valgrind check).
c="TARGET=linux-x86_64 VARIANT=valgrind"
echo "== make $c check"
# shellcheck disable=SC2086
if make --no-print-directory -j"$jobs" $c tests >/dev/null; then
	# shellcheck disable=SC2086
	out=$(make --no-print-directory $c check 2>&1)
	rc=$?
	echo "$out"
	line=$(echo "$out" | grep -E ': [0-9]+ passed, [0-9]+ failed' | tail -1)
	summary+=("${line:-$c: no tally (exit $rc)}")
	[ $rc -eq 0 ] || status=1
else
	summary+=("$c: build failed")
	status=1
fi
# Every row of make bench at tiny sizes: the harness still builds, runs and
# writes its table, CSV and plot (mk/bench.sh --smoke; no timing is judged).
echo "== make bench-smoke"
out=$(make --no-print-directory bench-smoke 2>&1)
rc=$?
echo "$out"
line=$(echo "$out" | grep -E '^bench-smoke: [0-9]+ passed, [0-9]+ failed' | tail -1)
summary+=("${line:-bench-smoke: no tally (exit $rc)}")
[ $rc -eq 0 ] || status=1
# The Duo's boot path, on qemu-virt: Debian's U-Boot boots the qemu-virt FIT
# images with the Duo's own bootm command (tests/boot/uboot.sh).
echo "== U-Boot boots the qemu-virt FIT images (tests/boot/uboot.sh)"
if make --no-print-directory -j"$jobs" TARGET=qemu-virt all >/dev/null; then
	out=$(timeout 600 tests/boot/uboot.sh 2>&1)
	rc=$?
	echo "$out"
	line=$(echo "$out" | grep -E '^uboot: [0-9]+ passed, [0-9]+ failed$' | tail -1)
	summary+=("${line:-uboot: no tally (exit $rc)}")
	[ $rc -eq 0 ] || status=1
else
	summary+=("uboot: build failed")
	status=1
fi
# The Duo cannot run here: build it and check its images against board.h.
echo "== make TARGET=milkv-duo (built and checked, not run)"
if out=$(make --no-print-directory -j"$jobs" TARGET=milkv-duo all 2>&1); then
	echo "$out" | grep ': entry ' || true
	summary+=("milkv-duo: images built and checked against board.h (not run)")
else
	echo "$out" | tail -30
	summary+=("milkv-duo: build failed")
	status=1
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
