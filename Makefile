# PacketFS operator and data plane.
# Run `make help` for the targets.

# The release's version lives in VERSION (hack/dist.sh checks the chart and
# the Python package carry the same; make set-version writes them all).
VERSION ?= $(shell cat $(CURDIR)/VERSION)
IMG ?= packetfs.io/operator:v$(VERSION)
DATAPLANE_IMG ?= packetfs.io/dataplane:v$(VERSION)

# Tools are pinned, built once per version into TOOLS_CACHE (outside the
# repo, beside the cluster's cached parts, so a fresh clone reuses them) and
# linked into ./bin under the same versioned names.
LOCALBIN ?= $(shell pwd)/bin
PFS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/packetfs
TOOLS_CACHE ?= $(PFS_CACHE)/tools/bin
CONTROLLER_TOOLS_VERSION ?= v0.19.0
# The binary name carries the version, so bumping the pin reinstalls it.
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
# helm, built from the Go module proxy (helm.sh/helm/v3) at this version.
HELM_VERSION ?= v3.19.0
HELM ?= $(LOCALBIN)/helm-$(HELM_VERSION)
# The ldflags helm's own Makefile sets: its version, and the Kubernetes version
# `helm template` and `helm lint` assume without a cluster (helm v3.19 is built
# against client-go v0.34, i.e. Kubernetes 1.34; `go install` alone leaves 1.20).
HELM_LDFLAGS ?= -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
  -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=34 \
  -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=34
# golangci-lint with kube-api-linter compiled in as a module plugin, built
# from hack/tools/golangci-lint: its go.mod pins both versions (bump them
# there; the binary's name carries both, so a bump rebuilds it). This is
# what `golangci-lint custom` builds, without the git clone of golangci-lint
# that `custom` starts with (only the Go module proxy is reachable here).
GOLANGCI_LINT_DIR := hack/tools/golangci-lint
GOLANGCI_LINT_VERSION := $(shell awk '$$1 == "github.com/golangci/golangci-lint/v2" {print $$2}' $(GOLANGCI_LINT_DIR)/go.mod)
KUBE_API_LINTER_VERSION := $(shell awk '$$1 == "sigs.k8s.io/kube-api-linter" {print $$2}' $(GOLANGCI_LINT_DIR)/go.mod)
# The name also carries a hash of go.sum and main.go: the cache outlives a checkout.
GOLANGCI_LINT_HASH := $(shell cat $(GOLANGCI_LINT_DIR)/go.sum $(GOLANGCI_LINT_DIR)/main.go | sha256sum | cut -c1-8)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)-kal-$(lastword $(subst -, ,$(KUBE_API_LINTER_VERSION)))-$(GOLANGCI_LINT_HASH)
# The Helm chart; its crds/ and files/manager-role.yaml are copies of generated files.
CHART_DIR ?= charts/packetfs-operator
# Everything a generator or go mod tidy writes (verify checks it is current).
GENERATED ?= 'api/*zz_generated.*.go' internal/result/zz_generated.result.go config/crd/bases config/rbac/role.yaml config/webhook \
  $(CHART_DIR)/crds $(CHART_DIR)/files/manager-role.yaml go.mod go.sum $(GOLANGCI_LINT_DIR)/go.mod $(GOLANGCI_LINT_DIR)/go.sum
# Kubernetes version of the binaries envtest runs (built from source, cached
# outside the repo by hack/k8s-binaries.sh).
K8S_VERSION ?= v1.34.4
export K8S_VERSION

GO ?= go
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

.PHONY: deps
deps: ## Install the OS packages and tools the build and tests need (idempotent).
	hack/install-deps.sh

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs and RBAC from the Go markers (and their copies in the Helm chart).
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases
	@$(MAKE) --no-print-directory helm-crds helm-rbac

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods, and internal/result's structs from the pfs result schema (dataplane/include/pfs/result.schema.json).
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."
	$(GO) generate ./internal/result/...

.PHONY: fmt
fmt: ## Run go fmt.
	$(GO) fmt ./...

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

.PHONY: lint
lint: lint-go lint-c ## Run the linters: Go (lint-go) and C (lint-c).

.PHONY: lint-c
lint-c: ## Check the data plane's C sources against its .clang-format (make -C dataplane format fixes them).
	$(MAKE) -C dataplane lint

