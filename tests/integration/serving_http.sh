#!/usr/bin/env bash
# The serving backend against a stand-in server on 127.0.0.1 (free port):
# recorded vLLM/Triton scrapes, counter resets, hangs, HTTP 500, malformed
# and partial bodies, and a POST endpoint recording precision documents.
# Usage: serving_http.sh BUILD_DIR. Bounded: the server stops by itself.
set -euo pipefail
build=${1:?usage: serving_http.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
drv="$build/tests/test_hal_serving"
if [ ! -x "$drv" ]; then
	echo "serving_http: $drv not built" >&2
	exit 1
fi
if ! command -v python3 >/dev/null; then
	echo "serving_http: SKIP (no python3 for the stand-in server, tests/integration/prom_server.py)"
	exit 77
fi
work=$(mktemp -d /tmp/govd-serving-XXXXXX)
srv_pid=
cleanup() {
	if [ -n "$srv_pid" ]; then kill "$srv_pid" 2>/dev/null || true; wait "$srv_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/record"
python3 "$here/prom_server.py" --data "$root/tests/data/prom" --record "$work/record" \
	--port-file "$work/port" --hang 3 --lifetime 120 &
srv_pid=$!
for _ in $(seq 1 100); do
	[ -s "$work/port" ] && break
	kill -0 "$srv_pid" 2>/dev/null || { echo "serving_http: server died" >&2; exit 1; }
	sleep 0.1
done
[ -s "$work/port" ] || { echo "serving_http: server did not start" >&2; exit 1; }
port=$(cat "$work/port")
cd "$root"
SERVING_TEST_URL="http://127.0.0.1:$port" SERVING_TEST_RECORD="$work/record" \
	CMOCKA_MESSAGE_OUTPUT=stdout timeout 300 "$drv"
