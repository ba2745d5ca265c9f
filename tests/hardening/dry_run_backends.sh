#!/usr/bin/env bash
# govd --dry-run writes nothing, per backend, on any path (issue 30): for
# each backend a control run without --dry-run shows that govd does write
# there (so the check can fail), then a dry run of the same config leaves
# the device's state as it found it, while running and after exit:
#  - sysfs: a copy of the xeon-mi210 fixture tree, every file's digest;
#  - nvml: the fake library's driver state (FAKE_NVML_DRIVER: power limit,
#    locked clocks, kept across processes as a real driver keeps them) and
#    its call log (no Set*/Reset* call at all);
#  - serving, precision actuators file, exec and http (a static policy asks
#    INT8 0.5 on slice code), with the sim as its power side: the document,
#    the command's side effect and the POSTs the server received.
# The sim's own dry run is tests/unit/test_daemon_loop.c
# (test_dry_run_writes_nothing); HAProxy's is case 7 of
# tests/integration/haproxy_router.sh. Exit 77 (skip) only when govd is not
# built; without FAKE_NVML_DIR (NVML compiled out) the nvml part says so
# and the test exits 77 after the others pass.
. "$(dirname "$0")/lib.sh"
RUN_S=1.5

# run_govd NAME CONFIG [--dry-run]: govd for RUN_S seconds, SIGTERM, exit 0;
# MID (a command) runs while it is up, before the SIGTERM.
run_govd() {
	local name=$1 cfg=$2
	shift 2
	"$govd" --config "$cfg" "$@" 2>"$tmp/$name.err" &
	local p=$!
	pids+=($p)
	sleep "$RUN_S"
	kill -0 "$p" 2>/dev/null || fail "$name: govd exited early"
	[ -n "${MID:-}" ] && $MID >"$tmp/$name.mid"
	kill -TERM "$p"
	wait "$p" || fail "$name: govd exited $? on SIGTERM"
}
common() { # DIR: the config's shared part
	cat <<YAML
state_file: $1/state.json
decision_log: {dir: $1/log}
metrics: {enabled: false}
control: {enabled: false}
YAML
}

# ---- sysfs ----
tree() { (cd "$tmp/sysfs" && find . -type f -print0 | sort -z | xargs -0 sha1sum); }
sysfs_cfg() {
	mkdir -p "$tmp/sysfs-run"
	{
		echo "policy: $PWD/policies/thermal-conservative.yaml"
		common "$tmp/sysfs-run"
		echo "devices:"
		echo "  - {name: mi210-0, backend: sysfs, options: {root: $tmp/sysfs, pci: \"0000:03:00.0\"}}"
	} >"$tmp/sysfs.yaml"
}
cp -r tests/data/sysfs/xeon-mi210 "$tmp/sysfs"
sysfs_cfg
tree >"$tmp/sysfs.before"
MID=tree run_govd sysfs-control "$tmp/sysfs.yaml"
! cmp -s "$tmp/sysfs.before" "$tmp/sysfs-control.mid" || fail "sysfs: the control run wrote nothing (the check could not fail)"
rm -rf "$tmp/sysfs" "$tmp/sysfs-run"
cp -r tests/data/sysfs/xeon-mi210 "$tmp/sysfs"
tree >"$tmp/sysfs.before"
MID=tree run_govd sysfs-dry "$tmp/sysfs.yaml" --dry-run
cmp -s "$tmp/sysfs.before" "$tmp/sysfs-dry.mid" || fail "sysfs: the dry run wrote: $(diff "$tmp/sysfs.before" "$tmp/sysfs-dry.mid" | head -5)"
tree | cmp -s "$tmp/sysfs.before" - || fail "sysfs: the dry run's exit wrote"
echo "sysfs: dry run wrote nothing ($(wc -l <"$tmp/sysfs.before") files unchanged; the control run changed $(diff "$tmp/sysfs.before" "$tmp/sysfs-control.mid" | grep -c '^<') while running)"

