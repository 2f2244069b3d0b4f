"""The HTTP gateway as an OAuth 2.1 resource server, as the MCP authorization specification describes it.

A team's gateway (`[gateway.auth]`, `servers/pool/settings.py`) accepts only access tokens its authorization server
issued for it, and knows from each one who calls:
- every request to `/mcp` carries `Authorization: Bearer <access token>`. One without gets 401 with
  `WWW-Authenticate: Bearer resource_metadata="<the metadata document>", scope="<the scopes it knows>"` (RFC 9728
  §5.1, RFC 6750 §3); one whose token fails validation gets 401 with `error="invalid_token"` and why;
- a token is a signed JWT (an RFC 9068 access token; RS256 and ES256 by default, never `none` nor a shared secret).
  Its signature is checked with the authorization server's keys: its JWKS, at `jwks_uri` of its metadata (RFC 8414,
  else OpenID Connect discovery) or a configured URL, fetched once, kept `JWKS_MAX_AGE`, and fetched again for a key
  id it does not hold (at most every `REFRESH_SECONDS`: a rotated key is picked up, a flood of made-up ids is not
  followed). Then its claims: the issuer (`iss`, exactly the configured one), the audience (`aud` names this
  gateway's resource — RFC 8707: the canonical URI clients ask their tokens for; scheme and host in any case, a
  trailing slash aside), the times (`exp`, `nbf`, `iat`, within the clock skew) and the subject (`sub`: the user);
- the protected-resource metadata (RFC 9728) is served without a token at `/.well-known/oauth-protected-resource`
  followed by the resource's path (and at that prefix alone): the resource, its authorization server, its scopes;
- a request that passes carries the SDK's `AuthenticatedUser` (an `AccessToken`: subject, scopes, client id), to
  which the SDK binds a 2025-11-25 session, and from which `shared.framework.clients.user_of` reads the user of each
  call (what the scopes allow is `servers/pool/filters.py`'s to say, per call).
The token work is joserfc's (`pip install 'mcp-sections[team]'`); tokens are never logged.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url, cors_middleware
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.authentication import AuthCredentials
from starlette.routing import Route, Router

from mcp_sections.shared.confinement.guards.urls import is_loopback_host
from mcp_sections.shared.framework.clients import NAME_CLAIMS, User, user_of_access
from mcp_sections.shared.framework.requirements import installed
from mcp_sections.shared.serving.http_auth import (
    ASGIApp,
    AuthConfigError,
    Identified,
    Receive,
    Scope,
    Send,
    authorization,
    bearer_credential,
    send_json,
)

logger = logging.getLogger("mcp_sections.oauth")

DEFAULT_ALGORITHMS = ("RS256", "ES256")
SIGNING_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)  # asymmetric only: a shared secret would let the gateway mint tokens
METADATA_PREFIX = "/.well-known/oauth-protected-resource"
JWKS_MAX_AGE = 3600.0
REFRESH_SECONDS = 10.0
FETCH_SECONDS = 10.0
MAX_DOCUMENT_BYTES = 1 << 20
LONGEST_JWT = 16_384
EXTRA_HINT = "pip install 'mcp-sections[team]'"


@dataclass(frozen=True)
class ResourceServer:
    """What the gateway checks tokens against (`[gateway.auth]`)."""

    issuer: str
    resource: str  # this gateway's canonical URI: the audience its tokens name
    scopes: tuple[str, ...] = ()  # the scopes it knows (`scopes_supported`)
    jwks_url: str | None = None  # default: `jwks_uri` of the issuer's metadata
    metadata_url: str | None = None  # default: the issuer's well-known metadata
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    clock_skew_seconds: int = 60
    resource_name: str | None = None
    refresh_seconds: float = REFRESH_SECONDS  # an unknown key id fetches the keys again at most this often


def checked_url(url: str, what: str) -> str:
    """`url` if an authorization server may be reached there: https, or http on this machine only (OAuth 2.1)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme not in ("https", "http") or not host or parts.fragment:
        raise AuthConfigError(f"{what} {url!r} is not an absolute http(s) URL without a fragment")
    if parts.scheme == "http" and not is_loopback_host(host):
        raise AuthConfigError(f"{what} {url!r} must use https (plain http only on this machine: 127.0.0.1, localhost)")
    return url


