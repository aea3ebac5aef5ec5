# goaccel — a Jupyter kernel for Go with Accelerate's notebook workflow.
#
#   make lab    build goaccel, install its kernelspec, open JupyterLab on examples/notebooks
#   make test   everything: Go tests, protocol conformance, notebooks, a real browser
#   make bench  benchmarks beside their peers (ipykernel, Python writers, raw loopback)
#   make fidelity  Go programs run as notebook cells, compared with go run (fidelity/README.md);
#                  FIDELITY_SUITE, FIDELITY_RUN, FIDELITY_J, FIDELITY_TIMEOUT, FIDELITY_DIFF=1,
#                  FIDELITY_LIST=1 select programs and show more; FIDELITY_SESSION=1 runs
#                  them back to back in one engine
#   make gonb-corpus  GoNB's and GoMLX's published notebooks run as they are, cells that
#                  run and outputs that match the saved ones (e2e/gonb_corpus.py;
#                  CORPUS=gonb|gomlx, CORPUS_ARGS=--diff); not part of `make test`
#   make slurm-demo  examples/notebooks/cluster_job.ipynb exported and run as a Slurm job
#               of 2 nodes × 2 processes on the tests' isolated Slurm (e2e/slurm_demo.py)
#   make flake  the timing-sensitive Go and e2e tests FLAKE_N times (20) under full
#               CPU load, with a table of the tests that failed (scripts/flake.sh:
#               FLAKE_PKGS, FLAKE_PYTESTS, FLAKE_LOAD=0); not part of `make test`
#
# Everything outside Go modules (a Python virtualenv with Jupyter and the
# trackers' own packages, Debian's chromium and etcd-server, npm's
# playwright-core) is installed idempotently: under $(CACHE), outside the
# clone, or as Debian packages when missing.

CACHE   ?= $(HOME)/.cache/goaccel
VENV    ?= $(CACHE)/venv
NODEDIR ?= $(CACHE)/node
BIN     := bin/goaccel
GO      ?= go
PY      := $(VENV)/bin/python
export GOACCEL_VENV := $(VENV)

# The kernel loads compiled cells as Go plugins, and a binary that can load
# plugins is linked to resolve every C symbol at start-up (-z now); go-nvml
# leaves NVML's symbols to be resolved when libnvidia-ml is loaded, so such a
# binary would not start on a machine without it. Binaries and test binaries
# are therefore linked with lazy binding. SourceDir tells the kernel where the
# goaccel source it was built from lives (compiled cells are built against it).
# -checklinkname=0 lets gxrt reach the runtime's exit hooks, which keep an
# os.Exit in a package a cell calls from ending the kernel.
LDFLAGS := -checklinkname=0 -extldflags=-Wl,-z,lazy -X github.com/goaccel/goaccel/notebook/build.SourceDir=$(CURDIR)

.PHONY: all build prebuild lab test test-deps notebook-mods go-test e2e browser-test bench fidelity gonb-corpus flake slurm-demo vet fmt-check clean venv browser-deps etcd-deps slurm-deps tcmalloc-deps corpus-deps

all: build

build:
	$(GO) build -ldflags='$(LDFLAGS)' -o $(BIN) ./cmd/kernel

venv:
	@bash scripts/venv.sh "$(VENV)" e2e/requirements.lock

browser-deps:
	@bash scripts/browser.sh "$(NODEDIR)"

etcd-deps:
	@bash scripts/etcd.sh

slurm-deps:
	@bash scripts/slurm.sh

tcmalloc-deps:
	@bash scripts/tcmalloc.sh

# The Shakespeare corpus datasets/shakespeare reads (pinned in e2e/corpus.lock).
corpus-deps:
	@bash scripts/corpus.sh "$(CACHE)/corpora" e2e/corpus.lock

# The modules the example notebooks fetch (%go get lines), so that the
# notebook tests need no network.
notebook-mods:
	@bash scripts/gomods.sh "$(CACHE)/notebook-mods" examples/notebooks/*.ipynb

test-deps: venv browser-deps etcd-deps slurm-deps tcmalloc-deps corpus-deps
	$(GO) mod download
	$(GO) list -m -json all >/dev/null  # the go.mod of every module in the graph: sessions list it offline
	@bash scripts/gomods.sh "$(CACHE)/notebook-mods" examples/notebooks/*.ipynb

lab: build venv tcmalloc-deps corpus-deps
	VIRTUAL_ENV=$(VENV) ./$(BIN) install --sys-prefix
	PATH=$(VENV)/bin:$$PATH $(VENV)/bin/jupyter lab --notebook-dir=examples/notebooks $(if $(filter 0,$(shell id -u)),--allow-root)

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-ed:"; echo "$$out"; exit 1; fi

# The packages cells import, built for plugins ahead of the tests (and of
# the first cell after `make lab`): a cold machine needs tens of seconds for
# them, which no test should spend inside a cell.
prebuild: build
	./$(BIN) prebuild

go-test: build prebuild
	# One package at a time: launch, rendezvous and plugin-building tests are
	# timing-sensitive and share two cores with each other otherwise.
	$(GO) test -p 1 -ldflags='$(LDFLAGS)' -count=1 -timeout 20m ./...

e2e: build prebuild
	cd e2e && $(PY) -m pytest -p no:cacheprovider -q .

slurm-demo: build venv slurm-deps
	cd e2e && $(PY) slurm_demo.py

browser-test: build
	GOACCEL_NODE_DIR=$(NODEDIR) node --test e2e/browser/

test: test-deps vet go-test e2e browser-test

bench: build venv
	bash bench/run.sh

fidelity:
	$(GO) build -o bin/fidelity ./fidelity/cmd/fidelity
	$(GO) build -ldflags='$(LDFLAGS)' -o bin/runcell ./fidelity/cmd/runcell
	./bin/fidelity -runcell bin/runcell

CORPUS ?= all
gonb-corpus: build prebuild venv browser-deps
	$(PY) e2e/gonb_corpus.py --corpus $(CORPUS) $(CORPUS_ARGS)

flake: venv
	@GO='$(GO)' MAKE='$(MAKE)' PY='$(PY)' LDFLAGS='$(LDFLAGS)' bash scripts/flake.sh

clean:
	rm -rf bin e2e/artifacts
