"""The run written out: Markdown tables with the targets and their definitions, and plain JSON data."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any, Final

from .cases import OVERSIZED_TOKEN_CHARS, size_label
from .guard_claims import CLAIM_CONCURRENCY
from .guards import STATE_SIZE, GuardResults
from .importtime import NOT_AT_IMPORT
from .run import Results, Timing
from .targets import REFUSALS, Target, best_ratio

__all__ = ["DEFINITIONS", "render", "to_json"]

DEFINITIONS: Final = (
    "Times are µs per call: best and median over interleaved samples (requeststate.bench.measure: each "
    "sample a loop timed with perf_counter_ns, GC on, as in a server); ops/s is from the median. Every "
    "ratio divides best by best, within this run.",
    "Floor: the bare primitives of the mode on the same payload bytes our codec carries "
    "(signed: hmac.digest + base64url; encrypted: os.urandom nonce + AESGCM + base64url; "
    "xchacha: os.urandom nonce + libsodium XChaCha20-Poly1305 + base64url); decode floor = base64url "
    "decode + verify/decrypt.",
    "encode, decode: the methods of one Codec built before the clock starts, as a server holds it; "
    "encode function, decode function: requeststate.encode/decode with the same options, over the "
    "Codec they cache.",
    "Round: one Codec.encode + one Codec.decode of a valid token, what a server does per input-required "
    "round trip. "
    "mcp SDK round: RequestStateBoundary._seal (claims envelope + AESGCMRequestStateCodec.seal) then "
    "_unseal (codec.unseal + json.loads + version, iat, exp, request binding, audience, principal checks).",
    "Refusals: a token with one base64url character changed (tampered), the valid token presented for "
    "another subject, a token past its exp; each decode has the same call shape as the valid one. "
    f"Oversized: a {OVERSIZED_TOKEN_CHARS}-character token (the cap + 1) against a valid 64 B decode.",
    "Throughput: one spawned process per core running rounds (encrypted, 64 B) for a fixed time; "
    "scaling = summed rounds/s of all processes / rounds/s of one process alone.",
    "Memory: tracemalloc after warm-up; growth = traced bytes left after N calls and a full collection; "
    "peak = the most one call needed beyond what was allocated before it.",
    "Replay guard cost: decode (or adecode, awaited one call at a time) of a fresh valid token per call, "
    "minted before its sample's clock starts, 64 B state; each sample a batch of decodes, the cases of a "
    "group interleaved. Added = guarded minus unguarded time of the same call, best - best and "
    "median - median. Redis: a loopback redis-server the run starts without persistence (one claim "
    "script per claim, which reads the marker and adds to a sorted set, one round trip). Memory per held id: "
    "traced bytes a MemoryGuard keeps after decode "
    "claimed N fresh tokens (dict and heap entries, the id string), divided by N.",
    "Redis claims: requeststate.bench.measure_guard, as requeststate bench --guard runs it: Codec.decode "
    "(sync, from threads) and await Codec.adecode (async, from tasks in one event loop) of fresh tokens, "
    f"at {' and '.join(map(str, CLAIM_CONCURRENCY))} at a time, on loopback: one redis-server, a Redis "
    "Cluster of 3 masters. Claims/s = claims / wall time of all of them; p50 and p99 of single claims' "
    "latencies.",
)


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    # A Markdown table padded to line up on a terminal; numbers right-aligned.
    body = [list(row) for row in rows]
    widths = [max(len(cell) for cell in column) for column in zip(headers, *body, strict=True)]
    numeric = [all(_is_number(row[i]) for row in body) and bool(body) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        padded = (
            cell.rjust(w) if right else cell.ljust(w)
            for cell, w, right in zip(cells, widths, numeric, strict=True)
        )
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if right else "-" * (w + 2)
            for w, right in zip(widths, numeric, strict=True)
        )
        + "|"
    )
    return "\n".join([line(headers), rule, *(line(row) for row in body)])


def _is_number(cell: str) -> bool:
    return cell == "-" or cell.lstrip("+-").rstrip("x").replace(",", "").replace(".", "", 1).isdigit()


def _us(timing: Timing | None) -> str:
    return "-" if timing is None else f"{timing.best_us:.2f}"


def _times(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"


def _codec_table(results: Results) -> str:
    rows = []
    for mode in results.modes:
        for size in results.settings.sizes:
            row = [mode, size_label(size)]
            for op in ("encode", "decode"):
                ours, floor = results.timing(mode, op, size), results.timing(mode, f"{op} floor", size)
                assert ours is not None
                row += [f"{ours.best_us:.2f}", f"{ours.median_us:.2f}", f"{ours.ops_per_s:,.0f}", _us(floor)]
                row.append(_times(best_ratio(ours, floor)))
            rows.append(row)
    headers = ["mode", "state"]
    for op in ("encode", "decode"):
        headers += [f"{op} best", "median", "ops/s", "floor", "x floor"]
    return _table(headers, rows)


def _refusal_table(results: Results) -> str:
    rows = []
    smallest = min(results.settings.sizes)
    for mode in results.modes:
        for size in results.settings.sizes:
            valid = results.timing(mode, "decode", size)
            row = [mode, size_label(size), _us(valid)]
            for refusal in REFUSALS:
                refused = results.timing(mode, refusal, size)
                row += [_us(refused), _times(best_ratio(refused, valid))]
            oversized = results.timing(mode, "decode oversized", size) if size == smallest else None
            row += [_us(oversized), _times(best_ratio(oversized, valid))]
            rows.append(row)
    headers = [
        "mode",
        "state",
        "valid",
        "tampered",
        "x",
        "wrong subject",
        "x",
        "expired",
        "x",
        "oversized",
        "x",
    ]
    return _table(headers, rows)


def _round_table(results: Results) -> str:
    sizes = results.settings.sizes
    # Our slowest mode's round at each size: a peer above 1.00x is slower than every mode of ours.
    slowest = {size: max(_best(results, mode, "round", size) for mode in results.modes) for size in sizes}
    rows = []
    for codec in [*results.modes, *results.peers]:
        row = [codec]
        for size in sizes:
            timing = results.timing(codec, "round", size)
            row += [_us(timing), "-" if timing is None else f"{timing.best_us / slowest[size]:.2f}x"]
        rows.append(row)
    headers = ["codec"]
    for size in sizes:
        headers += [f"{size_label(size)} µs", "/ our slowest"]
    return _table(headers, rows)


def _best(results: Results, codec: str, op: str, size: int) -> float:
    timing = results.timing(codec, op, size)
    if timing is None:
        raise LookupError(f"{codec} {op} at {size} B was not measured")
    return timing.best_us


def _scaling_table(results: Results) -> str:
    scaling = results.scaling
    assert scaling is not None
    rows = [
        ["1", f"{scaling.single_rounds_per_s:,.0f}", "1.00x"],
        [str(scaling.processes), f"{scaling.all_rounds_per_s:,.0f}", f"{scaling.factor:.2f}x"],
    ]
    return _table(["processes", "rounds/s", "scaling"], rows)


def _memory_table(results: Results) -> str:
    rows = [
        [
            row.mode,
            row.op,
            f"{row.use.calls:,}",
            str(row.use.growth_bytes),
            f"{row.use.growth_per_call:.3f}",
            str(row.use.peak_bytes),
        ]
        for row in results.memory
    ]
    return _table(["mode", "op", "calls", "growth B", "B/call", "peak B/call"], rows)


def _added(value: float | None, baseline: bool) -> str:
    return "-" if value is None or baseline else f"{value:+.2f}"


def _guard_table(guards: GuardResults) -> str:
    rows = []
    for row in guards.rows:
        if row.unavailable is not None or row.best_us is None or row.median_us is None:
            rows.append([row.mode, row.path, row.guard, "-", "-", "-", "-", "not available"])
            continue
        baseline = row.guard == "none"
        note = "baseline" if baseline else ""
        if row.refused:
            note = f"{row.refused} of {row.batch * row.samples} refused (claim timed out)"
        rows.append(
            [
                row.mode,
                row.path,
                row.guard,
                f"{row.best_us:.2f}",
                f"{row.median_us:.2f}",
                _added(row.added_best_us, baseline),
                _added(row.added_median_us, baseline),
                note,
            ]
        )
    headers = ["mode", "call", "guard", "best µs", "median µs", "added best", "added median", "note"]
    return _table(headers, rows)


def _guard_section(guards: GuardResults) -> list[str]:
    lines = [
        f"### Replay guard cost ({size_label(STATE_SIZE)} state, a fresh valid token per call, µs per call)",
        "",
        f"Redis: {guards.redis}. Interleaved samples of fresh decodes, {guards.seconds:g} s a group.",
        "",
        _guard_table(guards),
    ]
    memory = guards.memory
    if memory is not None:
        lines += [
            "",
            f"MemoryGuard memory: {memory.bytes_per_id:.0f} B per held id "
            f"({memory.ids:,} ids held: {memory.retained_bytes / 2**20:.1f} MiB traced).",
        ]
    if guards.claims:
        lines += _claims_section(guards)
    return lines


def _claims_section(guards: GuardResults) -> list[str]:
    rows = [
        [row.setup, row.path, "-", "-", "-", "-", "-", f"not available: {row.unavailable}"]
        if row.per_second is None or row.p50_us is None or row.p99_us is None
        else [
            row.setup,
            row.path,
            str(row.concurrency),
            f"{row.claims:,}",
            f"{row.per_second:,.0f}",
            f"{row.p50_us:.0f}",
            f"{row.p99_us:.0f}",
            "",
        ]
        for row in guards.claims
    ]
    headers = ["setup", "path", "at once", "claims", "claims/s", "p50 µs", "p99 µs", "note"]
    return [
        "",
        "### Redis claims under load (fresh tokens, requeststate.bench.measure_guard, loopback)",
        "",
        _table(headers, rows),
    ]


def _busy_warning(results: Results) -> list[str]:
    # A load above half the cores means other work shared the CPU with every sample.
    loads = [results.machine.get(key, "n/a") for key in ("load average at start", "load average at end")]
    busiest = max((float(load.split(",")[0]) for load in loads if load != "n/a"), default=0.0)
    if busiest <= int(results.machine["cores"]) / 2:
        return []
    cores = results.machine["cores"]
    return [
        f"Warning: the machine was busy (1-minute load up to {busiest:.2f} on {cores} cores): "
        "medians, ops/s and throughput are inflated by other work; best times and their ratios much less so."
    ]


def render(results: Results, targets: Sequence[Target]) -> str:
    """The whole report as Markdown: machine, tables, targets, definitions."""
    installed = ", ".join(f"{name} {version}" for name, version in results.versions.items() if version)
    missing = ", ".join(name for name, version in results.versions.items() if not version)
    smallest = min(results.settings.sizes)
    kind = "quick" if results.settings.quick else "full"
    parts = [
        f"requeststate benchmark ({kind} run, {results.seconds:.0f} s)",
        "",
        "Machine: " + "; ".join(f"{key} {value}" for key, value in results.machine.items()),
        f"Versions: {installed}" + (f"; not installed: {missing}" if missing else ""),
        *_busy_warning(results),
        "",
        "### encode and decode against the floor (µs per op)",
        "",
        _codec_table(results),
        "",
        f"### Refused tokens (decode, best µs; x = / valid decode; oversized only at {size_label(smallest)})",
        "",
        _refusal_table(results),
        "",
        "### Per round: encode + decode of a valid token (best µs; / our slowest mode at that size)",
        "",
        _round_table(results),
    ]
    if results.scaling is not None:
        parts += ["", f"### Throughput, encrypted {size_label(smallest)} rounds", "", _scaling_table(results)]
    parts += [
        "",
        f"### Memory ({size_label(smallest)} state, tracemalloc)",
        "",
        _memory_table(results),
    ]
    if results.guards is not None:
        parts += ["", *_guard_section(results.guards)]
    if results.import_time is not None:
        took = results.import_time
        parts += [
            "",
            "### import requeststate (python -X importtime, fresh interpreters)",
            "",
            f"Best {took.best_ms:.1f} ms, median {took.median_ms:.1f} ms of {took.runs} runs; "
            f"{took.modules} modules loaded; of {', '.join(NOT_AT_IMPORT)}: "
            f"{', '.join(took.unwanted) or 'none'}.",
        ]
    parts += [
        "",
        "### Targets",
        "",
        *(f"- {target.status}  {target.name}: {target.detail}" for target in targets),
        "",
        "### Definitions",
        "",
        *(f"- {definition}" for definition in DEFINITIONS),
    ]
    return "\n".join(parts) + "\n"


def _guards_json(guards: GuardResults | None) -> dict[str, Any] | None:
    if guards is None:
        return None
    memory = guards.memory
    return {
        "seconds": guards.seconds,
        "redis": guards.redis,
        "rows": [dataclasses.asdict(row) for row in guards.rows],
        "claims": [dataclasses.asdict(row) for row in guards.claims],
        "memory": None
        if memory is None
        else {**dataclasses.asdict(memory), "bytes_per_id": memory.bytes_per_id},
    }


def to_json(results: Results, targets: Sequence[Target]) -> dict[str, Any]:
    """The run as plain JSON data: settings, machine, versions, timings, memory, scaling, guards, targets."""
    scaling = results.scaling
    return {
        "schema": 1,
        "seconds": round(results.seconds, 1),
        "settings": dataclasses.asdict(results.settings),
        "machine": results.machine,
        "versions": results.versions,
        "modes": results.modes,
        "peers": results.peers,
        "definitions": list(DEFINITIONS),
        "timings": [dataclasses.asdict(timing) for timing in results.timings],
        "memory": [
            {
                "mode": row.mode,
                "op": row.op,
                **dataclasses.asdict(row.use),
                "growth_per_call": row.use.growth_per_call,
            }
            for row in results.memory
        ],
        "scaling": None if scaling is None else {**dataclasses.asdict(scaling), "factor": scaling.factor},
        "guards": _guards_json(results.guards),
        "import_time": None if results.import_time is None else dataclasses.asdict(results.import_time),
        "targets": [dataclasses.asdict(target) for target in targets],
    }
