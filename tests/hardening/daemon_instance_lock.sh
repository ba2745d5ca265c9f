#!/usr/bin/env bash
# One writer per device (issue 12, item 2): a second govd on a live
# instance's config, and govctl restore while it runs, are refused before
# anything is read or restored, naming the live instance's pid; the live
# instance's state file stays and its devices are not written. Every backend
# that writes: sim, sysfs (fixture tree), nvml (the fake library, when built).
# And per device, not per state file (issue 30): a second govd on the same
# sysfs device or GPU under another state file and config is refused
# (device-busy, governor/daemon/devlock.c) before its first period, the
# device as the live one set it; a dry run beside it is allowed.
. "$(dirname "$0")/lib.sh"
GPU0="sys/devices/pci0000:00/0000:00:03.1/0000:03:00.0"

# second_refused NAME CONFIG: instance 1 runs; instance 2 and govctl restore
# are refused with instance 1's pid; the state file is the same file after.
second_refused() {
	local name=$1 cfg=$2 state=$3
	"$govd" --config "$cfg" 2>"$tmp/$name-1.err" & local p1=$!; pids+=($p1)
	wait_for "$name: instance 1's state file" test -s "$state"
	# after its first period (which applies its first point): later writes
	# are only changes, so what on_live sets stays unless someone else writes
	decided() { grep -q '"type":"decision"' "$(dirname "$state")/log/gpu0.jsonl" 2>/dev/null; }
	wait_for "$name: instance 1's first period" decided
	local before; before=$(stat -c %i:%Y "$state")
	[ -n "${on_live:-}" ] && $on_live
	set +e; timeout 30 env ${second_env:-} "$govd" --config "$cfg" 2>"$tmp/$name-2.err"; local rc=$?; set -e
	[ "$rc" -ne 0 ] || fail "$name: a second govd started on a live instance's config"
	expect_in "$tmp/$name-2.err" "another govd (pid $p1) holds this state file"
	if grep -q "restored" "$tmp/$name-2.err"; then fail "$name: instance 2 restored something"; fi
	set +e; timeout 30 env ${second_env:-} "$govctl" restore --config "$cfg" >/dev/null 2>"$tmp/$name-r.err"; rc=$?; set -e
	[ "$rc" -ne 0 ] || fail "$name: govctl restore ran under a live govd"
	expect_in "$tmp/$name-r.err" "govd pid $p1 is running on it"
	[ -f "$state" ] && [ "$(stat -c %i:%Y "$state")" = "$before" ] ||
		fail "$name: the live instance's state file was replaced or removed"
	[ -n "${check_live:-}" ] && $check_live
	kill -TERM "$p1"; wait "$p1" || fail "$name: instance 1 did not stop cleanly"
	[ ! -e "$state" ] || fail "$name: instance 1 left its state file after SIGTERM"
	# the lock went with instance 1: the next start takes it
	timeout 30 "$govd" --config "$cfg" --check >/dev/null 2>&1 || fail "$name: --check after stop"
}

# sim
mkdir -m 0700 "$tmp/sim"
sim_config "$tmp/sim.yaml" "$tmp/sim"
on_live= check_live= second_refused sim "$tmp/sim.yaml" "$tmp/sim/state.json"

# sysfs: the live instance "governs" the cap (written here as it would);
# before the lock, instance 2 wrote the recorded originals under it.
cp -a tests/data/sysfs/xeon-mi210 "$tmp/fx"
mkdir -m 0700 "$tmp/sysfs"
cat >"$tmp/sysfs.yaml" <<YAML
policy: $PWD/policies/balanced.yaml
state_file: $tmp/sysfs/state.json
decision_log: {dir: $tmp/sysfs/log}
metrics: {enabled: false}
control: {enabled: false}
devices:
  - {name: gpu0, backend: sysfs, options: {root: $tmp/fx, pci: "0000:03:00.0"}}
YAML
cap=$tmp/fx/$GPU0/hwmon/hwmon3/power1_cap
level=$tmp/fx/$GPU0/power_dpm_force_performance_level
govern() { echo 250000000 >"$cap"; echo manual >"$level"; }
governed() {
	[ "$(cat "$cap")" = 250000000 ] && [ "$(cat "$level")" = manual ] ||
		fail "sysfs: the second instance wrote the device under the live one (cap $(cat "$cap"), level $(cat "$level"))"
}
on_live=govern check_live=governed second_refused sysfs "$tmp/sysfs.yaml" "$tmp/sysfs/state.json"

