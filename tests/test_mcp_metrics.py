"""requeststate.mcp on OpenTelemetry: the boundary counts every token with its request's method."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp.shared.exceptions import MCPError
from opentelemetry.metrics import Meter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import requeststate as rs
from requeststate.mcp import Boundary
from tests.support.mcp_flow import KEYS, ROOT, open_round, seal_round, tamper
from tests.support.memory_guard import memory_guard
from tests.test_metrics import point, points

pytestmark = pytest.mark.anyio

CALL = {"name": "wizard", "arguments": {"topic": "x"}}
TOOLS = "tools/call"
REFUSED = r"^Invalid or expired requestState$"


def meter(reader: InMemoryMetricReader) -> Meter:
    return MeterProvider(metric_readers=[reader]).get_meter("requeststate")


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


async def test_each_minted_and_accepted_token_is_counted_with_its_method(
    reader: InMemoryMetricReader,
) -> None:
    boundary = Boundary(KEYS, audience="svc", metrics=meter(reader))
    token = await seal_round(boundary, CALL)
    assert await open_round(boundary, CALL, token) == "s"
    assert points(reader) == {
        point("tokens.minted", mode="encrypted", method=TOOLS): 1,
        point("tokens.accepted", mode="encrypted", method=TOOLS): 1,
    }


@pytest.mark.parametrize(
    ("method", "params"), [("prompts/get", {"name": "wizard"}), ("resources/read", {"uri": "res://a"})]
)
async def test_each_input_required_method_counts_under_its_own_name(
    reader: InMemoryMetricReader, method: str, params: dict[str, str]
) -> None:
    await seal_round(Boundary(KEYS, audience="svc", metrics=meter(reader)), params, method=method)
    assert points(reader) == {point("tokens.minted", mode="encrypted", method=method): 1}


async def test_a_refused_echo_is_counted_with_its_reason_and_method(reader: InMemoryMetricReader) -> None:
    boundary = Boundary(KEYS, mode=("encrypted", "signed"), audience="svc", metrics=meter(reader))
    token = await seal_round(boundary, CALL)
    with pytest.raises(MCPError, match=REFUSED):
        await open_round(boundary, CALL, tamper(token))
    assert points(reader) == {
        point("tokens.minted", mode="encrypted", method=TOOLS): 1,
        point("tokens.refused", mode="encrypted,signed", reason="bad_signature", method=TOOLS): 1,
    }


async def test_a_request_that_cannot_be_bound_is_counted_as_wrong_binding(
    reader: InMemoryMetricReader,
) -> None:
    # The boundary's own refusal (logged as binding_error): the core's reason for an unbindable identity.
    def failing(ctx: object) -> str:
        raise RuntimeError("identity provider down")

    boundary = Boundary(KEYS, audience="svc", subject=failing, metrics=meter(reader))
    with pytest.raises(MCPError, match=REFUSED):
        await open_round(boundary, CALL, "v1e.AAAA")
    assert points(reader) == {
        point("tokens.refused", mode="encrypted", reason="wrong_binding", method=TOOLS): 1
    }


async def test_the_guard_claims_and_refusals_are_counted_with_the_method(
    reader: InMemoryMetricReader,
) -> None:
    boundary = Boundary(KEYS, audience="svc", guard=memory_guard(), metrics=meter(reader))
    token = await seal_round(boundary, CALL)
    await open_round(boundary, CALL, token)
    with pytest.raises(MCPError, match=REFUSED):
        await open_round(boundary, CALL, token)
    replayed = {"mode": "encrypted", "reason": "replayed", "method": TOOLS}
    assert points(reader) == {
        point("tokens.minted", mode="encrypted", method=TOOLS): 1,
        point("tokens.accepted", mode="encrypted", method=TOOLS): 1,
        point("guard.claims", mode="encrypted", method=TOOLS): 1,
        point("guard.refusals", **replayed): 1,
        point("tokens.refused", **replayed): 1,
    }


async def test_a_given_codec_counts_none_of_the_boundary_tokens(reader: InMemoryMetricReader) -> None:
    # The boundary counts them, with the method: the codec counting too would count each twice.
    its_own = InMemoryMetricReader()
    codec = rs.Codec(KEYS, mode="encrypted", metrics=meter(its_own))
    boundary = Boundary(codec, audience="svc", metrics=meter(reader))
    await open_round(boundary, CALL, await seal_round(boundary, CALL))
    assert (points(its_own), points(reader)) == (
        {},
        {
            point("tokens.minted", mode="encrypted", method=TOOLS): 1,
            point("tokens.accepted", mode="encrypted", method=TOOLS): 1,
        },
    )


def test_a_meter_that_is_no_meter_is_refused() -> None:
    with pytest.raises(TypeError, match=r"^metrics must be an OpenTelemetry Meter or None, not str$"):
        Boundary(KEYS, audience="svc", metrics="requeststate")  # type: ignore[arg-type]


GLOBAL_PROVIDER = """
import anyio
from opentelemetry import metrics
from opentelemetry.metrics import Meter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from requeststate.mcp import Boundary
from tests.support.mcp_flow import KEYS, seal_round

quiet = Boundary(KEYS, audience="svc", metrics=None)
counted = Boundary(KEYS, audience="svc")
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
for boundary in (quiet, counted):
    anyio.run(seal_round, boundary, {"name": "wizard"})
data = reader.get_metrics_data()
print(sorted(
    (metric.name, sorted(point.attributes.items()), point.value)
    for resource in data.resource_metrics for scope in resource.scope_metrics
    for metric in scope.metrics for point in metric.data.data_points
))
"""


def test_by_default_the_global_provider_counts_and_metrics_none_counts_nothing() -> None:
    # A process of its own: the global provider is set once per process.
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(GLOBAL_PROVIDER)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    minted = ("requeststate.tokens.minted", [("method", "tools/call"), ("mode", "encrypted")], 1)
    assert done.stdout.strip() == repr([minted])


async def test_a_meter_whose_counts_raise_leaves_the_wire_as_it_was() -> None:
    # Before: every mint and every refusal became -32603 under a meter whose add() raised.
    from tests.test_metrics import BrokenMeter

    boundary = Boundary(KEYS, audience="svc", metrics=BrokenMeter())
    token = await seal_round(boundary, CALL)
    handed = await open_round(boundary, CALL, token)
    with pytest.raises(MCPError) as refused:
        await open_round(boundary, CALL, tamper(token))
    assert (handed, refused.value.error.code, refused.value.error.message) == (
        "s",
        -32602,
        "Invalid or expired requestState",
    )
