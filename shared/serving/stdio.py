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
import logging
import os
import select
import stat
import sys
import threading
from collections.abc import Iterable
from contextlib import suppress
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage
from mcp_types import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, JSONRPCResponse
from pydantic import ValidationError

from mcp_sections.shared.serving.audit import written_after_replies
from mcp_sections.shared.serving.sdk_tools import STDIO_PEER, MessageSendStream, lowlevel_server, message_streams

logger = logging.getLogger("mcp_sections.stdio")

MAX_LINE_BYTES = 16 * 1024 * 1024
READ_CHUNK = 256 * 1024
DRAIN_SECONDS = 30.0  # after the client closes stdin, how long requests still running may take to answer
_LONG_LIVED = frozenset({"subscriptions/listen"})  # open until the connection ends: nothing to wait for
MAX_ID = 2**63 - 1  # request ids are strings or integers that every peer can represent


def valid_request_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -MAX_ID - 1 <= value <= MAX_ID
    return isinstance(value, str)


def is_response(decoded: dict[str, Any]) -> bool:
    """A client's answer to a request of ours: never answered back, even when malformed."""
    return "method" not in decoded and "id" in decoded and ("result" in decoded or "error" in decoded)


def classify_bad_line(line: str | bytes) -> JSONRPCError | None:
    """The error for a line pydantic rejected; None when nothing may be answered (a notification whose only
    fault is unknown fields, or a malformed response object from the client)."""
    try:
        decoded = json.loads(line)
    except (ValueError, RecursionError):
        return _error(None, PARSE_ERROR, "Parse error: the line is not valid JSON")
    if not isinstance(decoded, dict):
        return _error(
            None, INVALID_REQUEST, "Invalid Request: expected one JSON-RPC object (batches are not supported)"
        )
    if is_response(decoded):
        return None
    request_id = decoded.get("id")
    if "id" in decoded and not valid_request_id(request_id):
        return _error(None, INVALID_REQUEST, "Invalid Request: `id` must be a string or an integer")
    try:
        types.jsonrpc_message_adapter.validate_python(decoded, by_name=False)
    except (ValidationError, RecursionError):
        if "id" not in decoded and isinstance(decoded.get("method"), str):
            return None  # a notification: never answered
        return _error(request_id, INVALID_REQUEST, "Invalid Request: not a valid JSON-RPC 2.0 message")
    if "id" not in decoded:
        return None
    # Valid once decoded by Python's json but not by pydantic's: e.g. a lone surrogate ("\ud800") in a string.
    return _error(request_id, PARSE_ERROR, "Parse error: the line holds a string that is not valid Unicode")


def misread_notification(text: str) -> JSONRPCError | None:
    """A line that parsed as a notification although it carries an `id` (true, {}, 1.5, null...): invalid."""
    if '"id"' not in text:
        return None
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(decoded, dict) and "id" in decoded:
        return _error(None, INVALID_REQUEST, "Invalid Request: `id` must be a string or an integer")
    return None


def _error(request_id: Any, code: int, message: str) -> JSONRPCError:
    if isinstance(request_id, str):
        try:
            request_id.encode("utf-8")
        except UnicodeEncodeError:  # an id holding a lone surrogate cannot be echoed back
            request_id = None
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

    def __init__(self, to_sdk: MessageSendStream, outbound: _Outbound) -> None:
        self._to_sdk = to_sdk
        self._outbound = outbound

    async def drain(self) -> None:
        """At end of input: let requests still running answer (bounded) before the SDK sees the end."""
        with anyio.move_on_after(DRAIN_SECONDS):
            while self._outbound.in_flight:
                await anyio.sleep(0.01)

    async def deliver(self, lines: Iterable[bytes | None]) -> None:
        for line in lines:
            try:
                await self._deliver_one(line)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                raise
            except Exception:  # one bad line must never stop the server: answer it and go on
                logger.exception("could not handle an input line")
                await self._outbound.send_error(_error(None, INTERNAL_ERROR, "Internal error handling this message"))

    async def _deliver_one(self, line: bytes | None) -> None:
        if line is None:
            await self._outbound.send_error(
                _error(None, INVALID_REQUEST, f"message larger than {MAX_LINE_BYTES} bytes")
            )
            return
        text = line.decode("utf-8", "replace")
        if not text.strip():
            return
        try:
            message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        except ValidationError:
            error = classify_bad_line(text)
            if error is not None:
                await self._outbound.send_error(error)
            return
        error = self._admit(message, text)
        if error is not None:
            await self._outbound.send_error(error)
            return
        await self._to_sdk.send(SessionMessage(message))

    def _admit(self, message: types.JSONRPCMessage, text: str) -> JSONRPCError | None:
        """The error for a parsed message that is refused; else None, with the requests in flight updated (a
        request starts waiting for its answer, a cancelled one never gets any)."""
        if isinstance(message, types.JSONRPCRequest):
            if not valid_request_id(message.id):
                return _error(None, INVALID_REQUEST, "Invalid Request: `id` must be a string or an integer")
            if message.method not in _LONG_LIVED:
                self._outbound.in_flight.add(message.id)
        elif isinstance(message, types.JSONRPCNotification):
            error = misread_notification(text)
            if error is not None:
                return error
            if message.method == "notifications/cancelled":
                cancelled = (message.params or {}).get("requestId")
                if isinstance(cancelled, str | int):
                    self._outbound.in_flight.discard(cancelled)  # a cancelled request is never answered
        return None


