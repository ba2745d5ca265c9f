#!/usr/bin/python3
"""Reads a govd decision log (docs/decision-log.md) the way a newcomer wants
to see it: one row every N seconds (clock, power, junction, p99s, INT8 share
per slice, reasons), the quality-gate events, and a closing summary.

  declog_view.py LOG [--every S] [--from-seq N]   rows since record N
  declog_view.py LOG --summary                    totals and the restore record
stdlib only.
"""
import argparse
import json
import sys


def load(path):
    recs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    recs.append(json.loads(line))
                except ValueError:
                    pass  # a line cut by a concurrent writer: the next read has it whole
    return recs


def fmt(v, spec="%.0f"):
    return "-" if v is None else spec % v


def row(r, slices):
    i = r["inputs"]
    sla = i["sla"]
    a = r["after"]
    # the 8-bit share per slice; "f" after it where the ladder serves it FP8
    modes = a.get("low_mode", ["int8"] * len(a.get("int8_frac", [])))
    share = " ".join("%s=%.2f%s" % (s, f, "f" if m == "fp8" and f > 0 else "")
                     for s, f, m in zip(slices, a.get("int8_frac", []), modes))
    clk = "%d" % (a["clk_max_khz"] // 1000) if a.get("clk_locked") else "fw"
    rs = [x for x in r.get("reasons", []) if x not in ("sla_keep",)]
    sv = r.get("serving_faults", {}).get("faults", [])
    return ("%6.1f %5s %6s %6s %5s %7s %7s %5s  %-28s %s%s" % (
        r["t_ms"] / 1000.0 - T0, clk, fmt(i["power_w"]["accel"]), fmt(i["temp_c"]["junction"], "%.1f"),
        fmt(sla.get("requests")), fmt(sla.get("ttft_p99_ms")), fmt(sla.get("tbt_p99_ms"), "%.1f"),
        fmt(i.get("queue_len")), share, ",".join(rs) or "-",
        ("  serving_faults=" + ",".join(sv)) if sv else ""))


T0 = 0.0


def main():
    global T0
    p = argparse.ArgumentParser()
    p.add_argument("log")
    p.add_argument("--every", type=float, default=5.0)
    p.add_argument("--from-seq", type=int, default=0)
    p.add_argument("--summary", action="store_true")
    a = p.parse_args()
    recs = load(a.log)
    hdr = next((r for r in recs if r.get("type") == "header"), None)
    dec = [r for r in recs if r.get("type") == "decision"]
    if not hdr or not dec:
        print("(no decisions yet)")
        return 0
    slices = hdr.get("slices", [])
    T0 = dec[0]["t_ms"] / 1000.0
    if not a.summary:
        if a.from_seq == 0:
            print("%6s %5s %6s %6s %5s %7s %7s %5s  %-28s %s" % (
                "t_s", "MHz", "W", "Tj_C", "reqs", "ttft99", "tbt99", "queue",
                "8-bit share (after; f: FP8)", "reasons"))
        last = None
        for r in dec:
            if r["seq"] < a.from_seq:
                continue
            gate = any(x.startswith("int8_gate") for x in r.get("reasons", [])) or \
                r["after"].get("low_mode") != r["before"].get("low_mode")
            if last is None or r["t_ms"] / 1000.0 - last >= a.every or gate:
                print(row(r, slices))
                last = r["t_ms"] / 1000.0
        print("next-seq %d" % (dec[-1]["seq"] + 1), file=sys.stderr)
        return 0
    # summary
    n = len(dec)
    scraped = sum(1 for r in dec if r["inputs"]["sla"].get("tbt_p99_ms") is not None)
    faults = {}
    for r in dec:
        for f in r.get("serving_faults", {}).get("faults", []):
            faults[f] = faults.get(f, 0) + 1
    prec_changes = sum(1 for r in dec if r["before"].get("int8_frac") != r["after"].get("int8_frac")
                       or r["before"].get("low_mode") != r["after"].get("low_mode"))
    print("decisions: %d over %.1f s (%s, policy %s, controller %s)" % (
        n, (dec[-1]["t_ms"] - dec[0]["t_ms"]) / 1000.0, hdr["device"]["name"], hdr["policy"],
        hdr["controller"]))
    print("serving inputs present in %d of %d periods; serving faults: %s" % (
        scraped, n, ", ".join("%s x%d" % kv for kv in faults.items()) or "none"))
    print("precision changes sent: %d" % prec_changes)
    for k, s in enumerate(slices):
        on = sum(1 for r in dec if r["after"]["int8_frac"][k] > 0)
        ev = ["%.1f s %s" % (r["t_ms"] / 1000.0 - T0, "open" if r["after"]["int8_frac"][k] > r["before"]["int8_frac"][k] else "closed")
              for r in dec if r["after"]["int8_frac"][k] != r["before"]["int8_frac"][k]]
        q = dec[-1]["inputs"]["quality"][k] if k < len(dec[-1]["inputs"]["quality"]) else {}
        print("  %-5s 8-bit in %3d%% of periods, now %.2f; shadow samples %s, mismatches %s, "
              "drop upper bound %s; changes: %s" % (
                  s, 100 * on // n, dec[-1]["after"]["int8_frac"][k], q.get("samples"),
                  q.get("mismatches"), fmt(q.get("drop_upper"), "%.4f"), "; ".join(ev) or "none"))
        # evidence on demand: when the shadow-rate ask rose, changed reason or fell
        asks, prev = [], None
        for r in dec:
            qq = r["inputs"]["quality"][k] if k < len(r["inputs"]["quality"]) else {}
            cur = (qq.get("ask"), round(qq.get("ask_rate", 0), 2)) if qq.get("ask") else None
            if cur != prev and (cur is None) != (prev is None) or (cur and prev and cur[0] != prev[0]):
                asks.append("%.1f s %s" % (r["t_ms"] / 1000.0 - T0,
                                           "%s %.2f" % cur if cur else "none (the server's own rate)"))
            prev = cur
        if asks:
            print("        shadow-rate asks: %s" % "; ".join(asks))
        # the precision ladder: when the slice's served rung changed, and FP8's gate
        rungs, prev = [], "bf16"
        for r in dec:
            m = r["after"].get("low_mode", ["int8"] * len(slices))[k]
            cur = m if r["after"]["int8_frac"][k] > 0 else "bf16"
            if cur != prev:
                rungs.append("%.1f s %s" % (r["t_ms"] / 1000.0 - T0, cur))
            prev = cur
        f8 = q.get("fp8")
        if f8 is not None or any("low_mode" in r["after"] for r in dec):
            print("        rungs: %s%s" % ("; ".join(rungs) or "bf16 throughout",
                  "; FP8 drop upper bound %s, gate %s" % (
                      fmt(f8.get("drop_upper"), "%.4f"), "open" if f8.get("gate_open") else "shut")
                  if f8 else ""))
    clk = [r["after"]["clk_max_khz"] / 1000 for r in dec if r["after"].get("clk_locked")]
    pw = [r["inputs"]["power_w"]["accel"] for r in dec if r["inputs"]["power_w"]["accel"] is not None]
    if clk:
        print("clock: %d..%d MHz, mean %.0f; accelerator power mean %.0f W" % (
            min(clk), max(clk), sum(clk) / len(clk), sum(pw) / max(1, len(pw))))
    rest = [r for r in recs if r.get("type") == "restore"]
    if rest:
        r = rest[-1]
        print("restore: rc %d, clocks %s, power limit %d W, INT8 %s" % (
            r["rc"], "locked" if r["after"]["clk_locked"] else "firmware default",
            r["after"]["power_limit_mw"] // 1000, r["after"]["int8_frac"]))
    else:
        print("restore: none (govd still running, or killed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
