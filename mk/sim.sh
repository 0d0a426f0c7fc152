#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make sim` (docs/decisions/simulation.md, docs/debugging.md "Deterministic
# simulation"): every simulation scenario of a build directory
# (BUILD_DIR/sim/sim_*, from make sim-build) over a window of seeds, each
# run bounded in time. A run fails when it exits non-zero (a check of the
# scenario's aborts), prints the simulator's deadlock line, ends without the
# simulator's last line, or runs out of time. Each failure is printed with
# the one line that replays it; the last line is
# "sim DIR: N passed, M failed" (DIR: the build directory's name; the tally
# mk/test-all.sh reads). Exit 1 if any run failed.
#
# Usage: mk/sim.sh [--fixed] BUILD_DIR [RUNNER]
#   RUNNER runs a bare-metal build's images (qemu/run-qemu-virt.sh): the
#   seed goes on its command line as WEFT_SIM_SEED=. For a Linux build of
#   another CPU (BUILD_DIR/config names a TARGET whose board.mk says
#   SHIM := linux) it is qemu-user (qemu-aarch64), a prefix of the command.
#   --fixed: the short fixed set make test runs (SEEDS defaults to 8, or 4
#   on a bare-metal target: each run is a boot), each run's lines (the
#   scenario's and the simulator's) kept in BUILD_DIR/sim/fixed.lines, one
#   "NAME SEED | LINE" a line, for tests/sim/crosstarget.sh to compare
#   between targets.
# Environment:
#   SEEDS=N       seeds per scenario (default 100)
#   SEED_FROM=S   the first seed (default 1): seeds S .. S+N-1
#   SIM="a b"     only these scenarios (sim_tree or tree; test_chan for a
#                 suite of tests/sim/suites.conf), default all and the suites
#   SUITE_SEEDS=N with --fixed, seeds per suite (default 2, 1 with a
#                 bare-metal RUNNER, 0 under qemu-user)
#   SIM_ARGS=...  words after the seed, for every scenario (a mode: sim_tree
#                 racy)
#   SIM_TIMEOUT=T seconds a run may take (default 60, 150 with a RUNNER)
#   SIM_VERBOSE=1 also print each passing run's simulator line
#   WEFT_SIM_FAULTS=... the fault rates of every run (alloc=1,stack=10: the
#                 scenarios that do not take one refuse it, exit 2); the
#                 replay lines carry them
#   SWARM=1       each scenario draws its faults from the seed, among those
#                 its checks take (tests/sim/scenario.h), unless
#                 WEFT_SIM_FAULTS is set; the replay lines spell them out
set -u
fixed=0
if [ "${1:-}" = --fixed ]; then
	fixed=1
	shift
fi
dir=${1:?usage: $0 [--fixed] BUILD_DIR [RUNNER]}
runner=${2:-}
# user: RUNNER is qemu-user's, a prefix of the command (see above).
user=()
target=$(sed -n 's/^TARGET=\([^ ]*\).*/\1/p' "$dir/config" 2>/dev/null)
if [ -n "$runner" ] && [ -n "$target" ] &&
	grep -Eq '^SHIM[[:space:]]*:?=[[:space:]]*linux[[:space:]]*$' \
		"$(dirname "$0")/../board/$target/board.mk" 2>/dev/null; then
	# shellcheck disable=SC2206 # a command and its options, as given
	user=($runner)
	runner=
fi
if [ $fixed = 1 ]; then
	seeds=${SEEDS:-$([ -n "$runner" ] && echo 4 || echo 8)}
else
	seeds=${SEEDS:-100}
fi
from=${SEED_FROM:-1}
limit=${SIM_TIMEOUT:-$([ -n "$runner" ] && echo 150 || echo 60)}
# shellcheck disable=SC2206 # words, as given
extra=(${SIM_ARGS:-})
faults=${WEFT_SIM_FAULTS:-}
swarm=
[ "${SWARM:-0}" = 1 ] && swarm=WEFT_SIM_SWARM=1 && export WEFT_SIM_SWARM=1
[[ $seeds =~ ^[0-9]+$ ]] || { echo "$0: SEEDS=$seeds: not a number" >&2; exit 2; }
[[ $limit =~ ^[1-9][0-9]*$ ]] || { echo "$0: SIM_TIMEOUT=$limit: not a whole number of seconds" >&2; exit 2; }
if ! [[ $from =~ ^(0x[0-9a-fA-F]+|[0-9]+)$ ]] || [ $((from)) -lt 1 ]; then
	echo "$0: SEED_FROM=$from: not a number from 1" >&2
	exit 2
