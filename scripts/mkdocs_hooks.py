"""MkDocs hooks (mkdocs.yml ``hooks:``): the benchmark chart joins the site from where it is written.

One file, ``benchmarks/results/bench.png``, never a copy under docs/ that a new
benchmark run would leave stale.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

CHART = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "bench.png"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the chart as ``assets/bench.png``."""
    files.append(File.generated(config, "assets/bench.png", abs_src_path=str(CHART)))
    return files
