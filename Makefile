# berth — make targets. Every tool runs through the Go module proxy at a
# pinned version; nothing is downloaded from anywhere else.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

MODULE          := github.com/berthdev/berth
CONTROLLER_GEN  := go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.20.1
CODEGEN_VERSION := v0.35.3
CLIENT_GEN      := go run k8s.io/code-generator/cmd/client-gen@$(CODEGEN_VERSION)
LISTER_GEN      := go run k8s.io/code-generator/cmd/lister-gen@$(CODEGEN_VERSION)
INFORMER_GEN    := go run k8s.io/code-generator/cmd/informer-gen@$(CODEGEN_VERSION)
BOILERPLATE     := hack/boilerplate.go.txt
API_PKG         := $(MODULE)/api/v1beta1
POLICY_PKG      := $(MODULE)/api/policy/v1alpha1
CLIENT_PKG      := $(MODULE)/api/client

.PHONY: all
all: build

.PHONY: build
build: ## Build every command into bin/.
	go build -o bin/ ./cmd/...

# berth's images (internal/images), built without a Docker daemon: static
# binaries of the commands the images carry (the list is
# internal/images.Images; `go run ./hack/images binaries` prints them), then
# docker-archive tarballs in bin/images/ tagged ghcr.io/berthdev/<name>:$(VERSION)
# and bin/images/index.json. Reproducible: the same commit gives the same
# digests (the images' time is SOURCE_DATE_EPOCH, by default the commit's).
VERSION           := $(shell cat version/VERSION)
REGISTRY          ?= ghcr.io/berthdev
TAG               ?= $(VERSION)
IMAGES_DIR        := bin/images
GIT_REVISION      := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

.PHONY: images
images: ## Build berth's container images into bin/images/ (no Docker).
	@rm -rf $(IMAGES_DIR)/bin && mkdir -p $(IMAGES_DIR)/bin
	bins=$$(go run ./hack/images binaries); \
	  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -buildid=" -o $(IMAGES_DIR)/bin/ $$(printf './cmd/%s ' $$bins)
	go run ./hack/images build -bin $(IMAGES_DIR)/bin -out $(IMAGES_DIR) -revision $(GIT_REVISION) -epoch $(SOURCE_DATE_EPOCH)

.PHONY: push
push: ## Push the images of bin/images/ to REGISTRY with TAG (docker config credentials; no Docker).
	go run ./hack/images push -in $(IMAGES_DIR) -registry $(REGISTRY) -tag $(TAG)

.PHONY: generate
generate: generate-deepcopy generate-crds generate-client generate-gang-crds generate-kueue-crds generate-cert-manager-crds ## Regenerate deepcopy, CRDs, the clientset, the gang-scheduling, Kueue and cert-manager CRDs.

.PHONY: generate-deepcopy
generate-deepcopy:
	$(CONTROLLER_GEN) object:headerFile=$(BOILERPLATE) paths=./api/...

.PHONY: generate-crds
generate-crds:
	rm -rf deploy/crds && mkdir -p deploy/crds
	# Every field description goes in, then hack/crd-docs (internal/crddocs)
	# drops those below the Kubernetes types berth inlines (pod specs,
	# containers, affinities...): with them InferenceService would pass
	# etcd's 1.5 MiB request limit (api/v1beta1/crdsize_test.go). berth's own
	# fields keep their Go doc, for `kubectl explain`.
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  $(CONTROLLER_GEN) crd paths=./api/... output:crd:dir="$$tmp"; \
	  go run ./hack/crd-docs "$$tmp" deploy/crds
	./hack/kustomize-crds.sh deploy/crds

# The PodGroup CRDs the local control plane installs next to berth's (issue
# 13, gang scheduling), compiled into internal/devenv/gang. scheduler-plugins
# ships its CRDs: Coscheduling's PodGroup (manifests/coscheduling) and the
# ElasticQuota its PodGroup controller also watches (manifests/
# capacityscheduling; the controller stops without it). volcano.sh/apis
# ships only Go types: its PodGroup CRD is generated from them, loaded
# through hack/gang-crds (Queue, generated too, is left out).
GANG_CRDS := internal/devenv/gang/crds

