#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `valgrind ./prog` on a normal build (not VARIANT=valgrind): the examples
# that run fibers on several workers must show no memcheck error, since the
# default Linux build names each fiber stack to valgrind (its client
# requests, kernel-shim/linux/stack.c) whenever valgrind's header is there.
# Without that, every switch reads as a wild move of sp (hello alone gave
# hundreds of reports).
# Last line: "valgrind-default: N passed, M failed".
# Usage: tests/link/valgrind_default.sh BUILD_DIR
set -u
build=${1:?usage: tests/link/valgrind_default.sh BUILD_DIR}
passed=0 failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for prog in hello demo embed_poll; do
	bin=$build/examples/$prog
	if [ ! -x "$bin" ]; then
		echo "  FAIL: $bin not built"; failed=$((failed + 1)); continue
	fi
	if timeout 300 valgrind -q --error-exitcode=99 "$bin" >"$log" 2>&1; then
		echo "  ok: valgrind $prog (a normal build): no error"
		passed=$((passed + 1))
	else
		echo "  FAIL: valgrind $prog exited $?:"; grep '^==' "$log" | head -8
		failed=$((failed + 1))
	fi
done
echo "valgrind-default: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
