#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make install for TARGET into a staging tree, then an outside program
# (tests/link/own_lwip.c: it uses weft.h only) built against the installed
# tree with pkg-config and with CMake's find_package(weft), and run; then
# make uninstall leaves no file behind. linux-x86_64 runs natively: the
# pkg-config build takes libweft.so (its SONAME recorded), weft-static.pc's
# takes libweft.a (no libweft.so needed), and a program installed into a
# prefix of its own runs with the README's rpath recipe. A cross target
# follows docs/cross-compiling.md: installed into a prefix of its own, the
# program is built with the compiler weft.pc's variable cc names (the musl
# wrapper), by pkg-config (weft.pc, weft-static.pc) and by CMake with the
# installed toolchain file, and runs under its qemu-user; Debian's glibc
# cross compiler is refused, at the link and by find_package(weft).
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
for f in include/weft.h include/weft_net.h lib/libweft.a lib/pkgconfig/weft.pc \
	lib/pkgconfig/weft-static.pc lib/cmake/weft/weftConfig.cmake; do
	[ -f "$root$prefix/$f" ] || bad "not installed: $prefix/$f"
done
# weft's gdb extension, installed beside the library: it loads from there,
# outside the source tree (docs/debugging.md: for gdb's auto-load, or by hand).
gdbpy=$root$prefix/share/weft/weft-gdb.py
if [ -f "$gdbpy" ] && out=$(gdb -nx -batch -ex "source $gdbpy" -ex 'help info fibers' 2>&1) &&
	case $out in *"List weft's fibers"*) true ;; *) false ;; esac; then
	ok "share/weft/weft-gdb.py installed, and gdb sources it (info fibers)"
else
	bad "the installed gdb extension: $(ls "$gdbpy" 2>&1) ${out:-}"
fi
# The version the header says, and (linux-x86_64) the shared library under
# its versioned names: the file, its SONAME's link, the link -lweft finds.
ver=$(sed -n 's/^#define WEFT_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' include/weft.h | paste -sd.)
soname=""
if [ "$target" = linux-x86_64 ]; then
	soname=$(readelf -d "$root$prefix/lib/libweft.so.$ver" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
	if [ -n "$soname" ] && [ "$(readlink "$root$prefix/lib/$soname")" = "libweft.so.$ver" ] &&
		[ "$(readlink "$root$prefix/lib/libweft.so")" = "$soname" ]; then
		ok "libweft.so.$ver, SONAME $soname, links $soname and libweft.so"
	else
		bad "the shared library's names: soname '$soname'; $(ls -l "$root$prefix/lib" | grep libweft.so | tr '\n' ';')"
	fi
fi

# The compiler, C library and runner of the target, as the build uses them.
made=$(make --no-print-directory -s TARGET="$target" -p -n lib 2>/dev/null)
made_cc=$(echo "$made" | sed -n 's/^CC := //p' | tail -1)
made_libc=$(echo "$made" | sed -n 's/^LIBC :\{0,1\}= //p' | tail -1)
run="" cross=""
if [ "$target" != linux-x86_64 ]; then
	run=$(echo "$made" | sed -n 's/^RUN := //p' | tail -1)
	cross=${target#linux-}
fi

if [ -z "$cross" ]; then
	export PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root$prefix/lib/pkgconfig
else
	# docs/cross-compiling.md: the target's own prefix, and pkg-config
	# reading only its .pc files (a sysroot would go before cc's path too).
	xprefix=$tmp/weft-$target
	if make --no-print-directory TARGET="$target" install PREFIX="$xprefix" >"$tmp/xinstall.log" 2>&1; then
		ok "make install TARGET=$target PREFIX=$xprefix (a prefix of the target's own)"
	else
		bad "make install PREFIX=$xprefix failed:"; tail -10 "$tmp/xinstall.log"; tally
	fi
	export PKG_CONFIG_LIBDIR=$xprefix/lib/pkgconfig
fi
# pkg-config's variable cc: the compiler the library was built with.
cc=$(pkg-config --variable=cc weft)
libc=$(pkg-config --variable=libc weft-static)
if [ -n "$cc" ] && [ "$cc" = "$made_cc" ] && [ "$libc" = "$made_libc" ]; then
	ok "pkg-config --variable=cc weft: $cc, the build's compiler ($libc)"
else
	bad "pkg-config says cc '$cc' libc '$libc'; the build has '$made_cc' '$made_libc'"
	tally
fi
# needs FILE: the shared libraries FILE names (readelf's NEEDED).
needs() { readelf -d "$1" 2>/dev/null | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' '; }
# pc_build NAME PKG: build the outside program with pkg-config's PKG into
# $tmp/NAME; then it must run (with the staged lib/ on LD_LIBRARY_PATH).
pc_build()
{
	local name=$1 pkg=$2 flags out
	if flags=$(pkg-config --cflags --libs "$pkg") &&
		$cc -std=c11 -Wall -Wextra -Werror -o "$tmp/$name" tests/link/own_lwip.c $flags 2>"$tmp/$name.log"; then
		ok "pkg-config $pkg: an outside program builds ($flags)"
		if out=$(LD_LIBRARY_PATH=$root$prefix/lib $run "$tmp/$name") && [ "$out" = "own_lwip: ok" ]; then
			ok "and runs${run:+ under $run}"
		else
			bad "it runs wrong: '$out'"
		fi
	else
		bad "pkg-config $pkg build failed:"; head -10 "$tmp/$name.log"
	fi
}
pc_build pc weft
if [ -z "$cross" ]; then
	case " $(needs "$tmp/pc")" in
	*" $soname "*) ok "it needs $soname, the SONAME" ;;
	*) bad "it needs '$(needs "$tmp/pc")', not $soname" ;;
	esac
