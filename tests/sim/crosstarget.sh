#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The simulation's replay across targets (docs/decisions/simulation.md,
# slice 7): a seed's run gives the same lines (the scenario's output and
# the simulator's last line, `weft sim: ... steps=N digest=0x...`) and ends
# the same way on every target. Compares the fixed.lines files that
# `mk/sim.sh --fixed` wrote in the same make test (BUILD_DIR/sim/fixed.lines,
# one "NAME SEED | LINE" a line): one check for each scenario and seed of
# the first file that another file has too, against every file that has
# it (make test: seeds 1-8 on the Linux targets, 1-4 on qemu-virt). Each
# file must hold the same scenarios, and each scenario a seed that every
# file has. Nothing is recorded between commits: digests
# change with the code, and the contract is "the same source commit gives
# the same digest on every target".
# Prints "sim cross-target: N passed, N failed".
# Usage: tests/sim/crosstarget.sh BUILD_DIR|FILE BUILD_DIR|FILE...
#   e.g. tests/sim/crosstarget.sh build/linux-x86_64 build/linux-aarch64 build/qemu-virt
set -u
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR|FILE BUILD_DIR|FILE..." >&2; exit 2; }
files=()
for a in "$@"; do
	f=$a
	[ -d "$a" ] && f=$a/sim/fixed.lines
	[ -s "$f" ] || { echo "$0: no $f (mk/sim.sh --fixed ${a%/sim/fixed.lines} writes it)" >&2; exit 2; }
	files+=("$f")
done
# keys FILE: its "NAME SEED" keys, in order, once each.
keys() { sed -n 's/^\([^ ]* [^ ]*\) | .*/\1/p' "$1" | awk '!seen[$0]++'; }
# names FILE: its scenarios, sorted.
names() { keys "$1" | cut -d' ' -f1 | sort -u; }
pass=0
fail=0
first=${files[0]}
for f in "${files[@]:1}"; do
	if [ "$(names "$f")" != "$(names "$first")" ]; then
		echo "  FAIL  $f has other scenarios than $first:"
		diff <(names "$first") <(names "$f") | sed -n 's/^[<>]/        &/p'
		fail=$((fail + 1))
	fi
done
# The keys every file has, in the first file's order.
common=$(keys "$first")
for f in "${files[@]:1}"; do
	common=$(grep -Fxf <(keys "$f") <<<"$common")
done
for n in $(names "$first"); do
	grep -q "^$n " <<<"$common" && continue
	echo "  FAIL  $n: no seed that every file has"
	fail=$((fail + 1))
done
while read -r key; do
	want=$(grep -F "$key | " "$first")
	bad=()
	n=1
	for f in "${files[@]:1}"; do
		grep -qF "$key | " "$f" || continue
		n=$((n + 1))
		[ "$(grep -F "$key | " "$f")" = "$want" ] || bad+=("$f")
	done
	[ $n -gt 1 ] || continue
	if [ ${#bad[@]} = 0 ]; then
		pass=$((pass + 1))
		echo "  ok    $key, $n targets: $(grep -F "$key | weft sim: " "$first" | sed 's/.*weft sim: [^ ]* //' | tail -1)"
		continue
	fi
	fail=$((fail + 1))
	echo "  FAIL  $key differs:"
	for f in "${bad[@]}"; do
		diff <(grep -F "$key | " "$first") <(grep -F "$key | " "$f") |
			sed -n "s|^<|        $first:|p; s|^>|        $f:|p" | head -8
	done
done < <(keys "$first")
echo "sim cross-target: $pass passed, $fail failed"
[ "$fail" = 0 ]
