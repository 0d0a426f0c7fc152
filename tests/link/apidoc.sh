#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# docs/api.md against the header it documents: for each call in api.md's
# table of weft_net.h's calls ("| `weft_x(...)` | returns |"), the negative
# errno values the row names must be the ones the header's comment above
# that call names, no more and no fewer. The comment is the contract; a
# code added to one and not the other fails here.
# Every WEFT_API function of include/*.h is named in api.md; its table of
# contents and weft_net.h's prototypes there are what mk/apidoc-gen.sh
# writes from the headings and the header.
# weft.h's calls likewise, where both sides say it in a shape this reads:
# the header's comment serves that declaration alone and says "Returns"
# (the codes from there on), and api.md gives the call a "| Returns | When |"
# table in the paragraphs that **`weft_x`** opens, or a row of a
# "| Function | Returns |" table. The calls of other shapes (a comment over
# several, prose only) are counted as not compared, never passed.
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
# ---- weft.h ----------------------------------------------------------------
awk '
# NAME: the -E codes of the comment right above it, from the comment'"'"'s
# first "returns" on, for each WEFT_API declaration that comment serves
# alone (a comment over several is ambiguous: left out).
function codes(s,   out) {
	out = ""
	while (match(s, /-E[A-Z0-9]+/)) {
		out = out " " substr(s, RSTART + 1, RLENGTH - 1)
		s = substr(s, RSTART + RLENGTH)
	}
	return out
}
function returns(s,   i) {
	i = index(s, "Returns")
	if (!i)
		i = index(s, "returns")
	return i ? substr(s, i) : ""
}
function flush() {
	if (ndecl == 1 && has) print decl ":" codes(returns(cm))
	ndecl = 0; has = 0
}
/^\/\*/ { flush(); cm = ""; incm = 1 }
incm { cm = cm " " $0; if ($0 ~ /\*\//) { incm = 0; valid = 1 }; next }
/^WEFT_API/ {
	if (valid && match($0, /weft_[a-z0-9_]+\(/)) {
		ndecl++; decl = substr($0, RSTART, RLENGTH - 1)
		has = returns(cm) != ""
	}
	next
}
/^[ \t]/ { next }
/^#define/ { next }
{ flush(); valid = 0 }
END { flush() }
' include/weft.h >"$tmp/hdr1"
awk '
# NAME: the -E codes api.md gives as its results: the first cells of the
# "| Returns | When |" tables in the paragraph block that a line starting
# with **`NAME`** (that one call alone) opens, or its row of a
# "| Function | Returns |" table.
function codes(s,   out) {
	out = ""
	while (match(s, /-E[A-Z0-9]+/)) {
		out = out " " substr(s, RSTART + 1, RLENGTH - 1)
		s = substr(s, RSTART + RLENGTH)
	}
	return out
}
function flush() {
	if (cur != "" && ntab) print cur ":" got
	cur = ""; got = ""; ntab = 0
}
/^```/ { fence = !fence; next }
fence { next }
/^#/ { flush(); tab = ""; next }
/^\*\*`weft_[a-z0-9_]+`\*\*/ {
	flush()
	match($0, /^\*\*`weft_[a-z0-9_]+`\*\*/)
	cur = substr($0, 4, RLENGTH - 6)
	rest = substr($0, RLENGTH + 1)
	if (rest ~ /^ *\/ *\*\*`/ || rest ~ /^ *(,|and) *\*\*`/) cur = ""  # shared lead
	next
}
/^\| Returns \| When \|/ { tab = "returns"; ntab++; next }
/^\| Function \| Returns \|/ { tab = "rows"; next }
!/^\|/ { tab = ""; next }
tab == "returns" { split($0, cell, "|"); got = got codes(cell[2]); next }
tab == "rows" && /^\| `weft_[a-z0-9_]+` \|/ {
	n = split($0, cell, "|"); rest = ""
	for (i = 3; i <= n; i++) rest = rest "|" cell[i]
	c = codes(rest)
	match(cell[2], /weft_[a-z0-9_]+/)
	print substr(cell[2], RSTART, RLENGTH) ":" c
}
END { flush() }
' docs/api.md >"$tmp/doc1"
compared=0 uncompared=0
while IFS=: read -r name hcodes; do
	if ! grep -q "^$name:" "$tmp/doc1"; then
		uncompared=$((uncompared + 1))
		continue
	fi
	compared=$((compared + 1))
	h=$(echo "$hcodes" | sorted)
	d=$(grep "^$name:" "$tmp/doc1" | cut -d: -f2 | sorted)
	if [ "$d" = "$h" ]; then
		ok "$name: ${h:-no error codes}"
	else
		bad "$name: weft.h says '${h% }', docs/api.md says '${d% }'"
	fi
done <"$tmp/hdr1"
if [ "$compared" -lt 20 ]; then
	bad "only $compared of weft.h's calls compared with api.md: a parser lost its shape"
fi
echo "  weft.h: $compared calls compared, $uncompared not (shapes this does not read)"
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
