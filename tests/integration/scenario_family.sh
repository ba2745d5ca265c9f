#!/usr/bin/env bash
# Issue 14's tools end to end, reduced (the full form is bench/scenarios):
#  - govctl scenarios: the same seeds give byte-identical files, other seeds
#    other files, and every member loads and runs;
#  - govctl qualify: deterministic for a seed, drawn (not copied) from the
#    true drop: mismatches differ between seeds and stay near n x drop;
#  - govctl compare --oracle on one member: % of oracle at equal SLA is given,
#    feasible + infeasible windows add up, and a policy that misses the SLA
#    in every window (a 705 MHz lock) earns far less of the limit than the
#    firmware default.
set -euo pipefail
build=$1
govctl=${GOVCTL:-$build/govctl}
if ! command -v python3 >/dev/null; then
	echo "SKIP: python3 not found"
	exit 77
fi
if [ ! -f "${GOVD_SHARED_DATA:-/nonexistent}/AzureLLMInferenceTrace2023_code.csv" ]; then
	echo "SKIP: the Azure code trace is not in GOVD_SHARED_DATA (family members draw lengths from it)"
	exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

a=$("$govctl" scenarios --seeds 7-9 --out "$out/a" --duration 300)
"$govctl" scenarios --seeds 7-9 --out "$out/b" --duration 300 >/dev/null
for s in 7 8 9; do
	cmp "$out/a/fam-$s.yaml" "$out/b/fam-$s.yaml"
done
if cmp -s "$out/a/fam-7.yaml" "$out/a/fam-8.yaml"; then
	echo "FAIL: seeds 7 and 8 gave the same scenario"
	exit 1
fi
[ "$a" = "$out/a/fam-7.yaml,$out/a/fam-8.yaml,$out/a/fam-9.yaml" ] || { echo "FAIL: list '$a'"; exit 1; }
for s in 7 8 9; do
	"$govctl" sim --scenario "$out/a/fam-$s.yaml" --policy policies/balanced.yaml --duration 120 \
		--out "$out/sim-$s" >/dev/null 2>&1 || { echo "FAIL: fam-$s does not run"; exit 1; }
done
# --headroom: the list on stdout unchanged, one CSV row per member, and the
# same figures as --headroom --scenario on the file (one measurement).
h=$("$govctl" scenarios --seeds 8-9 --out "$out/h" --duration 300 --headroom 2>"$out/h.err")
[ "$h" = "$out/h/fam-8.yaml,$out/h/fam-9.yaml" ] || { echo "FAIL: --headroom list '$h'"; exit 1; }
grep -q '^fam-9 ' "$out/h.err" || { echo "FAIL: no headroom table on stderr"; exit 1; }
"$govctl" scenarios --headroom --scenario "$out/h/fam-8.yaml" >"$out/h8.txt"
python3 - "$out/h/headroom.csv" "$out/h8.txt" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["scenario"] for r in rows] == ["fam-8", "fam-9"], rows
for r in rows:
    low = int(r["lowest_clock_mhz"])
    assert low == 0 or 345 <= low <= 1980, r
    assert abs(float(r["tbt_share"]) * 100 - float(r["tbt_p99_ms"])) < 0.1, r
line = [l for l in open(sys.argv[2]) if l.startswith("fam-8 ")][0].split()
assert abs(float(line[6]) - float(rows[0]["tbt_p99_ms"])) < 0.05, (line, rows[0])
print(f"headroom: fam-8 TBT p99 {rows[0]['tbt_p99_ms']} ms at max, lowest clock {rows[0]['lowest_clock_mhz']} MHz")
PY
if "$govctl" scenarios --headroom --scenario "$out/nope.yaml" >/dev/null 2>&1; then
	echo "FAIL: headroom of a missing scenario succeeded"
	exit 1
fi
if "$govctl" scenarios --seeds 9-7 --out "$out/c" >/dev/null 2>&1; then
	echo "FAIL: a reversed seed range was accepted"
	exit 1
fi

