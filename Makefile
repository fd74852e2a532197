# gpu-exporter build, demo and test targets. `make help` lists them.

GO        ?= go
BIN       := bin/gpu-exporter
PKG       := github.com/gpu-exporter/gpu-exporter
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH    ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
VPKG      := github.com/prometheus/common/version
# Dependencies off the scrape and collection hot paths (Kubernetes, grpc,
# protobuf, YAML, flags, the DCGM and NVML bindings' Go side) compiled
# without inlining: 0.85 MB less binary, so less of it resident on every
# node, and no measurable cost where they run (docs/PERFORMANCE.md). The
# Dockerfile's build passes the same list (tests/deploy checks it).
COLD_PKGS := k8s.io/... sigs.k8s.io/... google.golang.org/... golang.org/x/... go.yaml.in/... gopkg.in/... \
	github.com/json-iterator/... github.com/modern-go/... github.com/fxamacker/... github.com/spf13/... \
	github.com/mwitkow/... github.com/golang-jwt/... github.com/google/... github.com/NVIDIA/... \
	github.com/stretchr/... github.com/davecgh/... github.com/pmezard/...
GCFLAGS   := $(foreach p,$(COLD_PKGS),-gcflags=$(p)=-l)
LDFLAGS   := -s -w -X $(VPKG).Version=$(VERSION) -X $(VPKG).Revision=$(REVISION) -X $(VPKG).Branch=$(BRANCH) -X $(VPKG).BuildUser=gpu-exporter -X $(VPKG).BuildDate=$(shell date -u +%Y%m%d-%H:%M:%S)
DEMO_ADDR ?= 127.0.0.1:9400
SCENARIO  ?= demo
TOOLS_BIN := $(CURDIR)/tests/tools/bin
FUZZTIME  ?= 30s

.PHONY: help build demo test test-short lint vet fmt bench bench-compare load memory soak fuzz chart-sync rules-test dashboards docs e2e tools clean

help: ## List targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## Build bin/gpu-exporter.
	$(GO) build -trimpath $(GCFLAGS) -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gpu-exporter

demo: build ## Run the exporter on the simulator (8 GPUs, simulated kubelet) at http://$(DEMO_ADDR)/metrics.
	@echo ""
	@echo "  gpu-exporter demo: simulated 8-GPU node ($(SCENARIO) scenario) with a simulated kubelet"
	@echo "    metrics:   curl -s http://$(DEMO_ADDR)/metrics | grep ^gpu_"
	@echo "    landing:   http://$(DEMO_ADDR)/"
	@echo "    readiness: http://$(DEMO_ADDR)/readyz"
	@echo "  Ctrl-C stops it."
	@echo ""
	./$(BIN) --source=sim --sim.scenario=$(SCENARIO) --web.listen-address=$(DEMO_ADDR) --collect.interval=2s

test: tools ## Run every test (unit, fake DCGM, end-to-end with real Prometheus tools).
	PATH="$(TOOLS_BIN):$$PATH" $(GO) test -race -timeout 20m ./...
	cd tests/scrapeparse && $(GO) test -race ./...

test-short: ## Unit tests only, no race detector.
	$(GO) test -short ./...

vet: ## go vet.
	$(GO) vet ./...

GOFILES_DIRS := cmd pkg tests etc rules dashboards

fmt: ## Format the code.
	gofmt -w $(GOFILES_DIRS)

lint: vet tools ## gofmt check, go vet and golangci-lint (pinned; gosec, errorlint, promlinter, sloglint).
	@test -z "$$(gofmt -l $(GOFILES_DIRS))" || { echo "gofmt needed:"; gofmt -l $(GOFILES_DIRS); exit 1; }
	$(TOOLS_BIN)/golangci-lint run ./...

bench: ## Benchmarks with their baselines in the same run, then make memory; fails when a target ratio or a memory target is missed.
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./pkg/...
	$(GO) test -count 1 -run TestPerformanceTargets ./pkg/exposition -args -targets
	@$(MAKE) -s memory

BENCHSTAT  := $(TOOLS_BIN)/benchstat
BENCH_BASE ?=
BENCH_COUNT ?= 6

