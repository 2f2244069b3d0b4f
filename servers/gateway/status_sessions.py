"""The status page's sign-in sessions, valid on every replica of a team (`status.py`).

A session is a cookie the page signs, `v1.<payload>.<mac>`: the payload (base64url JSON) names the user (id and name),
until when it holds (wall-clock seconds: 12 hours, never past the credential the person signed in with) and a random
session id; the MAC is an HMAC-SHA256 under the secret the replicas share (`shared.serving.replica_secret`, use
`status-session`). Any replica reads it without asking another, and nobody can make or change one without the secret.
Signing out marks the session id as signed out until the cookie would have expired: in the shared state (the Redis key
`<prefix>:signed-out:<id>`) when there is one, so that every replica refuses it at once; else in this process (one
gateway). The CSRF token of the page's forms is an HMAC of the session id under another key of the same secret
(`status-csrf`): a form one replica rendered is accepted by another.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_sections.shared.framework.clients import User
from mcp_sections.shared.serving.http_auth import Identified
from mcp_sections.shared.serving.replica_secret import ReplicaSecret
from mcp_sections.shared.store.redis_state import SharedStateSettings, shared_state

SESSION_SECONDS = 12 * 3600
MAX_COOKIE_CHARS = 3800  # a browser keeps a cookie of up to 4096 bytes
MAX_SIGNED_OUT = 10_000  # signed-out sessions one process remembers (the soonest to expire go first beyond)
VERSION = "v1"


@dataclass(frozen=True)
class Session:
    """A signed-in browser: its session id, who signed in, and until when (`time.time()`)."""

    id: str
    user: User
    until: float


class SignedOut(Protocol):
    """The sessions signed out before they expired."""

    async def add(self, session: Session) -> None: ...

    async def has(self, session_id: str) -> bool: ...


class SignedOutHere:
    """Signed-out sessions in this process's memory (one gateway)."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}

    async def add(self, session: Session) -> None:
        now = time.time()
        self._until = {key: until for key, until in self._until.items() if until > now}
        self._until[session.id] = session.until
        while len(self._until) > MAX_SIGNED_OUT:
            del self._until[min(self._until, key=self._until.__getitem__)]

    async def has(self, session_id: str) -> bool:
        return session_id in self._until


class SignedOutShared:
    """Signed-out sessions in the Redis the replicas share, each kept until its cookie would have expired."""

    def __init__(self, settings: SharedStateSettings) -> None:
        self._settings = settings
        self._client: Any = None

    def _redis(self) -> Any:
        if self._client is None:  # opened in the event loop that uses it
            import redis.asyncio as aioredis
            from redis.asyncio.retry import Retry

            options = self._settings.client_options(Retry)
            self._client = aioredis.Redis.from_url(self._settings.redis_url or "", decode_responses=True, **options)
        return self._client

    def _key(self, session_id: str) -> str:
        return f"{self._settings.redis_prefix}:signed-out:{session_id}"

    async def add(self, session: Session) -> None:
        milliseconds = max(1, round((session.until - time.time()) * 1000))
        await self._redis().set(self._key(session.id), "1", px=milliseconds)

    async def has(self, session_id: str) -> bool:
        return bool(await self._redis().exists(self._key(session_id)))


def signed_out_here_or_shared() -> SignedOut:
    """Where sign-outs are kept: the shared state when configured (`MCP_SECTIONS_REDIS_URL`), else this process."""
    shared = shared_state()
    return SignedOutShared(shared) if shared is not None else SignedOutHere()


class Sessions:
    """Signed sign-in cookies and the page's CSRF tokens (see the module docstring)."""

    def __init__(self, secret: ReplicaSecret, signed_out: SignedOut) -> None:
        self._secret = secret
        self._signed_out = signed_out

    def new(self, identified: Identified) -> tuple[str, Session]:
        """A session for `identified` (12 hours, never past its credential) and its cookie's value."""
        until = time.time() + SESSION_SECONDS
        if identified.until is not None:
            until = min(until, identified.until)
        user = identified.user
        session = Session(secrets.token_urlsafe(18), User(user.id, user.name), until)
        fields = {"sid": session.id, "uid": user.id, "name": user.name[:200], "exp": round(until, 3)}
        payload = _b64(json.dumps(fields, separators=(",", ":")).encode())
        signed = f"{VERSION}.{payload}"
        return f"{signed}.{self._secret.sign('status-session', signed.encode())}", session

    async def session(self, cookie: str | None) -> Session | None:
        """The session a cookie holds (None: none, forged, expired or signed out)."""
        session = self._read(cookie)
        if session is None or await self._signed_out.has(session.id):
            return None
        return session

    def _read(self, cookie: str | None) -> Session | None:
        if cookie is None or len(cookie) > MAX_COOKIE_CHARS:
            return None
        signed, _, mac = cookie.rpartition(".")
        if not signed.startswith(f"{VERSION}.") or not self._secret.verify("status-session", signed.encode(), mac):
            return None
        try:
            fields = json.loads(_unb64(signed.removeprefix(f"{VERSION}.")))
            session = Session(str(fields["sid"]), User(str(fields["uid"]), str(fields["name"])), float(fields["exp"]))
        except (ValueError, KeyError, TypeError, binascii.Error):
            return None
        return session if session.until > time.time() else None

    async def end(self, cookie: str | None) -> None:
        """Sign a session out (every replica refuses its cookie from now on, where they share a state)."""
        session = self._read(cookie)
        if session is not None:
            await self._signed_out.add(session)

    def csrf(self, key: str) -> str:
        """The CSRF token of the visitor whose forms are keyed `key`."""
        return self._secret.sign("status-csrf", key.encode())

    def csrf_ok(self, key: str, token: str) -> bool:
        return self._secret.verify("status-csrf", key.encode(), token)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
