#!/usr/bin/env bash
# Every file the project reads is opened without blocking, checked to be a
# regular file and read under a size and line-length bound (issue 12, item
# 3): a FIFO, a directory and /dev/zero in place of a policy, config,
# scenario, trace, state file, report input and key each give a clear error
# naming the path, at once (timeout is only a hang guard). A state file that
# is a directory is not reported as a parse error. An over-long line and an
# over-large file are refused by their bound.
. "$(dirname "$0")/lib.sh"
mkfifo "$tmp/fifo"
mkdir "$tmp/dir"
# try NAME EXPECT CMD...: exits non-zero within the guard and prints EXPECT
try() {
	local name=$1 expect=$2; shift 2
	set +e; timeout 20 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"; local rc=$?; set -e
	[ "$rc" -ne 124 ] || fail "$name: hung (killed by the 20 s guard)"
	[ "$rc" -ne 0 ] || fail "$name: accepted"
	cat "$tmp/$name.out" >>"$tmp/$name.err"
	expect_in "$tmp/$name.err" "$expect"
}
for kind in fifo dir zero; do
	case $kind in
	fifo) f=$tmp/fifo; what="is a FIFO, not a regular file" ;;
	dir) f=$tmp/dir; what="is a directory, not a regular file" ;;
	zero) f=/dev/zero; what="is a character device, not a regular file" ;;
	esac
	try "lint-$kind" "$f: error: $what" "$govctl" lint "$f"
	try "check-$kind" "$what" "$govd" --config "$f" --check
	try "sim-scenario-$kind" "$what" "$govctl" sim --scenario "$f" --policy policies/balanced.yaml --out "$tmp/o"
	try "sim-policy-$kind" "$what" "$govctl" sim --scenario configs/scenarios/default.yaml --policy "$f" --out "$tmp/o"
	# a trace named by a scenario
	sed "s#trace: .*#trace: $f#" tests/data/scenarios/good/trace-relative.yaml >"$tmp/tr-$kind.yaml"
	try "trace-$kind" "$what" "$govctl" sim --scenario "$tmp/tr-$kind.yaml" --policy policies/balanced.yaml --out "$tmp/o"
	# a directory is a run directory to report: its decisions.jsonl is read
	rwhat=$what; [ "$kind" = dir ] && rwhat="$f/decisions.jsonl: cannot open"
	try "report-$kind" "$rwhat" "$govctl" report "$f" --baseline "$f" -o "$tmp/rep"
	try "restore-$kind" "is " "$govctl" restore --state "$f"
done
# a state file that is a directory: named as such, not "does not parse"
mkdir -m 0700 "$tmp/run"; mkdir "$tmp/run/state.json"
sim_config "$tmp/c.yaml" "$tmp/run"
try state-dir "state file is a directory, not a regular file" "$govd" --config "$tmp/c.yaml"
if grep -q "does not parse" "$tmp/state-dir.err"; then fail "a directory state file reported as a parse error"; fi
# a policy behind a FIFO on SIGHUP: the reload is refused, govd keeps running
rmdir "$tmp/run/state.json"
cp policies/thermal-conservative.yaml "$tmp/p.yaml"
sed -i "s#^policy: .*#policy: $tmp/p.yaml#" "$tmp/c.yaml"
"$govd" --config "$tmp/c.yaml" 2>"$tmp/hup.err" & pids+=($!)
wait_for "govd to start" test -s "$tmp/run/state.json"
rm "$tmp/p.yaml"; mkfifo "$tmp/p.yaml"
kill -HUP "${pids[-1]}"
wait_for "the refused reload" grep -q "reload refused" "$tmp/hup.err"
expect_in "$tmp/hup.err" "is a FIFO, not a regular file"
kill -TERM "${pids[-1]}"
set +e; timeout 20 tail --pid="${pids[-1]}" -f /dev/null; set -e
wait "${pids[-1]}" || fail "govd did not stop cleanly after the refused reload"
[ ! -e "$tmp/run/state.json" ] || fail "no restore after SIGTERM"
# bounds: a 100 KiB line in a policy, a 2 MiB policy, a 5 KiB trace row
$py -c "print('name: ' + 'x' * 100000)" >"$tmp/long.yaml"
try long-line "longer than 65536 bytes" "$govctl" lint "$tmp/long.yaml"
$py -c "
import sys
sys.stdout.write('# pad\n' * (2 * 1024 * 1024 // 6 + 1))" >"$tmp/big.yaml"
try big-file "over the limit of 1048576" "$govctl" lint "$tmp/big.yaml"
{ head -2 tests/data/traces/four-rows-1s.csv; $py -c "print('2023-11-16 18:15:46.6805900,' + '1' * 5000 + ',1')"; } >"$tmp/long.csv"
sed "s#trace: .*#trace: $tmp/long.csv#" tests/data/scenarios/good/trace-relative.yaml >"$tmp/tr-long.yaml"
try trace-long-row "line longer than 4096 bytes" "$govctl" sim --scenario "$tmp/tr-long.yaml" --policy policies/balanced.yaml --out "$tmp/o"

# Outputs: a write that fails is an error, not silence, and a device is never
# replaced: govctl plant --plot onto /dev/full (as root unlinking it would
# delete the device node), and onto a FIFO (no reader: it must not hang).
try plot-devfull "/dev/full: is not a regular file; not replaced" "$govctl" plant --preset h200-sxm --model llama-3.1-8b --phase decode --batch 32 --clocks 900,1980 --plot /dev/full
[ -c /dev/full ] || fail "/dev/full is no longer a character device"
try plot-fifo "is not a regular file; not replaced" "$govctl" plant --preset h200-sxm --model llama-3.1-8b --phase decode --batch 32 --clocks 900,1980 --plot "$tmp/fifo"
[ -p "$tmp/fifo" ] || fail "the FIFO was replaced"
# a duration beyond the scenario's own bound (30 days) is a usage error, not
# a run that writes for ever
try sim-duration "--duration wants seconds in (0, 2592000]" "$govctl" sim --scenario configs/scenarios/default.yaml \
	--policy policies/balanced.yaml --duration 1e30 --out "$tmp/o-dur"
[ ! -e "$tmp/o-dur" ] || fail "sim --duration 1e30 created its output folder"
echo "fs_special_files: ok"
