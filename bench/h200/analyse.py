#!/usr/bin/env python3
"""Turns what bench/h200/run left in OUTDIR into the tables of
docs/calibration.md ("Measured on a real H200"): govctl probe against
nvidia-smi field by field, then per phase the measured clocks, board power,
step times and junction temperatures beside what `govctl plant` predicts at
the clock the GPU actually ran. Runs where govctl was built (not on the GPU
machine). Usage: bench/h200/analyse.py OUTDIR [--govctl build/govctl]"""
import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def smi_fields(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition(",")
            out[k] = v.strip()
    return out


def num(s):
    m = re.match(r"\s*(-?[0-9.]+)", s or "")
    return float(m.group(1)) if m else None


def supported_gfx(path):
    mhz = [int(m) for m in re.findall(r"Graphics\s*:\s*([0-9]+) MHz", open(path).read())]
    return (min(mhz), max(mhz), len(set(mhz))) if mhz else None


def probe_vs_smi(d):
    p = json.load(open(os.path.join(d, "probe.json")))["devices"][0]
    lim, sig = p["limits"], p["samples"][1]["signals"]
    s = smi_fields(os.path.join(d, "smi-after-probe.csv"))
    rows = []

    def row(field, ours, theirs, ok):
        rows.append((field, ours, theirs, "info" if ok is None else "ok" if ok else "MISMATCH"))

    def close(a, b, tol):
        return a is not None and b is not None and abs(a - b) <= tol

    def sv(name):
        v = sig.get(name)
        return v["value"] if isinstance(v, dict) and v.get("valid") else None

    for k, smi, key in (("model", "name", "model"), ("driver", "driver_version", "driver_version"),
                        ("VBIOS", "vbios_version", "firmware_version"), ("UUID", "uuid", "uuid")):
        row(k, lim.get(key), s.get(smi), lim.get(key) == s.get(smi))
    row("PCI id", lim.get("pci_bus_id"), s.get("pci.bus_id"),
        (lim.get("pci_bus_id") or "").lower() == (s.get("pci.bus_id") or "").lower())
    for k, smi, key in (("power cap min W", "power.min_limit", "power_limit_min_mw"),
                        ("power cap max W", "power.max_limit", "power_limit_max_mw"),
                        ("power cap default W", "power.default_limit", "power_limit_default_mw")):
        a = lim[key] / 1000.0
        row(k, a, s.get(smi), close(a, num(s.get(smi)), 0.5))
    row("power limit W", sv("power_limit"), s.get("power.limit"),
        close(sv("power_limit"), num(s.get("power.limit")), 0.5))
    # readings taken ~1 s apart: a tolerance, not equality
    row("power W (instant)", sv("power_accel"), s.get("power.draw.instant"),
        close(sv("power_accel"), num(s.get("power.draw.instant")), 20))
    row("junction C", sv("temp_junction"), s.get("temperature.gpu"),
        close(sv("temp_junction"), num(s.get("temperature.gpu")), 2))
    row("memory C", sv("temp_memory"), s.get("temperature.memory"),
        close(sv("temp_memory"), num(s.get("temperature.memory")), 2))
    row("SM clock MHz", sv("clock"), s.get("clocks.sm"), close(sv("clock"), num(s.get("clocks.sm")), 30))
    row("max SM clock MHz", lim["clk_default_max_khz"] / 1000, s.get("clocks.max.sm"),
        close(lim["clk_default_max_khz"] / 1000, num(s.get("clocks.max.sm")), 0.5))
    g = supported_gfx(os.path.join(d, "supported-clocks.txt"))
    if g:
        row("clock range MHz", f"{lim['clk_min_khz'] // 1000}..{lim['clk_max_khz'] // 1000}",
            f"{g[0]}..{g[1]} ({g[2]} clocks)",
            (lim["clk_min_khz"] // 1000, lim["clk_max_khz"] // 1000) == g[:2])
    # govd's throttle bits are its own (hal.h), NVML's reasons a bit mask:
    # shown side by side, judged by reading
    row("clock event reasons", f'{p["samples"][1]["throttle"]} ({p["samples"][1]["throttle_bits"]:#x})',
        s.get("clocks_event_reasons.active"), None)
    e0, e1 = (p["samples"][k]["signals"].get("energy_accel") for k in (0, 1))
    if isinstance(e0, dict) and isinstance(e1, dict) and p.get("second_sample_after_ms"):
        w = (e1["value"] - e0["value"]) / (p["second_sample_after_ms"] / 1000.0)
        row("energy counter -> W", round(w, 1), s.get("power.draw"),
            close(w, num(s.get("power.draw")), 30))
    return rows


def load_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def phase_stats(d):
    phases = load_csv(os.path.join(d, "load", "phases.csv"))
    nv = load_csv(os.path.join(d, "load", "nvml.csv"))
    steps = load_csv(os.path.join(d, "load", "steps.csv"))
    out = []
    for ph in phases:
        t0, t1 = float(ph["t_start"]), float(ph["t_end"])
        s = [r for r in nv if t0 <= float(r["t_s"]) <= t1]
        if len(s) < 2:
            continue
        # the energy counter over the phase (mJ), then the last 80 % for a settled value
        e = (float(s[-1]["energy_mj"]) - float(s[0]["energy_mj"])) / 1000.0
        dt = float(s[-1]["t_s"]) - float(s[0]["t_s"])
        st = [float(r["step_ms"]) for r in steps if r["phase"] == ph["phase"]]
        reasons = 0
        for r in s:
            reasons |= int(r["reasons"])
        temps = [(float(r["t_s"]) - t0, float(r["temp_gpu_c"])) for r in s]

        def temp_at(x):
            return min(temps, key=lambda tv: abs(tv[0] - x))[1]
        out.append(dict(
            phase=ph["phase"], tokens=int(ph["tokens"]), seconds=round(t1 - t0, 1),
            power_w=e / dt if dt > 0 else float("nan"),
            inst_p50_w=statistics.median(float(r["power_instant_mw"]) / 1000 for r in s),
            clk_sm=statistics.median(float(r["clk_sm_mhz"]) for r in s),
            clk_sm_min=min(float(r["clk_sm_mhz"]) for r in s),
            clk_mem=statistics.median(float(r["clk_mem_mhz"]) for r in s),
            step_p50=pct(st, 0.5), step_p99=pct(st, 0.99), steps=len(st),
            t_start=temp_at(0), t_10=temp_at(10), t_30=temp_at(30), t_end=temps[-1][1],
            mem_c_end=float(s[-1]["temp_mem_c"]), reasons=reasons))
    return out


def plant(govctl, ph, clk):
    clk = int(round(clk / 15.0) * 15)
    if ph["phase"].startswith("decode"):
        args = ["--phase", "decode", "--batch", str(ph["tokens"]), "--context", "1"]
    else:
        args = ["--phase", "prefill", "--batch", "1", "--prompt", str(ph["tokens"])]
    r = subprocess.run([govctl, "plant", "--preset", "h200-sxm", "--model", "llama-3.1-8b", *args,
                        "--clocks", str(clk), "--csv"], capture_output=True, text=True, check=True)
    return list(csv.DictReader(r.stdout.splitlines()))[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--govctl", default="build/govctl")
    a = ap.parse_args()
    print("## govctl probe against nvidia-smi\n")
    print("| field | govctl probe | nvidia-smi | |\n|---|---|---|---|")
    for r in probe_vs_smi(a.outdir):
        print("| " + " | ".join(str(x) for x in r) + " |")
    print("\n## Per phase: measured | plant (simulated, at the measured median SM clock)\n")
    print("| phase | s | SM MHz p50 (min) | mem MHz | board W measured | plant W (accel+mem) | err |"
          " step ms p50 / p99 measured | plant step ms | err | Tj start / +10 s / +30 s / end C |"
          " plant Tj C | reasons |")
    print("|" + "---|" * 13)
    for ph in phase_stats(a.outdir):
        cells = [ph["phase"], ph["seconds"], f"{ph['clk_sm']:.0f} ({ph['clk_sm_min']:.0f})",
                 f"{ph['clk_mem']:.0f}", f"{ph['power_w']:.1f}"]
        if ph["tokens"]:
            p = plant(a.govctl, ph, ph["clk_sm"])
            pw = float(p["power_accel_w"]) + float(p["power_memory_w"])
            ps = float(p["step_ms"])
            cells += [f"{pw:.1f}", f"{(pw / ph['power_w'] - 1) * 100:+.1f} %",
                      f"{ph['step_p50']:.3f} / {ph['step_p99']:.3f}", f"{ps:.3f}",
                      f"{(ps / ph['step_p50'] - 1) * 100:+.1f} %"]
            ptj = p["tj_c"]
        else:
            cells += ["-", "-", "-", "-", "-"]
            ptj = "-"
        cells += [f"{ph['t_start']:.0f} / {ph['t_10']:.0f} / {ph['t_30']:.0f} / {ph['t_end']:.0f}",
                  ptj, hex(ph["reasons"])]
        print("| " + " | ".join(str(c) for c in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
