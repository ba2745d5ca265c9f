#!/usr/bin/env bash
# govctl report end to end (docs/report.md):
#  - the hot scenario's naive-INT8 run against firmware-default is classified
#    thermal-bound with clamp evidence and gets NO-GO;
#  - the best policy available today (ondemand) against firmware-default on the
#    default scenario gets a measured gain (the govd controller's GO:
#    report_govd.sh);
#  - a live decision log alone gives a report with recomputed figures;
#  - the same runs give byte-identical reports apart from the generation time;
#  - report.json signed with Ed25519 verifies, and fails once edited;
#  - report.html renders in headless Chromium to a non-blank screenshot.
# Exit 77 (skip) when the Azure trace, gnuplot, python3 or chromium is missing.
set -euo pipefail
build=$1
gv=$build/govctl
skip() { echo "SKIP: $*"; exit 77; }
[ -f "${GOVD_SHARED_DATA:-/nonexistent}/AzureLLMInferenceTrace2023_code.csv" ] ||
	skip "Azure code trace not found in GOVD_SHARED_DATA"
command -v gnuplot >/dev/null || skip "gnuplot not installed (gnuplot-nox)"
command -v python3 >/dev/null || skip "python3 not installed"
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || skip "chromium not installed"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# jq-like field access without jq: python3 expression over the report.
q() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }

sim() { "$gv" sim --scenario "configs/scenarios/$1.yaml" --policy "$2" --seed 1 --out "$3" >/dev/null 2>&1; }
sim azure-code-hot policies/baselines/naive-int8.yaml "$out/hot-int8"
sim azure-code-hot policies/baselines/firmware-default.yaml "$out/hot-fw"

# 1. naive INT8 on the hot scenario: thermal-bound with clamp evidence, NO-GO.
"$gv" report "$out/hot-int8" --baseline "$out/hot-fw" -o "$out/r1" >/dev/null
j=$out/r1/report.json
verdict=$(q "$j" "r['recommendation']['verdict']")
cls=$(q "$j" "r['bottlenecks']['runs'][0]['run_class']")
clamp_windows=$(q "$j" "sum(1 for w in r['bottlenecks']['runs'][0]['windows'] if w['class']=='thermal-bound' and w['clamp_periods']>0 and 'hardware slowdown in' in w['evidence'])")
clamps=$(q "$j" "r['monitors']['thermal_clamp_frequency'][0]['clamp_events']")
blocker=$(q "$j" "sum(1 for x in r['recommendation']['reasons'] if x['kind']=='blocker' and 'clamp' in x['text'])")
echo "hot naive-int8: $verdict, $cls, $clamps clamp event(s), $clamp_windows thermal window(s) with clamp evidence"
[ "$verdict" = "NO-GO" ]
[ "$cls" = "thermal-bound" ]
[ "$clamp_windows" -gt 0 ] && [ "$blocker" -eq 1 ]
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$clamps"
grep -q 'NO-GO' "$out/r1/report.md"
# The clamps are marked on the time series, as many as the run had.
marks=$(q "$j" "sum(e['count'] for e in r['figures'][0]['events'] if e['kind']=='hardware clamp' and e['role']=='candidate')")
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) == float(sys.argv[2]) else 1)" "$marks" "$clamps" ||
	{ echo "FAIL: $marks clamp marks for $clamps clamp events"; exit 1; }
grep -q '<svg' "$out/r1/report.html"

# 2. Byte-identical when regenerated from the same runs (into another dir),
#    apart from the one line carrying the generation time.
SOURCE_DATE_EPOCH=2000000000 "$gv" report "$out/hot-int8" --baseline "$out/hot-fw" -o "$out/r1b" >/dev/null
for f in report.json report.md report.html; do
	! cmp -s "$out/r1/$f" "$out/r1b/$f" || { echo "FAIL: $f carries no generation time"; exit 1; }
	[ "$(diff "$out/r1/$f" "$out/r1b/$f" | grep -c '^[<>]')" -eq 2 ] ||
		{ echo "FAIL: $f differs beyond one line"; diff "$out/r1/$f" "$out/r1b/$f" | head; exit 1; }
	cmp <(grep -v 'generated_at\|Generated at ' "$out/r1/$f") <(grep -v 'generated_at\|Generated at ' "$out/r1b/$f")
done
grep -q '"generated_at": "2033-05-18T03:33:20Z"' "$out/r1b/report.json"
echo "regenerated report: byte-identical apart from the generation time"

