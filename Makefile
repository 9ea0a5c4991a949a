# Two commands, on a fresh machine with Python 3.11+, make and apt:
#   make demo    sets up .venv with the package alone, and runs the demo;
#   make test    sets up .venv with the dev group, then lint, types, the suite
#                with coverage, the docs build and the wheel check (a few minutes).
# Every tool runs from .venv, never from a Python that happens to be on PATH, and reads its
# options from its own configuration (pyproject.toml, mkdocs.yml), not from here.
# The Redis tests need redis-server: make test installs Debian's package when
# it is missing, saying so first (make test NO_SYSTEM_PACKAGES=1 installs nothing
# and skips those tests, loudly).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# pip >= 25.1 reads PEP 735 dependency groups (--group); the venv's pip is upgraded first.
PIP := $(PY) -m pip install --quiet
FUZZ_SECONDS ?= 600
NO_SYSTEM_PACKAGES ?=
export NO_SYSTEM_PACKAGES

.PHONY: demo test lint docs wheel-smoke matrix nemesis bench bench-quick fuzz mutation clean

demo: $(VENV)/.installed
	$(PY) -m requeststate demo

test: $(VENV)/.installed-dev
	sh scripts/redis-test-server.sh
	$(MAKE) --no-print-directory lint
	$(PY) -m pytest --cov
	$(MAKE) --no-print-directory docs
	$(MAKE) --no-print-directory wheel-smoke

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check
	$(PY) -m ruff format --check
	$(PY) -m mypy
	$(PY) -m pyright

# The docs site (MkDocs + mkdocstrings) into site/; mkdocs.yml makes every warning an error.
docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build

# python -m build, twine check --strict, check-wheel-contents, then the wheel alone in a fresh venv.
wheel-smoke: $(VENV)/.installed-dev
	$(PY) -m scripts.wheel_smoke

# noxfile.py: the suite on Python 3.11, 3.12 and 3.13 (a missing interpreter is
# skipped loudly), once at the lowest declared versions, and a short fuzzing run.
# pyenv's interpreters are put on PATH; uv never downloads one.
PYENV_ROOT ?= $(HOME)/.pyenv
empty :=
space := $(empty) $(empty)
PYENV_BINS := $(subst $(space),:,$(wildcard $(PYENV_ROOT)/versions/3.1[123].*/bin))
matrix: $(VENV)/.installed-dev
	sh scripts/redis-test-server.sh
	PATH="$(PYENV_BINS):$$PATH" UV_PYTHON_DOWNLOADS=never $(PY) -m nox --no-error-on-missing-interpreters

# Single use under random faults on real redis-servers (scripts/nemesis.py); make matrix runs it too.
# make nemesis NEMESIS_SECONDS=120 runs each topology longer than the script's default (40).
NEMESIS_SECONDS ?=
nemesis: $(VENV)/.installed-dev
	sh scripts/redis-test-server.sh
	$(PY) -m scripts.nemesis $(if $(NEMESIS_SECONDS),--seconds $(NEMESIS_SECONDS))

# The benchmark measures the package as pip installs it: pure Python.
bench: $(VENV)/.installed-bench
	sh scripts/redis-test-server.sh
	$(PY) -m benchmarks

bench-quick: $(VENV)/.installed-bench
	sh scripts/redis-test-server.sh
	$(PY) -m benchmarks --quick

fuzz: $(VENV)/.installed-fuzz
	$(PY) -m fuzz.run --seconds $(FUZZ_SECONDS)

# Mutation testing of the core modules (about 10 minutes on 2 cores); fails below 95%.
mutation: $(VENV)/.installed-mutation
	$(PY) scripts/mutation.py --min-score 95

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade 'pip>=25.1'

# One stamp per set of what is installed: each target installs only what it needs.
$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PIP) -e .
	touch $@

$(VENV)/.installed-docs: pyproject.toml | $(VENV)/bin/python
	$(PIP) -e . --group docs
	touch $@ $(VENV)/.installed

$(VENV)/.installed-dev: pyproject.toml | $(VENV)/bin/python
	$(PIP) -e '.[mcp,redis,otel]' --group dev
	touch $@ $(VENV)/.installed $(VENV)/.installed-docs

$(VENV)/.installed-%: pyproject.toml | $(VENV)/bin/python
	$(PIP) -e '.[mcp,redis,otel]' --group $*
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV) .nox site build dist .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.* .hypothesis