q1=$("$govctl" qualify --scenario configs/scenarios/default.yaml --samples 20000 --seed 3)
q2=$("$govctl" qualify --scenario configs/scenarios/default.yaml --samples 20000 --seed 3)
q3=$("$govctl" qualify --scenario configs/scenarios/default.yaml --samples 20000 --seed 4)
[ "$q1" = "$q2" ] || { echo "FAIL: qualify is not deterministic"; exit 1; }
[ "$q1" != "$q3" ] || { echo "FAIL: qualify gave the same draw for seeds 3 and 4"; exit 1; }
python3 - "$q1" <<'PY'
import re, sys
# default.yaml: code 0.4 %, chat 0.7 %, math 1.8 %; 20000 samples: +-5 sd
m = dict(re.findall(r"(\w+): \{offline_samples: 20000, offline_mismatches: (\d+)\}", sys.argv[1]))
for s, p in (("code", 0.004), ("chat", 0.007), ("math", 0.018)):
    k, mu = int(m[s]), 20000 * p
    sd = (mu * (1 - p)) ** 0.5
    print(f"qualify: {s} {k} of 20000 (expected {mu:.0f} +- {sd:.0f})")
    assert abs(k - mu) < 5 * sd, s
PY

cat >"$out/lock705.yaml" <<'YAML'
name: lock705
metadata: {owners: [test]}
control: {controller: static, period_ms: 1000}
frequency: {min_mhz: 705, max_mhz: 705}
precision: {modes: [bf16]}
sla: {window_s: 60, ttft_p99_ms: 2000, tbt_p99_ms: 100, attainment: 0.99}
thermal: {ceiling_c: 83}
YAML
"$govctl" compare --scenarios "$out/a/fam-8.yaml" --policies \
	policies/baselines/firmware-default.yaml,"$out/lock705.yaml" --oracle -j 2 \
	--out "$out/cmp" >/dev/null 2>&1
python3 - "$out/cmp/compare.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
rows = {r["policy"]: r for r in c["rows"]}
fw, lk = rows["firmware-default"], rows["lock705"]
o = c["oracles"][0]
print(f"compare: firmware-default {fw['pct_of_oracle']:.1f} % of oracle, lock705 "
      f"{lk['pct_of_oracle']:.1f} % (SLA att. feasible {lk['sla_attainment_feasible']:.3f}); "
      f"windows feasible {fw['windows_feasible']}, infeasible {fw['windows_infeasible']}")
assert fw["windows_feasible"] + fw["windows_infeasible"] in (4, 5)  # 300 s / 60 s (the last may be the tail)
assert fw["windows_feasible"] <= o["windows_feasible"]  # the oracle's count may hold the tail
assert 0 < fw["pct_of_oracle"] <= 110
assert lk["pct_of_oracle"] < 0.5 * fw["pct_of_oracle"], "an SLA-missing lock must not near the limit"
assert o["tokens_per_joule_feasible_all_rails"] > 0
# The attainment's own counts (a set's windows are pooled from them): they
# give the row's attainment and count no more windows than are feasible.
for r in (fw, lk):
    busy, met = r["windows_feasible_busy"], r["windows_feasible_met"]
    assert 0 < busy <= r["windows_feasible"] and 0 <= met <= busy, r
    assert abs(met / busy - r["sla_attainment_feasible"]) < 1e-9, r
assert lk["windows_feasible_met"] < lk["windows_feasible_busy"], "the 705 MHz lock misses windows"
# The BF16-only oracle (the DVFS-only limit) beside it: no INT8 point, no
# window feasible that the full one finds infeasible, and every policy's
# share of it.
o16 = c["oracles"][1]
assert o16["bf16_only"] is True and o["bf16_only"] is False
# every BF16 point is a candidate of the full oracle too: a window a BF16
# point makes feasible is feasible for it
assert o16["windows_feasible"] <= o["windows_feasible"], (o16["windows_feasible"], o["windows_feasible"])
assert 0 < fw["pct_of_oracle_bf16"] <= 110
assert lk["pct_of_oracle_bf16"] < 0.5 * fw["pct_of_oracle_bf16"]
print(f"compare: firmware-default {fw['pct_of_oracle_bf16']:.1f} % of the BF16-only oracle")
PY
echo "scenario_family: ok"
