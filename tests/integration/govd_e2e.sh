#!/usr/bin/env bash
# govd end to end on the sim backend in real time (100 ms period, plant at
# x10): --check, SIGHUP with a good and a bad policy (bad refused with
# file:line:col, old kept), SIGTERM -> restore record + exit 0 + state file
# gone, kill -9 -> every decision-log line valid and the state file left,
# next start restores from it, govctl restore does the same, --dry-run
# leaves no state file, rotation keeps N files each starting with a header.
# $1: the build directory. Exit 77 (skip) when govd was not built.
set -euo pipefail
build=${1:?usage: govd_e2e.sh BUILD_DIR}
govd=$build/govd
govctl=${GOVCTL:-$build/govctl}
[ -x "$govd" ] || { echo "skip: $govd not built"; exit 77; }
py=/usr/bin/python3
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/err" ] && sed 's/^/  govd: /' "$tmp/err" >&2; exit 1; }

cp policies/thermal-conservative.yaml "$tmp/p.yaml"
# Operators: nobody at first (this user may only read), this user after the reload.
write_config() {
OPERATOR=$1
cat >"$tmp/c.yaml" <<YAML
policy: p.yaml
budget_w: 1000
state_file: state.json
decision_log: {dir: log, max_bytes: 30000, keep: 9}
metrics: {listen: "127.0.0.1:0"}
control:
  socket: ctl.sock
  read: {users: [$(id -u)]}
  operator: {users: [$OPERATOR]}
devices:
  - {name: gpu0, backend: sim, time_scale: 10, options: {scenario: configs/scenarios/default.yaml, seed: 1}}
  - {name: gpu1, backend: sim, time_scale: 10, options: {scenario: configs/scenarios/burst.yaml, seed: 2}}
YAML
}
write_config 65534
sock=$tmp/ctl.sock
state=$tmp/state.json
log0=$tmp/log/gpu0.jsonl

