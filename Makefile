# Strata developer tasks. `make test` is what CI (.ci/run) runs.

SHELL := /bin/bash

# Go may live in /usr/local/go without being on PATH.
export PATH := /usr/local/go/bin:$(PATH)

GO ?= go
# Written by scripts/setup-tools.sh: exports STRATA_LLVM_BIN, STRATA_PTXAS and
# a PATH with LLVM's bin directory, for the lit tests under test/.
TOOLS_ENV := .cache/tools/env.sh

.PHONY: all tools test test-long race gc-stress fmt-check vet tidy-check build fuzz docs bench bench-gpu perf-doc

all: build

tools:
	@bash scripts/setup-tools.sh

# A package's tests may take minutes on a loaded 2-core machine (passes/togpu:
# 6 min under a load of 25); go test's default 10-minute limit per package
# is too close.
test: tools fmt-check vet tidy-check race gc-stress
	. ./$(TOOLS_ENV) && $(GO) test -timeout 30m ./...

# The full test matrices (every flash/mma tiling with every case, every
# row-kernel variant with every shape; internal/testsize), which make test
# samples so that it stays under three minutes on two cores. CI runs it
# where time allows, with make fuzz.
test-long: tools
	. ./$(TOOLS_ENV) && STRATA_TEST_LONG=1 $(GO) test -timeout 60m ./...

# The tests that make contexts and run passes on several goroutines, under
# the race detector (dialects are package-level values shared by contexts).
race:
	$(GO) test -race -run Concurrently ./dialects

# The packages whose tests count device memory that Arrays' cleanups
# return, with the collector at both extremes: off (no cleanup runs unless
# a test collects) and at nearly every allocation (an Array a test drops
# goes at once). A test that leans on when the collector happens to run
# flakes under make test's plain run (session 22: 1 in ~500); here it fails
# every time. (frontend's tests reach 2.8 GB without a collection: left
# to the plain run.)
gc-stress:
	GOGC=off $(GO) test -count=1 ./runtime/exec ./runtime/cuda ./optim
	GOGC=1 $(GO) test -count=1 ./runtime/exec ./runtime/cuda ./optim

fmt-check:
	@bad=$$(find . -name '*.go' -not -path './.*' -not -path '*/testdata/*' -exec gofmt -l {} +); \
	if [ -n "$$bad" ]; then echo "gofmt needed on:"; echo "$$bad"; exit 1; fi

vet:
	$(GO) vet ./...

# go.mod and go.sum are tidy: `go mod tidy` would change nothing.
tidy-check:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run 'go mod tidy'"; exit 1; }

build:
	$(GO) build -o bin/irc ./tools/irc

# Every fuzz target in turn, FUZZTIME each (docs/robustness.md), e.g.
# `make fuzz FUZZTIME=10m` for a long run or `make fuzz FUZZ_TARGETS=sym:FuzzParse`
# for one target. A failing target does not stop the others: the run fails at
# the end, naming them, and each failing input stays in its package's
# testdata/fuzz. A hang fails too (internal/fuzzwatch: 20 s per input).
FUZZTIME ?= 30s
FUZZPARALLEL ?= 1
FUZZMINIMIZE ?= 30s
FUZZ_TARGETS = ir:FuzzParse dialects:FuzzParseVerifyPrint sym:FuzzParse dialects/graph:FuzzSymbolicAttributes \
	tools/irc/ircmain:FuzzPipeline tools/irc/ircmain:FuzzIrc tools/irc/ircmain:FuzzRun runtime/npy:FuzzRead \
	runtime/interp:FuzzInterpret runtime/interp:FuzzMutatedModules nn/safetensors:FuzzParse
fuzz:
	@failed=""; for t in $(FUZZ_TARGETS); do \
		echo "== $$t for $(FUZZTIME)"; \
		$(GO) test ./$${t%%:*} -run '^$$' -fuzz "^$${t##*:}\$$" -fuzztime $(FUZZTIME) \
			-fuzzminimizetime $(FUZZMINIMIZE) -parallel $(FUZZPARALLEL) -timeout 0 || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: failures in:$$failed"; exit 1; fi

docs:
	$(GO) run ./tools/gendocs

bench:
	$(GO) test -run XXX -bench . ./ir/...

# Builds the GPU benchmark suite into .device/ for one device call
# (carry .device, run `bash .device/run-device.sh`); see bench/doc.go.
bench-gpu:
	bash scripts/build-device.sh --bench-only

# Regenerates the GPU section of docs/performance.md and its plot from the
# newest results file.
perf-doc:
	$(GO) run ./bench/cmd/perfdoc $$(ls bench/results/*-h200.json | sort | tail -1)
