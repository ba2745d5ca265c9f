#!/usr/bin/env bash
# The haproxy precision actuator against a real HAProxy (Debian's haproxy)
# in front of two stand-in replicas (python3 http.server answering "bf16" /
# "fp8"), stats socket in a temp dir, driven by haproxy_driver (the serving
# backend's real actuator code, as govd calls it):
#  1. share: the driver sets fp8's share to 0.30 in steps of at most 10
#     weight; 200 requests; each replica's count within +-6 (3 %) of the
#     requested share. HAProxy's weighted roundrobin is a smooth weighted
#     round robin: over N requests a server's count differs from N*w/W by at
#     most about one cycle's worth where the walk starts (here <= 2), and the
#     two threads share one lock-protected position; 3 % leaves room for the
#     one request a health of the first connection may shift. Deterministic
#     enough that a share off by one step (10 %) fails.
#  2. steps: no write ever moves a weight by more than max_step (read back
#     between periods, 1 s apart so a loaded machine still samples each).
#  3. restore on exit: SIGTERM -> the original weights (100/0) back.
#  4. crash: kill -9 mid-run, then `govctl restore --state` -> originals back.
#  5. lost socket: HAProxy stopped -> the driver logs an actuation fault.
#  6. restart: HAProxy started again (new pid) -> detected, logged, slices
#     at the full-precision server.
#  7. dry run (the device opened read-only, as govd --dry-run opens it): an
#     operator's manual weights survive the driver's share, a HAProxy restart
#     (no fallback write) and its exit (no restore write).
#  9. the socket path a link, swapped to another HAProxy mid-run: reported,
#     nothing written to the other one while running or on exit.
#  8. a slow HAProxy: every answer 200 ms late (its commands time out at
#     250 ms) through a delaying proxy on the stats socket, under govd with
#     a second (sim) device on a 500 ms period: the router's commands share
#     one budget a period (haproxy_budget_ms), so no period overruns and the
#     tick p99 stays under the period (before: 15 overruns in 12 s, p99
#     1.2 s); the spent budget is reported as an actuation fault.
# Usage: haproxy_router.sh BUILD_DIR. Skips (77) without haproxy or curl.
set -euo pipefail
build=${1:?usage: haproxy_router.sh BUILD_DIR}
drv="$build/tests/haproxy_driver"
govctl=${GOVCTL:-$build/govctl}
[ -x "$drv" ] || { echo "haproxy_router: $drv not built" >&2; exit 1; }
for c in haproxy curl python3; do
	command -v $c >/dev/null || { echo "haproxy_router: SKIP ($c not installed; tools/install-deps)"; exit 77; }