$(BENCHSTAT):
	@$(MAKE) -s -C tests/tools $(BENCHSTAT)

bench-compare: $(BENCHSTAT) ## Benchmarks on BENCH_BASE (default: the merge base with main) and on the working tree, alternating BENCH_COUNT rounds, compared by benchstat.
	$(GO) run ./tests/benchcompare -benchstat $(BENCHSTAT) -count $(BENCH_COUNT) $(if $(BENCH_BASE),-base $(BENCH_BASE))

rules-test: tools ## promtool check and unit tests of the alert and recording rules.
	PATH="$(TOOLS_BIN):$$PATH" $(GO) test -count=1 ./rules/...

dashboards: ## Regenerate dashboards/*.json from the Go code in dashboards/, then copy them into the chart.
	$(GO) run ./dashboards/generate -out dashboards
	@$(MAKE) -s chart-sync

docs: ## Regenerate docs/metrics.md from the field catalog.
	$(GO) test ./cmd/gpu-exporter -run '^TestMetricsDoc$$' -count=1 -update

e2e: tools ## Exporter on sim scenarios + real Prometheus + Alertmanager (about 70 s).
	PATH="$(TOOLS_BIN):$$PATH" $(GO) test -count=1 -v ./tests/e2e/...

load: build ## Bounded loopback load tests on the 64-GPU scenario: 64 scrapers for 10s; then the idle cost, one scraper every 15s at the default 10s interval for 60s (CPU as a fraction of a core).
	$(GO) run ./tests/load -bin $(BIN) -scenario scale-64 -clients 64 -duration 10s
	$(GO) run ./tests/load -bin $(BIN) -scenario scale-64 -clients 1 -scrape-interval 15s -collect-interval 10s -duration 60s

memory: build ## Resident memory and Go heap at start and in steady state under Prometheus-like scraping (gzip, OpenMetrics, every 0.5 s), binary read from disk; 3 runs per scenario, node_exporter as the reference.
	$(MAKE) -s -C tests/tools $(TOOLS_BIN)/node_exporter
	$(GO) run ./tests/memory -bin $(BIN) -scenarios demo,scale-64 -runs 3 -duration 20s -page-cache cold -reference $(TOOLS_BIN)/node_exporter -max-steady-rss demo=30,scale-64=40

soak: ## Long soak: pod churn on every collection for SOAK_DURATION (default 10m), heap must stay flat.
	SOAK_DURATION=$${SOAK_DURATION:-10m} $(GO) test -count 1 -timeout 0 -v -run TestPodChurnKeepsHeapFlat ./tests/soak

fuzz: ## Run each fuzz target for a bounded time.
	$(GO) test -run '^$$' -fuzz '^FuzzParseDeviceID$$' -fuzztime $(FUZZTIME) ./pkg/podresources
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./pkg/sim
	$(GO) test -run '^$$' -fuzz '^FuzzParseCounters$$' -fuzztime $(FUZZTIME) ./pkg/config
	$(GO) test -run '^$$' -fuzz '^FuzzLabelValuesRoundTrip$$' -fuzztime $(FUZZTIME) ./pkg/exposition
	cd tests/scrapeparse && $(GO) test -run '^$$' -fuzz '^FuzzPagesParse$$' -fuzztime $(FUZZTIME) .

GREMLINS         := $(TOOLS_BIN)/gremlins
MUTATION_PKGS    ?=
MUTATION_BASE    ?= $(shell git merge-base HEAD main 2>/dev/null || git merge-base HEAD origin/main 2>/dev/null)

$(GREMLINS):
	@$(MAKE) -s -C tests/tools $(GREMLINS)

.PHONY: mutation mutation-diff
mutation: $(GREMLINS) tools ## Mutation testing: gremlins over every package with logic, one at a time (hours on two cores), results into docs/testing.md; then every alert's thresholds and `for` mutated against the promtool cases. MUTATION_PKGS=./pkg/a,./pkg/b narrows it.
	$(GO) run ./tests/mutation -gremlins $(GREMLINS) $(if $(MUTATION_PKGS),-packages $(MUTATION_PKGS))
	PATH="$(TOOLS_BIN):$$PATH" $(GO) test -count=1 -timeout 60m -run '^TestAlertMutantsKilled$$' ./rules -args -mutation

