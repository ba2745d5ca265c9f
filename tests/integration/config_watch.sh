#!/usr/bin/env bash
# reload_on_change (a Kubernetes ConfigMap edit needs no SIGHUP): govd with
# the sim backend in a dry run watches its config's folder. Replacing the
# policy as a ConfigMap does (the files are links through ..data; a new
# ..data link renamed over the old) reloads it: the decision log's header
# names the new policy and `govctl status` counts the reload. A broken policy
# is refused (the old one kept, counted as refused); govd's own files in the
# folder (state file, socket) trigger nothing. $1: the build directory.
set -euo pipefail
build=${1:?usage: config_watch.sh BUILD_DIR}
govd=$build/govd
govctl=${GOVCTL:-$build/govctl}
[ -x "$govd" ] && [ -x "$govctl" ] || { echo "skip: govd/govctl not built in $build"; exit 77; }
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/err" ] && sed 's/^/  govd: /' "$tmp/err" >&2; exit 1; }

# The ConfigMap layout: cm/..2026_1/{govd.yaml,p.yaml}, cm/..data -> ..2026_1,
# cm/govd.yaml -> ..data/govd.yaml, cm/p.yaml -> ..data/p.yaml.
cm=$tmp/cm
mkdir -p "$cm/..v1"
cat >"$cm/..v1/govd.yaml" <<YAML
reload_on_change: true
policy: p.yaml
state_file: $tmp/state.json
decision_log: {dir: $tmp/log}
control: {socket: $tmp/ctl.sock, read: {users: [$(id -u)]}}
devices:
  - {name: gpu0, backend: sim, time_scale: 10, options: {scenario: configs/scenarios/default.yaml, seed: 1}}
YAML
sed 's/^name: balanced$/name: watched-one/' policies/balanced.yaml >"$cm/..v1/p.yaml"
ln -s ..v1 "$cm/..data"
ln -s ..data/govd.yaml "$cm/govd.yaml"
ln -s ..data/p.yaml "$cm/p.yaml"

"$govd" --config "$cm/govd.yaml" --dry-run 2>"$tmp/err" &
pid=$!
reloads() { "$govctl" status --json --socket "$tmp/ctl.sock" 2>/dev/null |
	/usr/bin/python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["reloads"], s["reloads_refused"])'; }
for _ in $(seq 200); do [ -S "$tmp/ctl.sock" ] && reloads >/dev/null 2>&1 && break; sleep 0.05; done
grep -q "reloading on changes in $cm" "$tmp/err" || fail "no watch notice"
[ "$(reloads)" = "0 0" ] || fail "reloads at start: $(reloads)"
sleep 0.5
[ "$(reloads)" = "0 0" ] || fail "govd's own files reloaded it: $(reloads)"

# a ConfigMap update: new version folder, ..data swapped by a rename
swap() {
	mkdir "$cm/..$1"
	cp "$cm/..data/govd.yaml" "$cm/..$1/govd.yaml"
	cat >"$cm/..$1/p.yaml"
	ln -s "..$1" "$cm/..data_tmp"
	mv -T "$cm/..data_tmp" "$cm/..data"
}
sed 's/^name: balanced$/name: watched-two/' policies/balanced.yaml | swap v2
for _ in $(seq 100); do [ "$(reloads)" = "1 0" ] && break; sleep 0.05; done
[ "$(reloads)" = "1 0" ] || fail "no reload after the ConfigMap swap: $(reloads)"
grep -q '"policy":"watched-two"' "$tmp/log/gpu0.jsonl" || fail "the new policy is not in force (no header naming it)"
# a broken policy: refused, the old one kept
printf 'name: broken\ncontrol: {controller: nosuch}\n' | swap v3
for _ in $(seq 100); do [ "$(reloads)" = "1 1" ] && break; sleep 0.05; done
[ "$(reloads)" = "1 1" ] || fail "a broken policy was not refused: $(reloads)"
kill -0 "$pid" || fail "govd died on a broken policy"
kill -TERM "$pid"
wait "$pid" || fail "govd exit status $?"
pid=
echo "config_watch: ConfigMap swap reloaded (watched-two in force), a broken one refused, own files ignored"
