# nfbo: the two commands of the quick start are `make run` and `make test`;
# each does all the set-up it needs (scripts/setup.sh) first.

GO        ?= go
BIN       := bin/nfbo
RUN_DIR   ?= runs/quickstart
BENCHTIME ?= 1x
# The commit `nfbo version` and run.json name when the toolchain records none (GOFLAGS=-buildvcs=false).
COMMIT    := $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +)
LDFLAGS   := -X github.com/nfbo/nfbo/internal/buildinfo.commit=$(COMMIT)
# Packages whose numerics go through BLAS, tested on both BLAS builds.
BLAS_PKGS := ./engine/train ./engine/seqflow ./bo/gp ./kernels
# staticcheck, pinned, fetched through the module proxy like the module's own dependencies: release 2025.1.1,
# named by its module version (the proxy no longer answers for the release name).
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.6.1

.PHONY: all setup setup-test build run test test-main test-builds test-long test-short vet fmt bench build-openblas build-purego clean

all: build

# setup is idempotent and silent when everything is installed.
setup:
	@scripts/setup.sh

# setup-test also installs what only the tests need (chromium, for the HTML report's test).
setup-test:
	@scripts/setup.sh --test

# build links gonum and gorgonia against OpenBLAS when it is installed (setup
# installs libopenblas-dev): faster training and fine-tuning steps
# (BENCHMARKS.md, "BLAS of the default build"). Without it, or with PUREGO=1,
# the pure-Go build, which always builds.
build: setup
	@if [ -z "$(PUREGO)" ] && [ "$$(gcc -print-file-name=libopenblas.so 2>/dev/null)" != libopenblas.so ]; then \
		echo "CGO_LDFLAGS=-lopenblas $(GO) build -tags openblas -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/nfbo"; \
		CGO_LDFLAGS=-lopenblas $(GO) build -tags openblas -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/nfbo; \
	else \
		echo "$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/nfbo  (pure-Go BLAS)"; \
		$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/nfbo; \
	fi

# build-openblas insists on OpenBLAS; build-purego on pure Go.
build-openblas: setup
	CGO_LDFLAGS=-lopenblas $(GO) build -tags openblas -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/nfbo

build-purego: setup
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/nfbo

# run does the main job on the shipped defaults: see scripts/run.sh.
run: build
	@scripts/run.sh $(BIN) $(RUN_DIR)

# vet: go vet, gofmt and staticcheck (unused code, ignored values, error strings and the rest of its defaults).
vet:
	$(GO) vet ./...
	$(STATICCHECK) ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# test runs every package (test-main) and, beside it, test-builds: the optimiser fuzzed with 400 inputs of adversarial
# scores (a count, since a -fuzztime duration races the fuzz workers' shutdown in Go 1.26, golang/go#75804, and
# fails a loaded machine's run with "context deadline exceeded" and no failing input), the GPU packages without cgo,
# the packages with assembly again without it (-tags purego: kernels' Go micro-kernel and scalar math, the BLAS for
# the flow's products), then the packages whose numerics go through BLAS again on OpenBLAS, the build's default
# (with CI=true OpenBLAS must be there). The two run at once: test-main's longest package (cmd/nfbo) waits on child
# processes much of its time. The builds' reruns skip TestGradientCheck, gorgonia's float64 gradients against
# finite differences, which no build tag changes.
test: setup-test vet
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-main test-builds

test-main:
	$(GO) test -count=1 -timeout 60m ./...

test-builds:
	$(GO) test -run '^$$' -fuzz FuzzAdversarialScores -fuzztime 400x ./bo
	CGO_ENABLED=0 $(GO) test -count=1 ./engine/cuda ./engine/gpuflow ./engine/gpustep
	$(GO) test -count=1 -skip TestGradientCheck -tags purego ./kernels ./model ./engine/train
	CGO_ENABLED=0 $(GO) test -count=1 -run CUDA ./engine/seqflow
	@if [ "$$(gcc -print-file-name=libopenblas.so 2>/dev/null)" != libopenblas.so ]; then \
		echo "CGO_LDFLAGS=-lopenblas $(GO) test -count=1 -skip TestGradientCheck -tags openblas $(BLAS_PKGS)"; \
		CGO_LDFLAGS=-lopenblas $(GO) test -count=1 -skip TestGradientCheck -tags openblas $(BLAS_PKGS); \
	elif [ "$(CI)" = true ]; then \
		echo "OpenBLAS (libopenblas-dev) is missing"; exit 1; \
	else \
		echo "OpenBLAS is missing: the OpenBLAS build is not tested"; \
	fi

# The data-set tests in full (chemtest.LongEnv): make test reads a sample of each set. CI runs both.
test-long: setup-test
	NFBO_LONG_TESTS=1 $(GO) test -count=1 -timeout 30m -run 'TestScoreCmdGuacaMol10k|TestRoundTripDatasets|TestIdentityRDKit' ./cmd/nfbo ./chem/selfies ./chem/molseq

test-short: setup
	$(GO) test -short ./...

bench: setup
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./...

clean:
	rm -rf bin runs
