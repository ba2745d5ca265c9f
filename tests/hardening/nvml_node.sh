#!/usr/bin/env bash
# Every GPU of a node by UUID, and MIG, against the fake libnvidia-ml
# (tests/fake_nvml: 3 GPUs, GPU 2 in MIG mode with 2 instances):
#  - one entry `{backend: nvml, options: {all: true}}` governs every GPU,
#    each a device named by its UUID (govctl status, decision logs,
#    govd_device_info), written to (GPU 0 and 1: clocks and power limit;
#    GPU 2, MIG-partitioned: power limit only, never a clock lock) and put
#    back on exit; govd --check judges the entry without touching a GPU;
#  - a MIG instance to govern is refused at start (its clocks and power
#    limit are the parent's, shared with every instance), naming the
#    parent; read-only it runs, labelled with its parent's UUID and its GPU
#    instance id, and writes nothing.
# Exit 77 when NVML is compiled out (no fake library built).
. "$(dirname "$0")/lib.sh"
[ -n "${FAKE_NVML_DIR:-}" ] && [ -e "$FAKE_NVML_DIR/full/libnvidia-ml.so.1" ] ||
	{ echo "skip: FAKE_NVML_DIR unset or without full/libnvidia-ml.so.1 (NVML compiled out)"; exit 77; }
lib=$FAKE_NVML_DIR/full/libnvidia-ml.so.1
export FAKE_NVML_STATE=$tmp/nvml.state FAKE_NVML_DRIVER=$tmp/nvml.driver FAKE_NVML_LOG=$tmp/nvml.log
# GPUs of its own: the writer locks are machine-wide, other tests run beside
export FAKE_NVML_UUID_PREFIX=fa4e0d0e
printf 'gpus 3\nmig 2 2\npower_mw 0 450000\npower_mw 1 460000\npower_mw 2 470000\n' >"$FAKE_NVML_STATE"
uuid() { printf 'GPU-fa4e0d0e-0000-4000-8000-%012d' "$1"; }
cfg() { # FILE DIR DEVICE-LINE
	mkdir -p "$2"
	cat >"$1" <<YAML
policy: $PWD/policies/thermal-conservative.yaml
state_file: $2/state.json
decision_log: {dir: $2/log}
metrics: {listen: "127.0.0.1:0"}
control:
  socket: $2/ctl.sock
  read: {users: [$(id -u)]}
devices:
  - $3
YAML
}
cfg "$tmp/all.yaml" "$tmp/all" "{name: node-gpus, backend: nvml, options: {all: true, library: $lib}}"

# --check: the entry as written, no GPU touched (no nvmlInit)
"$govd" --check --config "$tmp/all.yaml" >"$tmp/check.out" 2>&1 || fail "--check: $(cat "$tmp/check.out")"
! grep -q nvmlInit "$FAKE_NVML_LOG" 2>/dev/null || fail "--check initialised NVML"

"$govd" --config "$tmp/all.yaml" 2>"$tmp/all.err" &
pid=$!
pids+=($pid)
has_status() { "$govctl" status --json --socket "$tmp/all/ctl.sock" >"$tmp/status.json" 2>/dev/null; }
wait_for "govd's control socket" has_status
sleep 1.5
has_status || fail "govctl status"
$py - "$tmp/status.json" "$(uuid 0)" "$(uuid 1)" "$(uuid 2)" <<'PY' || fail "status: $(cat "$tmp/status.json")"
import json, sys
s = json.load(open(sys.argv[1]))
names = [d["name"] for d in s["devices"]]
assert names == sys.argv[2:], names
PY
for i in 0 1 2; do
	[ -s "$tmp/all/log/$(uuid $i).jsonl" ] || fail "no decision log $(uuid $i).jsonl: $(ls "$tmp/all/log")"
