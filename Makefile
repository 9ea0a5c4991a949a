# One command sets up and runs the demo; one sets up and runs every check.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

FUZZ_SECONDS ?= 600

.PHONY: demo test bench bench-quick fuzz mutation clean

demo: $(VENV)/.installed
	$(PY) -m requeststate demo

test: $(VENV)/.installed-dev
	sh scripts/redis-test-server.sh
	$(PY) -m ruff check requeststate tests benchmarks examples fuzz scripts
	$(PY) -m ruff format --check requeststate tests benchmarks examples fuzz scripts
	$(PY) -m mypy
	$(PY) -m pyright
	$(PY) -m fuzz.run --seconds 60
	$(PY) -m pytest --cov --cov-report=term

# Fuzz verify/decode (every mode, with and without a guard) for FUZZ_SECONDS.
fuzz: $(VENV)/.installed-dev
	$(PY) -m fuzz.run --seconds $(FUZZ_SECONDS)

# Mutation testing of the core modules (about 3 minutes on 2 cores); fails below 90%.
mutation: $(VENV)/.installed-dev
	$(PY) scripts/mutation.py --min-score 90

bench: $(VENV)/.installed-bench
	sh scripts/redis-test-server.sh
	$(PY) -m benchmarks

bench-quick: $(VENV)/.installed-bench
	sh scripts/redis-test-server.sh
	$(PY) -m benchmarks --quick

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-bench: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $@ $(VENV)/.installed-dev $(VENV)/.installed

$(VENV)/.installed-dev: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.* .hypothesis build dist
