#!/usr/bin/env bash
# govctl probe on the example configs (configs/examples/): sim as it is;
# sysfs with root pointed at the xeon-mi210 fixture (which must be left
# unchanged: the probe never writes); nvml with `library` pointed at the
# fake libnvidia-ml (no Set/Reset call may reach it); modbus against a
# pymodbus server (then with the server gone); serving against
# tests/integration/prom_server.py; then broken configs: unknown backend, a
# GPU that is not there, a hwmon chip that is not there, a policy whose
# envelope excludes the device, bad usage. $1: the build directory.
# Parts whose helper is missing (fake NVML, pymodbus) say SKIP and the rest
# still runs and judges; a run with a part missing exits 77 (skipped, naming
# the part), never 0.
set -euo pipefail
build=${1:?usage: probe.sh BUILD_DIR}
govctl=${GOVCTL:-$build/govctl}
[ -x "$govctl" ] || { echo "skip: $govctl not built"; exit 77; }
root=$(pwd)
py=/usr/bin/python3
tmp=$(mktemp -d /tmp/govd-probe-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$tmp"/out "$tmp"/err; do [ -f "$f" ] && sed 's/^/  | /' "$f" >&2; done; exit 1; }

# probe EXPECTED_RC CONFIG [--json]: output in $tmp/out, stderr in $tmp/err.
probe() {
	local want=$1
	shift
	set +e
	"$govctl" probe --config "$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	set -e
	[ "$rc" = "$want" ] || fail "probe $* exited $rc, want $want"
}
jget() { jq -r "$1" "$tmp/out"; }
# An example with its policy path made absolute and sed edits applied.
derive() {
	local src=$1 dst=$2
	shift 2
	sed -e "s#^policy: \.\./\.\./#policy: $root/#" "$@" "$src" >"$dst"
}

# ---- sim ----
probe 0 configs/examples/sim.yaml
grep -q "^probe: 1 of 1 device(s) usable" "$tmp/out" || fail "sim: summary"
grep -q "envelope      inside" "$tmp/out" || fail "sim: envelope"
probe 0 configs/examples/sim.yaml --json
[ "$(jget .usable)" = true ] || fail "sim json: usable"
[ "$(jget '.devices[0].limits.model')" = h200-sxm ] || fail "sim json: model"
[ "$(jget '.devices[0].capabilities.set_clocks')" = true ] || fail "sim json: caps"
[ "$(jget '.devices[0].samples[1].signals.power_accel.check')" = none ] || fail "sim json: power check"
[ "$(jget '.devices[0].samples[1].t_ms - .devices[0].samples[0].t_ms')" = 100 ] ||
	fail "sim json: second sample one 100 ms period later"
[ "$(jget '.devices[0].serving[0].slices | length')" -gt 0 ] || fail "sim json: serving slices"
echo "ok sim: $(jget '.devices[0].samples[1].signals.power_accel.value') W accel after one period"

# ---- sysfs on the fixture ----
fx=tests/data/sysfs/xeon-mi210
sum() { (cd "$fx" && find . -type f -print0 | sort -z | xargs -0 sha1sum | sha1sum); }
before=$(sum)
derive configs/examples/sysfs.yaml "$tmp/sysfs.yaml" -e "s#root: /  #root: $root/$fx #"
grep -q "root: $root/$fx" "$tmp/sysfs.yaml" || fail "sysfs: root not substituted"
probe 0 "$tmp/sysfs.yaml" --json
[ "$(jget '.devices[0].limits.model')" = "amdgpu 0000:03:00.0" ] || fail "sysfs: model"
[ "$(jget '.devices[0].samples[0].signals.power_accel.value')" = 187 ] || fail "sysfs: power"
[ "$(jget '.devices[0].samples[0].signals.temp_junction.value')" = 52 ] || fail "sysfs: junction"
[ "$(jget '.devices[0].limits.power_limit_max_mw')" = 300000 ] || fail "sysfs: power cap max"
[ "$(jget '.devices[0].capabilities.set_power_limit')" = true ] || fail "sysfs: caps"
[ "$(sum)" = "$before" ] || fail "sysfs: the probe changed the fixture"
echo "ok sysfs: MI210 fixture, $(jget '.devices[0].samples[0].signals.power_accel.value') W, fixture unchanged"
# A chip that is not there: a clear open error, exit 1.
derive configs/examples/sysfs.yaml "$tmp/sysfs-missing.yaml" \
	-e "s#root: /  #root: $root/$fx #" -e "s#hwmon_name: amdgpu#hwmon_name: nosuchchip#"
probe 1 "$tmp/sysfs-missing.yaml"
grep -q "PROBLEM       cannot open" "$tmp/out" || fail "sysfs missing: no open problem"
grep -q "nosuchchip" "$tmp/out" || fail "sysfs missing: chip not named"
echo "ok sysfs missing chip: exit 1, $(grep -m1 nosuchchip "$tmp/out" | sed 's/^ *//' | cut -c1-120)"

# ---- nvml on the fake library ----
if [ -n "${FAKE_NVML_DIR:-}" ] && [ -f "$FAKE_NVML_DIR/full/libnvidia-ml.so.1" ]; then
	lib=$FAKE_NVML_DIR/full/libnvidia-ml.so.1
	export FAKE_NVML_LOG=$tmp/nvml.log
	derive configs/examples/nvml.yaml "$tmp/nvml.yaml" \
		-e "s#^\( *\)index: \([0-9]*\).*#\1index: \2\n\1library: $lib#"
	probe 0 "$tmp/nvml.yaml" --json
	[ "$(jget '.devices | length')" = 2 ] || fail "nvml: two GPUs"
	[ "$(jget '.devices[1].limits.model')" = "NVIDIA H200 (fake 1)" ] || fail "nvml: model"
	[ "$(jget '.devices[0].limits.driver_version')" = 550.54.15 ] || fail "nvml: driver"
	[ "$(jget '.devices[0].limits.clk_step_khz')" = 15000 ] || fail "nvml: clock step"
	[ "$(jget '.devices[1].limits.uuid')" = GPU-fa4e0000-0000-4000-8000-000000000001 ] || fail "nvml: uuid"
	[ "$(jget '.devices[0].limits.pci_bus_id')" = 00000000:18:00.0 ] || fail "nvml: pci bus id"
	[ "$(jget '.devices[1].limits.index')" = 1 ] || fail "nvml: index"
	[ "$(jget '.devices[0].samples[1].signals.power_accel.value')" = 350 ] || fail "nvml: instant power"
	[ "$(jget '.devices[0].capabilities.adopt_original')" = true ] || fail "nvml: adopt"
	[ -f "$FAKE_NVML_LOG" ] || fail "nvml: the fake wrote no call log"
	if grep -E "Set|Reset" "$FAKE_NVML_LOG"; then fail "nvml: the probe wrote to the GPU"; fi
	grep -q "nvmlDeviceGetHandleByIndex_v2 1 -> 0" "$FAKE_NVML_LOG" || fail "nvml: fake not called"
	echo "ok nvml: 2 fake H200s, no Set/Reset call among the $(wc -l <"$FAKE_NVML_LOG") logged NVML calls"
	# A GPU that is not there.
	sed -e "s#index: 1#index: 5#" "$tmp/nvml.yaml" >"$tmp/nvml-missing.yaml"
	probe 1 "$tmp/nvml-missing.yaml"
	grep -q "GPU index 5 not present (2 GPUs)" "$tmp/out" || fail "nvml missing: message"
	grep -q "^probe: 1 of 2 device(s) usable" "$tmp/out" || fail "nvml missing: summary"
	echo "ok nvml missing GPU: exit 1, GPU index 5 not present"
	# A policy validated on the sim only: outside its envelope, and why.
	sed -e "s#policies/default.yaml#policies/balanced.yaml#" "$tmp/nvml.yaml" >"$tmp/nvml-env.yaml"
	probe 1 "$tmp/nvml-env.yaml"
	grep -q "driver version '550.54.15' matches no envelope.driver_versions pattern" "$tmp/out" ||
		fail "nvml envelope: reason"
	grep -q "inlet temperature unknown" "$tmp/out" || fail "nvml envelope: inlet"
	echo "ok nvml outside envelope: exit 1 with the reasons"
	# govd --check loads the driver's library without touching a GPU: a
	# config naming a library that is not there (a machine without the
	# NVIDIA driver) fails the check, the fake passes it.
	: >"$FAKE_NVML_LOG"
	"$build/govd" --config "$tmp/nvml.yaml" --check >"$tmp/chk" 2>&1 || fail "nvml --check rejects the fake: $(cat "$tmp/chk")"
	if grep -q nvmlInit "$FAKE_NVML_LOG"; then fail "nvml --check initialised NVML"; fi
	sed -e "s#library: .*#library: $tmp/no-such/libnvidia-ml.so.1#" "$tmp/nvml.yaml" >"$tmp/nvml-nolib.yaml"
	if "$build/govd" --config "$tmp/nvml-nolib.yaml" --check >"$tmp/chk" 2>&1; then
		fail "nvml --check passes without the library"
	fi
	grep -q "devices\[0\].options.library.*nvml-not-found\|devices\[0\].options.library" "$tmp/chk" ||
		fail "nvml --check: the library not named at the device: $(cat "$tmp/chk")"
	grep -q "no-such/libnvidia-ml.so.1 not found" "$tmp/chk" || fail "nvml --check: message: $(cat "$tmp/chk")"
	echo "ok nvml --check: the fake loads, a missing library fails ($(grep -m1 'not found' "$tmp/chk" | cut -c1-100))"
	unset FAKE_NVML_LOG
else
	echo "SKIP nvml: FAKE_NVML_DIR not set or fake not built (run through ctest)"
	skipped="${skipped:-}${skipped:+, }nvml (fake not built)"
fi

# ---- modbus against pymodbus ----
if [ -x "$py" ] && "$py" -c "import pymodbus.server" 2>/dev/null &&
	[ -x "$build/tests/modbus_driver" ]; then
	port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	"$py" tests/integration/pymodbus_server.py --port "$port" --max-s 60 >"$tmp/mb.log" 2>&1 &
	mb=$!
	pids+=("$mb")
	derive configs/examples/modbus.yaml "$tmp/modbus.yaml" \
		-e "s#host: 192.0.2.10 *\(\#.*\)\?#host: 127.0.0.1#" -e "s#port: 502#port: $port#"
	up=0
	for _ in $(seq 1 100); do
		if "$py" -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then
			up=1
			break
		fi
		sleep 0.1
	done
	[ "$up" = 1 ] || fail "pymodbus did not start: $(cat "$tmp/mb.log")"
	probe 0 "$tmp/modbus.yaml" --json
	[ "$(jget '.devices[0].role')" = power-meter ] || fail "modbus: role"
	[ "$(jget '.devices[0].samples[1].signals.power_host.value')" = 1234.5 ] || fail "modbus: power"
	[ "$(jget '.devices[0].meter.voltage')" = 230.5 ] || fail "modbus: voltage"
	[ "$(jget '.devices[0].limits.model')" = eastron-sdm630 ] || fail "modbus: model"
	jget '.devices[0].warnings[]' | grep -q "not an accelerator" || fail "modbus: role warning"
	echo "ok modbus: pymodbus SDM630, $(jget '.devices[0].samples[1].signals.power_host.value') W host, $(jget '.devices[0].meter.voltage') V"
	kill "$mb"
	wait "$mb" 2>/dev/null || true
	probe 1 "$tmp/modbus.yaml"
	grep -q "PROBLEM       no fresh power reading" "$tmp/out" || fail "modbus down: problem"
	echo "ok modbus server gone: exit 1, $(grep -m1 'no fresh power' "$tmp/out" | sed 's/^ *//' | cut -c1-120)"
else
	echo "SKIP modbus: /usr/bin/python3 cannot import pymodbus.server or modbus compiled out"
	skipped="${skipped:-}${skipped:+, }modbus (no pymodbus or compiled out)"
fi

# ---- serving against the stand-in server ----
if [ -x "$py" ]; then
	"$py" tests/integration/prom_server.py --data tests/data/prom --record "$tmp" \
		--port-file "$tmp/port" --lifetime 60 >"$tmp/prom.log" 2>&1 &
	pids+=("$!")
	for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
	[ -s "$tmp/port" ] || fail "prom_server did not start"
	derive configs/examples/serving.yaml "$tmp/serving.yaml" \
		-e "s#url: http://127.0.0.1:8000/metrics#url: http://127.0.0.1:$(cat "$tmp/port")/vllm/metrics#"
	# The reads work; govd cannot run a serving device alone (no limits for
	# governor_init), and the probe says so: exit 1.
	probe 1 "$tmp/serving.yaml" --json
	[ "$(jget '.devices[0].role')" = serving ] || fail "serving: role"
	[ "$(jget '.devices[0].serving[1].valid')" = true ] || fail "serving: second read"
	[ "$(jget '.devices[0].serving[1].requests_completed')" -gt 0 ] || fail "serving: requests"
	[ "$(jget '.devices[0].serving[1].t_ms > .devices[0].serving[0].t_ms')" = true ] || fail "serving: fresh"
	jget '.devices[0].problems[]' | grep -q "pair it with the accelerator" || fail "serving: pairing problem"
	[ "$(jget '.devices[0].problems | length')" = 1 ] || fail "serving: other problems"
	echo "ok serving: vLLM stand-in, $(jget '.devices[0].serving[1].requests_completed') requests, $(jget '.devices[0].serving[1].tokens_generated') tokens; exit 1: not governable alone"
fi

# ---- broken configs ----
derive configs/examples/sim.yaml "$tmp/badbackend.yaml" -e "s#backend: sim#backend: nvidia#" \
	-e "s#scenario: configs#scenario: $root/configs#"
probe 1 "$tmp/badbackend.yaml"
grep -q "unknown\|one of\|valid" "$tmp/err" || fail "bad backend: no diagnostic"
grep -q "nvidia" "$tmp/err" || fail "bad backend: name not quoted"
grep -q "$tmp/badbackend.yaml:[0-9]*:[0-9]*" "$tmp/err" || fail "bad backend: no file:line:col"
grep -q "the config does not load; nothing probed" "$tmp/err" || fail "bad backend: summary"
echo "ok wrong backend name: exit 1, $(grep -m1 nvidia "$tmp/err" | cut -c1-140)"
set +e
"$govctl" probe >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "no --config: exit $rc, want 2"
grep -q "usage: govctl probe" "$tmp/err" || fail "usage text"
echo "ok usage: exit 2"
# A part not run is not a pass: every other check passed, so exit 77 saying which.
[ -z "${skipped:-}" ] || { echo "probe: SKIP: $skipped not run; every other check passed"; exit 77; }
echo "probe: all checks passed"
