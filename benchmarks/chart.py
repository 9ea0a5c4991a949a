"""The run drawn: per-round times and the ratios to the floors, as one PNG (with matplotlib)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Final

from .cases import size_label
from .run import Results
from .targets import FLOOR_LIMITS, best_ratio

__all__ = ["write_chart"]

CHART_FLOOR_LIMIT: Final = FLOOR_LIMITS["encrypted", "decode"]


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
            best_ratio(results.timing(mode, op, size), results.timing(mode, f"{op} floor", size)) or 0.0
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