.PHONY: lint-go
lint-go: vet golangci-lint ## Lint the Go code: go vet, golangci-lint (.golangci.yml; kube-api-linter on api/), gofmt, an SPDX line in every Go file, script and sample.
	$(GOLANGCI_LINT) run ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	@out=$$(for f in $$(git ls-files '*.go' '*.sh' 'hack/*' 'config/samples/*' ':!*go.sum'); do head -n 5 "$$f" | grep -q 'SPDX-License-Identifier' || echo "$$f"; done); \
	  if [ -n "$$out" ]; then echo "no SPDX-License-Identifier line in: $$out"; exit 1; fi

.PHONY: test
test: deps hugepage-1g cluster-prebuild lint verify test-go test-chart helm-lint test-dataplane test-dataplane-asan hugepage-1g-release test-python test-bench-report test-e2e test-registry test-dist ## Run all tests: lint and verify first, then Go unit + envtest, Helm chart (lint and template tests), data plane, the Python client, end-to-end on kind (whose cluster's parts build in the background meanwhile), pfs against a real OCI registry, the release artifacts (make dist) checked and published to one.

# One 1 GiB hugepage for tests/test_blob, taken before the builds fragment
# memory and given back after the data-plane tests (hack/hugepage-1g.sh).
.PHONY: hugepage-1g hugepage-1g-release
hugepage-1g:
	hack/hugepage-1g.sh reserve
hugepage-1g-release:
	hack/hugepage-1g.sh release

.PHONY: test-registry
test-registry: pfs ## pfs blob create --source-oci against a real OCI registry (distribution, oras; built by the background prebuild): artifacts, an image's tar layers, Basic auth (hack/oci/smoke.sh).
	hack/oci/smoke.sh $(CURDIR)/dataplane/build/pfs

.PHONY: test-go
test-go: manifests generate envtest-assets pfs ## Run Go unit and envtest integration tests (real kube-apiserver and etcd), and the pod/CLI contract test.
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" PFS_BIN="$(CURDIR)/dataplane/build/pfs" \
	  $(GO) test ./... -count=1 $(GOTESTFLAGS)

# The second minor of kube-apiserver the envtest suites run against (make
# test-compat; docs/guides/install.md#compatibility); any tag of
# k8s.io/kubernetes that the Go module proxy serves works here.
COMPAT_K8S_VERSION ?= v1.35.4

.PHONY: test-compat
test-compat: manifests generate pfs ## Run the envtest suites (API validation, controllers, the manager binary, uninstall, the contract) against kube-apiserver $(COMPAT_K8S_VERSION), a second minor built once from source and cached; outside make test (its cold build does not fit the cold budget).
	KUBEBUILDER_ASSETS="$$(env -u KUBEBUILDER_ASSETS K8S_VERSION=$(COMPAT_K8S_VERSION) hack/envtest-assets.sh)" \
	  PFS_BIN="$(CURDIR)/dataplane/build/pfs" $(GO) test ./test/integration/... -count=1 $(GOTESTFLAGS)

.PHONY: envtest-assets
envtest-assets: ## Build (or reuse) kube-apiserver, kubectl and etcd for envtest; honours KUBEBUILDER_ASSETS.
	@hack/envtest-assets.sh >/dev/null

# verify compares the generated files before and after regenerating them,
# tracked and untracked alike (git ls-files -co), so it works in a fresh
# clone (CI) and in a tree with uncommitted edits, where it fails only when
# the edits left a generated file stale. Then no data-plane library file may
# include a header of a higher layer (dataplane/scripts/check-layers.sh).
.PHONY: verify
verify: controller-gen ## Regenerate deepcopy, the result structs, CRDs, RBAC, the chart's copies and go.mod/go.sum (here and in the lint tool), and fail if that changed anything; then check the data plane's layers, the maps and the links.
	@before=$$(mktemp -d); trap 'rm -rf "$$before"' EXIT; \
	  list() { git ls-files -co --exclude-standard -- $(GENERATED) | sort -u | while read -r f; do [ ! -e "$$f" ] || echo "$$f"; done; }; \
	  list > "$$before/.files"; tar -cf - -T "$$before/.files" | tar -xf - -C "$$before"; \
	  $(MAKE) --no-print-directory manifests generate; \
	  $(GO) mod tidy; $(GO) -C $(GOLANGCI_LINT_DIR) mod tidy; \
	  changed=$$(list | while read -r f; do cmp -s "$$f" "$$before/$$f" || echo "$$f"; done; \
	    list | comm -13 - "$$before/.files"); \
	  if [ -n "$$changed" ]; then \
	    echo "verify: these generated files were out of date and have been regenerated:"; echo "$$changed" | sed 's/^/  /'; \
	    { for f in $$changed; do diff -u "$$before/$$f" "$$f" 2>/dev/null || true; done; } | head -n 200 || true; \
	    echo "verify: run 'make manifests generate', 'go mod tidy' and 'go -C $(GOLANGCI_LINT_DIR) mod tidy', then commit the result"; exit 1; fi; \
	  echo "verify: generated files are up to date"
	@$(MAKE) --no-print-directory -C dataplane check-layers
	@$(MAKE) --no-print-directory -C dataplane check-cli
	@hack/check-maps.sh
	@hack/check-links.sh