fi
pc_build pc-static weft-static
if [ -z "$cross" ]; then
	out=$("$tmp/pc-static")
	case "$(needs "$tmp/pc-static")" in
	*libweft*) bad "pkg-config weft-static: the program still needs $(needs "$tmp/pc-static")" ;;
	*) if [ "$out" = "own_lwip: ok" ]; then
		ok "pkg-config weft-static: libweft.a linked in (no libweft.so needed: runs without LD_LIBRARY_PATH)"
	   else
		bad "the weft-static program runs wrong without LD_LIBRARY_PATH: '$out'"
	   fi ;;
	esac
fi
# big_frame_check NAME BINARY: a fiber's 200 KiB frame, built with the
# flags the installed files give, is reported as an overflow by name.
# riscv64: gcc 12 emits no stack-clash probes there (the guard is 64 KiB
# instead, docs/api.md), so a 200 KiB frame is past what any flag can catch.
big_frame_check()
{
	local name=$1 bin=$2 out rc
	case $target in *riscv64*)
		ok "$name: big frame not checked on $target (gcc 12 has no stack-clash probes for riscv64)"
		return ;;
	esac
	out=$(LD_LIBRARY_PATH=$root$prefix/lib $run "$bin" 2>&1); rc=$?
	case $out in
	*'"big-frame" overflowed its stack'*)
		if [ "$rc" -ne 0 ]; then
			ok "$name: a fiber's 200 KiB frame is reported as an overflow (its flags carry stack-clash probes)"
		else
			bad "$name: the overflow was reported but the program exited 0"
		fi ;;
	*) bad "$name: a fiber's 200 KiB frame was not reported (status $rc): '$out'" ;;
	esac
}
pc_flags=$(pkg-config --cflags weft-static)
case " $pc_flags " in
*" -fstack-clash-protection "*) ok "weft.pc's Cflags carry -fstack-clash-protection ($pc_flags)" ;;
*) bad "weft.pc's Cflags lack -fstack-clash-protection: '$pc_flags'" ;;
esac
if $cc -std=c11 -O2 -o "$tmp/big_frame" tests/link/big_frame.c \
	$(pkg-config --cflags --libs weft-static) 2>"$tmp/big_frame.log"; then
	big_frame_check "pkg-config weft-static" "$tmp/big_frame"
