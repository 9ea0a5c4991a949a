"""requeststate._metrics: the OpenTelemetry counters, read with the OTel SDK's in-memory reader."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import requeststate as rs
from tests.conftest import NOW, SECRET

ROOT = Path(__file__).resolve().parent.parent
Points = Counter[tuple[str, frozenset[tuple[str, str]]]]


def points(reader: InMemoryMetricReader) -> Points:
    """Every counter's value, by its name and attributes."""
    found: Points = Counter()
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    found[metric.name, frozenset(point.attributes.items())] += int(point.value)  # type: ignore[union-attr,arg-type]
    return found


def point(name: str, **attributes: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return f"requeststate.{name}", frozenset(attributes.items())


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


def codec(reader: InMemoryMetricReader, **options: object) -> rs.Codec:
    meter = MeterProvider(metric_readers=[reader]).get_meter("requeststate")
    return rs.Codec(SECRET, mode=("encrypted", "signed"), metrics=meter, **options)  # type: ignore[arg-type]


def test_each_minted_accepted_and_refused_token_is_counted_once(reader: InMemoryMetricReader) -> None:
    counted = codec(reader)
    token = counted.encode("state", subject="alice", now=NOW)
    assert counted.decode(token, subject="alice", now=NOW) == "state"
    assert counted.decode(token, subject="mallory", now=NOW) is None
    assert counted.decode(token, subject="alice", now=NOW + 10_000) is None
    assert points(reader) == {
        point("tokens.minted", mode="encrypted"): 1,
        point("tokens.accepted", mode="encrypted"): 1,
        point("tokens.refused", mode="encrypted,signed", reason="bad_signature"): 1,
        point("tokens.refused", mode="encrypted,signed", reason="expired"): 1,
    }


def test_an_accepted_token_is_counted_in_its_own_mode(reader: InMemoryMetricReader) -> None:
    counted = codec(reader)
    signed = rs.encode("state", SECRET, mode="signed", now=NOW, metrics=None)
    assert counted.verify(signed, now=NOW) == "state"
    assert points(reader) == {point("tokens.accepted", mode="signed"): 1}


def test_verify_counts_the_refusal_it_raises(reader: InMemoryMetricReader) -> None:
    with pytest.raises(rs.InvalidToken, match=r"^malformed$"):
        codec(reader).verify(12, now=NOW)
    assert points(reader) == {point("tokens.refused", mode="encrypted,signed", reason="malformed"): 1}


def test_a_guard_counts_its_claims_and_its_refusals(reader: InMemoryMetricReader) -> None:
    counted = codec(reader, guard=rs.MemoryGuard())
    token = counted.encode("state", now=NOW)
    assert counted.decode(token, now=NOW) == "state"
    assert counted.decode(token, now=NOW) is None
    replayed = {"mode": "encrypted,signed", "reason": "replayed"}
    assert points(reader) == {
        point("tokens.minted", mode="encrypted"): 1,
        point("tokens.accepted", mode="encrypted"): 1,
        point("guard.claims", mode="encrypted"): 1,
        point("tokens.refused", **replayed): 1,
        point("guard.refusals", **replayed): 1,
    }


@pytest.mark.anyio
async def test_the_async_calls_count_as_the_sync_ones(reader: InMemoryMetricReader) -> None:
    counted = codec(reader, guard=rs.MemoryGuard())
    token = counted.encode("state", now=NOW)
    assert await counted.adecode(token, now=NOW) == "state"
    assert await counted.adecode(token, now=NOW) is None
    with pytest.raises(rs.InvalidToken, match=r"^wrong_mode$"):
        await counted.averify("v1x.AAAA", now=NOW)
    replayed = {"mode": "encrypted,signed", "reason": "replayed"}
    assert points(reader) == {
        point("tokens.minted", mode="encrypted"): 1,
        point("tokens.accepted", mode="encrypted"): 1,
        point("guard.claims", mode="encrypted"): 1,
        point("tokens.refused", **replayed): 1,
        point("guard.refusals", **replayed): 1,
        point("tokens.refused", mode="encrypted,signed", reason="wrong_mode"): 1,
    }


def test_metrics_none_counts_nothing(reader: InMemoryMetricReader) -> None:
    uncounted = rs.Codec(SECRET, mode="signed", metrics=None)
    uncounted.decode(uncounted.encode("state", now=NOW), now=NOW)
    assert points(reader) == {}


def test_a_meter_that_is_no_meter_is_refused() -> None:
    with pytest.raises(TypeError, match=r"^metrics must be an OpenTelemetry Meter or None, not str$"):
        rs.Codec(SECRET, mode="signed", metrics="requeststate")  # type: ignore[arg-type]


@pytest.mark.usefixtures("measured_subprocesses")  # a fresh interpreter without the API
def test_without_the_opentelemetry_api_nothing_is_imported() -> None:
    # opentelemetry is installed here: the script hides it from the one look requeststate takes.
    script = """
        import importlib.util, os, sys
        real = importlib.util.find_spec
        importlib.util.find_spec = lambda name, *rest: None if name == "opentelemetry" else real(name, *rest)
        import requeststate as rs
        codec = rs.Codec(os.urandom(32), mode="signed")
        assert codec.decode(codec.encode("state")) == "state"
        print(sorted(name for name in sys.modules if name.startswith("opentelemetry")))
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


PROVIDER = """
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
reader = InMemoryMetricReader()
"""
ROUND = """
import os
codec = rs.Codec(os.urandom(32), mode="signed")
codec.decode(codec.encode("state", now=2_000_000_000), now=2_000_000_000)
"""
READ = """
data = reader.get_metrics_data()
print(sorted(
    (metric.name, point.value)
    for resource in data.resource_metrics for scope in resource.scope_metrics
    for metric in scope.metrics for point in metric.data.data_points
))
"""


@pytest.mark.parametrize(
    "script",
    [
        # The provider set before requeststate is imported.
        PROVIDER + "metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))\n"
        "import requeststate as rs\n" + ROUND + READ,
        # Set after a codec was built and used: the counts before it are lost, those after counted.
        PROVIDER
        + "import requeststate as rs\n"
        + ROUND
        + "metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))\n"
        + ROUND
        + READ,
    ],
    ids=["set before import", "set after use"],
)
def test_the_global_provider_counts_once_it_is_set(script: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[('requeststate.tokens.accepted', 1), ('requeststate.tokens.minted', 1)]"


class BrokenCounter:
    def add(self, amount: int, attributes: object, /) -> None:
        raise RuntimeError("the exporter is down")


class BrokenMeter:
    """A meter of the application's own, whose every count raises."""

    def create_counter(self, name: str, unit: str = "", description: str = "") -> BrokenCounter:
        return BrokenCounter()


def test_a_meter_whose_counts_raise_never_breaks_minting_or_verifying() -> None:
    # Before: the meter's exception escaped encode() and decode(), documented never to raise.
    codec = rs.Codec(SECRET, mode="encrypted", metrics=BrokenMeter(), guard=rs.MemoryGuard())
    token = codec.encode("state", now=NOW)
    outcomes = [codec.decode(token, now=NOW), codec.decode(token, now=NOW), codec.decode("v1e.x", now=NOW)]
    with pytest.raises(rs.InvalidToken) as refused:
        codec.verify(token, now=NOW)
    assert (outcomes, refused.value.reason) == (["state", None, None], rs.Reason.REPLAYED)


BROKEN_METER_SCRIPT = """
import logging, os
import requeststate as rs
logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")

class Counter:
    def add(self, amount, attributes):
        raise RuntimeError("the exporter is down")

class Meter:
    def create_counter(self, name, unit="", description=""):
        return Counter()

codec = rs.Codec(os.urandom(32), mode="signed", metrics=Meter())
for _ in range(5):
    assert codec.decode(codec.encode("state")) == "state"
    assert codec.decode("v1.x") is None
"""


def test_counts_that_fail_are_logged_once_per_process() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BROKEN_METER_SCRIPT], capture_output=True, text=True, timeout=60, check=True
    )
    warnings = [line for line in done.stderr.splitlines() if line.startswith("WARNING")]
    assert warnings == [
        "WARNING requeststate: an OpenTelemetry counter raised: this count and every later one that fails "
        "are dropped (logged once per process); tokens are minted and verified as before"
    ]
    assert "RuntimeError: the exporter is down" in done.stderr
