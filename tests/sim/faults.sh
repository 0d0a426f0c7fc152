#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The simulation's faults (docs/decisions/simulation.md, "Slice 4, as
# built", the wire's, "Slice 5, as built": sim_echo, sim_http, and the
# partitions', "Slice 5b, as built": sim_part), on a build directory's
# scenarios (make sim-build):
# a fault at rate 0, or on but never firing, leaves the schedule's digest as
# it is without faults (each fault draws from a stream of its own); a rate
# that fires changes it; a seed with its faults replays; the simulator's
# line carries the rates; sim_starve's checks hold with every fault on;
# a scenario refuses a fault it does not take; weft_init refuses a
# malformed list naming the word, faults without a seed,
# and (libweft.a) faults at all (the messages, not strerror's words, which
# differ by C library); weft_net_init refuses a partition with a device
# netif. Prints "sim faults DIR: N passed, N failed".
# RUNNER as in tests/sim/determinism.sh (qemu/run-qemu-virt.sh).
# Usage: tests/sim/faults.sh BUILD_DIR [RUNNER]
set -u
dir=${1:?usage: $0 BUILD_DIR [RUNNER]}
runner=${2:-}
starve=$dir/sim/sim_starve
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
pass=0
fail=0
verdict()
{
	if [ $? = 0 ]; then
		pass=$((pass + 1))
		echo "  ok    $1"
	else
		fail=$((fail + 1))
		echo "  FAIL  $1"
	fi
}
# run [NAME=value...] PROG [ARG...]: output in OUT (the scenario's lines and
# the simulator's), status in RC.
run()
{
	local envs=()
	while [[ $1 == *=* ]]; do
		envs+=("$1")
		shift
	done
	local prog=$1
	shift
	if [ -n "$runner" ]; then
		QEMU_TIMEOUT=120 timeout 150 "$runner" "$prog" "${envs[@]}" "$@" >"$tmp" 2>&1
	else
		{ timeout 60 env "${envs[@]}" "$prog" "$@" >"$tmp" 2>&1; } 2>/dev/null
	fi
	RC=$?
	OUT=$(grep -E '^(weft sim|weft_init|sim_[a-z_]+):' "$tmp")
}
line_of() { grep -E '^weft sim: WEFT_SIM_SEED=' <<<"$1"; }
digest_of() { line_of "$1" | sed -n 's/.* steps=\([0-9]*\) digest=\(0x[0-9a-f]*\)$/\1 \2/p'; }

run "$starve" 3
none=$OUT
[ "$RC" = 0 ] && [ -n "$(digest_of "$none")" ] && grep -q '^sim_starve: .* each ran' <<<"$none"
verdict "sim_starve seed 3 without faults runs its checks"
run WEFT_SIM_FAULTS=alloc=0,stack=0,cancel=0,intr=0 "$starve" 3
[ "$RC" = 0 ] && [ "$OUT" = "$none" ]
verdict "every rate 0: the same output and line as without faults"
# alloc=1 draws at each allocation (the faults line says how many) and
# fires at none of seed 3's: the schedule must not move.
run WEFT_SIM_FAULTS=alloc=1 "$starve" 3
a1=$OUT
[ "$RC" = 0 ] && grep -Eq '^weft sim: faults alloc 0/[1-9][0-9]* ' <<<"$a1" &&
	[ "$(digest_of "$a1")" = "$(digest_of "$none")" ]
verdict "alloc=1 drawn but never fired: the schedule's digest unchanged"
line_of "$a1" | grep -q ' WEFT_SIM_FAULTS=alloc=1 steps='
verdict "the simulator's line carries WEFT_SIM_FAULTS=alloc=1"
run WEFT_SIM_FAULTS=stack=300 "$starve" 3
s1=$OUT
[ "$RC" = 0 ] && grep -Eq '^weft sim: faults alloc 0/0 stack [1-9]' <<<"$s1" &&
	[ -n "$(digest_of "$s1")" ] && [ "$(digest_of "$s1")" != "$(digest_of "$none")" ]
verdict "stack=300 fires and changes the digest"
run WEFT_SIM_FAULTS=stack=300 "$starve" 0x3
[ "$RC" = 0 ] && [ "$OUT" = "$s1" ]
verdict "seed 3 with stack=300 again: the same output and line"
all=alloc=100,stack=300,cancel=50,intr=50
run WEFT_SIM_FAULTS=$all "$starve" 3
f1=$OUT
[ "$RC" = 0 ] && grep -Eq '^weft sim: faults alloc [0-9]+/[0-9]+ stack [0-9]+/[0-9]+ cancel [1-9][0-9]*/[0-9]+ intr [1-9][0-9]*/' <<<"$f1" &&
	grep -Eq '^sim_starve: .* [1-9][0-9]* calls cancelled' <<<"$f1"
