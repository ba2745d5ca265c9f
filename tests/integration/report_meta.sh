#!/usr/bin/env bash
# govctl report's handoff uses the run metadata govctl sim records
# (docs/summary.md): the recorded command (plus --out) reproduces the run byte
# for byte, the scenario path is the recorded one and the compiler is the
# run's; runs from before that metadata fall back to the inferred
# configs/scenarios/<name>.yaml and say so. Skips (77) without python3.
set -euo pipefail
build=$1
gv=${GOVCTL:-$build/govctl}
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
scen=configs/scenarios/default.yaml
for p in ondemand firmware-default; do
	"$gv" sim --scenario "$scen" --policy "policies/baselines/$p.yaml" --seed 1 --duration 60 \
		--out "$out/$p" >/dev/null 2>&1
done

"$gv" report "$out/ondemand" --baseline "$out/firmware-default" -o "$out/r" >/dev/null 2>&1
j=$out/r/report.json
h="r['handoff']['runs'][0]"
cmd=$(q "$out/ondemand/summary.json" "r['command']")
repro=$(q "$j" "$h['reproduce']")
[ "$repro" = "$cmd --out $out/ondemand" ] || fail "reproduce is '$repro', recorded '$cmd'"
[ "$(q "$j" "$h['scenario_path']")" = "$scen" ] || fail "scenario path not the recorded one"
[ "$(q "$j" "$h['scenario_path_inferred']")" = False ] || fail "recorded path called inferred"
[ "$(q "$j" "$h['compiler']")" = "$(q "$out/ondemand/summary.json" "r['compiler']")" ] ||
	fail "compiler is not the run's"
[ "$(q "$j" "sum('does not record' in m for m in r['handoff']['missing_from_run_outputs'])")" = 0 ] ||
	fail "a run with metadata listed as missing it"
# The reproduce command rebuilds the same bytes.
cp -r "$out/ondemand" "$out/before"
eval "\"\$gv\" ${repro#govctl }" >/dev/null 2>&1
for f in summary.json timeseries.csv decisions.jsonl; do
	cmp -s "$out/before/$f" "$out/ondemand/$f" || fail "$f changed when rerun with reproduce"
done

# An older run: no scenario_path, command or compiler anywhere.
cp -r "$out/before" "$out/old"
python3 - "$out/old" <<'PY'
import json, sys
d = sys.argv[1]
s = json.load(open(d + "/summary.json"))
for k in ("scenario_path", "command", "compiler"):
    s.pop(k)
json.dump(s, open(d + "/summary.json", "w"), indent=2)
lines = open(d + "/decisions.jsonl").read().splitlines()
hd = json.loads(lines[0])
hd.pop("scenario_path"); hd.pop("command"); hd["versions"].pop("compiler")
lines[0] = json.dumps(hd, separators=(",", ":"))
open(d + "/decisions.jsonl", "w").write("\n".join(lines) + "\n")
PY
"$gv" report "$out/old" --baseline "$out/firmware-default" -o "$out/r2" >/dev/null 2>&1
j=$out/r2/report.json
repro=$(q "$j" "$h['reproduce']")
case $repro in
"govctl sim --scenario configs/scenarios/default.yaml --policy policies/baselines/ondemand.yaml --seed 1 --duration 60 --out $out/old") ;;
*) fail "old run's reproduce is '$repro'" ;;
esac
[ "$(q "$j" "$h['scenario_path_inferred']")" = True ] || fail "inferred path not flagged"
[ "$(q "$j" "sum('does not record' in m for m in r['handoff']['missing_from_run_outputs'])")" = 1 ] ||
	fail "old run's missing metadata not listed"
echo "report_meta: ok (reproduce: $cmd)"
