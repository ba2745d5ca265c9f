#!/usr/bin/env bash
# bench/scenarios --trace-shift: a trace replay starts S seconds later in the
# trace under its own name (a copy beside the run, the shipped file left
# alone), a generator member is run as it is, the report says so, and a
# shift that is not a number of seconds is refused before anything runs;
# a list of shifts runs each under shift-S and sums them up in shifts.md.
# Reduced: two shipped scenarios and a replay without a start offset, 120 s
# each. $1: build dir.
set -euo pipefail
build=$1
if [ ! -f "${GOVD_SHARED_DATA:-/nonexistent}/AzureLLMInferenceTrace2023_code.csv" ]; then
	echo "SKIP: the Azure code trace is not in GOVD_SHARED_DATA (the replay needs it)"
	exit 77
fi
tmp=$(mktemp -d /tmp/govd-tshift-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
sed '/start_offset_s/d; s/^name: azure-code-30c$/name: azure-nooff/; s/^  kind: trace$/  kind: trace  # replay/' \
	configs/scenarios/azure-code-30c.yaml >"$tmp/azure-nooff.yaml"
run() { # OUT [--trace-shift S]
	bench/scenarios --build "$build" --out "$1" --sets shipped \
		--scenarios configs/scenarios/azure-code-30c.yaml,configs/scenarios/default.yaml,"$tmp/azure-nooff.yaml" \
		--duration 120 --policies policies/baselines/firmware-default.yaml,policies/bf16-only.yaml \
		--candidate bf16-only -j 2 "${@:2}" >"$1.log" 2>&1 || { cat "$1.log" >&2; fail "bench/scenarios $*"; }
}
sum=$(md5sum configs/scenarios/azure-code-30c.yaml)
run "$tmp/a"
run "$tmp/b" --trace-shift 30
echo "$sum" | md5sum -c --quiet - || fail "the shipped scenario file was modified"
copy=$tmp/b/shifted-shipped/azure-code-30c.yaml
[ -f "$copy" ] || fail "no shifted copy of the trace scenario"
grep -qE "^  start_offset_s: 30.0$" "$copy" || fail "the copy does not start 30 s in"
grep -qE "^name: azure-code-30c$" "$copy" || fail "the copy was renamed"
[ -e "$tmp/b/shifted-shipped/default.yaml" ] && fail "a generator scenario was copied"
grep -qE "^  start_offset_s: 30.0$" "$tmp/b/shifted-shipped/azure-nooff.yaml" ||
	fail "a replay without start_offset_s did not get one"
grep -q "every trace replay started 30 s later in the trace" "$tmp/b/scenarios.md" ||
	fail "the report does not say the replays were shifted"
grep -q "later in the trace" "$tmp/a/scenarios.md" && fail "an unshifted report says shifted"
# the replay's firmware run sees other arrivals; the generator's is the same run
tokens() { python3 -c 'import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
print([r["tokens_per_joule"] for r in rows if r["scenario"] == sys.argv[2] and r["policy"] == "firmware-default"][0])' "$1/shipped/compare.json" "$2"; }
[ "$(tokens "$tmp/a" azure-code-30c)" != "$(tokens "$tmp/b" azure-code-30c)" ] ||
	fail "the shifted replay ran the same arrivals"
[ "$(tokens "$tmp/a" default)" = "$(tokens "$tmp/b" default)" ] || fail "the generator member moved"
# A shift of 0 is the replays as they are: no copy, the report unmarked.
run "$tmp/z" --trace-shift 0.0
[ -e "$tmp/z/shifted-shipped" ] && fail "a 0 s shift copied the replays"
grep -q "later in the trace" "$tmp/z/scenarios.md" && fail "a 0 s shift's report says shifted"
[ "$(tokens "$tmp/z" azure-code-30c)" = "$(tokens "$tmp/a" azure-code-30c)" ] || fail "a 0 s shift moved the replay"
# Several shifts: one run each under shift-S (0 unshifted), then shifts.md.
run "$tmp/m" --trace-shift 0,30
[ -e "$tmp/m/shift-0/shifted-shipped" ] && fail "the 0 s run copied the replays"
for sh in 0 30; do
	[ "$(tokens "$tmp/m/shift-$sh" azure-code-30c)" = "$(tokens "$tmp/$([ $sh = 0 ] && echo a || echo b)" azure-code-30c)" ] ||
		fail "the $sh s run of a list differs from the single run"
done
grep -qE "^\| shipped \| 30 \| [0-9.]+ \| [0-9.]+ \| [0-9]+/[0-9]+ \| [0-9]+ \|$" "$tmp/m/shifts.md" ||
	fail "shifts.md has no row for the 30 s shift"
python3 - "$tmp/m" <<'PY' || fail "shifts.md's last row is not the mean and sum of the shifts"
import json, re, sys
rows = lambda sh: [r for r in json.load(open(f"{sys.argv[1]}/shift-{sh}/shipped/compare.json"))["rows"]
                   if r["policy"] == "bf16-only"]
b16 = [sum(r["pct_of_oracle_bf16"] for r in rows(sh)) / len(rows(sh)) for sh in (0, 30)]
met = sum(r["windows_feasible_met"] for sh in (0, 30) for r in rows(sh))
busy = sum(r["windows_feasible_busy"] for sh in (0, 30) for r in rows(sh))
m = re.search(r"^\| shipped \| \*\*all 2\*\* \| \*\*([0-9.]+)\*\* \|.*\*\*(\d+)/(\d+)\*\*", open(f"{sys.argv[1]}/shifts.md").read(), re.M)
assert m and abs(float(m.group(1)) - sum(b16) / 2) < 0.006 and (int(m.group(2)), int(m.group(3))) == (met, busy), m
PY
for bad in -5 abc 1.2.3 . 0,,30 30,30 ,30 0,abc 15,15.0; do
	if bench/scenarios --build "$build" --out "$tmp/c" --sets shipped --trace-shift "$bad" \
		>"$tmp/c.log" 2>&1; then fail "--trace-shift $bad accepted"; fi
	grep -qE "trace-shift '$bad': (expected seconds|.* twice)" "$tmp/c.log" || fail "--trace-shift $bad unnamed"
	[ -e "$tmp/c" ] && fail "--trace-shift $bad refused after it made $tmp/c"
done
echo "bench_trace_shift: ok"
