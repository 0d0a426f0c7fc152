#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run one configuration's CMocka suites and print one line per suite and a
# closing "<config>: N passed, N failed, N skipped" line. Exit 1 if anything
# failed or crashed.
# Usage: mk/run-tests.sh CONFIG VARIANT "RUNNER" test-binary...
# With WEFT_SHIM=bare, a suite that has tests/<suite>.bare.sh is run by that
# script (given RUNNER and the image) instead: cases that must end the machine
# boot one image each.
set -u
config=$1 variant=$2 runner=$3
shift 3
passed=0 failed=0 skipped=0
# Sanitizers: fail on the first report, keep the overflow handler ours.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:allow_user_segv_handler=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
for t in "$@"; do
	log=$t.log
	start=$(date +%s)
	# shellcheck disable=SC2086
	script=tests/$(basename "$t").bare.sh
	if [ "${WEFT_SHIM:-}" = bare ] && [ -x "$script" ]; then
		timeout 900 "$script" "$runner" "$t" >"$log" 2>&1
	else
		timeout 900 $runner "$t" >"$log" 2>&1
	fi
	rc=$?
	secs=$(( $(date +%s) - start ))
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	p=${p:-0} f=${f:-0} s=${s:-0}
	note=""
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# Crashed, hung or a sanitizer report: count the suite as failed.
		f=1
		note=" (exit $rc)"
	fi
	printf '  %-28s %4d passed, %d failed, %d skipped  %4ds%s\n' \
		"$(basename "$t")" "$p" "$f" "$s" "$secs" "$note"
	if [ "$f" -ne 0 ]; then
		echo "---- $log (tail)"
		tail -40 "$log"
		echo "----"
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
done
echo "$config: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
