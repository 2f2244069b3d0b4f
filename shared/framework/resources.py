"""Bulky parts of results by reference: `resource_link` blocks whose bytes `resources/read` serves.

A crawl's pages, a long file's full text, the text and lines of a long OCR, the views of a render would otherwise be
pushed whole into the agent's context. A tool attaches them instead (`ToolResult.attach`): the result carries a
bounded inline part plus one `resource_link` block per attachment (its URI also in the structured content), and the
bytes wait in this process's store until the client reads them with `resources/read`.
- The threshold: a text longer than `INLINE_CHARS` (16,000 characters, about 4,000 tokens) goes by reference, with
  its start inline, cut at a line boundary (`split_inline`); items of a list (the pages of a crawl) are shown inline
  by a preview of `PREVIEW_CHARS`; images by reference, with one small overview inline where a tool has one.
- The store is per process and bounded: `MAX_BYTES` in all (the oldest items go first), each item kept `TTL_SECONDS`.
  A URI that is gone is answered with INVALID_PARAMS saying to call the tool again. With several replicas (a team,
  `MCP_SECTIONS_REDIS_URL`) the bytes and their owners are kept in the Redis they share instead
  (`shared.store.redis_state`), by the section processes too, so a link is read through any replica; Redis keeps
  them `TTL_SECONDS` and bounds them with its own `maxmemory` (the team profile evicts the soonest to expire).
- URIs are `mcp-sections://<server>/results/<random>/<name>`: `<server>` names the section that holds the bytes (the
  gateway routes `resources/read` by it), the random part (128 bits) makes them unguessable.
- Text attachments of sections that mask secrets are masked like the rest of their result (`shared.serving.calls`).
- A link is read only by the client it was given to: the URIs in each result a client receives (`tools/call`, a
  task's result) are noted with that client (`shared.framework.clients`: the user — the subject of an OAuth access
  token on a team's gateway, whichever token of theirs they present, else the single bearer token — and the client
  program by its declared name and version), and a `resources/read` from anyone else (another user) is answered as
  for a URI that is gone. Behind the gateway, the section's client is the gateway's session, and the gateway checks
  its own clients the same way before it asks the section.
"""

from __future__ import annotations

import base64
import functools
import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, ResourceLink
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from mcp_sections.shared.framework import clients
from mcp_sections.shared.store.redis_state import RedisLinks, shared_state

logger = logging.getLogger("mcp_sections.resources")
T = TypeVar("T")

SCHEME = "mcp-sections"
INLINE_CHARS = 16_000
PREVIEW_CHARS = 500
MAX_BYTES = 64 * 1024 * 1024
TTL_SECONDS = 3600.0
MAX_NAME = 80
MAX_LINKS = 50_000  # links whose client is remembered (the oldest forgotten first: read as gone)
RESULT_METHODS = frozenset({"tools/call", "tasks/result", "tasks/get"})  # answers that may carry our links

_server_id = "local"


def serve_as(server_id: str) -> None:
    """Name this process's server in the URIs it mints (the section id, or `gateway`)."""
    global _server_id
    _server_id = server_id


def server_of(uri: str) -> str | None:
    """The server named by one of our URIs, or None for any other URI."""
    parts = urlsplit(uri)
    return parts.hostname if parts.scheme == SCHEME and parts.hostname else None


