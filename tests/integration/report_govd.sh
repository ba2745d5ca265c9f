#!/usr/bin/env bash
# govctl report: the governor's run (policies/balanced.yaml with the govd
# controller) against firmware-default on balanced.yaml's workload profile
# (configs/scenarios/default.yaml) passes every check with its measured gain,
# and is still only GO WITH CONDITIONS: one simulated seed cannot carry a GO.
# The only conditions are the two that name what would lift it.
# Fails when balanced.yaml's controller is not govd; skips (77) without python3.
set -euo pipefail
build=$1
gv=$build/govctl
ctl=$(sed -n 's/^[[:space:]]*controller:[[:space:]]*\([A-Za-z0-9_-]*\).*/\1/p' policies/balanced.yaml | head -1)
if [ "$ctl" != "govd" ]; then
	echo "FAIL: policies/balanced.yaml's controller is '$ctl', not govd: the shipped balanced policy is meant to run it"
	exit 1
fi
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
q() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
for p in policies/balanced.yaml policies/baselines/firmware-default.yaml; do
	"$gv" sim --scenario configs/scenarios/default.yaml --policy "$p" --seed 1 \
		--out "$out/$(basename "$p" .yaml)" >/dev/null 2>&1
done
"$gv" report "$out/balanced" --baseline "$out/firmware-default" -o "$out/r" >/dev/null
v=$(q "$out/r/report.json" "r['recommendation']['verdict']")
g=$(q "$out/r/report.json" "r['recommendation']['gain']")
echo "default: balanced (govd) vs firmware-default: $v, tokens/J gain $g"
q "$out/r/report.json" "'\n'.join(x['kind'] + ': ' + x['text'] for x in r['recommendation']['reasons'])"
[ "$v" = "GO WITH CONDITIONS" ]
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$g"
other=$(q "$out/r/report.json" "sum(1 for x in r['recommendation']['reasons'] if not ('seed(s) only' in x['text'] or 'evidence is simulated' in x['text']))")
lift=$(q "$out/r/report.json" "sum(1 for x in r['recommendation']['reasons'] if x['kind']=='condition' and ('3 seeds' in x['text'] or 'dry-run on the target hardware' in x['text']))")
[ "$other" -eq 0 ] || { echo "FAIL: conditions or blockers beyond the evidence's own"; exit 1; }
[ "$lift" -eq 2 ] || { echo "FAIL: the conditions do not name what would lift them"; exit 1; }
[ "$(q "$out/r/report.json" "r['evidence']['kind']")" = simulated ]
