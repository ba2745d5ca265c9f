#!/usr/bin/env bash
# govctl explain (issue 32): why the clock sat where it did, from the
# decision log's "why" records. A 10-minute balanced run on the default
# scenario: one row per --every seconds and an "all" row; the shares of the
# terms that set the clock add up to 100 % of the busy periods; the clock it
# reports is the clock the records asked for (checked against the log with
# python); the share of periods the expected-value gate held a slice's
# 8-bit rung shut (quality-drift: chat), and the share a ladder slice waited
# in BF16 for the others (all or none); the share of periods the thermal
# limit was held at its floor (azure-code-hot); --from/--to select a stretch; a log without explanations
# (firmware-default), a missing file and bad arguments are errors (1, 1, 2);
# beside the window search the model's advice (the window's tails scaled to
# the search's clock and one step lower, the lowest clock they would meet
# the targets at, why the lower one would lose) is in every search record
# and in the table.
# $1: the build directory.
set -euo pipefail
build=${1:?usage: explain_cli.sh BUILD_DIR}
govctl=${GOVCTL:-$build/govctl}
[ -x "$govctl" ] || { echo "skip: $govctl not built"; exit 77; }
tmp=$(mktemp -d /tmp/govd-explain-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; for f in "$tmp"/out "$tmp"/err; do [ -f "$f" ] && sed 's/^/  | /' "$f" >&2; done; exit 1; }
run() { # run WANT_RC ARGS...
	local want=$1; shift
	set +e
	"$govctl" explain "$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	set -e
	[ "$rc" -eq "$want" ] || fail "govctl explain $* exited $rc, want $want"
}

"$govctl" sim --scenario configs/scenarios/default.yaml --policy policies/balanced.yaml \
	--seed 1 --duration 600 --out "$tmp/run" >/dev/null 2>&1
"$govctl" sim --scenario configs/scenarios/default.yaml \
	--policy policies/baselines/firmware-default.yaml --seed 1 --duration 120 \
	--out "$tmp/fw" >/dev/null 2>&1

run 0 "$tmp/run" --every 120
python3 - "$tmp/out" "$tmp/run/decisions.jsonl" <<'PY'
import json, re, sys
out = open(sys.argv[1]).read().splitlines()
rows = [l for l in out if re.match(r"^(\d+-\d+|all)\s", l)]
assert len(rows) == 6, out            # 5 stretches of 120 s + all
recs = [json.loads(l) for l in open(sys.argv[2])]
dec = [r for r in recs if r.get("type") == "decision"]
busy = [r["why"] for r in dec if "why" in r and r["why"]["bound"] != "idle"]
assert busy, "balanced wrote no explanation"
allrow = rows[-1].split()
assert int(allrow[1]) == len(dec), (allrow, len(dec))
assert int(allrow[2]) == len(busy), (allrow, len(busy))
mean = sum(w["clk_mhz"] for w in busy) / len(busy)
assert abs(float(allrow[3]) - mean) < 1.0, (allrow[3], mean)
shares = [int(x) for x in re.findall(r"(\d+)%", rows[-1].split("  ")[-1])]
terms = {w["bound"] for w in busy}
if len(terms) <= 3:  # every term listed: the shares add up (rounding)
    assert abs(sum(shares) - 100) <= len(shares), shares
# The search's two bases by load (why.load): each class's last base and the
# share of busy periods at the heavy one, as the log has them.
heavy = [w for w in busy if w.get("load") == "heavy"]
m = re.search(r"search base (\S+) light, (\S+) heavy \((\d+) % of busy\)", rows[-1])
assert m, rows[-1]
assert abs(int(m.group(3)) - 100 * len(heavy) / len(busy)) <= 0.5, (m.group(3), len(heavy))
last = {}
for w in (r["why"] for r in dec if r.get("why")):
    if w.get("load"):
        last[w["load"]] = w["base_mhz"]
