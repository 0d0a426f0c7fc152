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
#   dump     examples/httpd's weft_dump on SIGQUIT
#   attach   gdb attached to examples/httpd: info fibers, fiber 2
#   qemu-user  gdb-multiarch on tests/gdb/parked for linux-riscv64 under
#            qemu-riscv64's gdbstub (shown on port 1234, run on one of its
#            own): fiber 3. Skipped, and said, if that build or
#            qemu-riscv64 is missing.
#   debug    make debug's session: what make debug runs
#            (qemu/debug-qemu-virt.sh on build/qemu-virt/examples/httpd), in
#            batch, on a gdb port of its own and with QEMU's user network
#            without the host's port forwarded; the guest is stopped with
#            SIGINT to gdb (a Ctrl-C) once httpd serves. The transcript's
#            prompts are written around gdb's output, and the place the
#            guest was stopped (any) is left out. Skipped, and said, if
#            build/qemu-virt/examples/httpd is not built.
# (The sanitizer, valgrind and perf outputs, which quote no line of the
# code, are not made here: the page says so.)
# Usage: mk/debugging-doc.sh [--check] [PAGE]   (default docs/debugging.md)
#   without --check: rewrites PAGE's blocks in place;
#   --check: fails if a block differs from a fresh run other than in what
#   changes from run to run (addresses and numbers other than a line
#   number after "file:"). make test runs it (mk/test-all.sh). Needs
#   build/linux-x86_64/tests/gdb/parked, build/linux-x86_64/tests/test_overflow
#   and build/linux-x86_64/examples/httpd (make TARGET=linux-x86_64 ...);
#   httpd listens on 18081, as the page shows.
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
hpid='' dpid='' qpid=''
cleanup()
{
	# Only what this script started, by its pid.
	[ -n "$hpid" ] && kill -9 "$hpid" 2>/dev/null && wait "$hpid" 2>/dev/null
	[ -n "$dpid" ] && kill -TERM "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	[ -n "$qpid" ] && kill -9 "$qpid" 2>/dev/null && wait "$qpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
passed=0 failed=0
ok() { echo "  ok: $1"; passed=$((passed + 1)); }
bad() { echo "  FAIL: $1"; failed=$((failed + 1)); }

parked=build/linux-x86_64/tests/gdb/parked
overflow=build/linux-x86_64/tests/test_overflow
httpd=build/linux-x86_64/examples/httpd
# Brought up to date first (a no-op when they are): a binary left from an
# older tree would quote the older code's frames and lines, and a check
# against it would pass while a fresh clone's fails. The cross-built and
# bare-metal ones too, where their toolchains are (else their blocks are
# skipped below, as before).
make --no-print-directory TARGET=linux-x86_64 "$parked" "$overflow" "$httpd" >/dev/null 2>&1
make --no-print-directory TARGET=linux-riscv64 build/linux-riscv64/tests/gdb/parked \
	>/dev/null 2>&1 || true
make --no-print-directory TARGET=qemu-virt build/qemu-virt/examples/httpd >/dev/null 2>&1 || true
for b in "$parked" "$overflow" "$httpd"; do
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

# httpd, started as the page starts it (job control on, so that SIGQUIT is
# not ignored, as in an interactive shell), until it serves. Sets hpid.
start_httpd() {
	set -m
	# SIGQUIT at its default action, whatever this script inherited: a
	# shell that starts a command in the background without job control
	# has it ignored, and weft leaves an ignored SIGQUIT alone (no dump).
	HTTPD_PORT=18081 env --default-signal=QUIT "$httpd" >"$tmp/httpd.out" 2>"$tmp/httpd.err" </dev/null &
	hpid=$!
	set +m
	for _ in $(seq 300); do
		grep -q 'serving' "$tmp/httpd.out" "$tmp/httpd.err" && return 0
		kill -0 "$hpid" 2>/dev/null || break
		sleep 0.1
	done
	bad "$httpd did not start serving on 18081 (its output: $(cat "$tmp/httpd.out" "$tmp/httpd.err" | head -3))"
	return 1
}
stop_httpd() {
	kill -TERM "$hpid" 2>/dev/null
	for _ in $(seq 300); do kill -0 "$hpid" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$hpid" 2>/dev/null
	wait "$hpid" 2>/dev/null
	hpid=
}

# dump: SIGQUIT prints the dump on stderr.
if start_httpd; then
	kill -QUIT "$hpid"
	for _ in $(seq 300); do grep -q 'end of dump' "$tmp/httpd.err" && break; sleep 0.1; done
	sed -n '/^weft: dump at/,/^weft: end of dump/p' "$tmp/httpd.err" >"$tmp/dump"
	if grep -q 'end of dump' "$tmp/dump"; then
		{
			echo '    $ HTTPD_PORT=18081 build/linux-x86_64/examples/httpd &'
			echo '    $ kill -QUIT %1'
			sed 's/^/    /' "$tmp/dump"
			echo '    $ kill -TERM %1'
		} >"$tmp/block.dump"
	else
		bad "dump: no dump on httpd's stderr after SIGQUIT"
	fi
	# attach: gdb on the same process, as the page's second httpd.
	timeout 120 gdb -q -batch -iex "add-auto-load-safe-path $PWD/build" -p "$hpid" \
		-ex "info fibers" -ex "fiber 2" </dev/null >"$tmp/attach.raw" 2>&1
	stop_httpd
	awk '/^Id  Name/ { on = 1 } on && !/^\[Inferior/ { print } /^\[Inferior/ && on { print; exit }' \
		"$tmp/attach.raw" >"$tmp/attach"
	if grep -q '^Fiber 2 "http-supervisor"' "$tmp/attach"; then
		{
			echo '    $ HTTPD_PORT=18081 build/linux-x86_64/examples/httpd &'
			# shellcheck disable=SC2016 # the page shows $PWD and $! as typed
			echo '    $ gdb -q -batch -iex "add-auto-load-safe-path $PWD/build" -p $! -ex "info fibers" -ex "fiber 2"'
			echo '    ...'
			sed 's/^/    /' "$tmp/attach"
			echo '    $ kill -TERM %1'
		} >"$tmp/block.attach"
	else
		bad "attach: gdb -p did not show fiber 2 (its output kept below)"
		sed 's/^/        /' "$tmp/attach.raw" | tail -20
	fi
fi

# qemu-user: the riscv64 build under qemu-riscv64's gdbstub.
cross=build/linux-riscv64/tests/gdb/parked
if [ ! -x "$cross" ] || ! command -v qemu-riscv64 >/dev/null || ! command -v gdb-multiarch >/dev/null; then
	echo "  skip: qemu-user: $cross, qemu-riscv64 or gdb-multiarch missing (make TARGET=linux-riscv64 $cross); the block is left as it is"
else
	port=$((20000 + ($$ + 3) % 20000))
	timeout 120 qemu-riscv64 -g "$port" "$cross" >"$tmp/qemu.out" 2>&1 &
	qpid=$!
	timeout 120 gdb-multiarch -q -batch -iex "add-auto-load-safe-path $PWD/build" \
		-ex "target remote 127.0.0.1:$port" -ex 'break gdb_stop_here' -ex continue \
		-ex 'info fibers' -ex 'fiber 3' -ex kill "$cross" </dev/null >"$tmp/qu.raw" 2>&1
	wait "$qpid" 2>/dev/null
	qpid=
	sed -n '/^Fiber 3 "child"/,$p' "$tmp/qu.raw" | awk '{ line[++n] = $0 } /^#[0-9]+ / { last = n }
		END { for (i = 1; i <= last; i++) print line[i] }' >"$tmp/qu"
	if grep -q ' in waiter (' "$tmp/qu"; then
		{
			echo "    \$ qemu-riscv64 -g 1234 $cross &"
			echo "    \$ gdb-multiarch -q -batch -iex \"add-auto-load-safe-path \$PWD/build\" -ex 'target remote 127.0.0.1:1234' -ex 'break gdb_stop_here' -ex continue -ex 'info fibers' -ex 'fiber 3' -ex kill $cross"
			echo '    ...'
			sed 's/^/    /' "$tmp/qu"
			grep -m1 'Terminated via GDBstub' "$tmp/qemu.out" | sed 's/^/    /'
		} >"$tmp/block.qemu-user"
	else
		bad "qemu-user: gdb-multiarch did not show fiber 3 (its output kept below)"
		sed 's/^/        /' "$tmp/qu.raw" | tail -20
	fi
fi

# debug: make debug's session, in batch.
virt=build/qemu-virt/examples/httpd
if [ ! -f "$virt" ]; then
	echo "  skip: debug: $virt not built (make TARGET=qemu-virt $virt); the block is left as it is"
else
	GDB_PORT=$((20000 + ($$ + 2) % 20000)) QEMU_CONSOLE=$tmp/virt.console QEMU_NETDEV=user \
		timeout 180 qemu/debug-qemu-virt.sh "$virt" WEFT_NETIF=virtio HTTPD_PORT=80 -- \
		-batch -ex continue -ex 'info fibers' -ex 'fiber 1' -ex kill </dev/null >"$tmp/virt.raw" 2>&1 &
	dpid=$!
	for _ in $(seq 1200); do
		grep -q 'serving' "$tmp/virt.console" 2>/dev/null && break
		kill -0 "$dpid" 2>/dev/null || break
		sleep 0.1
	done
	sleep 1
	# The gdb-multiarch the debug script started (its child, by pid).
	gpid=$(pgrep -P "$(pgrep -P "$dpid" -f debug-qemu-virt.sh | head -1)" gdb-multiarch 2>/dev/null)
	[ -n "$gpid" ] && kill -INT "$gpid"
	wait "$dpid" 2>/dev/null
	dpid=
	serving=$(grep -m1 'serving' "$tmp/virt.console")
	awk '/^Id  Name/ { on = 1 } /^Kill the program/ { on = 0 } on { print }' "$tmp/virt.raw" >"$tmp/virt"
	if [ -n "$serving" ] && grep -q '^Program received signal SIGINT' "$tmp/virt.raw" &&
		grep -q '^Fiber 1 ' "$tmp/virt"; then
		{
			echo '    $ make debug'
			echo '    ...'
			grep -m1 '^0x[0-9a-f]* in ?? ()' "$tmp/virt.raw" | sed 's/^/    /'
			echo '    (gdb) continue'
			echo '    Continuing.'
			echo '    ...'
			echo "    $serving"
			echo '    ^C'
			echo '    Program received signal SIGINT, Interrupt.'
			echo '    ...'
			echo '    (gdb) info fibers'
			sed -n '/^Id  Name/,/^Fiber 1 /p' "$tmp/virt" | sed '$d' | sed 's/^/    /'
			echo '    (gdb) fiber 1'
			sed -n '/^Fiber 1 /,$p' "$tmp/virt" | sed 's/^/    /'
			echo '    (gdb) quit'
		} >"$tmp/block.debug"
	else
		bad "debug: no stop in a serving httpd with fiber 1's backtrace (gdb's output kept below)"
		sed 's/^/        /' "$tmp/virt.raw" | tail -20
	fi
fi

# The page with every block made fresh (those not made are kept).
awk -v dir="$tmp" '
/^<!-- debugging-doc: [a-z-]+ -->$/ {
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
[ "$nblocks" -ge 7 ] || bad "$page has $nblocks generated blocks, not the 7 this writes"

if [ "$check" -eq 0 ]; then
	cp "$tmp/page" "$page"
	echo "  wrote $page"
else
	# What changes from run to run: addresses, times, counts, ids: every
	# number but a line number after "file:". The runtime's own line
	# numbers are left out too: any edit of the runtime moves them, and
	# the page shows the frames, not where in the runtime they stand
	# (8daf684 removed a function from waiter.c and CI failed on the
	# page's waiter.c:135). The example programs' lines still count.
	norm() {
		sed -E 's#((runtime|net|kernel-shim|arch|drivers|board)/[A-Za-z0-9_/.-]+\.[chS]):[0-9]+#\1:L#g
			s/0x[0-9a-f]+/0x?/g; s/(^|[^:0-9A-Za-z_])[0-9]+(\.[0-9]+)?/\1N/g' "$1"
	}
	for name in live core overflow dump attach qemu-user debug; do
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
