#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Writes the parts of docs/api.md that come from elsewhere, between their
# markers: the table of contents (its ## and ### headings, as links) and
# the prototypes of include/weft_net.h's calls (its WEFT_API declarations,
# as the header spells them). tests/link/apidoc.sh fails when running this
# would change the page.
# Usage: mk/apidoc-gen.sh [PAGE] (default docs/api.md; rewritten in place)
set -eu
cd "$(dirname "$0")/.."
page=${1:-docs/api.md}
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.protos"' EXIT
# The declarations, WEFT_API dropped, each whole (some span lines).
awk '/^WEFT_API/ { p = 1; s = "" }
	p { sub(/^WEFT_API /, ""); s = s $0 "\n" }
	p && /;/ { printf "%s", s; p = 0 }' include/weft_net.h >"$tmp.protos"
awk -v protos="$tmp.protos" '
# GitHub'"'"'s anchor for a heading: lower case, only letters, digits, "-",
# "_" and spaces kept, spaces made "-", a repeat numbered.
function anchor(h,   a) {
	a = tolower(h)
	gsub(/[^a-z0-9 _-]/, "", a)
	gsub(/ /, "-", a)
	if (a in seen) { seen[a]++; a = a "-" seen[a] } else seen[a] = 0
	return a
}
# First pass: the headings outside code blocks.
FNR == NR {
	if ($0 ~ /^```/) fence = !fence
	else if (!fence && $0 ~ /^###? /) {
		n++
		level[n] = ($0 ~ /^### /) ? 2 : 1
		title[n] = $0
		sub(/^###? /, "", title[n])
		link[n] = anchor(title[n])
	}
	next
}
/^<!-- toc: / {
	print
	for (i = 1; i <= n; i++)
		printf "%s- [%s](#%s)\n", (level[i] == 2 ? "  " : ""), title[i], link[i]
	skip = 1
	next
}
/^<!-- prototypes of weft_net.h: / {
	print
	print "```c"
	while ((getline l < protos) > 0) print l
	print "```"
	skip = 1
	next
}
/^<!-- \/(toc|prototypes) -->/ { skip = 0 }
!skip { print }
' "$page" "$page" >"$tmp"
cp "$tmp" "$page"
