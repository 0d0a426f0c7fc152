#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The runner's own test: mk/run-tests.sh on tiny CMocka programs that end
# badly (exit(0) mid-group, exit(0) between groups, an abort, a hang, a
# failed group setup, more groups than tests/runner/suites.conf declares)
# must report each as a failure, with the count of what did not run, and a
# clean one as passed. Last line: "runner: N passed, M failed".
# Usage: tests/runner/check.sh [BUILD_DIR] (default build/runner)
set -u
cd "$(dirname "$0")/../.." || exit 1
b=${1:-build/runner}
cc=${CC:-gcc}
mkdir -p "$b"
passed=0 failed=0
ok() { echo "  ok: $1"; passed=$((passed + 1)); }
bad() { echo "  FAIL: $1"; failed=$((failed + 1)); }

# expect FIXTURE STATUS PATTERN...: run the fixture through the runner; its
# exit status must be STATUS and its suite line must contain each PATTERN.
expect() {
	local name=$1 want=$2 out rc line p
	shift 2
	out=$(WEFT_SUITES=tests/runner/suites.conf mk/run-tests.sh "runner-$name" "" "" "$b/$name" 2>&1)
	rc=$?
	line=$(printf '%s\n' "$out" | grep -E "^  $name " | head -1)
	for p in "$@"; do
		if [[ "$line" != *"$p"* ]]; then
			bad "$name: '$p' not in its line: '$line'"
			return
		fi
	done
	if [ "$rc" -ne "$want" ]; then
		bad "$name: the runner exited $rc, expected $want ($line)"
	elif ! printf '%s\n' "$out" | tail -1 | grep -qE "^runner-$name: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$"; then
		bad "$name: no tally line"
	else
		ok "$name:${line#*"$name"}"
	fi
}

flags=(-std=c11 -Wall -Wextra -Werror -O1)
for f in clean exit_mid exit_between crash hang setup_fails; do
	if ! $cc "${flags[@]}" -o "$b/$f" "tests/runner/$f.c" -lcmocka 2>"$b/$f.err"; then
		bad "$f does not build: $(head -3 "$b/$f.err")"
	fi
done
cp "$b/clean" "$b/undeclared" 2>/dev/null

expect clean 0 "3 passed, 0 failed, 1 skipped"
expect undeclared 1 "3 passed, 1 failed" "ran 2 groups"
expect exit_mid 1 "1 passed, 3 failed" "(3 of 4 tests did not report)"
expect exit_between 1 "2 passed, 1 failed" "(ran 1 of 2 groups)"
expect crash 1 "1 passed, 2 failed" "(2 of 3 tests did not report)"
expect hang 1 "1 passed, 1 failed" "(1 of 2 tests did not report)" "(hung: stopped after 2s)"
expect setup_fails 1 "0 passed, 3 failed" "(2 of 3 tests did not report)"
echo "runner: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