assert last, "no record names its load class"
for cls, g in (("light", 1), ("heavy", 2)):
    want = "%.0f" % last[cls] if cls in last else "-"
    assert m.group(g) == want, (cls, m.group(g), want)
# Beside the search the model advises (issue 32, part 4): every search
# record carries the window's tails scaled to its clock and one step lower
# and why that one would lose against the step-down threshold; the table's
# columns are those records' medians and most frequent reason.
srch = [w for w in busy if w["bound"] == "window_search"]
assert sum(1 for w in srch if w["tail_ratio"]) > 0.9 * len(srch), "the search's advice is missing"
from collections import Counter
for w in srch:
    if not w["tail_ratio"]:  # no request in the window yet: nothing to scale
        assert w["tbt_pred_ms"] is None and w["lower_limit"] == "none", w
        continue
    assert w["tbt_pred_ms"] is not None and w["model_mhz"] is not None, w
    assert w["lower_limit"] in ("tbt", "ttft", "window", "floor"), w
    if w["lower_limit"] == "floor":
        continue
    assert w["lower_mhz"] == w["clk_mhz"] - 90 or w["lower_mhz"] == w["floor_mhz"], w
    assert w["tbt_lower_ms"] >= w["tbt_pred_ms"], w
    assert (w["lower_limit"] == "tbt") == (w["tbt_lower_ms"] > 100 * w["margin"]), w
    # the pick is at or under the clock exactly when the tails meet the
    # targets there (the max clock is the pick's ceiling too)
    assert (w["tbt_pred_ms"] <= 100) == (w["model_mhz"] <= w["clk_mhz"]) or \
        w["ttft_pred_ms"] > 2000 or abs(w["tbt_pred_ms"] - 100) < 1 or w["clk_mhz"] >= 1980, w