# The maps name every source file, and every local link resolves; both run in verify.
.PHONY: check-maps check-links
check-maps: ## Fail when dataplane/README.md misses a file of src/, tools/pfs/ or include/pfs/, or docs/design/architecture.md a Go package.
	@hack/check-maps.sh
check-links: ## Fail when a markdown link in the docs, or a docs/ path anywhere in the tree, names no file or heading.
	@hack/check-links.sh

# KEEP_CLUSTER=1 keeps a cluster test-e2e brought up; one that was running already is always kept.
# E2E_NODES: the e2e cluster has 3 nodes so a blob fans out origin -> relay -> relay.
E2E_NODES ?= 3
.PHONY: test-e2e
test-e2e: images helm dist ## Run the end-to-end tests on a throwaway E2E_NODES-node kind cluster (brought up if absent, then torn down again), the chart installed from a registry holding make dist's release (E2E_INSTALL=local: the chart directory and side-loaded images); docs/guides/e2e.md.
	@hack/kind/prebuild.sh wait
	NODES=$(E2E_NODES) HELM=$(HELM) IMAGE_ARCHIVES=$(IMAGE_ARCHIVES) DATAPLANE_IMG=$(DATAPLANE_IMG) IMG=$(IMG) E2E_DIST=$(DIST) \
	  $(GO) test -tags e2e ./test/e2e/... -count=1 -v -timeout 80m $(GOTESTFLAGS)

# SOAK: how long make soak repeats its rounds (a Go duration); SOAK_TIMEOUT
# bounds the whole run (cluster, install and blob included).
SOAK ?= 30m
SOAK_TIMEOUT ?= 90m
.PHONY: soak
soak: images helm ## The e2e soak alone for SOAK (default 30m) on the throwaway cluster: helm install, the e2e blob, rounds of transfers and consumers, then nothing may have grown (docs/guides/e2e.md); needs root.
	@hack/kind/prebuild.sh start
	$(MAKE) test-e2e E2E_SOAK=$(SOAK) \
	  GOTESTFLAGS='-timeout $(SOAK_TIMEOUT) -run "TestE2E/(helm_install|PfsBlob_Ready_with_one|soak|helm_uninstall)"'

##@ Helm chart

