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
# count LABEL LOG: the sum of N over LOG's "[  LABEL] N test(s)..." lines
# (CMocka's group summaries; the per-test "[  FAILED  ] name" lines carry no
# count and are not matched).
count() {
	sed -n "s/^\\[  $1\\] \\([0-9][0-9]*\\) test.*/\\1/p" "$2" |
		awk '{ n += $1 } END { print n + 0 }'
}
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
	# A suite may run several CMocka groups (test_net: one per stack),
	# each with its own summary: add them all up. Tests that CMocka could
	# not run (a fixture failed: "[  ERROR   ] name", one line each) are
	# not in its FAILED count, so they are added; so is a group whose
	# setup or teardown failed.
	p=$(count 'PASSED  ' "$log")
	f=$(( $(count 'FAILED  ' "$log") + $(grep -c '^\[  ERROR   \] [^-]' "$log") ))
	s=$(count 'SKIPPED ' "$log")
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
