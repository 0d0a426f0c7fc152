#!/bin/bash
# SPDX-License-Identifier: MIT
# The layers as build facts (docs/architecture.md, "Layers").
#
# 1. runtime/'s files and who calls whom: the files that call each other in
#    a circle, found from the objects' symbols (nm), must be exactly the
#    scheduler's core below, and the processes' two files. A new circle (the
#    fiber core calling local storage, generators, mailboxes or supervisors
#    directly again, say) fails here; docs/architecture.md's "How runtime/'s
#    files depend on each other" says why these are allowed.
# 2. Which symbols each layer's objects take from the layers above it: none
#    for arch/, kernel-shim/, drivers/ and board/ (no weft_ or weft__ symbol
#    of the runtime; a board nothing of the shim or its drivers; a driver of
#    the shim only what drivers/driver.h declares); net/ only
#    weft.h's public calls and, of the runtime's private symbols, what its
#    seam for net/, runtime/seam/service.h, declares.
# 3. Each layer compiles with only the include paths it may use: a file put
#    in net/, kernel-shim/ or arch/ that includes the runtime's internal.h,
#    or in board/ that includes the shim's bare.h or a driver's header, does
#    not build (a probe file made in the tree for that, and removed).
#
# Usage: tests/link/layers.sh BUILD_DIR   (a linux-x86_64 build: objects in
#        BUILD_DIR/obj; the bare layers are checked in build/qemu-virt,
#        which make builds as needed)
set -u
build=${1:?usage: tests/link/layers.sh BUILD_DIR}
dir=$build/obj/runtime
want_core="cancel idle live park pin reactor sched starve steal time timer waiter"
want_other="mailbox step"
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "  ok: $1"; }
bad() { failed=$((failed + 1)); echo "  FAIL: $1"; }

