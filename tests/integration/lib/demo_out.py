"""What tools/demo-serving leaves in its output folder, for the tests that
assert on it: the decision log's records (header first), the decisions, and
the precision documents the stand-in applied; check() collects what is not met."""
import json


class DemoOut:
    def __init__(self, out):
        self.recs = [json.loads(l) for l in open(out + "/log/gpu0.jsonl") if l.strip()]
        self.applied = [json.loads(l) for l in open(out + "/applied.jsonl") if l.strip()]
        self.hdr = self.recs[0]
        self.dec = [r for r in self.recs if r["type"] == "decision"]
        self.bad = []

    def check(self, ok, what):
        if not ok:
            self.bad.append(what)
