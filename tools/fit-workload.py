#!/usr/bin/env python3
"""Fit the workload generator's defaults to an Azure LLM inference trace.

Usage: tools/fit-workload.py [TRACE.csv]
  default: $GOVD_SHARED_DATA/AzureLLMInferenceTrace2023_code.csv
           (GOVD_SHARED_DATA defaults to ../shared/data next to the repo)

Prints the statistics, the fitted generator_params (as a C initialiser for
plant_models/workload.c) and goodness-of-fit tables for docs/workload-fit.md.
Python 3 standard library only; deterministic (no sampling).

Model (docs/workload-fit.md):
  arrivals: interrupted Poisson process (on/off source, Poisson while on):
            rate r, inter-arrival CV c and on-fraction rho give
            lambda_on = r/rho, alpha + beta = 2 r (1-rho) / (rho (c^2-1)),
            on->off rate alpha = (1-rho)(alpha+beta), off->on beta = rho(alpha+beta).
  tokens:   lognormal, mu/sigma = MLE on log(tokens), clamped at max.
"""
import csv
import math
import os
import statistics
import sys
from datetime import datetime

OFF_GAP_S = 5.0  # a gap this long is an "off" period: ~45 mean on-state gaps
WINDOWS_S = (1, 10, 60)
QUANTILES = (0.10, 0.25, 0.50, 0.75, 0.90, 0.99)


def parse_ts(s):
    # Exact parse of 'YYYY-MM-DD HH:MM:SS.fffffff' as naive UTC, microsecond
    # resolution is enough for fitting (the C loader keeps all 7 digits).
    date, _, frac = s.partition(".")
    base = datetime.strptime(date, "%Y-%m-%d %H:%M:%S")
    epoch = (base - datetime(1970, 1, 1)).total_seconds()
    return epoch + (float("0." + frac) if frac else 0.0)


def load(path):
    t, ctx, gen = [], [], []
    with open(path, newline="") as f:
        r = csv.reader(f)
        header = next(r)
        if header != ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]:
            sys.exit(f"{path}:1: unexpected header {header}")
        for row in r:
            t.append(parse_ts(row[0]))
            ctx.append(int(row[1]))
            gen.append(max(1, int(row[2])))
    t0 = t[0]
    return [x - t0 for x in t], ctx, gen


def cv(xs):
    m = statistics.fmean(xs)
    return statistics.pstdev(xs, m) / m


def lognormal_mle(xs):
    logs = [math.log(x) for x in xs]
    mu = statistics.fmean(logs)
    return mu, statistics.pstdev(logs, mu)


def quantile(sorted_xs, p):
    # nearest-rank on (n-1), the same convention as the C test
    return sorted_xs[int(p * (len(sorted_xs) - 1))]


