#!/usr/bin/env bash
# The monitoring kit offline: Debian's promtool checks configs/monitoring's
# rules and runs their unit tests (govd-rules*.test.yml: every recording
# rule's value, every alert firing on a sick device and silent on a healthy
# one), and the Grafana dashboard is well-formed JSON whose every panel has
# a Prometheus query and unique ids. The queries themselves are evaluated
# on a live server by prometheus_live.sh. Never skips: promtool comes with
# tools/install-deps (package prometheus).
set -euo pipefail
promtool=/usr/bin/promtool
[ -x "$promtool" ] || { echo "FAIL: $promtool missing (tools/install-deps installs prometheus)"; exit 1; }
cd configs/monitoring
"$promtool" check rules govd-rules.yml
"$promtool" test rules govd-rules.test.yml govd-rules-baseline.test.yml
# Every alert links its runbook section: the page the package installs
# (uncompressed: debian/rules) and an anchor that is one of its headings.
python3 - govd-rules.yml ../../docs/runbook.md <<'PY'
import re, sys, yaml
rules = [r for g in yaml.safe_load(open(sys.argv[1]))["groups"] for r in g["rules"] if "alert" in r]
anchors = {re.sub(r"[^a-z0-9-]", "", h.strip().lower().replace(" ", "-"))
           for h in re.findall(r"^## (.+)$", open(sys.argv[2]).read(), re.M)}
for r in rules:
    url = r["annotations"].get("runbook_url", "")
    assert url.startswith("file:///usr/share/doc/govd/runbook.md#"), r["alert"] + ": runbook_url " + url
    assert url.split("#", 1)[1] in anchors, r["alert"] + ": no section " + url + " in docs/runbook.md"
print(f"{len(rules)} alerts, each with a runbook section")
PY
python3 - grafana-govd.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ids = [p["id"] for p in d["panels"]]
assert len(ids) == len(set(ids)), "duplicate panel ids"
for p in d["panels"]:
    assert p["targets"], p["title"] + ": no targets"
    assert p["datasource"]["type"] == "prometheus", p["title"]
    for t in p["targets"]:
        assert t["expr"].strip() and t["refId"], p["title"]
# Every panel follows the node and device pickers (a panel over every
# node hid a node's own trouble behind the fleet's).
for p in d["panels"]:
    for t in p["targets"]:
        assert "$instance" in t["expr"], p["title"] + ": ignores $instance"
# Annotations mark what changes the picture: rollbacks, gate closures,
# another writer, the envelope, a hold; each a Prometheus query on the
# pickers.
anns = d["annotations"]["list"]
assert {a["name"] for a in anns} >= {"Rollbacks", "Quality gate closed", "Out-of-band power limit",
                                      "Outside the envelope", "Held"}, anns
for a in anns:
    assert a["datasource"]["type"] == "prometheus" and "$instance" in a["expr"], a["name"]
names = {v["name"] for v in d["templating"]["list"]}
assert {"datasource", "instance", "device"} <= names, names
print(f"{len(ids)} panels, {sum(len(p['targets']) for p in d['panels'])} targets, {len(anns)} annotations")
PY
echo PASS
