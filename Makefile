# Two commands do everything on a fresh machine:
#   make demo   creates .venv if missing, installs, runs the main job on the embedded default
#   make test   creates .venv if missing, installs with dev extras, runs the test suite
# make test-fast is the inner loop: the suite without the tests marked slow (under 2 minutes).
# torch==2.13.0 is installed before the project so that pip never resolves a multi-GB CUDA build.
# Elsewhere, pass extra pip arguments for torch, e.g. a CPU wheel index: make test TORCH_PIP_ARGS="--index-url URL"

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_VERSION ?= 2.13.0
TORCH_PIP_ARGS ?=
STAMP := $(VENV)/.agentbalance-installed

.PHONY: demo test test-fast lint install clean-venv

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==$(TORCH_VERSION) $(TORCH_PIP_ARGS)
	$(BIN)/python -m pip install --quiet -e ".[dev,autogen]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/agentbalance pools --plot runs/demo/pools.png --json-out runs/demo/pools.json
	$(BIN)/agentbalance build --budget-tok 0.5 --budget-lat 60 --out runs/demo/build

test: $(STAMP)
	$(BIN)/ruff check agentbalance tests benchmarks examples
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/ruff check agentbalance tests benchmarks examples
	$(BIN)/python -m pytest -q -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check agentbalance tests benchmarks examples

clean-venv:
	rm -rf $(VENV)