.PHONY: helm-crds
helm-crds: ## Copy config/crd/bases/*.yaml into the chart's crds/ (run by manifests; verify catches drift).
	@mkdir -p $(CHART_DIR)/crds
	@rm -f $(CHART_DIR)/crds/*.yaml
	cp config/crd/bases/*.yaml $(CHART_DIR)/crds/

.PHONY: helm-rbac
helm-rbac: ## Copy config/rbac/role.yaml into the chart (files/manager-role.yaml, read by the ClusterRole template; run by manifests).
	@mkdir -p $(CHART_DIR)/files
	cp config/rbac/role.yaml $(CHART_DIR)/files/manager-role.yaml

.PHONY: helm-lint
helm-lint: helm ## Lint the chart strictly (defaults and a values file with every option set).
	$(HELM) lint --strict $(CHART_DIR)
	@# helm lint cannot pretend Multus is installed (no --api-versions), so the
	@# data networks are left out here; test-chart renders them.
	$(HELM) lint --strict $(CHART_DIR) --values test/chart/testdata/full-values.yaml --set-json 'dataNetworks=[]'

.PHONY: test-chart
test-chart: helm ## Render the chart with several value sets and check the objects (Go, build tag chart).
	HELM=$(HELM) $(GO) test -tags chart ./test/chart/... -count=1 $(GOTESTFLAGS)

##@ Data plane

.PHONY: dataplane
dataplane: ## Build the C data plane (pfs CLI, libpfs, tests).
	$(MAKE) -C dataplane

.PHONY: dataplane-image-files
dataplane-image-files:
	$(MAKE) -C dataplane image-files

.PHONY: pfs
pfs: ## Build only the static pfs CLI (the operator's contract test runs it).
	$(MAKE) -C dataplane build/pfs

.PHONY: test-dataplane
test-dataplane: ## Run the data plane TAP tests.
	$(MAKE) -C dataplane test

.PHONY: test-dataplane-asan
test-dataplane-asan: ## Run the data plane TAP tests built with ASan+UBSan against an ASan pfs.
	$(MAKE) -C dataplane test-asan

# The Python client (dataplane/python, package packetfs) against a real
# `pfs blob serve`, in a venv outside the repo with the pinned test
# requirements (hack/python-venv.sh). Root: blobs in /dev/shm, a private
# hugetlbfs mount for the 2 MiB tests, a second uid for the socket's mode.
PYTHON ?= python3
PYTEST_FLAGS ?=
.PHONY: test-python
test-python: pfs ## Run the Python client's tests (pytest) against a real pfs blob serve; real weights from PyPI (silero-vad); needs root.
	@[ "$$(id -u)" -eq 0 ] || { echo "test-python: run as root (blob holders, hugetlbfs, a second uid)" >&2; exit 1; }
	@venv=$$(PYTHON=$(PYTHON) hack/python-venv.sh dataplane/python/requirements-test.txt); \
	  cd dataplane/python && PFS="$(CURDIR)/dataplane/build/pfs" "$$venv/bin/python" -m pytest -p no:cacheprovider $(PYTEST_FLAGS)

# The report of make bench (hack/bench/report.py) on rows its tests write, in a
# venv outside the repo with its pinned requirements; no root. No bytecode, so
# the tree stays clean.
.PHONY: test-bench-report
test-bench-report: ## Run the unit tests of the bench reports (hack/bench/report.py: grouping, limits, CSV, charts; model_volume_report.py); no root.
	@venv=$$(PYTHON=$(PYTHON) hack/python-venv.sh hack/bench/requirements-test.txt); \
	  cd hack/bench && PYTHONDONTWRITEBYTECODE=1 "$$venv/bin/python" -m pytest -p no:cacheprovider $(PYTEST_FLAGS)

##@ Build

.PHONY: build
build: manifests generate ## Build the static manager, device-plugin and CSI node plugin binaries (bin/manager, bin/pfs-device-plugin, bin/pfs-csi-node).
	CGO_ENABLED=0 $(GO) build -o bin/manager ./cmd/manager
	CGO_ENABLED=0 $(GO) build -o bin/pfs-device-plugin ./cmd/device-plugin
	CGO_ENABLED=0 $(GO) build -o bin/pfs-csi-node ./cmd/csi-node

.PHONY: run
run: manifests generate ## Run the manager against the current kubeconfig.
	$(GO) run ./cmd/manager

# Every podman/buildah command of the project reads the project's
# containers.conf (network backend pinned to netavark, ulimits and runtime
# this host needs), never whatever the host or an earlier run left.
export CONTAINERS_CONF := $(CURDIR)/hack/kind/containers.conf

# The engine that builds images: docker when its daemon answers, else buildah,
# else podman (Debian packages). Evaluated only when docker-build runs.
CONTAINER_TOOL ?= $(shell if docker info >/dev/null 2>&1; then echo docker; \
  elif command -v buildah >/dev/null; then echo buildah; elif command -v podman >/dev/null; then echo podman; fi)

.PHONY: docker-build
docker-build: deps build dataplane dataplane-image-files ## Build the operator ($(IMG)) and data-plane ($(DATAPLANE_IMG)) images from the binaries just built; offline.
	@[ -n "$(CONTAINER_TOOL)" ] || { echo "no container engine: start docker, or apt-get install -y buildah"; exit 1; }
	@# A rebuild moves the tag to a new image; the one it leaves untagged
	@# (60+ MB each time for the operator) is removed, and nothing else is.
	@for spec in "$(IMG) Dockerfile ." "$(DATAPLANE_IMG) dataplane/Dockerfile dataplane"; do set -- $$spec; \
	  old=$$($(CONTAINER_TOOL) images -q "$$1" 2>/dev/null | head -1 || true); \
	  echo "$(CONTAINER_TOOL) build -t $$1 -f $$2 $$3"; $(CONTAINER_TOOL) build -t "$$1" -f "$$2" "$$3"; \
	  new=$$($(CONTAINER_TOOL) images -q "$$1" | head -1); \
	  if [ -n "$$old" ] && [ "$$old" != "$$new" ]; then $(CONTAINER_TOOL) rmi "$$old" >/dev/null 2>&1 || true; fi; \
	done

# Image archives (docker-archive format: `ctr images import` and
# `kind load image-archive` read it), written from the images docker-build made.
IMAGE_ARCHIVES ?= $(CURDIR)/bin/images

.PHONY: images
images: docker-build ## Build the operator, data-plane and Python consumer images as archives in $(IMAGE_ARCHIVES) (offline, no registry).
	@mkdir -p $(IMAGE_ARCHIVES)
	hack/images/python-consumer.sh $(IMAGE_ARCHIVES)/python-consumer.tar
	@for pair in "$(IMG) operator" "$(DATAPLANE_IMG) dataplane"; do set -- $$pair; \
	  out=$(IMAGE_ARCHIVES)/$$2.tar; rm -f "$$out"; \
	  case "$(CONTAINER_TOOL)" in \
	    docker) docker save -o "$$out" "$$1" ;; \
	    buildah) buildah push -q "$$1" "docker-archive:$$out:$$1" ;; \
	    podman) podman save -q --format docker-archive -o "$$out" "$$1" ;; \
	  esac; echo "$$out ($$1)"; done

##@ Release

DIST ?= $(CURDIR)/dist

.PHONY: dist
dist: helm docker-build ## Write the release's artifacts to DIST (default ./dist): the chart package, OCI archives of the operator and data-plane images, the packetfs wheel and sdist, SHA256SUMS (hack/dist.sh); VERSION must be the VERSION file's.
	@[ "$(VERSION)" = "$$(cat VERSION)" ] || { echo "dist: VERSION=$(VERSION) but the VERSION file says $$(cat VERSION): run make set-version VERSION=$(VERSION) first"; exit 1; }
	HELM=$(HELM) CONTAINER_TOOL=$(CONTAINER_TOOL) hack/dist.sh build $(DIST)

.PHONY: test-dist
test-dist: dist ## Build the release's artifacts and check them as a user would: sums, helm lint of the package, the wheel in a fresh venv, the images loaded; then publish them to a real registry (distribution over TLS) and pull them back.
	HELM=$(HELM) hack/dist.sh check $(DIST)
	HELM=$(HELM) hack/dist-registry.sh $(DIST)

.PHONY: publish
publish: helm ## Push the artifacts in DIST to REGISTRY (host[:port]): images as REGISTRY/packetfs/{operator,dataplane}:vVERSION, the chart as oci://REGISTRY/packetfs/charts/packetfs-operator (PUBLISH_FLAGS: --ca-file F or --plain-http).
	@[ -n "$(REGISTRY)" ] || { echo "publish: set REGISTRY=host[:port]"; exit 1; }
	HELM=$(HELM) hack/dist.sh publish $(DIST) $(REGISTRY) $(PUBLISH_FLAGS)

.PHONY: set-version
set-version: ## Write VERSION into the VERSION file, the chart (version, appVersion v...) and the Python package.
	hack/dist.sh set-version $(VERSION)

.PHONY: check-consumer-image
check-consumer-image: ## Run the Python consumer image's own python (podman run --rootfs on bin/images/python-consumer.tar) on real model files: safetensors, tokenizers, onnxruntime, numpy; compared with the host.
	@[ -f $(IMAGE_ARCHIVES)/python-consumer.tar ] || hack/images/python-consumer.sh $(IMAGE_ARCHIVES)/python-consumer.tar
	hack/images/python-consumer.sh --check $(IMAGE_ARCHIVES)/python-consumer.tar

##@ Cluster

# A throwaway kind cluster on podman with an offline node image
# (docs/guides/cluster.md): NODES nodes (2 by default; the e2e tests use 3 so a blob
# fans out through a relay). Needs root; everything heavy is cached in
# ~/.cache/packetfs.

.PHONY: cluster-up
cluster-up: ## Bring up (or reuse) the NODES-node (default 2) kind cluster with Multus and the veth data network; prints the KUBECONFIG path.
	hack/cluster-up.sh

.PHONY: cluster-down
cluster-down: ## Delete the kind cluster and restore the host (containers, networks, iptables, hugepages, /lib/modules).
	hack/cluster-down.sh

# make test starts this right after deps: the cluster's parts (Kubernetes
# binaries, Go tools, root filesystems, control-plane and node images, test
# data) build in the background, Go builds at nice 19, while the tests run;
# test-e2e waits for it. Root only (the cluster needs root anyway).
.PHONY: cluster-prebuild
cluster-prebuild: ## Start building the kind cluster's parts in the background (hack/kind/prebuild.sh; test-e2e waits for it).
	@hack/kind/prebuild.sh start

.PHONY: node-image
node-image: ## Build (or reuse) the offline kind node image; prints its tag.
	hack/kind/node-image.sh

.PHONY: kind-load
kind-load: images ## Load the operator and data-plane image archives into the kind cluster's nodes (no pull ever happens).
	hack/kind/load-images.sh $(IMAGE_ARCHIVES)/operator.tar $(IMAGE_ARCHIVES)/dataplane.tar $(IMAGE_ARCHIVES)/python-consumer.tar

.PHONY: demo
demo: deps images helm ## Run the main job: build, cluster-up, load images, helm install, a PfsBlob, PfsTransfers and a PcoreJob; prints kubectl get.
	HELM=$(HELM) IMAGE_ARCHIVES=$(IMAGE_ARCHIVES) DATAPLANE_IMG=$(DATAPLANE_IMG) hack/demo.sh

.PHONY: bench
bench: ## Every data-plane benchmark side by side in one report: docs/bench/benchmarks.md, .csv, docs/bench/img/ charts (BENCH_QUICK=1: a few minutes; BENCH_SUITES to choose); needs root.
	hack/bench/run.sh

.PHONY: bench-cluster
bench-cluster: deps images helm ## The demo's transfers as PfsTransfers on the throwaway cluster beside the same transfers by the bare CLI on a host veth pair: docs/bench/bench-cluster.md (BENCH_QUICK=1: one repetition); needs root.
	HELM=$(HELM) IMAGE_ARCHIVES=$(IMAGE_ARCHIVES) hack/bench/cluster.sh

.PHONY: bench-model-volume
bench-model-volume: deps images helm ## A 418 MiB safetensors model read by pods through a mounted PfsBlob, a cold local disk and the holder's socket, same run: docs/bench/bench-model-volume.md (BENCH_QUICK=1: one repetition); needs root.
	HELM=$(HELM) IMAGE_ARCHIVES=$(IMAGE_ARCHIVES) hack/bench/model_volume.sh

.PHONY: cluster-smoke
cluster-smoke: ## Smoke-test the running cluster: image load, DNS, pods on both nodes, pings over the veth data network.
	hack/kind/smoke.sh

##@ Tools

$(LOCALBIN) $(TOOLS_CACHE):
	mkdir -p $@

# cached-tool <build command writing $$tmp/<name>>: build into the cache
# unless it holds this version already (a temporary directory per build, so
# two checkouts building at once never see half a binary), then link it here.
define cached-tool
	@if [ ! -x $(TOOLS_CACHE)/$(@F) ]; then tmp=$$(mktemp -d $(TOOLS_CACHE)/.build.XXXXXX); trap 'rm -rf "$$tmp"' EXIT; \
	  echo "$(1)"; $(1) && mv "$$tmp/$(2)" $(TOOLS_CACHE)/$(@F); else echo "$(@F): cached in $(TOOLS_CACHE)"; fi
	@ln -sfn $(TOOLS_CACHE)/$(@F) $@
endef

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen into ./bin (built once per version into TOOLS_CACHE).
$(CONTROLLER_GEN): | $(LOCALBIN) $(TOOLS_CACHE)
	$(call cached-tool,GOBIN=$$tmp $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION),controller-gen)

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Build golangci-lint with kube-api-linter into ./bin (from the Go module proxy; versions in $(GOLANGCI_LINT_DIR)/go.mod; cached in TOOLS_CACHE).
$(GOLANGCI_LINT): $(GOLANGCI_LINT_DIR)/go.mod $(GOLANGCI_LINT_DIR)/go.sum $(GOLANGCI_LINT_DIR)/main.go | $(LOCALBIN) $(TOOLS_CACHE)
	$(call cached-tool,$(GO) -C $(GOLANGCI_LINT_DIR) build -buildvcs=false -o $$tmp/golangci-lint .,golangci-lint)

.PHONY: helm
helm: $(HELM) ## Install helm into ./bin (from the Go module proxy; built once per version into TOOLS_CACHE).
$(HELM): | $(LOCALBIN) $(TOOLS_CACHE)
	$(call cached-tool,GOBIN=$$tmp $(GO) install -ldflags '$(HELM_LDFLAGS)' helm.sh/helm/v3/cmd/helm@$(HELM_VERSION),helm)
