#!/usr/bin/env bash
# tools/check-size: the tree has no function over 150 lines outside tests/,
# and a planted one of 151 lines (in a scratch git repository) is refused
# while 150 pass, so the check can fail.
set -euo pipefail
tools/check-size
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$tmp" init -q
plant() { # LINES: a function whose braces span LINES lines
	{
		echo "int planted(int x)"
		echo "{"
		for _ in $(seq $(($1 - 2))); do echo "	x++;"; done
		echo "}"
	} >"$tmp/planted.c"
	git -C "$tmp" add planted.c
}
plant 150
python3 tools/check-size --root "$tmp" >/dev/null || { echo "FAIL: a 150-line function refused"; exit 1; }
plant 151
if python3 tools/check-size --root "$tmp" >"$tmp/out"; then echo "FAIL: a 151-line function passed"; exit 1; fi
grep -q "planted.c:1: planted is 151 lines" "$tmp/out" || { cat "$tmp/out"; exit 1; }
echo "check_size: the tree passes; a planted 151-line function is refused"