.PHONY: generate-gang-crds
generate-gang-crds:
	rm -rf $(GANG_CRDS) && mkdir -p $(GANG_CRDS)
	cd hack/sched-build && go mod download sigs.k8s.io/scheduler-plugins
	sp=$$(cd hack/sched-build && go list -m -f '{{.Dir}}' sigs.k8s.io/scheduler-plugins); \
	  cp "$$sp/manifests/coscheduling/crd.yaml" $(GANG_CRDS)/scheduling.x-k8s.io_podgroups.yaml; \
	  cp "$$sp/manifests/capacityscheduling/crd.yaml" $(GANG_CRDS)/scheduling.x-k8s.io_elasticquotas.yaml
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  (cd hack/gang-crds && $(CONTROLLER_GEN) crd paths=volcano.sh/apis/pkg/apis/scheduling/v1beta1 output:crd:dir="$$tmp"); \
	  cp "$$tmp/scheduling.volcano.sh_podgroups.yaml" $(GANG_CRDS)/
	chmod 644 $(GANG_CRDS)/*.yaml

# Kueue's CRDs for the local control plane's Kueue (internal/devenv/kueue),
# compiled in: the CustomResourceDefinitions of `kubectl kustomize` of
# config/default of the sigs.k8s.io/kueue module hack/kueue-build pins
# (KUEUE_VERSION), as Kueue installs itself (conversion webhooks naming
# kueue-system/kueue-webhook-service), split one per file by
# hack/kueue-build/crds.
KUEUE_CRDS := internal/devenv/kueue/crds

.PHONY: generate-kueue-crds
generate-kueue-crds:
	$(MAKE) --no-print-directory $(K8S_BIN)/kubectl
	rm -rf $(KUEUE_CRDS) && mkdir -p $(KUEUE_CRDS)
	cd hack/kueue-build && go mod download sigs.k8s.io/kueue
	kq=$$(cd hack/kueue-build && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue); \
	  $(K8S_BIN)/kubectl kustomize "$$kq/config/default" | (cd hack/kueue-build && go run ./crds $(CURDIR)/$(KUEUE_CRDS))
	chmod 644 $(KUEUE_CRDS)/*.yaml

# cert-manager's CRDs: the e2e suite installs them to apply the
# cert-manager overlay to a real apiserver. Rendered from the Helm chart's
# CRD templates (deploy/charts/cert-manager/templates/crd-*.yaml) of the
# github.com/cert-manager/cert-manager module go.mod pins, filled as the
# chart does by default.
CERT_MANAGER_CRDS := e2e/testdata/cert-manager-crds

.PHONY: generate-cert-manager-crds
generate-cert-manager-crds:
	rm -rf $(CERT_MANAGER_CRDS) && mkdir -p $(CERT_MANAGER_CRDS)
	go mod download github.com/cert-manager/cert-manager
	go run ./hack/cert-manager-crds "$$(go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)" \
	  "$$(go list -m -f '{{.Version}}' github.com/cert-manager/cert-manager)" $(CERT_MANAGER_CRDS)

.PHONY: generate-client
generate-client:
	rm -rf api/client
	$(CLIENT_GEN) --go-header-file $(BOILERPLATE) --clientset-name versioned \
	  --input-base $(MODULE) --input api/v1beta1 --input api/policy/v1alpha1 \
	  --output-dir api/client/clientset --output-pkg $(CLIENT_PKG)/clientset
	$(LISTER_GEN) --go-header-file $(BOILERPLATE) \
	  --output-dir api/client/listers --output-pkg $(CLIENT_PKG)/listers $(API_PKG) $(POLICY_PKG)
	$(INFORMER_GEN) --go-header-file $(BOILERPLATE) \
	  --versioned-clientset-package $(CLIENT_PKG)/clientset/versioned \
	  --listers-package $(CLIENT_PKG)/listers \
	  --output-dir api/client/informers --output-pkg $(CLIENT_PKG)/informers $(API_PKG) $(POLICY_PKG)

.PHONY: verify
verify: ## Fail when generated files are stale or code is unformatted.
	$(MAKE) generate
	@if [ -n "$$(git status --porcelain -- api deploy/crds $(GANG_CRDS) $(KUEUE_CRDS) $(CERT_MANAGER_CRDS))" ]; then \
	  echo "generated files are stale; run 'make generate' and commit:"; \
	  git status --porcelain -- api deploy/crds $(GANG_CRDS) $(KUEUE_CRDS) $(CERT_MANAGER_CRDS); git --no-pager diff --stat -- api deploy/crds $(GANG_CRDS) $(KUEUE_CRDS) $(CERT_MANAGER_CRDS); exit 1; fi
	$(MAKE) chart
	@if [ -n "$$(git status --porcelain -- $(CHART_DIR))" ]; then \
	  echo "the Helm chart is stale; run 'make chart' and commit:"; \
	  git status --porcelain -- $(CHART_DIR); exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	go vet ./webhook/handlers/testdata/capture # the capture tool of a benchmark's testdata, which ./... leaves out

.PHONY: test-unit
test-unit: ## Unit tests of the pure packages (no control plane).
	go test ./api/... ./selection/... ./merge/... ./policy/... ./gpudiscovery/... ./modelmeta/... ./certs/... ./deploy/... ./webhook/... ./reconcile/... ./internal/hubtest/... ./internal/cli/... ./internal/objects/... ./internal/crddocs/... ./internal/images/... ./internal/testengine/... ./version/... ./cmd/...

.PHONY: test
test: deps images ## Everything: unit tests and the e2e suites against a real control plane (and the real node, where it runs).
	@mkdir -p bin; rc=0; go test -timeout 30m ./... 2>&1 | tee bin/test.log || rc=$$?; \
	if [ $$rc -ne 0 ]; then echo "== make test failed; the failures (whole output in bin/test.log):"; \
	  grep -E -A25 -- '^\s*--- FAIL|^panic:' bin/test.log | grep -v -E '^\s*--- PASS' | head -200; fi; exit $$rc

# --- local control plane: etcd, Kubernetes v1.34.4 built from the Go
# module proxy through hack/kube-build, kwok. Each is built once into a
# versioned folder and reused; internal/devenv/cluster looks for them there
# (or in $BERTH_KUBE_BIN_DIR, next to bin/berth, or in $PATH). berth's own
# k8s.io/* client libraries (go.mod) are v0.35: one minor newer than these
# servers, within Kubernetes' supported version skew.
K8S_VERSION  := v1.34.4
K8S_BIN      := bin/k8s-$(K8S_VERSION)
K8S_LDFLAGS  := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
                -X k8s.io/component-base/version.gitMajor=1 \
                -X k8s.io/component-base/version.gitMinor=34
K8S_CMDS     := kube-apiserver kube-controller-manager kube-scheduler kubectl
# The real node (internal/devenv/node) next to the kwok fleet: kubelet and
# kube-proxy built like the servers, CoreDNS from its Go module, containerd,
# runc and the CNI plugins from Debian.
NODE_CMDS       := kubelet kube-proxy
COREDNS_VERSION := v1.15.0
COREDNS_BIN     := bin/coredns-$(COREDNS_VERSION)
NODE_DEBS       := containerd runc containernetworking-plugins iptables conntrack
KWOK_VERSION := v0.8.0
KWOK_BIN     := bin/kwok-$(KWOK_VERSION)
# helm: renders and installs the chart in deploy/chart/berth (its
# tests and e2e/helm_test.go); built once from the module proxy.
HELM_VERSION := v3.22.0
HELM_BIN     := bin/helm-$(HELM_VERSION)
# scheduler-plugins (gang scheduling): its cmd/scheduler
# (kube-scheduler with the Coscheduling plugin) runs next to kube-scheduler as
# a second scheduler, with its cmd/controller (PodGroup status); built through
# hack/sched-build as scheduler-plugins-scheduler and
# scheduler-plugins-controller (the names of upstream's own deployments).
SCHED_PLUGINS_VERSION := v0.32.7
SCHED_PLUGINS_BIN     := bin/scheduler-plugins-$(SCHED_PLUGINS_VERSION)
SCHED_PLUGINS_CMDS    := scheduler controller
# cert-manager: its controller and CA injector for the e2e
# cert-manager test, built through hack/cert-manager-build from the
# github.com/cert-manager/cert-manager module (upstream's cmd/* modules are
# not served; the wrapper's mains run the served pkg/controller packages).
# The version is the one berth's go.mod pins (its API types and CRDs);
# hack/cert-manager-build/go.mod must pin the same, which the build checks.
CERT_MANAGER_VERSION := $(shell awk '$$1 == "github.com/cert-manager/cert-manager" {print $$2}' go.mod)
CERT_MANAGER_BIN     := bin/cert-manager-$(CERT_MANAGER_VERSION)
CERT_MANAGER_CMDS    := controller cainjector
# Kueue: its controller manager (cmd/kueue) for the e2e tests of the Kueue
# ResourceFlavor sync, built through hack/kueue-build (cmd/kueue brings
# every job framework Kueue integrates; berth's module imports only its API
# types, at the same version). Must match internal/devenv/kueue.Version.
KUEUE_VERSION := v0.17.0
KUEUE_BIN     := bin/kueue-$(KUEUE_VERSION)
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps
deps: deps-etcd deps-node $(addprefix $(K8S_BIN)/,$(K8S_CMDS)) $(KWOK_BIN)/kwok $(addprefix $(SCHED_PLUGINS_BIN)/scheduler-plugins-,$(SCHED_PLUGINS_CMDS)) $(HELM_BIN)/helm $(addprefix $(CERT_MANAGER_BIN)/cert-manager-,$(CERT_MANAGER_CMDS)) $(KUEUE_BIN)/kueue ## Install etcd, build the Kubernetes binaries, kwok, scheduler-plugins, helm, cert-manager and Kueue (only what is missing).

.PHONY: deps-etcd
deps-etcd:
	@command -v etcd >/dev/null || { $(SUDO) apt-get update && $(SUDO) apt-get install -y etcd-server; }

# The real node's parts. Debian's packages only where apt-get can run (root
# or sudo); without them the local control plane runs the kwok fleet alone
# and says why.
.PHONY: deps-node
deps-node: $(addprefix $(K8S_BIN)/,$(NODE_CMDS)) $(COREDNS_BIN)/coredns
	@missing=""; for p in $(NODE_DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] || command -v sudo >/dev/null; then \
	    $(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y $$missing; \
	  else echo "deps-node: cannot install$$missing (not root, no sudo): the real node will not start"; fi; \
	fi

$(COREDNS_BIN)/coredns:
	@mkdir -p $(COREDNS_BIN)
	GOBIN=$(CURDIR)/$(COREDNS_BIN) go install github.com/coredns/coredns@$(COREDNS_VERSION)

# The wrapper module pins k8s.io/kubernetes and its staging modules; a cold
# build of the three servers takes about 9 minutes on 2 cores.
$(K8S_BIN)/%:
	@mkdir -p $(K8S_BIN)
	cd hack/kube-build && go build -ldflags "$(K8S_LDFLAGS)" -o $(CURDIR)/$@ k8s.io/kubernetes/cmd/$*

# The wrapper module pins sigs.k8s.io/scheduler-plugins, k8s.io/kubernetes
# v1.32.7 and its staging modules (scheduler-plugins' own replace block).
# gitVersion is stamped as scheduler-plugins' own Makefile does. A cold build
# of both took 12 minutes on 2 cores busy with other builds (load 10-16;
# module downloads cached): the scheduler 11, then the controller 1.
$(SCHED_PLUGINS_BIN)/scheduler-plugins-%:
	@mkdir -p $(SCHED_PLUGINS_BIN)
	cd hack/sched-build && go build -ldflags "-X k8s.io/component-base/version.gitVersion=$(SCHED_PLUGINS_VERSION)" -o $(CURDIR)/$@ sigs.k8s.io/scheduler-plugins/cmd/$*

# About 21 minutes wall (under 5 CPU-minutes) for both on 2 cores at load 20.
$(CERT_MANAGER_BIN)/cert-manager-%:
	@v=$$(cd hack/cert-manager-build && go list -m -f '{{.Version}}' github.com/cert-manager/cert-manager); \
	  if [ "$$v" != "$(CERT_MANAGER_VERSION)" ]; then \
	    echo "hack/cert-manager-build pins cert-manager $$v, go.mod $(CERT_MANAGER_VERSION): make them the same"; exit 1; fi
	@mkdir -p $(CERT_MANAGER_BIN)
	cd hack/cert-manager-build && go build -o $(CURDIR)/$@ ./$*

# The version is stamped as Kueue's own Makefile does. A cold build (nothing
# of Kueue's k8s.io v0.35 graph in the Go build cache; its modules
# downloaded) took 32 minutes wall, 6.8 CPU-minutes, on 2 cores at a load of
# 30-44; then 1.7 minutes (link only). Go 1.26 builds it (its go.mod asks
# for 1.25).
$(KUEUE_BIN)/kueue:
	@mkdir -p $(KUEUE_BIN)
	cd hack/kueue-build && go build -ldflags "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$(KUEUE_VERSION)" -o $(CURDIR)/$@ sigs.k8s.io/kueue/cmd/kueue

$(KWOK_BIN)/kwok:
	@mkdir -p $(KWOK_BIN)
	GOBIN=$(CURDIR)/$(KWOK_BIN) go install sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)

# A cold build took 15 minutes on 2 cores shared with other builds (3.5
# minutes of CPU).
$(HELM_BIN)/helm:
	@mkdir -p $(HELM_BIN)
	GOBIN=$(CURDIR)/$(HELM_BIN) go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

# The Helm chart's crds/ and templates/*.yaml are generated from the
# kustomize builds of deploy/ (deploy/chart/chartgen); verify fails when
# they are stale, and deploy/chart's tests compare `helm template` with
# `kubectl kustomize` object by object.
CHART_DIR := deploy/chart/berth

.PHONY: chart
chart: $(K8S_BIN)/kubectl ## Regenerate the Helm chart's CRDs and templates from the kustomize manifests.
	go run ./deploy/chart/chartgen -kubectl $(K8S_BIN)/kubectl -deploy deploy -chart $(CHART_DIR)

# bin/berth finds bin/berth-webhook next to itself and the control plane in
# bin/k8s-$(K8S_VERSION) and bin/kwok-$(KWOK_VERSION); nothing is built at run time.
.PHONY: demo
demo: deps build images ## Start a local control plane with a fake GPU fleet, install berth and a sample; Ctrl-C to stop.
	bin/berth demo

.PHONY: up
up: deps build images ## Start a local control plane with the fake GPU fleet, berth's CRDs, webhook and reconciler; Ctrl-C to stop.
	bin/berth up

.PHONY: e2e
e2e: deps ## The e2e suite against a real local control plane.
	go test -count=1 -timeout 20m ./e2e/...

.PHONY: help
help:
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "%-14s %s\n", $$1, $$2}'

# --- fuzzing: every fuzz target of the module, briefly,
# one at a time (go test -fuzz takes one target per package per run). CI
# runs it on every change. A failing input is written to the package's
# testdata/fuzz/<target>/; once fixed, commit it as a regression seed.
FUZZTIME ?= 20s
# FUZZ_SKIP names targets CI does not fuzz, each with its reason:
#   FuzzReloaderRewrite (certs): its workers stall after a few hundred to a
#   few thousand execs (0 execs/s until -fuzztime ends), with and without
#   logging, on Go 1.26 and 1.27; not diagnosed yet (its occasional "context
#   deadline exceeded" was golang/go#75804, see FUZZ_GO). Its
#   seed corpus still runs with every `go test ./certs/`. Run it by hand:
#   go test -run XXX -fuzz '^FuzzReloaderRewrite$$' -fuzztime 60s ./certs/
FUZZ_SKIP ?= FuzzReloaderRewrite
# FUZZ_GO runs the fuzzer on Go 1.27 (fetched from the module proxy as
# golang.org/toolchain): Go 1.26's fuzz coordinator races its own
# -fuzztime deadline and fails a target with a bare "context deadline
# exceeded" and no crasher (golang/go#75804, fixed in 1.27; seen here on
# FuzzModelStorage under load). Builds and tests stay on go.mod's Go.
FUZZ_GO ?= env GOTOOLCHAIN=go1.27.4 go
# FUZZ_CLASSIC_JSON names targets that compare a codec with encoding/json:
# on Go 1.27 encoding/json runs on encoding/json/v2 (GOEXPERIMENT jsonv2 is
# its default), so they are fuzzed with GOEXPERIMENT=nojsonv2, which keeps
# the classic encoding/json (internal/jsoncodec).
FUZZ_CLASSIC_JSON ?= FuzzUnmarshalMatchesEncodingJSON FuzzMarshalMatchesEncodingJSON

# "<package dir> <target>" per line: func Fuzz* in the _test.go files of the
# module's packages (go list leaves out testdata, vendor and nested modules).
FUZZ_LIST := for dir in $$(go list -e -f '{{.Dir}}' ./...); do \
	  rel=.$${dir\#$(CURDIR)}; \
	  for f in "$$dir"/*_test.go; do \
	    if [ -e "$$f" ]; then sed -nE "s|^func (Fuzz[A-Za-z0-9_]+)\(.*|$$rel \1|p" "$$f"; fi; \
	  done; \
	done | LC_ALL=C sort | { grep -vwE '$(subst $(eval) ,|,$(strip $(FUZZ_SKIP)))' || true; }

.PHONY: fuzz
fuzz: ## Fuzz each fuzz target of the module for FUZZTIME (20s), one at a time.
	@targets=$$($(FUZZ_LIST)); \
	if [ -z "$$targets" ]; then echo "fuzz: no fuzz targets found"; exit 1; fi; \
	failed=""; start=$$SECONDS; \
	while read -r pkg name; do \
	  echo "== fuzz $$name in $$pkg for $(FUZZTIME)"; t=$$SECONDS; \
	  fenv=; case " $(FUZZ_CLASSIC_JSON) " in *" $$name "*) fenv=GOEXPERIMENT=nojsonv2;; esac; \
	  env $$fenv $(FUZZ_GO) test -run XXX -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) "$$pkg/" </dev/null || failed="$$failed $$pkg:$$name"; \
	  echo "== $$name: $$((SECONDS - t))s"; \
	done <<< "$$targets"; \
	echo "== fuzz: $$(wc -l <<< "$$targets") targets in $$((SECONDS - start))s"; \
	if [ -n "$$failed" ]; then echo "fuzz: FAILED:$$failed"; exit 1; fi
