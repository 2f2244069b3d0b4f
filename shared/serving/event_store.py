"""Resumable Streamable HTTP: each session's events are kept a while, and replayed to a client that reconnects with
`Last-Event-ID`.

Over Streamable HTTP (2025-11-25 and older) a call's answer travels on the SSE stream of its POST. When that
connection drops during a long call (a laptop that sleeps, a proxy that cuts idle connections), the client reconnects
with a GET carrying the id of the last event it read, and the server sends what followed: the progress and the result
it would otherwise have lost. Every stream starts with a priming event (an id, no data) and a `retry` hint of
`RETRY_MS`, so even a call that sends nothing before its result can be resumed.

The SDK's event store is one object for every session, and its stream ids are request ids (the client's numbering:
two sessions both have a request `1`), so a store shared by sessions would replay one session's events to another.
Here each session has its own store (`SessionEvents`, opened when the session is admitted, closed when it ends:
`shared.serving.sdk_tools.resumable_sessions`), and event ids carry the store's random prefix.

Bounded in size and time: an event is kept `KEEP_SECONDS` (10 minutes), a session keeps at most `SESSION_EVENTS`
events and `SESSION_BYTES` bytes, and all sessions together `ALL_BYTES`; beyond, the oldest go first. What is kept is
always a session's newest events, so an id is either replayable with everything after it, or refused: a GET whose
`Last-Event-ID` is unknown or expired gets a clear 400 (`StreamResumption`), never an empty stream.
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import INVALID_REQUEST, JSONRPCMessage, jsonrpc_message_adapter

from mcp_sections.shared.serving.http_auth import send_json

KEEP_SECONDS = 600.0
SESSION_EVENTS = 1000
SESSION_BYTES = 8 * 1024 * 1024
ALL_BYTES = 64 * 1024 * 1024
RETRY_MS = 2000  # the reconnection delay a client is told (SSE `retry`)
SESSION_HEADER = b"mcp-session-id"
LAST_EVENT_HEADER = b"last-event-id"


@dataclass(frozen=True)
class _Event:
    seq: int
    stream: StreamId
    data: bytes | None  # the message as sent; None for a priming event
    at: float

    @property
    def size(self) -> int:
        return 64 + len(self.data or b"")


class SessionEvents(EventStore):
    """The events of one session (see the module docstring): the newest ones, in order."""

    def __init__(self, stores: SessionEventStores) -> None:
        self._stores = stores
        self._prefix = secrets.token_hex(6)
        self._events: deque[_Event] = deque()
        self._next = 1
        self.bytes = 0

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        data = None if message is None else message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        event = _Event(self._next, stream_id, data, time.monotonic())
        self._next += 1
        self._events.append(event)
        self.bytes += event.size
        self._stores.added(event.size)
        self.trim()
        return f"{self._prefix}-{event.seq}"

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        seq = self._seq(last_event_id)
        if seq is None or self.refusal(last_event_id) is not None:
            return None
        stream = next(event.stream for event in self._events if event.seq == seq)
        for event in list(self._events):
            if event.seq > seq and event.stream == stream and event.data is not None:
                message = jsonrpc_message_adapter.validate_json(event.data, by_name=False)
                await send_callback(EventMessage(message, f"{self._prefix}-{event.seq}"))
        return stream

    def refusal(self, event_id: str) -> str | None:
        """Why a stream cannot be resumed after `event_id` (None: it can)."""
        self.trim()
        seq = self._seq(event_id)
        if seq is None or seq >= self._next:
            return "is not an event of this session"
        if not self._events or seq < self._events[0].seq:
            return (
                f"has expired (a session's events are kept {KEEP_SECONDS / 60:.0f} minutes, at most "
                f"{SESSION_EVENTS} of them)"
            )
        return None

    def trim(self) -> None:
        """Drop what is beyond this session's bounds: too old, too many, too large."""
        limit = time.monotonic() - KEEP_SECONDS
        while self._events and (
            self._events[0].at < limit or len(self._events) > SESSION_EVENTS or self.bytes > SESSION_BYTES
        ):
            self.drop_oldest()

    def drop_oldest(self) -> None:
        event = self._events.popleft()
        self.bytes -= event.size
        self._stores.added(-event.size)

    @property
    def oldest(self) -> float | None:
        return self._events[0].at if self._events else None

    def clear(self) -> None:
        while self._events:
            self.drop_oldest()

    def _seq(self, event_id: str) -> int | None:
        prefix, _, number = event_id.rpartition("-")
        if prefix != self._prefix or not number.isdigit() or len(number) > 18:
            return None
        return int(number)


class SessionEventStores:
    """Every session's `SessionEvents` in this server, and the bound on all of them together."""

    def __init__(self, all_bytes: int = ALL_BYTES) -> None:
        self._sessions: dict[str, SessionEvents] = {}
        self._all_bytes = all_bytes
        self.bytes = 0

    def open(self, session_id: str) -> SessionEvents:
        store = self._sessions[session_id] = SessionEvents(self)
        return store

    def close(self, session_id: str) -> None:
        store = self._sessions.pop(session_id, None)
        if store is not None:
            store.clear()

    def get(self, session_id: str) -> SessionEvents | None:
        return self._sessions.get(session_id)

    def added(self, size: int) -> None:
        """`size` bytes were kept (or dropped, when negative); beyond the bound, the oldest events go first."""
        self.bytes += size
        while self.bytes > self._all_bytes:
            held = [store for store in self._sessions.values() if store.oldest is not None]
            if not held:
                return
            min(held, key=lambda store: store.oldest or 0.0).drop_oldest()


class StreamResumption:
    """ASGI, in front of the SDK's transport: a GET that resumes a stream (`Last-Event-ID`) of a known session reaches
    the SDK, which replays it, only if the session's store can replay from that id; otherwise it gets 400 with a
    JSON-RPC error saying why (the SDK would open an empty stream). Unknown sessions are left to the SDK (404)."""

    def __init__(self, app: Any, stores: SessionEventStores) -> None:
        self._app = app
        self._stores = stores

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("method") == "GET":
            headers = dict(scope.get("headers", ()))
            last = headers.get(LAST_EVENT_HEADER)
            session = headers.get(SESSION_HEADER)
            store = self._stores.get(session.decode("latin-1")) if session is not None else None
            if last is not None and store is not None:
                event_id = last.decode("latin-1")
                reason = store.refusal(event_id)
                if reason is not None:
                    await _refuse(send, f"{event_id[:80]!r} {reason}")
                    return
        await self._app(scope, receive, send)


async def _refuse(send: Any, why: str) -> None:
    message = (
        f"Bad Request: the stream cannot be resumed: the Last-Event-ID {why}; send the request again (a GET "
        "without Last-Event-ID opens the server's own stream)."
    )
    await send_json(send, 400, {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}})