done
work=$(mktemp -d /tmp/govd-haproxy-XXXXXX)
pids=()
drv_pid=
cleanup() {
	[ -n "$drv_pid" ] && kill -9 "$drv_pid" 2>/dev/null || true
	[ -s "$work/hp.pid" ] && kill "$(cat "$work/hp.pid")" 2>/dev/null || true
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "haproxy_router: FAIL: $*" >&2; exit 1; }
# free ports: bound, read, released (another test may take one later)
free_ports() {
	python3 -c '
import socket, sys
ss=[socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1",0))
print(*[s.getsockname()[1] for s in ss])' "$1"
}
read -r p_fe p_hi p_lo < <(free_ports 3)
for r in bf16:$p_hi fp8:$p_lo; do
	mkdir -p "$work/${r%%:*}"
	echo "${r%%:*}" >"$work/${r%%:*}/index.html"
	python3 -m http.server --bind 127.0.0.1 --directory "$work/${r%%:*}" "${r##*:}" \
		>/dev/null 2>&1 &
	pids+=($!)
done
sock="$work/admin.sock"
write_cfg() {
cat >"$work/haproxy.cfg" <<CFG
global
  stats socket $sock mode 600 level admin
  pidfile $work/hp.pid
defaults
  mode http
  timeout connect 2s
  timeout client 10s
  timeout server 10s
frontend fe
  bind 127.0.0.1:$p_fe
  default_backend be_code
backend be_code
  balance roundrobin
  server bf16 127.0.0.1:$p_hi weight 100
  server fp8 127.0.0.1:$p_lo weight 0
CFG
}
write_cfg
start_haproxy() {
	haproxy -D -f "$work/haproxy.cfg" || fail "haproxy did not start"
	for _ in $(seq 1 50); do [ -S "$sock" ] && [ -s "$work/hp.pid" ] && return 0; sleep 0.1; done
	fail "no stats socket"
}
stop_haproxy() {
	local p; p=$(cat "$work/hp.pid"); kill "$p"
	for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || { rm -f "$work/hp.pid"; return 0; }; sleep 0.1; done
	fail "haproxy did not stop"
}
# weights "bf16 fp8" of be_code as HAProxy reports them
weights() {
	python3 - "$sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"show servers state be_code\n")
d = b""
while True:
    b = s.recv(65536)
    if not b: break
    d += b
lines = d.decode().splitlines(); cols = lines[1].split()[1:]
w = {f[cols.index("srv_name")]: f[cols.index("srv_uweight")] for f in (l.split() for l in lines[2:] if l)}
print(w["bf16"], w["fp8"])
PY
}
# ---- 0: bad haproxy options are config errors with file:line:col ----
root=$(cd "$(dirname "$0")/../.." && pwd)
cat >"$work/bad.yaml" <<YAML
node: n
policy: $root/policies/default.yaml
devices:
  - name: llm0
    backend: serving
    options:
      url: http://127.0.0.1:1/metrics
      slices: code
      precision: haproxy
      precision_target: $sock
      haproxy_max_step: 0
      haproxy_backends: chat=be_chat
YAML
if "$build/govd" --check --config "$work/bad.yaml" >"$work/check.log" 2>&1; then fail "bad haproxy options accepted"; fi
grep -q "bad.yaml:4:5: error: devices\[0\].options.haproxy_max_step: 0 is out of range; allowed 1..256" "$work/check.log" ||
	fail "no positioned max_step error: $(cat "$work/check.log")"
grep -q "bad.yaml:4:5: error: devices\[0\].options.haproxy_backends: 'chat=be_chat'" "$work/check.log" ||
	fail "no positioned haproxy_backends error: $(cat "$work/check.log")"
# the backend's own option checks reach --check, placed at the device (hal_check_options)
sed 's/slices: code$/slices: code,code/; s/haproxy_max_step: 0/haproxy_server_low: bf16/' "$work/bad.yaml" >"$work/bad2.yaml"
if "$build/govd" --check --config "$work/bad2.yaml" >"$work/check2.log" 2>&1; then fail "bad2 accepted"; fi
grep -q "bad2.yaml:4:5: error: devices\[0\].options.slices: slice 'code' listed twice" "$work/check2.log" ||
	fail "no positioned duplicate-slice error: $(cat "$work/check2.log")"
sed 's/haproxy_max_step: 0/haproxy_server_low: bf16/; s/chat=be_chat/code=be_code/' "$work/bad.yaml" >"$work/bad3.yaml"
if "$build/govd" --check --config "$work/bad3.yaml" >"$work/check3.log" 2>&1; then fail "bad3 accepted"; fi
grep -q "bad3.yaml:4:5: error: devices\[0\].options.haproxy_server_low: slice 0: the low-precision server 'bf16' is also the full-precision one" "$work/check3.log" ||
	fail "no positioned server-name error: $(cat "$work/check3.log")"
# a backend shared by two slices passes no --check
sed 's/slices: code$/slices: code,chat/; s/haproxy_max_step: 0/haproxy_max_step: 10/; s/chat=be_chat/code=be_code,chat=be_code/' "$work/bad.yaml" >"$work/bad4.yaml"
if "$build/govd" --check --config "$work/bad4.yaml" >"$work/check4.log" 2>&1; then fail "bad4 (a shared backend) accepted"; fi
grep -q "bad4.yaml:4:5: error: devices\[0\].options.haproxy_backends: slices 0 and 1 share the backend 'be_code'" "$work/check4.log" ||
	fail "no positioned shared-backend error: $(cat "$work/check4.log")"
sed -i 's/haproxy_max_step: 0/haproxy_max_step: 10/; s/chat=be_chat/code=be_code/' "$work/bad.yaml"
"$build/govd" --check --config "$work/bad.yaml" >"$work/check.log" 2>&1 || fail "good haproxy options refused: $(cat "$work/check.log")"

start_haproxy
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$p_hi/" >/dev/null && curl -sf "http://127.0.0.1:$p_lo/" >/dev/null && break; sleep 0.1; done
[ "$(weights)" = "100 0" ] || fail "unexpected initial weights $(weights)"
state="$work/state.json"

# ---- 1-3: share, bounded steps, restore on exit ----
start_ms=$(date +%s%3N)
"$drv" "$state" "$sock" be_code 0.30 10 1000 >"$work/drv.log" 2>&1 &
drv_pid=$!
seen=()
for _ in $(seq 1 200); do
	t0=$(date +%s%3N)
	w=$(weights)
	seen+=("$t0 $(date +%s%3N) $w")
	grep -q held "$work/drv.log" && break
	sleep 0.05
done
grep -q held "$work/drv.log" || fail "driver never held: $(cat "$work/drv.log")"
[ "$(weights)" = "70 30" ] || fail "weights $(weights), want 70 30"
# On a loaded machine two reads may lie more than one driver period
# (1000 ms) apart: between the start of one and the end of the next, one
# step per period that fits, and one more (a write at each end).
prev_hi=100 prev_lo=0 prev_ms=$start_ms
for w in "${seen[@]}"; do
	set -- $w
	steps=$(( ($2 - prev_ms) / 1000 + 1 ))
	lim=$(( 10 * steps ))
	[ $(( ${3} - prev_hi )) -le $lim ] && [ $(( prev_hi - ${3} )) -le $lim ] &&
	[ $(( ${4} - prev_lo )) -le $lim ] && [ $(( prev_lo - ${4} )) -le $lim ] ||
		fail "a step larger than max_step: $prev_hi/$prev_lo -> $3/$4 (${steps} period(s) apart)"
	prev_hi=$3 prev_lo=$4 prev_ms=$1
done
[ ${#seen[@]} -ge 3 ] || fail "the share arrived in fewer than 3 reads (steps not bounded?)"
n=200 lo=0 hi=0
for _ in $(seq 1 $n); do
	case $(curl -s "http://127.0.0.1:$p_fe/") in
	bf16) hi=$((hi + 1)) ;; fp8) lo=$((lo + 1)) ;; *) fail "a request not answered" ;;
	esac
