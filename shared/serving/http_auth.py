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

A valid access token whose scopes do not allow what a request asks gets 403 with `WWW-Authenticate: Bearer
error="insufficient_scope", scope="…", resource_metadata="…"`, as the MCP authorization specification's step-up flow
has it, where the server can tell from the request alone (`ScopeChallenge`: a `tools/call` of a tool the token's
scopes do not allow, by the host's `ScopeRule`). The body is the JSON-RPC error of that request, so a client that
does not step up (the official one with a fixed token) raises it with the reason, not a bare HTTP error.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

from mcp_sections.shared.confinement.guards.urls import is_loopback_host
from mcp_sections.shared.framework.clients import User, user_of_access, user_of_token
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
INSUFFICIENT_SCOPE = -32003  # the JSON-RPC error code of a 403 challenge's body (a server-defined code)


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

    def vouches_for(self, user: User) -> bool:
        """Whether a page session signed in earlier as `user` still stands (its cookie outlives a restart: replicas
        share the key that signs it)."""
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

    def vouches_for(self, user: User) -> bool:
        """Only a session opened with this token: changing the token signs every page out."""
        return hmac.compare_digest(user.id.encode(), user_of_token(f"Bearer {self._token}").id.encode())


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


@dataclass(frozen=True)
class ScopeNeeded:
    """A call the token's scopes do not allow and a token with other scopes would: `scopes` to ask the authorization
    server for (space-separated in the challenge), `message` why (as the call's tool error would say it)."""

    scopes: tuple[str, ...]
    message: str


class ScopeRule(Protocol):
    """A host's rule: the scopes `user` lacks for this `tools/call`, decided from the request alone (None: allowed,
    or only the call itself can tell)."""

    async def __call__(self, user: User, tool: str, arguments: Mapping[str, Any]) -> ScopeNeeded | None: ...


class ScopeChallenge:
    """The `HttpGuard` of OAuth access tokens (`guard`) that also answers a `tools/call` its token's scopes do not
    allow with 403 `insufficient_scope` (see the module docstring), once the token is valid and before MCP has it."""

    def __init__(self, guard: HttpGuard, rule: ScopeRule, metadata_url: str) -> None:
        self._guard = guard
        self._rule = rule
        self._metadata_url = metadata_url

    @property
    def description(self) -> str:
        return self._guard.description

    def wrap(self, app: ASGIApp) -> ASGIApp:
        return self._guard.wrap(_ChallengeScopes(app, self._rule, self._metadata_url))

    def pages(self) -> Mapping[str, ASGIApp]:
        return self._guard.pages()

    async def identify(self, credential: str) -> Identified | None:
        return await self._guard.identify(credential)

    def vouches_for(self, user: User) -> bool:
        return self._guard.vouches_for(user)


class _ChallengeScopes:
    """ASGI, behind the token's check: a POSTed `tools/call` the rule refuses gets 403; any other request (or one
    larger than MCP accepts: it answers that) goes on with its body as received."""

    def __init__(self, app: ASGIApp, rule: ScopeRule, metadata_url: str) -> None:
        self._app = app
        self._rule = rule
        self._metadata_url = metadata_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        authenticated = scope.get("user")
        if scope["type"] != "http" or scope.get("method") != "POST" or not isinstance(authenticated, AuthenticatedUser):
            await self._app(scope, receive, send)
            return
        received, body = await _body(receive)
        call = _tool_call(body) if body is not None else None
        if call is not None:
            request_id, tool, arguments = call
            try:
                needed = await self._rule(user_of_access(authenticated.access_token), tool, arguments)
            except Exception:  # the call itself is refused (or not) as it would have been: never fail it here
                logger.exception("the scopes of a call could not be decided before it ran")
                needed = None
            if needed is not None:
                await self._challenge(send, request_id, needed)
                return
        pending = deque(received)

        async def replayed() -> MutableMapping[str, Any]:
            return pending.popleft() if pending else await receive()

        await self._app(scope, replayed, send)

    async def _challenge(self, send: Send, request_id: Any, needed: ScopeNeeded) -> None:
        scopes = " ".join(_header_text(scope) for scope in needed.scopes)
        challenge = (
            f'Bearer error="insufficient_scope", scope="{scopes}", resource_metadata="{self._metadata_url}", '
            f'error_description="{_header_text(needed.message)}"'
        )
        data = {"error_code": "PERMISSION_DENIED", "scope": scopes, "resource_metadata": self._metadata_url}
        error = {"code": INSUFFICIENT_SCOPE, "message": needed.message, "data": data}
        payload = {"jsonrpc": "2.0", "id": request_id, "error": error}
        await send_json(send, 403, payload, (b"www-authenticate", challenge.encode("ascii")))


async def _body(receive: Receive) -> tuple[list[MutableMapping[str, Any]], bytes | None]:
    """The messages of a request's body as received, and the body (None: the client went away, or it is larger than
    MCP accepts)."""
    received: list[MutableMapping[str, Any]] = []
    size = 0
    while True:
        message = await receive()
        received.append(message)
        if message["type"] != "http.request":
            return received, None
        size += len(message.get("body", b""))
        if size > DEFAULT_MAX_REQUEST_BODY_SIZE:
            return received, None
        if not message.get("more_body", False):
            return received, b"".join(part.get("body", b"") for part in received)


def _tool_call(body: bytes) -> tuple[Any, str, dict[str, Any]] | None:
    """(id, tool, arguments) of a body that is one JSON-RPC `tools/call` request; None for anything else."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call" or "id" not in message:
        return None
    params = message.get("params")
    tool = params.get("name") if isinstance(params, dict) else None
    arguments = (params.get("arguments") if isinstance(params, dict) else None) or {}
    if not isinstance(tool, str) or not isinstance(arguments, dict):
        return None
    return message["id"], tool, arguments


def _header_text(text: str) -> str:
    """`text` as a quoted parameter of `WWW-Authenticate` may hold it (RFC 6750 §3: printable ASCII, no `"` or `\\`)."""
    return "".join(char if " " <= char <= "~" and char not in '"\\' else "?" for char in text.replace('"', "'"))