cols = rows[-1].split()
lims = Counter(w["lower_limit"] for w in busy if w.get("lower_limit", "none") != "none")
assert cols[10] == lims.most_common(1)[0][0], (cols[10], lims)
tbts = sorted(w["tbt_pred_ms"] for w in busy if w.get("tbt_pred_ms") is not None)
assert abs(float(cols[7]) / tbts[len(tbts) // 2] - 1) < 0.03, (cols[7], tbts[len(tbts) // 2])
models = sorted(w["model_mhz"] for w in busy if w.get("model_mhz") is not None)
assert abs(float(cols[6]) / models[len(models) // 2] - 1) < 0.03, (cols[6], models[len(models) // 2])
print(f"explain: {len(busy)} busy of {len(dec)} periods, mean clock {mean:.0f} MHz, "
      f"terms {sorted(terms)}, heavy {len(heavy)}, lower {dict(lims)}")
PY
# The shares of periods a slice's 8-bit rung was held, as the log counts
# them: the expected-value gate holding chat's open gate shut on
# quality-drift (quality[].detect_held_s), and the ladder with evidence on
# demand (all or none) keeping a slice's open rung in BF16 for the others
# (quality[].mix_held; never served meanwhile).
"$govctl" sim --scenario configs/scenarios/quality-drift.yaml --policy policies/balanced.yaml \
	--seed 1 --duration 300 --out "$tmp/qd" >/dev/null 2>&1
run 0 "$tmp/qd" --every 0
cp "$tmp/out" "$tmp/qd.out"
sed 's/^  confirm_samples: 50$/  confirm_samples: 50\n  probation_rate: 0.5\n  max_detect_s: 600\n  shadow_budget: 0.1/' \
	policies/ladder.yaml >"$tmp/ladder-ev.yaml"
grep -q probation_rate "$tmp/ladder-ev.yaml" || fail "the ladder policy's confirm_samples line moved"
"$govctl" sim --scenario configs/scenarios/ladder.yaml --policy "$tmp/ladder-ev.yaml" \
	--seed 1 --out "$tmp/lad" >/dev/null 2>&1
run 0 "$tmp/lad" --every 0
cp "$tmp/out" "$tmp/lad.out"
python3 - "$tmp" <<'PY'
import json, re, sys
d = sys.argv[1]
def check(run, label, held_in):  # returns {slice: % of periods}
    allrow = [l for l in open(f"{d}/{run}.out").read().splitlines() if l.startswith("all ")][0]
    m = re.search(label + r": ([^;]*)", allrow)
    assert m, allrow
    held = dict((n, int(v)) for n, v in re.findall(r"(\w+) (\d+)%", m.group(1)))
    recs = [json.loads(l) for l in open(f"{d}/{run}/decisions.jsonl")]
    dec = [r for r in recs if r.get("type") == "decision"]
    for i, name in enumerate(recs[0]["slices"]):
        n = sum(1 for r in dec if held_in(r["inputs"]["quality"][i]))
        assert held.get(name, 0) == round(100.0 * n / len(dec)), (run, name, held, n)
        assert not any(held_in(r["inputs"]["quality"][i]) and r["after"]["int8_frac"][i] > 0
                       for r in dec), (run, name, "served while held")
    return held
held = check("qd", "8-bit held by the detection delay", lambda q: "detect_held_s" in q)
assert held.get("chat", 0) > 0, held
mix = check("lad", "8-bit held for the other slices", lambda q: q.get("mix_held", False))
assert sum(mix.values()) > 0, mix
print(f"explain: held {held}, mix held {mix}")
PY
# The thermal limit held at its floor over the heatsink prediction's cut
# (thermal_floor_share, why.heat_floor_w): balanced on azure-code-hot's
# first 20 minutes, where the bursts heat the degraded heatsink. The share
# explain gives is the records'; each such record's power limit is the floor.
"$govctl" sim --scenario configs/scenarios/azure-code-hot.yaml --policy policies/balanced.yaml \
	--seed 1 --duration 1200 --out "$tmp/hot" >/dev/null 2>&1
run 0 "$tmp/hot" --every 0
python3 - "$tmp/out" "$tmp/hot/decisions.jsonl" <<'PY'
import json, re, sys
allrow = [l for l in open(sys.argv[1]).read().splitlines() if l.startswith("all ")][0]
m = re.search(r"thermal limit held at its floor over the prediction (\d+) % \(last (\d+) W\)", allrow)
assert m, allrow
dec = [r for r in map(json.loads, open(sys.argv[2])) if r.get("type") == "decision"]
held = [r for r in dec if r.get("why") and r["why"].get("heat_floor_w") is not None]
assert held, "no period held the thermal limit at its floor"
assert int(m.group(1)) == round(100.0 * len(held) / len(dec)), (m.group(1), len(held), len(dec))
assert int(m.group(2)) == round(held[-1]["why"]["heat_floor_w"]), (m.group(2), held[-1]["why"])
for r in held:
    w = r["why"]["heat_floor_w"]
    assert 0 < w <= 0.65 * 700 + 1e-6, w  # balanced: 0.65 of its 700 W cap at most
    assert abs(r["after"]["power_limit_mw"] - 1000 * w) <= 1000, (r["after"], w)
print(f"explain: thermal floor held in {len(held)} of {len(dec)} periods")
PY
run 0 "$tmp/run" --from 120 --to 240 --every 0
grep -Eq '^all +240 ' "$tmp/out" || fail "--from 120 --to 240 should hold 240 periods of 500 ms"
run 0 "$tmp/run/decisions.jsonl" --every 600
grep -q '^all ' "$tmp/out" || fail "a decisions.jsonl path"
run 1 "$tmp/fw"
grep -q 'no period carries an explanation' "$tmp/err" || fail "firmware-default: no why"
[ ! -s "$tmp/out" ] || fail "nothing printed on stdout for a log without explanations"
run 1 "$tmp/none"
run 1 "$tmp/run" --from 9000
run 2 "$tmp/run" --every -5
run 2 "$tmp/run" --from 300 --to 200
run 2
run 2 "$tmp/run" "$tmp/fw"
echo "explain_cli: ok"
