#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks or applies .clang-format to the tracked C sources (*.c, *.h).
#
# Usage
#   mk/format.sh check [PATH...]     Exit 1 and print each differing file's diff
#                                    (then the list) if clang-format would change it.
#   mk/format.sh fix [PATH...]       Reformat those files in place.
#   mk/format.sh stat [PATH...]      Changed lines per differing file, then the total.
#
# PATHs (files or folders) narrow the set to the tracked *.c/*.h under them;
# without any, every tracked *.c/*.h. CLANG_FORMAT names the binary (default
# clang-format). .clang-format is tuned to clang-format 14 (Debian 12's); other
# versions may format some lines differently.

set -euo pipefail
cd "$(dirname "$0")/.."

CF=${CLANG_FORMAT:-clang-format}

usage() {
	sed -n '/^# Usage/,/^# PATHs/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

mode=${1:-}
case "$mode" in check|fix|stat) shift ;; *) usage ;; esac

if ! command -v "$CF" >/dev/null 2>&1; then
	echo "format: $CF not found. Install it with 'mk/deps.sh host' (Debian package" \
		"clang-format: apt-get install clang-format), or set CLANG_FORMAT=/path/to/clang-format." >&2
	exit 2
fi
ver=$("$CF" --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
if [ "$ver" != 14 ]; then
	echo "format: note: $CF is version ${ver:-unknown}; .clang-format is tuned to clang-format 14," \
		"so a few lines may differ." >&2
fi

mapfile -t files < <(git ls-files -- "$@" | grep -E '\.[ch]$' || true)
[ "${#files[@]}" -gt 0 ] || { echo "format: no tracked .c/.h files under: ${*:-.}" >&2; exit 2; }

if [ "$mode" = fix ]; then
	"$CF" --style=file -i "${files[@]}"
	exit 0
fi

differ=()
total=0
for f in "${files[@]}"; do
	if d=$("$CF" --style=file "$f" | diff -u --label "a/$f" --label "b/$f" "$f" -); then
		continue
	fi
	differ+=("$f")
	if [ "$mode" = check ]; then
		printf '%s\n' "$d"
	else
		n=$(printf '%s\n' "$d" | tail -n +3 | grep -c '^[-+]' || true)
		total=$((total + n))
		printf '%6d %s\n' "$n" "$f"
	fi
done

if [ "$mode" = stat ]; then
	printf '%6d total changed lines in %d of %d files\n' "$total" "${#differ[@]}" "${#files[@]}"
	exit 0
fi
if [ "${#differ[@]}" -gt 0 ]; then
	echo "format: ${#differ[@]} file(s) differ from .clang-format (mk/format.sh fix PATH... reformats them):" >&2
	printf '  %s\n' "${differ[@]}" >&2
	echo "format: 0 passed, 1 failed (${#differ[@]} of ${#files[@]} files differ)"
	exit 1
fi
echo "format: ${#files[@]} files match .clang-format"
echo "format: 1 passed, 0 failed"
