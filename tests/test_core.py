"""requeststate._core: the strict core, as the compiled build needs it written.

Its behaviour is the Codec's, tested in test_codec.py against both builds
(scripts/matrix.py). What only the compiled build would notice is checked here,
on the source, in every run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parent.parent / "requeststate" / "_core.py"


def _method(name: str) -> ast.FunctionDef:
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    (core,) = (node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Core")
    (method,) = (node for node in core.body if isinstance(node, ast.FunctionDef) and node.name == name)
    return method


@pytest.mark.parametrize(
    ("method", "passed_through"),
    [
        ("encode", ["state", "subject", "tool", "now"]),
        ("verified", ["token", "subject", "tool", "now", "state_type"]),
    ],
)
def test_every_value_a_caller_passes_through_is_typed_object(method: str, passed_through: list[str]) -> None:
    # Compiled, a parameter typed str would raise mypyc's own TypeError for an
    # int subject, where decode must refuse it and encode must say what an
    # identity must be. Only the compiled run would see it: this sees it in every run.
    arguments = _method(method).args.args[1:]
    annotations = [(each.arg, ast.unparse(each.annotation or ast.Constant(None))) for each in arguments]
    assert annotations == [(name, "object") for name in passed_through]
