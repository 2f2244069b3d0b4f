"""Resumable Streamable HTTP (`shared/serving/event_store.py`): a client whose connection drops during a long call
reconnects with `Last-Event-ID` and gets the rest — progress and result — from the section and from the gateway; an
id of another session, or one that has expired, gets a clear 400. Real processes over real sockets."""

from __future__ import annotations

import http.client
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from mcp_sections.shared.serving import event_store
from mcp_sections.shared.serving.event_store import SessionEventStores
from tests.gateway.helpers import REPO, tasks_demo_table, write_config
from tests.processes import free_port, listening, serving_over_http
from tests.waiting import eventually

ACCEPT = {"Accept": "application/json, text/event-stream"}
VERSION = "2025-11-25"


@pytest.fixture(scope="module")
def section(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The tasks test section (slow_compute) over HTTP."""
    port = free_port()
    data = tmp_path_factory.mktemp("section-data")
    command = [sys.executable, "-m", "tests.gateway.serve_module", "tests.framework.tasks_section", "--http", str(port)]
    environment = {**os.environ, "MCP_SECTIONS_DATA_DIR": str(data), "MCP_SECTIONS_CONFIG": os.devnull}
    with listening(command, port, env=environment, cwd=REPO):
        yield port


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The gateway over HTTP, exposing the tasks test section's tools (its slow_compute is forwarded)."""
    workdir = tmp_path_factory.mktemp("gateway")
    config = write_config(workdir / "config.toml", tasks_demo_table(workdir / "demo"))
    args = ["gateway", "--config", str(config), "--data-dir", str(workdir / "data"), "--expose", "tasks_demo"]
    with serving_over_http(args, cwd=workdir) as (port, _):
        yield port


def post(port: int, headers: dict[str, str], body: Any) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("POST", "/mcp", body=json.dumps(body), headers={**headers, **ACCEPT})
    return connection.getresponse()


def events(response: http.client.HTTPResponse) -> Iterator[dict[str, str]]:
    """The SSE events of a response, as they arrive (field -> value)."""
    event: dict[str, str] = {}
    while True:
        line = response.readline()
        if not line:
            return
        text = line.decode().rstrip("\r\n")
        if not text:
            if event:
                yield event
            event = {}
            continue
        name, _, value = text.partition(":")
        event[name] = value[1:] if value.startswith(" ") else value


def session(port: int) -> dict[str, str]:
    """The headers of an initialized 2025-11-25 session."""
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "resume", "version": "1"}}
    response = post(
        port,
        {"Content-Type": "application/json"},
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
    )
    assert response.status == 200
    response.read()
    ready = {"Mcp-Session-Id": response.getheader("mcp-session-id") or "", "Mcp-Protocol-Version": VERSION}
    note = post(
        port, {**ready, "Content-Type": "application/json"}, {"jsonrpc": "2.0", "method": "notifications/initialized"}
    )
    assert note.status == 202
    return ready


def dropped_call(port: int, headers: dict[str, str], tool: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    """Start a 2-second slow_compute, read its priming event and first progress, then drop the connection: the
    priming event and what was read."""
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {"seconds": 2, "label": "resumed"}, "_meta": {"progressToken": "p"}},
    }
    response = post(port, {**headers, "Content-Type": "application/json"}, call)
    assert response.status == 200 and (response.getheader("content-type") or "").startswith("text/event-stream")
    stream = events(response)
    priming = next(stream)
    read = [next(stream)]
    response.close()  # the connection drops mid-call
    return priming, read


