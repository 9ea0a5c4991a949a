"""The speed targets (issues 13 and 21), judged from one run: each PASS, FAIL or SKIP with its figure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from .cases import size_label
from .importtime import IMPORT_TARGET_MS, NOT_AT_IMPORT
from .run import Results, Timing

__all__ = ["FLOOR_LIMITS", "FLOOR_OF", "REFUSALS", "Status", "Target", "best_ratio", "judge"]

# The most each op of each mode may cost against its floor, at the smallest state,
# in pure Python (issue 21).
FLOOR_LIMITS: Final[dict[tuple[str, str], float]] = {
    ("signed", "encode"): 1.4,
    ("signed", "decode"): 1.4,
    ("encrypted", "encode"): 2.0,
    ("encrypted", "decode"): 2.0,
}
# What each floor is, named beside every ratio against it.
FLOOR_OF: Final = {
    ("signed", "encode"): "hmac.digest + base64url",
    ("signed", "decode"): "base64url decode + hmac.digest + compare_digest",
    ("encrypted", "encode"): "os.urandom(12) + AESGCM.encrypt + base64url",
    ("encrypted", "decode"): "base64url decode + AESGCM.decrypt",
    ("xchacha", "encode"): "os.urandom(24) + libsodium XChaCha20-Poly1305 + base64url",
    ("xchacha", "decode"): "base64url decode + libsodium XChaCha20-Poly1305",
}
REJECTED_LIMIT: Final = 1.2
OVERSIZED_LIMIT: Final = 0.5
SCALING_PER_CORE: Final = 0.9
GROWTH_LIMIT_BYTES: Final = 4096
MCP_PEER: Final = "mcp SDK"
REFUSALS: Final = ("decode tampered", "decode wrong subject", "decode expired")

Status = Literal["PASS", "FAIL", "SKIP"]


@dataclass(frozen=True)
class Target:
    """One target of the issue and how this run did."""

    name: str
    status: Status
    detail: str


def _status(ok: bool) -> Status:
    return "PASS" if ok else "FAIL"


def best_ratio(numerator: Timing | None, denominator: Timing | None) -> float | None:
    """Best over best, within one run; ``None`` when either was not measured."""
    if numerator is None or denominator is None:
        return None
    return numerator.best_us / denominator.best_us


def _floor_targets(results: Results, size: int) -> Iterable[Target]:
    for mode in results.modes:
        for op in ("encode", "decode"):
            limit = FLOOR_LIMITS.get((mode, op))
            if limit is None:
                continue
            name = f"Codec.{op} {size_label(size)} {mode} <= {limit}x floor ({FLOOR_OF[mode, op]})"
            ratio = best_ratio(results.timing(mode, op, size), results.timing(mode, f"{op} floor", size))
            if ratio is None:
                yield Target(name, "SKIP", "no floor measured")
            else:
                yield Target(name, _status(ratio <= limit), f"{ratio:.2f}x")


def _codec_targets(results: Results, size: int) -> Iterable[Target]:
    # A Codec built once must cost no more than the functions over their cached one.
    for mode in results.modes:
        for op in ("encode", "decode"):
            name = f"Codec.{op} {mode} as fast or faster than the {op} function ({size_label(size)})"
            ratio = best_ratio(results.timing(mode, op, size), results.timing(mode, f"{op} function", size))
            if ratio is None:
                yield Target(name, "SKIP", "not measured")
            else:
                yield Target(name, _status(ratio <= 1.0), f"{ratio:.2f}x the function")


def _peer_targets(results: Results) -> Iterable[Target]:
    # The compiled build's targets against the mcp SDK's round (issue 13) went with it: the
    # round table still shows each ratio. The pure build's targets are against the floors.
    for mode in results.modes:
        name = f"round {mode} ahead of every peer (every size)"
        ratios = [
            (ratio, peer, peer_size)
            for peer in results.peers
            for peer_size in results.settings.sizes
            if (
                ratio := best_ratio(
                    results.timing(peer, "round", peer_size), results.timing(mode, "round", peer_size)
                )
            )
            is not None
        ]
        if not ratios:
            yield Target(name, "SKIP", "no peer measured")
            continue
        closest, peer, peer_size = min(ratios)
        yield Target(
            name, _status(closest > 1.0), f"closest: {peer} at {size_label(peer_size)}, {closest:.2f}x"
        )


def _refusal_targets(results: Results, smallest: int) -> Iterable[Target]:
    for mode in results.modes:
        worst = max(
            (ratio, refusal, size)
            for refusal in REFUSALS
            for size in results.settings.sizes
            if (
                ratio := best_ratio(results.timing(mode, refusal, size), results.timing(mode, "decode", size))
            )
            is not None
        )
        ratio, refusal, size = worst
        yield Target(
            f"refused {mode} <= {REJECTED_LIMIT}x a valid decode (every size)",
            _status(ratio <= REJECTED_LIMIT),
            f"worst: {refusal.removeprefix('decode ')} at {size_label(size)}, {ratio:.2f}x",
        )
        oversized = best_ratio(
            results.timing(mode, "decode oversized", smallest), results.timing(mode, "decode", smallest)
        )
        if oversized is not None:
            yield Target(
                f"oversized {mode} <= {OVERSIZED_LIMIT}x a valid {size_label(smallest)} decode",
                _status(oversized <= OVERSIZED_LIMIT),
                f"{oversized:.2f}x",
            )


def judge(results: Results) -> list[Target]:
    """Every target, PASS, FAIL or SKIP (not measured in this run)."""
    smallest = min(results.settings.sizes)
    targets = [
        *_floor_targets(results, smallest),
        *_codec_targets(results, smallest),
        *_peer_targets(results),
        *_refusal_targets(results, smallest),
    ]
    scaling = results.scaling
    if scaling is None or scaling.processes < 2:
        targets.append(
            Target("multi-core scaling", "SKIP", "not measured" if scaling is None else "one core")
        )
    else:
        limit = SCALING_PER_CORE * scaling.processes
        targets.append(
            Target(
                f"multi-core scaling >= {limit:.1f}x on {scaling.processes} cores",
                _status(scaling.factor >= limit),
                f"{scaling.factor:.2f}x",
            )
        )
    if results.import_time is None:
        targets.append(Target("import requeststate", "SKIP", "not measured"))
    else:
        took = results.import_time
        targets.append(
            Target(
                f"import requeststate <= {IMPORT_TARGET_MS:.0f} ms (-X importtime, best of {took.runs})",
                _status(took.best_ms <= IMPORT_TARGET_MS),
                f"{took.best_ms:.1f} ms; its imports alone {took.dependencies_ms:.1f} ms, "
                f"requeststate's own code {took.best_ms - took.dependencies_ms:.1f} ms",
            )
        )
        targets.append(
            Target(
                f"import requeststate loads none of {', '.join(NOT_AT_IMPORT)}",
                _status(not took.unwanted),
                f"loads {', '.join(took.unwanted)}" if took.unwanted else "none loaded",
            )
        )
    for row in results.memory:
        targets.append(
            Target(
                f"memory {row.op} {row.mode}: no growth (<= {GROWTH_LIMIT_BYTES} B in {row.use.calls} calls)",
                _status(row.use.growth_bytes <= GROWTH_LIMIT_BYTES),
                f"{row.use.growth_bytes} B, peak {row.use.peak_bytes} B per call",
            )
        )
    return targets
