"""The real CLI over real transports: malformed JSON-RPC, Streamable HTTP.

That start-up imports nothing heavy is checked in tests/portability/test_first_listing.py.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
from collections.abc import Iterator

import pytest
from mcp import Client

from tests.processes import serving_over_http
from tests.stdio import NO_WARM_UP, cli_command


def _exchange(lines: list[str], last_id: object, section: str = "calculator") -> list[dict]:
    """Write raw lines to a real server's stdin and collect replies until `last_id` is answered."""
    process = subprocess.Popen(
        [*cli_command(), "serve", section],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **NO_WARM_UP},
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("".join(line + "\n" for line in lines))
    process.stdin.flush()
    replies: list[dict] = []
    try:
        while not any(reply.get("id") == last_id for reply in replies):
            line = process.stdout.readline()
            assert line, f"the server closed stdout early; replies so far: {replies}"
            replies.append(json.loads(line))
    finally:
        process.stdin.close()
        process.wait(timeout=30)
    assert process.returncode == 0
    return replies


INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
)


def test_malformed_json_rpc_gets_errors_and_the_server_keeps_serving() -> None:
    replies = _exchange(
        [
            "this is not json",
            "[]",
            '{"jsonrpc": "2.0", "id": 7}',
            '{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": "not an object"}',
            '{"jsonrpc": "1.0", "id": 9, "method": "ping"}',
            INITIALIZE,
            '{"jsonrpc": "2.0", "method": "notifications/initialized"}',
            '{"jsonrpc": "2.0", "id": 10, "method": "no/such/method"}',
            '{"jsonrpc": "2.0", "id": 11, "method": "tools/list"}',
        ],
        last_id=11,
    )
    by_id = {reply.get("id"): reply for reply in replies}
    nulls = [reply for reply in replies if reply.get("id") is None]
    assert [reply["error"]["code"] for reply in nulls] == [-32700, -32600]
    for request_id in (7, 8, 9):
        assert by_id[request_id]["error"]["code"] == -32600
    assert by_id[10]["error"]["code"] == -32601
    assert by_id["init"]["result"]["serverInfo"]["name"] == "mcp-sections-calculator"
    assert by_id[11]["result"]["tools"], "the server must still answer after malformed input"


@pytest.fixture
def http_server() -> Iterator[int]:
    with serving_over_http(["serve", "calculator"], seconds=30) as (port, _):
        yield port


@pytest.mark.anyio
async def test_streamable_http_serves_tools(http_server: int) -> None:
    async with Client(f"http://127.0.0.1:{http_server}/mcp", mode="legacy") as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
    assert "calculator_binary" in names


def _post_status(port: int, extra_headers: dict[str, str]) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    connection.request("POST", "/mcp", body=INITIALIZE, headers={**headers, **extra_headers})
    status = connection.getresponse().status
    connection.close()
    return status


def test_http_refuses_foreign_host_and_origin(http_server: int) -> None:
    """DNS-rebinding protection: a page on another origin cannot drive the local server."""
    assert _post_status(http_server, {"Host": "evil.example"}) in (400, 403, 421)
    assert _post_status(http_server, {"Origin": "http://evil.example"}) in (400, 403)
    assert _post_status(http_server, {}) == 200