# ---- nvml (the fake library) ----
nvml_skipped=
if [ -n "${FAKE_NVML_DIR:-}" ] && [ -e "$FAKE_NVML_DIR/full/libnvidia-ml.so.1" ]; then
	export FAKE_NVML_STATE=$tmp/nvml.state FAKE_NVML_DRIVER=$tmp/nvml.driver FAKE_NVML_LOG=$tmp/nvml.log
	printf 'gpus 1\npower_mw 0 450000\ntemp_c 0 60\n' >"$FAKE_NVML_STATE"
	mkdir -p "$tmp/nvml-run"
	{
		echo "policy: $PWD/policies/thermal-conservative.yaml"
		common "$tmp/nvml-run"
		echo "devices:"
		echo "  - {name: gpu0, backend: nvml, options: {index: 0, library: $FAKE_NVML_DIR/full/libnvidia-ml.so.1}}"
	} >"$tmp/nvml.yaml"
	driver() { cat "$FAKE_NVML_DRIVER" 2>/dev/null || true; }
	: >"$FAKE_NVML_LOG"
	MID=driver run_govd nvml-control "$tmp/nvml.yaml"
	n_set=$(grep -cE '^nvmlDevice(Set|Reset)' "$FAKE_NVML_LOG" || true)
	[ "$n_set" -gt 0 ] || fail "nvml: the control run wrote nothing (the check could not fail)"
	rm -f "$FAKE_NVML_DRIVER" "$tmp/nvml-run/state.json"
	: >"$FAKE_NVML_LOG"
	driver >"$tmp/nvml.before"
	MID=driver run_govd nvml-dry "$tmp/nvml.yaml" --dry-run
	! grep -E '^nvmlDevice(Set|Reset)' "$FAKE_NVML_LOG" || fail "nvml: the dry run called the setters above"
	cmp -s "$tmp/nvml.before" "$tmp/nvml-dry.mid" && driver | cmp -s "$tmp/nvml.before" - ||
		fail "nvml: the dry run changed the driver's state"
	echo "nvml: dry run wrote nothing ($(wc -l <"$FAKE_NVML_LOG") calls, none a setter; the control run made $n_set)"
	unset FAKE_NVML_STATE FAKE_NVML_DRIVER FAKE_NVML_LOG
else
	nvml_skipped=1
	echo "nvml: not checked here: FAKE_NVML_DIR unset (NVML compiled out)"
fi

# ---- serving: file, exec and http precision actuators ----
cat >"$tmp/int8.yaml" <<'YAML'
name: dry-run-int8
metadata: {owners: [qa]}
control: {controller: static, period_ms: 100}
precision:
  slices: {code: 0.5}
YAML
# a stand-in server: /metrics (empty exposition) and POST /precision recorded
cat >"$tmp/srv.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        with open(sys.argv[2], "a") as log:  # opened per request: the test removes it between runs
            log.write(self.rfile.read(n).decode() + "\n")
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
$py "$tmp/srv.py" 0 "$tmp/posts" >"$tmp/srv.port" 2>"$tmp/srv.err" &
pids+=($!)
wait_for "the stand-in server" test -s "$tmp/srv.port"
port=$(cat "$tmp/srv.port")
printf '#!/bin/sh\necho "$@" >>%s/exec.calls\ncat >>%s/exec.calls\n' "$tmp" "$tmp" >"$tmp/act.sh"
chmod +x "$tmp/act.sh"
serving_cfg() { # KIND TARGET
	mkdir -p "$tmp/sv-$1"
	{
		echo "policy: $tmp/int8.yaml"
		common "$tmp/sv-$1"
		cat <<YAML
devices:
  - name: gpu0
    backend: serving
    options:
      url: http://127.0.0.1:$port/metrics
      timeout_ms: 200
      slices: code
      precision: $1
      precision_target: $2
      power_backend: sim
      power.scenario: $PWD/configs/scenarios/default.yaml
      power.seed: 1
YAML
	} >"$tmp/sv-$1.yaml"
}
evidence() { # KIND: what the actuator left
	case $1 in
	file) cat "$tmp/precision.json" 2>/dev/null || true ;;
	exec) cat "$tmp/exec.calls" 2>/dev/null || true ;;
	http) cat "$tmp/posts" 2>/dev/null || true ;;
	esac
}
for kind in file exec http; do
	case $kind in
	file) target=$tmp/precision.json ;;
	exec) target=$tmp/act.sh ;;
	http) target=http://127.0.0.1:$port/precision ;;
	esac
	serving_cfg $kind "$target"
	rm -f "$tmp/precision.json" "$tmp/exec.calls" "$tmp/posts"
	run_govd sv-$kind-control "$tmp/sv-$kind.yaml"
	[ -n "$(evidence $kind)" ] || fail "serving/$kind: the control run wrote nothing (the check could not fail)"
	rm -rf "$tmp/precision.json" "$tmp/exec.calls" "$tmp/posts" "$tmp/sv-$kind"
	serving_cfg $kind "$target"
	run_govd sv-$kind-dry "$tmp/sv-$kind.yaml" --dry-run
	[ -z "$(evidence $kind)" ] || fail "serving/$kind: the dry run wrote: $(evidence $kind | head -3)"
	echo "serving/$kind: dry run wrote nothing (the control run did)"
done

[ -z "$nvml_skipped" ] || { echo "skip: nvml part not run (FAKE_NVML_DIR unset)"; exit 77; }
echo "dry_run_backends: ok"