mutation-diff: $(GREMLINS) ## Mutation testing of the lines changed since MUTATION_BASE (default: the merge base with main), in the packages they touch; fails below 90 % efficacy.
	$(GO) run ./tests/mutation -gremlins $(GREMLINS) -diff $(MUTATION_BASE) -threshold 90

CHART_FILES := deployment/helm/gpu-exporter/files

chart-sync: ## Copy rules/ and dashboards/ into the Helm chart (Helm reads only files inside a chart).
	@mkdir -p $(CHART_FILES)/rules $(CHART_FILES)/dashboards
	@rm -f $(CHART_FILES)/rules/*.yaml $(CHART_FILES)/dashboards/*.json
	@for f in $$(grep -l '^groups:' rules/*.yaml 2>/dev/null); do cp $$f $(CHART_FILES)/rules/; done
	@for f in dashboards/*.json; do if [ -e "$$f" ]; then cp $$f $(CHART_FILES)/dashboards/; fi; done
	@rm -f $(CHART_FILES)/dashboards/*/*.json
	@for f in dashboards/*/*.json; do if [ -e "$$f" ]; then mkdir -p $(CHART_FILES)/$$(dirname $$f) && cp $$f $(CHART_FILES)/$$f; fi; done
	@mkdir -p $(CHART_FILES)/autoscaling && cp deployment/autoscaling/prometheus-adapter-rules.yaml $(CHART_FILES)/autoscaling/ 2>/dev/null || true

tools: ## Build the test tools (prometheus, promtool, alertmanager, helm, kustomize, ...) from pinned Go modules into tests/tools/bin.
	@$(MAKE) -s -C tests/tools

clean: ## Remove build outputs.
	rm -rf bin tests/tools/bin

.PHONY: rules
rules: ## Render rules/alerts.yaml from rules/alerts.src.yaml with the chart's default prometheusRule values, then copy the rules into the chart.
	$(GO) run ./rules/generate -dir rules -values deployment/helm/gpu-exporter/values.yaml
	@$(MAKE) -s chart-sync

.PHONY: generate check-generated
generate: ## Regenerate every generated file: docs/metrics.md, etc/default-counters.csv, docs/scaling.md, rules/alerts.yaml, dashboards and the chart's copies.
	$(GO) test ./cmd/gpu-exporter -run '^TestMetricsDoc$$' -count=1 -update
	$(GO) test ./pkg/config -run '^TestShippedDefaultCountersMatchCatalog$$' -count=1 -update
	$(GO) test ./tests/scaling -run '^TestScalingDoc$$' -count=1 -update
	@$(MAKE) -s rules
	@$(MAKE) -s dashboards

check-generated: generate ## Fail when a generated file differs from what its generator writes (CI runs it).
	@git diff --exit-code --stat -- . || { echo "generated files are stale: run make generate and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- docs etc rules dashboards deployment)" || { echo "make generate wrote untracked files:"; git status --porcelain -- docs etc rules dashboards deployment; exit 1; }

.PHONY: hardware-check hardware-bin
hardware-bin: build ## Build what a bare GPU machine needs for hardware-check (bin/gpu-exporter, bin/hardware-compare); copy bin/ and tests/hardware/ there.
	$(GO) build -trimpath -o bin/hardware-compare ./tests/hardware

hardware-check: ## On a GPU machine, never in CI: run doctor and compare the exporter (NVML, and DCGM where installed) with nvidia-smi; expects bin/gpu-exporter; report under HARDWARE_REPORT_DIR (default bin/hardware-report). Without a GPU: "no GPU: skipped", exit 0.
	tests/hardware/run.sh $(or $(HARDWARE_REPORT_DIR),bin/hardware-report)

# Release: versioned from the newest v* tag (v1.2.3 -> 1.2.3); untagged
# trees get the chart's version with a -dev.g<commit> pre-release suffix.
DIST            ?= dist
CHART_DIR       := deployment/helm/gpu-exporter
CHART_VERSION0  := $(shell sed -n 's/^version: *//p' $(CHART_DIR)/Chart.yaml)
RELEASE_VERSION ?= $(shell v=$$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null) && echo $${v\#v} || echo $(CHART_VERSION0)-dev.g$$(git rev-parse --short HEAD 2>/dev/null || echo unknown))
RELEASE_ARCHES  ?= amd64 arm64
# go-dcgm and go-nvml need cgo; arm64 is cross-compiled with Debian's
# gcc-aarch64-linux-gnu (the binaries dlopen libdcgm/libnvidia-ml, so no
# target libraries are needed at link time, only the target's libc).
CC_amd64        ?= gcc
CC_arm64        ?= aarch64-linux-gnu-gcc
RELEASE_LDFLAGS := -s -w -X $(VPKG).Version=$(RELEASE_VERSION) -X $(VPKG).Revision=$(REVISION) -X $(VPKG).Branch=$(BRANCH) -X $(VPKG).BuildUser=gpu-exporter -X $(VPKG).BuildDate=$(shell date -u +%Y%m%d-%H:%M:%S)

.PHONY: release release-check
release: ## Versioned linux/amd64 and linux/arm64 tarballs (cgo), an SPDX SBOM per binary, the packaged chart, SHA256SUMS, into $(DIST)/.
	@for a in $(RELEASE_ARCHES); do cc=$(CC_amd64); [ $$a = arm64 ] && cc=$(CC_arm64); \
	  command -v $$cc >/dev/null || { echo "release: $$cc not found: linux/$$a needs a C compiler for cgo (Debian: apt-get install gcc-aarch64-linux-gnu)"; exit 1; }; done
	@$(MAKE) -s -C tests/tools $(TOOLS_BIN)/helm
	rm -rf $(DIST) && mkdir -p $(DIST)
	@set -e; for a in $(RELEASE_ARCHES); do \
	  cc=$(CC_amd64); [ $$a = arm64 ] && cc=$(CC_arm64); \
	  d=$(DIST)/gpu-exporter-$(RELEASE_VERSION).linux-$$a; mkdir -p $$d; \
	  echo "  build linux/$$a (CC=$$cc)"; \
	  CGO_ENABLED=1 CGO_CFLAGS='-O2 -g -Wno-deprecated-declarations' GOOS=linux GOARCH=$$a CC=$$cc $(GO) build -trimpath $(GCFLAGS) -ldflags '$(RELEASE_LDFLAGS)' -o $$d/gpu-exporter ./cmd/gpu-exporter; \
	  cp README.md CHANGELOG.md etc/default-counters.csv deployment/systemd/gpu-exporter.service deployment/systemd/gpu-exporter.env $$d/; \
	  $(GO) run ./tests/release/sbom -o $(DIST)/gpu-exporter-$(RELEASE_VERSION).linux-$$a.spdx.json $$d/gpu-exporter; \
	  tar -C $(DIST) --owner=0 --group=0 --numeric-owner --sort=name -czf $$d.tar.gz $$(basename $$d); \
	  rm -rf $$d; \
	done
	$(TOOLS_BIN)/helm package $(CHART_DIR) --version $(RELEASE_VERSION) --app-version $(RELEASE_VERSION) -d $(DIST)
	cd $(DIST) && sha256sum *.tar.gz *.tgz *.spdx.json > SHA256SUMS
	@echo "  $(DIST)/: $$(ls $(DIST) | tr '\n' ' ')"
	@echo "  chart to an OCI registry: helm push $(DIST)/gpu-exporter-$(RELEASE_VERSION).tgz oci://<registry>/<path>"

release-check: tools ## make release here, then check its artifacts: checksums verify, the packaged chart lints, the host's binary runs --version, the arm64 binary is an aarch64 cgo build, the SBOMs list go.mod's modules.
	PATH="$(TOOLS_BIN):$$PATH" RELEASE_CHECK=1 $(GO) test -count=1 -timeout 20m -v -run TestRelease ./tests/release/
