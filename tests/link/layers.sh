#!/bin/bash
# SPDX-License-Identifier: MIT
# runtime/'s files and who calls whom (issue 15, item 4): the files that
# call each other in a circle, found from the objects' symbols (nm), must be
# exactly the scheduler's core below, and the processes' two files. A new
# circle (the fiber core calling local storage, generators, mailboxes or
# supervisors directly again, say) fails here; docs/architecture.md's
# "How runtime/'s files depend on each other" says why these are allowed.
#
# Usage: tests/link/layers.sh BUILD_DIR   (objects in BUILD_DIR/obj/runtime)
set -u
dir=${1:?usage: tests/link/layers.sh BUILD_DIR}/obj/runtime
want_core="idle interrupt live park reactor sched time timer waiter"
want_other="mailbox step"
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "  ok: $1"; }
bad() { failed=$((failed + 1)); echo "  FAIL: $1"; }

objs=$(ls "$dir"/*.c.o 2>/dev/null) || true
if [ -z "$objs" ]; then
	echo "layers: no objects in $dir (build first)" >&2
	exit 2
fi
# "file D sym" for each global symbol a file defines, "file U sym" for each
# it uses; then file -> file edges, and the circles from their closure.
circles=$(for o in $objs; do
	f=$(basename "$o" .c.o)
	nm "$o" | awk -v f="$f" '$1 == "U" { print f, "U", $2 } NF == 3 && $2 ~ /[TDBRC]/ { print f, "D", $3 }'
done | awk '
	$2 == "D" { owner[$3] = $1; files[$1] = 1 }
	$2 == "U" { use[++n] = $1 " " $3; files[$1] = 1 }
	END {
		for (i = 1; i <= n; i++) {
			split(use[i], p, " ")
			if ((p[2] in owner) && owner[p[2]] != p[1]) r[p[1], owner[p[2]]] = 1
		}
		for (k in files) for (i in files) if (r[i, k]) for (j in files) if (r[k, j]) r[i, j] = 1
		for (i in files) {
			line = ""
			for (j in files) if (i != j && r[i, j] && r[j, i]) line = line " " j
			if (line != "") print i line
		}
	}' | while read -r first rest; do
	echo "$first $rest" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//'
	echo
done | sort -u)

core=$(echo "$circles" | grep -w sched || true)
if [ "$core" = "$want_core" ]; then
	ok "the scheduler's circle is its core: $want_core"
else
	bad "the scheduler's circle is '$core', not '$want_core'"
fi
others=$(echo "$circles" | grep -vw sched | grep . || true)
if [ "$others" = "$want_other" ]; then
	ok "the only other circle is the processes': $want_other"
else
	bad "other circles: '$(echo "$others" | tr '\n' ';')', want '$want_other'"
fi
if echo "$circles" | grep -qw fiber; then
	bad "fiber.c is in a circle"
else
	ok "fiber.c calls the fiber context through a table, in no circle"
fi
echo "layers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
