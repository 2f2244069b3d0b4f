"""A Streamable HTTP session spoken by hand (2025-11-25), so that a test can close a call's response stream and resume
it with `Last-Event-ID`, as a client whose connection dropped does."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2 as httpx


class RawSession:
    def __init__(self, http: httpx.AsyncClient, url: str, capabilities: dict[str, Any] | None = None) -> None:
        self.http, self.url, self.capabilities = http, url, capabilities or {}
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    async def start(self) -> None:
        hello = {
            "protocolVersion": "2025-11-25",
            "capabilities": self.capabilities,
            "clientInfo": {"name": "raw", "version": "1"},
        }
        body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
        async with self.http.stream("POST", self.url, json=body, headers=self.headers) as response:
            self.headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
            self.headers["Mcp-Protocol-Version"] = "2025-11-25"
            async for _ in events(response):
                break
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def post(self, message: dict[str, Any]) -> None:
        """A notification or an answer to the server's request (202, no body)."""
        assert (await self.http.post(self.url, json=message, headers=self.headers)).status_code == 202

    @asynccontextmanager
    async def call(self, tool: str, arguments: dict[str, Any], **params: Any) -> AsyncIterator[Any]:
        """tools/call of `tool` (more `params`, e.g. `_meta`), its response stream open for the block."""
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        body["params"].update(params)  # type: ignore[attr-defined]
        async with self.http.stream("POST", self.url, json=body, headers=self.headers) as response:
            yield response

    @asynccontextmanager
    async def resumed(self, last_event_id: str) -> AsyncIterator[Any]:
        headers = {**self.headers, "Accept": "text/event-stream", "Last-Event-ID": last_event_id}
        headers.pop("Content-Type")
        async with self.http.stream("GET", self.url, headers=headers) as response:
            assert response.status_code == 200, response.status_code
            yield response


async def events(response: Any) -> AsyncIterator[tuple[str | None, dict[str, Any] | None]]:
    """(id, message) of each SSE event of a response (message None for a priming event)."""
    event_id, data = None, ""
    async for line in response.aiter_lines():
        if line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif not line:
            if event_id is not None or data:
                yield event_id, json.loads(data) if data else None
            event_id, data = None, ""


async def call_result(response: Any) -> dict[str, Any] | None:
    """The result of the session's tools/call (request id 1) as the stream `response` carries it; None if it ends
    without one."""
    async for _, message in events(response):
        if message is not None and message.get("id") == 1:
            return dict(message["result"])
    return None
