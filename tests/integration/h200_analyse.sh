#!/usr/bin/env bash
# bench/h200/analyse.py, the reader of the read-only H200 check's output,
# on a synthetic output directory, so that it works the first time a GPU
# machine runs bench/h200/run: the probe half reads a real `govctl probe
# --json` of the fake NVML beside nvidia-smi values written here (every field
# agrees except the energy counter, which the fake does not advance: that row
# must say MISMATCH); the per-phase half reads "measurements" that are the
# plant's own predictions (govctl plant at 1980 MHz), so its measured | plant
# errors must come out at 0 %: a unit or column slip shows. $1: build dir.
set -euo pipefail
build=${1:?usage: h200_analyse.sh BUILD_DIR}
govctl=${GOVCTL:-$build/govctl}
[ -x "$govctl" ] || { echo "skip: $govctl not built"; exit 77; }
lib=${FAKE_NVML_DIR:-}/full/libnvidia-ml.so.1
[ -n "${FAKE_NVML_DIR:-}" ] && [ -f "$lib" ] || { echo "skip: FAKE_NVML_DIR unset (NVML compiled out)"; exit 77; }
tmp=$(mktemp -d /tmp/govd-h200-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/out" ] && sed 's/^/  | /' "$tmp/out" >&2; exit 1; }
root=$(pwd)
out=$tmp/run
mkdir -p "$out/load"

cat >"$tmp/nvml.yaml" <<YAML
node: t
policy: $root/policies/default.yaml
state_file: $tmp/state.json
devices:
  - {name: gpu0, backend: nvml, options: {index: 0, library: $lib, read_only: true}}
YAML
"$govctl" probe --config "$tmp/nvml.yaml" --json >"$out/probe.json" || fail "probe on the fake"
cat >"$out/smi-after-probe.csv" <<'CSV'
power.draw,350.00 W
power.draw.instant,350.00 W
power.limit,700.00 W
power.min_limit,200.00 W
power.max_limit,700.00 W
power.default_limit,700.00 W
temperature.gpu,55
temperature.memory,60
clocks.sm,1980 MHz
clocks.max.sm,1980 MHz
clocks_event_reasons.active,0x0000000000000000
uuid,GPU-fa4e0000-0000-4000-8000-000000000000
pci.bus_id,00000000:18:00.0
driver_version,550.54.15
vbios_version,96.00.99.00.01
name,NVIDIA H200 (fake 0)
CSV
printf '    Graphics                          : 1980 MHz\n    Graphics                          : 345 MHz\n' \
	>"$out/supported-clocks.txt"

# The plant's own decode (batch 8, context 1) and prefill (2048) at 1980 MHz
# as the "measurements": board power = accel + memory rails.
"$govctl" plant --preset h200-sxm --model llama-3.1-8b --phase decode --batch 8 --context 1 \
	--clocks 1980 --csv >"$tmp/dec.csv"
"$govctl" plant --preset h200-sxm --model llama-3.1-8b --phase prefill --batch 1 --prompt 2048 \
	--clocks 1980 --csv >"$tmp/pre.csv"
python3 - "$tmp" "$out" <<'PY'
import csv, sys
tmp, out = sys.argv[1:]
dec = list(csv.DictReader(open(f"{tmp}/dec.csv")))[0]
pre = list(csv.DictReader(open(f"{tmp}/pre.csv")))[0]
# The prefill row runs at the clock its power cap leaves (1905 MHz): the
# synthetic measurement reports that clock, as NVML would.
phases = [("idle", 0, 0, 60, None), ("decode_b8", 8, 60, 100, dec), ("prefill_2048", 2048, 100, 160, pre)]
with open(f"{out}/load/phases.csv", "w", newline="") as f:
    w = csv.writer(f); w.writerow(["phase", "t_start", "t_end", "tokens", "steps"])
    for n, tok, a, b, _ in phases: w.writerow([n, a, b, tok, 100])
with open(f"{out}/load/nvml.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["t_s", "phase", "power_avg_mw", "power_instant_mw", "energy_mj", "temp_gpu_c",
                "temp_mem_c", "clk_sm_mhz", "clk_mem_mhz", "reasons", "util_pct"])
    e = 0.0
    for n, tok, a, b, row in phases:
        p_mw = 80000 if row is None else 1000 * (float(row["power_accel_w"]) + float(row["power_memory_w"]))
        clk = 1980 if row is None else float(row["clock_mhz"])
        for i in range(int((b - a) / 0.05)):
            t = a + i * 0.05
            w.writerow([round(t, 3), n, int(p_mw), int(p_mw), int(e), 40 + (t > 60) * 10, 45, clk, 3201, 0, 50])
            e += p_mw * 0.05
with open(f"{out}/load/steps.csv", "w", newline="") as f:
    w = csv.writer(f); w.writerow(["phase", "t_s", "step_ms"])
    for n, tok, a, b, row in phases:
        if row:
            for i in range(100): w.writerow([n, a + i * 0.4, row["step_ms"]])
PY

python3 bench/h200/analyse.py "$out" --govctl "$govctl" >"$tmp/out" || fail "analyse.py exited $?"
row() { grep -E "^\| $1 \|" "$tmp/out" || fail "no row '$1'"; }
for f in model driver VBIOS UUID "PCI id" "power cap min W" "power cap max W" "power cap default W" \
	"power limit W" "power W \(instant\)" "junction C" "memory C" "SM clock MHz" "max SM clock MHz" \
	"clock range MHz"; do
	row "$f" | grep -q "| ok |$" || fail "probe row '$f' not ok"
done
row "energy counter -> W" | grep -q "MISMATCH" || fail "the fake's frozen energy counter was not caught"
for p in decode_b8 prefill_2048; do
	# measured | plant | err for power and step time: 0 % within rounding
	errs=$(row "$p" | awk -F'|' '{print $8, $11}')
	[ "$(echo $errs | wc -w)" -eq 4 ] || fail "$p: no power and step error columns in the row"
	for e in $errs; do
		case $e in +0.0|-0.0|%) ;; *) fail "$p: error '$e' where the plant measured itself" ;; esac
	done
done
row idle | grep -q "80.0" || fail "idle power"
echo "ok analyse.py: probe vs nvidia-smi 15 rows ok, the frozen energy counter caught, plant vs itself 0 %"
