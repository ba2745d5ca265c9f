#!/usr/bin/env bash
# The fleet against a real etcd (Debian's etcd-server) with its own users
# and passwords (etcdctl user/role, auth enable), govd's fleet.auth:
#  - govctl fleet as a user with readwrite on the group's prefix sets the
#    budget and reads it back;
#  - a wrong password and a user without that role are refused, each with
#    etcd's reason;
#  - a password file that is not there, or empty, is a config error at its
#    line; auth over http:// warns;
#  - a running govd keeps its fleet link when etcd forgets its token (auth
#    switched off and on: every token is void; govd trades the password for
#    a new one instead of falling to its safe budget for good).
# $1: the build directory. Exit 77 (skip) without etcd, etcdctl or govd.
set -euo pipefail
build=${1:?usage: fleet_auth.sh BUILD_DIR}
govd=$build/govd
govctl=${GOVCTL:-$build/govctl}
py=/usr/bin/python3
[ -x "$govd" ] || { echo "skip: $govd not built"; exit 77; }
command -v etcd >/dev/null || { echo "skip: etcd not installed (tools/install-deps: etcd-server)"; exit 77; }
command -v etcdctl >/dev/null || { echo "skip: etcdctl not installed (tools/install-deps: etcd-client)"; exit 77; }
tmp=$(mktemp -d)
epid= gpid=
cleanup() {
	[ -n "$gpid" ] && kill "$gpid" 2>/dev/null
	[ -n "$epid" ] && kill -9 "$epid" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	for f in etcd.err govd.err; do [ -f "$tmp/$f" ] && { echo "--- $f" >&2; tail -8 "$tmp/$f" >&2; }; done
	exit 1
}
wait_for() { # WHAT TRIES(0.1 s) CMD...
	local what=$1 n=$2
	shift 2
	for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
	fail "waited for $what"
}

read -r cport pport mport < <($py -c "
import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in ss))")
ep="http://127.0.0.1:$cport"
start_etcd() {
	etcd --name a --data-dir "$tmp/etcd" \
		--listen-client-urls "$ep" --advertise-client-urls "$ep" \
		--listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
		--initial-cluster "a=http://127.0.0.1:$pport" >>"$tmp/etcd.out" 2>>"$tmp/etcd.err" &
	epid=$!
}
ectl() { ETCDCTL_API=3 etcdctl --endpoints "$ep" --command-timeout=3s "$@"; }
start_etcd
wait_for "etcd" 100 ectl endpoint health
# root (auth enable needs it), govd with readwrite on /govd/ci/, other with none
ectl user add root:rootpw >/dev/null
ectl user grant-role root root >/dev/null
ectl role add govd >/dev/null
ectl role grant-permission govd --prefix=true readwrite /govd/ci/ >/dev/null
ectl user add govd:s3cret-govd >/dev/null
ectl user grant-role govd govd >/dev/null
ectl user add other:otherpw >/dev/null
ectl auth enable >/dev/null

