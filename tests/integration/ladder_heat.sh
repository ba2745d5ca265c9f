#!/usr/bin/env bash
# The precision ladder under heat (configs/scenarios/azure-code-hot-ladder.yaml,
# seed 1, 20 min; heat_prior: 1 in policies/ladder.yaml): the first rung opens
# on the unconfirmed prior once the thermal limit binds, logged as heat_prior,
# sooner than with heat_prior: 0, and no breach request is served (the priors
# are right there). Needs the public Azure code trace (skips without it).
set -euo pipefail
build=$1
. "$(dirname "$0")/lib/need_trace.sh"
sed 's/^    heat_prior: 1$/    heat_prior: 0/' policies/ladder.yaml >"$out/ladder-nohp.yaml"
grep -q '^    heat_prior: 0$' "$out/ladder-nohp.yaml"
"$build/govctl" sim --scenario configs/scenarios/azure-code-hot-ladder.yaml \
	--policy policies/ladder.yaml --seed 1 --duration 1200 --out "$out/hot" >/dev/null
"$build/govctl" sim --scenario configs/scenarios/azure-code-hot-ladder.yaml \
	--policy "$out/ladder-nohp.yaml" --seed 1 --duration 1200 --out "$out/hot-nohp" >/dev/null
python3 - "$out" <<'PY'
import json, sys
def first8(d):
    t, heat = None, 0
    for line in open(d + "/decisions.jsonl"):
        r = json.loads(line)
        if r.get("type") != "decision":
            continue
        on = [f > 0 for f in r["after"]["int8_frac"]]
        heat += any(q.get("heat_prior") for q in r["inputs"]["quality"])
        if any(on) and t is None:
            t = r["t_ms"] / 1000
    return t, heat, json.load(open(d + "/summary.json"))["quality"]["breach_requests"]
(t1, h1, b1), (t0, h0, b0) = first8(sys.argv[1] + "/hot"), first8(sys.argv[1] + "/hot-nohp")
print(f"hot: first 8-bit period at {t1} s with heat_prior ({h1} periods logged heat_prior), "
      f"{t0} s without; breach {b1}")
assert h1 > 0 and h0 == 0 and t1 is not None and (t0 is None or t1 < t0) and b1 == 0
PY
