"""Helpers the bench/ scripts share (not a benchmark itself)."""
import math
import sys

LOCK_SRC = "policies/baselines/clock-lock.yaml"


def lock_policy(mhz, prog):
    """The clock-lock baseline's text with its clocks locked at mhz and
    named lock-MHZ; exits naming prog if the baseline changed shape (its
    relative paths do not matter: the baseline has none)."""
    src = open(LOCK_SRC).read()
    text = src.replace("name: clock-lock", f"name: lock-{mhz}").replace(
        "frequency: {min_mhz: 1545, max_mhz: 1545}", f"frequency: {{min_mhz: {mhz}, max_mhz: {mhz}}}")
    if text == src or f"name: lock-{mhz}" not in text:
        sys.exit(f"{prog}: {LOCK_SRC} changed shape")
    return text


def num(v):
    """A compare.json figure as a float; NaN for null or absent."""
    return float(v) if isinstance(v, (int, float)) else math.nan


def mean_finite(values):
    """The mean of the values that are numbers (NaN left out); None if none are."""
    good = [x for x in values if not math.isnan(x)]
    return sum(good) / len(good) if good else None


def attainment_ok(row, fw_row):
    """The yardstick's attainment judgement for one member (compare.json rows):
    SLA attainment on feasible windows at or over min(0.99, firmware-default's
    on the same member; 1.0 without a firmware row)."""
    fw = num(fw_row.get("sla_attainment_feasible")) if fw_row else 1.0
    return num(row.get("sla_attainment_feasible")) >= min(0.99, fw) - 1e-9


def pooled_windows(rows):
    """A set's feasible busy windows pooled over its members' rows: (met, busy)."""
    return (sum(r.get("windows_feasible_met") or 0 for r in rows),
            sum(r.get("windows_feasible_busy") or 0 for r in rows))


def policy_summary(rows, policy):
    """One policy's figures over a set, from its compare.json rows keyed by
    (scenario, policy): (mean % of the BF16-only oracle, mean % of the full
    oracle, members at attainment, members, feasible busy windows met and
    judged (pooled), clamps, windows over the ceiling)."""
    mine = {sc: r for (sc, pol), r in rows.items() if pol == policy}
    ok = sum(attainment_ok(r, rows.get((sc, "firmware-default"))) for sc, r in mine.items())
    met, busy = pooled_windows(mine.values())
    clamps = sum(c for c in (num(r.get("clamp_events")) for r in mine.values()) if not math.isnan(c))
    over = sum(r.get("windows_over_ceiling") or 0 for r in mine.values())
    share = lambda key: mean_finite([num(r.get(key)) for r in mine.values()])
    return share("pct_of_oracle_bf16"), share("pct_of_oracle"), ok, len(mine), met, busy, clamps, over
