#!/usr/bin/env python3
"""Read-only load for the H200 check (docs/calibration.md, "Measured on a real
H200"). Runs, in turn: idle; a decode-like bf16 weight stream shaped like
llama-3.1-8b's layers at batch 1, 8, 64; a prefill-like pass (the same layers
as bf16 GEMMs at 2048 tokens, causal attention included); idle again. Times
every step with CUDA events and samples NVML (read calls only: power, energy,
temperatures, clocks, clocks-event reasons) every 50 ms in a thread. Sets
nothing on the GPU: no clocks, limits, persistence, compute mode or MIG.

Writes OUTDIR/phases.csv (one row per phase), OUTDIR/steps.csv (every step
time) and OUTDIR/nvml.csv (the samples)."""
import argparse
import csv
import os
import sys
import threading
import time

# llama-3.1-8b (Meta's config.json): hidden 4096, 32 layers, 32 query heads,
# 8 KV heads, head_dim 128, MLP 14336, vocab 128256.
HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, MLP, VOCAB = 4096, 32, 32, 8, 128, 14336, 128256


def nvml_sampler(stop, rows, t0, period_s):
    import pynvml as N
    N.nvmlInit()
    h = N.nvmlDeviceGetHandleByIndex(0)
    reasons = getattr(N, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        N.nvmlDeviceGetCurrentClocksThrottleReasons
    # nvml.h: NVML_FI_DEV_MEMORY_TEMP 82, NVML_FI_DEV_POWER_INSTANT 186.
    fid = [getattr(N, "NVML_FI_DEV_POWER_INSTANT", 186), getattr(N, "NVML_FI_DEV_MEMORY_TEMP", 82)]
    kinds = ["dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal"]

    def value(f):
        if f.nvmlReturn != 0 or not 0 <= f.valueType < len(kinds):
            return -1
        return getattr(f.value, kinds[f.valueType])

    phase_ref = rows["phase"]
    while not stop.is_set():
        t = time.monotonic() - t0
        try:
            fv = N.nvmlDeviceGetFieldValues(h, fid)
            inst, mtemp = value(fv[0]), value(fv[1])
        except N.NVMLError:
            inst, mtemp = -1, -1
        try:
            rows["data"].append((
                round(t, 3), phase_ref[0], N.nvmlDeviceGetPowerUsage(h), inst,
                N.nvmlDeviceGetTotalEnergyConsumption(h),
                N.nvmlDeviceGetTemperature(h, N.NVML_TEMPERATURE_GPU), mtemp,
                N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_SM),
                N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_MEM),
                reasons(h), N.nvmlDeviceGetUtilizationRates(h).gpu))
        except N.NVMLError as e:
            rows["errors"].append(f"{t:.3f} {e}")
        stop.wait(period_s)
    N.nvmlShutdown()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--idle-s", type=float, default=60)
    ap.add_argument("--decode-s", type=float, default=40)
    ap.add_argument("--prefill-s", type=float, default=60)
    ap.add_argument("--cool-s", type=float, default=20)
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--prompt", type=int, default=2048)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    t0 = time.monotonic()
    samples = {"phase": ["start"], "data": [], "errors": []}
    stop = threading.Event()
    th = threading.Thread(target=nvml_sampler, args=(stop, samples, t0, 0.05), daemon=True)
    th.start()
    phases, steps = [], []

    def mark(name):
        samples["phase"][0] = name
        print(f"[{time.monotonic() - t0:7.1f} s] {name}", flush=True)

    try:
        run_all(a, t0, mark, phases, steps)
    finally:
        stop.set()
        th.join()
        write_out(a.outdir, phases, steps, samples)


