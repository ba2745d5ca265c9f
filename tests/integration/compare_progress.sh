#!/usr/bin/env bash
# govctl compare on a terminal (script(1) gives it a pty): "[k/N]
# scenario/policy/seed" progress on stderr up to [N/N], and a warning that
# every run repeats (firmware-default's "every rollback trigger is off")
# printed once; without a terminal, no [k/N] line, the warning still once,
# and (GOVCTL_PROGRESS_S) a plain "k/N runs done" line every so many seconds. $1: the build directory.
set -euo pipefail
build=${1:?usage: compare_progress.sh BUILD_DIR}
govctl=${GOVCTL:-$build/govctl}
[ -x "$govctl" ] || { echo "skip: $govctl not built"; exit 77; }
command -v script >/dev/null || { echo "skip: script(1) (util-linux) not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
args=(compare --scenarios configs/scenarios/default.yaml,configs/scenarios/burst.yaml
      --policies policies/baselines/firmware-default.yaml,policies/balanced.yaml
      --seeds 1,2,3 --duration 60 -j 2)
warn='every rollback trigger is off'

"$govctl" "${args[@]}" --out "$tmp/plain" >/dev/null 2>"$tmp/plain.err" || fail "compare failed: $(cat "$tmp/plain.err")"
if grep -q '\[[0-9]*/12\]' "$tmp/plain.err"; then fail "progress printed without a terminal"; fi
[ "$(grep -c "$warn" "$tmp/plain.err")" -eq 1 ] ||
	fail "the repeated warning is printed $(grep -c "$warn" "$tmp/plain.err") times, want 1"

# Without a terminal a long compare is not silent: a plain "k/N runs done"
# line at most every GOVCTL_PROGRESS_S seconds (default 10; 0: every run).
GOVCTL_PROGRESS_S=0 "$govctl" "${args[@]}" --out "$tmp/log" >/dev/null 2>"$tmp/log.err" || fail "compare failed"
for k in 1 6 11; do
	grep -qE "^govctl compare: $k/12 runs done \(last (default|burst)/(firmware-default|balanced)/[123]\)\$" "$tmp/log.err" ||
		fail "no plain $k/12 line without a terminal: $(head -c 600 "$tmp/log.err")"
done
if grep -q $'\r' "$tmp/log.err"; then fail "terminal control characters in the plain progress"; fi

# Under a pty, stderr is the terminal; stdout goes to a file.
printf -v cmd '%q ' "$govctl" "${args[@]}" --out "$tmp/tty"
script -qec "$cmd >$tmp/tty.out" "$tmp/typescript" >/dev/null || fail "compare under script(1) failed"
tr '\r' '\n' <"$tmp/typescript" | sed 's/\x1b\[K//g' >"$tmp/tty.err"
for k in 1 6 12; do
	grep -qE "^\[$k/12\] (default|burst)/(firmware-default|balanced)/[123]\$" "$tmp/tty.err" ||
		fail "no [$k/12] scenario/policy/seed progress line: $(head -c 600 "$tmp/tty.err")"
done
[ "$(grep -c "$warn" "$tmp/tty.err")" -eq 1 ] || fail "the warning is printed more than once on a terminal"
grep -qE '^default +balanced ' "$tmp/tty.out" || fail "the table is not on stdout"
if grep -q '\[[0-9]*/12\]' "$tmp/tty.out"; then fail "progress went to stdout"; fi
echo "compare_progress: ok"