done
echo "haproxy_router: share fp8 requested 0.30 of $n: bf16 $hi, fp8 $lo (tolerance +-6)"
[ $lo -ge 54 ] && [ $lo -le 66 ] || fail "fp8 got $lo of $n, want 60 +-6"
[ -s "$state" ] || fail "no state file while running"
grep -q '"weight": 100' "$state" || fail "state file lacks the original weights: $(cat "$state")"
kill -TERM "$drv_pid"; wait "$drv_pid" || fail "driver exit: $(cat "$work/drv.log")"; drv_pid=
grep -q restored "$work/drv.log" || fail "no restore on exit"
[ "$(weights)" = "100 0" ] || fail "after exit weights $(weights), want the originals 100 0"
[ ! -e "$state" ] || fail "state file left after a clean exit"
echo "haproxy_router: restore on exit ok"

# ---- 4: crash, then govctl restore ----
"$drv" "$state" "$sock" be_code 0.50 25 100 >"$work/drv.log" 2>&1 &
drv_pid=$!
for _ in $(seq 1 60); do grep -q held "$work/drv.log" && break; sleep 0.05; done
[ "$(weights)" = "50 50" ] || fail "weights $(weights), want 50 50"
kill -9 "$drv_pid"; wait "$drv_pid" 2>/dev/null || true; drv_pid=
[ "$(weights)" = "50 50" ] || fail "kill -9 changed the weights?"
"$govctl" restore --state "$state" || fail "govctl restore failed"
[ "$(weights)" = "100 0" ] || fail "after govctl restore weights $(weights), want 100 0"
[ ! -e "$state" ] || fail "state file left after govctl restore"
echo "haproxy_router: restore after kill -9 ok"

# ---- 5-6: lost socket, restart ----
"$drv" "$state" "$sock" be_code 0.40 40 100 >"$work/drv.log" 2>&1 &
drv_pid=$!
for _ in $(seq 1 60); do grep -q held "$work/drv.log" && break; sleep 0.05; done
[ "$(weights)" = "60 40" ] || fail "weights $(weights), want 60 40"
stop_haproxy
for _ in $(seq 1 40); do grep -q "show info" "$work/drv.log" && break; sleep 0.05; done
grep "show info" "$work/drv.log" || fail "lost socket not reported: $(cat "$work/drv.log")"
# a new frontend port: while HAProxy was down a parallel test may have taken
# the old one (the share check is done; the restart is what is tested)
read -r p_fe < <(free_ports 1)
write_cfg
start_haproxy
for _ in $(seq 1 40); do grep -q restarted "$work/drv.log" && break; sleep 0.05; done
grep restarted "$work/drv.log" || fail "restart not detected: $(cat "$work/drv.log")"
[ "$(weights)" = "100 0" ] || fail "after the restart weights $(weights), want the fallback 100 0"
kill -TERM "$drv_pid"; wait "$drv_pid" || true; drv_pid=
echo "haproxy_router: lost socket and restart detected, fallback applied"

