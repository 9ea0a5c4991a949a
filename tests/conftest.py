from __future__ import annotations

import os

import pytest
from hypothesis import settings

import requeststate as rs

# No deadline on an example: a timed test fails on a loaded machine, not on a slow codec (speed
# is the benchmark's, as ratios in one run). Hypothesis's default fails an example past 200 ms.
settings.register_profile("requeststate", deadline=None)
settings.load_profile("requeststate")

# Fixed, and random-looking: a ring refuses a counter such as bytes(range(32)) (the SPEC's vector key).
SECRET = bytes.fromhex("5d2c8e41f7a39b06c4e8d1752fa0b3e96c17d84a2bf0593e81c6a7d4e2f9b105")
OTHER_SECRET = bytes.fromhex("a3f1c7092e5b84d6f0197ce3b52a48d16e9f03c7b8d24a5e1f6c09b7d3e85a24")
NOW = 2_000_000_000
MODES = list(rs.Mode)


# make coverage runs the suite under coverage run, whose patch = ["subprocess"] (pyproject.toml) hands
# this variable to every Python started below it, which then measures itself from its first line:
# the xdist workers (measured before their plugins import requeststate), and every server, probe
# and console a test starts. Those cost a third of the CPU of the tests that start them (test_fleet
# and test_cli: 182 s measured, 124 s not) for 19 lines that no test runs in process. So a process
# that runs tests takes the variable out of its environment; a test whose subject is a fresh
# interpreter (an extra missing, the console script) puts it back with ``measured_subprocesses``.
_MEASURED = "COVERAGE_PROCESS_CONFIG"
_MEASURED_KEY = pytest.StashKey[str | None]()


def pytest_configure(config: pytest.Config) -> None:
    starts_workers = config.getoption("dist", "no") != "no" and not hasattr(config, "workerinput")
    config.stash[_MEASURED_KEY] = (
        os.environ.get(_MEASURED) if starts_workers else os.environ.pop(_MEASURED, None)
    )


@pytest.fixture
def measured_subprocesses(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Pythons this test starts are measured by make test's coverage, as the workers are: for code
    that only a fresh interpreter runs (``python -m requeststate``, an import without an extra)."""
    measured = request.config.stash[_MEASURED_KEY]
    if measured is not None:
        monkeypatch.setenv(_MEASURED, measured)


@pytest.fixture(scope="session")
def ring() -> rs.KeyRing:
    return rs.KeyRing(SECRET)


@pytest.fixture(params=MODES, ids=str)
def mode(request: pytest.FixtureRequest) -> rs.Mode:
    mode: rs.Mode = request.param
    return mode


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    # The async tests run on asyncio, as the MCP SDK's servers here do. anyio
    # 4.10's plugin (our floor) would also ask for trio, which nothing installs.
    return "asyncio"
