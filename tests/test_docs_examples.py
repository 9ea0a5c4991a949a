"""Every ```python block of README.md and docs/*.md runs, and every sample output is what the code prints.

The blocks of one file run in order in one namespace, like a reader following
the page. A block that is not meant to run (it needs a server, say) is preceded
by a line ``<!-- not-run: <why> -->``; the marker must give its reason. A block
preceded by ``<!-- file: examples/NAME.py -->`` is that file, whole: it runs here,
and is the file that the examples' own tests run.

A sample output is a ```text block preceded by ``<!-- sample: COMMAND -->``:
COMMAND runs from the repository root and its output must match the block,
line for line, where ``…`` stands for any text (a token, a fingerprint) and a
line of ``…`` alone for any number of lines.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import requeststate as rs
from tests.support.reference import b64

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SAMPLE_PAGES = [ROOT / "README.md", ROOT / "examples" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_SAMPLE = re.compile(r"^<!-- sample: (?P<command>.+?) -->\s*$")
_FENCE = re.compile(r"^(?P<indent>[ \t]*)```python\s*$")
_NOT_RUN = re.compile(r"^\s*<!-- not-run(?P<why>:\s*\S.*?)? -->\s*$")
_FILE = re.compile(r"^\s*<!-- file: (?P<path>\S+) -->\s*$")
# Markdown links and images whose target is not an absolute http(s) URL.
_RELATIVE_LINK = re.compile(r"!?\[[^\]]*\]\((?!https?://)[^)]*\)")


@dataclass(frozen=True)
class Block:
    line: int
    """1-based line of the opening fence."""
    code: str
    runs: bool
    file: str | None = None
    """The repository file the block shows whole, as its ``<!-- file: ... -->`` marker names it."""


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
        shown = _FILE.match(previous)
        file = None if shown is None else shown.group("path")
        blocks.append(Block(line=start, code=code, runs=marker is None, file=file))
        index += 1
    # A broken fence pattern would find nothing and run nothing: every fence is a block.
    assert len(blocks) == text.count("```python"), "a ```python fence was not read as a block"
    return blocks


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_python_block_of_the_page_runs(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The pages read secrets from the environment, as a deployment would.
    monkeypatch.setenv("REQUESTSTATE_KEYS", b64(os.urandom(32)))
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in python_blocks(page.read_text(encoding="utf-8")):
        if block.runs:
            exec(compile(block.code, f"{page.name}:{block.line}", "exec"), namespace)  # noqa: S102 (our docs)


# A release of requeststate named in prose or a sample: "Version 0.4.0", "requeststate 0.4.0",
# "requeststate==0.4.0". A minor series ("0.3's claims") or a figure measured against a past
# release ("against 0.3.0") is history, and is not one.
_RELEASE = re.compile(r"\b(?:Version|requeststate)(?:==| v?)(?P<version>\d+\.\d+\.\d+)\b")
_NAMED = "Version 0.3.0. requeststate==1.2.3, requeststate v4.5.6"
assert [m["version"] for m in _RELEASE.finditer(_NAMED)] == ["0.3.0", "1.2.3", "4.5.6"]
assert _RELEASE.search("requeststate 0.3's claims; against 0.3.0 in the same run") is None
VERSIONED_PAGES = [
    *SAMPLE_PAGES,
    *sorted((ROOT / "examples").glob("*.py")),
]


@pytest.mark.parametrize("page", VERSIONED_PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_a_page_names_no_release_but_the_package_version(page: Path) -> None:
    named = {m["version"] for m in _RELEASE.finditer(page.read_text(encoding="utf-8"))}
    if page.name == "README.md" and page.parent == ROOT:
        assert named == {rs.__version__}  # its Status names the release, as the scan reads it
    else:
        assert named <= {rs.__version__}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_a_block_that_names_its_file_is_that_file_whole(page: Path) -> None:
    for block in python_blocks(page.read_text(encoding="utf-8")):
        if block.file is not None:
            assert block.code + "\n" == (ROOT / block.file).read_text(encoding="utf-8"), (
                f"{page.name}:{block.line} differs from {block.file}"
            )


def test_the_readme_links_to_nothing_that_breaks_off_its_repository() -> None:
    # On a package index page a relative link is broken, and the project has no home to link to yet.
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert _RELATIVE_LINK.findall(text) == []
    assert "github.com/requeststate" not in text


@dataclass(frozen=True)
class Sample:
    page: str
    line: int
    command: str
    expected: tuple[str, ...]


def samples(page: Path) -> list[Sample]:
    """The sample outputs of a page: each ``<!-- sample: ... -->`` marker and the ```text block after it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found = []
    for index, line in enumerate(lines):
        marker = _SAMPLE.match(line)
        if marker is None:
            continue
        if lines[index + 1].strip() != "```text":
            raise ValueError(
                f"{page.name}:{index + 1}: a sample marker must stand right above a ```text block"
            )
        end = lines.index("```", index + 2)
        where = str(page.relative_to(ROOT))
        found.append(Sample(where, index + 1, marker.group("command"), tuple(lines[index + 2 : end])))
    # A broken marker pattern would compare nothing: every marker is a sample.
    assert len(found) == sum(line.startswith("<!-- sample:") for line in lines), (
        f"{page.name}: a marker unread"
    )
    return found


def matches(expected: tuple[str, ...], printed: list[str]) -> bool:
    """Whether ``printed`` is ``expected``, with ``…`` as any text and a line of ``…`` as any lines."""
    pattern = "".join(
        "(?:.*\n)*?" if line == "…" else ".*".join(map(re.escape, line.split("…"))) + "\n"
        for line in expected
    )
    return re.fullmatch(pattern, "".join(line + "\n" for line in printed)) is not None


# The matcher refuses what differs, with and without its wildcards: it cannot pass every sample.
assert matches(("a …", "…", "z"), ["a token", "b", "c", "z"])
assert not matches(("a …", "…", "z"), ["a token", "b", "y"])
assert not matches(("a",), ["a", "b"])


ALL_SAMPLES = [sample for page in SAMPLE_PAGES for sample in samples(page)]


@pytest.mark.parametrize("sample", ALL_SAMPLES, ids=lambda sample: f"{sample.page}:{sample.line}")
def test_each_sample_output_is_what_the_code_prints(sample: Sample) -> None:
    # "python" is this interpreter, "requeststate" its console script, wherever they stand.
    argv = [sys.executable if word == "python" else word for word in shlex.split(sample.command)]
    if argv[0] == "requeststate":
        argv = [sys.executable, "-m", "requeststate", *argv[1:]]
    env = {**os.environ, "REQUESTSTATE_KEYS": b64(os.urandom(32))}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    # The command as a reader types it, not the interpreter this test runs it with.
    printed = done.stdout.replace(sys.executable, "python").rstrip("\n").splitlines()
    assert matches(sample.expected, printed), "\n".join(printed)
