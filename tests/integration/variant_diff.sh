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
# errors: no set in common, no row for the candidate, a broken compare.json
if bench/variant-diff "$tmp/base" "$tmp/nothing" >"$tmp/out" 2>&1; then fail "no set in common passed"; fi
grep -q "no set in both" "$tmp/out" || fail "no set in common unnamed"
if bench/variant-diff "$tmp/base" "$tmp/new" --candidate nope >"$tmp/out" 2>&1; then fail "unknown candidate passed"; fi
grep -q "no row for policy 'nope'" "$tmp/out" || fail "unknown candidate unnamed"
echo '{"rows": [' >"$tmp/new/t/tuning/compare.json"
if bench/variant-diff "$tmp/base" "$tmp/new" >"$tmp/out" 2>&1; then fail "a broken compare.json passed"; fi
grep -q "t/tuning/compare.json" "$tmp/out" || fail "the broken file unnamed"
echo "variant_diff: ok"
