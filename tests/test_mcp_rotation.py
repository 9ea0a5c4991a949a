"""Key rotation across a rolling deploy: two server processes at adjacent phases accept each other's tokens.

The three phases (README, "Rotating keys"): ``KeyRing(old, new)`` everywhere,
then ``KeyRing(new, old)``, then ``KeyRing(new)`` once a TTL has passed. During
a rolling deploy one worker is still at a phase while another is at the next:
every adjacent pair must complete a flow minted on either side.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Sequence

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import InputRequiredResult

from tests.support.mcp_flow import (
    ROOT,
    answer,
    b64_secret,
    bounded,
    echo,
    echo_refused,
    finish,
    first_round,
)
from tests.support.stdio_servers import clients

pytestmark = pytest.mark.anyio

OLD = bytes.fromhex("8e3b17c4d05fa962e1b7c03d49f28a65c7d1e09b34fa2d6815c8b7e0a94f3d21")
NEW = bytes.fromhex("17f4a8c2e96b0d53b1c4e7f92a06d8354ebc19f7d2603a8ce5b14d9f7a2c06e8")
PHASES: dict[str, tuple[bytes, ...]] = {
    "before": (OLD,),
    "1-old-new": (OLD, NEW),
    "2-new-old": (NEW, OLD),
    "3-new": (NEW,),
}
STEPS = [("before", "1-old-new"), ("1-old-new", "2-new-old"), ("2-new-old", "3-new")]


def server(ring: Sequence[bytes]) -> StdioServerParameters:
    """A stdio server process with the key ring ``ring``: the first key mints, as in REQUESTSTATE_KEYS."""
    env = {
        "REQUESTSTATE_KEYS": ",".join(map(b64_secret, ring)),
        "RS_TEST_TIER": "mcpserver",
        "RS_TEST_SHAPE": "boundary",
        "RS_TEST_MODE": "encrypted",
        "PYTHONPATH": str(ROOT),
    }
    return StdioServerParameters(
        command=sys.executable, args=["-m", "tests.support.mcp_stdio_server"], env=env, cwd=ROOT
    )


@pytest.fixture(scope="module")
async def workers() -> AsyncIterator[dict[str, Client]]:
    """A stdio server process at each phase, started at once, for the module's tests: each test's
    flows are its own."""
    async with clients(*map(server, PHASES.values()), elicitation_callback=answer) as started:
        yield dict(zip(PHASES, started, strict=True))


async def _across(minter: Client, other: Client) -> str:
    """Round 1 on ``minter``, round 2 on ``other``, round 3 on ``minter``: the final text."""
    second = await echo(other, await first_round(minter))
    assert isinstance(second, InputRequiredResult)
    return await finish(minter, second.request_state or "")


@pytest.mark.parametrize(("behind", "ahead"), STEPS)
async def test_adjacent_rotation_phases_complete_each_others_flows(
    workers: dict[str, Client], behind: str, ahead: str
) -> None:
    async def run() -> list[str]:
        old, new = workers[behind], workers[ahead]
        return [await _across(old, new), await _across(new, old)]

    assert await bounded(run) == ["done: a1,a2"] * 2


async def test_skipping_the_first_phase_refuses_tokens_during_the_deploy(workers: dict[str, Client]) -> None:
    # The order the README used to give: KeyRing(new, old) straight away. A worker still on
    # KeyRing(old) cannot read what an updated worker mints with the new key.
    async def run() -> None:
        await echo_refused(workers["before"], await first_round(workers["2-new-old"]))

    await bounded(run)
