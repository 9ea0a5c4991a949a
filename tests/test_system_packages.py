"""make test's one switch for system packages: NO_SYSTEM_PACKAGES=1 installs nothing, and says so."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import redis_server

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "redis-test-server.sh"
# No redis-server and no apt-get: the script's shell builtins are all it has.
BARE_PATH = "/nonexistent"


def run_installer(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", str(SCRIPT)],
        env={"PATH": BARE_PATH, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_switch_installs_nothing_and_says_the_redis_tests_will_be_skipped() -> None:
    done = run_installer(NO_SYSTEM_PACKAGES="1", CI="true")
    assert done.returncode == 0
    assert "not installing redis-server; THE REDIS TESTS WILL BE SKIPPED" in done.stderr


def test_without_the_switch_ci_still_requires_redis_server() -> None:
    done = run_installer(CI="true")
    assert done.returncode == 1
    assert "make test NO_SYSTEM_PACKAGES=1 skips them instead" in done.stderr


def test_with_the_switch_the_redis_tests_skip_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", BARE_PATH)
    monkeypatch.setenv("NO_SYSTEM_PACKAGES", "1")
    with pytest.raises(redis_server.RedisUnavailable, match=r"make test NO_SYSTEM_PACKAGES=1\) skipped"):
        redis_server.find_redis_server()


@pytest.mark.parametrize(("switch", "required"), [("1", False), ("0", True), ("", True)])
def test_ci_requires_the_redis_tests_unless_the_switch_is_given(
    monkeypatch: pytest.MonkeyPatch, switch: str, required: bool
) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("NO_SYSTEM_PACKAGES", switch)
    assert redis_server.must_run() is required
