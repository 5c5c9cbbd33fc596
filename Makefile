# One entry point for people and CI. `make demo` sets everything up from a fresh clone and
# runs the main job; `make test` runs the test suite (what .ci/run calls).
VENV   := .venv
PYTHON ?= python3
BIN    := $(VENV)/bin
HELM   := .tools/helm/v4/helm

.PHONY: setup demo test lint clean

setup: $(VENV)/.installed $(HELM)

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

$(HELM): scripts/install_helm.py
	$(PYTHON) scripts/install_helm.py .tools/helm

demo: setup
	$(BIN)/tfgen render
	$(BIN)/tfgen check

test: setup
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check generator tests scripts bench
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .tools
