#!/usr/bin/env python3
"""Evaluates the monitoring kit's expressions on a live Prometheus
(tests/integration/prometheus_live.sh): every recording rule (its expression
and the series it recorded), every alerting rule (the whole expression must
evaluate; the side before its threshold must return data), every Grafana
panel target and every ```promql block of docs/metrics.md. Each must return
at least one series carrying the labels it promises: recording rules and
alerts from the tables below, panels from the {{label}}s of their legend,
doc examples from their `# labels:` comment. Polls until all pass or the
deadline (argv[5] seconds), then prints what failed.

usage: prometheus_check.py URL RULES.yml DASHBOARD.json METRICS.md SECONDS"""
import json
import re
import sys
import time
import urllib.parse
import urllib.request

import yaml

# The labels each recorded series keeps (docs/metrics.md, "Monitoring kit").
RECORD_LABELS = {
    "govd:sla_attainment:ratio_1h": {"job", "instance", "device"},
    "govd:tokens_per_joule:ratio_rate5m": {"job", "instance", "device"},
    "govd:tokens_per_joule:ratio_rate1h": {"job", "instance", "device"},
    "govd:tokens_per_joule:baseline_1w": {"job", "instance", "device"},
    "govd:thermal_clamp:ratio_rate5m": {"job", "instance", "device"},
    "govd:rollbacks:increase1h": {"job", "instance", "device", "trigger"},
    "govd:telemetry_faults:increase1h": {"job", "instance", "device"},
    "govd:quality_gate_closures:increase1h": {"job", "instance", "device", "slice"},
    "govd:loop_overruns:rate5m": {"job", "instance"},
    "kind:govd_request_latency_seconds:p99_rate5m": {"kind"},
    "govd:request_latency_seconds:p99_rate5m": {"job", "instance", "device", "kind"},
}
ALERT_LABELS = {
    "GovdDown": {"job", "instance"},
    "GovdSLAAttainmentLow": RECORD_LABELS["govd:sla_attainment:ratio_1h"],
    "GovdThermalClamping": RECORD_LABELS["govd:thermal_clamp:ratio_rate5m"],
    "GovdRollbacks": RECORD_LABELS["govd:rollbacks:increase1h"],
    "GovdTelemetryFaults": RECORD_LABELS["govd:telemetry_faults:increase1h"],
    "GovdQualityGateClosed": RECORD_LABELS["govd:quality_gate_closures:increase1h"],
    "GovdTokensPerJouleRegression": RECORD_LABELS["govd:tokens_per_joule:ratio_rate1h"],
    "GovdLoopOverruns": RECORD_LABELS["govd:loop_overruns:rate5m"],
    "GovdOutsideEnvelope": {"job", "instance", "device"},
    "GovdActuationErrors": {"job", "instance", "device"},
    "GovdServingTelemetryDown": {"job", "instance", "device"},
    "GovdOutOfBandChanges": {"job", "instance", "device"},
    "GovdHeldLong": {"job", "instance"},
    "GovdDryRunLong": {"job", "instance"},
    "GovdFleetSafeMode": {"job", "instance", "mode"},
    "GovdDecisionLogWriteErrors": {"job", "instance", "device"},
}
# Alerts whose signal the live test cannot produce: the fleet agent's
# series exist only with etcd (govd-rules.test.yml tests them).
SIGNAL_MAY_BE_EMPTY = {"GovdFleetSafeMode"}
# The threshold comparison of an alert: the last top-level one.
CMP = re.compile(r"\s(==|!=|<=|>=|<|>)\s")


def query(url, expr):
    q = urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=10) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:
        body = json.load(e)
    if body.get("status") != "success":
        return None, body.get("error", "query failed")
    return body["data"]["result"], None


def strip_offsets(expr):
    # Seconds of history: a week-old baseline is read as of now (the offset
    # is covered by govd-rules-baseline.test.yml).
    return re.sub(r"\soffset\s+\d+[smhdwy]", "", expr)


