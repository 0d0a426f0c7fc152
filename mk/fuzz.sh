#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The libFuzzer harnesses (tests/fuzz/*.c), built with clang into build/fuzz
# or $FUZZ_BUILD (-fsanitize=fuzzer,address,undefined; the library with
# fuzzer-no-link).
#
#   mk/fuzz.sh run [HARNESS...]    make fuzz: each harness in turn for
#       FUZZ_SECONDS (600), nice'd, never two at once; what it learns goes to
#       build/fuzz/corpus/<harness> (the checked-in seeds are only read), a
#       finding to build/fuzz/findings/<harness>/. Exit 1 on a finding.
#   mk/fuzz.sh check               make test's step: replay every input of
#       tests/fuzz/corpus/<harness>, then fuzz each harness for
#       FUZZ_CHECK_SECONDS (5) from the seeds; "fuzz: N passed, M failed".
#
# A finding is fixed with its input added to tests/fuzz/corpus/<harness>/,
# where check replays it from then on.
set -u
cd "$(dirname "$0")/.." || exit 1
mode=${1:-}
[ $# -gt 0 ] && shift
HARNESSES=(http lwip config boot)
B=${FUZZ_BUILD:-build/fuzz}
CC=${FUZZ_CC:-clang}
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
FLAGS="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O1 -g $SAN"

build()
{
	if ! command -v "$CC" >/dev/null; then
		echo "fuzz: no $CC (mk/deps.sh host installs clang and libclang-rt-14-dev)" >&2
		return 1
	fi
	make --no-print-directory -j"$(nproc 2>/dev/null || echo 2)" CC="$CC" VARIANT=asan O="$B" \
		CFLAGS="-O1 -g -fsanitize=fuzzer-no-link" "$B"/libweft-internal.a >/dev/null || return 1
	mkdir -p "$B"/bin
	local inc="-Iinclude -Iarch -Iarch/x86_64 -Ikernel-shim -Iruntime -Iruntime/seam -Inet -Inet/port \
		-I$B/lwip-src/include -Itests/fuzz" h srcs
	for h in "${HARNESSES[@]}"; do
		case $h in
		http) srcs="tests/fuzz/http.c examples/http/request.c -Iexamples" ;;
		boot) srcs="tests/fuzz/boot.c kernel-shim/bare/fdt.c kernel-shim/bare/env.c -Ikernel-shim/bare -Ikernel-shim" ;;
		*) srcs="tests/fuzz/$h.c $B/libweft-internal.a -lpthread" ;;
		esac
		# shellcheck disable=SC2086
		$CC $FLAGS -fsanitize=fuzzer $inc -o "$B"/bin/$h $srcs || return 1
	done
}

# execs OUTPUT: the executions libFuzzer counted (its final stats).
execs()
{
	sed -n 's/^stat::number_of_executed_units: *//p' "$1" | tail -1
}

run()
{
	local secs=${FUZZ_SECONDS:-600} h status=0 list=("$@")
	[ ${#list[@]} -gt 0 ] || list=("${HARNESSES[@]}")
	build || exit 1
	for h in "${list[@]}"; do
		mkdir -p "$B"/corpus/"$h" "$B"/findings/"$h"
		local log="$B"/findings/$h.log
		echo "== fuzz $h for ${secs}s (log: $log)"
		nice -n 10 "$B"/bin/"$h" -max_total_time="$secs" -print_final_stats=1 \
			-artifact_prefix="$B"/findings/"$h"/ "$B"/corpus/"$h" tests/fuzz/corpus/"$h" \
			>"$log" 2>&1
		local rc=$?
		local n
		n=$(execs "$log")
		if [ $rc -eq 0 ]; then
			echo "fuzz $h: ${n:-?} executions in ${secs}s, no finding"
		else
			echo "fuzz $h: FINDING after ${n:-?} executions (exit $rc):"
			grep -E '^(==[0-9]+==ERROR|SUMMARY|.*check failed|artifact_prefix|Test unit written)' "$log" | head -5
			status=1
		fi
	done
	exit $status
}

check()
{
	local secs=${FUZZ_CHECK_SECONDS:-5} h pass=0 fail=0
	if ! build; then
		echo "fuzz: 0 passed, 1 failed (build)"
		exit 1
	fi
	local tmp
	tmp=$(mktemp -d)
	for h in "${HARNESSES[@]}"; do
		# Every input of the corpus, one run each: the regressions.
		local files=(tests/fuzz/corpus/"$h"/*)
		if "$B"/bin/"$h" "${files[@]}" >"$tmp/$h.replay" 2>&1; then
			echo "ok: $h replays its ${#files[@]} inputs"
			pass=$((pass + 1))
		else
			echo "FAIL: $h on its corpus:"
			tail -20 "$tmp/$h.replay"
			fail=$((fail + 1))
		fi
		# A few seconds of fuzzing from the seeds, into a scratch corpus.
		mkdir -p "$tmp/$h"
		if timeout $((secs + 60)) "$B"/bin/"$h" -max_total_time="$secs" -print_final_stats=1 \
			-artifact_prefix="$tmp/" "$tmp/$h" tests/fuzz/corpus/"$h" >"$tmp/$h.fuzz" 2>&1; then
			echo "ok: $h fuzzed for ${secs}s ($(execs "$tmp/$h.fuzz") executions)"
			pass=$((pass + 1))
		else
			echo "FAIL: $h fuzzing for ${secs}s found:"
			grep -E -A12 '^(==[0-9]+==ERROR|.*check failed)' "$tmp/$h.fuzz" | head -30
			ls "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-* "$tmp"/oom-* 2>/dev/null
			fail=$((fail + 1))
		fi
	done
	[ $fail -eq 0 ] && rm -rf "$tmp"
	echo "fuzz: $pass passed, $fail failed"
	[ $fail -eq 0 ]
}

case $mode in
run) run "$@" ;;
check) check ;;
build) build ;;
*)
	echo "usage: mk/fuzz.sh run [HARNESS...] | check | build" >&2
	exit 2
	;;
esac
