#!/usr/bin/env bash
# The fleet agent and govctl fleet over TLS to a real etcd (Debian's
# etcd-server) that serves https only and asks every client for a
# certificate (--client-cert-auth), with a CA, a server and a client
# certificate made here by openssl: with fleet.tls (ca_file, cert_file,
# key_file) govctl fleet sets and reads the group's budget; without the
# client certificate etcd refuses it and govctl says so; a ca_file that is
# not there is a config error at its line. $1: the build directory.
# Exit 77 (skip) without etcd, openssl or govctl.
set -euo pipefail
build=${1:?usage: fleet_tls.sh BUILD_DIR}
govctl=${GOVCTL:-$build/govctl}
py=/usr/bin/python3
[ -x "$govctl" ] || { echo "skip: $govctl not built"; exit 77; }
command -v etcd >/dev/null || { echo "skip: etcd not installed (tools/install-deps: etcd-server)"; exit 77; }
command -v openssl >/dev/null || { echo "skip: openssl not installed"; exit 77; }
tmp=$(mktemp -d)
epid=
cleanup() { [ -n "$epid" ] && kill -9 "$epid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/etcd.err" ] && tail -5 "$tmp/etcd.err" >&2; exit 1; }

# a CA, etcd's server certificate (IP 127.0.0.1; clientAuth too: etcd's HTTP
# gateway dials its own gRPC port with it) and a client certificate
cd "$tmp"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=govd-test-ca 2>/dev/null
sign() { # name, subject, extensions
	openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
	printf '%s\n' "$3" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$1.pem" -days 1 \
		-extfile "$1.ext" 2>/dev/null
}
sign server /CN=etcd "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth,clientAuth"
sign client /CN=govd-node "extendedKeyUsage=clientAuth"
chmod 600 ./*.key
cd - >/dev/null

read -r cport pport < <($py -c "
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in ss))")
etcd --name t --data-dir "$tmp/etcd" \
	--listen-client-urls "https://127.0.0.1:$cport" --advertise-client-urls "https://127.0.0.1:$cport" \
	--listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
	--initial-cluster "t=http://127.0.0.1:$pport" \
	--cert-file "$tmp/server.pem" --key-file "$tmp/server.key" --trusted-ca-file "$tmp/ca.pem" \
	--client-cert-auth >"$tmp/etcd.out" 2>"$tmp/etcd.err" &
epid=$!

cfg() { # file, tls map
	cat >"$1" <<YAML
devices:
  - {name: gpu0, backend: sim, options: {scenario: configs/scenarios/default.yaml}}
policy: $PWD/policies/balanced.yaml
fleet:
  endpoints: ["https://127.0.0.1:$cport"]
  group: tls
  safe_budget_w: 300
  timeout_ms: 2000
  tls: $2
YAML
}
cfg "$tmp/good.yaml" "{ca_file: $tmp/ca.pem, cert_file: $tmp/client.pem, key_file: $tmp/client.key}"
cfg "$tmp/nocert.yaml" "{ca_file: $tmp/ca.pem}"
cfg "$tmp/noca.yaml" "{ca_file: $tmp/nosuch.pem}"

ok=
for _ in $(seq 100); do
	if "$govctl" fleet set-budget 1234 --config "$tmp/good.yaml" >"$tmp/set.out" 2>&1; then ok=1; break; fi
	kill -0 "$epid" 2>/dev/null || fail "etcd exited"
	sleep 0.1
done
[ -n "$ok" ] || fail "govctl fleet set-budget over TLS: $(cat "$tmp/set.out")"
"$govctl" fleet status --json --config "$tmp/good.yaml" >"$tmp/st.json" || fail "fleet status over TLS"
$py - "$tmp/st.json" <<'PY' || fail "budget not read back over TLS: $(cat "$tmp/st.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert abs(s["budget_w"] - 1234) < 1e-6, s
PY
# without a client certificate etcd refuses the handshake
if "$govctl" fleet set-budget 999 --config "$tmp/nocert.yaml" >"$tmp/nocert.out" 2>&1; then
	fail "etcd took a client without a certificate"
fi
grep -q "TLS without a client certificate" "$tmp/nocert.out" || fail "no TLS reason: $(cat "$tmp/nocert.out")"
# a CA file that is not there: a config error naming the key and its place
if "$govctl" fleet status --config "$tmp/noca.yaml" >"$tmp/noca.out" 2>&1; then fail "a missing ca_file passed"; fi
grep -q "noca.yaml:[0-9]*:[0-9]*: error: fleet.tls.ca_file: '$tmp/nosuch.pem': not a readable file" "$tmp/noca.out" ||
	fail "ca_file error: $(cat "$tmp/noca.out")"
echo "fleet_tls: budget set and read back over mutual TLS; no client certificate refused (\"$(grep -o 'TLS without a client certificate' "$tmp/nocert.out" | head -1)\"); a missing ca_file named at its line"
