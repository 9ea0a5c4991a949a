# One command sets up and runs the demo; one sets up and runs every check.
#
# make test installs what it needs on a fresh machine: Python packages into
# .venv (and .venv-matrix/ for the other Pythons and the compiled build), and
# Debian system packages if they are missing (each says so first): redis-server
# for the Redis tests, gcc for the compiled build. The one switch:
#   make test NO_SYSTEM_PACKAGES=1    install no system package; what needs one skips loudly.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# pip >= 25.1 reads PEP 735 dependency groups (--group); the venv's pip is upgraded first.
PIP := $(PY) -m pip install --quiet
BENCH_VENV ?= .venv-bench

FUZZ_SECONDS ?= 600
NO_SYSTEM_PACKAGES ?=
export NO_SYSTEM_PACKAGES

LINTED := requeststate tests benchmarks examples fuzz scripts

.PHONY: demo test lint docs matrix wheel-smoke bench bench-quick fuzz mutation clean FORCE

demo: $(VENV)/.installed
	$(PY) -m requeststate demo

# Every check: lint and types, a bounded fuzzing pass, the suite with coverage on
# this Python, the docs build, the built wheel in a fresh venv, then the suite on
# every other Python the package claims and once at the lowest declared versions.
test: $(VENV)/.installed-dev
	sh scripts/redis-test-server.sh
	sh scripts/c-compiler.sh
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
	$(PY) -m scripts.wheel_smoke

# The suite on every Python in the classifiers other than this one (a missing
# interpreter is skipped loudly), and on the lowest one at the declared lower bounds.
matrix: $(VENV)/.installed-dev
	$(PY) -m scripts.matrix

fuzz: $(VENV)/.installed-dev
	$(PY) -m fuzz.run --seconds $(FUZZ_SECONDS)

# Mutation testing of the core modules (about 10 minutes on 2 cores); fails below 95%.
mutation: $(VENV)/.installed-dev
	$(PY) scripts/mutation.py --min-score 95

# The benchmarks measure the compiled build, as release wheels are meant to ship
# it (scripts/compiled.py builds it into $(BENCH_VENV)); the report names the build.
# python -m benchmarks.bound in $(VENV) measures the pure-Python one.
bench: $(BENCH_VENV)/.compiled
	sh scripts/redis-test-server.sh
	PYTHONSAFEPATH=1 $(BENCH_VENV)/bin/python -m benchmarks

bench-quick: $(BENCH_VENV)/.compiled
	sh scripts/redis-test-server.sh
	PYTHONSAFEPATH=1 $(BENCH_VENV)/bin/python -m benchmarks --quick

# Phony at heart: compiled.py rebuilds only when the sources or pyproject.toml changed.
$(BENCH_VENV)/.compiled: $(VENV)/.installed-dev FORCE
	sh scripts/c-compiler.sh
	$(PY) -m scripts.compiled --venv $(BENCH_VENV) --group bench

FORCE:

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade 'pip>=25.1'

$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PIP) -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(VENV)/bin/python
	$(PIP) -e '.[mcp,redis]' --group dev
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV) $(BENCH_VENV) .venv-matrix site .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.* .hypothesis build dist