@dataclass(frozen=True)
class Attachment:
    """One bulky part of a result: sent as a `resource_link`, its bytes read through `resources/read`."""

    uri: str
    name: str
    mime_type: str
    data: str | bytes
    description: str | None = None

    @classmethod
    def new(cls, data: str | bytes, *, name: str, mime_type: str, description: str | None = None) -> Attachment:
        safe = quote(name[:MAX_NAME], safe="")
        uri = f"{SCHEME}://{_server_id}/results/{secrets.token_urlsafe(16)}/{safe}"
        return cls(uri=uri, name=name[:MAX_NAME], mime_type=mime_type, data=data, description=description)

    @property
    def size(self) -> int:
        return len(self.data.encode("utf-8")) if isinstance(self.data, str) else len(self.data)

    def link(self) -> ResourceLink:
        return ResourceLink(
            type="resource_link",
            uri=self.uri,
            name=self.name,
            description=self.description,
            mime_type=self.mime_type,
            size=self.size,
        )

    def contents(self) -> dict[str, Any]:
        """Its `resources/read` entry (text, or base64 for bytes)."""
        entry: dict[str, Any] = {"uri": self.uri, "mimeType": self.mime_type}
        if isinstance(self.data, str):
            entry["text"] = self.data
        else:
            entry["blob"] = base64.b64encode(self.data).decode("ascii")
        return entry


SharedLinks = Callable[[], "RedisLinks | None"]


@functools.cache
def shared_links() -> RedisLinks | None:
    """The Redis this process keeps links in (`MCP_SECTIONS_REDIS_URL`), or None: its own memory (resolved once)."""
    settings = shared_state()
    return RedisLinks(settings) if settings is not None else None


def _pop_expired(items: OrderedDict[str, tuple[float, T]], now: float) -> list[T]:
    """Remove the entries whose expiry time (first of each value) has come, from the oldest, and return them."""
    gone = []
    while items:
        key, (expires, value) = next(iter(items.items()))
        if expires > now:
            break
        del items[key]
        gone.append(value)
    return gone


class ResultStore:
    """The bytes of this process's attachments, bounded in size and time (see the module docstring)."""

    def __init__(
        self,
        max_bytes: int = MAX_BYTES,
        ttl_seconds: float = TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        shared: SharedLinks | None = None,
    ) -> None:
        self.max_bytes = max_bytes
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, Attachment]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._shared = shared or (lambda: None)  # the replicas' Redis, when there is one

    def put(self, attachment: Attachment) -> None:
        size = attachment.size
        if size > self.max_bytes:
            logger.warning("attachment %s (%d bytes) is larger than the whole store; not kept", attachment.name, size)
            return
        if (links := self._shared()) is not None:
            links.put(attachment.uri, _described(attachment), attachment.data, self.ttl_seconds)
            return
        with self._lock:
            self._expire()
            while self._items and self._bytes + size > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped.size
            self._items[attachment.uri] = (self._clock() + self.ttl_seconds, attachment)
            self._bytes += size

    def transform_text(self, uri: str, change: Callable[[str], str]) -> None:
        """Replace the text of a kept attachment by `change(text)` (bytes are left as they are)."""
        if (links := self._shared()) is not None:
            links.replace_text(uri, change)
            return
        with self._lock:
            item = self._items.get(uri)
            if item is None:
                return
            expires, attachment = item
            if not isinstance(attachment.data, str):
                return
            changed = replace(attachment, data=change(attachment.data))
            self._items[uri] = (expires, changed)
            self._bytes += changed.size - attachment.size

    def get(self, uri: str) -> Attachment | None:
        if (links := self._shared()) is not None:
            found = links.get(uri)
            return None if found is None else Attachment(uri=uri, data=found[1], **found[0])
        with self._lock:
            self._expire()
            item = self._items.get(uri)
            return item[1] if item is not None else None

    @property
    def total_bytes(self) -> int:
        return self._bytes

    def _expire(self) -> None:
        for attachment in _pop_expired(self._items, self._clock()):
            self._bytes -= attachment.size


def _described(attachment: Attachment) -> dict[str, Any]:
    return {"name": attachment.name, "mime_type": attachment.mime_type, "description": attachment.description}


STORE = ResultStore(shared=shared_links)


