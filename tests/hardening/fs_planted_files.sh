#!/usr/bin/env bash
# No root write an unprivileged user can steer (issue 12, item 1): state,
# log and socket directories must be govd's own and private; the state file
# is read only when trusted and its restore entries are checked against the
# backend's own write list and the config's devices; files are created
# O_EXCL|O_NOFOLLOW (state.json.tmp, decision log, keygen's .pub, report -o,
# sim outputs); names that become paths are restricted.
. "$(dirname "$0")/lib.sh"
victim=$tmp/victim
echo untouched >"$victim"
victim_ok() { [ "$(cat "$victim")" = untouched ] || fail "victim file was written: $1"; }
d=$tmp/run; mkdir -m 0700 "$d"
sim_config "$tmp/c.yaml" "$d"

# 1. A directory others can write, or another user owns: refused, named.
for how in "chmod 0777" "chown 65534"; do
	$how "$d"
	set +e; timeout 30 "$govd" --config "$tmp/c.yaml" 2>"$tmp/dir.err"; rc=$?; set -e
	[ "$rc" -ne 0 ] || fail "govd started in a directory after '$how'"
	expect_in "$tmp/dir.err" "directory $d"
	[ ! -e "$d/state.json" ] || fail "a state file was written after '$how'"
	chmod 0700 "$d"; chown "$(id -u)" "$d"
done
# a log directory others can write is refused too
mkdir -m 0777 "$d/log"; chmod 0777 "$d/log"
set +e; timeout 30 "$govd" --config "$tmp/c.yaml" 2>"$tmp/logdir.err"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "govd started with a world-writable log directory"
expect_in "$tmp/logdir.err" "directory $d/log is writable by others"
rmdir "$d/log"

# 2. A state file another user owns: neither govd nor govctl restore reads it.
cat >"$d/state.json" <<JSON
{"format":"govd-state/1","devices":[{"name":"gpu0","backend":"sysfs","options":{},
 "original":{"backend":"sysfs","restore":[{"path":"$victim","value":"1"}]}}]}
JSON
chown 65534 "$d/state.json"
set +e; "$govctl" restore --state "$d/state.json" >"$tmp/own.out" 2>"$tmp/own.err"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "govctl restore accepted a state file owned by uid 65534"
expect_in "$tmp/own.err" "owned by uid 65534"
set +e; timeout 30 "$govd" --config "$tmp/c.yaml" 2>"$tmp/own2.err"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "govd started over a state file owned by another user"
victim_ok "state file of another owner"
chown "$(id -u)" "$d/state.json"

# 3. A trusted file whose entries name a path the backend never writes:
# refused entry by entry (govctl, recorded options) or by the config's
# device (govd: the backend differs from the config's).
set +e; "$govctl" restore --state "$d/state.json" >"$tmp/r.out" 2>"$tmp/r.err"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "govctl restore replayed a foreign path"
victim_ok "govctl restore --state"
set +e; timeout 30 "$govd" --config "$tmp/c.yaml" 2>"$tmp/r2.err"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "govd restored a state entry whose backend the config does not have"
expect_in "$tmp/r2.err" "records backend 'sysfs' but the config has 'sim'"
victim_ok "govd start-up restore"
# same backend as the config, a restore list: the sim writes no files, so
# there is nothing to check against and nothing is written
sed -i 's/"backend":"sysfs","options"/"backend":"sim","options"/' "$d/state.json"
set +e; timeout 30 "$govd" --config "$tmp/c.yaml" 2>"$tmp/r3.err"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "govd replayed a restore list for a sim device"
expect_in "$tmp/r3.err" "no write list to check the recorded one against"
victim_ok "sim restore list"
rm "$d/state.json"

# 4. Planted symlinks: state.json.tmp is replaced, not followed; a decision
# log that is a symlink is refused.
ln -s "$victim" "$d/state.json.tmp"
"$govd" --config "$tmp/c.yaml" 2>"$tmp/tmp.err" & pids+=($!)
wait_for "the state file" test -s "$d/state.json"
victim_ok "state.json.tmp symlink"
[ ! -L "$d/state.json" ] || fail "state.json is a symlink"
kill -TERM "${pids[-1]}"; wait "${pids[-1]}" || fail "govd did not stop cleanly"
ln -sf "$victim" "$d/log/gpu0.jsonl"
set +e; timeout 30 "$govd" --config "$tmp/c.yaml" 2>"$tmp/log.err"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "govd wrote its decision log through a symlink"
expect_in "$tmp/log.err" "cannot open the decision log"
victim_ok "decision-log symlink"
rm "$d/log/gpu0.jsonl"

