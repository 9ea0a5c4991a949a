"""benchmarks.mcp_rounds: each boundary's round hands the handler its state, and the report prints."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from benchmarks import mcp_rounds
from benchmarks.mcp_rounds import round_cases


def test_each_boundary_round_hands_the_handler_the_state() -> None:
    cases = round_cases(bytes(range(32)))
    assert sorted(cases) == sorted(["SDK boundary", "protect()", 'protect(bind="mcpd")', "use_codec()"])
    assert len({case() for case in cases.values()}) == 1


def test_the_report_compares_every_boundary_to_the_sdks(capsys: pytest.CaptureFixture[str]) -> None:
    assert mcp_rounds.main(["--rounds", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5
    assert lines[0].strip().startswith("SDK boundary")
    assert lines[0].endswith("1.00x SDK boundary")
    assert lines[-1].strip().startswith("added bindings")