def same_resource(first: str, second: str) -> bool:
    """Whether two URIs name one resource: scheme and host in any case, a trailing slash aside."""
    a, b = urlsplit(first), urlsplit(second)
    return (
        a.scheme.lower() == b.scheme.lower()
        and a.netloc.lower() == b.netloc.lower()
        and a.path.rstrip("/") == b.path.rstrip("/")
        and a.query == b.query
    )


def metadata_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be, in the order the MCP specification has clients look (RFC 8414 with the
    path inserted, then OpenID Connect discovery inserted and appended)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")

    def at(well_known: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, well_known, "", ""))

    if not path:
        return [at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")]
    return [
        at(f"/.well-known/oauth-authorization-server{path}"),
        at(f"/.well-known/openid-configuration{path}"),
        at(f"{path}/.well-known/openid-configuration"),
    ]


class TokenRefused(Exception):
    """A token that does not pass; the message says why (never the token)."""


async def _fetch_json(url: str) -> dict[str, Any]:
    """One JSON object from the authorization server (no redirects, bounded in time and size)."""
    async with httpx2.AsyncClient(timeout=FETCH_SECONDS, follow_redirects=False) as client:
        response = await client.get(url, headers={"Accept": "application/json"})
    if response.status_code != 200:
        raise TokenRefused(f"{url} answered HTTP {response.status_code}")
    if len(response.content) > MAX_DOCUMENT_BYTES:
        raise TokenRefused(f"{url} sent more than {MAX_DOCUMENT_BYTES} bytes")
    try:
        document = json.loads(response.content)
    except ValueError:
        raise TokenRefused(f"{url} did not send JSON") from None
    if not isinstance(document, dict):
        raise TokenRefused(f"{url} did not send a JSON object")
    return document


class KeySource:
    """The authorization server's signing keys (see the module docstring): fetched lazily, kept, fetched again."""

    def __init__(self, server: ResourceServer) -> None:
        self._server = server
        self._jwks_url = server.jwks_url
        self._keys: Any = None  # a joserfc KeySet
        self._kids: frozenset[str | None] = frozenset()
        self._fetched = float("-inf")
        self._lock = anyio.Lock()

    async def for_kid(self, kid: str | None) -> Any:
        """The key set, holding `kid` if the server has it (fetched again when it is new to us)."""
        if self._wanted(kid) or self._lock.locked():  # a fetch under way: its keys, not "none yet"
            async with self._lock:
                if self._wanted(kid):
                    await self._refresh()
        if self._keys is None:
            raise TokenRefused("the authorization server's keys could not be fetched (see the server log)")
        return self._keys

    def _wanted(self, kid: str | None) -> bool:
        """Whether to fetch the keys now: none yet, old ones, or a new key id — never twice in `refresh_seconds`."""
        since = time.monotonic() - self._fetched
        missing = self._keys is None or (kid is not None and kid not in self._kids)
        return since >= JWKS_MAX_AGE or (missing and since >= self._server.refresh_seconds)

    async def _refresh(self) -> None:
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet

        self._fetched = time.monotonic()
        try:
            url = self._jwks_url or await self._discover()
            document = await _fetch_json(url)
            usable = [
                key
                for key in document.get("keys") or []
                if isinstance(key, dict) and key.get("kty") in ("RSA", "EC", "OKP") and key.get("use", "sig") == "sig"
            ]
            keys = KeySet.import_key_set({"keys": usable})
        except (TokenRefused, JoseError, httpx2.HTTPError, ValueError) as exc:
            logger.warning("the authorization server's keys could not be fetched: %s", exc)
            return
        self._keys = keys
        self._kids = frozenset(key.kid for key in keys.keys)

    async def _discover(self) -> str:
        """`jwks_uri` of the issuer's metadata, whose `issuer` must be the configured one (RFC 8414 §3.3)."""
        server = self._server
        candidates = [server.metadata_url] if server.metadata_url else metadata_urls(server.issuer)
        problems = []
        for url in candidates:
            try:
                metadata = await _fetch_json(url)
            except (TokenRefused, httpx2.HTTPError) as exc:
                problems.append(str(exc))
                continue
            if metadata.get("issuer") != server.issuer:
                problems.append(f"{url} names the issuer {metadata.get('issuer')!r}, not {server.issuer!r}")
                continue
            jwks_uri = metadata.get("jwks_uri")
            if not isinstance(jwks_uri, str):
                problems.append(f"{url} has no jwks_uri")
                continue
            self._jwks_url = checked_url(jwks_uri, "the issuer's jwks_uri")
            return self._jwks_url
        raise TokenRefused("no usable metadata of the issuer: " + "; ".join(problems))


class JwtVerifier:
    """The SDK's `TokenVerifier` for JWT access tokens of one authorization server (see the module docstring)."""

    def __init__(self, server: ResourceServer) -> None:
        self.server = server
        self._keys = KeySource(server)

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            return await self.check(token)
        except TokenRefused:
            return None

    async def check(self, token: str) -> AccessToken:
        """The access token's content; TokenRefused saying why it does not pass."""
        from joserfc import jws, jwt
        from joserfc.errors import JoseError

        if len(token) > LONGEST_JWT:
            raise TokenRefused("the token is too long")
        try:
            header = jws.extract_compact(token.encode("ascii")).headers()
        except (JoseError, ValueError, UnicodeError):
            raise TokenRefused("the token is not a signed JWT") from None
        algorithm, kid = header.get("alg"), header.get("kid")
        if algorithm not in self.server.algorithms:
            raise TokenRefused(f"the token is signed with {algorithm!r}; accepted: {', '.join(self.server.algorithms)}")
        keys = await self._keys.for_kid(kid if isinstance(kid, str) else None)
        key = keys if kid is not None or len(keys.keys) != 1 else keys.keys[0]
        try:
            claims = jwt.decode(token, key, algorithms=list(self.server.algorithms)).claims
        except JoseError as exc:
            raise TokenRefused(_jose_reason(exc)) from None
        self._check_claims(claims)
        return _access_token(token, claims, self.server.resource)

    def _check_claims(self, claims: dict[str, Any]) -> None:
        from joserfc import jwt
        from joserfc.errors import ExpiredTokenError, JoseError, MissingClaimError

        server = self.server
        registry = jwt.JWTClaimsRegistry(
            leeway=server.clock_skew_seconds,
            iss={"essential": True, "value": server.issuer},
            sub={"essential": True},
            exp={"essential": True},
            aud={"essential": True},
        )
        try:
            registry.validate(claims)
        except ExpiredTokenError:
            raise TokenRefused("the token has expired") from None
        except MissingClaimError as exc:
            raise TokenRefused(f"the token has no {exc.claim!r} claim") from None
        except JoseError as exc:
            claim = getattr(exc, "claim", "")
            if claim == "iss":
                raise TokenRefused(f"the token was not issued by {server.issuer}") from None
            raise TokenRefused(f"the token's {claim!r} claim is not valid ({exc.description})") from None
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if not any(isinstance(aud, str) and same_resource(aud, server.resource) for aud in audiences):
            raise TokenRefused(f"the token was not issued for this server (its audience is not {server.resource})")


def _jose_reason(exc: Exception) -> str:
    from joserfc.errors import BadSignatureError, InvalidKeyIdError, UnsupportedAlgorithmError

    if isinstance(exc, BadSignatureError):
        return "the token's signature is not the authorization server's"
    if isinstance(exc, InvalidKeyIdError):
        return "the token is signed with a key the authorization server does not publish"
    if isinstance(exc, UnsupportedAlgorithmError):
        return "the token's signing algorithm is not accepted"
    return "the token cannot be read"


def _access_token(token: str, claims: dict[str, Any], resource: str) -> AccessToken:
    """The SDK's `AccessToken` of a token that passed: scopes from `scope` (RFC 9068) or `scp`."""
    scope = claims.get("scope", claims.get("scp", ""))
    scopes = scope.split() if isinstance(scope, str) else [item for item in scope if isinstance(item, str)]
    client = claims.get("client_id", claims.get("azp", ""))
    kept = {key: claims[key] for key in ("iss", *NAME_CLAIMS) if isinstance(claims.get(key), str)}
    return AccessToken(
        token=token,
        client_id=client if isinstance(client, str) else "",
        scopes=scopes,
        expires_at=int(claims["exp"]),
        resource=resource,
        subject=str(claims["sub"]),
        claims=kept,
    )


class OAuthGuard:
    """`shared.serving.http_auth.HttpGuard` of an OAuth resource server (see the module docstring)."""

    def __init__(self, server: ResourceServer) -> None:
        checked_url(server.issuer, "the issuer")
        checked_url(server.resource, "the resource")
        for url, what in ((server.jwks_url, "jwks_url"), (server.metadata_url, "metadata_url")):
            if url is not None:
                checked_url(url, what)
        if not installed("joserfc"):
            raise AuthConfigError(f"[gateway.auth] needs the token library joserfc: {EXTRA_HINT}")
        self.server = server
        self.verifier = JwtVerifier(server)
        self.metadata_url = str(build_resource_metadata_url(AnyHttpUrl(server.resource)))
        self.description = f"OAuth access tokens of {server.issuer} for {server.resource} required"

    def wrap(self, app: ASGIApp) -> ASGIApp:
        return _RequireToken(app, self.verifier, self.metadata_url, self.server.scopes)

    def pages(self) -> Mapping[str, ASGIApp]:
        server = self.server
        metadata = ProtectedResourceMetadata.model_validate(
            {
                "resource": server.resource,
                "authorization_servers": [server.issuer],
                "scopes_supported": list(server.scopes) or None,
                "resource_name": server.resource_name,
            }
        )
        document = cors_middleware(ProtectedResourceMetadataHandler(metadata).handle, ["GET", "OPTIONS"])
        paths = {urlsplit(self.metadata_url).path, METADATA_PREFIX}
        return {METADATA_PREFIX: Router(routes=[Route(path, document, methods=["GET", "OPTIONS"]) for path in paths])}

    async def identify(self, credential: str) -> Identified | None:
        try:
            access = await self.verifier.check(credential)
        except TokenRefused:
            return None
        return Identified(user_of_access(access), access.expires_at)

    def vouches_for(self, user: User) -> bool:
        """Every session: one never outlives the access token it was opened with (its cookie expires with it)."""
        return True


class _RequireToken:
    """ASGI: an HTTP request reaches `app` only with a valid access token, as the SDK's `AuthenticatedUser`."""

    def __init__(self, app: ASGIApp, verifier: JwtVerifier, metadata_url: str, scopes: Sequence[str]) -> None:
        self._app = app
        self._verifier = verifier
        self._challenge = f'Bearer resource_metadata="{metadata_url}"' + (
            f', scope="{" ".join(scopes)}"' if scopes else ""
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        presented = authorization(scope)
        if not presented:
            await self._refuse(send, None, "send Authorization: Bearer <an access token of the authorization server>")
            return
        token = bearer_credential(presented.decode("latin-1"))
        if token is None:
            await self._refuse(send, "invalid_request", "the Authorization header is not Bearer <token>")
            return
        try:
            access = await self._verifier.check(token)
        except TokenRefused as refused:
            logger.info("refused a request's access token: %s", refused)
            await self._refuse(send, "invalid_token", str(refused))
            return
        scope["user"] = AuthenticatedUser(access)
        scope["auth"] = AuthCredentials(access.scopes)
        await self._app(scope, receive, send)

    async def _refuse(self, send: Send, error: str | None, description: str) -> None:
        challenge = self._challenge
        if error is not None:
            shown = description.replace('"', "'").replace("\\", "/")
            challenge += f', error="{error}", error_description="{shown}"'
        payload = {"error": error or "unauthorized", "error_description": description}
        await send_json(send, 401, payload, (b"www-authenticate", challenge.encode("latin-1", "replace")))
