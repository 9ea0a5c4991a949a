# One command sets up and runs the demo; one sets up and runs every check.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test bench bench-quick clean

demo: $(VENV)/.installed
	$(PY) -m requeststate demo

test: $(VENV)/.installed-dev
	sh scripts/redis-test-server.sh
	$(PY) -m ruff check requeststate tests benchmarks examples
	$(PY) -m ruff format --check requeststate tests benchmarks examples
	$(PY) -m mypy
	$(PY) -m pytest --cov --cov-report=term

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
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage .hypothesis build dist
