"""Mutation testing of the core modules with mutmut 3, from a throwaway copy of the repository.

    python scripts/mutation.py [--workdir build/mutation] [--min-score 95] [--max-children 2]

The core is the codec and everything it is built from (``CORE_MODULES``); the
``requeststate.mcp`` package, ``requeststate.redis``, the CLI and the probe
are not mutated. Each mutant runs against the fast tests of the core
(``CORE_TESTS``): mutmut picks, of those, the tests that call the mutated function.

mutmut writes a ``mutants/`` tree into its working directory, so this copies the
package, the tests, the docs and pyproject.toml into ``--workdir`` (under ``build/``, which
git ignores), writes mutmut's configuration there as a ``setup.cfg``, runs
``mutmut run``, and prints the score: killed / (total - skipped), where a
timeout counts as killed. Exits 1 when the score is below ``--min-score``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The core: the codec and everything it is built from. Not the requeststate.mcp
# package, requeststate.redis, the CLI (requeststate.cli), the probe or the bench; nor _metrics.py
# (OpenTelemetry's counters) or _xchacha.py (a wrapper of libsodium's calls).
CORE_MODULES = (
    "_base64.py",
    "_bind_input.py",
    "_bounds.py",
    "_claims.py",
    "_codec.py",
    "_encrypted.py",
    "_envelope.py",
    "_errors.py",
    "_guard.py",
    "_keys.py",
    "_modes.py",
    "_options.py",
    "_payload.py",
    "_peek.py",
    "_secrets.py",
    "_signed.py",
    "_token_id.py",
)
# The tests of those modules (_guard.py's claim is tested through the codec, MemoryGuard and the
# Ledger), and test_metrics.py for the codec's counts: no servers; the subprocesses of
# test_metrics.py call nothing mutmut maps to a mutant.
CORE_TESTS = (
    "test_base64.py",
    "test_bind_input.py",
    "test_claims.py",
    "test_codec.py",
    "test_encrypted.py",
    "test_envelope.py",
    "test_errors.py",
    "test_from_env.py",
    "test_keys.py",
    "test_ledger.py",
    "test_memory.py",
    "test_metrics.py",
    "test_modes.py",
    "test_options.py",
    "test_payload.py",
    "test_peek.py",
    "test_public_api.py",
    "test_redemption.py",
    "test_secrets.py",
    "test_signed.py",
    "test_token_id.py",
    "test_vectors.py",
)


def setup_cfg() -> str:
    def listing(name: str, values: list[str]) -> str:
        return f"{name} =\n" + "".join(f"    {value}\n" for value in values)

    return (
        "[mutmut]\n"
        "source_paths = requeststate\n"
        + listing("only_mutate", [f"requeststate/{name}" for name in CORE_MODULES])
        # Into mutmut's own tree too: test_options reads the declared defaults in the docs.
        + listing("also_copy", ["docs"])
        + listing("pytest_add_cli_args_test_selection", [f"tests/{name}" for name in CORE_TESTS])
        # -n 0: in one process, where mutmut sees which test calls what (pyproject.toml's addopts say -n 3).
        + listing(
            "pytest_add_cli_args",
            [
                "-n",
                "0",
                "-p",
                "no:cacheprovider",
                # mutmut's copies of each function (``x<name>__mutmut_<n>``) carry no docstring:
                # that test reads the mutated tree's names, not what a mutant does.
                "--deselect",
                "tests/test_public_api.py::test_every_public_function_class_and_method_has_a_docstring",
            ],
        )
        # A mutant that loops forever is killed by this timeout: 10 x its tests' own time, plus 2 s.
        + "timeout_multiplier = 10.0\n"
        + "timeout_constant = 2.0\n"
        + "use_git_change_detection = false\n"
        # Fork each mutant from a process that has imported the tests but run none: the
        # codec's lru_caches start cold, so a mutant in a cached function is exercised.
        + "process_isolation = forkserver\n"
    )


def prepare(workdir: Path) -> None:
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "requeststate", workdir / "requeststate", ignore=ignore)
    shutil.copytree(ROOT / "tests", workdir / "tests", ignore=ignore)
    shutil.copytree(ROOT / "docs", workdir / "docs", ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", workdir / "pyproject.toml")
    (workdir / "setup.cfg").write_text(setup_cfg(), encoding="utf-8")


def mutmut(workdir: Path, *args: str, quiet: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(  # noqa: S603 (our interpreter, fixed arguments)
        [sys.executable, "-m", "mutmut", *args],
        cwd=workdir,
        env=env,
        check=False,
        text=True,
        stdout=subprocess.PIPE if quiet else None,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workdir", type=Path, default=ROOT / "build" / "mutation")
    parser.add_argument("--min-score", type=float, default=0.0, help="fail below this percentage")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--resume", action="store_true", help="keep the previous results in --workdir")
    args = parser.parse_args(argv)
    workdir: Path = args.workdir.resolve()

    if not args.resume:
        prepare(workdir)
    mutmut(workdir, "run", "--max-children", str(args.max_children))
    mutmut(workdir, "export-cicd-stats", quiet=True)
    stats_file = workdir / "mutants" / "mutmut-cicd-stats.json"
    if not stats_file.exists():
        print("mutation: mutmut wrote no results", file=sys.stderr)
        return 1
    stats = json.loads(stats_file.read_text(encoding="utf-8"))

    survivors = mutmut(workdir, "results", quiet=True).stdout.strip()
    if survivors:
        print("surviving mutants (inspect one with: cd", workdir, "&& python -m mutmut show NAME):")
        print(survivors)
    tested = stats["total"] - stats["skipped"]
    killed = stats["killed"] + stats["timeout"]
    score = 100.0 * killed / tested if tested else 0.0
    print(
        f"mutation score: {killed}/{tested} killed = {score:.1f}% "
        f"(survived {stats['survived']}, no tests {stats['no_tests']}, timeout {stats['timeout']}, "
        f"suspicious {stats['suspicious']}, segfault {stats['segfault']}, skipped {stats['skipped']})"
    )
    return 0 if score >= args.min_score else 1


if __name__ == "__main__":
    sys.exit(main())
