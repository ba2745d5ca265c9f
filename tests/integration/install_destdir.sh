#!/usr/bin/env bash
# `cmake --install` into a DESTDIR: the FHS layout (binaries, policies,
# scenarios and schemas under share/govd, example configs under etc/govd with
# no tree-relative path left, the systemd unit, sysusers.d and tmpfiles.d
# entries, man pages, completions, docs), every installed example config
# passes the installed `govd --check` with its policy found in the installed
# data folder, and the installed govd runs the installed sim example in dry
# run from there (decision records written, policy and scenario from the
# DESTDIR, SIGTERM -> exit 0).
# $1: the build directory (configured with this tree's install rules).
set -euo pipefail
build=${1:?usage: install_destdir.sh BUILD_DIR}
[ -x "$build/govd" ] || { echo "skip: $build/govd not built"; exit 77; }
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }

D=$tmp/root
DESTDIR=$D cmake --install "$build" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install failed"; }
prefix=$(cache CMAKE_INSTALL_PREFIX)
datadir=$(cache GOVD_DATADIR)
unitdir=$(cache GOVD_SYSTEMD_UNITDIR)
sysusers=$(cache GOVD_SYSUSERSDIR)
tmpfiles=$(cache GOVD_TMPFILESDIR)
case $prefix in /usr) etc=/etc ;; *) etc=$prefix/etc ;; esac
[ "$datadir" = "$prefix/share/govd" ] || fail "GOVD_DATADIR $datadir is not under the prefix $prefix"

for f in "$prefix/bin/govd" "$prefix/bin/govctl"; do
	[ -x "$D$f" ] || fail "$f not installed (executable)"
done
for f in "$datadir/policies/default.yaml" "$datadir/policies/balanced.yaml" \
	"$datadir/policies/baselines/firmware-default.yaml" "$datadir/policies/schema/policy.schema.json" \
	"$datadir/schema/govd-config.schema.json" "$datadir/scenarios/default.yaml" \
	"$datadir/meters/eastron-sdm630.yaml" "$etc/govd/govd.yaml" "$etc/govd/examples/nvml.yaml" \
	"$etc/govd/examples/sim.yaml" "$unitdir/govd.service" "$sysusers/govd.conf" "$tmpfiles/govd.conf" \
	"$prefix/share/man/man8/govd.8" "$prefix/share/man/man1/govctl.1" \
	"$prefix/share/man/man5/govd.yaml.5" "$prefix/share/man/man5/govd-policy.5" \
	"$prefix/share/bash-completion/completions/govctl" "$prefix/share/bash-completion/completions/govd" \
	"$prefix/share/doc/govd/README.md" "$prefix/share/doc/govd/NOTICE" "$prefix/share/doc/govd/daemon.md" \
	"$prefix/share/doc/govd/runbook.md" "$datadir/monitoring/govd-rules.yml" \
	"$datadir/monitoring/govd-rules.test.yml" "$datadir/monitoring/grafana-govd.json"; do
	[ -f "$D$f" ] || fail "$f not installed"
done
# The installed rules pass their installed unit tests (promtool, when there).
if command -v promtool >/dev/null; then
	(cd "$D$datadir/monitoring" && promtool test rules govd-rules.test.yml >/dev/null) ||
		fail "promtool test rules on the installed monitoring kit"
