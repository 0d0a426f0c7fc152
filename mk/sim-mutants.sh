#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Evidence that the simulation finds bugs (docs/decisions/simulation.md,
# slice 6; the figures are in docs/simulation-evidence.md): each patch of
# tests/sim/mutants/ re-introduces one bug in a scratch copy of a commit,
# the copy's simulation is built, and its scenarios run over a growing
# window of seeds (1, then 2-10, 11-100, ... up to SEEDS) until one fails.
# Prints, per mutant, found or not, the first failing seed and its replay
# line, and the runs tried. The unpatched copy runs the same scenarios over
# all SEEDS seeds first, and a mutant's first failing run again (its
# arguments and faults too): a mutant "found" by a run that fails anyway
# would prove nothing. Each copy's runs are its own mk/sim.sh's, which
# knows its scenarios' lines.
#
# A patch is a unified diff (patch -p1, fuzz allowed: little context, so
# that it still applies as the runtime moves) after a header of lines:
#   Mutant: one line, what the bug is     (then free text, the why)
#   Sim: the scenarios to run (names of tests/sim/sim_NAME.c); those the
#        commit does not have are skipped and said so
#   Args: words after the seed (mk/sim.sh's SIM_ARGS), optional
#   Faults: WEFT_SIM_FAULTS for the runs (slice 4's rates), optional
#
# Usage: mk/sim-mutants.sh [--doc] [PATCH...]   (default: every patch)
#   --doc  also write the table into docs/simulation-evidence.md, between
#          its "sim-mutants table" markers
# Environment:
#   SEEDS=N        the most seeds a scenario tries (default 100)
#   MUTANT_REV=R   the commit to copy (default HEAD: what is committed, not
#                  the working tree)
#   MUTANT_DIR=D   the scratch directory (default a new one under /tmp,
#                  removed at the end unless KEEP=1)
#   SIM_TIMEOUT=T  seconds a run may take (default 20)
#   JOBS=N         make -j (default 2)
# Exit status 0 when everything built and the unpatched copy passed (a
# mutant not found is a result, not a failure); 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 1
doc=0
if [ "${1:-}" = --doc ]; then
	doc=1
	shift