def run_all(a, t0, mark, phases, steps):
    import torch
    import torch.nn.functional as F
    mark("idle")
    time.sleep(a.idle_s)
    phases.append(dict(phase="idle", t_start=0.0, t_end=time.monotonic() - t0, tokens=0, steps=0))

    dev = torch.device("cuda")
    torch.manual_seed(1)
    # One layer's weights as nn.Linear stores them ([out, in]); every layer
    # its own copy, so a step streams all 8 B parameters from HBM as a real
    # decode step does (L2 holds 60 MB, a layer is 436 MB).
    shapes = [((HEADS + 2 * KV_HEADS) * HEAD_DIM, HIDDEN), (HIDDEN, HEADS * HEAD_DIM),
              (2 * MLP, HIDDEN), (HIDDEN, MLP)]
    mark("alloc")
    W = [[torch.randn(s, device=dev, dtype=torch.bfloat16) * 0.02 for s in shapes]
         for _ in range(LAYERS)]
    lm_head = torch.randn((VOCAB, HIDDEN), device=dev, dtype=torch.bfloat16) * 0.02
    nbytes = sum(w.numel() * 2 for ws in W for w in ws) + lm_head.numel() * 2
    print(f"weights {nbytes / 1e9:.2f} GB bf16", flush=True)

    def forward(x, attn):
        for wqkv, wo, wgu, wd in W:
            qkv = x @ wqkv.t()
            if attn:
                T = x.shape[0]
                q = qkv[:, :HEADS * HEAD_DIM].view(T, HEADS, HEAD_DIM).transpose(0, 1)
                k = qkv[:, HEADS * HEAD_DIM:(HEADS + KV_HEADS) * HEAD_DIM].view(
                    T, KV_HEADS, HEAD_DIM).transpose(0, 1)
                v = qkv[:, (HEADS + KV_HEADS) * HEAD_DIM:].view(
                    T, KV_HEADS, HEAD_DIM).transpose(0, 1)
                rep = HEADS // KV_HEADS  # grouped-query attention, spelled out
                o = F.scaled_dot_product_attention(q, k.repeat_interleave(rep, dim=0),
                                                   v.repeat_interleave(rep, dim=0),
                                                   is_causal=True)
                h = o.transpose(0, 1).reshape(T, HEADS * HEAD_DIM)
            else:
                h = qkv[:, :HEADS * HEAD_DIM]
            x = x + h @ wo.t()
            gu = x @ wgu.t()
            x = x + (F.silu(gu[:, :MLP]) * gu[:, MLP:]) @ wd.t()
            x = x * 0.5  # keeps values bounded over 32 layers
        # A prefill computes logits for the last prompt token only (vLLM).
        return (x[-1:] if attn else x) @ lm_head.t()

    def run_phase(name, tokens, attn, seconds):
        x = torch.randn((tokens, HIDDEN), device=dev, dtype=torch.bfloat16)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                forward(x, attn)
        torch.cuda.current_stream().wait_stream(s)
        # One CUDA graph per step, as vLLM replays its decode steps; eager
        # (and said so) where capture fails.
        try:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                forward(x, attn)
            step = g.replay
        except Exception as e:  # noqa: BLE001: any capture failure
            print(f"{name}: CUDA graph capture failed ({e}); timing eager steps", flush=True)
            torch.cuda.synchronize()
            step = lambda: forward(x, attn)  # noqa: E731
        for _ in range(5):
            step()
        torch.cuda.synchronize()
        mark(name)
        t_start = time.monotonic() - t0
        ev = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            # 20 timed steps per batch of events, synchronised per batch so
            # the host keeps up with the clock.
            batch = []
            for _ in range(20):
                e0 = torch.cuda.Event(enable_timing=True)
                e1 = torch.cuda.Event(enable_timing=True)
                e0.record()
                step()
                e1.record()
                batch.append((e0, e1))
            torch.cuda.synchronize()
            tb = time.monotonic() - t0
            ev.extend((tb, e0.elapsed_time(e1)) for e0, e1 in batch)
        t_end = time.monotonic() - t0
        del step
        for tb, ms in ev:
            steps.append((name, round(tb, 3), round(ms, 4)))
        phases.append(dict(phase=name, t_start=round(t_start, 3), t_end=round(t_end, 3),
                           tokens=tokens, steps=len(ev)))
        ms = sorted(m for _, m in ev)
        print(f"{name}: {len(ms)} steps, p50 {ms[len(ms) // 2]:.3f} ms, "
              f"p99 {ms[int(len(ms) * 0.99)]:.3f} ms", flush=True)

    for b in [int(v) for v in a.batches.split(",")]:
        run_phase(f"decode_b{b}", b, False, a.decode_s)
    run_phase(f"prefill_{a.prompt}", a.prompt, True, a.prefill_s)
    del W, lm_head
    torch.cuda.empty_cache()
    mark("cool")
    tc = time.monotonic() - t0
    time.sleep(a.cool_s)
    phases.append(dict(phase="cool", t_start=round(tc, 3), t_end=round(time.monotonic() - t0, 3),
                       tokens=0, steps=0))


def write_out(outdir, phases, steps, samples):
    with open(os.path.join(outdir, "phases.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["phase", "t_start", "t_end", "tokens", "steps"])
        w.writeheader()
        w.writerows(phases)
    with open(os.path.join(outdir, "steps.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["phase", "t_s", "step_ms"])
        w.writerows(steps)
    with open(os.path.join(outdir, "nvml.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_s", "phase", "power_avg_mw", "power_instant_mw", "energy_mj", "temp_gpu_c",
                    "temp_mem_c", "clk_sm_mhz", "clk_mem_mhz", "reasons", "util_pct"])
        w.writerows(samples["data"])
    for e in samples["errors"][:20]:
        print("nvml sample error:", e, file=sys.stderr)
    print(f"done: {len(samples['data'])} NVML samples, {len(steps)} steps", flush=True)


if __name__ == "__main__":
    main()