fi
# Every shipped example is installed, and none keeps a path into the source tree.
for f in configs/examples/*.yaml; do
	[ -f "$D$etc/govd/examples/$(basename "$f")" ] || fail "$f not installed in $etc/govd/examples"
done
if grep -nE '^[^#]*(\.\./|configs/|build/gov)' "$D$etc/govd/govd.yaml" "$D$etc/govd/examples/"*.yaml; then
	fail "an installed config still names a source-tree path (above)"
fi
grep -q "^ExecStart=$prefix/bin/govd --config $etc/govd/govd.yaml\$" "$D$unitdir/govd.service" ||
	fail "the installed unit does not run $prefix/bin/govd on $etc/govd/govd.yaml"
grep -q '^StateDirectory=govd$' "$D$unitdir/govd.service" || fail "unit: StateDirectory=govd"
grep -q '^u govd ' "$D$sysusers/govd.conf" || fail "sysusers.d: no govd user"
for d in /var/lib/govd /var/log/govd /run/govd; do
	grep -q "^d $d [0-7]* root govd" "$D$tmpfiles/govd.conf" || fail "tmpfiles.d: no entry for $d"
done

# The installed binaries on the installed files. GOVD_DATA_PATH points the
# search at the DESTDIR's data folder (the compiled-in one is $datadir).
export GOVD_DATA_PATH=$D$datadir
"$D$prefix/bin/govd" --version | grep -q "^govd [0-9]" || fail "govd --version"
"$D$prefix/bin/govctl" --version | grep -q "^govctl [0-9]" || fail "govctl --version"
# An NVML config passes only where the driver's library loads: here the
# fake stands in for it (LD_LIBRARY_PATH); without any, the check must fail
# and say so.
nvml_env=
if [ -n "${FAKE_NVML_DIR:-}" ] && [ -f "$FAKE_NVML_DIR/full/libnvidia-ml.so.1" ]; then
	nvml_env=LD_LIBRARY_PATH=$FAKE_NVML_DIR/full
fi
for f in "$D$etc/govd/examples/"*.yaml; do
	if grep -q '^[^#]*backend: nvml' "$f" && ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1 '; then
		if out=$("$D$prefix/bin/govd" --check --config "$f" 2>&1); then
			fail "--check $f passes without libnvidia-ml.so.1"
		fi
		echo "$out" | grep -q 'libnvidia-ml.so.1 not found' || fail "--check $f: $out"
		[ -n "$nvml_env" ] || continue
	fi
	out=$(env $nvml_env "$D$prefix/bin/govd" --check --config "$f" 2>&1) ||
		{ echo "$out"; fail "installed govd --check $f"; }
	echo "$out" | grep -q ': ok:' || fail "--check $f: $out"
done
# The policy really came from the data folder: a policy dropped next to the
# config overrides it (the /etc-over-/usr rule), and the header names it.
"$D$prefix/bin/govctl" lint "$D$datadir/policies/"*.yaml "$D$datadir/policies/baselines/"*.yaml >/dev/null ||
	fail "installed govctl lint of the installed policies"

# The installed govctl finds installed scenarios and policies by their
# relative names from any folder.
(cd / && "$D$prefix/bin/govctl" sim --scenario scenarios/default.yaml --policy policies/balanced.yaml \
	--duration 60 --out "$tmp/sim") >"$tmp/sim.out" 2>&1 || { cat "$tmp/sim.out"; fail "installed govctl sim by relative names"; }
grep -q "\"policy_path\": *\"$D$datadir/policies/balanced.yaml\"" "$tmp/sim/summary.json" ||
	fail "govctl sim did not run the installed policy: $(head -c 400 "$tmp/sim/summary.json")"
(cd / && "$D$prefix/bin/govctl" compare --scenarios scenarios/default.yaml \
	--policies policies/baselines/firmware-default.yaml,policies/balanced.yaml --duration 60 \
	--out "$tmp/cmp") >"$tmp/cmp.out" 2>&1 || { cat "$tmp/cmp.out"; fail "installed govctl compare by relative names"; }

# A short dry run of the installed sim example, working directory /, with
# its run-time paths moved into the test's folder.
cfg=$D$etc/govd/examples/zz-test-sim.yaml
mkdir -p "$tmp/run" && chmod 700 "$tmp/run"
sed -e "s|[^ ]*/lib/govd/example-sim|$tmp/run|g; s|127.0.0.1:9464|127.0.0.1:0|" \
	-e "s|^  socket: .*|&\n  read:\n    users: [$(id -un)]|" \
	"$D$etc/govd/examples/sim.yaml" >"$cfg"
