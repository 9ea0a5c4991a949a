"""Every ```python block of README.md and docs/*.md runs, as a reader would run it.

The blocks of one file run in order in one namespace, like a reader following
the page. A block that is not meant to run (it needs a server, say) is preceded
by a line ``<!-- not-run: <why> -->``; the marker must give its reason.
"""

from __future__ import annotations

import os
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.reference import b64

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^(?P<indent>[ \t]*)```python\s*$")
_NOT_RUN = re.compile(r"^\s*<!-- not-run(?P<why>:\s*\S.*?)? -->\s*$")
# Markdown links and images whose target is not an absolute http(s) URL.
_RELATIVE_LINK = re.compile(r"!?\[[^\]]*\]\((?!https?://)[^)]*\)")


@dataclass(frozen=True)
class Block:
    line: int
    """1-based line of the opening fence."""
    code: str
    runs: bool


def python_blocks(text: str) -> list[Block]:
    """The ```python blocks of a Markdown text, dedented, each marked whether it runs."""
    lines = text.splitlines()
    blocks = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        index += 1
        if opening is None:
            continue
        start = index
        while index < len(lines) and lines[index].strip() != "```":
            index += 1
        previous = next((line for line in reversed(lines[: start - 1]) if line.strip()), "")
        marker = _NOT_RUN.match(previous)
        if marker is not None and marker.group("why") is None:
            raise ValueError(f"line {start - 1}: a not-run marker must say why: <!-- not-run: <why> -->")
        code = textwrap.dedent("\n".join(lines[start:index]))
        blocks.append(Block(line=start, code=code, runs=marker is None))
        index += 1
    return blocks


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_python_block_of_the_page_runs(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The pages read secrets from the environment, as a deployment would.
    monkeypatch.setenv("REQUESTSTATE_KEYS", b64(os.urandom(32)))
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in python_blocks(page.read_text(encoding="utf-8")):
        if block.runs:
            exec(compile(block.code, f"{page.name}:{block.line}", "exec"), namespace)  # noqa: S102 (our docs)


def test_the_pages_hold_python_blocks_that_run() -> None:
    # Guards the extractor itself: a broken fence pattern would run nothing and pass.
    counts = {page.name: sum(b.runs for b in python_blocks(page.read_text())) for page in PAGES}
    assert counts["README.md"] >= 6
    assert counts["quickstart.md"] >= 5


def test_a_marked_block_does_not_run_and_an_indented_one_does() -> None:
    text = (
        "x\n<!-- not-run: needs a server -->\n```python\nraise SystemExit\n```\n"
        "\n  ```python\n  y = 1\n  ```\n"
    )
    assert python_blocks(text) == [Block(3, "raise SystemExit", False), Block(7, "y = 1", True)]


def test_a_not_run_marker_without_a_reason_is_refused() -> None:
    with pytest.raises(ValueError, match="must say why"):
        python_blocks("<!-- not-run -->\n```python\npass\n```\n")


def test_the_readme_links_only_to_absolute_urls() -> None:
    # On a package index page a relative link (or the benchmark chart) is broken.
    assert _RELATIVE_LINK.findall((ROOT / "README.md").read_text(encoding="utf-8")) == []
