#!/usr/bin/env bash
# bench/scenarios --trace-shift: a trace replay starts S seconds later in the
# trace under its own name (a copy beside the run, the shipped file left
# alone), a generator member is run as it is, the report says so, and a
# shift that is not a number of seconds is refused before anything runs.
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
for bad in -5 abc 1.2.3 .; do
	if bench/scenarios --build "$build" --out "$tmp/c" --sets shipped --trace-shift "$bad" \
		>"$tmp/c.log" 2>&1; then fail "--trace-shift $bad accepted"; fi
	grep -q "trace-shift '$bad': expected seconds" "$tmp/c.log" || fail "--trace-shift $bad unnamed"
	[ -e "$tmp/c" ] && fail "--trace-shift $bad refused after it made $tmp/c"
done
echo "bench_trace_shift: ok"
