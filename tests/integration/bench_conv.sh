#!/usr/bin/env bash
# bench/scenarios --sets conv: the Azure conversation trace's members (seven
# time scales from three offsets, named by both) read the trace where
# $GOVD_SHARED_DATA holds it, run and are reported as their own set; and
# without the trace the set stops before anything runs, naming
# tools/fetch-traces. Reduced: a generated trace in the trace's format (the
# real one is not in the shared data), 60 s runs. $1: build dir.
set -euo pipefail
build=$1
tmp=$(mktemp -d /tmp/govd-conv-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$tmp/data" "$tmp/empty"
# 3000 requests over 600 s, lengths like the conversation trace's
python3 - "$tmp/data/AzureLLMInferenceTrace2023_conv.csv" <<'PY'
import datetime, random, sys
rng = random.Random(1)
t = datetime.datetime(2023, 11, 16, 18, 15, 46)
with open(sys.argv[1], "w") as f:
    f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    for i in range(3000):
        t += datetime.timedelta(seconds=rng.expovariate(5.0))
        f.write("%s,%d,%d\n" % (t.strftime("%Y-%m-%d %H:%M:%S.%f0"), rng.randint(50, 3000), rng.randint(5, 500)))
PY
GOVD_SHARED_DATA=$tmp/data bench/scenarios --build "$build" --out "$tmp/c" --sets conv --duration 60 \
	--policies policies/baselines/firmware-default.yaml,policies/bf16-only.yaml --candidate bf16-only \
	-j 2 >"$tmp/c.log" 2>&1 || { cat "$tmp/c.log" >&2; fail "bench/scenarios --sets conv"; }
python3 - "$tmp/c/conv/compare.json" <<'PY' || fail "the conv set's members"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
want = {"trace-conv-at%d-%s" % (o, s) for o in (600, 1800, 3000)
        for s in ("0.2", "0.4", "0.6", "0.8", "1.0", "1.2", "1.4")}
got = {r["scenario"] for r in rows if r["policy"] == "bf16-only"}
assert got == want, sorted(got ^ want)
assert all(r["tokens_per_joule"] > 0 for r in rows if r["policy"] == "bf16-only")
PY
m=$tmp/c/family-conv/trace-conv-at1800-0.6.yaml
grep -qxF "  trace: $tmp/data/AzureLLMInferenceTrace2023_conv.csv" "$m" || fail "the member does not read the shared data's trace"
grep -qx "  time_scale: 0.6" "$m" || fail "the member's time scale"
grep -qx "  start_offset_s: 1800" "$m" || fail "the member's offset"
grep -qE "^\| conv \| 21 \|" "$tmp/c/scenarios.md" || fail "scenarios.md has no conv row of 21 members"
# Without the trace (the repository's traces/ may hold it: only where it
# does not is the refusal reachable)
if [ ! -f traces/AzureLLMInferenceTrace2023_conv.csv ]; then
	set +e
	GOVD_SHARED_DATA=$tmp/empty bench/scenarios --build "$build" --out "$tmp/n" --sets conv >"$tmp/n.log" 2>&1
	rc=$?
	set -e
	[ $rc = 1 ] || fail "no trace: exit $rc, want 1"
	grep -q "tools/fetch-traces" "$tmp/n.log" || fail "no trace: the error does not name tools/fetch-traces"
	[ -e "$tmp/n/conv" ] && fail "no trace: a run started"
fi
echo "bench_conv: ok"
