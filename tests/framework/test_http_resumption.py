"""Streamable HTTP never answers 500 (issue #44): a GET that asks to resume a stream with an unknown or expired
`Last-Event-ID` gets a clear 400 (the replay of a known one: tests/framework/test_stream_resumption.py). The real CLI,
over a real socket."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import pytest

from tests.processes import serving_over_http

TOKEN = "resumption-test-token-0123456789"
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """`serve calculator` over HTTP behind a bearer token; its port."""
    token_file = tmp_path_factory.mktemp("token") / "token"
    token_file.write_text(TOKEN)
    with serving_over_http(["serve", "calculator"], {"MCP_SECTIONS_AUTH_TOKEN_FILE": str(token_file)}, 30) as (port, _):
        yield port


def request(port: int, method: str, headers: dict[str, str], body: object = None) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    data = json.dumps(body) if body is not None else None
    connection.request(method, "/mcp", body=data, headers=headers)
    response = connection.getresponse()
    status, answer = response.status, {k.lower(): v for k, v in response.getheaders()}
    content = response.read() if status != 200 or method != "GET" else b""
    connection.close()
    return status, answer, content


def session(port: int) -> dict[str, str]:
    """The headers of an initialized 2025-11-25 session."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "resume", "version": "1"}}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    status, headers, _ = request(port, "POST", {**auth, **ACCEPT, "Content-Type": "application/json"}, initialize)
    assert status == 200
    ready = {**auth, "Mcp-Session-Id": headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-11-25"}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert request(port, "POST", {**ready, **ACCEPT, "Content-Type": "application/json"}, note)[0] == 202
    return ready


@pytest.mark.parametrize("event_id", ["0", "bogus", "1f0e2c3d-stream-7", "x" * 500])
def test_a_get_with_last_event_id_is_refused_with_a_reason(server: int, event_id: str) -> None:
    headers = session(server)
    status, answer, body = request(server, "GET", {**headers, "Accept": "text/event-stream", "Last-Event-ID": event_id})
    assert status == 400 and answer["content-type"] == "application/json"
    error = json.loads(body)["error"]
    assert error["code"] == -32600 and "Last-Event-ID" in error["message"]
    assert "send the request again" in error["message"]


def test_the_token_is_checked_before_and_a_plain_get_still_opens_a_stream(server: int) -> None:
    headers = session(server)
    anonymous = {key: value for key, value in headers.items() if key != "Authorization"}
    assert request(server, "GET", {**anonymous, "Accept": "text/event-stream", "Last-Event-ID": "1"})[0] == 401
    connection = http.client.HTTPConnection("127.0.0.1", server, timeout=10)
    connection.request("GET", "/mcp", headers={**headers, "Accept": "text/event-stream"})
    response = connection.getresponse()
    assert response.status == 200 and response.getheader("content-type", "").startswith("text/event-stream")
    connection.close()
