#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The simulation's determinism (docs/decisions/simulation.md), on a Linux
# build directory's tests/sim scenarios (make sim-build): the same seed
# twice gives the same output and digest, by argument and by
# WEFT_SIM_SEED; another seed gives another digest; a deadlock is found,
# said with its seed and the same on a second run; libweft-sim.a without a
# seed runs on threads as libweft.a does; libweft.a refuses a seed, naming
# libweft-sim.a. Prints "sim determinism: N passed, N failed".
# Usage: tests/sim/determinism.sh build/linux-x86_64
set -u
dir=${1:?usage: $0 BUILD_DIR}
ring=$dir/sim/sim_ring
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "  ok    $1"; }
no() { fail=$((fail + 1)); echo "  FAIL  $1"; }
check() { if eval "$2"; then ok "$1"; else no "$1"; fi; }
# run OUTVAR RCVAR CMD...: its stdout and stderr, and its status; a run
# that does not end within a minute fails (timeout's 124).
run()
{
	local -n out=$1 rc=$2
	shift 2
	out=$(timeout 60 "$@" 2>&1)
	rc=$?
}
line_re='weft sim: WEFT_SIM_SEED=0x[0-9a-f]+ steps=[0-9]+ digest=0x[0-9a-f]{16}'
digest_of() { grep -Eo 'digest=0x[0-9a-f]+' <<<"$1" | tail -1; }

run a arc "$ring" 1
run b brc "$ring" 1
check "seed 1 runs its checks (exit $arc)" '[ "$arc" = 0 ] && grep -q "tree: depth 6, 127 fibers (want 127)" <<<"$a"'
check "seed 1 ends with the simulator's line" 'grep -Eq "^$line_re\$" <<<"$a"'
check "seed 1 twice: the same output and digest" '[ "$brc" = 0 ] && [ "$a" = "$b" ]'
run e erc env WEFT_SIM_SEED=1 "$ring"
check "WEFT_SIM_SEED=1 is seed 1" '[ "$erc" = 0 ] && [ "$e" = "$a" ]'
run h hrc env WEFT_SIM_SEED=0x1 "$ring"
check "WEFT_SIM_SEED=0x1 is seed 1" '[ "$hrc" = 0 ] && [ "$h" = "$a" ]'
run c crc "$ring" 2
check "seed 2 runs its checks" '[ "$crc" = 0 ] && grep -Eq "^$line_re\$" <<<"$c"'
check "seed 2: another digest than seed 1's" '[ -n "$(digest_of "$c")" ] && [ "$(digest_of "$c")" != "$(digest_of "$a")" ]'
run d drc "$ring" 1 deadlock
run d2 d2rc "$ring" 1 deadlock
check "a deadlock is found and aborts (exit $drc)" '[ "$drc" = 134 ] && grep -q "^weft sim: deadlock, every actor waits and no deadline: WEFT_SIM_SEED=0x1 " <<<"$d"'
check "the deadlock again with its seed: the same output" '[ "$d2rc" = 134 ] && [ "$d" = "$d2" ]'
run t trc "$ring"
check "libweft-sim.a without a seed: threads, no simulation" '[ "$trc" = 0 ] && ! grep -q "weft sim:" <<<"$t" && grep -q "127 fibers (want 127)" <<<"$t"'
msg='needs the program linked with libweft-sim.a, not libweft.a'
run p prc env WEFT_SIM_SEED=1 "$ring.plain"
check "libweft.a refuses WEFT_SIM_SEED (-ENOTSUP), naming libweft-sim.a" '[ "$prc" = 2 ] && grep -q "Operation not supported: .*$msg" <<<"$p"'
run q qrc "$ring.plain" 1
check "libweft.a refuses weft_config_t.sim_seed" '[ "$qrc" = 2 ] && grep -q "$msg" <<<"$q"'
run z zrc env WEFT_SIM_SEED=1x "$ring"
check "WEFT_SIM_SEED=1x is refused (-EINVAL)" '[ "$zrc" = 2 ] && grep -q "WEFT_SIM_SEED=1x: not a whole number" <<<"$z"'
run n nrc "$ring.plain"
check "libweft.a without a seed runs" '[ "$nrc" = 0 ]'
echo "sim determinism: $pass passed, $fail failed"
[ "$fail" = 0 ]
