#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The simulation's determinism (docs/decisions/simulation.md), on a build
# directory's tests/sim scenarios (make sim-build): the same seed
# twice gives the same output and digest, by argument and by
# WEFT_SIM_SEED; another seed gives another digest; a deadlock is found,
# said with its seed and the same on a second run; libweft-sim.a without a
# seed runs on threads as libweft.a does; libweft.a refuses a seed, naming
# libweft-sim.a; a thread the program made itself is refused under a seed
# (Linux builds); each other scenario (tests/sim/scenario.h) replays its seed
# and another seed gives another digest. mk/sim.sh --fixed runs every
# scenario over a few seeds. Two CMocka suites (tests/sim/suites.conf)
# replay their seed too. Prints "sim determinism DIR: N passed, N failed" (DIR:
# the build directory's name).
# RUNNER runs a bare-metal build's images (qemu/run-qemu-virt.sh): a
# NAME=value goes on its command line, and only the scenario's own lines
# and the simulator's are compared (not the firmware's banner). For a
# Linux build of another CPU (the build directory's config names a TARGET
# whose board.mk says SHIM := linux) RUNNER is qemu-user (qemu-aarch64):
# the program's command goes after it and the environment reaches it.
# Usage: tests/sim/determinism.sh BUILD_DIR [RUNNER]
#   e.g. tests/sim/determinism.sh build/linux-x86_64
#        tests/sim/determinism.sh build/linux-aarch64 qemu-aarch64
#        tests/sim/determinism.sh build/qemu-virt qemu/run-qemu-virt.sh
set -u
dir=${1:?usage: $0 BUILD_DIR [RUNNER]}
runner=${2:-}
# user: RUNNER is qemu-user's, a prefix of the command (see above).
user=()
target=$(sed -n 's/^TARGET=\([^ ]*\).*/\1/p' "$dir/config" 2>/dev/null)
if [ -n "$runner" ] && [ -n "$target" ] &&
	grep -Eq '^SHIM[[:space:]]*:?=[[:space:]]*linux[[:space:]]*$' \
		"$(dirname "$0")/../../board/$target/board.mk" 2>/dev/null; then
	# shellcheck disable=SC2206 # a command and its options, as given
	user=($runner)
	runner=
fi
ring=$dir/sim/sim_ring
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
pass=0
fail=0
# verdict NAME: the status of the command before it (0: passed).
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
# run [NAME=value...] PROG [ARG...]: its stdout and stderr in OUT, its
# status in RC; a run that does not end in time fails (timeout's 124).
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
		RC=$?
		OUT=$(grep -E '^(ring|tree|weft sim|weft_init|sim_[a-z_]+):' "$tmp")
	else
		# (bash's "Aborted" for the deadlock's run: not ours to show)
		{ timeout 60 env "${envs[@]}" ${user[@]+"${user[@]}"} "$prog" "$@" >"$tmp" 2>&1; } 2>/dev/null
		RC=$?
		OUT=$(cat "$tmp")
	fi
}
line_re='^weft sim: WEFT_SIM_SEED=0x[0-9a-f]+ steps=[0-9]+ digest=0x[0-9a-f]{16}$'
digest_of() { grep -Eo 'digest=0x[0-9a-f]+' <<<"$1" | tail -1; }
msg='needs the program linked with libweft-sim.a, not libweft.a'

run "$ring" 1
a=$OUT arc=$RC
[ "$arc" = 0 ] && grep -q "tree: depth 6, 127 fibers (want 127)" <<<"$a"
verdict "seed 1 runs its checks (exit $arc)"
grep -Eq "$line_re" <<<"$a"
verdict "seed 1 ends with the simulator's line"
run "$ring" 1
[ "$RC" = 0 ] && [ "$OUT" = "$a" ]
verdict "seed 1 twice: the same output and digest"
run WEFT_SIM_SEED=1 "$ring"
[ "$RC" = 0 ] && [ "$OUT" = "$a" ]
verdict "WEFT_SIM_SEED=1 is seed 1"
run WEFT_SIM_SEED=0x1 "$ring"
[ "$RC" = 0 ] && [ "$OUT" = "$a" ]
verdict "WEFT_SIM_SEED=0x1 is seed 1"
run "$ring" 2
c=$OUT
[ "$RC" = 0 ] && grep -Eq "$line_re" <<<"$c"
verdict "seed 2 runs its checks"
[ -n "$(digest_of "$c")" ] && [ "$(digest_of "$c")" != "$(digest_of "$a")" ]
verdict "seed 2: another digest than seed 1's"
run "$ring" 1 deadlock
d=$OUT drc=$RC
[ "$drc" != 0 ] && [ "$drc" != 124 ] &&
	grep -q "^weft sim: deadlock, every actor waits and no deadline: WEFT_SIM_SEED=0x1 " <<<"$d"