done
port=$(sed -n 's#.*metrics on http://127.0.0.1:\([0-9]*\)/metrics.*#\1#p' "$tmp/all.err" | head -1)
[ -n "$port" ] || fail "no metrics port in the log"
$py - "$port" "$(uuid 0)" "$(uuid 2)" >"$tmp/metrics.out" <<'PY' || fail "metrics: $(cat "$tmp/metrics.out")"
import re, sys, urllib.request
t = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=2).read().decode()
info = [l for l in t.splitlines() if l.startswith("govd_device_info{")]
assert len(info) == 3, info
g0 = [l for l in info if f'device="{sys.argv[2]}"' in l][0]
assert f'UUID="{sys.argv[2]}"' in g0 and 'gpu="0"' in g0 and "mig=" not in g0, g0
g2 = [l for l in info if f'device="{sys.argv[3]}"' in l][0]
assert 'mig="enabled"' in g2 and 'gpu="2"' in g2, g2
print("\n".join(info))
PY
# a reload lists the GPUs again: the same three, so it is taken
kill -HUP "$pid"
wait_for "the reload" grep -q "reloaded" "$tmp/all.err"
kill -TERM "$pid"
wait "$pid" || fail "govd exited $? on SIGTERM"
for i in 0 1; do
	grep -q "^nvmlDeviceSetGpuLockedClocks $i " "$FAKE_NVML_LOG" || fail "GPU $i's clocks never set"
done
grep -q "^nvmlDeviceSetPowerManagementLimit 2 " "$FAKE_NVML_LOG" || fail "GPU 2's power limit never set"
! grep -q "^nvmlDeviceSetGpuLockedClocks 2 " "$FAKE_NVML_LOG" || fail "GPU 2 (MIG mode) had its clocks locked"
grep -q "GPU 2 is in MIG mode" "$tmp/all.err" || fail "no MIG-mode warning"
# put back: every GPU at its original limit, no clock lock
$py - "$FAKE_NVML_DRIVER" <<'PY' || fail "not restored: $(cat "$FAKE_NVML_DRIVER")"
import sys
for l in open(sys.argv[1]):
    _, i, lim, lo, hi = l.split()
    assert (lim, lo, hi) == ("700000", "0", "0"), l
PY
n_all=$(grep -c "^nvmlDevice\(Set\|Reset\)" "$FAKE_NVML_LOG")

# a MIG instance to govern: refused at start, naming the parent
mig=MIG-fa4e0d0e-0000-4000-9000-000002000001
: >"$FAKE_NVML_LOG"
cfg "$tmp/mig.yaml" "$tmp/mig" "{name: slice1, backend: nvml, options: {uuid: $mig, library: $lib}}"
if "$govd" --config "$tmp/mig.yaml" >"$tmp/mig.out" 2>&1; then fail "govd governed a MIG instance"; fi
grep -q "is MIG instance 2 of GPU 2 ($(uuid 2)).*govern the parent" "$tmp/mig.out" ||
	fail "MIG refusal: $(cat "$tmp/mig.out")"
# read-only: it runs, labelled, and writes nothing
cfg "$tmp/migro.yaml" "$tmp/migro" "{name: slice1, backend: nvml, options: {uuid: $mig, read_only: true, library: $lib}}"
"$govd" --config "$tmp/migro.yaml" 2>"$tmp/migro.err" &
pid=$!
pids+=($pid)
wait_for "the read-only MIG device's metrics" grep -q "metrics on http" "$tmp/migro.err"
port=$(sed -n 's#.*metrics on http://127.0.0.1:\([0-9]*\)/metrics.*#\1#p' "$tmp/migro.err" | head -1)
sleep 1
$py - "$port" "$(uuid 2)" "$mig" >"$tmp/migro.out" <<'PY' || fail "MIG metrics: $(cat "$tmp/migro.out")"
import sys, urllib.request
t = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=2).read().decode()
l = [l for l in t.splitlines() if l.startswith("govd_device_info{")][0]
for want in (f'UUID="{sys.argv[2]}"', 'GPU_I_ID="2"', f'mig_uuid="{sys.argv[3]}"', 'gpu="2"'):
    assert want in l, (want, l)
print(l)
PY
kill -TERM "$pid"
wait "$pid" || fail "read-only MIG govd exited $? on SIGTERM"
! grep -q "^nvmlDevice\(Set\|Reset\)" "$FAKE_NVML_LOG" || fail "the read-only MIG instance wrote: $(grep Set "$FAKE_NVML_LOG" | head -3)"
echo "nvml_node: 3 GPUs governed by UUID from one entry ($n_all writes, GPU 2 power limit only, all restored); a MIG instance refused to govern, read-only labelled $(grep -o 'GPU_I_ID="[0-9]*"' "$tmp/migro.out")"
