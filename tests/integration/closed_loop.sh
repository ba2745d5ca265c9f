#!/usr/bin/env bash
# Closed-loop scenario tests (chrony's test/simulation style): run the shipped
# scenarios with the policy users get (policies/balanced.yaml) at fixed seeds
# and assert on the decision log and the summary:
#   quality-drift: the drifting slice (chat) serves no INT8 from the drift
#                  (15 min) + the detection delay on;
#   wrong-prior:   chat's prior is wrong from the start: the gate rejects it
#                  within the detection delay and chat serves no INT8 after;
#   sensor-faults: every fault on a critical signal moves to the safe point
#                  while it lasts, and the governor leaves it afterwards;
#   burst:         the 2.5x burst raises clocks (queue_surge / sla_raise), and a
#                  surge holds the max until 2 or fewer wait (search_surge_release):
#                  no period after a surge period runs the base with more waiting;
#   azure-code-hot: no hardware clamp, and the ceiling is predicted
#                  (thermal_predict); needs the Azure trace: without it the
#                  other checks still run and judge, and a clean run exits 77
#                  (skipped, saying the part not run) instead of passing.
# Fails while balanced.yaml does not use the govd controller: the reasons
# asserted on are govd's (governor/policy/opoint.h), and that is the regression.
# DRIFT_DELAY_S: the quality gate's detection delay allowed (default 850 s: the
# CUSUM of governor/telemetry/estimate.c needs ~245 chat shadow samples at a 4 % drop on
# average, ~650 s at the scenario's 0.37 samples/s, docs/govd-controller.md;
# 850 s is that plus ~30 % for its spread, still inside the run).
set -euo pipefail
build=$1
govctl=${GOVCTL:-$build/govctl}
policy=policies/balanced.yaml
delay_s=${DRIFT_DELAY_S:-850}
if ! command -v python3 >/dev/null; then
	echo "SKIP: python3 not found (the log checks are python)"
	exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { # scenario-name
	"$govctl" sim --scenario "configs/scenarios/$1.yaml" --policy "$policy" --seed 1 \
		--out "$out/$1" >/dev/null
}

run quality-drift
controller=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["controller"])' \
	"$out/quality-drift/decisions.jsonl")
if [ "$controller" != govd ]; then
	echo "FAIL: $policy uses the '$controller' controller, not govd; these tests assert on govd's"
	echo "      reason codes, and the shipped balanced policy is meant to run it"
	exit 1
fi

# One python checker per scenario: prints what it found, exits 1 on a failure.
check() { # scenario-name python-body
	python3 - "$out/$1" "$delay_s" <<EOF
import json, sys
d, delay_s = sys.argv[1], float(sys.argv[2])
recs = [json.loads(l) for l in open(d + "/decisions.jsonl")]
head = recs[0]
dec = [r for r in recs if r.get("type") == "decision"]
summ = json.load(open(d + "/summary.json"))
def t(r): return r["t_ms"] / 1000.0
def has(r, *names): return any(n in r["reasons"] for n in names)
fail = []
$2
for f in fail:
    print("FAIL:", f)
sys.exit(1 if fail else 0)
EOF
}

rc=0
check quality-drift '
drift_s = 900.0  # configs/scenarios/quality-drift.yaml: chat 0.6 % -> 1.5 % at 15 min
chat = head["slices"].index("chat")
late = [r for r in dec if t(r) >= drift_s + delay_s]
bad = [r for r in late if r["after"]["int8_frac"][chat] > 0]
before = [r for r in dec if t(r) < drift_s and r["after"]["int8_frac"][chat] > 0]
last = max((t(r) for r in dec if t(r) >= drift_s and r["after"]["int8_frac"][chat] > 0), default=None)
print(f"quality-drift: chat INT8 in {len(before)} periods before the drift; last INT8 period after it: "
      f"{last if last is None else round(last - drift_s, 1)} s after (allowed {delay_s:.0f} s)")
if not before:
    print("NOTE: chat never served INT8 before the drift, so the revert is not exercised")
if not late:
    fail.append("the run ends before drift + delay")
if bad:
    fail.append(f"chat still INT8 {t(bad[0]) - drift_s:.1f} s after the drift ({len(bad)} periods)")
late_br = summ["quality"]["breach_requests_beyond_delay"]
all_br = summ["quality"]["breach_requests"]
print(f"quality-drift: {all_br} breach requests, {late_br} beyond the detection delay")
if late_br:
    fail.append(f"{late_br} breach requests served beyond the documented detection delay")
' || rc=1

