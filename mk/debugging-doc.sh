#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The outputs docs/debugging.md quotes that come from running weft's own
# programs on linux-x86_64, made fresh: each block between
#   <!-- debugging-doc: NAME -->  and  <!-- /debugging-doc -->
# is the command the page shows ("$ ..."), run as written from the top of
# the tree, and what it printed, trimmed as the page trims it ("..." for
# lines left out). The line numbers in them (tests/gdb/parked.c:59,
# runtime/chan.c:150...) come from the code, so they are written by this
# script, never by hand.
#   NAME     the command
#   live     gdb on tests/gdb/parked, stopped in gdb_stop_here: info fibers,
#            fiber 3
#   core     parked abort's core file (skipped where core_pattern is a pipe:
#            the block is then left as it is, and said)
#   overflow test_overflow's report of a fiber that ran off its stack
# Usage: mk/debugging-doc.sh [--check] [PAGE]   (default docs/debugging.md)
#   without --check: rewrites PAGE's blocks in place;
#   --check: fails if a block differs from a fresh run other than in what
#   changes from run to run (addresses, process and thread ids). make test
#   runs it (mk/test-all.sh). Needs build/linux-x86_64/tests/gdb/parked and
#   build/linux-x86_64/tests/test_overflow (make TARGET=linux-x86_64 ...).
# Last line: "debugging-doc: N passed, M failed".
set -u
cd "$(dirname "$0")/.." || exit 1
check=0
if [ "${1:-}" = --check ]; then
	check=1
	shift
