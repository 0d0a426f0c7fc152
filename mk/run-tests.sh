#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run one configuration's CMocka suites and print one line per suite and a
# closing "<config>: N passed, N failed, N skipped" line. Exit 1 if anything
# failed, crashed, hung or did not run.
# Usage: mk/run-tests.sh CONFIG VARIANT "RUNNER" test-binary...
# With WEFT_SHIM=bare, a suite that has tests/<suite>.bare.sh is run by that
# script (given RUNNER and the image) instead: cases that must end the machine
# boot one image each.
#
# What ran is counted, not just what was reported: each CMocka group prints
# "[==========] Running N test(s)." before its first test, and every one of
# those N must end as passed, failed, skipped or an error; the ones that did
# not (an exit(0) or a crash mid-group) are failures. A group that never
# started (an exit(0) between groups) prints nothing at all, so the runner
# knows how many groups each suite runs: WEFT_SUITES (default
# tests/suites.conf) lists the suites with more than one, and the time each
# may take; a suite not listed runs one group within DEFAULT_TIMEOUT seconds.
# (A count the suite printed itself could be cut short by the same exit(0)
# or be computed by the same code that leaves a group out; the runner's own
# list cannot, and a suite that outgrows it fails until it is updated.)
set -u
config=$1 variant=$2 runner=$3
shift 3
passed=0 failed=0 skipped=0
suites=${WEFT_SUITES:-tests/suites.conf}
# A hang fails after this long; the slow suites (test_net, test_sched:
# up to 46 s under TSan on a loaded machine) have more in tests/suites.conf.
DEFAULT_TIMEOUT=120
# Sanitizers: fail on the first report, keep the overflow handler ours.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:allow_user_segv_handler=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

# setting SUITE COLUMN DEFAULT: the suite's groups (column 2) or timeout
# (column 3) from $suites, or DEFAULT ("-" in a column keeps the default).
setting() {
	local v=""
	[ -r "$suites" ] && v=$(awk -v s="$1" -v c="$2" \
		'$1 == s && $c != "" && $c != "-" { print $c; exit }' "$suites")
	echo "${v:-$3}"
}

# tally LOG: "groups expected passed failed skipped errors" from CMocka's
# lines. Inside a group (from "Running N test(s)." to "N test(s) run.") each
# test ends with one of "[       OK ] name", "[  FAILED  ] name",
# "[  SKIPPED ] name" or "[  ERROR   ] name" (a failed fixture; a failed
# group setup or teardown is one such line too, after its message
# "[  FAILED  ] GROUP SETUP"). The lists after a group's summary repeat names
# and are not counted.
tally() {
	tr -d '\r' <"$1" | awk '
		/^\[==========\] Running [0-9]+ test/ { g++; n += $3; in_group = 1; next }
		/^\[==========\] [0-9]+ test\(s\) run/ { in_group = 0; next }
		!in_group { next }
		/^\[       OK \] / { p++ }
		/^\[  FAILED  \] GROUP (SETUP|TEARDOWN)$/ { next }
		/^\[  FAILED  \] / { f++ }
		/^\[  SKIPPED \] / { s++ }
		/^\[  ERROR   \] [^-]/ { e++ }
		END { print g + 0, n + 0, p + 0, f + 0, s + 0, e + 0 }'
}

for t in "$@"; do
	name=$(basename "$t")
	log=$t.log
	groups_want=$(setting "$name" 2 1)
	limit=$(setting "$name" 3 $DEFAULT_TIMEOUT)
	start=$(date +%s)
	script=tests/$name.bare.sh
	# -k: a suite that ignores SIGTERM is killed 10 s later. On bare metal
	# the QEMU runner stops the machine at QEMU_TIMEOUT itself and so keeps
	# the console's last lines (killed from outside, it loses them); the
	# outer bound is then the backstop.
	bound=$limit
	if [ "${WEFT_SHIM:-}" = bare ]; then
		export QEMU_TIMEOUT=$limit
		bound=$((limit + 15))
	fi
	if [ "${WEFT_SHIM:-}" = bare ] && [ -x "$script" ]; then
		timeout -k 10 "$bound" "$script" "$runner" "$t" >"$log" 2>&1
	else
		# shellcheck disable=SC2086
		timeout -k 10 "$bound" $runner "$t" >"$log" 2>&1
	fi
	rc=$?
	secs=$(( $(date +%s) - start ))
	read -r groups expected p f s e <<<"$(tally "$log")"
	f=$((f + e))
	note=""
	missing=$((expected - p - f - s))
	if [ "$missing" -gt 0 ]; then
		note="$note ($missing of $expected tests did not report)"
		f=$((f + missing))
	fi
	if [ "$groups" -lt "$groups_want" ]; then
		# The groups that never started: their size is unknown, one
		# failure each.
		note="$note (ran $groups of $groups_want groups)"
		f=$((f + groups_want - groups))
	elif [ "$groups" -gt "$groups_want" ]; then
		note="$note (ran $groups groups, $suites says $groups_want)"
		f=$((f + 1))
	fi
	if [ "$rc" -ne 0 ] && [ "$secs" -ge "$limit" ]; then
		note="$note (hung: stopped after ${limit}s)"
		[ "$f" -gt 0 ] || f=1
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# Crashed or a sanitizer report after every test had passed.
		f=1
		note="$note (exit $rc)"
	fi
	printf '  %-28s %4d passed, %d failed, %d skipped  %4ds%s\n' \
		"$name" "$p" "$f" "$s" "$secs" "$note"
	if [ "$f" -ne 0 ]; then
		echo "---- $log (tail)"
		tail -40 "$log"
		echo "----"
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
done
echo "$config: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
