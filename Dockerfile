# govd's container image: the Debian package built from this tree, installed
# on Debian 12 slim. The DaemonSet (configs/k8s/govd-daemonset.yaml) runs it
# as govd:0.1.0:
#   docker build -t govd:0.1.0 .        (or: buildah bud -t govd:0.1.0 .)
# NVML is not in the image: the NVIDIA container runtime mounts the node
# driver's libnvidia-ml.so.1 (NVIDIA_DRIVER_CAPABILITIES=utility), which
# govd loads at run time. Checked by tests/integration/dockerfile.sh (a
# linter, and this file against debian/control and the package's files);
# not built here (no container engine on the test machines).

# ---- build: the same package tools/test-package builds and checks ----
FROM debian:bookworm AS build
# debian/control's Build-Depends, and dpkg-buildpackage's own tools
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential dpkg-dev debhelper cmake pkg-config \
      libyaml-dev libjansson-dev libcurl4-openssl-dev libmicrohttpd-dev \
      libsystemd-dev libsodium-dev libmodbus-dev libgpiod-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src/govd
COPY . .
RUN dpkg-buildpackage -us -uc -b -j"$(nproc)" \
 && mkdir /deb && mv /src/govd_*.deb /deb/

# ---- run: the package and what it depends on, nothing else ----
FROM debian:bookworm-slim
COPY --from=build /deb/ /tmp/deb/
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends /tmp/deb/govd_*.deb \
 && rm -rf /var/lib/apt/lists/* /tmp/deb
# govd restores every device on SIGTERM (the pod's termination grace)
STOPSIGNAL SIGTERM
# the metrics endpoint the Service and ServiceMonitor scrape
EXPOSE 9464/tcp
ENTRYPOINT ["/usr/bin/govd"]
CMD ["--config", "/etc/govd/govd.yaml"]
