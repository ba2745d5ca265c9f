#!/usr/bin/env bash
# Values and text from files (issue 12, item 8): an ESC sequence in a YAML key
# or value reaches the terminal and the journal escaped; 4.9e-324 is a (tiny)
# finite number checked against its range, not "not finite"; trace
# timestamps spanning 1900..2200 give a row error, not a signed overflow
# (UBSan aborts the sanitizer build on one); govd --check refuses what would
# fail at start: a slice listed twice, a meter under the govd controller.
. "$(dirname "$0")/lib.sh"
esc=$'\e'
no_raw_esc() { if grep -q "$esc" "$1"; then fail "$1 holds a raw ESC byte"; fi; }
# key and value with terminal controls (YAML's "\e" escape: raw control
# bytes are refused by the reader already)
cp policies/balanced.yaml "$tmp/p.yaml"
printf '"x\\e]0;pwned\\a": 1\n' >>"$tmp/p.yaml"
sed -i 's/^name: .*/name: "evil\\e[2J"/' "$tmp/p.yaml"
set +e; "$govctl" lint "$tmp/p.yaml" >"$tmp/lint.out" 2>&1; set -e
no_raw_esc "$tmp/lint.out"
expect_in "$tmp/lint.out" 'x\x1b]0;pwned'
# through govd (the journal path: log lines) on a reload of that policy
mkdir -m 0700 "$tmp/run"
sim_config "$tmp/c.yaml" "$tmp/run"
"$govd" --config "$tmp/c.yaml" 2>"$tmp/govd.err" & pids+=($!)
wait_for "govd to start" test -S "$tmp/run/ctl.sock"
sed -i "s#^policy: .*#policy: $tmp/p.yaml#" "$tmp/c.yaml"
kill -HUP "${pids[-1]}"
wait_for "the refused reload" grep -q "reload refused" "$tmp/govd.err"
kill -TERM "${pids[-1]}"; wait "${pids[-1]}" || fail "govd did not stop cleanly"
no_raw_esc "$tmp/govd.err"
expect_in "$tmp/govd.err" '\x1b'

# 4.9e-324: a range error, not "not finite"
sed 's/^  ceiling_c: 83/  ceiling_c: 4.9e-324/' policies/balanced.yaml >"$tmp/sub.yaml"
set +e; "$govctl" lint "$tmp/sub.yaml" >"$tmp/sub.out" 2>&1; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "ceiling_c 4.9e-324 accepted"
if grep -q "finite" "$tmp/sub.out"; then fail "4.9e-324 reported as not finite"; fi
expect_in "$tmp/sub.out" "4.9e-324 is out of range"

# timestamps 1900 and 2200 in one trace (either order)
for order in "1900 2200" "2200 1900"; do
	set -- $order
	printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n%s-01-01 00:00:00,10,1\n%s-12-31 23:59:59,10,1\n' \
		"$1" "$2" >"$tmp/ts.csv"
	sed "s#trace: .*#trace: $tmp/ts.csv#" tests/data/scenarios/good/trace-relative.yaml >"$tmp/ts.yaml"
	set +e; "$govctl" sim --scenario "$tmp/ts.yaml" --policy policies/balanced.yaml --out "$tmp/o" \
		>"$tmp/ts.out" 2>&1; rc=$?; set -e
	[ "$rc" -ne 0 ] || fail "a 300-year trace accepted ($order)"
	if grep -q "runtime error" "$tmp/ts.out"; then fail "UBSan: $(grep 'runtime error' "$tmp/ts.out")"; fi
	expect_in "$tmp/ts.out" "ts.csv:3: error:"
done

# --check refuses what would fail at start
sed -e 's/slices: code,chat,math /slices: code,chat,code /' configs/demo-serving/govd.yaml >"$tmp/dup.yaml"
sed -i "s#^policy: \.\./\.\./#policy: $PWD/#" "$tmp/dup.yaml"
set +e; "$govd" --check --config "$tmp/dup.yaml" >"$tmp/dup.out" 2>&1; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "--check passed a slice listed twice"
expect_in "$tmp/dup.out" "slice 'code' listed twice"
sed -e "s#^policy: .*#policy: $PWD/policies/default.yaml#" configs/examples/modbus.yaml >"$tmp/meter.yaml"
set +e; "$govd" --check --config "$tmp/meter.yaml" >"$tmp/meter.out" 2>&1; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "--check passed a meter under the govd controller"
expect_in "$tmp/meter.out" "is a modbus meter (nothing settable)"
# the shipped examples pass --check
for c in configs/sim.yaml configs/examples/sim.yaml configs/examples/modbus.yaml configs/demo-serving/govd.yaml; do
	"$govd" --check --config "$c" >/dev/null 2>"$tmp/shipped.err" || fail "$c fails --check"
done
echo "parse_values: ok"
