from __future__ import annotations

import pytest

import requeststate as rs

SECRET = bytes(range(32))
OTHER_SECRET = bytes(range(32, 64))
NOW = 2_000_000_000
MODES = list(rs.Mode)


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