class _Outbound:
    """Writes messages to the output pipe on the event loop (or straight to a file), in order."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
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
        except (ValueError, OSError):  # a regular file or a device: plain blocking writes are fine there
            return
        self._writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def send(self, session_message: SessionMessage) -> None:
        message = session_message.message
        data = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self.in_flight.discard(message.id)
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
    """Whether the event loop should serve `fd`: only a pipe or a socket, and not on Windows (its loop serves
    console and pipe handles differently). Regular files, terminals (the loop would leave them non-blocking for
    the shell after us) and devices epoll refuses (`/dev/null`) are served through a thread."""
    if sys.platform == "win32":
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


_EOF = b""  # what the chunk queue carries at end of input


class _ChunkReader(asyncio.Protocol):
    """Puts what a pipe gives into `chunks`, then `_EOF`; stops reading while the queue is full."""

    def __init__(self, chunks: asyncio.Queue[bytes]) -> None:
        self.chunks = chunks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.chunks.put_nowait(data)
        if self.chunks.full():
            self.transport.pause_reading()  # type: ignore[attr-defined]

    def eof_received(self) -> None:
        self.chunks.put_nowait(_EOF)

    def connection_lost(self, exc: Exception | None) -> None:
        with suppress(asyncio.QueueFull):
            self.chunks.put_nowait(_EOF)


async def _read_loop(fd: int, splitter: LineSplitter, inbound: _Inbound) -> None:
    """Feed `inbound` from `fd` until end of file: on the loop for a pipe, through a thread for a file."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue(maxsize=64)
    reader = await _start_reading(fd, loop, chunks)
    while True:
        data = await chunks.get()
        if reader is not None and chunks.qsize() < 8:
            reader.transport.resume_reading()  # type: ignore[attr-defined]
        if data is _EOF:
            break
        await inbound.deliver(splitter.feed(data))


async def _start_reading(fd: int, loop: asyncio.AbstractEventLoop, chunks: asyncio.Queue[bytes]) -> _ChunkReader | None:
    """Read `fd` into `chunks`: a pipe on the loop (its reader returned), anything else in a thread (None)."""
    try:
        if not _loop_can_watch(fd):
            raise ValueError("served through a thread")
        _, reader = await loop.connect_read_pipe(
            lambda: _ChunkReader(chunks), os.fdopen(fd, "rb", buffering=0, closefd=False)
        )
        return reader
    except (ValueError, OSError):  # a regular file, a terminal, or a device epoll refuses (/dev/null)
        threading.Thread(target=_read_file, args=(fd, loop, chunks), daemon=True, name="stdio-reader").start()
        return None


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


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to a blocking descriptor."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _still_read(write_fd: int) -> bool:
    """Whether the client still holds the reading end of our stdout: a pipe whose reader is gone polls POLLERR (a
    socket, POLLHUP), without writing anything to find out."""
    if not hasattr(select, "poll"):  # pragma: no cover - Windows: no way to ask without writing
        return True
    poller = select.poll()
    poller.register(write_fd, select.POLLOUT)
    return not any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


async def run_stdio(server: MCPServer) -> None:
    """Serve `server` on stdin/stdout until the client closes its end (and its running requests answered)."""
    if sys.stdin is None:  # pragma: no cover - started without a stdin
        raise RuntimeError("stdio transport needs a standard input")
    read_fd, write_fd = claim_standard_streams()
    to_sdk, from_client = message_streams()
    to_client, from_sdk = message_streams()
    outbound = _Outbound(write_fd)
    await outbound.open()
    inbound = _Inbound(to_sdk, outbound)
    lowlevel = lowlevel_server(server)

    async def read() -> None:
        async with to_sdk:
            await _read_loop(read_fd, LineSplitter(), inbound)
            await inbound.drain()

    writer_done = anyio.Event()

    async def write() -> None:
        try:
            async with from_sdk:
                async for session_message in from_sdk:
                    await outbound.send(session_message)
                    write_audit_records()  # those of the calls just answered, off their latency
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            group.cancel_scope.cancel()  # the client closed its end: nobody is left to answer
        finally:
            writer_done.set()

    peer = STDIO_PEER.set(lambda: _still_read(write_fd))  # the calls' tasks start inside: they see it
    try:
        with written_after_replies() as write_audit_records:
            async with anyio.create_task_group() as group:
                group.start_soon(read)
                group.start_soon(write)
                await lowlevel.run(from_client, to_client, lowlevel.create_initialization_options())
                await to_client.aclose()  # the writer flushes what the SDK already sent, then ends
                await writer_done.wait()
                group.cancel_scope.cancel()
    finally:
        STDIO_PEER.reset(peer)