def checks(rules_path, dash_path, doc_path):
    """(name, expr, labels, must_have_data) rows."""
    rows = []
    rules = yaml.safe_load(open(rules_path))
    for g in rules["groups"]:
        for r in g["rules"]:
            if "record" in r:
                name = r["record"]
                if name not in RECORD_LABELS:
                    raise SystemExit(f"{rules_path}: {name} has no expected labels in {__file__}")
                rows.append((f"rule {name}", strip_offsets(r["expr"]), RECORD_LABELS[name], True))
                rows.append((f"recorded {name}", name, RECORD_LABELS[name], True))
            else:
                name = r["alert"]
                if name not in ALERT_LABELS:
                    raise SystemExit(f"{rules_path}: {name} has no expected labels in {__file__}")
                expr = strip_offsets(r["expr"])
                ms = list(CMP.finditer(expr))
                if not ms:
                    raise SystemExit(f"{rules_path}: alert {name} has no threshold comparison")
                rows.append((f"alert {name}", expr, set(), False))
                rows.append((f"alert {name} signal", expr[: ms[-1].start()], ALERT_LABELS[name],
                             name not in SIGNAL_MAY_BE_EMPTY))
    dash = json.load(open(dash_path))
    for p in dash["panels"]:
        for t in p["targets"]:
            expr = t["expr"].replace("$instance", ".+").replace("$device", ".+")
            labels = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", t.get("legendFormat", "")))
            rows.append((f"panel '{p['title']}' {t['refId']}", expr, labels, True))
    for a in dash.get("annotations", {}).get("list", []):
        expr = a["expr"].replace("$instance", ".+").replace("$device", ".+")
        # an annotation marks events: the live server may have none (no data)
        rows.append((f"annotation '{a['name']}'", expr, set(), False))
    text = open(doc_path).read()
    blocks = re.findall(r"```promql\n(.*?)```", text, re.S)
    if not blocks:
        raise SystemExit(f"{doc_path}: no ```promql blocks")
    for i, b in enumerate(blocks, 1):
        m = re.search(r"^#\s*labels:\s*(.*)$", b, re.M)
        if not m:
            raise SystemExit(f"{doc_path}: promql block {i} has no '# labels:' line")
        labels = {x.strip() for x in m.group(1).split(",") if x.strip()}
        rows.append((f"{doc_path} example {i}", b, labels, True))
    return rows


def run(url, rows):
    problems = []
    for name, expr, labels, need_data in rows:
        res, err = query(url, expr)
        if err:
            problems.append(f"{name}: error {err}\n    {expr.strip()}")
            continue
        if not need_data:
            continue
        if not res:
            problems.append(f"{name}: no data\n    {expr.strip()}")
            continue
        missing = [sorted(labels - set(s["metric"])) for s in res if labels - set(s["metric"])]
        if missing:
            problems.append(f"{name}: series without labels {missing[0]}\n    {expr.strip()}")
    # Prometheus's own view: every rule evaluated without error.
    with urllib.request.urlopen(f"{url}/api/v1/rules", timeout=10) as r:
        for g in json.load(r)["data"]["groups"]:
            for rule in g["rules"]:
                if rule.get("health") != "ok":
                    problems.append(f"rule {rule['name']}: health {rule.get('health')} "
                                    f"{rule.get('lastError', '')}")
    return problems


def main():
    url, rules_path, dash_path, doc_path, secs = sys.argv[1:6]
    rows = checks(rules_path, dash_path, doc_path)
    deadline = time.monotonic() + float(secs)
    t0 = time.monotonic()
    while True:
        problems = run(url, rows)
        if not problems:
            n_rules = sum(1 for r in rows if r[0].startswith(("rule ", "alert ")) and not r[0].endswith("signal"))
            print(f"{len(rows)} queries with data and labels ({n_rules} rules, "
                  f"{sum(1 for r in rows if r[0].startswith('panel'))} panel targets, "
                  f"{sum(1 for r in rows if 'example' in r[0])} doc examples) after "
                  f"{time.monotonic() - t0:.0f} s")
            return 0
        if time.monotonic() > deadline:
            print(f"{len(problems)} of {len(rows)} checks failed:")
            for p in problems:
                print("  " + p)
            return 1
        time.sleep(2)


if __name__ == "__main__":
    sys.exit(main())
