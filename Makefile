# One command sets up and runs the demo; one sets up and runs every check.
#
# make test installs what it needs on a fresh machine: Python packages into
# .venv (and .venv-matrix/ for the other Pythons), and one system package,
# Debian's redis-server, if it is missing (it says so first). The one switch:
#   make test NO_SYSTEM_PACKAGES=1    install no system package; the Redis tests skip loudly.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# pip >= 25.1 reads PEP 735 dependency groups (--group); the venv's pip is upgraded first.
PIP := $(PY) -m pip install --quiet

FUZZ_SECONDS ?= 600
NO_SYSTEM_PACKAGES ?=
export NO_SYSTEM_PACKAGES

LINTED := requeststate tests benchmarks examples fuzz scripts

.PHONY: demo test lint docs matrix wheel-smoke bench bench-quick fuzz mutation clean

demo: $(VENV)/.installed
	$(PY) -m requeststate demo

# Every check: lint and types, a bounded fuzzing pass, the suite with coverage on
# this Python, the docs build, the built wheel in a fresh venv, then the suite on
# every other Python the package claims and once at the lowest declared versions.
test: $(VENV)/.installed-dev
	sh scripts/redis-test-server.sh
	$(MAKE) --no-print-directory lint
	$(PY) -m fuzz.run --seconds 60
	$(PY) -m pytest --cov --cov-report=term
	$(MAKE) --no-print-directory docs
	$(MAKE) --no-print-directory wheel-smoke
	$(MAKE) --no-print-directory matrix

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check $(LINTED)
	$(PY) -m mypy
	$(PY) -m pyright

# The docs site (MkDocs + mkdocstrings) into site/; --strict makes every warning an error.
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# python -m build, twine check --strict, check-wheel-contents, then the wheel alone in a fresh venv.
wheel-smoke: $(VENV)/.installed-dev
	$(PY) scripts/wheel_smoke.py

# The suite on every Python in the classifiers other than this one (a missing
# interpreter is skipped loudly), and on the lowest one at the declared lower bounds.
matrix: $(VENV)/.installed-dev
	$(PY) scripts/matrix.py

fuzz: $(VENV)/.installed-dev
	$(PY) -m fuzz.run --seconds $(FUZZ_SECONDS)

# Mutation testing of the core modules (about 10 minutes on 2 cores); fails below 95%.
mutation: $(VENV)/.installed-dev
	$(PY) scripts/mutation.py --min-score 95

bench: $(VENV)/.installed-bench
	sh scripts/redis-test-server.sh
	$(PY) -m benchmarks

bench-quick: $(VENV)/.installed-bench
	sh scripts/redis-test-server.sh
	$(PY) -m benchmarks --quick

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade 'pip>=25.1'

$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PIP) -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(VENV)/bin/python
	$(PIP) -e '.[mcp,redis]' --group dev
	touch $@ $(VENV)/.installed

$(VENV)/.installed-bench: pyproject.toml | $(VENV)/bin/python
	$(PIP) -e '.[mcp,redis]' --group bench
	touch $@ $(VENV)/.installed-dev $(VENV)/.installed

clean:
	rm -rf $(VENV) .venv-matrix site .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.* .hypothesis build dist
