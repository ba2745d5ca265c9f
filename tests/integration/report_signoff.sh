#!/usr/bin/env bash
# Owner sign-off beside a report (docs/report.md "Signing"): each of the three
# roles signs its decision with its own key; govctl verify lists who signed
# what and when, refuses a tampered report, an edited entry and a key not
# listed for its role; report.html shows the state, missing roles included;
# report.json itself is never touched by a sign-off.
# Exit 77 (skip) when the Azure trace or python3 is missing.
set -euo pipefail
build=$1
gv=$build/govctl
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ -f "${GOVD_SHARED_DATA:-/nonexistent}/AzureLLMInferenceTrace2023_code.csv" ] ||
	skip "Azure code trace not found in GOVD_SHARED_DATA"
command -v python3 >/dev/null || skip "python3 not installed"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for p in policies/balanced.yaml policies/baselines/firmware-default.yaml; do
	"$gv" sim --scenario configs/scenarios/default.yaml --policy "$p" --seed 1 --duration 300 \
		--out "$out/$(basename "$p" .yaml)" >/dev/null 2>&1
done
"$gv" keygen "$out/author" >/dev/null
"$gv" report "$out/balanced" --baseline "$out/firmware-default" -o "$out/r" --sign "$out/author.key" >/dev/null 2>&1
R=$out/r/report.json
sum0=$(sha256sum "$R" | cut -d' ' -f1)
# Before anyone signs, the HTML lists every role as missing.
[ "$(grep -c '<td>MISSING</td>' "$out/r/report.html")" -eq 3 ] || fail "unsigned report: 3 missing roles expected"

for k in perf sched power intruder; do "$gv" keygen "$out/$k" >/dev/null; done
cat >"$out/signers" <<EOF
# role                name   public key
systems-performance   alice  $(cat "$out/perf.pub")
runtime-scheduler     bob    $(cat "$out/sched.pub")
power-modeling        carol  $(cat "$out/power.pub")
EOF

"$gv" signoff "$out/r" --role systems-performance --decision GO-WITH-CONDITIONS --key "$out/perf.key" \
	--name alice --signers "$out/signers" >/dev/null
"$gv" signoff "$R" --role 'runtime scheduler' --decision GO --key "$out/sched.key" --name bob \
	--signers "$out/signers" >/dev/null
[ "$(sha256sum "$R" | cut -d' ' -f1)" = "$sum0" ] || fail "a sign-off changed report.json"
"$gv" verify "$R" --signers "$out/signers" >"$out/v1" || fail "two valid sign-offs refused"
cat "$out/v1"
grep -E '^systems performance +GO-WITH-CONDITIONS +alice +20[0-9-]+T' "$out/v1" >/dev/null || fail "who/what/when not listed"
grep -E '^runtime scheduler +GO +bob' "$out/v1" >/dev/null || fail "bob not listed"
grep -E '^power modeling .*MISSING' "$out/v1" >/dev/null || fail "missing role not listed"
! "$gv" verify "$R" --signers "$out/signers" --require-all >/dev/null 2>&1 || fail "--require-all passed with a role missing"
# --require-all without the keys each role may use would accept any key
set +e; "$gv" verify "$R" --require-all >/dev/null 2>"$out/ra.err"; rc=$?; set -e
[ "$rc" = 2 ] && grep -q "needs --signers" "$out/ra.err" || fail "--require-all without --signers: exit $rc: $(cat "$out/ra.err")"
# The HTML shows the state: two signed, one missing.
[ "$(grep -c '<td>signed</td>' "$out/r/report.html")" -eq 2 ] || fail "html: 2 signed expected"
[ "$(grep -c '<td>MISSING</td>' "$out/r/report.html")" -eq 1 ] || fail "html: 1 missing expected"
grep -q '<td>alice</td><td>GO-WITH-CONDITIONS</td>' "$out/r/report.html" || fail "html: alice's decision"

# A key not listed for the role is refused (and shown as such).
cp "$R.signoffs" "$out/good.signoffs"
"$gv" signoff "$R" --role power-modeling --decision GO --key "$out/intruder.key" --name carol \
	--signers "$out/signers" >/dev/null
if "$gv" verify "$R" --signers "$out/signers" >"$out/v2" 2>&1; then
	fail "a key not listed for power-modeling accepted"
