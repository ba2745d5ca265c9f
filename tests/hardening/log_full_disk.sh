#!/usr/bin/env bash
# The decision log on a full disk (issue 12, item 5): govd runs with its log
# on a small tmpfs that is filled while it runs. It must warn once per
# episode, count the failed writes in govd_decision_log_write_errors_total,
# never leave a partial line (every line of the file is JSON, each ends in a
# newline), write again once space returns, and end with the restore record.
# An episode can end while the disk stays full: the log file's last page has
# slack a smaller record may still fit in (records are dropped or written
# whole); so every warning after the first must follow a recovery notice.
# A rotation that fails (the rotated name is taken by a directory) must not
# write a header record every period. Needs mount (root); 77 otherwise.
. "$(dirname "$0")/lib.sh"
mkdir -m 0700 "$tmp/run" "$tmp/run/log"
if ! mount -t tmpfs -o size=256k,mode=0700 tmpfs "$tmp/run/log" 2>"$tmp/mount.err"; then
	echo "skip: cannot mount a tmpfs ($(cat "$tmp/mount.err")); needs root"
	exit 77
fi
mounts+=("$tmp/run/log")
sim_config "$tmp/c.yaml" "$tmp/run"
log=$tmp/run/log/gpu0.jsonl
"$govd" --config "$tmp/c.yaml" 2>"$tmp/govd.err" & pids+=($!)
gp=${pids[-1]}
wait_for "decision records" test -s "$log"
wait_for "the metrics endpoint" grep -q "metrics on http" "$tmp/govd.err"
port=$(sed -n 's#.*metrics on http://127.0.0.1:\([0-9]*\)/metrics.*#\1#p' "$tmp/govd.err")
metric() {
	$py - "$port" <<'PY'
import sys, urllib.request
t = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode()
v = [l.split()[-1] for l in t.splitlines() if l.startswith("govd_decision_log_write_errors_total{")]
print(int(float(v[0])) if v else -1)
PY
}
# the device's series appear with its first published period
published() { [ "$(metric)" != -1 ]; }
wait_for "the first published period" published
m0=$(metric)
[ "$m0" = 0 ] || fail "write errors before the disk filled: $m0"
# fill it while govd runs
dd if=/dev/zero of="$tmp/run/log/fill" bs=4k 2>/dev/null || true
wait_for "the write-failure warning" grep -q "decision log: writes failing" "$tmp/govd.err"
sleep 1 # ten more periods on the full disk
warned() { grep -c "decision log: writes failing" "$tmp/govd.err" || true; }
recovered() { grep -c "decision log: writes succeed again" "$tmp/govd.err" || true; }
one_per_episode() { [ "$(warned)" = $(( $(recovered) + 1 )) ] || fail "not one warning per episode"; }
one_per_episode
n=$(metric); [ "$n" -gt 1 ] || fail "govd_decision_log_write_errors_total is $n on a full disk"
rm "$tmp/run/log/fill"
ended() { [ "$(recovered)" = "$(warned)" ]; }
wait_for "the recovery notice" ended
sleep 0.5
# a second episode warns again, once
w0=$(warned)
dd if=/dev/zero of="$tmp/run/log/fill" bs=4k 2>/dev/null || true
more_warned() { [ "$(warned)" -gt "$w0" ]; }
wait_for "the second warning" more_warned
sleep 0.5
one_per_episode
rm "$tmp/run/log/fill"
wait_for "the second recovery" ended
kill -TERM "$gp"; wait "$gp" || fail "govd did not stop cleanly"
$py - "$log" <<'PY' || fail "the decision log holds a partial or invalid line"
import json, sys
data = open(sys.argv[1], "rb").read()
assert data.endswith(b"\n"), "last line incomplete"
recs = [json.loads(l) for l in data.splitlines()]
assert recs[-1]["type"] == "restore", "last record is %s, not the restore record" % recs[-1]["type"]
PY

# rotation that fails: gpu0.jsonl.1 is a directory, keep 1
umount "$tmp/run/log"; mounts=()
rm -rf "$tmp/run/log"; mkdir -m 0750 "$tmp/run/log"
mkdir -p "$log.1/taken"
sed -i 's/max_bytes: 10000000, keep: 2/max_bytes: 20000, keep: 1/' "$tmp/c.yaml"
"$govd" --config "$tmp/c.yaml" 2>"$tmp/rot.err" & pids+=($!)
gp=${pids[-1]}
past() { [ "$(stat -c %s "$log" 2>/dev/null || echo 0)" -gt 40000 ]; }
wait_for "the log to pass max_bytes" past
kill -TERM "$gp"; wait "$gp" || fail "govd did not stop cleanly (rotation)"
h=$(grep -c '"type":"header"' "$log")
[ "$h" -le 2 ] || fail "a failing rotation wrote $h header records"
echo "log_full_disk: ok"
