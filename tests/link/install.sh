#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make install for TARGET into a staging tree, then an outside program
# (tests/link/own_lwip.c: it uses weft.h only) built against the installed
# tree with pkg-config and with CMake's find_package(weft), and run; then
# make uninstall leaves no file behind. linux-x86_64 runs natively (the
# pkg-config build takes libweft.so); a cross target links statically with
# the toolchain's compiler and runs under its qemu-user.
# Last line: "install-TARGET: N passed, M failed".
# Usage: tests/link/install.sh [TARGET]
set -u
cd "$(dirname "$0")/../.." || exit 1
target=${1:-linux-x86_64}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { echo "  ok: $1"; passed=$((passed + 1)); }
bad() { echo "  FAIL: $1"; failed=$((failed + 1)); }
tally() { echo "install-$target: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit; }

root=$tmp/stage prefix=/opt/weft
if make --no-print-directory -j"$(nproc)" TARGET="$target" install DESTDIR="$root" PREFIX="$prefix" >"$tmp/install.log" 2>&1; then
	ok "make install TARGET=$target DESTDIR=... PREFIX=$prefix"
else
	bad "make install failed:"; tail -20 "$tmp/install.log"; tally
fi
for f in include/weft.h include/weft_net.h lib/libweft.a lib/pkgconfig/weft.pc lib/cmake/weft/weftConfig.cmake; do
	[ -f "$root$prefix/$f" ] || bad "not installed: $prefix/$f"
done

# The compiler and runner of the target, as the build uses them.
cc=gcc run="" static=""
if [ "$target" != linux-x86_64 ]; then
	deps=$(make --no-print-directory -s TARGET="$target" -p -n lib 2>/dev/null)
	cc=$(echo "$deps" | sed -n 's/^CC := //p' | tail -1)
	run=$(echo "$deps" | sed -n 's/^RUN := //p' | tail -1)
	static=-static
fi
[ -n "$cc" ] || { bad "no compiler found for $target"; tally; }

export PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root$prefix/lib/pkgconfig
if flags=$(pkg-config --cflags --libs ${static:+--static} weft) &&
	$cc -std=c11 -Wall -Wextra -Werror $static -o "$tmp/pc" tests/link/own_lwip.c $flags 2>"$tmp/pc.log"; then
	ok "pkg-config: an outside program builds ($flags)"
	if out=$(LD_LIBRARY_PATH=$root$prefix/lib $run "$tmp/pc") && [ "$out" = "own_lwip: ok" ]; then
		ok "and runs${run:+ under $run}"
	else
		bad "it runs wrong: '$out'"
	fi
else
	bad "pkg-config build failed:"; head -10 "$tmp/pc.log"
fi
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR

cmake_args=(-S tests/link/cmake -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$root$prefix" -DCMAKE_C_COMPILER="$cc")
if [ -n "$static" ]; then
	cmake_args+=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="${target#linux-}"
		-DCMAKE_EXE_LINKER_FLAGS=-static -DCMAKE_FIND_ROOT_PATH="$root$prefix")
fi
if cmake "${cmake_args[@]}" >"$tmp/cmake.log" 2>&1 && cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1; then
	ok "CMake: find_package(weft 0.1) and weft::weft build an outside program"
	if out=$($run "$tmp/cmake/outside") && [ "$out" = "own_lwip: ok" ]; then
		ok "and it runs${run:+ under $run}"
	else
		bad "it runs wrong: '$out'"
	fi
else
	bad "CMake build failed:"; tail -15 "$tmp/cmake.log"
fi
if cmake -S tests/link/cmake -B "$tmp/cmake-none" -DCMAKE_PREFIX_PATH="$tmp/nowhere" >/dev/null 2>&1; then
	bad "control: CMake found weft where none is installed"
else
	ok "control: without the installed tree find_package(weft) fails"
fi

if make --no-print-directory TARGET="$target" uninstall DESTDIR="$root" PREFIX="$prefix" >/dev/null 2>&1 &&
	[ -z "$(find "$root" -type f)" ]; then
	ok "make uninstall removes every file it installed"
else
	bad "files left after make uninstall: $(find "$root" -type f | head -5)"
fi
tally