run wrong-prior
check wrong-prior '
# configs/scenarios/wrong-prior.yaml: chat is at 4 % from t = 0, its prior says ~0.7 %.
chat = head["slices"].index("chat")
al = [r for r in dec if r["inputs"]["quality"][chat]["alarm"]]
at = t(al[0]) if al else None
late = [r for r in dec if at is not None and t(r) > at and r["after"]["int8_frac"][chat] > 0]
br = summ["quality"]["per_slice"]["chat"]["breach_requests"]
print(f"wrong-prior: chat prior rejected at {at} s (allowed {delay_s:.0f} s), "
      f"{len(late)} INT8 periods on chat after it, {br} breach requests")
if at is None or at > delay_s:
    fail.append("the wrong chat prior was not caught within the detection delay")
if late:
    fail.append(f"chat served INT8 {t(late[0]) - at:.1f} s after its prior was rejected")
late_br = summ["quality"]["breach_requests_beyond_delay"]
if late_br:
    fail.append(f"{late_br} breach requests served beyond the documented detection delay")
' || rc=1

# The beyond-the-delay count must see a policy that ignores the wrong prior:
# naive-int8 serves chat in INT8 throughout, well past the delay.
"$govctl" sim --scenario configs/scenarios/wrong-prior.yaml --policy policies/baselines/naive-int8.yaml \
	--seed 1 --out "$out/wrong-prior-naive" >/dev/null
python3 - "$out/wrong-prior-naive/summary.json" <<'EOF' || rc=1
import json, sys
q = json.load(open(sys.argv[1]))["quality"]
print(f"wrong-prior under naive-int8: {q['breach_requests']} breach requests, "
      f"{q['breach_requests_beyond_delay']} beyond the detection delay")
if not q["breach_requests_beyond_delay"] > 0:
    print("FAIL: breach requests beyond the delay not counted for a policy without a gate")
    sys.exit(1)
EOF

run sensor-faults
check sensor-faults '
# configs/scenarios/sensor-faults.yaml; signals the validator calls critical
# (governor/telemetry/validate.c); the inlet dropout is not one.
faults = [(300, 60, "temp_junction"), (600, 30, "temp_memory"), (1200, 10, "temp_junction"),
          (1500, 120, "power_accel")]
for at, dur, sig in faults:
    inside = [r for r in dec if at <= t(r) <= at + dur]
    safe = [r for r in inside if has(r, "safe_point")]
    after = [r for r in dec if at + dur < t(r) <= at + dur + 60]
    left = [r for r in after if not has(r, "safe_point", "safe_hold")]
    print(f"sensor-faults: {sig} at {at} s for {dur} s: {len(safe)} safe_point periods, "
          f"left the safe point {round(t(left[0]) - at - dur, 1) if left else None} s after it ended")
    if not safe:
        fail.append(f"no safe_point while {sig} was faulted ({at}-{at + dur} s)")
    if not left:
        fail.append(f"still at the safe point 60 s after the {sig} fault ended")
' || rc=1

run burst
check burst '
at, dur = 1200, 300  # configs/scenarios/burst.yaml: 2.5x arrivals at 20-25 min
raise_ = [r for r in dec if at <= t(r) <= at + dur + 60 and has(r, "queue_surge", "sla_raise")]
att = summ["sla"]["attainment"]
print(f"burst: {len(raise_)} queue_surge/sla_raise periods during the burst; SLA attainment {att:.3f}")
if not raise_:
    fail.append("no queue_surge or sla_raise during the burst")
# The surge hold (cool here: the junction stays under 65 C): after a surge
# period, a period with 3+ waiting is a surge period too.
left, held = [], 0
for prev, r in zip(dec, dec[1:]):
    if has(prev, "queue_surge") and r["inputs"]["queue_len"] > 2:
        if has(r, "queue_surge"):
            held += r["inputs"]["queue_len"] < 8
        else:
            left.append((t(r), r["inputs"]["queue_len"]))
print(f"burst: {held} periods held at the max under 8 waiting; {len(left)} left it with 3+ waiting")
if left:
    fail.append(f"the surge left the max with requests still waiting: {left[:3]}")
if not held:
    fail.append("no surge was held under 8 waiting (search_surge_release)")
' || rc=1

if [ -f "${GOVD_SHARED_DATA:-/nonexistent}/AzureLLMInferenceTrace2023_code.csv" ]; then
	run azure-code-hot
	check azure-code-hot '
pred = [r for r in dec if has(r, "thermal_predict")]
clamps = summ["thermal"]["clamp_events"]
tj = summ["thermal"]["max_junction_c"]
print(f"azure-code-hot: {clamps} hardware clamp events, {len(pred)} thermal_predict periods, "
      f"max junction {tj:.1f} C")
if clamps != 0:
    fail.append(f"{clamps} hardware clamp events (want 0)")
if not pred:
    fail.append("no thermal_predict decision")
' || rc=1
else
	echo "azure-code-hot: SKIP (Azure code trace not found in GOVD_SHARED_DATA)"
	[ $rc -ne 0 ] || rc=77
fi
exit $rc
