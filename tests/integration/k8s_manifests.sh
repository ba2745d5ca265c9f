#!/usr/bin/env bash
# configs/k8s/*.yaml validated offline against the Kubernetes API's JSON
# schemas: the validators of npm's kubernetes-models (generated from the
# Kubernetes OpenAPI spec; tools/install-deps puts them in
# ~/.cache/govd-test/k8s), each document by its apiVersion and kind. Broken
# copies must be refused (so the check can fail). The ConfigMap's config
# passes `govd --check` and carries policies/balanced.yaml verbatim.
# $1: the build directory. Exit 77 (skip) when the validators or node are
# missing.
set -euo pipefail
build=${1:?usage: k8s_manifests.sh BUILD_DIR}
models=${GOVD_K8S_MODELS:-$HOME/.cache/govd-test/k8s}
command -v node >/dev/null || { echo "skip: node not installed (tools/install-deps: nodejs)"; exit 77; }
[ -d "$models/node_modules/kubernetes-models" ] ||
	{ echo "skip: $models/node_modules/kubernetes-models missing (run tools/install-deps)"; exit 77; }
# the Prometheus Operator's CRDs (ServiceMonitor, PrometheusRule), from the
# same project's generated validators
[ -d "$models/promop/node_modules/@kubernetes-models/prometheus-operator" ] ||
	{ echo "skip: $models/promop: @kubernetes-models/prometheus-operator missing (run tools/install-deps)"; exit 77; }
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# YAML -> one JSON array of documents (YAML 1.1 as kubectl reads it)
$py - configs/k8s/*.yaml >"$tmp/docs.json" <<'PY'
import json, sys, yaml
docs = []
for p in sys.argv[1:]:
    for d in yaml.safe_load_all(open(p)):
        if d is not None:
            docs.append({"file": p, "doc": d})
json.dump(docs, sys.stdout)
PY

cat >"$tmp/validate.cjs" <<'JS'
// argv: models dir, docs.json. Prints one line a document; exit 1 if any fails.
const path = require("path");
const [models, file] = process.argv.slice(2);
const docs = require(path.resolve(file));
let bad = 0;
for (const { file, doc } of docs) {
  const av = doc.apiVersion || "", kind = doc.kind || "";
  const group = av.includes("/") ? av : av; // "apps/v1" -> apps/v1, "v1" -> v1
  let Cls;
  const lib = av.startsWith("monitoring.coreos.com/")
    ? "promop/node_modules/@kubernetes-models/prometheus-operator"
    : "node_modules/kubernetes-models";
  try {
    Cls = require(path.join(models, lib, group, kind))[kind];
  } catch (e) {
    console.log(`${file}: ${av} ${kind}: no schema (${e.code || e.message})`);
    bad++;
    continue;
  }
  try {
    new Cls(doc).validate();
    console.log(`${file}: ${av} ${kind} ${doc.metadata && doc.metadata.name}: valid`);
  } catch (e) {
    console.log(`${file}: ${av} ${kind}: INVALID: ${e.message.split("\n").slice(0, 4).join("; ")}`);
    bad++;
  }
}
process.exit(bad ? 1 : 0);
JS
node "$tmp/validate.cjs" "$models" "$tmp/docs.json" || fail "a manifest does not validate"
n=$($py -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$tmp/docs.json")
[ "$n" -ge 3 ] || fail "expected a DaemonSet, a ConfigMap and a Service; found $n documents"
for kind in Namespace DaemonSet ConfigMap Service ServiceMonitor PrometheusRule; do
	grep -q "\"kind\": \"$kind\"" <($py -m json.tool "$tmp/docs.json") || fail "no $kind"
done

# broken copies are refused: a wrong type, a missing required field
for mutation in \
	'd["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "metrics"' \
	'd["spec"]["template"]["spec"]["containers"][0]["securityContext"]["privileged"] = "no"' \
	'del d["spec"]["selector"]' \
	'd["spec"]["template"]["spec"]["containers"][0].pop("name")'; do
	$py - "$tmp/docs.json" "$mutation" >"$tmp/bad.json" <<'PY'
import json, sys
docs = json.load(open(sys.argv[1]))
docs = [x for x in docs if x["doc"]["kind"] == "DaemonSet"]
d = docs[0]["doc"]
exec(sys.argv[2])
json.dump(docs, sys.stdout)
PY
	if node "$tmp/validate.cjs" "$models" "$tmp/bad.json" >"$tmp/bad.out"; then
		fail "a DaemonSet with '$mutation' was accepted"
	fi
	echo "refused as it should be: $(grep -o 'INVALID.*' "$tmp/bad.out" | cut -c1-120)"
done

# a CRD's validator refuses too: an interval that is not a duration, a
# rule without expr
for mutation in \
	'[x for x in docs if x["doc"]["kind"] == "ServiceMonitor"][0]["doc"]["spec"]["endpoints"][0]["interval"] = "fortnightly"' \
	'[x for x in docs if x["doc"]["kind"] == "PrometheusRule"][0]["doc"]["spec"]["groups"][0]["rules"][0].pop("expr")'; do
	$py - "$tmp/docs.json" "$mutation" >"$tmp/bad.json" <<'PY'
import json, sys
docs = json.load(open(sys.argv[1]))
exec(sys.argv[2])
json.dump(docs, sys.stdout)
PY
	if node "$tmp/validate.cjs" "$models" "$tmp/bad.json" >"$tmp/bad.out"; then
		fail "a manifest with '$mutation' was accepted"
	fi
	echo "refused as it should be: $(grep -o 'INVALID.*' "$tmp/bad.out" | cut -c1-120)"
done
# the PrometheusRule is the rules file's copy; the ServiceMonitor finds the
# Service and its port
python3 tools/gen-k8s-rules --check || fail "configs/k8s/govd-prometheusrule.yaml is stale"
$py - "$tmp/docs.json" <<'PY' || fail "the ServiceMonitor does not select the metrics Service"
import json, sys
docs = [x["doc"] for x in json.load(open(sys.argv[1]))]
sm = [d for d in docs if d["kind"] == "ServiceMonitor"][0]
svc = [d for d in docs if d["kind"] == "Service"][0]
assert sm["metadata"]["namespace"] in sm["spec"]["namespaceSelector"]["matchNames"]
assert svc["metadata"]["namespace"] in sm["spec"]["namespaceSelector"]["matchNames"]
for k, v in sm["spec"]["selector"]["matchLabels"].items():
    assert svc["metadata"]["labels"].get(k) == v, (k, v)
ports = {p["name"] for p in svc["spec"]["ports"]}
assert all(e["port"] in ports for e in sm["spec"]["endpoints"]), ports
PY

# the smallest privilege: not privileged, no escalation, every capability
# dropped but SYS_ADMIN, no service-account token, no host namespaces
$py - "$tmp/docs.json" <<'PY' || fail "DaemonSet asks for more than NVML needs"
import json, sys
ds = [x["doc"] for x in json.load(open(sys.argv[1])) if x["doc"]["kind"] == "DaemonSet"][0]
pod = ds["spec"]["template"]["spec"]
sc = pod["containers"][0]["securityContext"]
assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False
assert sc["capabilities"]["drop"] == ["ALL"] and sc["capabilities"]["add"] == ["SYS_ADMIN"]
assert sc["readOnlyRootFilesystem"] is True
assert pod["automountServiceAccountToken"] is False
for k in ("hostPID", "hostIPC", "hostNetwork"):
    assert not pod.get(k), k
paths = [v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v]
assert all(not p.startswith("/dev") for p in paths), paths
# the node identity survives a rollout; readiness is the metrics endpoint
env = {e["name"]: e for e in pod["containers"][0]["env"]}
assert env["GOVD_NODE"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName", env
assert pod["containers"][0]["readinessProbe"]["httpGet"]["path"] == "/metrics"
# the namespace's Pod Security level admits SYS_ADMIN, and reports others
ns = [x["doc"] for x in json.load(open(sys.argv[1])) if x["doc"]["kind"] == "Namespace"][0]
lab = ns["metadata"]["labels"]
assert ns["metadata"]["name"] == ds["metadata"]["namespace"]
assert lab["pod-security.kubernetes.io/enforce"] == "privileged", lab
assert lab["pod-security.kubernetes.io/warn"] == "baseline", lab
PY

# the ConfigMap's config and policy: govd --check, and the policy verbatim
mkdir "$tmp/etc"
$py - configs/k8s/govd-configmap.yaml "$tmp/etc" <<'PY'
import os, sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
for k, v in d["data"].items():
    open(os.path.join(sys.argv[2], k), "w").write(v)
PY
$py - "$tmp/etc/govd.yaml" <<'PY' || fail "the ConfigMap's govd.yaml fails configs/schema/govd-config.schema.json"
import json, sys, jsonschema, yaml
jsonschema.validate(yaml.safe_load(open(sys.argv[1])), json.load(open("configs/schema/govd-config.schema.json")))
PY
# Its devices are NVML GPUs: the check loads the driver's library (the fake
# stands in for it here) and fails where none is installed.
if [ -x "$build/govd" ]; then
	if ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1 '; then
		if "$build/govd" --check --config "$tmp/etc/govd.yaml" >"$tmp/chk" 2>&1; then
			fail "the ConfigMap's govd.yaml passes govd --check without libnvidia-ml.so.1"
		fi
		grep -q 'libnvidia-ml.so.1 not found' "$tmp/chk" || fail "govd --check: $(cat "$tmp/chk")"
	fi
	if [ -n "${FAKE_NVML_DIR:-}" ] && [ -f "$FAKE_NVML_DIR/full/libnvidia-ml.so.1" ]; then
		LD_LIBRARY_PATH=$FAKE_NVML_DIR/full "$build/govd" --check --config "$tmp/etc/govd.yaml" ||
			fail "the ConfigMap's govd.yaml fails govd --check"
	elif ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1 '; then
		"$build/govd" --check --config "$tmp/etc/govd.yaml" || fail "the ConfigMap's govd.yaml fails govd --check"
	fi
fi
tail -n +2 "$tmp/etc/balanced.yaml" | cmp -s - policies/balanced.yaml ||
	fail "configs/k8s/govd-configmap.yaml: balanced.yaml differs from policies/balanced.yaml"
echo "k8s_manifests: ok"
