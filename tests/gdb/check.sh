#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# weft's gdb extension (tools/gdb/weft-gdb.py) against tests/gdb/parked, whose
# three fibers are parked in known functions when its main thread stops:
#   - linux-x86_64, a core file (the kernel's, from `parked abort`): gdb
#     loads the extension from libweft's .debug_gdb_scripts section, `info
#     fibers` lists the fibers, `fiber N` backtraces parked ones through
#     wait_for_order and supervise;
#   - linux-x86_64, a live process: the same, the extension loaded by hand;
#   - linux-aarch64 and linux-riscv64 under qemu-user's gdbstub, with
#     gdb-multiarch;
#   - qemu-virt through QEMU's gdbstub (qemu/debug-qemu-virt.sh, as make
#     debug runs it).
# A CPU whose build or gdb-multiarch is missing is skipped.
# Builds nothing (make TARGET=... build/TARGET/tests/gdb/parked does).
# One line per check, then "gdb: N passed, M failed, S skipped".
# Usage: tests/gdb/check.sh [TARGET...]   (default: the three above)
set -u
cd "$(dirname "$0")/../.." || exit 1
passed=0 failed=0 skipped=0
tmp=$(mktemp -d /tmp/weft-gdb.XXXXXX)
qpid=
cleanup()
{
	# Only the qemu-user this script started, by its pid.
	[ -n "$qpid" ] && kill -9 "$qpid" 2>/dev/null && wait "$qpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() { passed=$((passed + 1)); echo "  ok    $1"; }
bad() { failed=$((failed + 1)); echo "  FAIL  $1${2:+: $2}"; }
skip() { skipped=$((skipped + 1)); echo "  skip  $1: $2"; }

# has LABEL FILE PATTERN: FILE matches the extended regex PATTERN.
has()
{
	if grep -Eq -- "$3" "$2"; then ok "$1"; else bad "$1" "no /$3/ in the output (kept below)"; sed 's/^/        /' "$2" | tail -40; fi
}

# in_order LABEL FILE FUNCTION...: FILE's frames ("in NAME (") name each
# FUNCTION, in this order (others between them).
in_order()
{
	local lbl=$1 f=$2
	shift 2
	if awk -v want="$*" 'BEGIN { n = split(want, w, " "); i = 1 }
		i <= n && index($0, " in " w[i] " (") { i++ } END { exit i <= n }' "$f"; then
		ok "$lbl"
	else
		bad "$lbl" "not every one of $* in order (output kept below)"
		sed 's/^/        /' "$f" | tail -40
	fi
}

# expect LABEL FILE: what `info fibers` and the backtraces must show.
expect()
{
	local lbl=$1 out=$2
	has "$lbl: info fibers: \"waiter\" parked in chan recv, spawned by a thread" "$out" \
		'^[0-9]+ +"waiter" +parked +chan recv +- +tests/gdb/parked\.c:[0-9]+ +thread$'
	has "$lbl: info fibers: \"supervisor\" parked in join" "$out" \
		'^[0-9]+ +"supervisor" +parked +join +- +tests/gdb/parked\.c:[0-9]+ +thread$'
	has "$lbl: info fibers: \"child\" spawned by \"supervisor\"" "$out" \
		'^[0-9]+ +"child" +parked +chan recv +- +tests/gdb/parked\.c:[0-9]+ +[0-9]+ "supervisor"$'
	sed -n '/^Fiber [0-9]* "child"/,/^Fiber /p' "$out" >"$out.child"
	in_order "$lbl: fiber <child>: weft_chan_recv, wait_for_order, waiter, arch_fiber_start" \
		"$out.child" weft_chan_recv wait_for_order waiter arch_fiber_start
	sed -n '/^Fiber [0-9]* "supervisor"/,$p' "$out" >"$out.sup"
	in_order "$lbl: fiber <supervisor>: weft_fiber_join, supervise, arch_fiber_start" \
		"$out.sup" weft_fiber_join supervise arch_fiber_start
}

# The commands after `info fibers`: the ids are known only then, so gdb
# runs a Python snippet that looks them up and backtraces two fibers.
cat >"$tmp/bt.py" <<'EOF'
import gdb
out = gdb.execute("info fibers", to_string=True)
gdb.write(out)
for name in ("child", "supervisor"):
    for line in out.splitlines():
        w = line.split()
        if len(w) > 1 and w[1] == '"%s"' % name:
            gdb.execute("fiber %s" % w[0])
EOF

x86()
{
	local bin=build/linux-x86_64/tests/gdb/parked lib=build/linux-x86_64/libweft.a out
	echo "== linux-x86_64"
	command -v gdb >/dev/null || { bad "gdb installed" "mk/deps.sh host installs it"; return; }
	[ -x "$bin" ] || { bad "$bin built" "make TARGET=linux-x86_64 $bin"; return; }
	if readelf -S "$lib" | grep -q '\.debug_gdb_s'; then
		ok "libweft.a has a .debug_gdb_scripts section"
	else
		bad "libweft.a has a .debug_gdb_scripts section"
	fi
	# A core file from the kernel (gcore cannot read stacks whose guard
	# pages are MADV_GUARD_INSTALL'd: see docs/debugging.md).
	local pattern
	pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
	if [ "${pattern#|}" != "$pattern" ]; then
		skip "core file" "core_pattern is a pipe ($pattern): no core file here"
	else
		{ (cd "$tmp" && ulimit -c unlimited && exec timeout 60 "$OLDPWD/$bin" abort) >/dev/null 2>&1; } 2>/dev/null
		local core='' c
		for c in "$tmp"/core*; do [ -e "$c" ] && core=$c && break; done
		if [ -z "$core" ]; then
			bad "parked abort leaves a core file" "core_pattern '$pattern', ulimit -c $(ulimit -c)"
		else
			ok "parked abort leaves a core file"
			out=$tmp/core.out
			# Auto-loaded: the safe path allows the build directory only.
			timeout 120 gdb -nx -batch -iex "add-auto-load-safe-path $PWD/build" \
				-ex "source $tmp/bt.py" "$bin" "$core" >"$out" 2>&1
			expect "core file" "$out"
		fi
	fi
	# A live process, the extension sourced by hand (auto-load is off).
	out=$tmp/live.out
	timeout 120 gdb -nx -batch -iex 'set auto-load python-scripts off' \
		-ex "source tools/gdb/weft-gdb.py" -ex 'break gdb_stop_here' -ex run \
		-ex "source $tmp/bt.py" -ex kill "$bin" >"$out" 2>&1
	expect "live process" "$out"
	# A field the script does not find (as after a rename in the runtime):
	# named once, its column "?", the rest still listed.
	sed 's/_field(f, "parent")/_field(f, "parent_gone")/' tools/gdb/weft-gdb.py >"$tmp/renamed.py"
	out=$tmp/renamed.out
	timeout 120 gdb -nx -batch -iex 'set auto-load python-scripts off' \
		-ex "source $tmp/renamed.py" -ex 'break gdb_stop_here' -ex run -ex 'info fibers' \
		-ex kill "$bin" >"$out" 2>&1
	has "a field missing: named in a message" "$out" \
		"^weft-gdb: struct weft__fiber has no field 'parent_gone': .*\(shown as \?\)$"
	has "a field missing: its column is ?, the rest listed" "$out" \
		'^[0-9]+ +"child" +parked +chan recv +- +tests/gdb/parked\.c:[0-9]+ +\?$'
	has "live process: a bad fiber id is a clear error" <(timeout 60 gdb -nx -batch \
		-iex "add-auto-load-safe-path $PWD/build" -ex 'break gdb_stop_here' -ex run \
		-ex 'fiber 999' -ex kill "$bin" 2>&1) 'no fiber 999 \(info fibers lists them\)'
}

# cross TARGET QEMU: the program under qemu-user's gdbstub, gdb-multiarch
# attached, stopped in gdb_stop_here.
cross()
{
	local t=$1 q=$2 bin=build/$1/tests/gdb/parked out port
	echo "== $t (qemu-user gdbstub)"
	command -v gdb-multiarch >/dev/null || { skip "$t" "no gdb-multiarch (mk/deps.sh host)"; return; }
	command -v "$q" >/dev/null || { skip "$t" "no $q"; return; }
	[ -x "$bin" ] || { skip "$t" "$bin not built (make TARGET=$t $bin)"; return; }
	port=$((20000 + $$ % 20000))
	out=$tmp/$t.out
	timeout 120 "$q" -g "$port" "$bin" >"$tmp/$t.qemu" 2>&1 &
	qpid=$!
	timeout 120 gdb-multiarch -nx -batch -iex "add-auto-load-safe-path $PWD/build" \
		-ex "file $bin" -ex "target remote 127.0.0.1:$port" -ex 'break gdb_stop_here' \
		-ex continue -ex "source $tmp/bt.py" -ex 'kill' >"$out" 2>&1
	kill -9 "$qpid" 2>/dev/null
	wait "$qpid" 2>/dev/null
	qpid=
	expect "$t" "$out"
}

# qemu-virt: the image booted halted under QEMU's gdbstub by
# qemu/debug-qemu-virt.sh (what make debug runs), gdb-multiarch attached.
virt()
{
	local bin=build/qemu-virt/tests/gdb/parked out=$tmp/qemu-virt.out port
	echo "== qemu-virt (QEMU's gdbstub, qemu/debug-qemu-virt.sh)"
	command -v gdb-multiarch >/dev/null || { skip "qemu-virt" "no gdb-multiarch (mk/deps.sh bare)"; return; }
	[ -f "$bin" ] || { skip "qemu-virt" "$bin not built (make TARGET=qemu-virt $bin)"; return; }
	port=$((20000 + ($$ + 1) % 20000))
	GDB_PORT=$port QEMU_CONSOLE=$tmp/qemu-virt.console timeout 120 qemu/debug-qemu-virt.sh "$bin" -- \
		-batch -ex 'break gdb_stop_here' -ex continue -ex "source $tmp/bt.py" -ex kill \
		</dev/null >"$out" 2>&1
	expect "qemu-virt" "$out"
	has "qemu-virt: the guest's console went to QEMU_CONSOLE" "$tmp/qemu-virt.console" 'OpenSBI'
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(linux-x86_64 linux-aarch64 linux-riscv64 qemu-virt)
for t in "${targets[@]}"; do
	case $t in
	linux-x86_64) x86 ;;
	linux-aarch64) cross "$t" qemu-aarch64 ;;
	linux-riscv64) cross "$t" qemu-riscv64 ;;
	qemu-virt) virt ;;
	*) bad "target $t" "not one of linux-x86_64, linux-aarch64, linux-riscv64, qemu-virt" ;;
	esac
done
echo "gdb: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