# Only the objects of runtime/'s files as they are now: one whose source
# was removed or renamed stays in a build directory that was not cleaned.
objs=$(for o in "$dir"/*.c.o; do [ -f "runtime/$(basename "$o" .o)" ] && echo "$o"; done)
if [ -z "$objs" ]; then
	echo "layers: no objects in $dir (build first)" >&2
	exit 2
fi
# "file D sym" for each global symbol a file defines, "file U sym" for each
# it uses; then file -> file edges, and the circles from their closure.
circles=$(for o in $objs; do
	f=$(basename "$o" .c.o)
	nm "$o" | awk -v f="$f" '$1 == "U" { print f, "U", $2 } NF == 3 && $2 ~ /[TDBRC]/ { print f, "D", $3 }'
done | awk '
	$2 == "D" { owner[$3] = $1; files[$1] = 1 }
	$2 == "U" { use[++n] = $1 " " $3; files[$1] = 1 }
	END {
		for (i = 1; i <= n; i++) {
			split(use[i], p, " ")
			if ((p[2] in owner) && owner[p[2]] != p[1]) r[p[1], owner[p[2]]] = 1
		}
		for (k in files) for (i in files) if (r[i, k]) for (j in files) if (r[k, j]) r[i, j] = 1
		for (i in files) {
			line = ""
			for (j in files) if (i != j && r[i, j] && r[j, i]) line = line " " j
			if (line != "") print i line
		}
	}' | while read -r first rest; do
	echo "$first $rest" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//'
	echo
done | sort -u)

core=$(echo "$circles" | grep -w sched || true)
if [ "$core" = "$want_core" ]; then
	ok "the scheduler's circle is its core: $want_core"
else
	bad "the scheduler's circle is '$core', not '$want_core'"
fi
others=$(echo "$circles" | grep -vw sched | grep . || true)
if [ "$others" = "$want_other" ]; then
	ok "the only other circle is the processes': $want_other"
else
	bad "other circles: '$(echo "$others" | tr '\n' ';')', want '$want_other'"
fi
if echo "$circles" | grep -qw fiber; then
	bad "fiber.c is in a circle"
else
	ok "fiber.c calls the fiber context through a table of hooks, in no circle"
fi

# 2. The symbols a layer's objects leave undefined, by prefix.
# uses DIR: the undefined symbols of every object under DIR, one a line.
uses() { find "$1" -name '*.o' -exec nm -u {} + 2>/dev/null | awk 'NF == 2 { print $2 }' | sort -u; }
# defined DIR: the global symbols the objects under DIR define.
defined() {
	find "$1" -name '*.o' -exec nm --defined-only -g {} + 2>/dev/null |
		awk 'NF == 3 { print $3 }' | sort -u
}
# no_up NAME DIR PATTERN: DIR's objects use no symbol matching PATTERN.
no_up()
{
	local got
	if [ ! -d "$2" ]; then
		bad "$1: no objects in $2"
		return
	fi
	got=$(uses "$2" | grep -E "$3" | tr '\n' ' ')
	if [ -z "$got" ]; then
		ok "$1 uses nothing of the layers above it"
	else
		bad "$1 uses what it may not: $got"
	fi
}
bare=build/qemu-virt
make --no-print-directory -s TARGET=qemu-virt lib >/dev/null 2>&1 || bad "make TARGET=qemu-virt lib failed"
no_up "arch/ (x86_64)" "$build/obj/arch" '^weft_|^board_'
no_up "kernel-shim/linux/" "$build/obj/kernel-shim" '^weft_'
no_up "arch/ (riscv64, bare)" "$bare/obj/arch" '^weft_|^board_'
no_up "kernel-shim/bare/" "$bare/obj/kernel-shim" '^weft_'
no_up "drivers/" "$bare/obj/drivers" '^weft_|^board_'
no_up "board/" "$bare/obj/board" '^weft_|^shim_|^(ns16550|plic|virtio_net|dwmac|cv1800b_ephy)_'
# drivers/: of the shim, only what its contract with them declares.
contract=drivers/driver.h
missing=$(uses "$bare/obj/drivers" | grep '^shim_' |
	while read -r sym; do grep -qw -- "$sym" "$contract" || printf '%s ' "$sym"; done)
if [ -z "$missing" ]; then
	ok "drivers/ use only what $contract declares of the shim"
else
	bad "drivers/ use shim symbols $contract does not declare: $missing"
fi
# net/: the runtime's private symbols it uses must each be named in the
# seam (its public weft_* calls are weft.h's, which every layer above may use).
seam=runtime/seam/service.h
missing=$(comm -12 <(uses "$build/obj/net" | grep '^weft__') <(defined "$build/obj/runtime") |
	while read -r sym; do grep -qw -- "$sym" "$seam" || printf '%s ' "$sym"; done)
if [ -z "$missing" ]; then
	ok "net/ uses only what $seam declares of the runtime"
else
	bad "net/ uses runtime symbols its seam does not declare: $missing"
fi

# 3. Probes: a file of the layer's own that includes what it may not.
# probe TARGET DIR HEADER: DIR/zz_layers_probe.c, including HEADER, must not
# compile with DIR's flags.
probe()
{
	local t=$1 d=$2 h=$3 f=$2/zz_layers_probe.c o=build/$1/obj/$2/zz_layers_probe.c.o
	printf '#include "%s"\n' "$h" >"$f"
	if make --no-print-directory -s TARGET="$t" "$o" >/dev/null 2>&1; then
		bad "$d/ can include $h ($t)"
	else
		ok "$d/ cannot include $h ($t)"
	fi
	rm -f "$f" "$o" "${o%.o}.d"
}
trap 'rm -f net/zz_layers_probe.c kernel-shim/linux/zz_layers_probe.c arch/x86_64/zz_layers_probe.c \
	board/qemu-virt/zz_layers_probe.c drivers/zz_layers_probe.c' EXIT
probe linux-x86_64 net internal.h
probe linux-x86_64 kernel-shim/linux internal.h
probe linux-x86_64 arch/x86_64 internal.h
probe linux-x86_64 arch/x86_64 shim.h
probe qemu-virt board/qemu-virt bare.h
probe qemu-virt board/qemu-virt ns16550.h
probe qemu-virt drivers bare.h
probe qemu-virt drivers internal.h
# The probe's own control: a header the layer may include builds.
printf '#include "service.h"\n' >net/zz_layers_probe.c
if make --no-print-directory -s TARGET=linux-x86_64 build/linux-x86_64/obj/net/zz_layers_probe.c.o >/dev/null 2>&1; then
	ok "net/ can include its seam, service.h (the probe itself works)"
else
	bad "net/ cannot include service.h: the probe proves nothing"
fi
rm -f net/zz_layers_probe.c build/linux-x86_64/obj/net/zz_layers_probe.c.o build/linux-x86_64/obj/net/zz_layers_probe.c.d

echo "layers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
