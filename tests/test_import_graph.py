"""The package's import graph, read from its source: no cycle, and integrations on the public API only."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import requeststate

PACKAGE = Path(requeststate.__file__).parent
INTEGRATIONS = ("mcp", "redis", "sqlite", "postgres", "probe", "bench", "cli", "pytest_plugin")
GUARD_URL = "requeststate._guard_url"
SEAM = "requeststate._seam"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imported(module: str) -> Iterator[str]:
    """Every requeststate module ``module`` imports, anywhere in it (TYPE_CHECKING and functions too)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("requeststate"))
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            if not target.startswith("requeststate"):
                continue
            # "from . import probe" names a module; "from ._codec import Codec" names a member.
            named = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in MODULES]
            yield from named or [target]


GRAPH = {module: set(imported(module)) & set(MODULES) for module in MODULES}


def integration_of(module: str) -> str | None:
    if module == "requeststate.__main__":  # python -m requeststate: the command line
        return "cli"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in INTEGRATIONS else None


def cycle_from(start: str) -> list[str] | None:
    """A path of imports that leads from ``start`` back to it, or ``None``."""
    stack = [(start, [start])]
    seen: set[str] = set()
    while stack:
        module, path = stack.pop()
        for target in GRAPH[module]:
            if target == start:
                return [*path, start]
            if target not in seen:
                seen.add(target)
                stack.append((target, [*path, target]))
    return None


def test_the_graph_is_read_from_every_module() -> None:
    # The reading itself: the codec's own imports are found, or every check below is vacuous.
    assert {"requeststate._envelope", "requeststate._options", "requeststate._claims"} <= GRAPH[
        "requeststate._codec"
    ]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_itself_back(module: str) -> None:
    assert cycle_from(module) is None


@pytest.mark.parametrize("module", sorted(m for m in MODULES if integration_of(m)))
def test_an_integration_imports_the_core_only_through_its_public_api_and_the_seam(module: str) -> None:
    own = f"requeststate.{integration_of(module)}"
    reached = {
        target
        for target in GRAPH[module]
        if target != own and not target.startswith(f"{own}.") and target not in ("requeststate", SEAM)
    }
    # Another integration's public package is allowed (the CLI runs the probe); nothing private.
    assert {target for target in reached if integration_of(target) is None or "._" in target} == set()


@pytest.mark.parametrize("module", sorted(m for m in MODULES if integration_of(m) is None))
def test_the_core_never_imports_an_integration(module: str) -> None:
    assert {target for target in GRAPH[module] if integration_of(target)} == set()


def named_modules(module: str) -> set[str]:
    """The requeststate modules ``module`` names in a string: what it may import by name, at run time."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("requeststate.")
    }


def test_the_core_imports_by_name_only_in_guard_from_url() -> None:
    # importlib.import_module is an import no statement shows: the one place it may run is
    # guard_from_url, which reaches the integration of the store a URL names (docs/architecture.md).
    callers = {
        module
        for module, path in MODULES.items()
        if integration_of(module) is None and "import_module" in path.read_text(encoding="utf-8")
    }
    assert callers == {GUARD_URL}


def test_guard_from_url_names_only_the_stores_integrations() -> None:
    assert named_modules(GUARD_URL) == {"requeststate.redis", "requeststate.sqlite", "requeststate.postgres"}
    assert {integration_of(module) for module in named_modules(GUARD_URL)} == {"redis", "sqlite", "postgres"}
