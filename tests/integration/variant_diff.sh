#!/usr/bin/env bash
# bench/variant-diff, the reader behind every variant's figures in
# docs/govd-controller.md, on two synthetic bench/scenarios outputs: the
# set's means, members at attainment against min(0.99, firmware's), the
# pooled windows, and the members that moved (by share or by windows met);
# then the errors it must name. $1: build dir (unused: reads JSON only).
set -euo pipefail
tmp=$(mktemp -d /tmp/govd-vdiff-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/out" ] && sed 's/^/  | /' "$tmp/out" >&2; exit 1; }
# DIR  A_SHARE A_MET A_ATT  B_SHARE B_MET B_ATT: two members, fam-a and fam-b,
# each beside firmware-default (attainment 0.98 on fam-a, 1.0 on fam-b).
write() {
	mkdir -p "$1/t/tuning"
	python3 - "$1/t/tuning/compare.json" "${@:2}" <<'PY'
import json, sys
p, a16, amet, aatt, b16, bmet, batt = sys.argv[1], *map(float, sys.argv[2:])
row = lambda sc, pol, s16, met, att: {"scenario": sc, "policy": pol, "pct_of_oracle_bf16": s16,
    "pct_of_oracle": s16 - 5, "sla_attainment_feasible": att, "windows_feasible_met": int(met),
    "windows_feasible_busy": 20, "clamp_events": 0, "windows_over_ceiling": 0}
json.dump({"rows": [row("fam-a", "firmware-default", 80, 19, 0.98), row("fam-a", "bf16-only", a16, amet, aatt),
                    row("fam-b", "firmware-default", 80, 20, 1.0), row("fam-b", "bf16-only", b16, bmet, batt)]},
          open(p, "w"))
PY
}
write "$tmp/base" 90 19 0.985 96 20 1.0
write "$tmp/new" 91 19 0.985 96.1 19 0.95
bench/variant-diff "$tmp/base" "$tmp/new" >"$tmp/out" || fail "exit $?"
# fam-a at 0.985 passes min(0.99, 0.98); fam-b at 0.95 fails 0.99
grep -qF "| t/tuning | base | 93.00 | 88.00 | 2/2 | 39/40 | 0 | 0 |" "$tmp/out" || fail "base summary"
grep -qF "| t/tuning | variant | 93.55 | 88.55 | 1/2 | 38/40 | 0 | 0 |" "$tmp/out" || fail "variant summary"
grep -qF "| t/tuning | fam-a | 90.00 -> 91.00 | 19 -> 19 / 20 |" "$tmp/out" || fail "fam-a moved by 1.0"
grep -qF "| t/tuning | fam-b | 96.00 -> 96.10 | 20 -> 19 / 20 |" "$tmp/out" || fail "fam-b lost a window"
bench/variant-diff "$tmp/base" "$tmp/new" --min-delta 2 >"$tmp/out" || fail "exit $?"
grep -q "fam-a" "$tmp/out" && fail "fam-a moved by less than --min-delta 2"
grep -qF "| t/tuning | fam-b |" "$tmp/out" || fail "a window lost is listed at any --min-delta"
# paired over draws: shift-0 and shift-30 of one set pooled by its name; a
# trace's replays at two time scales are one cluster
writeshift() {
	mkdir -p "$1/shift-$2/held-out"
	python3 - "$1/shift-$2/held-out/compare.json" "${@:3}" <<'PY'
import json, sys
p, *vals = sys.argv[1:]
names = ["fam-1", "fam-2", "trace-x-0.3", "trace-x-0.9"]
rows = []
for sc, v in zip(names, vals):
    s16, met = map(float, v.split(":"))
    rows.append({"scenario": sc, "policy": "bf16-only", "pct_of_oracle_bf16": s16, "pct_of_oracle": s16,
                 "sla_attainment_feasible": 1.0, "windows_feasible_met": int(met), "windows_feasible_busy": 20})
json.dump({"rows": rows}, open(p, "w"))
PY
}
writeshift "$tmp/pb" 0 90:18 90:19 90:20 90:20
writeshift "$tmp/pb" 30 90:18 90:19 90:20 90:20
writeshift "$tmp/pn" 0 91:19 91:20 91:20 91:20
writeshift "$tmp/pn" 30 91:19 91:19 91:20 91:20
bench/variant-diff "$tmp/pb" "$tmp/pn" --resamples 200 >"$tmp/out" || fail "exit $?"
# every run +1.0: the interval is the point; windows +1 +1 +1 +0 in three
# runs: by member (the sign test's unit: a member's draws are one) fam-1 +2,
# fam-2 +1, trace-x 0: two members up, none down, p 0.5
grep -qF "| held-out | 8 | +1.00 | +1.00 .. +1.00 | +3 |" "$tmp/out" || fail "paired share, pooled over draws"
grep -qF "| 2 / 0 | 0.500 |" "$tmp/out" || fail "sign test over members whose net windows changed"
writeshift "$tmp/pm" 0 93:18 87:19 90:20 90:20
writeshift "$tmp/pm" 30 93:18 87:19 90:20 90:20
bench/variant-diff "$tmp/pb" "$tmp/pm" --seed 7 >"$tmp/out" || fail "exit $?"
grep -qF "| held-out | 8 | +0.00 | -3.00 .. +3.00 | +0 | +0 .. +0 | 0 / 0 | 1.000 |" "$tmp/out" ||
	fail "a +3/-3 pair: an interval holding 0"
grep -q "seed 7" "$tmp/out" || fail "the seed is printed"
python3 - <<'PY' || fail "clusters"
import sys
sys.path.insert(0, "bench")
from importlib.machinery import SourceFileLoader
c = SourceFileLoader("vd", "bench/variant-diff").load_module().cluster
for name, want in [("trace-code-0.4", "trace-code"), ("trace-code-1.0", "trace-code"), ("fam-12", "fam-12"),
                   ("hot-trace-code-at600-0.7", "hot-trace-code"), ("azure-code-30c", "azure-code-30c")]:
    assert c(name) == want, (name, c(name), want)
PY
if bench/variant-diff "$tmp/pb" "$tmp/pn" --resamples 5 >"$tmp/out" 2>&1; then fail "--resamples 5 passed"; fi
grep -q "at least 100" "$tmp/out" || fail "--resamples under 100 unnamed"
# errors: no set in common, no row for the candidate, a broken compare.json
if bench/variant-diff "$tmp/base" "$tmp/nothing" >"$tmp/out" 2>&1; then fail "no set in common passed"; fi
grep -q "no set in both" "$tmp/out" || fail "no set in common unnamed"
if bench/variant-diff "$tmp/base" "$tmp/new" --candidate nope >"$tmp/out" 2>&1; then fail "unknown candidate passed"; fi
grep -q "no row for policy 'nope'" "$tmp/out" || fail "unknown candidate unnamed"
echo '{"rows": [' >"$tmp/new/t/tuning/compare.json"
if bench/variant-diff "$tmp/base" "$tmp/new" >"$tmp/out" 2>&1; then fail "a broken compare.json passed"; fi
grep -q "t/tuning/compare.json" "$tmp/out" || fail "the broken file unnamed"
echo "variant_diff: ok"
