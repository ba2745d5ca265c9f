#!/usr/bin/env bash
# Hardening, peers: govd against an inference server whose scrape turns
# implausible (vllm:num_requests_running +Inf) and then recovers. The
# daemon's log (the journal under systemd) must name the fault once when it
# begins and once when it clears, however many periods it lasts; the
# decision log names it every period. Peer: python3's http.server
# (tests/hardening/peer_servers.py http) on a free port; govd's metrics on
# a free port too; everything in a private 0700 directory.
# Usage: peer_daemon_journal.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: peer_daemon_journal.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ -x "$build/govd" ] || { echo "peer_daemon_journal: $build/govd not built" >&2; exit 1; }
cd "$root"
tmp=$(mktemp -d /tmp/govd-peer-journal-XXXXXX)
spid=
gpid=
cleanup() {
	set +e
	if [ -n "$gpid" ]; then kill -TERM "$gpid" 2>/dev/null; wait "$gpid" 2>/dev/null; fi
	if [ -n "$spid" ]; then kill -TERM "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	sed 's/^/  govd: /' "$tmp/govd.log" >&2 || true
	echo "FAIL: $*" >&2
	exit 1
}

mkdir -p "$tmp/www" "$tmp/log"
good="tests/data/prom/vllm-1.txt"
sed 's/^vllm:num_requests_running{model_name="llama"} 8.0$/vllm:num_requests_running{model_name="llama"} +Inf/' \
	"$good" >"$tmp/bad.txt"
cmp -s "$good" "$tmp/bad.txt" && fail "the +Inf case is not different from the good scrape"
cp "$tmp/bad.txt" "$tmp/www/metrics.tmp" && mv "$tmp/www/metrics.tmp" "$tmp/www/metrics"
python3 "$here/peer_servers.py" http "$tmp/www" --port-file "$tmp/sport" --lifetime 120 &
spid=$!
for _ in $(seq 1 100); do [ -s "$tmp/sport" ] && break; sleep 0.1; done
[ -s "$tmp/sport" ] || fail "http peer did not start"
sport=$(cat "$tmp/sport")
mport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

cat >"$tmp/govd.yaml" <<EOF
node: peer-journal
policy: $root/policies/default.yaml
dry_run: false
log_level: notice
state_file: $tmp/state.json
decision_log:
  dir: $tmp/log
metrics:
  enabled: true
  listen: "127.0.0.1:$mport"
control:
  enabled: false
devices:
  - name: srv0
    backend: serving
    options:
      url: http://127.0.0.1:$sport/metrics
      format: vllm
      labels: model_name=llama
      timeout_ms: 250
      power_backend: sim
      power.scenario: configs/scenarios/default.yaml
      power.seed: 1
EOF

"$build/govd" --config "$tmp/govd.yaml" 2>"$tmp/govd.log" &
gpid=$!
# Bounded waits (the harness's, generous): the fault begins, lasts, clears.
wait_for() { # pattern seconds
	for _ in $(seq 1 $(($2 * 10))); do
		grep -q "$1" "$tmp/govd.log" 2>/dev/null && return 0
		kill -0 "$gpid" 2>/dev/null || fail "govd exited"
		sleep 0.1
	done
	return 1
}
wait_for "srv0: serving fault: implausible-value" 30 || fail "no journal line for the implausible scrape"
sleep 3 # several periods of the same fault
cp "$good" "$tmp/www/metrics.tmp" && mv "$tmp/www/metrics.tmp" "$tmp/www/metrics"
wait_for "srv0: serving fault cleared (implausible-value)" 30 || fail "no journal line when it cleared"
kill -TERM "$gpid"
wait "$gpid" || fail "govd exited non-zero on SIGTERM"
gpid=

onsets=$(grep -c "srv0: serving fault: implausible-value" "$tmp/govd.log" || true)
clears=$(grep -c "srv0: serving fault cleared (implausible-value)" "$tmp/govd.log" || true)
periods=$(grep -c '"implausible-value"' "$tmp/log/srv0.jsonl" || true)
echo "decision log: $periods period(s) with implausible-value; journal: $onsets onset, $clears clear"
grep "srv0: serving fault" "$tmp/govd.log"
[ "$onsets" -eq 1 ] || fail "$onsets onset lines, want 1"
[ "$clears" -eq 1 ] || fail "$clears clear lines, want 1"
[ "$periods" -ge 3 ] || fail "only $periods periods named the fault in the decision log"
echo "peer_daemon_journal: ok"