fi
grep -q 'key not listed for role power-modeling' "$out/v2" || fail "refusal does not say why"
grep -q '<td>INVALID</td>' "$out/r/report.html" || fail "html: the refused entry is not shown invalid"
# Bob's key is listed, but for another role: also refused.
cp "$out/good.signoffs" "$R.signoffs"
"$gv" signoff "$R" --role power-modeling --decision GO --key "$out/sched.key" --name carol >/dev/null
! "$gv" verify "$R" --signers "$out/signers" >/dev/null 2>&1 || fail "a key listed for another role accepted"
# Signed without a signers list: the HTML does not pretend the key was checked.
grep -q '<td>signed (key not checked)</td>' "$out/r/report.html" || fail "html: unchecked key shown as checked"

# All three owners: verify passes with --require-all.
cp "$out/good.signoffs" "$R.signoffs"
"$gv" signoff "$R" --role power-modeling --decision GO --key "$out/power.key" --name carol \
	--signers "$out/signers" >/dev/null
"$gv" verify "$R" --signers "$out/signers" --require-all >/dev/null || fail "three valid sign-offs refused"
# The author's signature still holds: the sign-off section the owners'
# entries rewrote in report.html is the one part of it the manifest leaves out.
"$gv" verify "$R" "$out/r/report.json.sig" "$out/author.pub" >/dev/null ||
	fail "the author's signature broke after the sign-offs rewrote report.html's sign-off section"
[ "$(grep -c '<td>signed</td>' "$out/r/report.html")" -eq 3 ] || fail "html: 3 signed expected"

# An edited entry (the decision changed after signing) is refused.
cp "$R.signoffs" "$out/all.signoffs"
sed -i '1s/"decision":"GO-WITH-CONDITIONS"/"decision":"GO"/' "$R.signoffs"
! cmp -s "$R.signoffs" "$out/all.signoffs" || fail "entry edit did not apply"
if "$gv" verify "$R" --signers "$out/signers" >"$out/v3" 2>&1; then fail "an edited entry accepted"; fi
grep -q 'BAD signature' "$out/v3" || fail "edited entry: no reason"
cp "$out/all.signoffs" "$R.signoffs"

# A tampered report: every sign-off refused.
sed -i 's/"verdict": "GO WITH CONDITIONS"/"verdict": "GO"/' "$R"
[ "$(sha256sum "$R" | cut -d' ' -f1)" != "$sum0" ] || fail "report edit did not apply"
if "$gv" verify "$R" --signers "$out/signers" >"$out/v4" 2>&1; then fail "a tampered report verifies"; fi
[ "$(grep -c 'report changed since this signature' "$out/v4")" -eq 3 ] || fail "tampered report: 3 refusals expected"

# Bad input: unknown role, open key permissions, a malformed signers file.
! "$gv" signoff "$R" --role janitor --decision GO --key "$out/perf.key" 2>/dev/null || fail "unknown role accepted"
chmod 644 "$out/perf.key"
! "$gv" signoff "$R" --role systems-performance --decision GO --key "$out/perf.key" 2>"$out/e1" ||
	fail "world-readable key accepted"
grep -q 'chmod 600' "$out/e1"
# A FIFO as the signers file or as the sign-off entries: refused at once, no hang.
mkfifo "$out/fifo"
set +e; timeout 20 "$gv" verify "$R" --signers "$out/fifo" >/dev/null 2>"$out/ef"; rc=$?; set -e
[ "$rc" = 1 ] && grep -q "fifo: is a FIFO, not a regular file" "$out/ef" || fail "FIFO signers file: exit $rc: $(cat "$out/ef")"
cp "$R.signoffs" "$out/keep.signoffs"
rm "$R.signoffs" && mkfifo "$R.signoffs"
set +e; timeout 20 "$gv" verify "$R" --signers "$out/signers" >/dev/null 2>"$out/ef"; rc=$?; set -e
[ "$rc" = 1 ] && grep -q "is a FIFO, not a regular file" "$out/ef" || fail "FIFO sign-offs: exit $rc: $(cat "$out/ef")"
rm "$R.signoffs" && cp "$out/keep.signoffs" "$R.signoffs"
printf 'power-modeling carol nothex\n' >"$out/bad-signers"
! "$gv" verify "$R" --signers "$out/bad-signers" 2>"$out/e2" || fail "malformed signers file accepted"
grep -q "bad-signers:1:22: error: public key is not 64 hex digits" "$out/e2" || { cat "$out/e2"; fail "no file:line:col"; }
# And the report's own new argument: an --alternatives path with no run.
set +e
"$gv" report "$out/balanced" --baseline "$out/firmware-default" --alternatives "$out/none" -o "$out/rx" 2>"$out/e3"
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q 'no run there' "$out/e3" || fail "--alternatives without a run: rc $rc"
echo "sign-off: listed, refused when tampered, edited or by an unlisted key; html shows the state"
