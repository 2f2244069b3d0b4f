"""The start-up preface: a second start answers initialize and tools/list from the first start's answers.

Real `mcp-sections serve` processes over real pipes. To prove an answer came from the recorded file (and
not from the SDK), a test edits the recorded tools/list and looks for the edit.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.shared.preface import served_section
from tests.stdio import cli_command

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": "list", "method": "tools/list"}
ADD = {
    "jsonrpc": "2.0",
    "id": "add",
    "method": "tools/call",
    "params": {"name": "calculator_binary", "arguments": {"operation": "add", "a": 2, "b": 3}},
}
MARK = "(answered by the start-up preface)"


def _session(*messages: dict, args: tuple[str, ...] = (), env: dict[str, str] | None = None) -> list[dict]:
    """Send `messages` to a fresh `serve calculator`, wait for every request's reply, close; all replies."""
    process = subprocess.Popen(
        [*cli_command(), "serve", "calculator", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "MCP_SECTIONS_WARM_UP": "0", **(env or {})},
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"".join(json.dumps(message).encode() + b"\n" for message in messages))
    process.stdin.flush()
    expected = {message["id"] for message in messages if "id" in message}
    replies: list[dict] = []
    while expected - {reply.get("id") for reply in replies}:
        line = process.stdout.readline()
        assert line, f"the server closed stdout early; replies so far: {replies}"
        replies.append(json.loads(line))
    process.stdin.close()
    replies += [json.loads(line) for line in process.stdout.read().splitlines()]
    assert process.wait(timeout=30) == 0
    return replies


def _by_id(replies: list[dict]) -> dict:
    ids = [reply.get("id") for reply in replies]
    assert len(ids) == len(set(ids)), f"a request was answered twice: {ids}"
    return {reply["id"]: reply for reply in replies}


def _recorded(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "startup").glob("calculator-*.json"))


def _mark_recorded_tools(path: Path) -> None:
    data = json.loads(path.read_text())
    for answers in data["answers"].values():
        answers["tools/list"]["tools"][0]["description"] += MARK
    path.write_text(json.dumps(data))


def _first_description(replies: list[dict]) -> str:
    return _by_id(replies)["list"]["result"]["tools"][0]["description"]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("MCP_SECTIONS_CACHE_DIR", str(directory))
    return directory


def test_a_second_start_answers_exactly_like_the_first(cache_dir: Path) -> None:
    first = _by_id(_session(INITIALIZE, INITIALIZED, LIST))
    assert len(_recorded(cache_dir)) == 1
    second = _by_id(_session(INITIALIZE, INITIALIZED, LIST, ADD))
    assert second["init"] == first["init"]
    assert second["list"] == first["list"]
    assert second["add"]["result"]["structuredContent"]["result"] == 5


def test_recorded_answers_are_served_and_the_server_takes_over(cache_dir: Path) -> None:
    _session(INITIALIZE, INITIALIZED, LIST)
    [recorded] = _recorded(cache_dir)
    _mark_recorded_tools(recorded)
    ping = {"jsonrpc": "2.0", "id": "ping", "method": "ping"}
    replies = _session(INITIALIZE, INITIALIZED, ping, LIST, ADD)  # the SDK's own answers are dropped
    assert _first_description(replies).endswith(MARK)
    assert _by_id(replies)["ping"]["result"] == {}
    assert _by_id(replies)["add"]["result"]["structuredContent"]["result"] == 5
    assert not json.loads(recorded.read_text())["answers"]["2025-11-25"]["tools/list"]["tools"][0][
        "description"
    ].endswith(MARK), "the server's real answers replace what was recorded"


def test_a_request_sent_before_the_server_is_ready_is_answered_by_it(cache_dir: Path) -> None:
    _session(INITIALIZE, INITIALIZED)
    _session(INITIALIZE, INITIALIZED, LIST)
    replies = _by_id(_session(INITIALIZE, INITIALIZED, ADD, LIST))  # the call ends the preface at once
    assert replies["add"]["result"]["structuredContent"]["result"] == 5
    assert replies["list"]["result"]["tools"]


def test_another_command_line_configuration_or_switch_uses_no_recorded_answers(cache_dir: Path, tmp_path: Path) -> None:
    _session(INITIALIZE, INITIALIZED, LIST)
    _mark_recorded_tools(_recorded(cache_dir)[0])
    assert _first_description(_session(INITIALIZE, INITIALIZED, LIST)).endswith(MARK)
    for args, env in (
        (("--log-level", "ERROR"), {}),
        ((), {"MCP_SECTIONS_CALCULATOR_TIMEOUT_SECONDS": "9"}),
        ((), {"MCP_SECTIONS_FAST_START": "0"}),
    ):
        assert not _first_description(_session(INITIALIZE, INITIALIZED, LIST, args=args, env=env)).endswith(MARK)
    config = tmp_path / "config.toml"
    config.write_text("[sections.calculator]\ntimeout_seconds = 5\n")
    _session(INITIALIZE, INITIALIZED, LIST, args=("--config", str(config)))
    marked = [path for path in _recorded(cache_dir) if MARK not in path.read_text()]
    for path in marked:
        _mark_recorded_tools(path)
    config.write_text("[sections.calculator]\ntimeout_seconds = 6\n")
    replies = _session(INITIALIZE, INITIALIZED, LIST, args=("--config", str(config)))
    assert not _first_description(replies).endswith(MARK), "an edited config file must not reuse old answers"


def test_an_unrecorded_protocol_version_and_malformed_lines_go_to_the_server(cache_dir: Path) -> None:
    _session(INITIALIZE, INITIALIZED, LIST)
    _mark_recorded_tools(_recorded(cache_dir)[0])
    older = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": "2025-06-18"}}
    replies = _by_id(_session(older, INITIALIZED, LIST))
    assert replies["init"]["result"]["protocolVersion"] == "2025-06-18"
    assert not replies["list"]["result"]["tools"][0]["description"].endswith(MARK)
    process = subprocess.run(
        [*cli_command(), "serve", "calculator"],
        input=b"not json\n" + json.dumps(INITIALIZE).encode() + b"\n",
        capture_output=True,
        timeout=60,
    )
    codes = [json.loads(line).get("error", {}).get("code") for line in process.stdout.splitlines()]
    assert codes[0] == -32700


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_sdk_client_works_after_a_fast_start_in_both_protocol_eras(cache_dir: Path, mode: str) -> None:
    from mcp.client.stdio import StdioServerParameters

    parameters = StdioServerParameters(command=cli_command()[0], args=["serve", "calculator"], env=dict(os.environ))
    for _ in range(2):  # the first start records, the second answers early
        async with Client(parameters, mode=mode) as client:  # type: ignore[arg-type]
            assert {tool.name for tool in (await client.list_tools()).tools} >= {"calculator_binary"}
            result = await client.call_tool("calculator_binary", {"operation": "add", "a": 2, "b": 3})
            assert result.structured_content == {"result": 5.0} or result.structured_content["result"] == 5


def test_only_serve_over_stdio_gets_a_preface() -> None:
    assert served_section(["serve", "calculator", "--root", "/x"]) == "calculator"
    assert served_section(["serve", "calculator", "--transport", "stdio"]) == "calculator"
    for argv in (
        ["serve", "calculator", "--transport", "http"],
        ["serve", "calculator", "--transport=http"],
        ["serve", "calculator", "--help"],
        ["gateway"],
        ["list"],
        ["serve", "../x"],
        ["serve"],
    ):
        assert served_section(argv) is None, argv
