#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# docs/api.md against the header it documents: for each call in api.md's
# table of weft_net.h's calls ("| `weft_x(...)` | returns |"), the negative
# errno values the row names must be the ones the header's comment above
# that call names, no more and no fewer. The comment is the contract; a
# code added to one and not the other fails here.
# Every WEFT_API function of include/*.h is named in api.md; its table of
# contents and weft_net.h's prototypes there are what mk/apidoc-gen.sh
# writes from the headings and the header. (weft.h's calls are documented
# in prose and tables of other shapes: their codes are not compared yet.)
# Last line: "apidoc: N passed, M failed".
# Usage: tests/link/apidoc.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { echo "  ok: $1"; passed=$((passed + 1)); }
bad() { echo "  FAIL: $1"; failed=$((failed + 1)); }

# NAME: the -E codes of the comment right above its WEFT_API line (a
# comment may serve several declarations that follow it).
awk '
function codes(s,   out) {
	out = ""
	while (match(s, /-E[A-Z0-9]+/)) {
		out = out " " substr(s, RSTART + 1, RLENGTH - 1)
		s = substr(s, RSTART + RLENGTH)
	}
	return out
}
/^\/\*/ { cm = ""; incm = 1 }
incm { cm = cm " " $0; if ($0 ~ /\*\//) { incm = 0; valid = 1 }; next }
/^WEFT_API/ {
	if (match($0, /weft_[a-z0-9_]+\(/))
		print substr($0, RSTART, RLENGTH - 1) ":" (valid ? codes(cm) : "")
	next
}
/^[ \t]/ { next }
{ valid = 0 }
' include/weft_net.h >"$tmp/hdr"

# The rows of api.md's table of weft_net.h's calls: every name in the
# first cell (weft_sock_local / weft_sock_peer share a row).
awk '
function codes(s,   out) {
	out = ""
	while (match(s, /-E[A-Z0-9]+/)) {
		out = out " " substr(s, RSTART + 1, RLENGTH - 1)
		s = substr(s, RSTART + RLENGTH)
	}
	return out
}
/^\| call \| returns \|$/ { on = 1; next }
on && !/^\|/ { on = 0 }
on && /^\| `weft_/ {
	n = split($0, cell, "|")
	first = cell[2]; rest = ""
	for (i = 3; i <= n; i++) rest = rest "|" cell[i]
	c = codes(rest) # (match() in codes() sets RSTART and RLENGTH)
	while (match(first, /weft_[a-z0-9_]+/)) {
		print substr(first, RSTART, RLENGTH) ":" c
		first = substr(first, RSTART + RLENGTH)
	}
}
' docs/api.md >"$tmp/doc"

sorted() { tr ' ' '\n' | grep . | sort -u | tr '\n' ' '; }
ndoc=$(wc -l <"$tmp/doc")
if [ "$ndoc" -lt 10 ]; then
	bad "api.md's table of weft_net.h's calls not found ($ndoc rows)"
fi
while IFS=: read -r name dcodes; do
	if ! grep -q "^$name:" "$tmp/hdr"; then
		bad "$name: in api.md's table, not declared in include/weft_net.h"
		continue
	fi
	hcodes=$(grep "^$name:" "$tmp/hdr" | head -1 | cut -d: -f2)
	d=$(echo "$dcodes" | sorted) h=$(echo "$hcodes" | sorted)
	if [ "$d" = "$h" ]; then
		ok "$name: ${h:-no error codes}"
	else
		bad "$name: weft_net.h says '${h% }', docs/api.md says '${d% }'"
	fi
done <"$tmp/doc"
# Every call with error codes in the header has its row.
while IFS=: read -r name hcodes; do
	[ -n "${hcodes// /}" ] || continue
	grep -q "^$name:" "$tmp/doc" || bad "$name: declared with error codes, but no row in api.md's table"
done <"$tmp/hdr"
# Every public function is documented (named) on the page.
sed -n 's/^WEFT_API [^(]*[ *]\(weft_[a-z0-9_]*\)(.*/\1/p' include/*.h | sort -u >"$tmp/api"
undoc=$(while read -r f; do grep -q "\b$f\b" docs/api.md || echo "$f"; done <"$tmp/api")
if [ -z "$undoc" ]; then
	ok "every one of the $(wc -l <"$tmp/api") WEFT_API functions is named in api.md"
else
	bad "WEFT_API functions api.md never names: $(echo "$undoc" | tr '\n' ' ')"
fi
# The generated parts are current: the generator changes nothing.
cp docs/api.md "$tmp/api.md"
if mk/apidoc-gen.sh "$tmp/api.md" && diff -u docs/api.md "$tmp/api.md" >"$tmp/gen.diff"; then
	ok "api.md's table of contents and weft_net.h prototypes are current (mk/apidoc-gen.sh)"
else
	bad "api.md's table of contents or prototypes are stale: run mk/apidoc-gen.sh"
	head -12 "$tmp/gen.diff"
fi
echo "apidoc: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
