"""The stdio transport: newline-delimited JSON-RPC on the event loop, each line parsed once.

The SDK's own stdio transport reads and writes through worker threads (three thread hand-offs per
request) and drops lines it cannot parse, so a client that sent a broken request waits forever. This
one reads and writes the pipes on the event loop, hands each well-formed message to the SDK already
parsed, and answers every malformed line with a JSON-RPC error (-32700 parse error, -32600 invalid
request, with the request id when one can be read) before going on serving. Standard input or output
that is a regular file or a terminal rather than a pipe is served through a thread instead. When the
client closes its end, requests still running get to answer (for up to `DRAIN_SECONDS`) before the
server stops.

While serving, fd 0 reads /dev/null and fd 1 writes to stderr, so child processes and stray prints
never touch the protocol.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Iterable
from contextlib import suppress
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.shared._context_streams import ContextSendStream, create_context_streams
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, JSONRPCResponse
from pydantic import ValidationError

from mcp_sections.shared.preface import Handover, StartupRecorder, write_all

MAX_LINE_BYTES = 16 * 1024 * 1024
READ_CHUNK = 256 * 1024
DRAIN_SECONDS = 30.0  # after the client closes stdin, how long requests still running may take to answer
_LONG_LIVED = frozenset({"subscriptions/listen"})  # open until the connection ends: nothing to wait for


def classify_bad_line(line: str | bytes) -> JSONRPCError | None:
    """The error for a line pydantic rejected (None for a notification whose only fault is unknown fields)."""
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


class LineSplitter:
    """Bytes in, complete lines out; a line longer than `MAX_LINE_BYTES` is skipped and reported once."""

    def __init__(self, pending: bytes = b"") -> None:
        self._buffer = bytearray(pending)
        self._discarding = False

    def feed(self, data: bytes) -> list[bytes | None]:
        """The complete lines in `data` (None stands for one oversized line that was dropped)."""
        out: list[bytes | None] = []
        self._buffer += data
        start = 0
        while True:
            end = self._buffer.find(b"\n", start)
            if end < 0:
                break
            if self._discarding:
                self._discarding = False
            elif end - start > MAX_LINE_BYTES:
                out.append(None)
            else:
                out.append(bytes(self._buffer[start:end]))
            start = end + 1
        del self._buffer[:start]
        if len(self._buffer) > MAX_LINE_BYTES:
            if not self._discarding:
                out.append(None)
            self._discarding = True
            self._buffer.clear()
        return out


class _Inbound:
    """Parses lines and passes messages to the SDK, or answers a bad line itself."""

    def __init__(
        self,
        to_sdk: ContextSendStream[SessionMessage | Exception],
        outbound: _Outbound,
        recorder: StartupRecorder | None,
    ) -> None:
        self._to_sdk = to_sdk
        self._outbound = outbound
        self._recorder = recorder

    async def drain(self) -> None:
        """At end of input: let requests still running answer (bounded) before the SDK sees the end."""
        with anyio.move_on_after(DRAIN_SECONDS):
            while self._outbound.in_flight:
                await anyio.sleep(0.01)

    async def deliver(self, lines: Iterable[bytes | None]) -> None:
        for line in lines:
            if line is None:
                await self._outbound.send_error(
                    _error(None, INVALID_REQUEST, f"message larger than {MAX_LINE_BYTES} bytes")
                )
                continue
            text = line.decode("utf-8", "replace")
            if not text.strip():
                continue
            try:
                message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
            except ValidationError:
                error = classify_bad_line(text)
                if error is not None:
                    await self._outbound.send_error(error)
                continue
            if isinstance(message, types.JSONRPCRequest):
                if message.method not in _LONG_LIVED:
                    self._outbound.in_flight.add(message.id)
                if self._recorder is not None:
                    self._recorder.request(message.id, message.method, message.params)
            elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
                cancelled = (message.params or {}).get("requestId")
                if isinstance(cancelled, str | int):
                    self._outbound.in_flight.discard(cancelled)  # a cancelled request is never answered
            await self._to_sdk.send(SessionMessage(message))


class _Outbound:
    """Writes messages to the output pipe on the event loop (or straight to a file), in order."""

    def __init__(self, fd: int, handover: Handover) -> None:
        self._fd = fd
        self._handover = handover
        self._writer: asyncio.StreamWriter | None = None
        self._lock = anyio.Lock()
        self.in_flight: set[str | int] = set()  # requests passed to the SDK and not answered yet

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        if not _loop_can_watch(self._fd):
            return
        try:
            transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, os.fdopen(self._fd, "wb", buffering=0, closefd=False)
            )
        except ValueError:  # a regular file: plain blocking writes are fine there
            return
        self._writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def send(self, session_message: SessionMessage) -> None:
        message = session_message.message
        data = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self.in_flight.discard(message.id)
            if isinstance(message, JSONRPCResponse) and self._handover.recorder is not None:
                self._handover.recorder.response(message.id, data)
            if message.id in self._handover.answered:  # the start-up preface already wrote this answer
                self._handover.answered.discard(message.id)
                return
        await self._write(data + b"\n")

    async def send_error(self, error: JSONRPCError) -> None:
        await self._write(error.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")

    async def _write(self, data: bytes) -> None:
        async with self._lock:
            if self._writer is None:
                await anyio.to_thread.run_sync(write_all, self._fd, data)
                return
            self._writer.write(data)
            await self._writer.drain()


def _loop_can_watch(fd: int) -> bool:
    """Whether the event loop should serve `fd`: not on Windows (its loop serves console and pipe handles
    differently), and not a terminal (the loop would leave it non-blocking for the shell after us)."""
    return sys.platform != "win32" and not os.isatty(fd)


async def _read_loop(fd: int, splitter: LineSplitter, inbound: _Inbound) -> None:
    """Feed `inbound` from `fd` until end of file: on the loop for a pipe, through a thread for a file."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue(maxsize=64)
    eof = b""

    class Reader(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            chunks.put_nowait(data)
            if chunks.full():
                self.transport.pause_reading()  # type: ignore[attr-defined]

        def eof_received(self) -> None:
            chunks.put_nowait(eof)

        def connection_lost(self, exc: Exception | None) -> None:
            with suppress(asyncio.QueueFull):
                chunks.put_nowait(eof)

    reader: Reader | None = None
    try:
        if not _loop_can_watch(fd):
            raise ValueError("served through a thread")
        _, reader = await loop.connect_read_pipe(Reader, os.fdopen(fd, "rb", buffering=0, closefd=False))
    except ValueError:  # a regular file or a terminal
        threading.Thread(target=_read_file, args=(fd, loop, chunks), daemon=True, name="stdio-reader").start()
    while True:
        data = await chunks.get()
        if reader is not None and chunks.qsize() < 8:
            reader.transport.resume_reading()  # type: ignore[attr-defined]
        if data is eof:
            break
        await inbound.deliver(splitter.feed(data))


def _read_file(fd: int, loop: asyncio.AbstractEventLoop, chunks: asyncio.Queue[bytes]) -> None:
    while True:
        data = os.read(fd, READ_CHUNK)
        asyncio.run_coroutine_threadsafe(chunks.put(data), loop).result()
        if not data:
            return


def claim_standard_streams() -> tuple[int, int]:
    """Private copies of fds 0 and 1 for the protocol; fd 0 then reads /dev/null and fd 1 writes to stderr."""
    protocol_in = os.dup(0)
    protocol_out = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    for fd in (protocol_in, protocol_out):
        os.set_inheritable(fd, False)
    return protocol_in, protocol_out


async def run_stdio(server: MCPServer, handover: Handover | None = None) -> None:
    """Serve `server` on stdin/stdout until the client closes its end (and its running requests answered).

    `handover` is what the start-up preface (`shared/preface.py`) read and answered before the server existed.
    """
    if sys.stdin is None:  # pragma: no cover - started without a stdin
        raise RuntimeError("stdio transport needs a standard input")
    handover = handover or Handover()
    read_fd, write_fd = claim_standard_streams()
    to_sdk, from_client = create_context_streams[SessionMessage | Exception](0)
    to_client, from_sdk = create_context_streams[SessionMessage](0)
    outbound = _Outbound(write_fd, handover)
    await outbound.open()
    inbound = _Inbound(to_sdk, outbound, handover.recorder)
    lowlevel = server._lowlevel_server  # the SDK exposes no public run() taking streams on MCPServer

    async def read() -> None:
        async with to_sdk:
            await inbound.deliver(handover.lines)
            splitter = LineSplitter()
            await inbound.deliver(splitter.feed(handover.pending))
            await _read_loop(read_fd, splitter, inbound)
            await inbound.drain()

    writer_done = anyio.Event()

    async def write() -> None:
        try:
            async with from_sdk:
                async for session_message in from_sdk:
                    await outbound.send(session_message)
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            group.cancel_scope.cancel()  # the client closed its end: nobody is left to answer
        finally:
            writer_done.set()

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        await lowlevel.run(from_client, to_client, lowlevel.create_initialization_options())
        await to_client.aclose()  # the writer flushes what the SDK already sent, then ends
        await writer_done.wait()
        group.cancel_scope.cancel()
