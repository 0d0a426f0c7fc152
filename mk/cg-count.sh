#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions and locked instructions per operation, from callgrind (no
# hardware counters needed, and no timing: a loaded machine gives the same
# figures).
#
#   mk/cg-count.sh BIN N1 N2 ARGS...
#
# runs BIN ARGS twice under callgrind, with @N in ARGS replaced by N1 and
# then N2, and prints the difference of the two runs divided by N2 - N1
# (start-up and tear-down cancel): instructions per operation, and
# executions per operation of the instructions `objdump -d` shows as atomic
# read-modify-writes (x86_64: `lock`-prefixed, `xchg` with memory,
# `cmpxchg`). Example, a channel round trip at one worker:
#
#   mk/cg-count.sh build/linux-x86_64/bench/micro 20000 40000 chan @N 1
set -eu
[ $# -ge 4 ] || { echo "usage: $0 BIN N1 N2 ARGS... (@N in ARGS is the count)" >&2; exit 2; }
for t in valgrind objdump nm python3; do
	command -v "$t" >/dev/null || { echo "$0: needs $t" >&2; exit 2; }
done
bin=$1 n1=$2 n2=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# count N: "INSTRUCTIONS LOCKED" of one run.
count()
{
	local args=("${@:2}")
	args=("${args[@]//@N/$1}")
	valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$tmp/out" \
		"$bin" "${args[@]}" >/dev/null 2>"$tmp/err" ||
		{ echo "$0: $bin ${args[*]} failed:" >&2; tail -5 "$tmp/err" >&2; exit 1; }
	python3 - "$tmp/out" "$bin" <<'PY'
import re, subprocess, sys
out, binp = sys.argv[1], sys.argv[2]
dis = subprocess.run(['objdump', '-d', '--no-show-raw-insn', binp],
                     capture_output=True, text=True, check=True).stdout
locked = set()
for l in dis.splitlines():
    m = re.match(r'\s*([0-9a-f]+):\t(\S+)\s*(.*)', l)
    if not m:
        continue
    op, args = m.group(2), m.group(3)
    if op == 'lock' or op.startswith('cmpxchg') or (op.startswith('xchg') and '(' in args):
        locked.add(int(m.group(1), 16))
syms = {}
for l in subprocess.run(['nm', binp], capture_output=True, text=True, check=True).stdout.splitlines():
    p = l.split()
    if len(p) == 3:
        syms[p[2]] = int(p[0], 16)
# callgrind's format: "fn=(id) name" / "cfn=(id) name" name a function the
# first time; cost lines are "ADDR LINE COST" with ADDR absolute (0x..),
# relative (+N, -N) or the same (*); the line after "calls=" is a call's
# inclusive cost, not an instruction's own.
names, cur, first, costs = {}, None, {}, []
last, skip, total = 0, False, 0
for line in open(out):
    if line.startswith(('fn=', 'cfn=')):
        m = re.match(r'c?fn=\((\d+)\)(?: (.*))?', line.strip())
        if m and m.group(2):
            names[m.group(1)] = m.group(2)
        if line.startswith('fn=') and m:
            cur = names.get(m.group(1))
        continue
    if line.startswith('calls='):
        skip = True
        continue
    if line.startswith('summary:'):
        total = int(line.split()[1])
        continue
    if not line or line[0] not in '0123456789+-*':
        continue
    p = line.split()
    t = p[0]
    try:
        a = int(t, 16) if t.startswith('0x') else last + int(t[1:], 0) if t[0] == '+' \
            else last - int(t[1:], 0) if t[0] == '-' else last if t == '*' else int(t)
    except ValueError:
        continue
    last = a
    if skip:
        skip = False
        continue
    if cur:
        first[cur] = min(first.get(cur, a), a)
    costs.append((a, int(p[-1])))
# The load bias: where a function of the binary starts against nm's address.
base = next((first[f] - syms[f] for f in ('main',) + tuple(first) if f in first and f in syms), None)
if base is None:
    sys.exit('cg-count: no function of the binary in the profile')
print(total, sum(c for a, c in costs if a - base in locked))
PY
}
read -r i1 l1 < <(count "$n1" "$@")
read -r i2 l2 < <(count "$n2" "$@")
awk -v i1="$i1" -v i2="$i2" -v l1="$l1" -v l2="$l2" -v d=$((n2 - n1)) \
	'BEGIN { printf "instructions/op %.1f  locked/op %.2f\n", (i2 - i1) / d, (l2 - l1) / d }'
