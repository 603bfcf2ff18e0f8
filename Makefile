# nfbo: the two commands of the quick start are `make run` and `make test`;
# each does all the set-up it needs (scripts/setup.sh) first.

GO        ?= go
BIN       := bin/nfbo
RUN_DIR   ?= runs/quickstart
BENCHTIME ?= 1x

.PHONY: all setup build run test test-short vet fmt bench build-openblas clean

all: build

# setup is idempotent and silent when everything is installed.
setup:
	@scripts/setup.sh

build: setup
	$(GO) build -o $(BIN) ./cmd/nfbo

# build-openblas links gonum and gorgonia against OpenBLAS (apt-get install
# libopenblas-dev); optional, 2.5-7x faster linear algebra.
build-openblas: setup
	CGO_LDFLAGS=-lopenblas $(GO) build -tags openblas -o $(BIN) ./cmd/nfbo

# run does the main job on the shipped defaults: see scripts/run.sh.
run: build
	@scripts/run.sh $(BIN) $(RUN_DIR)

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

test: setup vet
	$(GO) test -count=1 -timeout 60m ./...

test-short: setup
	$(GO) test -short ./...

bench: setup
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./...

clean:
	rm -rf bin runs