fi
patches=("$@")
[ ${#patches[@]} -gt 0 ] || patches=(tests/sim/mutants/*.patch)
seeds=${SEEDS:-100}
[[ $seeds =~ ^[1-9][0-9]*$ ]] || { echo "$0: SEEDS=$seeds: not a number" >&2; exit 2; }
rev=$(git rev-parse --short "${MUTANT_REV:-HEAD}") || exit 2
# The last commit to change what the figures depend on (a branch's own
# commits may be gone by the time it is merged; this one is not).
src=$(git log -1 --format=%h "$rev" -- runtime kernel-shim arch net include \
	tests/sim tests/allocwrap.c tests/allocwrap.h Makefile)
jobs=${JOBS:-2}
export SIM_TIMEOUT=${SIM_TIMEOUT:-20}
target=linux-x86_64
if [ -n "${MUTANT_DIR:-}" ]; then
	root=$MUTANT_DIR
	mkdir -p "$root" || exit 2
else
	root=$(mktemp -d /tmp/weft-mutants.XXXXXX) || exit 2
	[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$root"' EXIT
fi
status=0

# field PATCH NAME: the header's "NAME: value" (before the diff).
field() { sed -n "/^diff \|^--- /q; s/^$2: *//p" "$1" | head -1; }

# copy DIR: the commit's tree in DIR (emptied first: objects of another
# run would look newer than the sources).
copy() { rm -rf "$1" && mkdir -p "$1" && git archive "$rev" | tar -x -C "$1"; }

# build DIR: its simulation (quiet; the tail of the log on failure).
build()
{
	if ! make --no-print-directory -C "$1" -j"$jobs" TARGET=$target sim-build >"$1/build.log" 2>&1; then
		tail -15 "$1/build.log" | sed 's/^/      /'
		return 1
	fi
}

# scenarios DIR NAMES: those of NAMES DIR's build has, as sim_NAME.
scenarios()
{
	local d=$1 n list=()
	shift
	for n in "$@"; do
		[ -x "$d/build/$target/sim/sim_${n#sim_}" ] && list+=("sim_${n#sim_}")
	done
	echo "${list[*]}"
}

echo "sim-mutants: commit $rev (sources as of $src), $target, up to $seeds seeds, ${#patches[@]} mutants, in $root"
base=$root/base
copy "$base" || exit 2
echo "  build the unpatched copy"
build "$base" || { echo "sim-mutants: the unpatched copy does not build" >&2; exit 1; }
# Every scenario any mutant names, unpatched, over all the seeds.
all=()
for p in "${patches[@]}"; do
	# shellcheck disable=SC2207 # words
	all+=($(field "$p" Sim))
done
# shellcheck disable=SC2207,SC2046 # words
all=($(printf '%s\n' "${all[@]}" | sort -u))
have=$(scenarios "$base" "${all[@]}")
echo "  the unpatched copy: $have over seeds 1-$seeds"
if ! out=$(SEEDS=$seeds SIM="$have" "$base/mk/sim.sh" "$base/build/$target" 2>&1); then
	echo "$out" | grep -E 'FAIL|replay' | head -10 | sed 's/^/  /'
	echo "sim-mutants: the unpatched copy fails: the figures below prove nothing"
	status=1
fi
basetally=$(echo "$out" | tail -1)
echo "  $basetally"

rows=()
for p in "${patches[@]}"; do
	name=$(basename "$p" .patch)
	what=$(field "$p" Mutant)
	# shellcheck disable=SC2207 # words
	want=($(field "$p" Sim))
	args=$(field "$p" Args)
	faults=$(field "$p" Faults)
	echo "== $name: $what"
	m=$root/$name
	copy "$m" || exit 2
	cp -a "$base/build" "$m/" || exit 2
	if ! patch -p1 -s -d "$m" --no-backup-if-mismatch <"$p" >"$m/patch.log" 2>&1; then
		sed 's/^/      /' "$m/patch.log" | head -10
		echo "  does not apply"
		rows+=("| $name | - | does not apply at $rev | - | - | - |")
		status=1
		continue
	fi
	if ! build "$m"; then
		echo "  does not build"
		rows+=("| $name | - | does not build at $rev | - | - | - |")
		status=1
		continue
	fi
	run=$(scenarios "$m" "${want[@]}")
	missing=()
	for n in "${want[@]}"; do
		[[ " $run " == *" sim_${n#sim_} "* ]] || missing+=("sim_${n#sim_}")
	done
	[ ${#missing[@]} = 0 ] || echo "  no ${missing[*]} at $rev: not run"
	if [ -z "$run" ]; then
		rows+=("| $name | - | not run: no ${missing[*]} at $rev | - | - | - |")
		continue
	fi
	# Seeds 1, 2-10, 11-100, ...: stop after the window where one failed.
	from=1 size=1 tried=0 failed=0 first=
	while [ $from -le "$seeds" ]; do
		n=$((from + size - 1 > seeds ? seeds - from + 1 : size))
		out=$(env ${faults:+"WEFT_SIM_FAULTS=$faults"} SEEDS=$n SEED_FROM=$from SIM="$run" \
			SIM_ARGS="$args" "$m/mk/sim.sh" "$m/build/$target" 2>&1)
		last=$((from + n - 1))
		# shellcheck disable=SC2207 # words
		tally=($(echo "$out" | tail -1 | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p'))
		tried=$((tried + ${tally[0]:-0} + ${tally[1]:-0}))
		failed=$((failed + ${tally[1]:-0}))
		if [ "${tally[1]:-0}" != 0 ]; then
			# The lowest failing seed, whichever scenario: "SEED<TAB>NAME:
			# why<TAB>what the scenario said<TAB>replay line", from
			# mk/sim.sh's FAIL line and the indented lines after it.
			first=$(echo "$out" | awk -F'\t' '
				function flush() { if (s != "") print s "\t" w "\t" m "\t" r; s = "" }
				/^  FAIL  sim_[a-z_]+ seed 0x[0-9a-f]+: / {
					flush()
					s = substr($0, index($0, " seed 0x") + 8); sub(/:.*/, "", s)
					w = $0; sub(/^  FAIL  /, "", w); sub(/ seed 0x[0-9a-f]+/, "", w)
					m = ""; r = ""; next }
				/^        replay: / { r = $0; sub(/^ *replay: /, "", r); next }
				/^        / && m == "" { m = $0; sub(/^ */, "", m); next }
				/^  [^ ]/ { flush() }
				END { flush() }' | while IFS=$'\t' read -r x rest; do
				printf '%d\t%s\n' $((16#$x)) "$rest"
			done | sort -n -k1,1 | head -1)
			break
		fi
		from=$((from + n))
		size=$((size == 1 ? 9 : size * 10))
	done
	runs="$failed of $tried runs failed ($(wc -w <<<"$run") scenarios, seeds 1-$last)"
	if [ -n "$first" ]; then
		IFS=$'\t' read -r fseed fwhy fmsg freplay <<<"$first"
		# The same run on the unpatched copy (its arguments and faults
		# too) must pass, or the failure is not the mutant's.
		if ! env ${faults:+"WEFT_SIM_FAULTS=$faults"} SEEDS=1 SEED_FROM="$fseed" \
			SIM="${fwhy%%:*}" SIM_ARGS="$args" "$base/mk/sim.sh" "$base/build/$target" >/dev/null 2>&1; then
			echo "  NOT THE MUTANT'S: seed $fseed of ${fwhy%%:*} fails unpatched too ($fwhy)"
			rows+=("| $name | $run | fails unpatched too: $fwhy, seed $fseed | - | 1-$last | - |")
			status=1
			continue
		fi
		echo "  FOUND  first at seed $fseed, $fwhy"
		[ -n "$fmsg" ] && echo "         $fmsg"
		echo "         $runs"
		echo "         replay: $freplay"
		# (the deadlock line's seed, steps and digest: in the replay)
		rows+=("| $name | $run | **found**: $fwhy${fmsg:+; ${fmsg%%: WEFT_SIM_SEED=*}} | $fseed | 1-$last | $failed of $tried |")
	else
		echo "  not found: $runs"
		rows+=("| $name | $run | not found | - | 1-$last | 0 of $tried |")
	fi
done

table=$(
	echo "| mutant | scenarios run | result | first failing seed | seeds tried | runs failed |"
	echo "|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
)
echo "== summary (commit $rev, sources as of $src; the unpatched copy: $basetally)"
echo "$table"
if [ $doc = 1 ]; then
	f=docs/simulation-evidence.md
	begin='<!-- sim-mutants table: begin -->'
	end='<!-- sim-mutants table: end -->'
	if ! grep -qxF "$begin" "$f" || ! grep -qxF "$end" "$f"; then
		echo "$0: $f has no table markers" >&2
		exit 1
	fi
	{
		echo "$begin"
		echo "Measured at commit $rev (the runtime, scenarios and mutants as of"
		echo "$src) by \`SEEDS=$seeds mk/sim-mutants.sh --doc\` (the unpatched"
		echo "copy: $basetally)."
		echo
		echo "$table"
		echo "$end"
	} >"$root/table.md"
	awk -v b="$begin" -v e="$end" -v t="$root/table.md" '
		$0 == b { while ((getline l < t) > 0) print l; skip = 1; next }
		$0 == e { skip = 0; next }
		!skip' "$f" >"$root/doc.md" && cp "$root/doc.md" "$f"
	echo "sim-mutants: wrote the table into $f"
fi
exit $status
