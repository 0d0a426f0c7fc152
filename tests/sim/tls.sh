#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every _Thread_local of runtime/ and net/ is per actor under a simulation
# (docs/decisions/simulation.md, "Slice 2, as built"): runtime/sim.c names
# each one it carries on its "Carried per actor:" line. A new one that line
# does not name fails here: the actors share one OS thread, so it would be
# shared by every worker and thread the simulation runs.
# Usage: tests/sim/tls.sh
set -eu
cd "$(dirname "$0")/../.."
carried=$(sed -n '/Carried per actor:/{s/^.*Carried per actor: *//; s/ *\*\/.*$//; p; q}' runtime/sim.c)
[ -n "$carried" ] || { echo "tls: no \"Carried per actor:\" line in runtime/sim.c" >&2; exit 1; }
bad=0
n=0
ok=0
# Each declaration's name: the identifier before its initializer or ';'.
while IFS=: read -r file line text; do
	name=$(printf '%s\n' "$text" | sed -E 's/[[:space:]]*(=.*)?;.*$//; s/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)$/\1/')
	n=$((n + 1))
	if [[ " $carried " != *" $name "* ]]; then
		echo "tls: $file:$line: _Thread_local $name is not carried per actor by runtime/sim.c"
		bad=$((bad + 1))
	else
		ok=$((ok + 1))
	fi
done < <(grep -rn --include='*.c' --include='*.h' '_Thread_local' runtime net |
	grep -v '^runtime/sim\.[ch]:' | grep -v '^[^:]*:[0-9]*:[[:space:]]*\(/\*\|\*\)')
echo "tls: $n _Thread_local declarations, carried: $carried"
echo "sim tls: $ok passed, $bad failed"
[ "$bad" = 0 ]
