#!/usr/bin/env bash
# Parsers bound depth and width and stay linear (issue 12, item 4): YAML
# nested 40k and 100k deep (flow and block) is refused at the first level
# past the limit with file:line:col; 40k keys in one mapping and 40k copies
# of one key are checked (the duplicate check sorts, it does not compare
# each key with every earlier one); a list past the entry limit is refused;
# the error list is capped. A SIGHUP with a 40k-deep policy is refused while
# the loop keeps answering. The 60 s timeout is a hang guard, not a speed
# target (times: docs/hardening.md).
. "$(dirname "$0")/lib.sh"
try() {
	local name=$1 expect=$2; shift 2
	set +e; timeout 60 "$@" >"$tmp/$name.err" 2>&1; local rc=$?; set -e
	[ "$rc" -ne 124 ] || fail "$name: hung (60 s guard)"
	[ "$rc" -ne 0 ] || fail "$name: accepted"
	expect_in "$tmp/$name.err" "$expect"
}
$py - "$tmp" <<'PY'
import sys
d = sys.argv[1]
open(d + "/flow40k.yaml", "w").write("[\n" * 40000 + "]\n" * 40000)
open(d + "/flow100k.yaml", "w").write("name: x\nmetadata: " + "[" * 100000 + "]" * 100000 + "\n")
open(d + "/block.yaml", "w").write("".join(" " * i + "k:\n" for i in range(1000)))
open(d + "/flow100k-lines.yaml", "w").write("[\n" * 100000 + "]\n" * 100000)
open(d + "/keys40k.yaml", "w").write("name: x\ndescription: y\nmetadata:\n" +
                                     "".join("  k%d: 1\n" % i for i in range(40000)))
open(d + "/dups40k.yaml", "w").write("".join("name: x\n" for i in range(40000)))
open(d + "/list150k.yaml", "w").write("metadata:\n" + "".join("  - 1\n" for i in range(150000)))
PY
try flow40k "flow40k.yaml:65:1: error: nested deeper than 64 levels (limit 64)" "$govctl" lint "$tmp/flow40k.yaml"
# one line of 200k brackets: the line bound refuses it before libyaml sees it
try flow100k "line 2 is longer than 65536 bytes" "$govctl" lint "$tmp/flow100k.yaml"
try flow100k-lines "flow100k-lines.yaml:65:1: error: nested deeper than 64 levels" "$govctl" lint "$tmp/flow100k-lines.yaml"
try block "block.yaml:65:65: error: nested deeper than 64 levels (limit 64)" "$govctl" lint "$tmp/block.yaml"
try dups40k "duplicate key 'name' (first given at line 1:1)" "$govctl" lint "$tmp/dups40k.yaml"
expect_in "$tmp/dups40k.err" "too many problems: the first 999 are shown"
[ "$(grep -c 'duplicate key' "$tmp/dups40k.err")" -le 1000 ] || fail "the error list is not capped"
try list150k "more than 100000 entries in one list (limit 100000)" "$govctl" lint "$tmp/list150k.yaml"
# 40k distinct keys: checked in full (each unknown key reported, capped)
set +e; timeout 60 "$govctl" lint "$tmp/keys40k.yaml" >"$tmp/keys.err" 2>&1; rc=$?; set -e
[ "$rc" -ne 124 ] || fail "keys40k: hung (60 s guard)"
# the same through the config loader (--check)
try cfgdeep "nested deeper than 64 levels" "$govd" --check --config "$tmp/flow40k.yaml"

# SIGHUP with a 40k-deep policy: refused naming the limit, the loop goes on
mkdir -m 0700 "$tmp/run"
sim_config "$tmp/c.yaml" "$tmp/run"
cp policies/thermal-conservative.yaml "$tmp/p.yaml"
sed -i "s#^policy: .*#policy: $tmp/p.yaml#" "$tmp/c.yaml"
"$govd" --config "$tmp/c.yaml" 2>"$tmp/govd.err" & pids+=($!)
wait_for "govd to start" test -S "$tmp/run/ctl.sock"
cp "$tmp/flow40k.yaml" "$tmp/p.yaml"
"$govctl" reload --socket "$tmp/run/ctl.sock" >"$tmp/reload.out" 2>&1 && fail "a 40k-deep policy was reloaded"
expect_in "$tmp/govd.err" "nested deeper than 64 levels"
timeout 10 "$govctl" status --socket "$tmp/run/ctl.sock" >/dev/null || fail "status after the refused reload"
kill -TERM "${pids[-1]}"; wait "${pids[-1]}" || fail "govd did not stop cleanly"
echo "parse_bounds: ok"