verdict "every fault on: sim_starve's checks hold, cancellations seen"
run WEFT_SIM_FAULTS=$all "$starve" 3
[ "$RC" = 0 ] && [ "$OUT" = "$f1" ]
verdict "every fault on, seed 3 again: the same output and line"
n=0
for s in 1 2 4 5; do
	run WEFT_SIM_FAULTS=$all "$starve" $s
	[ "$RC" = 0 ] && [ -n "$(digest_of "$OUT")" ] && n=$((n + 1))
done
[ $n = 4 ]
verdict "every fault on, seeds 1 2 4 5: sim_starve's checks hold ($n of 4)"
run WEFT_SIM_FAULTS=stack=10 "$dir/sim/sim_tree" 3
[ "$RC" = 2 ] && grep -q "^sim_tree: WEFT_SIM_FAULTS: stack=10: not a fault" <<<"$OUT"
verdict "sim_tree does not take stack=: refused, exit 2"
# refused WORDS MESSAGE: weft_init refuses WEFT_SIM_FAULTS=WORDS with it.
refused()
{
	run "WEFT_SIM_FAULTS=$1" "$starve" 3
	[ "$RC" = 2 ] && grep -qF "WEFT_SIM_FAULTS=$1: $2" <<<"$OUT"
	verdict "WEFT_SIM_FAULTS=$1 refused: $2"
}
refused alloc=1001 '"alloc=1001": not alloc=N with N per mille from 0 to 1000'
refused stack=x '"stack=x": not stack=N'
refused cancel '"cancel": not cancel=N'
refused alloc=1,alloc=2 '"alloc=2": alloc given twice'
refused alloc=1,,stack=1 'an empty word'
refused bogus=1 '"bogus=1": no such fault'
# The wire (slice 5): sim_echo over lwIP's loop netif.
echo_=$dir/sim/sim_echo
run "$echo_" 3
enone=$OUT
[ "$RC" = 0 ] && [ -n "$(digest_of "$enone")" ] && grep -q '^sim_echo: .* back in order, once' <<<"$enone"
verdict "sim_echo seed 3 without faults runs its checks"
# drop=1 and dup=1 draw at every frame and fire at none of seed 3's: no
# fiber of the wire's, so the schedule must not move.
run WEFT_SIM_FAULTS=drop=1,dup=1 "$echo_" 3
[ "$RC" = 0 ] && grep -Eq '^weft sim: faults .* drop 0/[1-9][0-9]* dup 0/[1-9][0-9]* delay 0/0$' <<<"$OUT" &&
	[ "$(digest_of "$OUT")" = "$(digest_of "$enone")" ]
verdict "drop=1,dup=1 drawn but never fired: the digest unchanged"
wire=drop=200,dup=100,delay=200
run WEFT_SIM_FAULTS=$wire "$echo_" 3
w1=$OUT
[ "$RC" = 0 ] && grep -Eq '^weft sim: faults .* drop [1-9][0-9]*/[0-9]+ dup [1-9][0-9]*/[0-9]+ delay [1-9][0-9]*/' <<<"$w1" &&
	[ "$(digest_of "$w1")" != "$(digest_of "$enone")" ] &&
	line_of "$w1" | grep -q " WEFT_SIM_FAULTS=$wire steps="
verdict "$wire: each fires, the echo checks hold, the digest moves"
run WEFT_SIM_FAULTS=$wire "$echo_" 0x3
[ "$RC" = 0 ] && [ "$OUT" = "$w1" ]
verdict "seed 3 with $wire again: the same output and line"
run WEFT_SIM_FAULTS=$wire "$dir/sim/sim_http" 3
[ "$RC" = 0 ] && grep -q '^sim_http: .* answered in order' <<<"$OUT" &&
	line_of "$OUT" | grep -q " WEFT_SIM_FAULTS=$wire steps="
