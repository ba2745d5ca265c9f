# Sourced by the fleet tests (fleet_etcd.sh, fleet_faults.sh): a temporary
# directory $tmp removed on exit with every process in pids, etcd_pids and
# $sampler (SIGCONT, then SIGKILL; KEEP_TMP=1 keeps it), fail (prints the
# tail of every $tmp/*.err), a 3-member etcd cluster on loopback (free
# ports, heartbeat 50 ms, election 500 ms), waits scaled by WAIT_SCALE, and
# the govd fleet node's config. The caller sets py and WAIT_SCALE.
tmp=$(mktemp -d)
pids=() etcd_pids=() sampler=
cleanup() {
	# only the test's own shell: a background job's subshell signalled
	# before it exec'd its command inherits this trap
	[ "$BASHPID" = "$$" ] || return 0
	for p in "${pids[@]}" "${etcd_pids[@]}" $sampler; do
		kill -CONT "$p" 2>/dev/null || true
		kill -9 "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	[ -n "${KEEP_TMP:-}" ] && { echo "kept $tmp"; return; }
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	for f in "$tmp"/*.err; do [ -f "$f" ] && sed "s|^|  $(basename "$f"): |" "$f" | tail -25 >&2; done
	exit 1
}
#
# etcd_ports N: N + 6 free loopback ports in the array `ports`: 0-2 the
# members' client ports, 3-5 their peer ports, 6.. the caller's.
etcd_ports() {
	read -r -a ports < <($py -c "
import socket
ss = [socket.socket() for _ in range(6 + $1)]
for s in ss: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in ss))
for s in ss: s.close()")
	cluster="e0=http://127.0.0.1:${ports[3]},e1=http://127.0.0.1:${ports[4]},e2=http://127.0.0.1:${ports[5]}"
	endpoints="http://127.0.0.1:${ports[0]},http://127.0.0.1:${ports[1]},http://127.0.0.1:${ports[2]}"
}
# start_etcd I [new|existing]: member I, its pid in etcd_pids[I]
start_etcd() {
	local i=$1
	etcd --name "e$i" --data-dir "$tmp/etcd$i" \
		--listen-client-urls "http://127.0.0.1:${ports[$i]}" \
		--advertise-client-urls "http://127.0.0.1:${ports[$i]}" \
		--listen-peer-urls "http://127.0.0.1:${ports[$((i + 3))]}" \
		--initial-advertise-peer-urls "http://127.0.0.1:${ports[$((i + 3))]}" \
		--initial-cluster "$cluster" --initial-cluster-state "${2:-new}" \
		--heartbeat-interval 50 --election-timeout 500 \
		>>"$tmp/etcd$i.log" 2>&1 &
	etcd_pids[$i]=$!
}
# wait_for WHAT TENTHS CMD...: CMD until it succeeds, every 0.1 s, failing
# after TENTHS x WAIT_SCALE tries (the target, scaled for a loaded machine)
wait_for() {
	local what=$1 n=$(($2 * WAIT_SCALE))
	shift 2
	for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
	fail "timed out waiting for $what"
}
healthy() { ETCDCTL_API=3 etcdctl --endpoints "$endpoints" --command-timeout=1s endpoint health >/dev/null 2>&1; }
# node_yaml NODE GROUP PRIORITY ALLOCATOR ENDPOINTS SEED [EXTRA_FLEET_LINES]:
# a govd config on the sim backend with a fleet section (period, TTLs from
# PERIOD_MS, TTL_S, GRANT_TTL_MS; safe budget 250 W)
node_yaml() {
	cat <<YAML
node: $1
policy: p.yaml
state_file: $1.$6.state.json
decision_log: {dir: log-$1-$6}
metrics: {listen: "127.0.0.1:0"}
control: {socket: $1.$6.sock, read: {users: [$(id -u)]}, operator: {users: [$(id -u)]}}
fleet:
  endpoints: [$(echo "$5" | sed 's/,/, /g')]
  cluster: ci
  group: $2
  priority: $3
  safe_budget_w: 250
  period_ms: $PERIOD_MS
  lease_ttl_s: $TTL_S
  grant_ttl_ms: $GRANT_TTL_MS
  timeout_ms: 300
  allocator: $4
devices:
  - {name: gpu0, backend: sim, time_scale: 10, options: {scenario: configs/scenarios/default.yaml, seed: $6}}
YAML
}
# metrics_of NAME: the address govd NAME logged for its metrics ($tmp/NAME.err)
metrics_of() { sed -n 's|.*metrics on http://\(127.0.0.1:[0-9]*\)/metrics.*|\1|p' "$tmp/$1.err" | tail -1; }
