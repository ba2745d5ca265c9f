#!/usr/bin/env bash
# govctl plant (docs/plant-models.md, "The plant's predictions"): the CSV
# interface scripts depend on (columns, one row per clock / limit, power_w
# the sum of the rails, j_per_token = power_w / tokens_per_s), the shape it
# must show (decode energy lowest at an interior clock; under a power limit
# the clock the firmware settles at), the table, the gnuplot SVG, and bad
# input: unknown preset / model list the known ones, out-of-range values
# name the range, exit 2. $1: the build directory.
set -euo pipefail
build=${1:?usage: plant_cli.sh BUILD_DIR}
govctl=${GOVCTL:-$build/govctl}
[ -x "$govctl" ] || { echo "skip: $govctl not built"; exit 77; }
tmp=$(mktemp -d /tmp/govd-plant-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; for f in "$tmp"/out "$tmp"/err; do [ -f "$f" ] && sed 's/^/  | /' "$f" >&2; done; exit 1; }
run() { # run WANT_RC ARGS...: stdout in $tmp/out, stderr in $tmp/err
	local want=$1; shift
	set +e
	"$govctl" plant "$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	set -e
	[ "$rc" = "$want" ] || fail "govctl plant $* exited $rc, want $want"
}
base=(--preset h200-sxm --model llama-3.1-8b --phase decode --batch 32)

# CSV: the required columns, in order, and one row per table clock.
run 0 "${base[@]}" --clocks all --csv
head -1 "$tmp/out" | grep -q '^clock_mhz,power_limit_w,phase,batch,step_ms,tokens_per_s,power_accel_w,power_memory_w,power_host_w,power_w,j_per_token' \
	|| fail "CSV header"
rows=$(($(wc -l <"$tmp/out") - 1))
[ "$rows" = 110 ] || fail "--clocks all gave $rows rows, want 110 (345..1980 in 15 MHz steps)"
awk -F, 'NR > 1 {
	if ($3 != "decode" || $4 != 32) { print "phase/batch column: " $0; bad = 1 }
	s = $7 + $8 + $9; if (s - $10 > 0.02 || $10 - s > 0.02) { print "power_w not the sum: " $0; bad = 1 }
	j = $10 / $6; if (j / $11 > 1.001 || j / $11 < 0.999) { print "j_per_token: " $0; bad = 1 }
	if (NR == 2 || $11 < best) { best = $11; at = $1 }
	if (NR == 2) first = $11; last = $11
} END {
	# Interior minimum: both ends cost more energy per token.
	if (!(best < first && best < last && at > 345 && at < 1980)) { print "no interior minimum: " at; bad = 1 }
	printf "decode batch 32: energy lowest at %d MHz (%.4f J/token; 345 MHz %.4f, 1980 MHz %.4f)\n", at, best, first, last
	exit bad }' "$tmp/out" || fail "CSV values"

# Listed clocks and power limits: under a limit the clock is where the firmware settles.
run 0 --preset h200-sxm --model llama-3.1-8b --phase prefill --batch 1 --prompt 2048 --power-limits 700,400 --csv
[ "$(wc -l <"$tmp/out")" = 3 ] || fail "two limits, two rows"
awk -F, 'NR == 2 { c7 = $1; p7 = $7 } NR == 3 { c4 = $1; p4 = $7; l4 = $2 }
	END { if (!(c4 < c7 && p4 <= l4 + 0.5 && l4 == 400)) { print "limit 400: clock " c4 " power " p4; exit 1 } }' \
	"$tmp/out" || fail "power limit rows"
run 0 --preset a100-sxm --model resnet50 --precision int8 --phase prefill --batch 256 --clocks 1410,1005
[ "$(grep -c '^ *1[04][01][05] ' "$tmp/out")" = 2 ] || fail "table rows"
grep -q '^# simulated' "$tmp/out" || fail "table says it is simulated"

# The plot: an SVG from gnuplot.
if command -v gnuplot >/dev/null; then
	run 0 "${base[@]}" --clocks all --plot "$tmp/p.svg"
	grep -q '<svg' "$tmp/p.svg" || fail "no SVG written"
	grep -q 'simulated' "$tmp/p.svg" || fail "the plot does not say simulated"
	run 1 "${base[@]}" --clocks all --plot "$tmp/no/such/dir/p.svg"
	grep -q 'p.svg: cannot create: No such file or directory' "$tmp/err" || fail "unwritable plot path"
else
	echo "SKIP plot part: gnuplot not installed"
	skipped="the plot part (gnuplot not installed)"
fi

# Bad input: named, listed, exit 2.
run 2 --preset nosuch --model llama-3.1-8b --phase decode --batch 1 --clocks all
grep -q "unknown preset 'nosuch'; known: h200-sxm, h100-sxm, a100-sxm" "$tmp/err" || fail "preset list"
run 2 --preset h200-sxm --model nosuch --phase decode --batch 1 --clocks all
grep -q "unknown model 'nosuch'; known: llama-3.1-8b" "$tmp/err" || fail "model list"
run 2 "${base[@]}" --clocks 100
grep -q "outside h200-sxm's table 345..1980 MHz" "$tmp/err" || fail "clock range"
run 2 "${base[@]}" --power-limits 900
grep -q "range 200..700 W" "$tmp/err" || fail "limit range"
run 2 "${base[@]}" --clocks 1980,abc
grep -q "'abc' is not a positive number" "$tmp/err" || fail "junk in list"
run 2 "${base[@]}" --clocks all --power-limits 700
run 2 --preset h200-sxm --model llama-3.1-8b --phase sideways --batch 1 --clocks all
run 2 --preset h200-sxm --model llama-3.1-8b --precision fp4 --phase decode --batch 1 --clocks all
run 2 --preset h200-sxm --model llama-3.1-8b --phase decode --batch 0 --clocks all
run 2 --preset h200-sxm --model llama-3.1-8b --phase decode --batch 512 --context 100000 --clocks all
grep -q "need .* GB; h200-sxm has 126.9 GB usable" "$tmp/err" || fail "KV does not fit"
run 0 --help
grep -q -- "--power-limits" "$tmp/out" || fail "--help"
# A part not run is not a pass: every other check passed, so exit 77 saying which.
[ -z "${skipped:-}" ] || { echo "plant_cli: SKIP: $skipped not run; every other check passed"; exit 77; }
echo "plant_cli: ok"
