#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The io_uring backend's fallbacks, each on a kernel that has the feature:
# the suites that exercise the reactor and kernel sockets run again on
# WEFT_IO=uring with $WEFT_IO_MISSING hiding features from the backend's
# probes (kernel-shim/linux/feature.c), as an older kernel would lack them
# (docs/decisions/io-uring.md, "Probing"). Per set: the suites through
# mk/run-tests.sh (a line each, then the set's tally), and a check that
# test_io's and test_net's logs say each hidden feature's fallback line
# (the knob took effect in those processes; test_uring's
# test_missing_from_environment checks the rest in its own). Then
# "linux-x86_64 WEFT_IO=uring fallbacks: N passed, N failed, N skipped".
#   coop_taskrun,multishot_accept,pbuf_ring  Linux 5.11 to 5.18 (but for
#       multishot poll from 5.13): the interrupting task work, accepts and
#       receives by readiness
#   multishot_poll    Linux 5.11 and 5.12: one-shot polls armed at each wait
#   multishot_recv    Linux 5.19: receives by readiness, accepts completed
#   ext_arg           Linux 5.10 (the Milk-V Duo's): epoll (only test_uring
#       and test_io: the epoll path is make test's first configuration)
# Needs a kernel with every feature (6.0 or later) to mean what it says; on
# one without io_uring (qemu-user) every set runs on epoll.
# Usage: tests/uring_fallbacks.sh [BUILD_DIR]   (default build/linux-x86_64)
set -u
cd "$(dirname "$0")/.." || exit 1
build=${1:-build/linux-x86_64}
t=$build/tests
full="$t/test_uring $t/test_io $t/test_net $t/test_cancel $t/test_allocfail_net"
sets=(
	"coop_taskrun,multishot_accept,pbuf_ring|$full"
	"multishot_poll|$full"
	"multishot_recv|$full"
	"ext_arg|$t/test_uring $t/test_io"
)
passed=0 failed=0 skipped=0
for s in "${sets[@]}"; do
	missing=${s%%|*}
	suites=${s#*|}
	config="${build##*/} WEFT_IO=uring WEFT_IO_MISSING=$missing"
	# shellcheck disable=SC2086
	out=$(WEFT_IO=uring WEFT_IO_MISSING=$missing mk/run-tests.sh "$config" "" "" $suites 2>&1)
	echo "$out"
	line=$(echo "$out" | tail -1)
	p=$(echo "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1/p')
	f=$(echo "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\2/p')
	k=$(echo "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\3/p')
	[ -n "$p" ] || { p=0 f=1 k=0; echo "  $config: no tally"; }
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + k))
	# Where io_uring works at all, each hidden feature's line is in the
	# logs of the suites that set the reactor up.
	grep -q 'no io_uring (io_uring_setup: ENOSYS' "$t/test_io.log" && continue
	for log in "$t/test_io.log" "$t/test_net.log"; do
		if [ ! -f "$log" ] || [[ " $suites " != *" ${log%.log} "* ]]; then continue; fi
		for m in ${missing//,/ }; do
			if grep -q "^weft: WEFT_IO=uring: no .*: WEFT_IO_MISSING=$m)" "$log"; then
				passed=$((passed + 1))
			else
				echo "  FAIL: $log has no fallback line for $m"
				failed=$((failed + 1))
			fi
		done
	done
done
echo "${build##*/} WEFT_IO=uring fallbacks: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
