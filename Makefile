# One entry point for people and CI. `make setup` gives the tfgen command and helm; `make dev`
# adds the test and lint stack and the Go tools of the tests and docs (`make go-tools`:
# helm-docs, kubeconform, the referees in tests/go/, built with Go); `make demo` runs the main
# jobs on this repository; `make lab` builds and starts the lab, a real control plane on
# loopback (`make lab-down` stops it); `make test` runs the whole test suite, the lab's tests
# included (what .ci/run calls), `make test-fast` every test that needs neither a Go tool, the
# lab nor the package index, with no Go build (the inner loop); `make docs` regenerates the
# chart README's values table; `make example` trains the run-local example of docs/running-experiments.md.
VENV   := .venv
PYTHON ?= python3
BIN    := $(VENV)/bin
HELM   := .tools/helm/v4/helm
GO_TOOLS := .tools/go
HELM_DOCS := $(GO_TOOLS)/helm-docs
# The local run of docs/running-experiments.md, end to end (downloads TensorFlow once, about 600 MB).
EXAMPLE := $(BIN)/tfgen run-local distributed-mnist \
	--command "python examples/mnist/main.py" --keep-args --timeout 600

.PHONY: setup dev go-tools lab-build lab lab-down demo example test test-fast lint docs clean

setup: $(VENV)/.installed $(HELM)

dev: setup $(VENV)/.dev-installed go-tools

$(VENV)/.installed: pyproject.toml
	@echo "setup: creating $(VENV) and installing tfgen with the Kubernetes client (about 320 MB) ..." >&2
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install -e '.[cluster]'
	touch $@

$(VENV)/.dev-installed: $(VENV)/.installed pyproject.toml
	@echo "dev: installing the test and lint stack (pytest, hypothesis, ruff, mypy) ..." >&2
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

# The pinned helm, installed by tfgen itself (`tfgen install-helm`, as in a team repository).
$(HELM): $(VENV)/.installed generator/tfgen/gate/helm/install.py
	$(BIN)/tfgen install-helm

# Always run: a pinned tool already built is kept, and Go's build cache rebuilds a referee in
# tests/go/ only when its sources changed.
go-tools:
	$(PYTHON) scripts/install_go_tools.py $(GO_TOOLS)

# The lab (scripts/lab/): a real control plane on 127.0.0.1 for the tests marked `lab`.
# `lab-build` installs its Debian packages (redis-server) and builds the pinned parts once into
# .tools/lab/ (a part already built at its pinned version is kept: seconds warm, about half an
# hour cold on 2 cores, progress on stderr); `make lab` starts it and returns when it is ready
# (kubeconfig: .lab/kubeconfig); `make lab LAB_CLUSTERS=2` adds a second cluster beside it
# (scripts/lab/clusters.py); `make lab-down` stops every process it started, by PID.
lab-build: $(VENV)/.installed
	$(BIN)/python scripts/lab build

LAB_CLUSTERS ?= 1
lab: lab-build
	$(BIN)/python scripts/lab up --clusters $(LAB_CLUSTERS)

lab-down:
	$(PYTHON) scripts/lab down

demo: setup
	$(BIN)/tfgen render
	$(BIN)/tfgen check
	$(BIN)/tfgen list

example: setup
	@echo "example: installing tfgen[tensorflow] (TensorFlow + TensorBoard, about 600 MB) ..." >&2
	$(BIN)/python -m pip install --quiet -e '.[tensorflow]'
	$(EXAMPLE)

# Everything, the lab's tests too (they start the lab themselves, and stop it).
test: dev lab-build
	$(BIN)/python -m pytest

# Every test that needs neither a Go tool, the lab nor the package index (markers `go`, `lab`,
# `index`), each property test on a tenth of its examples: the inner loop, in about a minute,
# with no Go build and no network. It ends with one line saying what it left out. CI runs
# everything (`make test`).
test-fast: setup $(VENV)/.dev-installed
	TFGEN_TESTS=fast $(BIN)/python -m pytest -m "not go and not lab and not index"

lint: dev
	$(BIN)/ruff check generator tests scripts bench
	$(BIN)/mypy

# The chart README's values table, from values.yaml's `# --` comments (tests/test_chart.py runs
# the same command and fails when the committed README differs).
docs: go-tools
	$(HELM_DOCS) --chart-search-root charts --sort-values-order file

clean:
	$(PYTHON) scripts/lab down
	rm -rf $(VENV) .tools .lab
