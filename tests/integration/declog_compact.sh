#!/usr/bin/env bash
# govd's decision log in compact mode with compressed rotation, end to end
# on the sim (real time, 100 ms period): the header says log_mode compact,
# decision records are fewer than periods with seq gaps no longer than the
# heartbeat, rotated files are gzip files of whole JSON lines each starting
# with the header, at most `keep` of them, and govctl report reads the
# newest rotated file, decompressed. $1: the build directory. Exit 77 when govd is not built.
set -euo pipefail
build=${1:?usage: declog_compact.sh BUILD_DIR}
govd=$build/govd
govctl=${GOVCTL:-$build/govctl}
[ -x "$govd" ] || { echo "skip: $govd not built"; exit 77; }
tmp=$(mktemp -d)
chmod 700 "$tmp"
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/err" ] && tail -20 "$tmp/err" | sed 's/^/  govd: /' >&2; exit 1; }

cp policies/thermal-conservative.yaml "$tmp/p.yaml"
mkdir -m 700 "$tmp/state"
cat >"$tmp/c.yaml" <<YAML
policy: p.yaml
state_file: state/state.json
decision_log: {dir: log, max_bytes: 20000, keep: 3, mode: compact, heartbeat_s: 1, compress: true}
metrics: {enabled: false}
control: {enabled: false}
devices:
  - {name: gpu0, backend: sim, options: {scenario: configs/scenarios/default.yaml, seed: 1}}
YAML
"$govd" --config "$tmp/c.yaml" 2>"$tmp/err" &
pid=$!
for _ in $(seq 300); do
	[ -e "$tmp/log/gpu0.jsonl.2.gz" ] && break
	kill -0 "$pid" 2>/dev/null || fail "govd exited"
	sleep 0.1
done
[ -e "$tmp/log/gpu0.jsonl.2.gz" ] || fail "no second compressed rotation within 30 s"
kill -TERM "$pid"
wait "$pid" || fail "govd exit status $?"
pid=
ls -l "$tmp/log"

python3 - "$tmp/log" <<'PY'
import glob, gzip, json, os, sys
d = sys.argv[1]
live = os.path.join(d, "gpu0.jsonl")
rot = sorted(glob.glob(live + ".*"))
assert all(p.endswith(".gz") for p in rot), rot
assert 2 <= len(rot) <= 3, rot
def records(data, name):
    assert data.endswith(b"\n"), name + ": last line incomplete"
    return [json.loads(l) for l in data.splitlines()]
files = [(p, records(gzip.open(p).read(), p)) for p in reversed(rot)]
files.append((live, records(open(live, "rb").read(), live)))
seqs = []
for name, recs in files:
    assert recs[0]["type"] == "header", name + ": does not start with the header"
    assert recs[0]["log_mode"] == "compact" and recs[0]["heartbeat_ms"] == 1000, recs[0]
    seqs += [r["seq"] for r in recs if r["type"] == "decision"]
restore = files[-1][1][-1]
assert restore["type"] == "restore" and restore["seq"] >= seqs[-1], restore
gaps = [b - a for a, b in zip(seqs, seqs[1:])]
assert all(g >= 1 for g in gaps), "seq not increasing"
assert max(gaps) <= 10, "a gap of %d periods: more than a 1 s heartbeat at 100 ms" % max(gaps)
periods = seqs[-1] - seqs[0] + 1
print("%d periods in the kept files, %d decision records (%.0f %%)" % (periods, len(seqs), 100.0 * len(seqs) / periods))
assert len(seqs) < periods, "compact mode left nothing out"
PY
# The report's loader takes a compact log (its periods filled): the newest
# rotated file, decompressed as the docs say.
gzip -dc "$tmp/log/gpu0.jsonl.1.gz" >"$tmp/run.jsonl"
"$govctl" report "$tmp/run.jsonl" --baseline "$tmp/run.jsonl" -o "$tmp/report" >"$tmp/report.out" 2>&1 ||
	{ cat "$tmp/report.out"; fail "govctl report on a compact log"; }
[ -s "$tmp/report/report.json" ] || fail "no report.json"
echo PASS
