#!/usr/bin/env bash
# A replica pair (a BF16 and an FP8 vLLM stand-in) behind one serving
# device: two real HTTP servers (python3 -m http.server on 127.0.0.1, free
# ports) serve the recorded expositions of tests/data/serving/, which the
# driver swaps between scrapes; the device merges both (url + replica_urls).
# Usage: serving_replicas.sh BUILD_DIR. Exit 77 without python3.
set -euo pipefail
build=${1:?usage: serving_replicas.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
drv="$build/tests/test_serving_metrics"
[ -x "$drv" ] || { echo "serving_replicas: $drv not built" >&2; exit 1; }
command -v python3 >/dev/null || { echo "serving_replicas: SKIP (no python3)"; exit 77; }
work=$(mktemp -d /tmp/govd-replicas-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
start() { # DIR: sets port (no subshell: pids must reach cleanup)
	local dir=$1
	mkdir -p "$dir"
	: >"$dir/metrics"
	( cd "$dir" && exec timeout 120 python3 -u -m http.server --bind 127.0.0.1 0 ) >"$dir.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 100); do
		port=$(sed -n 's/.*port \([0-9][0-9]*\).*/\1/p' "$dir.log" | head -1)
		[ -n "$port" ] && return 0
		sleep 0.1
	done
	echo "serving_replicas: http.server in $dir did not start" >&2
	cat "$dir.log" >&2
	return 1
}
start "$work/bf16"
p1=$port
start "$work/fp8"
p2=$port
cd "$root"
SERVING_PAIR="http://127.0.0.1:$p1/metrics $work/bf16 http://127.0.0.1:$p2/metrics $work/fp8" \
	CMOCKA_MESSAGE_OUTPUT=stdout timeout 120 "$drv" | tee "$work/out"
# the HTTP case must have run, not skipped
grep -q '^\[       OK \] test_replica_pair_http' "$work/out"
