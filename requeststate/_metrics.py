"""Counters of the tokens a codec mints, accepts and refuses, on OpenTelemetry when it is installed.

With ``opentelemetry-api`` installed (``pip install 'requeststate[otel]'``),
every ``Codec`` counts on the meter ``requeststate`` of the global
``MeterProvider``: the API forwards to whatever provider the application sets,
before or after it imports requeststate, and until one is set a count is one
no-op call. Without the package, nothing is imported and nothing is counted.
Names and attributes: docs/metrics.md.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Mapping
from functools import cache
from typing import Final, Protocol, final

from ._errors import Reason
from ._modes import Mode
from ._version import __version__

__all__ = ["Counts", "Meter", "default_meter"]

_GUARD_REASONS: Final = frozenset(
    {
        Reason.REPLAYED,
        Reason.GUARD_UNAVAILABLE,
        Reason.OUTSIDE_MEMORY,
        Reason.IN_PROGRESS,
        Reason.OUTCOME_UNKNOWN,
        Reason.ANSWER_TOO_LARGE,
    }
)
# Held for ever by the first count that fails: one log line per process, however many fail.
_FIRST_DROP: Final = threading.Lock()


class Counter(Protocol):
    """The part of an OpenTelemetry ``Counter`` that is used."""

    def add(self, amount: int, attributes: Mapping[str, str], /) -> None: ...


class Meter(Protocol):
    """The part of an OpenTelemetry ``Meter`` that is used, such as ``provider.get_meter("requeststate")``."""

    def create_counter(self, name: str, unit: str = ..., description: str = ...) -> Counter: ...
    def __hash__(self) -> int: ...


@cache
def default_meter() -> Meter | None:
    """The meter ``requeststate`` of OpenTelemetry's global provider; ``None`` without its API."""
    # find_spec of a top-level name looks without importing: no opentelemetry, no cost.
    if importlib.util.find_spec("opentelemetry") is None:
        return None
    try:
        from opentelemetry import metrics
    except ImportError:  # another opentelemetry distribution, without the API
        return None
    return metrics.get_meter("requeststate", __version__)


@cache
def _counters(meter: Meter) -> tuple[Counter, ...]:
    # Once per meter, however many codecs count on it: a meter keeps every instrument made on it.
    def counter(name: str, description: str) -> Counter:
        return meter.create_counter(f"requeststate.{name}", unit="{token}", description=description)

    return (
        counter("tokens.minted", "requestState tokens minted"),
        counter("tokens.accepted", "requestState tokens accepted"),
        counter("tokens.refused", "requestState tokens refused"),
        counter("guard.claims", "token ids a replay guard claimed for the first time"),
        counter("guard.refusals", "tokens a replay guard refused"),
    )


@final
class Counts:
    """One codec's counts on ``meter``: every attribute set is built here, so a count is one ``add``.

    ``modes``: the codec's, the first minting. ``attributes``: added to every
    count, each taking few values (``requeststate.mcp`` adds ``method``).
    """

    def __init__(self, meter: Meter, modes: tuple[Mode, ...], /, **attributes: str) -> None:
        self._minted, self._accepted, self._refused, self._claims, self._guard_refusals = _counters(meter)
        # A token is minted in the first mode and accepted in its own; a refusal,
        # whatever the client sent, is the codec's: its modes, so no client
        # chooses an attribute's value.
        self._minting: Final = {"mode": modes[0].value, **attributes}
        self._by_mode: Final = {mode: {"mode": mode.value, **attributes} for mode in Mode}
        configured = ",".join(mode.value for mode in modes)
        self._by_reason: Final = {
            reason: {"mode": configured, "reason": reason.value, **attributes} for reason in Reason
        }

    def minted(self) -> None:
        """Count a token minted."""
        _add(self._minted, self._minting)

    def accepted(self, mode: Mode, claimed: bool) -> None:
        """Count a token of ``mode`` accepted; ``claimed``: a replay guard claimed its id."""
        _add(self._accepted, self._by_mode[mode])
        if claimed:
            _add(self._claims, self._by_mode[mode])

    def refused(self, reason: Reason) -> None:
        """Count a token refused for ``reason``."""
        attributes = self._by_reason[reason]
        _add(self._refused, attributes)
        if reason in _GUARD_REASONS:
            _add(self._guard_refusals, attributes)


def _add(counter: Counter, attributes: Mapping[str, str]) -> None:
    """Count one; a count that fails is dropped, so that a broken meter never breaks a token's path.

    OpenTelemetry's API never raises, but a meter of the application's own can: the
    first failure is logged, once per process, and verification goes on.
    """
    try:
        counter.add(1, attributes)
    except Exception:  # the application's meter: whatever it raises, the token's path goes on
        if _FIRST_DROP.acquire(blocking=False):
            import logging  # here: a rare warning is not worth its import in every process

            logging.getLogger("requeststate").warning(
                "an OpenTelemetry counter raised: this count and every later one that fails are "
                "dropped (logged once per process); tokens are minted and verified as before",
                exc_info=True,
            )
