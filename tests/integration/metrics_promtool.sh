#!/usr/bin/env bash
# Integration: the metrics endpoint serves a real governor run (sim backend,
# sensor-faults scenario) and its exposition passes `promtool check metrics`
# (Debian's prometheus package, a checker we did not write). Also: only
# GET /metrics is served, other paths 404, other methods 405. $1 = build dir.
# Exit 77 (skip) only when promtool or curl is missing.
set -euo pipefail
build=${1:?usage: metrics_promtool.sh BUILD_DIR}
driver="$build/tests/metrics_driver"
promtool=$(command -v promtool || true)
[ -x /usr/bin/promtool ] && promtool=/usr/bin/promtool
if [ -z "$promtool" ] || ! command -v curl >/dev/null; then
	echo "SKIP: promtool or curl not installed (Debian: prometheus, curl)"
	exit 77
fi
[ -x "$driver" ] || { echo "FAIL: $driver not built"; exit 1; }

tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# 640 s of virtual time: the stuck junction (300 s) and NaN memory
# temperature (600 s) faults have happened, SLA windows closed, and the
# last window saw requests (latency quantiles present).
"$driver" configs/scenarios/sensor-faults.yaml policies/balanced.yaml 640 120 \
	>"$tmp/driver.out" 2>"$tmp/driver.err" &
pid=$!
port=
for _ in $(seq 1 300); do
	port=$(sed -n 's/^port \([0-9][0-9]*\)$/\1/p' "$tmp/driver.out")
	[ -n "$port" ] && break
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/driver.err"; echo "FAIL: driver exited"; exit 1; }
	sleep 0.1
done
[ -n "$port" ] || { echo "FAIL: driver printed no port"; exit 1; }
url="http://127.0.0.1:$port"

code=$(curl -sS -o "$tmp/metrics.txt" -D "$tmp/headers" -w '%{http_code}' "$url/metrics")
[ "$code" = 200 ] || { echo "FAIL: GET /metrics gave $code"; exit 1; }
grep -qi '^content-type: text/plain; version=0.0.4' "$tmp/headers" ||
	{ echo "FAIL: content type"; cat "$tmp/headers"; exit 1; }
echo "$(wc -l <"$tmp/metrics.txt") lines, $(grep -c '^# TYPE' "$tmp/metrics.txt") families"

# promtool: parse errors and lint findings (the one by design aside).
. "$(dirname "$0")/lib/promlint.sh"
PROMTOOL=$promtool
promlint "$tmp/metrics.txt" >"$tmp/promtool.out" ||
	{ echo "FAIL: promtool check metrics:"; cat "$tmp/promtool.out"; exit 1; }

# The run's content shows through: a real device, clocks, faults counted.
need() {
	grep -Eq "$1" "$tmp/metrics.txt" || { echo "FAIL: no line matching: $1"; exit 1; }
}
need '^govd_policy_info\{device="sim0",policy="balanced",hash="fnv1a64:[0-9a-f]{16}"\} 1$'
need '^govd_device_info\{device="sim0",UUID="SIM-sim0",modelName="[^"]+"(,Hostname="[^"]+")?\} 1$'
need '^govd_request_latency_seconds_bucket\{device="sim0",kind="ttft",le="\+Inf"\} [1-9][0-9]*$'
need '^govd_periods_total\{device="sim0"\} 1280$'
need '^govd_clock_max_hertz\{device="sim0"\} [1-9][0-9]{8,9}$'
need '^govd_power_watts\{device="sim0",rail="accel"\} [1-9]'
need '^govd_telemetry_faults_total\{device="sim0",signal="temp_junction"\} [1-9]'
need '^govd_decisions_total\{device="sim0",reason="init"\} 1$'
need '^govd_sla_windows_total\{device="sim0"\} [1-9]'
need '^govd_tick_duration_seconds_count 1280$'
need '^govd_node_power_budget_watts 700$'
need '^govd_window_latency_p99_seconds\{device="sim0",kind="ttft"\} 0\.[0-9]+$'
need '^govd_tokens_per_joule\{device="sim0"\} 0\.[0-9]+$'

code=$(curl -sS -o /dev/null -w '%{http_code}' "$url/")
[ "$code" = 404 ] || { echo "FAIL: GET / gave $code, want 404"; exit 1; }
code=$(curl -sS -o /dev/null -w '%{http_code}' "$url/metrics/x")
[ "$code" = 404 ] || { echo "FAIL: GET /metrics/x gave $code, want 404"; exit 1; }
code=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -d x=1 "$url/metrics")
[ "$code" = 405 ] || { echo "FAIL: POST /metrics gave $code, want 405"; exit 1; }

kill "$pid"
wait "$pid" || { echo "FAIL: driver exit status $?"; cat "$tmp/driver.err"; exit 1; }
pid=
grep -q '^metrics_driver: 1 scrapes$' "$tmp/driver.err" ||
	{ echo "FAIL: scrape count"; cat "$tmp/driver.err"; exit 1; }
echo "PASS"
