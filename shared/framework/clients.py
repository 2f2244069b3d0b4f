"""Who a request comes from: the user, and the owner of what a call leaves behind (a task, a resource link).

The user (`user_of`): on an HTTP gateway that is an OAuth resource server (`shared.serving.oauth`), the subject of the
access token the request presented, as the transport validated it — every token of that user (a refreshed one, a
new one with other scopes) is the same user; with the single bearer token of a one-person set-up, that token (a
digest of it); "local" without one (stdio, a loopback server without a token).

An owner is a user and a client program, never a connection: the user above and the name and version the client
declares (`clientInfo`, on both protocol wires). A client that reconnects (a new HTTP session, a restarted app, a
refreshed token) is the same owner. What keeps two owners apart: another user (another OAuth subject, another
token); another program of the same user declares another name or version. Two running copies of one program of one
user are one owner, as they share everything else that user's token reaches; on a loopback server without a token
every local process is trusted alike (it may call every tool), so a declared name is no secret there.

The user of the call being answered is also `current_user()`, for what a call does without its request at hand: the
audit line, the trace span, the tool profile of the user's scopes, the approval question (set for each tools/call by
`shared.serving.approval`, and inherited by a task's work).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

LOCAL = "local"
OAUTH = "oauth:"
NAME_CLAIMS = ("preferred_username", "email", "name")  # a token's claims that name its user for people


@dataclass(frozen=True)
class User:
    """Who a request comes from (see the module docstring). `scopes` is None where none apply (not an OAuth user)."""

    id: str  # stable, for ownership: "oauth:<subject>", "token:<digest>" or "local"
    name: str  # for people: the audit line, the status page
    scopes: frozenset[str] | None = None

    @property
    def authenticated(self) -> bool:
        """An OAuth user: a subject its authorization server vouched for."""
        return self.id.startswith(OAUTH)

    @property
    def subject(self) -> str | None:
        """The OAuth subject (`sub`) of an authenticated user, else None."""
        return self.id.removeprefix(OAUTH) if self.authenticated else None


LOCAL_USER = User(LOCAL, LOCAL)


def user_of_access(access: Any) -> User:
    """The user an OAuth access token (the SDK's `AccessToken`, as a token verifier made it) stands for."""
    claims = access.claims or {}
    subject = access.subject or ""
    named = next((claims[key] for key in NAME_CLAIMS if isinstance(claims.get(key), str) and claims[key]), None)
    name = subject if named is None or named == subject else f"{named} ({subject})"
    return User(f"{OAUTH}{subject}", name[:200], frozenset(access.scopes))


def user_of(ctx: Any) -> User:
    """The user of a request (see the module docstring), from the SDK's request context."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    authenticated = scope.get("user") if isinstance(scope, dict) else None
    if isinstance(authenticated, AuthenticatedUser):
        return user_of_access(authenticated.access_token)
    headers = getattr(request, "headers", None)
    presented = headers.get("authorization") if headers is not None else None
    return user_of_token(presented) if presented else LOCAL_USER


def user_of_token(authorization: str) -> User:
    """The user of a single bearer token, by a digest of the `Authorization` header presenting it."""
    digest = "token:" + hashlib.sha256(authorization.encode()).hexdigest()[:24]
    return User(digest, digest)


def owner_of(ctx: Any) -> str:
    """The owner of a request (see the module docstring), from the SDK's request context."""
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    client = f"{info.name}/{info.version}" if info is not None else "anonymous"
    return f"{user_of(ctx).id}|client:{client}"


_current: ContextVar[User | None] = ContextVar("mcp_sections_user", default=None)


def current_user() -> User | None:
    """The user of the call being answered (None outside a request: a warm-up, a test calling a tool directly)."""
    return _current.get()


@contextmanager
def calling(user: User) -> Iterator[User]:
    """`user` is `current_user()` within the block (and in the tasks it starts)."""
    token = _current.set(user)
    try:
        yield user
    finally:
        _current.reset(token)