verdict "a deadlock is found and aborts (exit $drc)"
run "$ring" 1 deadlock
[ "$RC" = "$drc" ] && [ "$OUT" = "$d" ]
verdict "the deadlock again with its seed: the same output"
run "$ring"
[ "$RC" = 0 ] && ! grep -q "weft sim:" <<<"$OUT" && grep -q "127 fibers (want 127)" <<<"$OUT"
verdict "libweft-sim.a without a seed: threads, no simulation"
run WEFT_SIM_SEED=1 "$ring.plain"
[ "$RC" = 2 ] && grep -q "sim_ring: weft_init: .*$msg" <<<"$OUT"
verdict "libweft.a refuses WEFT_SIM_SEED (-ENOTSUP), naming libweft-sim.a"
run "$ring.plain" 1
[ "$RC" = 2 ] && grep -q "$msg" <<<"$OUT"
verdict "libweft.a refuses weft_config_t.sim_seed"
run WEFT_SIM_SEED=1x "$ring"
[ "$RC" = 2 ] && grep -q "WEFT_SIM_SEED=1x: not a whole number" <<<"$OUT"
verdict "WEFT_SIM_SEED=1x is refused (-EINVAL)"
run "$ring.plain"
[ "$RC" = 0 ]
verdict "libweft.a without a seed runs"
# A thread the program made itself (pthread_create: Linux builds only)
# that calls into the runtime under a seed is refused, not run beside the
# schedule (runtime/sim.c's own_thread).
if [ -z "$runner" ] && [ -x "$dir/sim/sim_thread" ]; then
	run "$dir/sim/sim_thread" 1 foreign
	[ "$RC" != 0 ] && [ "$RC" != 124 ] &&
		grep -q "^weft sim: a thread the simulation did not start .*: refused" <<<"$OUT"
	verdict "a pthread_create thread calling in under a seed is refused (exit $RC)"
fi
# The other scenarios (scenario.h): seed 3 twice, by argument and by
# WEFT_SIM_SEED, gives the same output and line; seed 6 (the same number
# of workers, 2) another digest.
for prog in "$dir"/sim/sim_*; do
	name=$(basename "$prog")
	[[ $name =~ ^sim_[a-z_]+$ && $name != sim_ring ]] || continue
	run "$prog" 3
	a=$OUT arc=$RC
	[ "$arc" = 0 ] && grep -Eq "$line_re" <<<"$a" && grep -q "^$name: workers 2," <<<"$a"
	verdict "$name seed 3 runs its checks (exit $arc)"
	run WEFT_SIM_SEED=3 "$prog"
	[ "$RC" = 0 ] && [ "$OUT" = "$a" ]
	verdict "$name WEFT_SIM_SEED=3 is seed 3: the same output and digest"
	run "$prog" 6
	c=$OUT
	[ "$RC" = 0 ] && [ -n "$(digest_of "$c")" ] && [ "$(digest_of "$c")" != "$(digest_of "$a")" ]
	verdict "$name seed 6: another digest than seed 3's"
done
# Two CMocka suites of tests/sim/suites.conf (make sim-build builds them
# into BUILD_DIR/sim/): a whole suite's run under seed 3 twice gives the
# same output (every test's, and each group's simulator line); seed 4
# other digests. Linux builds run natively only (a suite is thousands of
# runtime starts: under an emulator it would cost more than the rest).
if [ -z "$runner" ] && [ ${#user[@]} = 0 ]; then
	for name in test_combine test_future; do
		prog=$dir/sim/$name
		[ -x "$prog" ] || continue
		run WEFT_SIM_SEED=3 "$prog"
		a=$OUT arc=$RC
		[ "$arc" = 0 ] && grep -Eq "$line_re" <<<"$a"
		verdict "$name under seed 3 passes (exit $arc)"
		run WEFT_SIM_SEED=3 "$prog"
		[ "$RC" = 0 ] && [ "$OUT" = "$a" ]
		verdict "$name under seed 3 twice: the same output and digests"
		run WEFT_SIM_SEED=4 "$prog"
		[ "$RC" = 0 ] && [ "$(grep -Eo 'digest=0x[0-9a-f]+' <<<"$OUT")" != "$(grep -Eo 'digest=0x[0-9a-f]+' <<<"$a")" ]
		verdict "$name under seed 4: other digests than seed 3's"
	done
fi
echo "sim determinism $(basename "$dir"): $pass passed, $fail failed"
[ "$fail" = 0 ]