def resumed(port: int, headers: dict[str, str], last_event_id: str) -> list[dict[str, Any]]:
    """The messages a GET with `Last-Event-ID` gets, up to the call's response."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request(
        "GET", "/mcp", headers={**headers, "Accept": "text/event-stream", "Last-Event-ID": last_event_id}
    )
    response = connection.getresponse()
    assert response.status == 200, response.read()
    messages = []
    for event in events(response):
        if event.get("data"):
            message = json.loads(event["data"])
            messages.append(message)
            if message.get("id") == 7:
                break
    connection.close()
    return messages


@pytest.mark.parametrize("server", ["section", "gateway"])
def test_a_dropped_long_call_is_resumed_with_its_progress_and_result(
    server: str, request: pytest.FixtureRequest
) -> None:
    port = request.getfixturevalue(server)
    headers = session(port)
    priming, read = dropped_call(port, headers, "slow_compute")
    assert priming["id"] and priming.get("data", "") == "" and priming["retry"] == str(event_store.RETRY_MS)
    assert json.loads(read[0]["data"])["method"] == "notifications/progress"

    messages = resumed(port, headers, read[0]["id"])
    result = messages[-1]["result"]
    assert "computed resumed in 2 s" in json.dumps(result), "the result the dropped connection would have lost"
    progress = [
        message["params"]["progress"] for message in messages if message.get("method") == "notifications/progress"
    ]
    assert progress and progress == sorted(progress) and progress[0] > json.loads(read[0]["data"])["params"]["progress"]
    again = resumed(port, headers, priming["id"])  # from the start again: everything, in order
    assert again[-1] == messages[-1] and len(again) == len(messages) + 1


@pytest.mark.parametrize("server", ["section", "gateway"])
def test_an_event_of_another_session_or_no_event_is_refused_clearly(
    server: str, request: pytest.FixtureRequest
) -> None:
    port = request.getfixturevalue(server)
    mine, other = session(port), session(port)
    priming, _ = dropped_call(port, mine, "slow_compute")
    for headers, event_id in ((other, priming["id"]), (mine, "0"), (mine, priming["id"] + "0" * 20)):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/mcp", headers={**headers, "Accept": "text/event-stream", "Last-Event-ID": event_id})
        response = connection.getresponse()
        assert response.status == 400 and response.getheader("content-type") == "application/json"
        error = json.loads(response.read())["error"]
        assert error["code"] == -32600 and "not an event of this session" in error["message"]
        assert "send the request again" in error["message"]
        connection.close()


# -- the store's bounds, on the store itself -------------------------------------------------------------------


def _message(n: int, size: int = 10) -> Any:
    from mcp_types import JSONRPCNotification

    return JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"n": n, "text": "x" * size})


async def _replayed(store: Any, event_id: str) -> list[int]:
    seen: list[int] = []

    async def send(message: Any) -> None:
        seen.append(message.message.params["n"])

    await store.replay_events_after(event_id, send)
    return seen


def test_events_expire_in_time_and_the_oldest_go_first_beyond_the_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        stores = SessionEventStores(all_bytes=4000)
        first, second = stores.open("a"), stores.open("b")
        ids = [await first.store_event("1", _message(n)) for n in range(3)]
        assert await _replayed(first, ids[0]) == [1, 2] and first.refusal(ids[0]) is None
        assert second.refusal(ids[0]) == "is not an event of this session"
        big = [await second.store_event("1", _message(n, 900)) for n in range(4)]  # over 4000 bytes in all
        assert "has expired" in (first.refusal(ids[0]) or ""), "the oldest events of all sessions went first"
        assert second.refusal(big[-1]) is None and stores.bytes <= 4000
        monkeypatch.setattr(event_store, "SESSION_EVENTS", 2)
        late = [await first.store_event("2", _message(n)) for n in range(3)]
        assert first.refusal(late[0]) is not None and first.refusal(late[1]) is None
        monkeypatch.setattr(event_store, "KEEP_SECONDS", 0.05)
        assert await eventually(lambda: first.refusal(late[-1]) is not None)
        stores.close("a")
        assert stores.get("a") is None

    anyio.run(main)


def test_the_sdk_still_admits_and_discards_sessions_where_each_gets_its_store() -> None:
    """The private corners `shared.serving.sdk_tools.resumable_sessions` relies on (named when an SDK release moves
    them)."""
    import inspect

    from mcp.server.streamable_http import StreamableHTTPServerTransport
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    for name in ("_admit_session", "_discard_session"):
        assert callable(getattr(StreamableHTTPSessionManager, name, None)), f"SDK changed: {name} is gone"
    assert "self._event_store" in inspect.getsource(StreamableHTTPServerTransport), (
        "SDK changed: StreamableHTTPServerTransport._event_store is gone"
    )
