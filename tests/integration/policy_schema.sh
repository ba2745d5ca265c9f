#!/usr/bin/env bash
# The JSON Schema and the loader describe one language: every shipped policy
# and tests/policies/good/ pass both; every tests/policies/bad/ file is
# rejected by govctl lint, and by the schema too unless it is listed in
# tests/policies/bad/loader-only.txt (then the schema must accept it, so the
# list cannot go stale); the schema's controllers and parameter ranges match
# the registry. Also: govctl lint exit codes and JSON output. $1: build dir.
set -euo pipefail
build=${1:?usage: policy_schema.sh BUILD_DIR}
govctl=${GOVCTL:-$build/govctl}
py=/usr/bin/python3   # Debian's python3-jsonschema/python3-yaml (not pyenv's)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if ! $py -c 'import jsonschema, yaml' 2>/dev/null; then
	fail "$py lacks jsonschema or yaml: run tools/install-deps (python3-jsonschema python3-yaml)"
fi
helper=tests/integration/policy_schema.py

# 1. shipped and good policies: schema valid and lint has no error
shipped=(policies/*.yaml policies/baselines/*.yaml tests/policies/good/*.yaml)
$py $helper "${shipped[@]}" >"$tmp/schema.out"
if grep -v '^ok ' "$tmp/schema.out"; then fail "schema rejects a shipped/good policy"; fi
"$govctl" lint "${shipped[@]}" >"$tmp/lint.out" || { cat "$tmp/lint.out"; fail "lint rejects a shipped/good policy"; }
# the library lints clean even with --strict
"$govctl" lint --strict policies/*.yaml >/dev/null || fail "library policies have lint warnings"
# every shipped policy points editors at the schema
for f in policies/*.yaml policies/baselines/*.yaml; do
	head -1 "$f" | grep -q '^# yaml-language-server: \$schema=.*schema/policy.schema.json$' ||
		fail "$f lacks the yaml-language-server schema line"
	rel=$(head -1 "$f" | sed 's/.*\$schema=//')
	[ -f "$(dirname "$f")/$rel" ] || fail "$f: schema path $rel does not resolve"
done

# 2. bad examples
only=$(grep -v '^#' tests/policies/bad/loader-only.txt | awk 'NF {print $1}')
for f in $only; do [ -f "tests/policies/bad/$f" ] || fail "loader-only.txt names missing $f"; done
n=0
for f in tests/policies/bad/*.yaml; do
	n=$((n + 1))
	base=$(basename "$f")
	set +e
	"$govctl" lint "$f" >"$tmp/one.out" 2>&1
	rc=$?
	set -e
	[ $rc -eq 1 ] || fail "lint exit $rc (want 1) on $f"
	verdict=$($py $helper "$f")
	if grep -qx "$base" <<<"$only"; then
		[[ $verdict == ok* ]] || fail "$base is listed loader-only but the schema rejects it: $verdict"
	else
		[[ $verdict == invalid* ]] || fail "schema accepts $base; reject it in the schema or list it in loader-only.txt"
	fi
done
[ $n -ge 20 ] || fail "only $n bad examples"

# 3. controllers and parameters: schema == registry
"$govctl" lint --controllers >"$tmp/ctl.json"
$py $helper --controllers "$tmp/ctl.json" || fail "schema controllers/params differ from the registry"

# 4. lint CLI: exit codes, JSON findings
expect_rc() {
	local want=$1; shift
	set +e
	"$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	set -e
	[ $rc -eq "$want" ] || { cat "$tmp/out" "$tmp/err"; fail "exit $rc (want $want): $*"; }
}
expect_rc 2 "$govctl" lint
expect_rc 2 "$govctl" lint --format yaml policies/balanced.yaml
expect_rc 2 "$govctl" lint --bogus policies/balanced.yaml
expect_rc 0 "$govctl" lint policies/balanced.yaml tests/policies/good/warn-thermal.yaml
expect_rc 1 "$govctl" lint --strict tests/policies/good/warn-thermal.yaml
expect_rc 1 "$govctl" lint policies/balanced.yaml tests/policies/bad/p95-above-p99.yaml
expect_rc 1 "$govctl" lint /nonexistent/policy.yaml
expect_rc 1 "$govctl" lint --format json tests/policies/bad/many-errors.yaml tests/policies/good/warn-thermal.yaml
$py - "$tmp/out" <<'PY' || fail "lint --format json output"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["files"] == 2, d
assert d["errors"] == 7 and d["warnings"] == 2, d
keys = {"file", "line", "col", "severity", "code", "path", "message"}
for f in d["findings"]:
    assert set(f) == keys, f
    assert f["line"] >= 1 and f["col"] >= 1, f
    assert f["severity"] in ("error", "warning"), f
first = d["findings"][0]
assert first == {"file": "tests/policies/bad/many-errors.yaml", "line": 5, "col": 44,
                 "severity": "error", "code": "range", "path": "control.period_ms",
                 "message": "5 is out of range; allowed 10..60000 ms"}, first
codes = {f["code"] for f in d["findings"]}
assert {"p95-above-p99", "ceiling-above-slowdown", "min-above-max", "unknown-key",
        "no-hysteresis", "ceiling-near-slowdown"} <= codes, codes
PY
# 4. keys: the schema's types, ranges, defaults and descriptions and
# docs/policy.md's key tables are what the loader's key table says
# (tools/gen-policy-keys writes both; a hand edit of either shows here)
GOVCTL=$govctl $py tools/gen-policy-keys "$build" --check >"$tmp/keys.diff" ||
	{ head -40 "$tmp/keys.diff"; fail "schema or docs/policy.md differ from the key table: run tools/gen-policy-keys $build"; }
mkdir -p "$tmp/stale/policies/schema" "$tmp/stale/docs"
sed 's/"maximum": 150,/"maximum": 151,/' policies/schema/policy.schema.json >"$tmp/stale/policies/schema/policy.schema.json"
sed 's/| 20..150, < `envelope.slowdown_c` |/| 20..151 |/' docs/policy.md >"$tmp/stale/docs/policy.md"
cmp -s "$tmp/stale/docs/policy.md" docs/policy.md && fail "the doc-edit check did not edit the doc"
abs_govctl=$(realpath "$govctl") abs_build=$(realpath "$build") top=$PWD
(cd "$tmp/stale" && ! GOVCTL=$abs_govctl $py "$top/tools/gen-policy-keys" "$abs_build" --check >/dev/null 2>&1) ||
	fail "gen-policy-keys --check passed a hand-edited schema and doc"
# a key the schema lacks is added from its row (a new key is a row)
mkdir -p "$tmp/new/policies/schema" "$tmp/new/docs"
cp docs/policy.md "$tmp/new/docs/"
$py - policies/schema/policy.schema.json "$tmp/new/policies/schema/policy.schema.json" <<'PY'
import collections, json, sys
s = json.load(open(sys.argv[1]), object_pairs_hook=collections.OrderedDict)
del s["properties"]["telemetry"]["properties"]["stuck_periods"]
open(sys.argv[2], "w").write(json.dumps(s, indent=2) + "\n")
PY
(cd "$tmp/new" && GOVCTL=$abs_govctl $py "$top/tools/gen-policy-keys" "$abs_build") ||
	fail "gen-policy-keys could not add a key the schema lacks"
cmp -s "$tmp/new/policies/schema/policy.schema.json" policies/schema/policy.schema.json ||
	fail "gen-policy-keys added telemetry.stuck_periods other than the committed schema has it"
echo "policy_schema: ok ($n bad examples)"
