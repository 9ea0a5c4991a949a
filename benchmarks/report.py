"""The speed targets (issue 13), judged from one run, and the run written as tables, JSON and a chart."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from .cases import OVERSIZED_TOKEN_CHARS, size_label
from .guards import ASYNC_CONCURRENCY, STATE_SIZE, GuardResults
from .importtime import IMPORT_TARGET_MS, NOT_AT_IMPORT
from .run import Results, Timing

__all__ = ["DEFINITIONS", "Target", "judge", "render", "to_json", "write_chart"]

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
CHART_FLOOR_LIMIT: Final = FLOOR_LIMITS["encrypted", "decode"]
REJECTED_LIMIT: Final = 1.2
OVERSIZED_LIMIT: Final = 0.5
SCALING_PER_CORE: Final = 0.9
GROWTH_LIMIT_BYTES: Final = 4096
MCP_PEER: Final = "mcp SDK"
REFUSALS: Final = ("decode tampered", "decode wrong subject", "decode expired")

DEFINITIONS: Final = (
    "Times are µs per call: best and median over interleaved samples (each sample a timeit loop, GC off); "
    "ops/s is from the median. Every ratio divides best by best, within this run.",
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
    "minted before the clock starts, 64 B state; each sample a batch of decodes, GC off, the cases of a "
    "group interleaved. Added = guarded minus unguarded time of the same call, best - best and "
    "median - median. Redis: a loopback redis-server the run starts without persistence (one claim "
    "script per claim, which reads the marker and adds to a sorted set, one round trip). Memory per held id: "
    "traced bytes a MemoryGuard keeps after decode "
    "claimed N fresh tokens (dict and heap entries, the id string), divided by N.",
    "Redis claims: RedisGuard.claim (one after another) and AsyncRedisGuard.claim "
    f"({ASYNC_CONCURRENCY} at a time in one event loop) of fresh ids on loopback: one redis-server, a "
    "Redis Cluster of 3 masters. "
    "Claims/s = claims / wall time of all of them; p50 and p99 of single claim latencies.",
)

Status = Literal["PASS", "FAIL", "SKIP"]


@dataclass(frozen=True)
class Target:
    """One target of the issue and how this run did."""

    name: str
    status: Status
    detail: str


def _status(ok: bool) -> Status:
    return "PASS" if ok else "FAIL"


def _ratio(numerator: Timing | None, denominator: Timing | None) -> float | None:
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
            ratio = _ratio(results.timing(mode, op, size), results.timing(mode, f"{op} floor", size))
            if ratio is None:
                yield Target(name, "SKIP", "no floor measured")
            else:
                yield Target(name, _status(ratio <= limit), f"{ratio:.2f}x")


def _codec_targets(results: Results, size: int) -> Iterable[Target]:
    # A Codec built once must cost no more than the functions over their cached one.
    for mode in results.modes:
        for op in ("encode", "decode"):
            name = f"Codec.{op} {mode} as fast or faster than the {op} function ({size_label(size)})"
            ratio = _ratio(results.timing(mode, op, size), results.timing(mode, f"{op} function", size))
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
                ratio := _ratio(
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
            if (ratio := _ratio(results.timing(mode, refusal, size), results.timing(mode, "decode", size)))
            is not None
        )
        ratio, refusal, size = worst
        yield Target(
            f"refused {mode} <= {REJECTED_LIMIT}x a valid decode (every size)",
            _status(ratio <= REJECTED_LIMIT),
            f"worst: {refusal.removeprefix('decode ')} at {size_label(size)}, {ratio:.2f}x",
        )
        oversized = _ratio(
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
                row.append(_times(_ratio(ours, floor)))
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
                row += [_us(refused), _times(_ratio(refused, valid))]
            oversized = results.timing(mode, "decode oversized", size) if size == smallest else None
            row += [_us(oversized), _times(_ratio(oversized, valid))]
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
        f"Redis: {guards.redis}. {guards.rounds} samples of {guards.batch} decodes per case.",
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
        [row.setup, row.path, "-", "-", "-", "-", f"not available: {row.unavailable}"]
        if row.per_second is None or row.p50_us is None or row.p99_us is None
        else [
            row.setup,
            row.path,
            f"{row.claims:,}",
            f"{row.per_second:,.0f}",
            f"{row.p50_us:.0f}",
            f"{row.p99_us:.0f}",
            "",
        ]
        for row in guards.claims
    ]
    headers = ["setup", "call", "claims", "claims/s", "p50 µs", "p99 µs", "note"]
    return ["", "### Redis claims under load (fresh ids, loopback)", "", _table(headers, rows)]


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
        "rounds": guards.rounds,
        "batch": guards.batch,
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


def write_chart(results: Results, path: Path) -> bool:
    """Draw the per-round and floor-ratio bars as a PNG; ``False`` if matplotlib is not installed."""
    try:
        matplotlib = importlib.import_module("matplotlib")
    except ModuleNotFoundError:
        return False
    matplotlib.use("Agg")
    pyplot = importlib.import_module("matplotlib.pyplot")
    smallest = min(results.settings.sizes)
    figure, (rounds_axes, floor_axes) = pyplot.subplots(1, 2, figsize=(13, 5.5))

    codecs = [codec for codec in [*results.modes, *results.peers] if results.timing(codec, "round", smallest)]
    times = [timing.best_us for codec in codecs if (timing := results.timing(codec, "round", smallest))]
    colours = ["tab:blue" if codec in results.modes else "tab:gray" for codec in codecs]
    bars = rounds_axes.barh(
        [f"requeststate {c}" if c in results.modes else c for c in codecs], times, color=colours
    )
    rounds_axes.bar_label(bars, labels=[f"{t:.1f}" for t in times], padding=3)
    rounds_axes.invert_yaxis()
    rounds_axes.margins(x=0.12)
    rounds_axes.set_xlabel(f"µs per round (encode + decode), {size_label(smallest)} state, best")
    rounds_axes.set_title("Per round, lower is better")

    labels = [f"{mode}\n{op}" for mode in results.modes for op in ("encode", "decode")]
    width = 0.8 / len(results.settings.sizes)
    for index, size in enumerate(results.settings.sizes):
        ratios = [
            _ratio(results.timing(mode, op, size), results.timing(mode, f"{op} floor", size)) or 0.0
            for mode in results.modes
            for op in ("encode", "decode")
        ]
        positions = [
            slot + (index - (len(results.settings.sizes) - 1) / 2) * width for slot in range(len(labels))
        ]
        floor_axes.bar(positions, ratios, width, label=size_label(size))
    floor_axes.axhline(
        CHART_FLOOR_LIMIT,
        color="tab:red",
        linestyle="--",
        label=f"v1e. decode target {CHART_FLOOR_LIMIT}x ({size_label(smallest)})",
    )
    floor_axes.axhline(1.0, color="black", linewidth=0.8)
    floor_axes.set_xticks(range(len(labels)), labels)
    floor_axes.set_ylabel("time / floor time (best)")
    floor_axes.set_title("Against the floor, lower is better")
    floor_axes.legend()

    machine = results.machine
    figure.suptitle(
        f"requeststate {results.versions.get('requeststate')} · {machine['cpu']}, {machine['cores']} cores · "
        f"{machine['python']} · {machine['date']}",
        fontsize=10,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
    return True