def idc_data(t, w):
    n = int(t[-1] // w) + 1
    counts = [0] * n
    for x in t:
        counts[int(x // w)] += 1
    m = statistics.fmean(counts)
    return statistics.pvariance(counts, m) / m


def idc_ipp(w, lam_on, a, b):
    s = a + b
    return 1 + 2 * lam_on * a / s**2 * (1 - (1 - math.exp(-s * w)) / (s * w))


def main():
    shared = os.environ.get("GOVD_SHARED_DATA") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        shared, "AzureLLMInferenceTrace2023_code.csv")
    t, ctx, gen = load(path)
    n, span = len(t), t[-1]
    gaps = [b - a for a, b in zip(t, t[1:])]
    rate = n / span
    c_all = cv(gaps)
    longest = max(gaps)
    c_excl = cv([g for g in gaps if g != longest])
    off = [g for g in gaps if g > OFF_GAP_S]
    rho = 1 - sum(off) / span
    s = 2 * rate * (1 - rho) / (rho * (c_all**2 - 1))
    a, b = (1 - rho) * s, rho * s
    lam_on = rate / rho
    cmu, csig = lognormal_mle(ctx)
    gmu, gsig = lognormal_mle(gen)
    cmax, gmax = max(ctx), 2048

    print(f"trace: {path}")
    print(f"rows {n}, span {span:.3f} s, mean rate {rate:.4f} req/s")
    print(f"inter-arrival CV {c_all:.3f} (without the longest gap {longest:.1f} s: {c_excl:.3f})")
    print(f"gaps > {OFF_GAP_S:g} s: {len(off)}, total {sum(off):.1f} s -> on-fraction {rho:.4f}")
    print(f"  mean off period {sum(off) / len(off):.1f} s, mean on period "
          f"{(span - sum(off)) / len(off):.1f} s, on-state rate {n / (span - sum(off)):.2f} req/s")
    print(f"IPP: lambda_on {lam_on:.3f} req/s, mean on {1 / a:.1f} s, mean off {1 / b:.1f} s")
    print(f"context tokens: lognormal mu {cmu:.4f} sigma {csig:.4f}, max {cmax} "
          f"({sum(1 for x in ctx if x >= cmax)} rows at the max)")
    print(f"generated tokens: lognormal mu {gmu:.4f} sigma {gsig:.4f}, max seen {max(gen)}")
    print()
    print("const struct generator_params generator_azure_code_fit = {")
    print(f"\t.rate_rps = {rate:.4f},\n\t.burst_cv = {c_all:.3f},\n"
          f"\t.burst_on_fraction = {rho:.4f},")
    print("\t.diurnal_amplitude = 0.0,\n\t.diurnal_period_s = 86400.0,\n\t.diurnal_phase_s = 0.0,")
    print(f"\t.ctx_mu = {cmu:.4f},\n\t.ctx_sigma = {csig:.4f},\n"
          f"\t.gen_mu = {gmu:.4f},\n\t.gen_sigma = {gsig:.4f},")
    print(f"\t.ctx_max = {cmax},\n\t.gen_max = {gmax},\n}};")
    print()
    nd = statistics.NormalDist()
    for name, xs, mu, sig, mx in (("context", ctx, cmu, csig, cmax),
                                  ("generated", gen, gmu, gsig, gmax)):
        xs = sorted(xs)
        print(f"| {name} tokens | " + " | ".join(f"p{int(p * 100)}" for p in QUANTILES) + " |")
        print("|---|" + "---|" * len(QUANTILES))
        print("| trace | " + " | ".join(str(quantile(xs, p)) for p in QUANTILES) + " |")
        model = [min(mx, max(1, round(math.exp(mu + sig * nd.inv_cdf(p))))) for p in QUANTILES]
        print("| model | " + " | ".join(str(v) for v in model) + " |")
        print(f"mean: trace {statistics.fmean(xs):.1f}, model (unclamped) "
              f"{math.exp(mu + sig * sig / 2):.1f}")
        print()
    print("| counts in a window | " + " | ".join(f"{w} s" for w in WINDOWS_S) + " |")
    print("|---|" + "---|" * len(WINDOWS_S))
    print("| trace index of dispersion | " +
          " | ".join(f"{idc_data(t, w):.1f}" for w in WINDOWS_S) + " |")
    print("| on/off model (IPP) | " +
          " | ".join(f"{idc_ipp(w, lam_on, a, b):.1f}" for w in WINDOWS_S) + " |")
    print("| gamma renewal, same CV (compound clusters) | " +
          " | ".join(f">= {c_all**2:.0f}" for _ in WINDOWS_S) + " |")
    g = sorted(gaps)
    print()
    print("| inter-arrival s | " + " | ".join(f"p{int(p * 100)}" for p in QUANTILES) + " |")
    print("|---|" + "---|" * len(QUANTILES))
    print("| trace | " + " | ".join(f"{quantile(g, p):.4f}" for p in QUANTILES) + " |")
    # H2 quantiles of the IPP inter-arrival time: solve P(X > x) = 1 - p by bisection.
    tr = lam_on + a + b
    disc = math.sqrt(tr * tr - 4 * lam_on * b)
    m1, m2 = (tr + disc) / 2, (tr - disc) / 2
    p1 = (lam_on - m2) / (m1 - m2)

    def h2_q(p):
        lo, hi = 0.0, 1e6
        for _ in range(200):
            mid = (lo + hi) / 2
            surv = p1 * math.exp(-m1 * mid) + (1 - p1) * math.exp(-m2 * mid)
            lo, hi = (mid, hi) if surv > 1 - p else (lo, mid)
        return lo
    print("| on/off model | " + " | ".join(f"{h2_q(p):.4f}" for p in QUANTILES) + " |")


if __name__ == "__main__":
    main()
