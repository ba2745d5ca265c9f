#!/usr/bin/env bash
# The hot scenario (Azure code trace at peak hour, 40 C inlet, failed fans)
# must show hardware thermal clamp cycles under naive INT8, as real hardware
# does, and the cool one none. Needs the public trace (skips without it).
set -euo pipefail
build=$1
. "$(dirname "$0")/lib/need_trace.sh"
field() { sed -n "s/.*\"$2\": *\([0-9.]*\).*/\1/p" "$1" | head -1; }
"$build/govctl" sim --scenario configs/scenarios/azure-code-hot.yaml \
	--policy policies/baselines/naive-int8.yaml --seed 1 --out "$out/hot" >/dev/null
"$build/govctl" sim --scenario configs/scenarios/azure-code-30c.yaml \
	--policy policies/baselines/naive-int8.yaml --seed 1 --out "$out/cool" >/dev/null
hot=$(field "$out/hot/summary.json" clamp_events)
cool=$(field "$out/cool/summary.json" clamp_events)
echo "naive-int8 clamp events: hot=$hot (expect > 0), 30c=$cool (expect 0)"
[ "$hot" -gt 0 ] && [ "$cool" -eq 0 ]