else
	bad "big_frame does not build with pkg-config:"; head -5 "$tmp/big_frame.log"
fi
# A compiler of the other C library (Debian's glibc cross compiler beside
# the musl-built library): the link stops, on the reference to a function
# only the library's own C library has (kernel-shim/linux/libc.c).
# Natively, the other way round: Debian's musl-gcc (musl-tools, mk/deps.sh
# host) beside the glibc-built library.
other="" marker=""
if [ -n "$cross" ] && [ "$libc" = musl ]; then
	other=$cross-linux-gnu-gcc other_libc=glibc marker=__freadahead
elif [ -z "$cross" ] && [ "$libc" = glibc ]; then
	other=musl-gcc other_libc=musl marker=gnu_get_libc_version
fi
if [ -n "$other" ]; then
	if $other -std=c11 -o "$tmp/mismatch" tests/link/own_lwip.c \
		$(pkg-config --cflags --libs weft-static) >"$tmp/mismatch.log" 2>&1; then
		bad "$other linked the $libc-built libweft.a"
	elif grep -q "undefined reference to .$marker'" "$tmp/mismatch.log"; then
		ok "$other ($other_libc) with the $libc-built libweft.a: the link stops (undefined $marker)"
	else
		bad "$other failed otherwise:"; head -5 "$tmp/mismatch.log"
	fi
fi
toolchain=$(pkg-config --variable=toolchain weft)
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR

# A prefix of the user's own, installed for real (no DESTDIR): the README's
# recipe for one, pkg-config's libdir as the rpath, runs as it is.
if [ -z "$cross" ]; then
	own=$tmp/own-prefix
	if make --no-print-directory TARGET="$target" install PREFIX="$own" >"$tmp/own.log" 2>&1 &&
		grep -q "not on the loader's path" "$tmp/own.log" &&
		libdir=$(PKG_CONFIG_PATH=$own/lib/pkgconfig pkg-config --variable=libdir weft) &&
		$cc -std=c11 -o "$tmp/own" tests/link/own_lwip.c \
			$(PKG_CONFIG_PATH=$own/lib/pkgconfig pkg-config --cflags --libs weft) \
			-Wl,-rpath,"$libdir" 2>"$tmp/own-cc.log" &&
		out=$(env -u LD_LIBRARY_PATH "$tmp/own") && [ "$out" = "own_lwip: ok" ]; then
		ok "a prefix of its own: make install says so, and the rpath recipe runs"
	else
		bad "a prefix of its own: $(tail -3 "$tmp/own.log" "$tmp/own-cc.log" 2>/dev/null | tr '\n' ' ') out '${out:-}'"
	fi
	make --no-print-directory TARGET="$target" uninstall PREFIX="$own" >/dev/null 2>&1
fi

# CMake: natively find_package(weft) with CMAKE_PREFIX_PATH (README); a
# cross target with the installed toolchain file alone
# (docs/cross-compiling.md); both builds must run.
if [ -z "$cross" ]; then
	cmake_args=(-DCMAKE_PREFIX_PATH="$root$prefix")
	how="find_package(weft 0.2) and weft::weft"
else
	cmake_args=(-DCMAKE_TOOLCHAIN_FILE="$toolchain")
	how="-DCMAKE_TOOLCHAIN_FILE=$toolchain, find_package(weft 0.2) and weft::weft"