# ---- 7: a dry run writes nothing, on any path ----
set_weights() { # BF16 FP8, as an operator would
	python3 - "$sock" "$1" "$2" <<'PY'
import socket, sys
for srv, w in (("bf16", sys.argv[2]), ("fp8", sys.argv[3])):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
    s.sendall(f"set weight be_code/{srv} {w}\n".encode()); s.recv(4096); s.close()
PY
}
set_weights 70 30
"$drv" "$state" "$sock" be_code 0.40 40 100 dry >"$work/drv.log" 2>&1 &
drv_pid=$!
for _ in $(seq 1 60); do grep -q held "$work/drv.log" && break; sleep 0.05; done
grep -q held "$work/drv.log" || fail "dry driver: $(cat "$work/drv.log")"
[ "$(weights)" = "70 30" ] || fail "dry run: weights $(weights), the operator's 70 30 changed"
stop_haproxy
read -r p_fe < <(free_ports 1)
write_cfg
start_haproxy
set_weights 80 20
for _ in $(seq 1 40); do grep -q restarted "$work/drv.log" && break; sleep 0.05; done
grep -q restarted "$work/drv.log" || fail "dry run: restart not reported: $(cat "$work/drv.log")"
sleep 0.5 # a few periods after the restart
[ "$(weights)" = "80 20" ] || fail "dry run: after the restart weights $(weights), the operator's 80 20 changed"
kill -TERM "$drv_pid"; wait "$drv_pid" || true; drv_pid=
[ "$(weights)" = "80 20" ] || fail "dry run: exit wrote weights $(weights), want the operator's 80 20"
echo "haproxy_router: dry run wrote nothing (share, restart, exit)"

# ---- 8: a slow HAProxy keeps every device on schedule ----
slow="$work/slow.sock"
python3 - "$slow" "$sock" 0.2 >"$work/slow.log" 2>&1 <<'PY' &
import os, socket, sys, threading, time
path, target, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
srv = socket.socket(socket.AF_UNIX); srv.bind(path); srv.listen(16)
print("listening", flush=True)
def serve(c):
    try:
        req = b""
        while not req.endswith(b"\n"):
            b = c.recv(4096)
            if not b: break
            req += b
        t = socket.socket(socket.AF_UNIX); t.connect(target); t.sendall(req)
        ans = b""
        while True:
            b = t.recv(65536)
            if not b: break
            ans += b
        t.close()
        time.sleep(delay)  # just under the 250 ms per-command timeout
        c.sendall(ans)
    except OSError:
        pass
    finally:
        c.close()
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
pids+=($!)
for _ in $(seq 1 50); do [ -S "$slow" ] && break; sleep 0.1; done
cat >"$work/slow-pol.yaml" <<'YAML'
name: slow-router
metadata: {owners: [qa]}
control: {controller: static, period_ms: 500}
precision:
  slices: {code: 0.4}
YAML
cat >"$work/slow.yaml" <<YAML
policy: $work/slow-pol.yaml
state_file: $work/slow-state.json
decision_log: {dir: $work/slow-log}
metrics: {enabled: false}
control: {enabled: false}
devices:
  - name: router0
    backend: serving
    options:
      url: http://127.0.0.1:$p_hi/
      timeout_ms: 100
      slices: code
      precision: haproxy
      precision_target: $slow
      precision_timeout_ms: 250
      haproxy_backends: code=be_code
      haproxy_max_step: 10
      power_backend: sim
      power.scenario: $root/configs/scenarios/default.yaml
  - {name: gpu1, backend: sim, time_scale: 1, options: {scenario: $root/configs/scenarios/default.yaml, seed: 2}}