class LinkOwners:
    """Which client each link was given to, for as long as its bytes may be kept (bounded; the first client wins)."""

    def __init__(
        self,
        max_links: int = MAX_LINKS,
        ttl_seconds: float = TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        shared: SharedLinks | None = None,
    ) -> None:
        self.max_links = max_links
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._owners: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._lock = threading.Lock()
        self._shared = shared or (lambda: None)

    def record(self, uri: str, owner: str) -> None:
        if (links := self._shared()) is not None:
            links.record_owner(uri, owner, self.ttl_seconds, _server_id)
            return
        with self._lock:
            self._expire()
            if uri in self._owners:
                return  # given to a client already: a later answer naming it (a third party's) does not share it
            self._owners[uri] = (self._clock() + self.ttl_seconds, owner)
            while len(self._owners) > self.max_links:
                self._owners.popitem(last=False)

    def owner(self, uri: str) -> str | None:
        if (links := self._shared()) is not None:
            return links.owner(uri, _server_id)
        with self._lock:
            self._expire()
            item = self._owners.get(uri)
            return item[1] if item is not None else None

    def _expire(self) -> None:
        _pop_expired(self._owners, self._clock())


OWNERS = LinkOwners(shared=shared_links)


def publish(attachments: list[Attachment], mask: Callable[[str], str] | None = None) -> list[ResourceLink]:
    """Keep `attachments` in the store (text through `mask` first) and return their `resource_link` blocks."""
    links = []
    for attachment in attachments:
        if mask is not None and isinstance(attachment.data, str):
            attachment = replace(attachment, data=mask(attachment.data))
        STORE.put(attachment)
        links.append(attachment.link())
    return links


def split_inline(text: str, limit: int = INLINE_CHARS) -> tuple[str, bool]:
    """The start of `text` to show inline (at most `limit` characters, cut after a line when one ends in the last
    fifth) and whether anything was cut."""
    if len(text) <= limit:
        return text, False
    cut = text.rfind("\n", 0, limit)
    return (text[: cut + 1] if cut >= limit * 4 // 5 else text[:limit]), True


Fallback = Callable[[str], Awaitable[dict[str, Any] | None]]


class ServeResults:
    """Middleware: notes which client each of our links goes to; answers `resources/read` for our URIs, to that
    client only, from this process's store, else from `fallback` (the gateway asks the section the URI names); a URI
    that is gone, or was given to another client, gets INVALID_PARAMS."""

    def __init__(self, fallback: Fallback | None = None) -> None:
        self._fallback = fallback

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        method = getattr(ctx, "method", None)
        if method in RESULT_METHODS:
            answer = await call_next(ctx)
            links = [link for link in _links_in(answer) if server_of(link) is not None]
            if links:
                client = _client_of(ctx)
                for link in links:
                    OWNERS.record(link, client)
            return answer
        if method != "resources/read":
            return await call_next(ctx)
        uri = (ctx.params or {}).get("uri")
        if not isinstance(uri, str) or server_of(uri) is None:
            return await call_next(ctx)
        result: dict[str, Any] | None = None
        if OWNERS.owner(uri) == _client_of(ctx):
            attachment = STORE.get(uri)
            result = {"contents": [attachment.contents()]} if attachment is not None else None
            if result is None and self._fallback is not None:
                result = await self._fallback(uri)
        if result is None:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"resource {uri[:200]} is unknown or has expired (results are kept for "
                f"{TTL_SECONDS / 60:.0f} minutes); call the tool again for a fresh one.",
                data={"uri": uri},
            )
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            result = {**result, "resultType": "complete"}
        return result


def _client_of(ctx: Any) -> str:
    return clients.owner_of(ctx)


def _links_in(value: Any, depth: int = 0) -> list[str]:
    """The URIs of the `resource_link` blocks in an answer (a result, a task's result; dicts or models)."""
    if depth > 6:
        return []
    if isinstance(value, ResourceLink):
        return [str(value.uri)]
    if isinstance(value, BaseModel):
        value = {name: getattr(value, name) for name in type(value).model_fields}
    if isinstance(value, dict):
        if value.get("type") == "resource_link" and isinstance(value.get("uri"), str):
            return [value["uri"]]
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [
            uri
            for item in value
            if isinstance(item, dict | list | tuple | BaseModel)
            for uri in _links_in(item, depth + 1)
        ]
    return []
