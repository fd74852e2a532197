# syntax=docker/dockerfile:1
#
# gpu-exporter image: `docker build -t gpu-exporter .`
#
# Runtime base: NVIDIA's CUDA *base* image for Ubuntu 24.04. It is the
# smallest image that has both what the exporter loads at run time:
#   - glibc (cgo: go-dcgm dlopens libdcgm.so.4, NVML is libnvidia-ml.so.1);
#     24.04's glibc 2.39 is newer than the builder's (bookworm, 2.36), so
#     the binary's symbol versions resolve;
#   - NVIDIA's CUDA apt repository, already configured with its key, which
#     ships DCGM 4 as datacenter-gpu-manager-4-* packages.
# libnvidia-ml.so.1 and the /dev/nvidia* devices are not in the image: the
# NVIDIA container toolkit injects them from the host's driver (the image's
# NVIDIA_* variables ask it to), so the image works with any driver.
# A distroless or static image cannot dlopen libdcgm; NVIDIA's full DCGM
# image would work too but carries diagnostics we do not need.
# For --source=sim nothing of this is needed; the same image runs it.

ARG GO_VERSION=1.26.8
ARG CUDA_BASE=nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
ARG BRANCH=unknown
# The same version ldflags as the Makefile's LDFLAGS, and its GCFLAGS (the
# dependencies off the hot paths compiled without inlining).
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -trimpath \
      -gcflags=k8s.io/...=-l \
      -gcflags=sigs.k8s.io/...=-l \
      -gcflags=google.golang.org/...=-l \
      -gcflags=golang.org/x/...=-l \
      -gcflags=go.yaml.in/...=-l \
      -gcflags=gopkg.in/...=-l \
      -gcflags=github.com/json-iterator/...=-l \
      -gcflags=github.com/modern-go/...=-l \
      -gcflags=github.com/fxamacker/...=-l \
      -gcflags=github.com/spf13/...=-l \
      -gcflags=github.com/mwitkow/...=-l \
      -gcflags=github.com/golang-jwt/...=-l \
      -gcflags=github.com/google/...=-l \
      -gcflags=github.com/NVIDIA/...=-l \
      -gcflags=github.com/stretchr/...=-l \
      -gcflags=github.com/davecgh/...=-l \
      -gcflags=github.com/pmezard/...=-l \
      -ldflags "-s -w \
        -X github.com/prometheus/common/version.Version=${VERSION} \
        -X github.com/prometheus/common/version.Revision=${REVISION} \
        -X github.com/prometheus/common/version.Branch=${BRANCH} \
        -X github.com/prometheus/common/version.BuildUser=gpu-exporter \
        -X github.com/prometheus/common/version.BuildDate=$(date -u +%Y%m%d-%H:%M:%S)" \
      -o /out/gpu-exporter ./cmd/gpu-exporter \
 && /out/gpu-exporter --version

FROM ${CUDA_BASE} AS runtime
# DCGM 4: -core has libdcgm.so.4 and the hostengine modules; -proprietary
# the closed-source modules, profiling (DCP) fields among them. Pinned to
# the DCGM of the GPU Operator's default standalone hostengine
# (NVIDIA/gpu-operator deployments/gpu-operator/values.yaml, dcgm.version
# 4.6.0-1-ubuntu24.04), so that in remote mode the client library and the
# Operator's nv-hostengine are the same release; docs/deployment.md ("DCGM
# version pairing") says how to change it. Empty: the repository's newest.
ARG DCGM_VERSION=4.6.0-1
RUN set -eux; \
    pin=""; if [ -n "${DCGM_VERSION}" ]; then pin="=1:${DCGM_VERSION}"; fi; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      "datacenter-gpu-manager-4-core${pin}" "datacenter-gpu-manager-4-proprietary${pin}"; \
    rm -rf /var/lib/apt/lists/*; \
    useradd --system --uid 65532 --no-create-home --shell /usr/sbin/nologin gpu-exporter

COPY --from=build /out/gpu-exporter /usr/bin/gpu-exporter
COPY etc/default-counters.csv /etc/gpu-exporter/default-counters.csv

# Ask the NVIDIA container toolkit for every GPU and for NVML (utility);
# compute lets DCGM's profiling module load the CUDA driver library.
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    NVIDIA_DISABLE_REQUIRE=true

ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="gpu-exporter" \
      org.opencontainers.image.description="Prometheus exporter for NVIDIA GPU telemetry with Kubernetes pod attribution" \
      org.opencontainers.image.source="https://github.com/gpu-exporter/gpu-exporter" \
      org.opencontainers.image.url="https://github.com/gpu-exporter/gpu-exporter" \
      org.opencontainers.image.documentation="https://github.com/gpu-exporter/gpu-exporter/blob/main/docs/deployment.md" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"

# Non-root by default. In Kubernetes the chart runs it as uid 0 without
# capabilities, because the kubelet's pod-resources directory is root-only.
USER 65532:65532
EXPOSE 9400
ENTRYPOINT ["/usr/bin/gpu-exporter"]