fi
page=${1:-docs/debugging.md}
tmp=$(mktemp -d /tmp/weft-debugging-doc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { echo "  ok: $1"; passed=$((passed + 1)); }
bad() { echo "  FAIL: $1"; failed=$((failed + 1)); }

parked=build/linux-x86_64/tests/gdb/parked
overflow=build/linux-x86_64/tests/test_overflow
for b in "$parked" "$overflow"; do
	if [ ! -x "$b" ]; then
		bad "$b not built (make TARGET=linux-x86_64 $b)"
		echo "debugging-doc: $passed passed, $failed failed"
		exit 1
	fi
done

# gdb's lines from the stop (a breakpoint's, or the core's signal) to the
# last frame of the last backtrace: what the page quotes after its "...".
from_stop() { awk '/hit Breakpoint|^Program terminated/ { on = 1 } on { print } ' | awk '
	{ line[++n] = $0 } /^#[0-9]+ / { last = n }
	END { for (i = 1; i <= last; i++) print line[i] }'; }

# A block: its command line, "...", then the output, indented 4 for
# Markdown.
block() { # NAME CMDS-AS-SHOWN (one a line) FILE-WITH-OUTPUT
	{
		printf '%s\n' "$2" | sed 's/^/    $ /'
		echo "    ..."
		sed 's/^/    /' "$3"
	} >"$tmp/block.$1"
}

# live: the exact command the page shows.
live_cmd="gdb -q -batch -iex \"add-auto-load-safe-path \$PWD/build\" -ex 'break gdb_stop_here' -ex run -ex 'info fibers' -ex 'fiber 3' -ex kill $parked"
timeout 120 gdb -q -batch -iex "add-auto-load-safe-path $PWD/build" -ex 'break gdb_stop_here' \
	-ex run -ex 'info fibers' -ex 'fiber 3' -ex kill "$parked" </dev/null 2>&1 | from_stop >"$tmp/live"
if grep -q '^Fiber 3 "child"' "$tmp/live" && grep -q ' in waiter (' "$tmp/live"; then
	block live "$live_cmd" "$tmp/live"
else
	bad "live: gdb did not stop in gdb_stop_here and show fiber 3 (its output kept below)"
	sed 's/^/        /' "$tmp/live" | tail -20
fi

# core: the kernel's core file of `parked abort`, written in a directory
# of our own.
core_cmd="ulimit -c unlimited
$parked abort
gdb -q -batch -iex \"add-auto-load-safe-path \$PWD/build\" -ex \"info fibers\" -ex \"fiber 3 bt 7\" $parked core"
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
if [ "${pattern#|}" != "$pattern" ]; then
	echo "  skip: core: core_pattern is a pipe ($pattern): no core file here; the block is left as it is"
else
	mkdir "$tmp/c"
	{ (cd "$tmp/c" && ulimit -c unlimited && exec timeout 60 "$OLDPWD/$parked" abort) >/dev/null 2>&1; } 2>/dev/null
	core=
	for c in "$tmp"/c/core*; do [ -e "$c" ] && core=$c && break; done
	if [ -z "$core" ]; then
		bad "core: parked abort left no core file (core_pattern '$pattern')"
	else
		timeout 120 gdb -q -batch -iex "add-auto-load-safe-path $PWD/build" -ex "info fibers" \
			-ex "fiber 3 bt 7" "$parked" "$core" </dev/null 2>&1 |
			awk '/^Program terminated/ { print } /^Id  Name/ { on = 1 } on { print }' |
			from_stop >"$tmp/core"
		if grep -q '^Fiber 3 "child"' "$tmp/core"; then
			block core "$core_cmd" "$tmp/core"
		else
			bad "core: gdb did not show fiber 3 (its output kept below)"
			sed 's/^/        /' "$tmp/core" | tail -20
		fi
	fi
fi

# overflow: the report's two lines for the fiber spawned by a chain of
# fibers (the suite's other output is left out).
timeout 120 "$overflow" </dev/null 2>&1 | grep -A1 '"deep-child" overflowed its stack' | head -2 >"$tmp/overflow"
if grep -q 'spawned at tests/test_overflow.c:' "$tmp/overflow"; then
	sed 's/^/    /' "$tmp/overflow" >"$tmp/block.overflow"
else
	bad "overflow: $overflow printed no overflow report"
fi

# The page with every block made fresh (those not made are kept).
awk -v dir="$tmp" '
/^<!-- debugging-doc: [a-z]+ -->$/ {
	print
	name = $3
	f = dir "/block." name
	if ((getline l < f) > 0) {
		print "" ; print l
		while ((getline l < f) > 0) print l
		print ""
		skip = 1
	}
	next
}
/^<!-- \/debugging-doc -->$/ { skip = 0 }
!skip { print }
' "$page" >"$tmp/page"
nblocks=$(grep -c '^<!-- debugging-doc: ' "$page")
[ "$nblocks" -ge 3 ] || bad "$page has $nblocks generated blocks, not the 3 this writes"

if [ "$check" -eq 0 ]; then
	cp "$tmp/page" "$page"
	echo "  wrote $page"
else
	# What changes from run to run: addresses, process and thread ids.
	norm() { sed -E 's/0x[0-9a-f]+/0x?/g; s/(process|LWP) [0-9]+/\1 ?/g' "$1"; }
	for name in live core overflow; do
		[ -e "$tmp/block.$name" ] || continue
		sed -n "/^<!-- debugging-doc: $name -->\$/,/^<!-- \/debugging-doc -->\$/p" "$page" >"$tmp/old.$name"
		sed -n "/^<!-- debugging-doc: $name -->\$/,/^<!-- \/debugging-doc -->\$/p" "$tmp/page" >"$tmp/new.$name"
		if [ ! -s "$tmp/old.$name" ]; then
			bad "$name: no block <!-- debugging-doc: $name --> in $page"
		elif diff -u <(norm "$tmp/old.$name") <(norm "$tmp/new.$name") >"$tmp/diff.$name"; then
			ok "$name: the quoted output is what the command prints now"
		else
			bad "$name: the quoted output is stale (run mk/debugging-doc.sh):"
			head -20 "$tmp/diff.$name" | sed 's/^/        /'
		fi
	done
fi
echo "debugging-doc: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