fi
progs=()
# The CMocka suites of tests/sim/suites.conf (built into BUILD_DIR/sim/ by
# make sim-build) run as the scenarios do; SIM= names one as test_chan.
suites=$(sed -n 's/^\(test_[a-z0-9_]*\).*/\1/p' "$(dirname "$0")/../tests/sim/suites.conf" 2>/dev/null)
if [ -n "${SIM:-}" ]; then
	for s in $SIM; do
		[[ $s == test_* ]] || s=sim_${s#sim_}
		[ -x "$dir/sim/$s" ] || { echo "$0: no scenario $dir/sim/$s (make sim-build)" >&2; exit 2; }
		progs+=("$dir/sim/$s")
	done
else
	for p in "$dir"/sim/sim_*; do
		[[ $(basename "$p") =~ ^sim_[a-z_]+$ ]] && progs+=("$p")
	done
	for s in $suites; do
		[ -x "$dir/sim/$s" ] && progs+=("$dir/sim/$s")
	done
fi
[ ${#progs[@]} -gt 0 ] || { echo "$0: no scenarios in $dir/sim (make sim-build)" >&2; exit 2; }
lines=
if [ $fixed = 1 ]; then
	lines=$dir/sim/fixed.lines
	rm -f "$lines"
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
line_re='^weft sim: WEFT_SIM_SEED=0x[0-9a-f]+( WEFT_SIM_FAULTS=[a-z0-9=,]+)? steps=[0-9]+ digest=0x[0-9a-f]{16}$'
pass=0
fail=0
echo "sim $(basename "$dir"): ${#progs[@]} scenarios, seeds $((from)) to $((from + seeds - 1))${extra[*]:+, arguments ${extra[*]}}"
for prog in "${progs[@]}"; do
	name=$(basename "$prog")
	np=0
	nf=0
	# A suite is a few hundred tests' schedules: --fixed runs SUITE_SEEDS
	# of it (2; 1 on a bare-metal target, about 16 s for the nine; none
	# under qemu-user, where test_chan's seed alone took 21 s of CPU), and
	# keeps its lines out of fixed.lines (the scenarios' comparison between
	# targets).
	n=$seeds
	keep=$lines
	if [[ $name == test_* ]]; then
		keep=
		if [ $fixed = 1 ]; then
			if [ -n "$runner" ]; then
				n=${SUITE_SEEDS:-1}
			elif [ ${#user[@]} = 0 ]; then
				n=${SUITE_SEEDS:-2}
			else
				n=${SUITE_SEEDS:-0}
			fi
		fi
	fi
	for ((i = 0; i < n; i++)); do
		seed=$(printf '0x%x' $((from + i)))
		if [ -n "$runner" ]; then
			replay="$runner $prog WEFT_SIM_SEED=$seed${faults:+ WEFT_SIM_FAULTS=$faults}${extra[*]:+ ${extra[*]}}"
			QEMU_TIMEOUT=$limit timeout $((limit + 30)) "$runner" "$prog" \
				"WEFT_SIM_SEED=$seed" ${faults:+"WEFT_SIM_FAULTS=$faults"} $swarm \
				${extra[@]+"${extra[@]}"} >"$tmp" 2>&1
		else
			replay="WEFT_SIM_SEED=$seed${faults:+ WEFT_SIM_FAULTS=$faults} $prog${extra[*]:+ ${extra[*]}}"
			# (bash's "Aborted" for a failing run: said below)
			{ WEFT_SIM_SEED=$seed timeout "$limit" ${user[@]+"${user[@]}"} "$prog" ${extra[@]+"${extra[@]}"} \
				>"$tmp" 2>&1; } 2>/dev/null
		fi
		rc=$?
		[ ${#user[@]} = 0 ] || replay=${replay/" $prog"/" ${user[*]} $prog"}
		why=
		if [ $rc = 124 ]; then
			why="did not end within $limit s"
		elif grep -q '^weft sim: deadlock' "$tmp"; then
			why="deadlock (exit $rc)"
		elif [ $rc = 134 ]; then
			why="aborted (SIGABRT)"
		elif [ $rc -gt 128 ]; then
			why="killed by signal $((rc - 128))"
		elif [ $rc != 0 ]; then
			why="exit $rc"
		elif ! grep -Eq "$line_re" "$tmp"; then
			why="no simulator line (not linked with libweft-sim.a?)"
		fi
		# The scenario's lines and the simulator's (a bare-metal console
		# has the firmware's too), and how the run ended.
		[ -z "$keep" ] || {
			grep -E '^(sim_[a-z_]+|ring|tree|weft sim|weft_init):' "$tmp"
			echo "ended: ${why:-passed}"
		} | sed "s/^/$name $seed | /" >>"$keep"
		if [ -z "$why" ]; then
			np=$((np + 1))
			[ "${SIM_VERBOSE:-0}" = 1 ] && echo "  ok    $name $(grep -E "$line_re" "$tmp" | tail -1)"
			continue
		fi
		nf=$((nf + 1))
		echo "  FAIL  $name seed $seed: $why"
		# What the scenario and the simulator said of it (at most 6 lines).
		grep -E '^(sim_[a-z_]+|ring|tree|weft sim|weft_init):|^\[  (ERROR|FAILED) +\]|^\[   LINE   \]' "$tmp" |
			grep -Ev "$line_re" |
			grep -E 'FAIL|ERROR|LINE|deadlock|actor|timer|weft_init|WEFT_SIM_FAULTS' | head -6 | sed 's/^/        /'
		# A swarm's faults, as the scenario said them.
		sw=$(sed -n 's/^sim_[a-z_]*: swarm WEFT_SIM_FAULTS=\([a-z0-9=,]*\)$/\1/p' "$tmp" | head -1)
		[ -n "$sw" ] && replay=${replay/WEFT_SIM_SEED=$seed/WEFT_SIM_SEED=$seed WEFT_SIM_FAULTS=$sw}
		echo "        replay: $replay"
	done
	echo "  $name: $np passed, $nf failed"
	pass=$((pass + np))
	fail=$((fail + nf))
done
echo "sim $(basename "$dir"): $pass passed, $fail failed"
[ "$fail" = 0 ]
