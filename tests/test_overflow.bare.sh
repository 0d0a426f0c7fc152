#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_overflow on bare metal: an overflow ends the machine, so each case is a
# boot of its own (WT_CASE=<case>, see tests/test_overflow.c). Checks the
# console report and the exit status, and prints CMocka's lines (group
# header, one result per case, summary) so mk/run-tests.sh counts the cases.
# Usage: tests/test_overflow.bare.sh RUNNER IMAGE
set -u
runner=$1 img=$2
passed=0 failed=()

# check NAME STATUS PATTERN... : boot WT_CASE=NAME, want STATUS and every
# PATTERN (a fixed string; a leading ! means it must be absent).
check() {
	local name=$1 want=$2 out st p ok=1
	shift 2
	echo "[ RUN      ] overflow_$name"
	# shellcheck disable=SC2086
	out=$($runner "$img" WT_CASE="$name" 2>&1)
	st=$?
	printf '%s\n' "$out" | sed -n '/^weft:/,$p'
	if [ "$st" -ne "$want" ]; then
		echo "exit status $st, expected $want"
		ok=0
	fi
	for p in "$@"; do
		if [ "${p#!}" != "$p" ]; then
			if printf '%s' "$out" | grep -qF -- "${p#!}"; then echo "unexpected: ${p#!}"; ok=0; fi
		elif ! printf '%s' "$out" | grep -qF -- "$p"; then
			echo "missing: $p"
			ok=0
		fi
	done
	if [ $ok = 1 ]; then
		echo "[       OK ] overflow_$name"
		passed=$((passed + 1))
	else
		echo "[  FAILED  ] overflow_$name"
		failed+=("overflow_$name")
	fi
}

# CMocka's group header, so the runner knows how many cases to expect.
echo "[==========] Running $(grep -c '^check ' "$0") test(s)."
report='weft: fiber '
site='spawned at tests/test_overflow.c:'
check default 134 "$report" '"deep" overflowed its stack of 65536 bytes' "$site" 'by a plain thread'
check parent 134 "$report" '"deep-child" overflowed its stack of 16384 bytes' "$site" \
	'"parent-fiber" <- fiber ' '"grandparent" <- a plain thread'
check odd 134 "$report" '"deep" overflowed its stack of 208896 bytes' "$site"
for kb in 12 32 60; do
	check frame$kb 134 "$report" '"deep" overflowed its stack of 32768 bytes' "$site"
done
# Demand-paged stacks: every page of the stack used first, then the
# overflow; and a stack page with no memory left for it.
check deepuse 134 "$report" '"deep" overflowed its stack of 65536 bytes' "$site"
check nopage 134 'weft: out of memory: no page for the stack at 0x' "$report" \
	'"deep" got no memory for its stack of 65536 bytes' "$site"
check wild 135 'weft: unexpected trap: cause 15 (store page fault)' 'sepc 0x' '!overflowed'

echo "[==========] $((passed + ${#failed[@]})) test(s) run."
echo "[  PASSED  ] $passed test(s)."
if [ ${#failed[@]} -gt 0 ]; then
	echo "[  FAILED  ] ${#failed[@]} test(s), listed below:"
	for f in "${failed[@]}"; do echo "[  FAILED  ] $f"; done
	exit 1
fi