# other_config_refused NAME CONFIG: instance 1 runs on CONFIG; a copy with
# its own state file and log is refused for the device, a dry run of it is not.
other_config_refused() {
	local name=$1 cfg=$2 state=$3
	mkdir -m 0700 "$tmp/$name-b"
	sed "s|state_file: .*|state_file: $tmp/$name-b/state.json|; s|decision_log: .*|decision_log: {dir: $tmp/$name-b/log}|; ${b_sed:-}" \
		"$cfg" >"$tmp/$name-b.yaml"
	"$govd" --config "$cfg" 2>"$tmp/$name-a.err" & local p1=$!; pids+=($p1)
	wait_for "$name: instance 1's state file" test -s "$state"
	[ -n "${on_live:-}" ] && $on_live
	set +e; timeout 30 env ${second_env:-} "$govd" --config "$tmp/$name-b.yaml" 2>"$tmp/$name-b.err"; local rc=$?; set -e
	[ "$rc" -ne 0 ] || fail "$name: a second govd under another state file started on the same device"
	expect_in "$tmp/$name-b.err" "is written by another govd on this machine"
	[ ! -e "$tmp/$name-b/state.json" ] || fail "$name: the refused instance recorded originals"
	[ -n "${check_live:-}" ] && $check_live
	"$govd" --config "$tmp/$name-b.yaml" --dry-run 2>"$tmp/$name-dry.err" & local p2=$!; pids+=($p2)
	sleep 1
	kill -0 "$p2" 2>/dev/null || fail "$name: a dry run beside the live instance was refused: $(tail -3 "$tmp/$name-dry.err")"
	kill -TERM "$p2"; wait "$p2" || fail "$name: the dry run did not stop cleanly"
	kill -TERM "$p1"; wait "$p1" || fail "$name: instance 1 did not stop cleanly"
}
on_live=govern check_live=governed other_config_refused sysfs2 "$tmp/sysfs.yaml" "$tmp/sysfs/state.json"

# nvml: the fake library logs every call; the second instance makes none
lib=${FAKE_NVML_DIR:-$build/tests/fake_nvml}/full/libnvidia-ml.so.1
if [ -f "$lib" ]; then
	mkdir -m 0700 "$tmp/nvml"
	export FAKE_NVML_LOG=$tmp/nvml-calls.log FAKE_NVML_DRIVER=$tmp/nvml-driver
	cat >"$tmp/nvml.yaml" <<YAML
policy: $PWD/policies/balanced.yaml
state_file: $tmp/nvml/state.json
decision_log: {dir: $tmp/nvml/log}
metrics: {enabled: false}
control: {enabled: false}
devices:
  - {name: gpu0, backend: nvml, options: {library: $lib, index: 0}}
YAML
	# instance 2 and govctl log their calls apart from instance 1's
	no_sets() {
		if grep -q 'nvmlDeviceSet\|nvmlDeviceReset' "$tmp/nvml-second.log" 2>/dev/null; then
			fail "nvml: a refused instance or govctl restore wrote the device: $(grep 'Set\|Reset' "$tmp/nvml-second.log" | head -3)"
		fi
	}
	second_env="FAKE_NVML_LOG=$tmp/nvml-second.log" on_live= check_live=no_sets second_refused nvml "$tmp/nvml.yaml" "$tmp/nvml/state.json"
	rm -f "$tmp/nvml-second.log"
	# the same GPU, named by its UUID in another config and state file
	b_sed='s|index: 0}|uuid: GPU-fa4e0000-0000-4000-8000-000000000000}|' \
		second_env="FAKE_NVML_LOG=$tmp/nvml-second.log" on_live= check_live=no_sets \
		other_config_refused nvml2 "$tmp/nvml.yaml" "$tmp/nvml/state.json"
	grep -q "uuid: GPU-" "$tmp/nvml2-b.yaml" || fail "nvml2: the copy does not name the GPU by UUID"
else
	echo "nvml part skipped: $lib not built (GOVD_WITH_NVML off)"
fi
echo "daemon_instance_lock: ok"
