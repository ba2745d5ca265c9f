#!/usr/bin/env bash
# SIGTERM is honoured whatever a reload does (issue 12, item 4): the reload
# parses in a thread while the loop keeps its periods and reads signals.
# SIGHUP with a policy as large as the bound allows (1 MiB, ~170k nodes),
# then SIGTERM at once: govd stops with exit 0, the restore record last and
# the state file gone; in the first round (SIGTERM at once) the loop takes
# the signal while the parse runs and abandons the reload.
. "$(dirname "$0")/lib.sh"
mkdir -m 0700 "$tmp/run"
sim_config "$tmp/c.yaml" "$tmp/run"
cp policies/thermal-conservative.yaml "$tmp/p.yaml"
sed -i "s#^policy: .*#policy: $tmp/p.yaml#" "$tmp/c.yaml"
$py - "$tmp/big.yaml" <<'PY'
import sys
src = open("policies/thermal-conservative.yaml").read()
out = [src, "\nmetadata:\n"]
size = len(src)
k = 0
while size < 1000000:
    chunk = "  l%d:\n" % k + "  - 1\n" * 20000
    if size + len(chunk) > 1040000:
        break
    out.append(chunk)
    size += len(chunk)
    k += 1
open(sys.argv[1], "w").write("".join(out))
PY
for round in 1 2 3; do
	"$govd" --config "$tmp/c.yaml" 2>"$tmp/govd$round.err" & pids+=($!)
	gp=${pids[-1]}
	wait_for "govd to start" test -S "$tmp/run/ctl.sock"
	sleep 0.3
	cp "$tmp/big.yaml" "$tmp/p.yaml"
	kill -HUP "$gp"
	[ "$round" -gt 1 ] && sleep "0.0$round"
	kill -TERM "$gp"
	set +e; timeout 60 tail --pid="$gp" -f /dev/null; rc=$?; set -e
	[ "$rc" -eq 0 ] || fail "round $round: govd still running 60 s after SIGTERM"
	wait "$gp" || fail "round $round: govd exited non-zero after SIGHUP+SIGTERM"
	expect_in "$tmp/govd$round.err" "restoring and stopping"
	# round 1 signals at once: the parse of 1 MiB (>= 100 ms) is still on, and
	# the loop reads SIGTERM while it runs (before: only after the parse)
	[ "$round" -gt 1 ] || expect_in "$tmp/govd$round.err" "during a reload: abandoning it"
	[ ! -e "$tmp/run/state.json" ] || fail "round $round: state file left (no restore)"
	tail -1 "$tmp/run/log/gpu0.jsonl" | grep -q '"type":"restore"' || fail "round $round: no restore record last"
	cp policies/thermal-conservative.yaml "$tmp/p.yaml"
	rm -f "$tmp/run/ctl.sock"
done
echo "daemon_reload_sigterm: ok"