YAML
"$build/govd" --config "$work/slow.yaml" 2>"$work/slow-govd.err" &
gpid=$!
pids+=($gpid)
sleep 8
kill -TERM "$gpid"; wait "$gpid" || fail "govd under a slow HAProxy exited $?: $(tail -5 "$work/slow-govd.err")"
stop_line=$(grep "stopped after" "$work/slow-govd.err") || fail "no stop line: $(tail -5 "$work/slow-govd.err")"
echo "haproxy_router: slow HAProxy (200 ms an answer): $stop_line"
read -r periods overruns p99 < <(echo "$stop_line" | sed -n 's/.*stopped after \([0-9]*\) period(s), \([0-9]*\) overrun(s).*tick p99 \([0-9.]*\) ms.*/\1 \2 \3/p')
[ -n "$p99" ] || fail "cannot read the stop line: $stop_line"
[ "$overruns" = 0 ] || fail "a slow HAProxy overran $overruns of $periods periods"
python3 -c "import sys; sys.exit(0 if $p99 < 500 else 1)" || fail "tick p99 $p99 ms is not under the 500 ms period"
grep -q "budget of 250 ms is spent" "$work/slow-govd.err" || fail "the spent budget was not reported: $(grep -i haproxy "$work/slow-govd.err" | tail -3)"

# ---- 9: the stats socket's link swapped to another HAProxy ----
read -r p_fe2 < <(free_ports 1)
sock2="$work/admin2.sock"
sed -e "s|$sock|$sock2|; s|$work/hp.pid|$work/hp2.pid|; s|127.0.0.1:$p_fe\$|127.0.0.1:$p_fe2|" "$work/haproxy.cfg" >"$work/haproxy2.cfg"
haproxy -D -f "$work/haproxy2.cfg" || fail "second haproxy did not start"
for _ in $(seq 1 50); do [ -S "$sock2" ] && [ -s "$work/hp2.pid" ] && break; sleep 0.1; done
pids+=($(cat "$work/hp2.pid"))
weights2() { sock=$sock2 weights; }
set_weights 100 0
# the other HAProxy's operator weights: neither govd's fallback (100/0) nor
# its originals (100/0) may land on them
sock=$sock2 set_weights 55 45
ln -sfn "$sock" "$work/link.sock"
"$drv" "$state" "$work/link.sock" be_code 0.40 40 100 >"$work/drv.log" 2>&1 &
drv_pid=$!
for _ in $(seq 1 60); do grep -q held "$work/drv.log" && break; sleep 0.05; done
[ "$(weights)" = "60 40" ] || fail "through the link: weights $(weights), want 60 40"
[ "$(weights2)" = "55 45" ] || fail "the second HAProxy changed before the swap: $(weights2)"
ln -sfn "$sock2" "$work/link.tmp" && mv -T "$work/link.tmp" "$work/link.sock"
for _ in $(seq 1 40); do grep -q "another HAProxy" "$work/drv.log" && break; sleep 0.05; done
grep -q "another HAProxy" "$work/drv.log" || fail "the swapped link was not reported: $(cat "$work/drv.log")"
sleep 0.5
[ "$(weights2)" = "55 45" ] || fail "the other HAProxy was written: $(weights2)"
kill -TERM "$drv_pid"; wait "$drv_pid" || true; drv_pid=
[ "$(weights2)" = "55 45" ] || fail "the exit restored originals into the other HAProxy: $(weights2)"
echo "haproxy_router: a swapped socket link is reported; the other HAProxy is never written"
kill "$(cat "$work/hp2.pid")" 2>/dev/null || true
# The precision ladder: a router whose low replica is FP8 (haproxy_low_mode)
# takes the FP8 rung and only it; one with an INT8 low replica offers none.
before=$(weights)
for lm in fp8 int8; do
	HAP_LOW_MODE=$lm "$drv" "$state" "$sock" be_code 0.20 40 100 >"$work/drv.log" 2>&1 &
	drv_pid=$!
	for _ in $(seq 1 60); do grep -q held "$work/drv.log" && break; sleep 0.05; done
	kill -TERM "$drv_pid"; wait "$drv_pid" || true; drv_pid=
	if [ $lm = fp8 ]; then
		grep -q "set_low_mode fp8: ok" "$work/drv.log" &&
			grep -q "set_low_mode int8: Operation not supported" "$work/drv.log" ||
			fail "haproxy_low_mode fp8: $(cat "$work/drv.log")"
	else
		grep -q "set_low_mode offered: no" "$work/drv.log" ||
			fail "haproxy_low_mode int8: $(cat "$work/drv.log")"
	fi
done
[ "$(weights)" = "$before" ] || fail "after the ladder runs weights $(weights), want $before (restored)"
echo "haproxy_router: an FP8 low replica takes the FP8 rung only; an INT8 one offers no rung"
echo "haproxy_router: ok"
