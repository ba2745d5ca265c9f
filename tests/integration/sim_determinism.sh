#!/usr/bin/env bash
# govctl sim: same scenario + policy + seed -> byte-identical outputs; another
# seed differs; bad CLI -> exit 2 with usage; bad files -> exit 1 with
# file:line:col diagnostics. $1: the build directory.
set -euo pipefail
build=${1:?usage: sim_determinism.sh BUILD_DIR}
govctl=${GOVCTL:-$build/govctl}
scenario=configs/scenarios/default.yaml
policy=policies/baselines/ondemand.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

run() { "$govctl" sim --scenario "$scenario" --policy "$policy" --duration 120 "$@"; }
run --seed 1 --out "$tmp/a" >/dev/null
run --seed 1 --out "$tmp/b" >/dev/null
run --seed 2 --out "$tmp/c" >/dev/null
for f in summary.json timeseries.csv decisions.jsonl; do
	[ -s "$tmp/a/$f" ] || fail "$f missing or empty"
	cmp -s "$tmp/a/$f" "$tmp/b/$f" || fail "$f differs between two runs with seed 1"
done
cmp -s "$tmp/a/decisions.jsonl" "$tmp/c/decisions.jsonl" && fail "seed 2 gave the same decisions as seed 1"
cmp -s "$tmp/a/summary.json" "$tmp/c/summary.json" && fail "seed 2 gave the same summary as seed 1"
# one decision per period plus header and restore records; 120 s at 500 ms
[ "$(wc -l <"$tmp/a/decisions.jsonl")" -eq 242 ] || fail "expected 242 decision-log lines"
[ "$(wc -l <"$tmp/a/timeseries.csv")" -eq 241 ] || fail "expected 241 timeseries lines"
grep -q '"tokens_per_joule"' "$tmp/a/summary.json" || fail "summary lacks tokens_per_joule"
grep -q '"seed": 2' "$tmp/c/summary.json" || fail "summary lacks the seed"
# the recorded command (no --out) reproduces the run byte for byte
cmd=$(sed -n 's/^  "command": "\(.*\)",$/\1/p' "$tmp/a/summary.json")
[ "$cmd" = "govctl sim --scenario $scenario --policy $policy --seed 1 --duration 120" ] ||
	fail "recorded command is '$cmd'"
eval "\"\$govctl\" ${cmd#govctl } --out \"\$tmp/r\"" >/dev/null
for f in summary.json timeseries.csv decisions.jsonl; do
	cmp -s "$tmp/a/$f" "$tmp/r/$f" || fail "$f differs when rerun with the recorded command"
done

expect_rc() {
	local want=$1; shift
	set +e
	"$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	set -e
	[ "$rc" -eq "$want" ] || { cat "$tmp/err" >&2; fail "'$*' exited $rc, want $want"; }
}
# usage errors: exit 2 and a usage line
expect_rc 2 "$govctl"
expect_rc 2 "$govctl" frobnicate
expect_rc 2 "$govctl" sim --policy "$policy"
grep -q usage "$tmp/err" || fail "no usage message for a missing --scenario"
expect_rc 2 "$govctl" sim --scenario "$scenario" --policy "$policy" --seed abc
expect_rc 2 "$govctl" sim --scenario "$scenario" --policy "$policy" --duration -5
expect_rc 2 "$govctl" sim --scenario "$scenario" --policy "$policy" --bogus
expect_rc 2 "$govctl" compare --scenarios "$scenario"
# bad files: exit 1 and file:line:col
cat >"$tmp/bad.yaml" <<'YAML'
name: bad
control:
  controller: ondemand
  period_ms: 5
thermal:
  ceiling_cc: 80
YAML
expect_rc 1 "$govctl" sim --scenario "$scenario" --policy "$tmp/bad.yaml" --out "$tmp/x"
grep -q "$tmp/bad.yaml:4:[0-9]*: error" "$tmp/err" || { cat "$tmp/err"; fail "no file:line:col for period_ms"; }
grep -q "$tmp/bad.yaml:6:[0-9]*: error" "$tmp/err" || { cat "$tmp/err"; fail "no file:line:col for the unknown key"; }
printf 'name: x\ncontrol:\n  controller: turbo\n' >"$tmp/bad2.yaml"
expect_rc 1 "$govctl" sim --scenario "$scenario" --policy "$tmp/bad2.yaml" --out "$tmp/x"
grep -q "$tmp/bad2.yaml:3:[0-9]*: error.*turbo.*ondemand" "$tmp/err" || { cat "$tmp/err"; fail "unknown controller not listed with valid ones"; }
expect_rc 1 "$govctl" sim --scenario "$tmp/none.yaml" --policy "$policy" --out "$tmp/x"
grep -q "$tmp/none.yaml" "$tmp/err" || fail "missing scenario not named"

# compare: the demo's grid, two workers, short
"$govctl" compare --scenarios "$scenario" --policies "$policy",policies/baselines/firmware-default.yaml \
	--baseline firmware-default --seeds 1 -j 2 --duration 60 --out "$tmp/cmp" >"$tmp/cmp.txt"
grep -q "firmware-default" "$tmp/cmp.txt" || fail "compare table lacks the baseline"
[ -s "$tmp/cmp/compare.json" ] && [ -s "$tmp/cmp/compare.md" ] || fail "compare outputs missing"
"$govctl" sim --scenario "$scenario" --policy "$policy" --seed 1 --duration 60 --out "$tmp/one" >/dev/null
cmp -s "$tmp/cmp/runs/default-ondemand-1/summary.json" "$tmp/one/summary.json" \
	|| fail "compare's run differs from govctl sim's"
echo "sim_determinism: ok"
