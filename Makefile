# Two commands, on a fresh machine with Python 3.11+, make and apt:
#   make demo    sets up .venv with the package alone, and runs the demo;
#   make test    sets up .venv exactly as uv.lock pins it (every extra, the dev group), then
#                runs the suite beside lint and types, the docs build and the wheel check (those
#                three side by side too; each prints its output whole once it ends, into the
#                suite's): the suite leaves the two cores idle a fifth of the time, waiting on the
#                servers it starts, and the checks fill it. make coverage runs the suite measured.
# uv installs .venv from uv.lock. uv itself, at the version pyproject.toml pins ([tool.uv]
# required-version), is installed first into build/uv-VERSION by the python3 that runs make
# (PYTHON=), which .venv is then made from; uv never downloads a Python (pyproject.toml).
# Every tool runs from .venv, never from a Python that happens to be on PATH, and reads its
# options from its own configuration (pyproject.toml, mkdocs.yml), not from here.
# The Redis tests need redis-server, and the PostgreSQL tests a PostgreSQL server: make test
# installs Debian's redis-server and postgresql when missing, saying so first (make test
# NO_SYSTEM_PACKAGES=1 installs nothing and skips those tests, loudly).
PYTHON ?= python3
PY := .venv/bin/python
UV_VERSION := $(shell sed -n 's/^required-version = "==\(.*\)"$$/\1/p' pyproject.toml)
UV := build/uv-$(UV_VERSION)/bin/uv
NO_SYSTEM_PACKAGES ?=
export NO_SYSTEM_PACKAGES
# Every Python a target starts writes the bytecode of what it imports (into __pycache__/, which git
# ignores), and the next one reads it: the suite starts hundreds of interpreters (servers, probes,
# consoles), and pytest caches its assertion rewriting there. uv compiles nothing (pyproject.toml).
unexport PYTHONDONTWRITEBYTECODE

# .venv as uv.lock pins it: the project (editable) and what the target names. --locked: a
# uv.lock behind pyproject.toml is an error (make lock). --inexact: what else is installed stays;
# make test alone syncs exactly, removing whatever the lock's dev set does not hold.
SYNC := $(UV) sync --locked --python $(PYTHON) --no-default-groups
DEV := --all-extras --group dev

.PHONY: demo test test-servers test-checks test-suite coverage lint docs wheel-smoke matrix nemesis bench bench-quick fuzz mutation lock clean

demo: $(UV)
	$(SYNC) --inexact
	$(PY) -m requeststate demo

# Debian's redis-server and PostgreSQL, for the targets whose tests need them: installed where
# missing, saying so first (NO_SYSTEM_PACKAGES=1 installs nothing; those tests then skip, loudly).
test-servers:
	sh scripts/redis-test-server.sh
	sh scripts/postgres-test-server.sh

test: $(UV) test-servers
	$(SYNC) $(DEV)
	$(MAKE) --no-print-directory --jobs=4 test-checks test-suite

# make test's two halves, which it runs side by side once .venv is synced, in four jobs: the suite,
# and the checks' three (this sub-make shares the four). The suite's output streams; the checks'
# comes whole per target.
test-checks:
	$(MAKE) --no-print-directory --output-sync=target lint docs wheel-smoke

test-suite:
	$(PY) -m pytest

# The suite measured by coverage (a quarter to a third slower), failing below pyproject.toml's
# fail_under; CI (.ci/run) runs it after make test.
coverage: $(UV) test-servers
	$(SYNC) --inexact $(DEV)
	$(PY) -m coverage erase
	$(PY) -m coverage run -m pytest
	$(PY) -m coverage combine --quiet
	$(PY) -m coverage report

lint: $(UV)
	$(SYNC) --inexact $(DEV)
	$(PY) -m ruff check
	$(PY) -m ruff format --check
	$(PY) -m mypy
	$(PY) -m pyright

# The docs site (MkDocs + mkdocstrings) into site/; mkdocs.yml makes every warning an error.
docs: $(UV)
	$(SYNC) --inexact --group docs
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build

# uv build, twine check --strict, check-wheel-contents, then the wheel alone in a fresh venv.
wheel-smoke: $(UV)
	$(SYNC) --inexact --group package
	$(PY) -m scripts.wheel_smoke --uv $(UV)

# noxfile.py: the suite on Python 3.11, 3.12 and 3.13 (a missing interpreter is
# skipped loudly), once at the lowest declared versions, fuzzing, the nemesis and the
# benchmark harness's tests; make matrix NOX_ARGS="-s lowest" runs one session.
# pyenv's interpreters are put on PATH; nox runs this uv (UV=).
PYENV_ROOT ?= $(HOME)/.pyenv
NOX_ARGS ?=
empty :=
space := $(empty) $(empty)
PYENV_BINS := $(subst $(space),:,$(wildcard $(PYENV_ROOT)/versions/3.1[123].*/bin))
matrix: $(UV) test-servers
	$(SYNC) --inexact --group matrix
	PATH="$(PYENV_BINS):$$PATH" UV="$(abspath $(UV))" $(PY) -m nox $(NOX_ARGS)

# The suite's load volume, which make test leaves out (pytest -m load: a cluster race of 100,000
# claims), then single use under random faults on real redis-servers, an SQLite file, a
# PostgreSQL primary and its standby pairs (scripts/nemesis/), then the same over real MCP flows (--mcp);
# make matrix runs both too. make nemesis NEMESIS_SECONDS=120 runs each topology longer than the
# script's default (40).
NEMESIS_SECONDS ?=
nemesis: $(UV) test-servers
	$(SYNC) --inexact $(DEV)
	$(PY) -m pytest -m load
	$(PY) -m scripts.nemesis $(if $(NEMESIS_SECONDS),--seconds $(NEMESIS_SECONDS))
	$(PY) -m scripts.nemesis --mcp $(if $(NEMESIS_SECONDS),--seconds $(NEMESIS_SECONDS))

# The benchmark measures the package as pip installs it: pure Python.
bench: $(UV)
	$(SYNC) --inexact --all-extras --group bench
	sh scripts/redis-test-server.sh
	$(PY) -m benchmarks

bench-quick: $(UV)
	$(SYNC) --inexact --all-extras --group bench
	sh scripts/redis-test-server.sh
	$(PY) -m benchmarks --quick

FUZZ_SECONDS ?= 600
fuzz: $(UV)
	$(SYNC) --inexact --group fuzz
	$(PY) -m fuzz.run --seconds $(FUZZ_SECONDS)

# Mutation testing of the core modules (about 10 minutes on 2 cores); fails below 95%.
mutation: $(UV)
	$(SYNC) --inexact --all-extras --group mutation
	$(PY) scripts/mutation.py --min-score 95

# uv.lock again after an edit of pyproject.toml's dependencies; LOCK_ARGS="--upgrade-package mcp"
# moves one package to its newest allowed version, LOCK_ARGS=--upgrade all of them.
LOCK_ARGS ?=
lock: $(UV)
	$(UV) lock $(LOCK_ARGS)

$(UV):
	$(if $(UV_VERSION),,$(error pyproject.toml pins no uv: [tool.uv] required-version = "==X.Y.Z"))
	rm -rf build/uv-$(UV_VERSION)
	$(PYTHON) -m venv build/uv-$(UV_VERSION)
	build/uv-$(UV_VERSION)/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

clean:
	rm -rf .venv .nox site build dist .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.* .hypothesis