# 5. govctl outputs: keygen's .pub, report -o, sim --out files.
ln -s "$victim" "$tmp/k.pub"
"$govctl" keygen "$tmp/k" >/dev/null 2>"$tmp/keygen.err" || fail "keygen failed"
victim_ok "keygen .pub symlink"
[ -f "$tmp/k.pub" ] && [ ! -L "$tmp/k.pub" ] || fail "k.pub is not a fresh file"
mkdir "$tmp/sim"
ln -s "$victim" "$tmp/sim/summary.json"
ln -s "$victim" "$tmp/sim/decisions.jsonl"
"$govctl" sim --scenario configs/scenarios/default.yaml --policy policies/balanced.yaml \
	--duration 20 --out "$tmp/sim" >/dev/null 2>"$tmp/sim.err" || fail "govctl sim failed"
victim_ok "sim --out symlinks"
mkdir "$tmp/rep"
for f in report.md report.html report.json; do ln -s "$victim" "$tmp/rep/$f"; done
"$govctl" report "$tmp/sim" --baseline "$tmp/sim" -o "$tmp/rep" >/dev/null 2>"$tmp/rep.err" ||
	fail "govctl report failed"
victim_ok "report -o symlinks"
# -o itself a planted link to another user's folder: refused, nothing written there
mkdir "$tmp/other" && echo "theirs" >"$tmp/other/report.md" && chown 65534 "$tmp/other" "$tmp/other/report.md"
ln -s "$tmp/other" "$tmp/rep-link"
set +e; "$govctl" report "$tmp/sim" --baseline "$tmp/sim" -o "$tmp/rep-link" >/dev/null 2>"$tmp/replink.err"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "report -o through a planted directory link accepted"
expect_in "$tmp/replink.err" "a symbolic link"
[ "$(cat "$tmp/other/report.md")" = theirs ] || fail "report -o replaced another user's report"
[ ! -e "$tmp/other/report.json" ] || fail "report -o wrote into another user's folder"
set +e; "$govctl" report "$tmp/sim" --baseline "$tmp/sim" -o "$tmp/other" >/dev/null 2>"$tmp/repother.err"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "report -o into another user's folder accepted"
expect_in "$tmp/repother.err" "owned by another user"
# govctl plant --plot: gnuplot's SVG is written by govctl, never through a link
ln -s "$victim" "$tmp/plot.svg"
"$govctl" plant --preset h200-sxm --model llama-3.1-8b --phase decode --batch 32 --clocks 900,1980 --plot "$tmp/plot.svg" >/dev/null 2>"$tmp/plot.err" ||
	fail "govctl plant --plot failed: $(cat "$tmp/plot.err")"
victim_ok "plant --plot symlink"
[ -f "$tmp/plot.svg" ] && [ ! -L "$tmp/plot.svg" ] && grep -q "<svg" "$tmp/plot.svg" ||
	fail "plot.svg is not a fresh SVG file"

# 6. Names that become paths: a device or scenario name with ../ or a slash.
for name in "../x" "a/b" ".hidden"; do
	sed "s#name: gpu0#name: \"$name\"#" "$tmp/c.yaml" >"$tmp/n.yaml"
	set +e; "$govd" --config "$tmp/n.yaml" --check >/dev/null 2>"$tmp/name.err"; rc=$?; set -e
	[ "$rc" -ne 0 ] || fail "device name '$name' accepted"
	expect_in "$tmp/name.err" "devices[0].name: device name"
done
sed 's/^name: default/name: ..\/..\/escaped/' configs/scenarios/default.yaml >"$tmp/s.yaml"
grep -q '^name: ../../escaped' "$tmp/s.yaml" || fail "test setup: scenario name not replaced"
mkdir -p "$tmp/cwd"
set +e
(cd "$tmp/cwd" && "$govctl" sim --scenario "$tmp/s.yaml" --policy "$OLDPWD/policies/balanced.yaml" \
	--duration 5 >/dev/null 2>"$tmp/scen.err"); rc=$?
set -e
[ "$rc" -ne 0 ] || fail "scenario name with ../ accepted"
expect_in "$tmp/scen.err" "scenario name"
[ ! -e "$tmp/escaped-balanced-1" ] && [ ! -e "$tmp/cwd/out/escaped-balanced-1" ] ||
	fail "a run directory was written outside out/sim"
echo "fs_planted_files: ok"
