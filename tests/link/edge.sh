#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The library's edge (linux-x86_64): libweft.so and libweft.a define exactly
# the functions include/*.h marks WEFT_API, and a program with its own
# sys_now, mem_init, shim_now and arch_switch links against either and runs.
# The same program against the internal archive must fail to link: the
# check can fail. The same on bare metal (BARE_DIR): libweft.a defines the
# public functions and the names picolibc and gcc call, no other, and the
# program links and boots on qemu-virt. Then the build's own edges: an O= directory keeps one
# configuration, and make test refuses a TARGET=.
# Last line: "edge: N passed, M failed".
# Usage: tests/link/edge.sh BUILD_DIR [BARE_DIR] (e.g. build/linux-x86_64
# build/qemu-virt; the bare part is skipped without BARE_DIR)
set -u
cd "$(dirname "$0")/../.." || exit 1
b=${1:-build/linux-x86_64}
bare=${2:-}
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
# Bare metal: one rule (default visibility) decides the edge there too.
if [ -n "$bare" ]; then
	t=$(basename "$bare")
	if make --no-print-directory -j2 TARGET="$t" lib "$bare/link/own_lwip" >"$tmp/bare_make" 2>&1; then
		# The C library's and the compiler's names the shim defines for
		# picolibc and gcc (its allocator's too: kernel-shim/bare/malloc.c),
		# and the image's entry.
		abi='^(_start|_exit|read|write|open|close|lseek|kill|getpid|sbrk|stdin|stdout|stderr|__lock___libc_recursive_mutex|__retarget_lock_[a-z_]+|__atomic_[a-z_]+_[12]|malloc|free|cfree|calloc|realloc|memalign|aligned_alloc|posix_memalign|valloc|pvalloc|malloc_usable_size|mallinfo|malloc_stats|mallopt|malloc_trim)$'
		nm -g --defined-only "$bare/libweft.a" | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/bare_a"
		grep -Ev "$abi" "$tmp/bare_a" >"$tmp/bare_api"
		nabi=$(grep -Ec "$abi" "$tmp/bare_a")
		if diff -u "$tmp/api" "$tmp/bare_api" >"$tmp/diff"; then
			ok "$t's libweft.a defines the $n public functions and $nabi C library and compiler names, no other (nm -g)"
		else
			bad "$t's libweft.a defines other globals (nm -g):"
			head -20 "$tmp/diff"
		fi
		out=$(QEMU_TIMEOUT=120 qemu/run-qemu-virt.sh "$bare/link/own_lwip" 2>&1)
		if echo "$out" | grep -q '^own_lwip: ok$'; then
			ok "the program with its own sys_now, mem_init, shim_now, arch_switch links against $t's libweft.a and boots"
		else
			bad "on $t it runs wrong: $(echo "$out" | tail -3)"
		fi
		if make --no-print-directory TARGET="$t" "$bare/link/own_lwip.internal" >/dev/null 2>&1; then
			bad "the $t control linked: the checks above prove nothing"
		else
			ok "control: against $t's internal archive it fails to link"
		fi
	else
		bad "make TARGET=$t lib failed:"; tail -10 "$tmp/bare_make"
	fi
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
