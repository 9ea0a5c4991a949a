"""The integrations name their extra when its distributions are not installed."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Each test is a fresh interpreter without an extra: what it runs, no test runs in process.
pytestmark = pytest.mark.usefixtures("measured_subprocesses")


def import_without(module: str, missing: str) -> subprocess.CompletedProcess[str]:
    # sys.modules[name] = None makes `import name` fail as if it were not installed.
    code = f"import sys; sys.modules[{missing!r}] = None; import {module}"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize("missing", ["redis", "redis.asyncio"])
def test_requeststate_redis_without_redis_py_names_the_extra(missing: str) -> None:
    done = import_without("requeststate.redis", missing)
    assert done.returncode == 1
    assert (
        "ImportError: requeststate.redis needs the redis extra: pip install 'requeststate[redis]'"
        in done.stderr
    )


@pytest.mark.parametrize("missing", ["psycopg", "psycopg_pool"])
def test_requeststate_postgres_without_psycopg_names_the_extra_and_libpq(missing: str) -> None:
    done = import_without("requeststate.postgres", missing)
    assert done.returncode == 1
    assert (
        "ImportError: requeststate.postgres needs the postgres extra (pip install 'requeststate[postgres]') "
        "and libpq on the host (Debian: apt-get install libpq5), or psycopg's own: pip install "
        "'psycopg[binary]'" in done.stderr
    )


@pytest.mark.parametrize("missing", ["mcp", "mcp_types"])
def test_requeststate_mcp_without_the_sdk_names_the_extra(missing: str) -> None:
    done = import_without("requeststate.mcp", missing)
    assert done.returncode == 1
    assert "ImportError: requeststate.mcp needs the mcp extra: pip install 'requeststate[mcp]'" in done.stderr


def test_the_hint_keeps_the_missing_module_as_its_cause() -> None:
    code = (
        "import sys; sys.modules['redis'] = None\n"
        "try:\n    import requeststate.redis\n"
        "except ImportError as error:\n    print(error.name, type(error.__cause__).__name__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "redis ModuleNotFoundError\n"
