#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The simulation's cost in libweft.a is zero (docs/decisions/simulation.md):
# every object of libweft.a built from this tree has the same `objdump -d`
# as the one built from BASE (a commit before the points went in), but for
# runtime.c's, which gains the seed's refusal, and those named in ALLOW
# (space-separated paths such as runtime/sched.c, for a commit that changes
# their code for another reason). Builds BASE's objects from `git archive`
# in a temporary directory, then compares with O's (make lib first).
# Usage: tests/sim/zero-cost.sh BASE [TARGET] [O]
set -eu
cd "$(dirname "$0")/../.."
base=${1:?usage: $0 BASE [TARGET] [O]}
target=${2:-linux-x86_64}
o=${3:-build/$target}
allow="runtime/runtime.c ${ALLOW:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$base" | tar -x -C "$tmp/"
make -s -C "$tmp" TARGET="$target" O="$tmp/build" -j"$(nproc)" lib >/dev/null
objdump=${OBJDUMP:-objdump}
same=0
differ=0
allowed=0
for f in $(cd "$o/obj" && find . -name '*.o' | sed 's|^\./||' | sort); do
	src=${f%.o}
	if [ ! -f "$tmp/build/obj/$f" ]; then
		echo "new: $src"
		differ=$((differ + 1))
		continue
	fi
	if cmp -s <("$objdump" -d "$o/obj/$f" | tail -n +3) \
		<("$objdump" -d "$tmp/build/obj/$f" | tail -n +3); then
		same=$((same + 1))
	elif [[ " $allow " == *" $src "* ]]; then
		echo "differs, allowed: $src"
		allowed=$((allowed + 1))
	else
		echo "differs: $src"
		differ=$((differ + 1))
	fi
done
echo "zero cost against $base: $same objects the same, $allowed allowed to differ, $differ differ"
[ "$differ" = 0 ]