printf 's3cret-govd\n' >"$tmp/govd.pw"
printf 'wrong\n' >"$tmp/wrong.pw"
printf 'otherpw\n' >"$tmp/other.pw"
: >"$tmp/empty.pw"
chmod 600 "$tmp"/*.pw
cfg() { # FILE USER PASSWORD_FILE
	cat >"$1" <<YAML
devices:
  - {name: gpu0, backend: sim, options: {scenario: configs/scenarios/default.yaml}}
policy: $PWD/policies/balanced.yaml
state_file: $tmp/state-$(basename "$1" .yaml).json
decision_log: {dir: ""}
metrics: {listen: "127.0.0.1:$mport"}
control: {socket: ""}
node: n1
fleet:
  endpoints: ["$ep"]
  cluster: ci
  group: auth
  safe_budget_w: 300
  period_ms: 200
  timeout_ms: 1000
  grant_ttl_ms: 2000
  auth: {user: $2, password_file: $3}
YAML
}
cfg "$tmp/good.yaml" govd "$tmp/govd.pw"
cfg "$tmp/wrong.yaml" govd "$tmp/wrong.pw"
cfg "$tmp/norole.yaml" other "$tmp/other.pw"
cfg "$tmp/nofile.yaml" govd "$tmp/nosuch.pw"
cfg "$tmp/empty.yaml" govd "$tmp/empty.pw"

"$govctl" fleet set-budget 1234 --config "$tmp/good.yaml" >"$tmp/set.out" 2>&1 ||
	fail "set-budget as govd: $(cat "$tmp/set.out")"
"$govctl" fleet status --json --config "$tmp/good.yaml" >"$tmp/st.json" || fail "fleet status as govd"
$py -c "import json,sys; s=json.load(open(sys.argv[1])); assert abs(s['budget_w'] - 1234) < 1e-6, s" "$tmp/st.json" ||
	fail "budget not read back: $(cat "$tmp/st.json")"
# without auth etcd refuses outright (the key is not world-readable)
if "$govctl" fleet status --json --endpoints "$ep" --cluster ci --group auth >"$tmp/anon.out" 2>&1; then
	fail "etcd served an anonymous client: is auth enabled?"
fi
if "$govctl" fleet set-budget 999 --config "$tmp/wrong.yaml" >"$tmp/wrong.out" 2>&1; then fail "a wrong password passed"; fi
grep -q "etcd authentication as 'govd' failed: .*authentication failed" "$tmp/wrong.out" ||
	fail "wrong password's reason: $(cat "$tmp/wrong.out")"
if "$govctl" fleet set-budget 999 --config "$tmp/norole.yaml" >"$tmp/norole.out" 2>&1; then fail "a user without a role wrote"; fi
grep -q "permission denied" "$tmp/norole.out" || fail "no-role reason: $(cat "$tmp/norole.out")"
for bad in nofile empty; do
	if "$govd" --check --config "$tmp/$bad.yaml" >"$tmp/$bad.out" 2>&1; then fail "$bad password file passed --check"; fi
	grep -q "$bad.yaml:[0-9]*:[0-9]*: error: fleet.auth.password_file: " "$tmp/$bad.out" ||
		fail "$bad password file: $(cat "$tmp/$bad.out")"
done
"$govd" --check --config "$tmp/good.yaml" >"$tmp/check.out" 2>&1 || fail "good config: $(cat "$tmp/check.out")"
grep -q "warning: fleet.auth: an http:// endpoint" "$tmp/check.out" || fail "no cleartext warning: $(cat "$tmp/check.out")"

# a running govd when etcd voids its token
"$govd" --config "$tmp/good.yaml" >"$tmp/govd.out" 2>"$tmp/govd.err" &
gpid=$!
metric() { $py - "$mport" "$1" <<'PY'
import re, sys, urllib.request
try:
    t = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=1).read().decode()
except Exception:
    sys.exit(1)
m = re.search(r"^" + re.escape(sys.argv[2]) + r"(?:\{[^}]*\})? (\S+)$", t, re.M)
print(m.group(1) if m else "")
PY
}
etcd_up() { [ "$(metric govd_fleet_etcd_up)" = 1 ]; }
wait_for "govd's fleet link" 150 etcd_up
# etcd forgets every token when auth is switched off (a member restart
# keeps them: 3.4 replays the authentications from its log)
ectl --user root:rootpw auth disable >/dev/null
ectl auth enable >/dev/null
# the next rounds meet "invalid auth token" (HTTP 401): a new token, no lost link
down=0
for _ in $(seq 30); do
	etcd_up || down=$((down + 1))
	sleep 0.1
done
etcd_up || fail "govd's fleet link is down after etcd forgot its token ($down of 30 samples down)"
[ "$down" -le 5 ] || fail "govd's fleet link was down in $down of 30 samples after etcd forgot its token"
grep -qi "invalid auth token\|authentication" "$tmp/govd.err" &&
	echo "govd logged: $(grep -i "invalid auth token\|authentication" "$tmp/govd.err" | tail -1 | cut -c1-160)"
kill "$gpid"
wait "$gpid" || fail "govd exited with an error: $(tail -3 "$tmp/govd.err")"
gpid=
echo "fleet_auth: budget set and read back as a user with readwrite on the prefix; wrong password (\"$(grep -o 'authentication failed[^"]*' "$tmp/wrong.out" | head -1 | cut -c1-60)\") and no role (\"permission denied\") refused; bad password files named at their line; the link survived a voided token ($down of 30 samples down)"