# 3. Signing: verify OK, then an edited report fails.
"$gv" keygen "$out/owner" >/dev/null
"$gv" report "$out/hot-int8" --baseline "$out/hot-fw" -o "$out/rs" --sign "$out/owner.key" >/dev/null
cmp <(grep -v generated_at "$out/r1/report.json") <(grep -v generated_at "$out/rs/report.json")
"$gv" verify "$out/rs/report.json" "$out/rs/report.json.sig" "$out/owner.pub"
cp "$out/rs/report.json" "$out/rs/before.json"
sed -i 's/"verdict": "NO-GO"/"verdict": "GO"/' "$out/rs/report.json"
! cmp -s "$out/rs/before.json" "$out/rs/report.json" || { echo "FAIL: the edit did not apply"; exit 1; }
if "$gv" verify "$out/rs/report.json" "$out/rs/report.json.sig" "$out/owner.pub" 2>/dev/null; then
	echo "FAIL: an edited report.json still verifies"
	exit 1
fi
cp "$out/rs/before.json" "$out/rs/report.json"
"$gv" verify "$out/rs/report.json" "$out/rs/report.json.sig" "$out/owner.pub" >/dev/null ||
	{ echo "FAIL: the restored report does not verify"; exit 1; }
# The signature covers report.md and report.html too (report.manifest lists
# their SHA-256s): a verdict edited in either is refused, naming the file.
for f in report.md report.html; do
	cp "$out/rs/$f" "$out/rs/$f.orig"
	grep -q 'NO-GO' "$out/rs/$f" || { echo "FAIL: $f has no verdict to edit"; exit 1; }
	sed -i 's/NO-GO/GO/' "$out/rs/$f"
	if "$gv" verify "$out/rs/report.json" "$out/rs/report.json.sig" "$out/owner.pub" 2>"$out/v.err"; then
		echo "FAIL: an edited $f still verifies"
		exit 1
	fi
	grep -q "$f changed since it was signed" "$out/v.err" || { echo "FAIL: the edited $f not named: $(cat "$out/v.err")"; exit 1; }
	mv "$out/rs/$f.orig" "$out/rs/$f"
done
grep -q '  report.html$' "$out/rs/report.manifest" || { echo "FAIL: no report.manifest"; exit 1; }
echo "signature: verifies, and fails after an edit of report.json, report.md or report.html"
# A truncated signature and a key of the wrong length are refused.
head -c 100 "$out/rs/report.json.sig" >"$out/trunc.sig"
if "$gv" verify "$out/r1/report.json" "$out/trunc.sig" "$out/owner.pub" 2>/dev/null; then
	echo "FAIL: a truncated signature verifies"
	exit 1
fi
if "$gv" verify "$out/r1/report.json" "$out/rs/report.json.sig" "$out/owner.key" 2>/dev/null; then
	echo "FAIL: a 64-byte key accepted as a public key"
	exit 1
fi
# keygen never overwrites a key; a secret key others can read is refused,
# and the error does not print the key.
! "$gv" keygen "$out/owner" 2>/dev/null || { echo "FAIL: keygen overwrote a key"; exit 1; }
[ "$(stat -c %a "$out/owner.key")" = 600 ]
chmod 644 "$out/owner.key"
if "$gv" report "$out/hot-int8" --baseline "$out/hot-fw" -o "$out/rp" --sign "$out/owner.key" \
	>/dev/null 2>"$out/rp.err"; then
	echo "FAIL: signed with a world-readable key"
	exit 1
fi
grep -q 'chmod 600' "$out/rp.err"
if grep -qi "$(head -c 16 "$out/owner.key")" "$out/rp.err"; then
	echo "FAIL: the error message shows the secret key"
	exit 1
fi
chmod 600 "$out/owner.key"
echo "signature: truncated signature, wrong key length, open key permissions refused"

# 4. A live govd decision log alone: figures recomputed from the log.
mkdir "$out/live"
cp "$out/hot-int8/decisions.jsonl" "$out/live/"
"$gv" report "$out/live/decisions.jsonl" --baseline "$out/hot-fw" -o "$out/r4" >/dev/null
src=$(q "$out/r4/report.json" "r['primary_metric']['runs'][0]['source']")
rel=$(python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['primary_metric']['runs'][0]['tokens_per_joule']; b=json.load(open(sys.argv[2]))['tokens_per_joule']; print(abs(a/b-1))" "$out/r4/report.json" "$out/hot-int8/summary.json")
echo "live log: $src, tokens/J off the ground truth by $rel"
[ "$src" = "recomputed from the decision log" ]
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 0.05 else 1)" "$rel"