verdict "sim_http seed 3 with $wire: its checks hold"
run WEFT_SIM_FAULTS=drop=10 "$dir/sim/sim_tree" 3
[ "$RC" = 2 ] && grep -q "^sim_tree: WEFT_SIM_FAULTS: drop=10: not a fault" <<<"$OUT"
verdict "sim_tree does not take drop=: refused, exit 2"
# Partitions (slice 5b): sim_part, clients on hosts 1-3 and a server on
# host 4 of the simulated wire.
part=$dir/sim/sim_part
run "$part" 5
pnone=$OUT
[ "$RC" = 0 ] && [ -n "$(digest_of "$pnone")" ] &&
	grep -q '^sim_part: .* back in order; connections failed: 0;' <<<"$pnone"
verdict "sim_part seed 5 without faults runs its checks"
run WEFT_SIM_FAULTS=part=0 "$part" 5
[ "$RC" = 0 ] && [ "$OUT" = "$pnone" ]
verdict "part=0: the same output and line as without faults"
# part=1 draws at every frame between hosts and fires at none of seed 5's.
run WEFT_SIM_FAULTS=part=1 "$part" 5
[ "$RC" = 0 ] && grep -Eq '^weft sim: faults .* part 0/[1-9][0-9]* cut 0$' <<<"$OUT" &&
	[ "$(digest_of "$OUT")" = "$(digest_of "$pnone")" ]
verdict "part=1 drawn but never fired: the digest unchanged"
run WEFT_SIM_FAULTS=part=20 "$part" 5
p1=$OUT
[ "$RC" = 0 ] && grep -Eq '^weft sim: faults .* part [1-9][0-9]*/[0-9]+ cut [1-9][0-9]*$' <<<"$p1" &&
	grep -q '^sim_part: .* back in order; connections failed: [1-9]' <<<"$p1" &&
	line_of "$p1" | grep -q ' WEFT_SIM_FAULTS=part=20 steps=' &&
	[ "$(digest_of "$p1")" != "$(digest_of "$pnone")" ]
verdict "sim_part seed 5 with part=20: a cut fails a connection, the checks hold, the digest moves"
run WEFT_SIM_FAULTS=part=20 "$part" 0x5
[ "$RC" = 0 ] && [ "$OUT" = "$p1" ]
verdict "seed 5 with part=20 again: the same output and line"
# make test's partitions: mk/sim.sh --fixed runs sim_part without faults.
n=0
for s in 1 2 3 4 6 7 8; do
	run WEFT_SIM_FAULTS=part=20 "$part" $s
	[ "$RC" = 0 ] && [ -n "$(digest_of "$OUT")" ] && n=$((n + 1))
done
[ $n = 7 ]
verdict "part=20, seeds 1-4 and 6-8: sim_part's checks hold ($n of 7)"
run WEFT_SIM_FAULTS=part=1001 "$part" 5
[ "$RC" = 2 ] && grep -qF 'WEFT_SIM_FAULTS=part=1001: "part=1001": not part=N with N per mille from 0 to 1000' <<<"$OUT"
verdict "WEFT_SIM_FAULTS=part=1001 refused"
run WEFT_NETIF=tap:sim0 WEFT_SIM_FAULTS=part=5 "$part" 5
[ "$RC" = 2 ] && grep -q "weft_net_init: WEFT_SIM_FAULTS part=5: a partition cuts the simulated hosts of WEFT_NETIF=loop" "$tmp"
verdict "part=5 with a device netif: weft_net_init refuses it (-EINVAL)"
run WEFT_SIM_FAULTS=part=5 "$echo_" 3
[ "$RC" = 2 ] && grep -q "^sim_echo: WEFT_SIM_FAULTS: part=5: not a fault" <<<"$OUT"
verdict "sim_echo (one host) does not take part=: refused, exit 2"
run WEFT_SIM_FAULTS=stack=1 "$starve"
[ "$RC" = 2 ] && grep -q "weft_init: .*simulation faults .* without a simulation seed" <<<"$OUT"
verdict "faults without a seed: refused"
run WEFT_SIM_FAULTS=stack=1 "$starve.plain" 3
# (the seed is refused first, by the same rule)
[ "$RC" = 2 ] && grep -q "weft_init: .*seed .*libweft-sim.a, not libweft.a" <<<"$OUT"
verdict "libweft.a with a seed and faults: -ENOTSUP"
run WEFT_SIM_FAULTS=stack=1 "$starve.plain"
[ "$RC" = 2 ] && grep -q "weft_init: .*simulation faults .*need the program linked with libweft-sim.a, not libweft.a" <<<"$OUT"
verdict "libweft.a with faults and no seed: -ENOTSUP naming libweft-sim.a"
echo "sim faults $(basename "$dir"): $pass passed, $fail failed"
[ "$fail" = 0 ]
