#!/usr/bin/env bash
# The monitoring kit against real peers: Debian's Prometheus server scrapes a
# real govd (sim backend, two devices on two policies, x10 time) and a
# dcgm-exporter-format fixture carrying the sim devices' UUIDs; it loads
# configs/monitoring/govd-rules.yml. Then every recording and alerting rule
# expression, every Grafana panel query and every PromQL example of
# docs/metrics.md is evaluated through /api/v1/query and must return data
# with the labels it promises (prometheus_check.py). Bounded: 90 s of polling
# at most; every process it starts is stopped on exit.
# $1: the build directory. Exit 77 only when govd was not built.
set -euo pipefail
build=${1:?usage: prometheus_live.sh BUILD_DIR}
govd=$build/govd
prometheus=/usr/bin/prometheus
[ -x "$govd" ] || { echo "skip: $govd not built"; exit 77; }
[ -x "$prometheus" ] || { echo "FAIL: $prometheus missing (tools/install-deps installs prometheus)"; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
chmod 700 "$tmp"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	for f in govd.err prom.err; do
		[ -s "$tmp/$f" ] && tail -20 "$tmp/$f" | sed "s/^/  $f: /" >&2
	done
	exit 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# govd: private state and log directories, metrics on a port of its choice.
mkdir -m 700 "$tmp/state" "$tmp/log"
cp policies/balanced.yaml "$tmp/balanced.yaml"
cp policies/efficiency.yaml "$tmp/efficiency.yaml"
cat >"$tmp/govd.yaml" <<YAML
node: prom-test
policy: balanced.yaml
budget_w: 1100
state_file: state/state.json
decision_log: {dir: log}
metrics: {listen: "127.0.0.1:0"}
control: {enabled: false}
devices:
  - {name: gpu0, backend: sim, time_scale: 10, options: {scenario: configs/scenarios/default.yaml, seed: 1}}
  - {name: gpu1, backend: sim, time_scale: 10, policy: efficiency.yaml,
     options: {scenario: configs/scenarios/burst.yaml, seed: 2}}
YAML
"$govd" --config "$tmp/govd.yaml" 2>"$tmp/govd.err" &
pids+=($!)
gport=
for _ in $(seq 100); do
	gport=$(grep -o 'metrics on http://127.0.0.1:[0-9]*' "$tmp/govd.err" | grep -o '[0-9]*$' || true)
	[ -n "$gport" ] && break
	kill -0 "${pids[0]}" 2>/dev/null || fail "govd exited"
	sleep 0.1
done
[ -n "$gport" ] || fail "govd logged no metrics address"

# dcgm-exporter's exposition for the same devices (its label names, as in
# its README): a fixture, since dcgm-exporter needs a real GPU.
mkdir "$tmp/dcgm"
# (identity is known from the first period on)
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$gport/metrics" >"$tmp/govd.metrics" || fail "scrape of govd"
	[ "$(grep -c '^govd_device_info{.*UUID=' "$tmp/govd.metrics")" = 2 ] && break
	sleep 0.1
done
python3 - "$tmp/govd.metrics" "$tmp/dcgm/metrics" <<'PY'
import re, sys
out = ["# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).", "# TYPE DCGM_FI_DEV_POWER_USAGE gauge"]
n = 0
for line in open(sys.argv[1]):
    m = re.match(r'govd_device_info\{device="([^"]+)",UUID="([^"]+)",modelName="([^"]+)"', line)
    if m:
        out.append('DCGM_FI_DEV_POWER_USAGE{gpu="%d",UUID="%s",pci_bus_id="00000000:%02X:00.0",'
                   'device="nvidia%d",modelName="%s",Hostname="prom-test"} %d'
                   % (n, m.group(2), 0x18 + n, n, m.group(3), 300 + n))
        n += 1
assert n == 2, "govd_device_info for two devices expected, got %d" % n
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$tmp/dcgm" >"$tmp/dcgm.out" 2>&1 &
pids+=($!)
dport=
for _ in $(seq 100); do
	dport=$(sed -n 's/.* port \([0-9][0-9]*\).*/\1/p' "$tmp/dcgm.out" | head -1)
	[ -n "$dport" ] && break
	sleep 0.1
done
[ -n "$dport" ] || fail "fixture server printed no port"

# The live server has seconds of history: the week-old baseline is read
# without its offset here (govd-rules-baseline.test.yml tests the offset).
sed 's/ offset 1w//' configs/monitoring/govd-rules.yml >"$tmp/rules.yml"
cat >"$tmp/prometheus.yml" <<YAML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [rules.yml]
scrape_configs:
  - job_name: govd
    static_configs: [{targets: ["127.0.0.1:$gport"]}]
  - job_name: dcgm
    static_configs: [{targets: ["127.0.0.1:$dport"]}]
YAML
# A free port can be taken between the probe and the bind: retry.
pport=
for _ in 1 2 3; do
	p=$(free_port)
	"$prometheus" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
		--web.listen-address="127.0.0.1:$p" --log.level=warn >"$tmp/prom.err" 2>&1 &
	ppid_=$!
	ok=
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$p/-/ready" >/dev/null 2>&1 && { ok=1; break; }
		kill -0 "$ppid_" 2>/dev/null || break
		sleep 0.1
	done
	if [ -n "$ok" ]; then pids+=("$ppid_"); pport=$p; break; fi
	kill "$ppid_" 2>/dev/null || true
	wait "$ppid_" 2>/dev/null || true
done
[ -n "$pport" ] || fail "prometheus did not start"

python3 "$here/prometheus_check.py" "http://127.0.0.1:$pport" configs/monitoring/govd-rules.yml \
	configs/monitoring/grafana-govd.json docs/metrics.md 90 || fail "queries"
kill -0 "${pids[0]}" 2>/dev/null || fail "govd died during the test"
echo "PASS"