# 4a. Where the evidence comes from: a log from a device (not the sim
#     backend) is live governed, with device, driver and firmware; one whose
#     header says dry_run is a live dry-run. Neither cap lifts to GO here.
mkdir "$out/gov" "$out/dry"
sed '1s/sim-0\.1\.0/535.104.05/g' "$out/hot-int8/decisions.jsonl" >"$out/gov/decisions.jsonl"
sed '1s/sim-0\.1\.0/535.104.05/g; 1s/"dry_run":false/"dry_run":true/' "$out/hot-int8/decisions.jsonl" >"$out/dry/decisions.jsonl"
"$gv" report "$out/gov" --baseline "$out/hot-fw" -o "$out/r4g" >/dev/null
"$gv" report "$out/dry" --baseline "$out/hot-fw" -o "$out/r4d" >/dev/null
[ "$(q "$out/r4g/report.json" "r['evidence']['runs'][0]['kind']")" = "live governed" ] || { echo "FAIL: governed kind"; exit 1; }
q "$out/r4g/report.json" "r['evidence']['runs'][0]['detail']" | grep -q 'driver 535.104.05, firmware 535.104.05' ||
	{ echo "FAIL: governed detail lacks driver/firmware"; exit 1; }
[ "$(q "$out/r4d/report.json" "r['evidence']['runs'][0]['kind']")" = "live dry-run" ] || { echo "FAIL: dry-run kind"; exit 1; }
# The report's evidence is the weakest of candidate and baseline: the
# baseline here is simulated.
[ "$(q "$out/r4d/report.json" "r['evidence']['kind']")" = simulated ] || { echo "FAIL: weakest evidence"; exit 1; }
echo "evidence kinds: live governed, live dry-run, simulated"

# 4b. Run directories with spaces and quotes: the report is written, and the
#     commands it records quote them for the shell.
odd="$out/run dir 'q'"
cp -r "$out/hot-int8" "$odd"
"$gv" report "$odd" --baseline "$out/hot-fw" -o "$out/r4b" >/dev/null
cmd=$(q "$out/r4b/report.json" "r['command']")
rep=$(q "$out/r4b/report.json" "r['handoff']['runs'][0]['reproduce']")
python3 -c "import shlex,sys; a=shlex.split(sys.argv[1]); sys.exit(0 if a[2]==sys.argv[2] else 1)" "$cmd" "$odd"
python3 -c "import shlex,sys; a=shlex.split(sys.argv[1]); sys.exit(0 if a[-1]==sys.argv[2] else 1)" "$rep" "$odd"
echo "odd run path: report written, commands quoted"

# 5. Best available policy today vs firmware-default on balanced.yaml's
#    workload profile (configs/scenarios/default.yaml): a measured gain, and
#    conditional at best because a baseline policy arms no rollback trigger.
sim default policies/baselines/ondemand.yaml "$out/def-ond"
sim default policies/baselines/firmware-default.yaml "$out/def-fw"
"$gv" report "$out/def-ond" --baseline "$out/def-fw" -o "$out/r5" >/dev/null
v5=$(q "$out/r5/report.json" "r['recommendation']['verdict']")
g5=$(q "$out/r5/report.json" "r['recommendation']['gain']")
echo "default ondemand vs firmware-default: $v5, gain $g5"
[ "$v5" = "GO WITH CONDITIONS" ]
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.02 else 1)" "$g5"
q "$out/r5/report.json" "[x['text'] for x in r['recommendation']['reasons']]" | grep -q unguarded

# 6. HTML renders in headless Chromium to a non-blank screenshot.
sandbox=()
[ "$(id -u)" -ne 0 ] || sandbox=(--no-sandbox)
timeout 120 "$chromium" --headless "${sandbox[@]}" --disable-gpu --hide-scrollbars \
	--user-data-dir="$out/chromium" --window-size=1280,2400 \
	--screenshot="$out/shot.png" "file://$out/r1/report.html" >/dev/null 2>&1 || true
[ -s "$out/shot.png" ] || { echo "FAIL: chromium wrote no screenshot"; exit 1; }
python3 tests/integration/png_nonblank.py "$out/shot.png"
