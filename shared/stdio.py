"""The stdio transport, with a guard that answers malformed JSON-RPC instead of ignoring it.

The SDK's stdio reader drops lines it cannot parse, so a client that sent a broken request
waits forever. Here every such line gets a JSON-RPC error (-32700 parse error, -32600 invalid
request, with the request id when one can be read), and the server goes on serving.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from io import TextIOWrapper
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

MAX_LINE_CHARS = 16 * 1024 * 1024


def rejection(line: str) -> JSONRPCError | None:
    """None if `line` is a well-formed JSON-RPC message, else the error to send back."""
    if len(line) > MAX_LINE_CHARS:
        return _error(None, INVALID_REQUEST, f"message larger than {MAX_LINE_CHARS} characters")
    try:  # the common case, one parse in pydantic-core; the slow path below only runs for bad lines
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValidationError:
        pass
    try:
        decoded = json.loads(line)
    except (ValueError, RecursionError):
        return _error(None, PARSE_ERROR, "Parse error: the line is not valid JSON")
    if not isinstance(decoded, dict):
        return _error(
            None, INVALID_REQUEST, "Invalid Request: expected one JSON-RPC object (batches are not supported)"
        )
    try:
        types.jsonrpc_message_adapter.validate_python(decoded, by_name=False)
    except ValidationError:
        request_id = decoded.get("id")
        valid_id = request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None
        if valid_id is None and "id" not in decoded and "method" in decoded:
            return None if isinstance(decoded.get("method"), str) else _error(None, INVALID_REQUEST, "Invalid Request")
        return _error(valid_id, INVALID_REQUEST, "Invalid Request: not a valid JSON-RPC 2.0 message")
    return None


def _error(request_id: Any, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


class _GuardedLines:
    """Async line source for the SDK's reader: valid lines pass, invalid ones are answered directly."""

    def __init__(self, source: Any) -> None:
        self._source = source
        self._write_stream: Any = None
        self._ready = anyio.Event()

    def attach(self, write_stream: Any) -> None:
        self._write_stream = write_stream
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._source:
            if not line.strip():
                continue
            error = rejection(line)
            if error is None:
                yield line
                continue
            await self._ready.wait()
            await self._write_stream.send(SessionMessage(error))


def _detach_stdin() -> TextIOWrapper:
    """Read the protocol from a private copy of fd 0 and point fd 0 at /dev/null for child processes."""
    private = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return TextIOWrapper(os.fdopen(private, "rb", closefd=True), encoding="utf-8", errors="replace")


async def run_stdio(server: MCPServer) -> None:
    """Serve `server` on stdin/stdout until the client closes stdin."""
    if sys.stdin is None:  # pragma: no cover - started without a stdin
        raise RuntimeError("stdio transport needs a standard input")
    lines = _GuardedLines(anyio.wrap_file(_detach_stdin()))
    lowlevel = server._lowlevel_server  # the SDK exposes no public run() taking streams on MCPServer
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lines.attach(write_stream)
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
