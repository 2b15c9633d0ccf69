# berth — make targets. Every tool runs through the Go module proxy at a
# pinned version; nothing is downloaded from anywhere else.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

MODULE          := github.com/berthdev/berth
CONTROLLER_GEN  := go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.19.0
CODEGEN_VERSION := v0.34.4
CLIENT_GEN      := go run k8s.io/code-generator/cmd/client-gen@$(CODEGEN_VERSION)
LISTER_GEN      := go run k8s.io/code-generator/cmd/lister-gen@$(CODEGEN_VERSION)
INFORMER_GEN    := go run k8s.io/code-generator/cmd/informer-gen@$(CODEGEN_VERSION)
BOILERPLATE     := hack/boilerplate.go.txt
API_PKG         := $(MODULE)/api/v1beta1
CLIENT_PKG      := $(MODULE)/api/client

.PHONY: all
all: build

.PHONY: build
build: ## Build every command into bin/.
	go build -o bin/ ./cmd/...

.PHONY: generate
generate: generate-deepcopy generate-crds generate-client ## Regenerate deepcopy, CRDs and the clientset.

.PHONY: generate-deepcopy
generate-deepcopy:
	$(CONTROLLER_GEN) object:headerFile=$(BOILERPLATE) paths=./api/...

.PHONY: generate-crds
generate-crds:
	rm -rf deploy/crds && mkdir -p deploy/crds
	# maxDescLen=0: InferenceService inlines several pod specs; with field
	# descriptions the CRD passes the 1.5 MiB etcd object limit. The API is
	# documented in docs/api.md and the Go types.
	$(CONTROLLER_GEN) crd:maxDescLen=0 paths=./api/... output:crd:dir=deploy/crds
	./hack/kustomize-crds.sh deploy/crds

.PHONY: generate-client
generate-client:
	rm -rf api/client
	$(CLIENT_GEN) --go-header-file $(BOILERPLATE) --clientset-name versioned \
	  --input-base $(MODULE) --input api/v1beta1 \
	  --output-dir api/client/clientset --output-pkg $(CLIENT_PKG)/clientset
	$(LISTER_GEN) --go-header-file $(BOILERPLATE) \
	  --output-dir api/client/listers --output-pkg $(CLIENT_PKG)/listers $(API_PKG)
	$(INFORMER_GEN) --go-header-file $(BOILERPLATE) \
	  --versioned-clientset-package $(CLIENT_PKG)/clientset/versioned \
	  --listers-package $(CLIENT_PKG)/listers \
	  --output-dir api/client/informers --output-pkg $(CLIENT_PKG)/informers $(API_PKG)

.PHONY: verify
verify: ## Fail when generated files are stale or code is unformatted.
	$(MAKE) generate
	@if [ -n "$$(git status --porcelain -- api deploy/crds)" ]; then \
	  echo "generated files are stale; run 'make generate' and commit:"; \
	  git status --porcelain -- api deploy/crds; git --no-pager diff --stat -- api deploy/crds; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...

.PHONY: test-unit
test-unit: ## Unit tests of the pure packages (no control plane).
	go test ./api/... ./selection/... ./merge/... ./certs/... ./deploy/... ./webhook/...

.PHONY: test
test: ## Everything: unit tests and the e2e suite against a real control plane.
	go test ./...

.PHONY: help
help:
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "%-14s %s\n", $$1, $$2}'
