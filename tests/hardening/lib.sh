# Shared by tests/hardening/*.sh (sourced): build paths, a private temp
# directory removed on exit, fail() that shows govd's stderr, a sim config
# writer and a bounded wait. $1 of the sourcing script is the build dir.
set -euo pipefail
build=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
govd=$build/govd
govctl=${GOVCTL:-$build/govctl}
govctl=$(realpath "$govctl" 2>/dev/null || echo "$govctl")
[ -x "$govd" ] && [ -x "$govctl" ] || { echo "skip: govd/govctl not built in $build"; exit 77; }
py=/usr/bin/python3
tmp=$(mktemp -d /tmp/govd-hardening-XXXXXX)
pids=()
cleanup() {
	# only the test's own shell: a background job's subshell signalled
	# before it exec'd its command inherits this trap
	[ "$BASHPID" = "$$" ] || return 0
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || true; done
	rm -rf "$tmp"
}
mounts=()
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	for f in "$tmp"/*.err; do [ -f "$f" ] && sed "s|^|  $(basename "$f"): |" "$f" >&2; done
	exit 1
}
# expect_in FILE TEXT: FILE contains TEXT (fixed string)
expect_in() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2'"; }
wait_for() {
	local what=$1; shift
	for _ in $(seq 400); do "$@" && return 0; sleep 0.05; done
	fail "timed out waiting for $what"
}
# sim_config FILE [DIR]: one sim device at x10, everything under DIR (default
# the config's directory), metrics on a free port, control socket.
sim_config() {
	local f=$1 dir=${2:-.}
	cat >"$f" <<YAML
policy: $PWD/policies/thermal-conservative.yaml
state_file: $dir/state.json
decision_log: {dir: $dir/log, max_bytes: 10000000, keep: 2}
metrics: {listen: "127.0.0.1:0"}
control:
  socket: $dir/ctl.sock
  read: {users: [$(id -u)]}
  operator: {users: [$(id -u)]}
devices:
  - {name: gpu0, backend: sim, time_scale: 10, options: {scenario: $PWD/configs/scenarios/default.yaml, seed: 1}}
YAML
}