fi
if cmake -S tests/link/cmake -B "$tmp/cmake" "${cmake_args[@]}" >"$tmp/cmake.log" 2>&1 &&
	cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1; then
	ok "CMake: $how build an outside program"
	if grep -q "^WEFT_CC_LIBC_[0-9a-f]*:INTERNAL=$libc\$" "$tmp/cmake/CMakeCache.txt"; then
		ok "find_package(weft) found the compiler's C library: $libc"
	else
		bad "find_package(weft)'s probe: $(grep WEFT_CC_LIBC "$tmp/cmake/CMakeCache.txt")"
	fi
	if out=$($run "$tmp/cmake/outside") && [ "$out" = "own_lwip: ok" ]; then
		ok "and it runs${run:+ under $run}"
	else
		bad "it runs wrong: '$out'"
	fi
	big_frame_check "CMake weft::weft" "$tmp/cmake/big_frame"
else
	bad "CMake build failed:"; tail -15 "$tmp/cmake.log"
fi
if [ -z "$cross" ]; then
	# The toolchain file every Linux target installs names gcc here.
	if cmake -S tests/link/cmake -B "$tmp/cmake-tc" \
		-DCMAKE_TOOLCHAIN_FILE="$root$prefix/share/weft/$target.cmake" >"$tmp/cmake-tc.log" 2>&1 &&
		cmake --build "$tmp/cmake-tc" --target outside >>"$tmp/cmake-tc.log" 2>&1 &&
		out=$("$tmp/cmake-tc/outside") && [ "$out" = "own_lwip: ok" ]; then
		ok "CMake: share/weft/$target.cmake as the toolchain file builds it too, and it runs"
	else
		bad "CMake with share/weft/$target.cmake:"; tail -15 "$tmp/cmake-tc.log"
	fi
fi
if [ -n "$other" ]; then
	# The project's own setup with the other C library's compiler (for a
	# cross target, Debian's glibc one): refused by find_package(weft),
	# naming the toolchain file to use.
	mismatch_args=(-DCMAKE_C_COMPILER="$other" -DCMAKE_PREFIX_PATH="$root$prefix")
	[ -z "$cross" ] || mismatch_args=(-DCMAKE_C_COMPILER="$other" -DCMAKE_SYSTEM_NAME=Linux
		-DCMAKE_SYSTEM_PROCESSOR="$cross" -DCMAKE_PREFIX_PATH="$xprefix")
	if cmake -S tests/link/cmake -B "$tmp/cmake-mismatch" "${mismatch_args[@]}" \
		>"$tmp/cmake-mismatch.log" 2>&1; then
		bad "CMake with $other: find_package(weft) took the $libc-built library"
	elif grep -q "was built for $libc" "$tmp/cmake-mismatch.log" &&
		grep -q "CMAKE_TOOLCHAIN_FILE=$toolchain" <(tr -d '\n' <"$tmp/cmake-mismatch.log" | tr -s ' '); then
		ok "CMake with $other: find_package(weft) refuses it, naming the toolchain file"
	else
		bad "CMake with $other failed otherwise:"; tail -10 "$tmp/cmake-mismatch.log"
	fi
fi
if cmake -S tests/link/cmake -B "$tmp/cmake-none" -DCMAKE_PREFIX_PATH="$tmp/nowhere" >/dev/null 2>&1; then
	bad "control: CMake found weft where none is installed"
else
	ok "control: without the installed tree find_package(weft) fails"
fi

if make --no-print-directory TARGET="$target" uninstall DESTDIR="$root" PREFIX="$prefix" >/dev/null 2>&1 &&
	[ -z "$(find "$root" ! -type d)" ]; then
	ok "make uninstall removes every file it installed"
else
	bad "files left after make uninstall: $(find "$root" ! -type d | head -5)"
fi
if [ -n "$cross" ]; then
	make --no-print-directory TARGET="$target" uninstall PREFIX="$xprefix" >/dev/null 2>&1
	[ -z "$(find "$xprefix" ! -type d)" ] || bad "files left in $xprefix: $(find "$xprefix" ! -type d | head -5)"
fi
tally