# Wait (bounded) until a command succeeds.
wait_for() {
	local what=$1; shift
	for _ in $(seq 200); do "$@" && return 0; sleep 0.05; done
	fail "timed out waiting for $what"
}
# Lines of a log and its rotated files (keep is large enough that none is
# dropped during the test, so the count only grows).
lines() { { cat "$1" "$1".* 2>/dev/null || true; } | wc -l; }
# The newest decision of a log: right after a rotation the file's last line
# is the header the new file starts with, so look back into .1 too.
last_decision() { { cat "$1.1" "$1" 2>/dev/null || true; } | { grep '"type":"decision"' || true; } | tail -1; }
# The newest record that is not a header: a write that passes max_bytes
# rotates after it, so the restore record can close .1 and leave the new
# file with its header alone.
last_record() { { cat "$1.1" "$1" 2>/dev/null || true; } | { grep -v '"type":"header"' || true; } | tail -1; }
has_lines() { [ "$(lines "$1")" -ge "$2" ]; }
start() { "$govd" --config "$tmp/c.yaml" "$@" 2>"$tmp/err" & pid=$!; }
stop_with() {
	kill "-$1" "$pid"
	set +e; wait "$pid"; rc=$?; set -e
	pid=
}
# Every line of every decision log (rotated too) is JSON; each file ends in a newline.
logs_valid() {
	$py - "$tmp"/log/*.jsonl* <<'PY'
import json, sys
for p in sys.argv[1:]:
    data = open(p, "rb").read()
    assert data.endswith(b"\n"), p + ": last line incomplete"
    for i, line in enumerate(data.splitlines(), 1):
        json.loads(line)  # raises: the test fails with the file and line
PY
}

# the JSON Schema accepts the shipped config and this one (YAML 1.1 -> JSON, as editors read it)
$py - configs/sim.yaml "$tmp/c.yaml" <<'PY' || fail "configs/schema/govd-config.schema.json rejects a config"
import json, sys, jsonschema, yaml
schema = json.load(open("configs/schema/govd-config.schema.json"))
jsonschema.Draft202012Validator.check_schema(schema)
for p in sys.argv[1:]:
    jsonschema.validate(yaml.safe_load(open(p)), schema)
bad = {"devices": [{"name": "a", "backend": "nvml", "time_scale": 2}]}
assert not jsonschema.Draft202012Validator(schema).is_valid(bad)
PY
"$govd" --config configs/sim.yaml --check >/dev/null || fail "configs/sim.yaml does not pass --check"

# --check
"$govd" --config "$tmp/c.yaml" --check >"$tmp/out" || fail "--check rejects a good config"
grep -q "2 device(s), period 100 ms, budget 1000 W" "$tmp/out" || fail "--check summary: $(cat "$tmp/out")"
printf 'devices:\n  - {name: a, backend: sim, polcy: x}\n' >"$tmp/bad.yaml"
set +e; "$govd" --config "$tmp/bad.yaml" --check 2>"$tmp/checkerr"; rc=$?; set -e
[ $rc -eq 1 ] || fail "--check on a bad config exited $rc"
grep -q "bad.yaml:2:[0-9]*: error: devices\[0\].polcy" "$tmp/checkerr" || fail "no file:line:col: $(cat "$tmp/checkerr")"
set +e; "$govd" 2>/dev/null; rc=$?; set -e
[ $rc -eq 2 ] || fail "no --config: exit $rc, want 2"

# 1. run; the state file is there before the first write
start
wait_for "decisions" has_lines "$log0" 10
[ -s "$state" ] || fail "no state file while running"
$py -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"]=="govd-state/1" and len(d["devices"])==2' "$state" \
	|| fail "state file content"

# metrics: scraped over HTTP, one family per device and the loop's own
port=$(grep -o 'metrics on http://127.0.0.1:[0-9]*' "$tmp/err" | grep -o '[0-9]*$')
[ -n "$port" ] || fail "no metrics address logged"
wait_for "a scrape with periods" sh -c "curl -sf http://127.0.0.1:$port/metrics >'$tmp/metrics' && grep -q '^govd_tick_duration_seconds_count [1-9]' '$tmp/metrics'"
grep -q 'device="gpu1"' "$tmp/metrics" || fail "metrics lack device gpu1"
if command -v promtool >/dev/null; then
	. "$(dirname "$0")/lib/promlint.sh"
	promlint "$tmp/metrics" >"$tmp/promtool" || { cat "$tmp/promtool"; fail "promtool check metrics"; }
fi
# control socket: status for a reader; operator commands from a non-operator refused and logged
"$govctl" status --json --socket "$sock" >"$tmp/status" || fail "govctl status failed"
$py -c 'import json,sys; s=json.load(open(sys.argv[1])); assert len(s["devices"])==2 and s["period_ms"]==100, s' "$tmp/status" \
	|| fail "status content: $(cat "$tmp/status")"
set +e; "$govctl" hold --socket "$sock" >"$tmp/out" 2>&1; rc=$?; set -e
[ $rc -ne 0 ] || fail "hold from a non-operator accepted"
grep -qi "denied" "$tmp/out" || fail "hold refusal does not say denied: $(cat "$tmp/out")"
wait_for "refusal logged" grep -qi "denied\|refused" "$tmp/err"

# 2. reload, good: a new policy hash in the log, a lower cap in force; this
# user becomes an operator (the allow-list reloads too)
sed -i 's/^  cap_w: .*/  cap_w: 450/' "$tmp/p.yaml"
write_config "$(id -u)"
kill -HUP "$pid"
wait_for "reload" grep -q "reloaded" "$tmp/err"
h=$(grep -o 'gpu0=thermal-conservative (fnv1a64:[0-9a-f]*)' "$tmp/err" | grep -o 'fnv1a64:[0-9a-f]*')
wait_for "header with the new hash" grep -q "\"type\":\"header\".*\"policy_hash\":\"$h\"" "$log0"
n=$(lines "$log0")
wait_for "decisions after reload" has_lines "$log0" $((n + 5))
last_decision "$log0" | $py -c 'import json,sys; assert json.load(sys.stdin)["after"]["power_limit_mw"] <= 450000' \
	|| fail "cap 450 W not in force after reload"
# an operator lowers the node budget: both limits together under it
"$govctl" set budget-w 700 --socket "$sock" >"$tmp/out" || fail "set budget-w by an operator: $(cat "$tmp/out")"
n=$(lines "$log0")
wait_for "decisions under the new budget" has_lines "$log0" $((n + 5))
"$govctl" status --json --socket "$sock" >"$tmp/status"
$py -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["budget_w"]==700 and sum(d["power_limit_mw"] for d in s["devices"]) <= 700000, s' "$tmp/status" \
	|| fail "budget 700 W not in force: $(cat "$tmp/status")"

# 3. reload, bad: refused with file:line:col, old policy kept, loop goes on
printf 'name: broken\ncontrol:\n  controller: turbo\n' >"$tmp/p.yaml"
kill -HUP "$pid"
wait_for "refusal" grep -q "reload refused" "$tmp/err"
grep -q "p.yaml:3:[0-9]*: error: control.controller" "$tmp/err" || fail "refusal lacks file:line:col"
kill -0 "$pid" || fail "govd died on a bad reload"
n=$(lines "$log0")
wait_for "decisions after the refused reload" has_lines "$log0" $((n + 5))
last_decision "$log0" | grep -q "\"policy_hash\":\"$h\"" || fail "old policy not kept"
cp policies/thermal-conservative.yaml "$tmp/p.yaml"

# 4. SIGTERM: restore recorded, exit 0, state file removed
stop_with TERM
[ $rc -eq 0 ] || fail "SIGTERM: exit $rc"
last_record "$log0" | grep -q '"type":"restore".*"power_limit_mw":700000.*"rc":0' || fail "no restore record: $(last_record "$log0")"
[ ! -e "$state" ] || fail "state file left after a clean stop"
logs_valid || fail "decision log invalid after SIGTERM"

# 5. kill -9: log valid up to its last line, state file left; next start restores
n=$(lines "$log0")
start
wait_for "decisions" has_lines "$log0" $((n + 5))
stop_with KILL
[ -s "$state" ] || fail "state file gone after kill -9"
logs_valid || fail "decision log invalid after kill -9"
start
wait_for "restore at start" grep -q "restored 2 device(s) from $state" "$tmp/err"
n=$(lines "$log0")
wait_for "decisions" has_lines "$log0" $((n + 3))
stop_with INT
[ $rc -eq 0 ] || fail "SIGINT: exit $rc"
[ ! -e "$state" ] || fail "state file left after SIGINT"

# 6. govctl restore (systemd's ExecStopPost) after a kill -9
n=$(lines "$log0")
start
wait_for "decisions" has_lines "$log0" $((n + 3))
stop_with KILL
"$govctl" restore --config "$tmp/c.yaml" >"$tmp/out" || fail "govctl restore failed"
grep -q "restored 2 device(s)" "$tmp/out" || fail "govctl restore said: $(cat "$tmp/out")"
[ ! -e "$state" ] || fail "govctl restore left the state file"
"$govctl" restore --state "$state" >"$tmp/out" || fail "govctl restore with nothing to do failed"
grep -q "nothing to restore" "$tmp/out" || fail "govctl restore, nothing there: $(cat "$tmp/out")"

# 7. --dry-run: decisions, no state file
n=$(lines "$log0")
start --dry-run
wait_for "dry-run decisions" has_lines "$log0" $((n + 5))
[ ! -e "$state" ] || fail "dry run wrote a state file"
grep -q "DRY RUN" "$tmp/err" || fail "dry run not announced"
stop_with TERM
[ $rc -eq 0 ] || fail "dry run SIGTERM: exit $rc"

# 8. rotation (how many are kept: test_daemon_logrot): each rotated file
# starts with its header
[ -f "$log0.1" ] || fail "no rotation (gpu0.jsonl.1 missing)"
for f in "$log0" "$log0".*; do
	head -1 "$f" | grep -q '^{"type":"header"' || fail "$f does not start with a header"
done
logs_valid || fail "decision log invalid after rotation"
echo "govd_e2e: ok"
