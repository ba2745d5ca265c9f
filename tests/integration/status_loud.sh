#!/usr/bin/env bash
# What an operator reads is what the devices run (issue 34), in a dry run of
# two sim devices:
# - outside the policy's envelope is loud: gpu0's policy is validated only
#   on another driver ("550.*"), so it holds the safe point and says so in
#   the metric govd_outside_envelope 1, a `govctl status` line naming why,
#   and its JSON's per-device "envelope"; gpu1 (inside) shows 0 and null;
# - a dry run shows what is in force, not what govd would set: gpu1's
#   balanced policy locks clocks, yet govd_clock_locked is 0 and the status
#   table says LOCKED no; govd_dry_run_would_clock_locked 1, the status
#   line "would set" and the JSON's would_set carry the decision.
# $1: the build directory. Exit 77 (skip) when govd was not built.
set -euo pipefail
build=${1:?usage: envelope_loud.sh BUILD_DIR}
govd=$build/govd
govctl=${GOVCTL:-$build/govctl}
[ -x "$govd" ] && [ -x "$govctl" ] || { echo "skip: govd/govctl not built in $build"; exit 77; }
command -v curl >/dev/null || { echo "skip: curl missing (tools/install-deps)"; exit 77; }
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/err" ] && sed 's/^/  govd: /' "$tmp/err" >&2; exit 1; }

sed -e 's/^  driver_versions: .*/  driver_versions: ["550.*"]   # not the sim: outside/' \
	policies/balanced.yaml >"$tmp/real.yaml"
grep -q '"550\.\*"' "$tmp/real.yaml" || fail "could not narrow balanced.yaml's envelope"
cp policies/balanced.yaml "$tmp/sim.yaml"
cat >"$tmp/c.yaml" <<YAML
state_file: state.json
decision_log: {dir: log}
metrics: {listen: "127.0.0.1:0"}
control:
  socket: ctl.sock
  read: {users: [$(id -u)]}
devices:
  - {name: gpu0, backend: sim, policy: real.yaml, time_scale: 10, options: {scenario: configs/scenarios/default.yaml, seed: 1}}
  - {name: gpu1, backend: sim, policy: sim.yaml, time_scale: 10, options: {scenario: configs/scenarios/default.yaml, seed: 2}}
YAML
"$govd" --config "$tmp/c.yaml" --dry-run 2>"$tmp/err" &
pid=$!
for _ in $(seq 200); do
	port=$(grep -o 'metrics on http://127.0.0.1:[0-9]*' "$tmp/err" | grep -o '[0-9]*$' || true)
	[ -n "$port" ] && curl -sf "http://127.0.0.1:$port/metrics" >"$tmp/m" &&
		grep -q '^govd_periods_total{device="gpu0"} [1-9]' "$tmp/m" && break
	sleep 0.05
done
[ -n "$port" ] || fail "no metrics address logged"
grep -q '^govd_outside_envelope{device="gpu0"} 1$' "$tmp/m" || fail "metric: gpu0 not outside: $(grep envelope "$tmp/m")"
grep -q '^govd_outside_envelope{device="gpu1"} 0$' "$tmp/m" || fail "metric: gpu1 not inside: $(grep envelope "$tmp/m")"
"$govctl" status --socket "$tmp/ctl.sock" >"$tmp/st" || fail "govctl status"
grep -q "^gpu0: OUTSIDE THE POLICY'S ENVELOPE, holding the safe point: .*driver version 'sim-0.1.0' matches no envelope.driver_versions pattern" "$tmp/st" ||
	fail "status line: $(cat "$tmp/st")"
if grep -q "^gpu1: OUTSIDE" "$tmp/st"; then fail "gpu1 reported outside"; fi
"$govctl" status --json --socket "$tmp/ctl.sock" >"$tmp/sj"
/usr/bin/python3 - "$tmp/sj" <<'PY' || fail "status JSON: $(cat "$tmp/sj")"
import json, sys
d = {x["name"]: x for x in json.load(open(sys.argv[1]))["devices"]}
assert "driver version" in d["gpu0"]["envelope"], d["gpu0"]
assert d["gpu1"]["envelope"] is None, d["gpu1"]
PY
# the dry run: in force vs would set
grep -q '^govd_clock_locked{device="gpu1"} 0$' "$tmp/m" || fail "dry run: clock shown locked: $(grep clock_locked "$tmp/m")"
grep -q '^govd_dry_run_would_clock_locked{device="gpu1"} 1$' "$tmp/m" ||
	fail "dry run: no would-set gauge: $(grep would "$tmp/m")"
grep -q '^govd_dry_run_would_power_limit_watts{device="gpu1"} [1-9]' "$tmp/m" || fail "dry run: would-set limit"
grep -q '^gpu1 .* no  ' "$tmp/st" || fail "dry run: status table says locked: $(cat "$tmp/st")"
grep -q '^gpu1: dry run, would set: clock locked at [0-9]* MHz, power limit [0-9.]* W$' "$tmp/st" ||
	fail "dry run: no would-set line: $(cat "$tmp/st")"
/usr/bin/python3 - "$tmp/sj" <<'PY' || fail "dry run, status JSON: $(cat "$tmp/sj")"
import json, sys
d = {x["name"]: x for x in json.load(open(sys.argv[1]))["devices"]}["gpu1"]
assert d["clk_locked"] is False and d["would_set"]["clk_locked"] is True, d
assert d["clk_max_khz"] == 1980000, d
PY
kill -TERM "$pid"
wait "$pid" || fail "govd exit status $?"
pid=
echo "ok: gpu0 outside (metric 1, status line, JSON reason), gpu1 inside (0, null); dry run: in force unlocked, would-set locked in the gauges, the status line and the JSON"
