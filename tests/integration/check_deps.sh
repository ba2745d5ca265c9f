#!/usr/bin/env bash
# tools/check-deps must refuse each kind of violation DEPS and its header
# describe, planted in a copy of the tree's sources, and accept the copy
# unchanged: a forbidden include, a cycle between two modules (and one
# through a header's second .c file), an #include of
# a .c file, a source no CMakeLists.txt lists, and a stale DEPS.known line.
set -euo pipefail
src=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The sources, headers, CMake lists and the rule files; no build folders.
(cd "$src" && find . \( -name 'build*' -o -name .git -o -name 'obj-*' -o -name debian -o -name out \) -prune -o \
	\( -name '*.c' -o -name '*.h' -o -name CMakeLists.txt -o -name DEPS -o -name DEPS.known \) -print0 |
	tar --null -T - -cf -) | (mkdir "$work/tree" && tar -xf - -C "$work/tree")
chk() { python3 "$src/tools/check-deps" --root "$work/tree"; }
fail() { echo "FAIL: $*"; exit 1; }

chk >"$work/clean.log" || { cat "$work/clean.log"; fail "the unchanged copy is refused"; }
echo "clean copy: $(tail -1 "$work/clean.log")"

expect() { # what message-regex
	if chk >"$work/out.log" 2>&1; then cat "$work/out.log"; fail "$1 accepted"; fi
	grep -Eq "$2" "$work/out.log" || { cat "$work/out.log"; fail "$1: no message matching '$2'"; }
	echo "refused: $1: $(grep -E "$2" "$work/out.log" | head -1)"
}

t=$work/tree
cp "$t/common/strjoin.c" "$work/strjoin.c"
echo '#include "hal/hal.h"' >>"$t/common/strjoin.c"
expect "common/ including hal/" "common/strjoin.c:[0-9]+: includes hal/hal.h: 'common' may include only common"
cp "$work/strjoin.c" "$t/common/strjoin.c"

cp "$t/common/rng.c" "$work/rng.c"; cp "$t/common/hist.c" "$work/hist.c"
echo '#include "common/hist.h"' >>"$t/common/rng.c"
echo '#include "common/rng.h"' >>"$t/common/hist.c"
expect "a two-module cycle" "include cycle: common/hist -> common/rng -> common/hist"
cp "$work/rng.c" "$t/common/rng.c"; cp "$work/hist.c" "$t/common/hist.c"

# A module is a header with every .c of its folder that implements it: a
# second file of report.h's (report_render.c) including a header whose .c
# includes report.h is a cycle, though no report.c exists to carry it.
cp "$t/report/report_render.c" "$work/report_render.c"
printf '#pragma once\nint planted_fmt(void);\n' >"$t/report/planted_fmt.h"
printf '#include "report/planted_fmt.h"\n#include "report/report.h"\nint planted_fmt(void) { return 0; }\n' >"$t/report/planted_fmt.c"
echo 'planted_fmt.c' >>"$t/report/CMakeLists.txt"
echo '#include "report/planted_fmt.h"' >>"$t/report/report_render.c"
expect "a cycle through a header's second .c file" "include cycle: report/(planted_fmt -> report/report|report -> report/planted_fmt)"
cp "$work/report_render.c" "$t/report/report_render.c"
rm "$t/report/planted_fmt.h" "$t/report/planted_fmt.c"
sed -i '$d' "$t/report/CMakeLists.txt"
chk >/dev/null || fail "the copy is not clean again after the module case"

echo '#include "common/rng.c"' >>"$t/common/strjoin.c"
expect "an #include of a .c file" "common/strjoin.c:[0-9]+: includes the source file common/rng.c"
cp "$work/strjoin.c" "$t/common/strjoin.c"

echo 'int planted_unlisted(void);' >"$t/common/planted_unlisted.c"
expect "a source no CMakeLists.txt lists" "common/planted_unlisted.c:1: no CMakeLists.txt lists this source"
rm "$t/common/planted_unlisted.c"

echo 'common/x.c:1: a finding that is gone' >>"$t/DEPS.known"
expect "a stale DEPS.known line" "DEPS.known: no longer found"
echo "check-deps refuses every planted violation"