grep -q '^policy: policies/' "$cfg" || fail "installed sim example: policy is not policies/... (data search path)"
grep -q 'scenario: scenarios/' "$cfg" || fail "installed sim example: scenario is not scenarios/..."
(cd / && exec "$D$prefix/bin/govd" --config "$cfg" --dry-run) >"$tmp/out" 2>&1 &
pid=$!
log=$tmp/run/log/gpu0.jsonl
for _ in $(seq 100); do
	[ -f "$log" ] && [ "$(wc -l <"$log")" -ge 6 ] && break
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/out"; fail "installed govd exited early"; }
	sleep 0.1
done
[ -f "$log" ] && [ "$(wc -l <"$log")" -ge 6 ] || { cat "$tmp/out"; fail "no decision records in $log"; }
# govctl status: the table for people (W, MHz), the object for machines.
sock=$(sed -n 's/^  socket: *\([^ ]*\).*/\1/p' "$cfg")
st=$("$D$prefix/bin/govctl" status --socket "$sock") || fail "installed govctl status"
grep -q '^dry run   yes$' <<<"$st" || fail "status table: no 'dry run yes': $st"
grep -qE '^DEVICE +BACKEND +POLICY +CLK MHz +LOCKED +LIMIT W +GRANT W +PERIODS +ACT ERRORS$' <<<"$st" ||
	fail "status table header: $st"
grep -qE '^gpu0 +sim +thermal-conservative +[0-9]+ +(yes|no) +[0-9]+\.[0-9] +- +[0-9]+ +0$' <<<"$st" ||
	fail "status table row: $st"
"$D$prefix/bin/govctl" status --json --socket "$sock" | /usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin)
d = s["devices"][0]
assert s["dry_run"] is True and d["name"] == "gpu0", s
assert isinstance(d["power_limit_mw"], int) and isinstance(d["clk_max_khz"], int), d
' || fail "govctl status --json"
# One unit convention (docs/install.md, "Units"): in the status object and the
# decision-log header, every power, clock or temperature number names its unit.
{ "$D$prefix/bin/govctl" status --json --socket "$sock"; head -1 "$log"; } | /usr/bin/python3 -c '
import json, re, sys
quantity = re.compile(r"power|clk|clock|temp|budget|limit|grant|slowdown|shutdown")
unit = re.compile(r"_(mw|w|khz|mhz|mc|c)$")
bad = []
def walk(o, path):
    if isinstance(o, dict):
        for k, v in o.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and quantity.search(k) and not unit.search(k):
                bad.append(path + k)
            walk(v, path + k + ".")
    elif isinstance(o, list):
        for v in o:
            walk(v, path)
for line in sys.stdin:
    walk(json.loads(line), "")
assert not bad, "numbers without a unit in their name: %s" % bad
' || fail "unit convention"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" -eq 0 ] || { cat "$tmp/out"; fail "installed govd exited $rc after SIGTERM"; }
head -1 "$log" | grep -q "\"policy_path\":\"$D$datadir/policies/thermal-conservative.yaml\"" ||
	fail "the decision log header does not name the installed policy: $(head -c 600 "$log")"
[ ! -e "$tmp/run/state.json" ] || fail "dry run wrote a state file"

# /etc over /usr: a policy of the same relative name next to the config wins.
mkdir -p "$D$etc/govd/examples/policies"
sed 's/^name: thermal-conservative/name: local-override/' "$D$datadir/policies/thermal-conservative.yaml" \
	>"$D$etc/govd/examples/policies/thermal-conservative.yaml"
"$D$prefix/bin/govd" --check --config "$cfg" | grep -q 'policy local-override' ||
	fail "a policy next to the config does not override the installed one"
# Not found anywhere: a clear error naming the path, exit 1.
sed 's|^policy: .*|policy: policies/no-such-policy.yaml|' "$cfg" >"$cfg.bad"
if "$D$prefix/bin/govd" --check --config "$cfg.bad" >"$tmp/bad" 2>&1; then fail "--check passed with a missing policy"; fi
grep -q 'no-such-policy.yaml' "$tmp/bad" || fail "missing policy: the error does not name it: $(cat "$tmp/bad")"
echo "install_destdir: ok ($prefix; $(find "$D" -type f | wc -l) files)"
