"""make test's one switch for system packages: NO_SYSTEM_PACKAGES=1 installs nothing, and says so."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import redis_server

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
# Each installer, with what it says it will skip, quietly and loudly.
INSTALLERS = [
    ("redis-test-server.sh", "redis-server", "the Redis tests", "THE REDIS TESTS"),
    ("c-compiler.sh", "gcc libc6-dev", "the compiled build", "THE COMPILED BUILD"),
]
INSTALLER_IDS = ["redis-server", "c-compiler"]
# Nothing on PATH, no apt-get: the scripts' shell builtins are all they have.
BARE_PATH = "/nonexistent"


def run_installer(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", str(SCRIPTS / script)],
        env={"PATH": BARE_PATH, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(("script", "packages", "what", "loud"), INSTALLERS, ids=INSTALLER_IDS)
def test_the_switch_installs_nothing_and_says_what_will_be_skipped(
    script: str, packages: str, what: str, loud: str
) -> None:
    done = run_installer(script, NO_SYSTEM_PACKAGES="1", CI="true")
    assert done.returncode == 0
    assert f"not installing {packages}; {loud} WILL BE SKIPPED (drop NO_SYSTEM_PACKAGES to run {what})" in (
        done.stderr
    )


@pytest.mark.parametrize(("script", "packages", "what", "loud"), INSTALLERS, ids=INSTALLER_IDS)
def test_without_the_switch_ci_still_requires_the_package(
    script: str, packages: str, what: str, loud: str
) -> None:
    done = run_installer(script, CI="true")
    assert done.returncode == 1
    assert f"{what} cannot run under CI (make test NO_SYSTEM_PACKAGES=1 skips {what} instead)" in done.stderr


@pytest.mark.parametrize(("script", "packages", "what", "loud"), INSTALLERS, ids=INSTALLER_IDS)
def test_outside_ci_a_missing_package_is_a_loud_skip(
    script: str, packages: str, what: str, loud: str
) -> None:
    done = run_installer(script)
    assert done.returncode == 0
    assert f"{loud} WILL BE SKIPPED (install {packages} to run {what})" in done.stderr


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
