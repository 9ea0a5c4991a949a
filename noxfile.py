"""The slower checks that ``make matrix`` runs after ``make test``; ``NOX_ARGS="-s NAME"`` runs one.

- ``tests``: the whole suite on each Python the package claims, with what ``make test`` leaves
  out (``-m "not load"``): the MCP SDK's own request-state tests (they fetch the ``mcp`` sdist
  from PyPI), and the combinations of a process-starting test beyond the covering set that
  ``make test`` runs (``matrix``: tests/support/combinations.py). An interpreter that is not
  installed is skipped, and nox says so in its summary.
- ``lowest``: the same suite with every runtime dependency at its declared lower
  bound (uv's ``--resolution lowest-direct``): a bound that fails here is one to raise.
- ``fuzz``: a short coverage-guided fuzzing run of ``Codec.verify`` (atheris).
- ``benchmarks``: the benchmark harness's own tests (``benchmarks/test_benchmarks.py``).
- ``nemesis``: the suite's load volume, which ``make test`` leaves out (``pytest -m load``: a
  cluster race of 100,000 claims), then single use under faults (scripts/nemesis/): worker
  processes redeem tokens on real redis-servers (one, a replicated pair, a cluster) while a
  nemesis kills, flushes, evicts, pauses and fails them over, on one SQLite file that it
  deletes, replaces and truncates, and on PostgreSQL (a primary; a primary and its standby,
  asynchronous and synchronous, promoted or restored); it fails on any token accepted twice
  (about 6 minutes); then the
  same over real MCP flows (``--mcp``: a protected fleet of SDK and FastMCP workers behind a
  balancer, SDK clients, the workers killed, paused, restarted and their clock stepped, the store's
  link slowed and cut), 90 s per topology; it fails on a token accepted twice, a flow
  answered with another's state, a code the docs do not promise, or a fault no flow resumed after.
- ``conformance``: the official MCP conformance suite against the SDK's and FastMCP's conformance
  servers, as shipped and under ``protect()``, and the probe on them and on a TypeScript SDK
  server (scripts/conformance.py); Node 22 and the suite come from the npm registry into build/.

Every session but ``lowest`` and ``conformance`` installs exactly what ``uv.lock`` pins, as
``make test`` does; ``lowest`` resolves afresh, by definition, with the lowest FastMCP (the
locked sessions run the newest), and ``conformance`` installs FastMCP's conformance server's own
pins (``CONFORMANCE_SERVERS``). The uv is the Makefile's (``UV=``, pinned in pyproject.toml), and
pytest's options are pyproject.toml's.
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "uv"
nox.options.error_on_missing_interpreters = False
nox.options.reuse_venv = "yes"

PYTHONS = ["3.11", "3.12", "3.13"]
# The suite's sessions: all but the load volume, the SDK's own suite and every combination of the
# process-starting tests included (pyproject.toml's addopts leave both out of make test).
SUITE = ("-m", "not load")


def _sync(session: nox.Session, *selection: str) -> None:
    """The project (editable) and ``selection`` (extras and groups), from uv.lock into the session's venv."""
    session.run_install(
        "uv",
        "sync",
        "--locked",
        "--no-default-groups",
        *selection,
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
    )


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The suite on one Python."""
    _sync(session, "--all-extras", "--group", "test")
    session.run("python", "-m", "pytest", *SUITE, *session.posargs)


@nox.session(python=PYTHONS[0])
def lowest(session: nox.Session) -> None:
    """The suite with every declared dependency (the package's, the extras', the tests') at its lowest."""
    # One resolution: the OpenTelemetry SDK the tests read counters with pins the API it goes with.
    session.install(
        "--resolution", "lowest-direct", "-e", ".[mcp,fastmcp,redis,postgres,otel]", "--group", "test"
    )
    session.run("python", "-m", "pytest", *SUITE, *session.posargs)


@nox.session(python=PYTHONS[0])
def fuzz(session: nox.Session) -> None:
    """Fuzz Codec.verify for 60 seconds (``make fuzz`` runs longer)."""
    _sync(session, "--group", "fuzz")
    session.run("python", "-m", "fuzz.run", "--seconds", "60")


@nox.session(python=PYTHONS[0])
def nemesis(session: nox.Session) -> None:
    """The load volume (``pytest -m load``), then single use under faults; ``-- --seconds 120``: longer."""
    _sync(session, "--all-extras", "--group", "test")
    session.run("python", "-m", "pytest", "-m", "load")
    session.run("python", "-m", "scripts.nemesis", *session.posargs)
    session.run("python", "-m", "scripts.nemesis", "--mcp", "--seconds", "90", *session.posargs)


@nox.session(python=PYTHONS[0])
def benchmarks(session: nox.Session) -> None:
    """The benchmark harness's own tests: tiny counts, output structure only, never timed."""
    _sync(session, "--all-extras", "--group", "test", "--group", "bench")
    session.run("python", "-m", "pytest", "benchmarks")


# FastMCP's conformance server runs its background tasks on fastmcp-tasks, which pins its own
# FastMCP (and refuses redis-py 8.1.0): installed here, not in uv.lock, whose FastMCP is the newest.
CONFORMANCE_SERVERS = ("fastmcp==4.1.4", "fastmcp-tasks==4.1.4", "uvicorn>=0.30")


@nox.session(python=PYTHONS[0])
def conformance(session: nox.Session) -> None:
    """The MCP conformance suite and the probe on servers nobody here wrote (about two minutes)."""
    session.install("-e", ".[mcp]", *CONFORMANCE_SERVERS)
    session.run("python", "-m", "scripts.conformance", *session.posargs)
