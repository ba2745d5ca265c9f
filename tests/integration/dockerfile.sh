#!/usr/bin/env bash
# The container image's Dockerfile without a container engine (none runs on
# the test machines; Debian's docker.io and buildah need a daemon or user
# namespaces and network access to pull the base image):
#  - the Docker language server's linter (npm dockerfile-utils, pinned,
#    installed by tools/install-deps) passes it, and refuses broken copies
#    (so the check can fail);
#  - its build stage installs every Build-Depends of debian/control, both
#    stages are Debian 12 (the platform the package is built for), the
#    port it exposes is the DaemonSet's, the DaemonSet's image tag is the
#    project's version, and .dockerignore keeps build trees and .git out.
# tools/test-package checks that ENTRYPOINT and CMD name files the built
# package installs. Exit 77 (skip) without node or the linter.
set -euo pipefail
lintdir=${GOVD_DOCKERFILE_LINT:-$HOME/.cache/govd-test/dockerfile}
lint=$lintdir/node_modules/.bin/dockerfile-utils
command -v node >/dev/null || { echo "skip: node not installed (tools/install-deps: nodejs)"; exit 77; }
[ -x "$lint" ] || { echo "skip: $lint missing (run tools/install-deps)"; exit 77; }
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$lint" lint Dockerfile >"$tmp/lint.out" 2>&1 || fail "dockerfile-utils lint: $(cat "$tmp/lint.out")"
[ ! -s "$tmp/lint.out" ] || fail "dockerfile-utils lint reports: $(cat "$tmp/lint.out")"
i=0
for sub in 's/^RUN apt-get update/RUNN apt-get update/' 's/^EXPOSE 9464\/tcp/EXPOSE metrics/' \
	's/^COPY --from=build \/deb\/ \/tmp\/deb\//COPY \/deb\//'; do
	i=$((i + 1))
	sed "$sub" Dockerfile >"$tmp/bad$i"
	cmp -s Dockerfile "$tmp/bad$i" && fail "mutation '$sub' changed nothing"
	if "$lint" lint "$tmp/bad$i" >"$tmp/bad$i.out" 2>&1; then fail "the linter passed '$sub'"; fi
	echo "refused as it should be: $(grep -m1 'Error' "$tmp/bad$i.out")"
done

$py - <<'PY' || fail "Dockerfile does not match the project"
import re, yaml
text = open("Dockerfile").read()
# logical lines: continuations joined
lines = re.sub(r"\\\n", " ", text).splitlines()
froms = [l.split()[1] for l in lines if l.startswith("FROM ")]
assert froms and all(f.startswith("debian:bookworm") for f in froms), froms
control = open("debian/control").read()
bd = re.search(r"^Build-Depends:(.*?)^\S", control, re.S | re.M).group(1)
deps = {re.sub(r"\s*\(.*\)", "", d).strip() for d in bd.split(",") if d.strip()}
deps = {"debhelper" if d.startswith("debhelper-compat") else d for d in deps}
# the build stage: everything before the second FROM
build = re.sub(r"\\\n", " ", text[:text.index("FROM ", text.index("FROM ") + 1)])
installed = set()
for l in build.splitlines():
    if "apt-get install" in l:
        installed |= set(re.findall(r"[a-z0-9][a-z0-9+.-]+", l.split("apt-get install", 1)[1]))
missing = sorted(d for d in deps if d not in installed)
assert not missing, f"Build-Depends not installed in the build stage: {missing}"
expose = [l.split()[1] for l in lines if l.startswith("EXPOSE ")]
ds = yaml.safe_load(open("configs/k8s/govd-daemonset.yaml"))
c = ds["spec"]["template"]["spec"]["containers"][0]
ports = [f'{p["containerPort"]}/{p["protocol"].lower()}' for p in c["ports"]]
assert expose == ports, (expose, ports)
version = re.search(r"project\(govd VERSION (\S+)", open("CMakeLists.txt").read()).group(1)
assert c["image"] == f"govd:{version}", (c["image"], version)
ign = open(".dockerignore").read().split()
assert ".git" in ign and any(i.startswith("build") for i in ign), ign
print(f"Dockerfile: {len(froms)} stages on {', '.join(froms)}; {len(deps)} build dependencies; "
      f"EXPOSE {expose[0]}; image govd:{version}")
PY
echo "dockerfile: ok"
