"""Authentication of the Streamable HTTP transport of every section and the gateway: what guards `/mcp`.

Two guards (`HttpGuard`): the single bearer token of a one-person set-up (`BearerToken`, here), and on the gateway
of a team, OAuth 2.1 access tokens of the team's authorization server (`shared.serving.oauth`, from `[gateway.auth]`):
one or the other, never both (an MCP server accepts only the tokens of its own authorization server: with
`[gateway.auth]`, a single token given as well is not accepted, and a warning says so).

The single token comes from a file (`--auth-token-file`, `MCP_SECTIONS_AUTH_TOKEN_FILE`: compose mounts it as a secret)
or from `MCP_SECTIONS_AUTH_TOKEN`. It is required whenever the server binds beyond loopback: a server reachable
from other machines with no token refuses to start. On loopback it is optional (local clients, tests).
Every HTTP request must carry `Authorization: Bearer <token>`; anything else gets 401 before it reaches the MCP
session layer. Tokens are compared in constant time and never logged.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mcp_sections.shared.confinement.guards.urls import is_loopback_host
from mcp_sections.shared.framework.clients import User, user_of_token
from mcp_sections.shared.ground.errors import ConfigError

logger = logging.getLogger("mcp_sections.http_auth")

TOKEN_ENV = "MCP_SECTIONS_AUTH_TOKEN"
TOKEN_FILE_ENV = "MCP_SECTIONS_AUTH_TOKEN_FILE"
MIN_TOKEN_LENGTH = 16

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
_JSON_TYPE = (b"content-type", b"application/json")


class AuthConfigError(ConfigError, ValueError):
    """The token settings cannot be used (unreadable file, too short, missing where required)."""


def read_token_file(path: Path) -> str:
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise AuthConfigError(f"cannot read the auth token file {path}: {exc.strerror or exc}") from None
    if len(token) < MIN_TOKEN_LENGTH:
        raise AuthConfigError(f"the auth token in {path} is shorter than {MIN_TOKEN_LENGTH} characters")
    return token


@dataclass(frozen=True)
class Identified:
    """The user a credential stands for, and until when it does (`time.time()`; None: until the server stops)."""

    user: User
    until: float | None = None


class HttpGuard(Protocol):
    """What guards a Streamable HTTP server: `/mcp` behind it, its own pages beside (served without it)."""

    @property
    def description(self) -> str:
        """For the line printed when the server listens ("bearer token required")."""
        ...

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """`app` (the MCP endpoint) behind this guard: a request without valid credentials gets 401."""
        ...

    def pages(self) -> Mapping[str, ASGIApp]:
        """Paths served beside `/mcp` without credentials, by prefix (OAuth: the protected-resource metadata)."""
        ...

    async def identify(self, credential: str) -> Identified | None:
        """The user a credential presented to another page stands for (the status page's sign-in), or None."""
        ...


class BearerToken:
    """The single bearer token of a one-person set-up, as an `HttpGuard`."""

    description = "bearer token required"

    def __init__(self, token: str) -> None:
        self._token = token

    def wrap(self, app: ASGIApp) -> ASGIApp:
        return BearerAuth(app, self._token)

    def pages(self) -> Mapping[str, ASGIApp]:
        return {}

    async def identify(self, credential: str) -> Identified | None:
        if not hmac.compare_digest(credential.encode(), self._token.encode()):
            return None
        return Identified(user_of_token(f"Bearer {self._token}"))


def resolve_guard(
    token_file: Path | None,
    host: str,
    oauth: HttpGuard | None = None,
    environ: MutableMapping[str, str] | None = None,
) -> HttpGuard | None:
    """The guard of a server bound to `host`: `oauth` where the gateway has `[gateway.auth]`, else the single token
    (`resolve_token`); None: no authentication (loopback only). With `oauth`, a single token given as well is not
    accepted (an MCP server takes only its authorization server's tokens): a warning says so."""
    if oauth is None:
        token = resolve_token(token_file, host, environ)
        return BearerToken(token) if token is not None else None
    env = os.environ if environ is None else environ
    if token_file is not None or env.get(TOKEN_FILE_ENV) or env.get(TOKEN_ENV):
        logger.warning(
            "the gateway has [gateway.auth]: it takes only the access tokens of that authorization server; the single "
            "bearer token (--auth-token-file, %s, %s) is not accepted",
            TOKEN_FILE_ENV,
            TOKEN_ENV,
        )
    return oauth


def resolve_token(token_file: Path | None, host: str, environ: MutableMapping[str, str] | None = None) -> str | None:
    """The token to require for a server bound to `host` (None: no authentication, loopback only)."""
    env = os.environ if environ is None else environ
    if token_file is None and env.get(TOKEN_FILE_ENV):
        token_file = Path(env[TOKEN_FILE_ENV])
    token: str | None = None
    if token_file is not None:
        token = read_token_file(token_file)
    elif env.get(TOKEN_ENV):
        token = env[TOKEN_ENV].strip()
        if len(token) < MIN_TOKEN_LENGTH:
            raise AuthConfigError(f"{TOKEN_ENV} is shorter than {MIN_TOKEN_LENGTH} characters")
    if token is None and not is_loopback_host(host):
        raise AuthConfigError(
            f"binding {host} makes the server reachable from other machines: give it a bearer token with "
            f"--auth-token-file FILE (or {TOKEN_FILE_ENV} / {TOKEN_ENV}), or the gateway an authorization server "
            "([gateway.auth]), or bind 127.0.0.1"
        )
    return token


class BearerAuth:
    """ASGI middleware: HTTP requests without the right `Authorization: Bearer` header get 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        presented = authorization(scope)
        if hmac.compare_digest(presented, self._expected):
            await self._app(scope, receive, send)
            return
        error = "missing bearer token" if not presented else "invalid bearer token"
        description = f"{error}: send Authorization: Bearer <token>"
        challenge = (b"www-authenticate", b'Bearer realm="mcp-sections"')
        await send_json(send, 401, {"error": "unauthorized", "error_description": description}, challenge)


def authorization(scope: Scope) -> bytes:
    """A request's `Authorization` header as sent (empty when it has none)."""
    return next((value for name, value in scope.get("headers", []) if name.lower() == b"authorization"), b"")


def bearer_credential(header: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (the scheme in any case), or None for another scheme
    or an empty token."""
    kind, _, credential = header.partition(" ")
    return credential.strip() or None if kind.lower() == "bearer" else None


async def send_json(send: Send, status: int, payload: Any, *headers: tuple[bytes, bytes]) -> None:
    """An ASGI response of `payload` as JSON, with `headers` between its content type and length."""
    body = json.dumps(payload).encode()
    length = (b"content-length", str(len(body)).encode())
    await send({"type": "http.response.start", "status": status, "headers": [_JSON_TYPE, *headers, length]})
    await send({"type": "http.response.body", "body": body})
