#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The library's edge (linux-x86_64): libweft.so and libweft.a define exactly
# the functions include/*.h marks WEFT_API, and a program with its own
# sys_now, mem_init, shim_now and arch_switch links against either and runs.
# The same program against the internal archive must fail to link: the
# check can fail. Then the build's own edges: an O= directory keeps one
# configuration, and make test refuses a TARGET=.
# Last line: "edge: N passed, M failed".
# Usage: tests/link/edge.sh BUILD_DIR (e.g. build/linux-x86_64)
set -u
cd "$(dirname "$0")/../.." || exit 1
b=${1:-build/linux-x86_64}
cc=${CC:-gcc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { echo "  ok: $1"; passed=$((passed + 1)); }
bad() { echo "  FAIL: $1"; failed=$((failed + 1)); }

# The public functions, from the headers.
sed -n 's/^WEFT_API [^(]*[ *]\(weft_[a-z0-9_]*\)(.*/\1/p' include/*.h | sort -u >"$tmp/api"
n=$(wc -l <"$tmp/api")
if [ "$n" -gt 50 ]; then ok "the headers declare $n public functions"; else bad "only $n WEFT_API functions found in include/"; fi

# Every object of the library is built with hidden visibility, lwIP's too:
# no global it defines is default-visible unless it is public.
vis=$(for o in "$b"/pic/*/*.o "$b"/pic/*/*/*.o "$b"/lwip-pic/*/*.o "$b"/lwip-pic/*/*/*.o; do
	[ -f "$o" ] && readelf -sW "$o" | awk '$5 == "GLOBAL" && $6 == "DEFAULT" && $7 != "UND" {print $8}'
done | sort -u | comm -23 - "$tmp/api")
nlwip=$(find "$b"/lwip-pic -name '*.o' 2>/dev/null | wc -l)
if [ "$nlwip" -gt 0 ] && [ -z "$vis" ]; then
	ok "every object's globals are hidden but the public functions (lwIP's $nlwip objects included)"
else
	bad "default-visible globals that are not public ($nlwip lwIP objects): $(echo "$vis" | head -8 | tr '\n' ' ')"
fi

check_syms() { # what file list
	if diff -u "$tmp/api" "$3" >"$tmp/diff"; then
		ok "$1 defines exactly the $n public functions ($2)"
	else
		bad "$1 defines other globals than the public functions ($2):"
		head -20 "$tmp/diff"
	fi
}
nm -g --defined-only "$b/libweft.a" | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/a"
check_syms libweft.a "nm -g" "$tmp/a"
nm -D --defined-only "$b/libweft.so" | awk '{ print $3 }' | sort -u >"$tmp/so"
check_syms libweft.so "nm -D" "$tmp/so"

# A program with names of its own that weft also uses.
flags="-std=c11 -Wall -Wextra -Werror -Iinclude"
if $cc $flags -o "$tmp/own_a" tests/link/own_lwip.c "$b/libweft.a" -lpthread 2>"$tmp/ld_a"; then
	ok "a program defining sys_now, mem_init, shim_now, arch_switch links against libweft.a"
	if out=$("$tmp/own_a") && [ "$out" = "own_lwip: ok" ]; then ok "and runs"; else bad "it runs wrong: '$out' (exit $?)"; fi
else
	bad "it does not link against libweft.a:"; head -10 "$tmp/ld_a"
fi
if $cc $flags -o "$tmp/own_so" tests/link/own_lwip.c -L"$b" -lweft -lpthread 2>"$tmp/ld_so"; then
	if out=$(LD_LIBRARY_PATH=$b "$tmp/own_so") && [ "$out" = "own_lwip: ok" ]; then
		ok "the same program against libweft.so runs"
	else
		bad "against libweft.so it runs wrong: '$out'"
	fi
else
	bad "it does not link against libweft.so:"; head -10 "$tmp/ld_so"
fi
# The control: the internals made global clash with the program's names.
if $cc $flags -o "$tmp/own_i" tests/link/own_lwip.c "$b/libweft-internal.a" -lpthread 2>/dev/null; then
	bad "the control linked: the program's names do not clash with the internal archive's, so the checks above prove nothing"
else
	ok "control: the same program against the internal archive fails to link (its arch_switch clashes)"
fi
# Build directories know their configuration (make -n: only the check at
# parse time runs).
d=$tmp/o
if make --no-print-directory -n O="$d" lib >/dev/null 2>&1 && grep -q 'TARGET=linux-x86_64 ' "$d/config"; then
	ok "a new O= directory records its configuration"
else
	bad "no configuration recorded in $d/config"
fi
if out=$(make --no-print-directory -n TARGET=linux-aarch64 O="$d" lib 2>&1); then
	bad "a linux-aarch64 build into a linux-x86_64 directory was accepted"
elif echo "$out" | grep -q "holds a build of TARGET=linux-x86_64"; then
	ok "another target into the same O= stops with a clear message"
else
	bad "another target into the same O= failed without the message: $out"
fi
if make --no-print-directory -n VARIANT=asan O="$d" lib >/dev/null 2>&1; then
	bad "an asan build into a plain build's directory was accepted"
else
	ok "another variant into the same O= stops"
fi
if out=$(make --no-print-directory test TARGET=qemu-virt 2>&1); then
	bad "make test TARGET=qemu-virt ran"
elif echo "$out" | grep -q "make TARGET=qemu-virt check"; then
	ok "make test TARGET=X points at make TARGET=X check"
else
	bad "make test TARGET=qemu-virt failed without pointing at check: $out"
fi
echo "edge: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
