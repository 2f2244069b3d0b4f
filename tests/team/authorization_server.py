"""A stand-in OAuth 2.1 authorization server on 127.0.0.1 for the tests of a team's gateway (`shared.serving.oauth`):
its RFC 8414 metadata (or, with `discovery="openid"`, only OpenID Connect discovery), its JWKS (an RSA and an EC
signing key, one more after `rotate()`), and the access tokens it signs (RFC 9068 JWTs) for the users of a test, with
whatever claims a test wants wrong. It counts the JWKS fetches."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, RSAKey

from tests.http_stand_in import ScriptedHandler, Serving


class AuthorizationServer:
    """The server's state: keys, what it published, and how often its keys were fetched."""

    def __init__(self, path: str = "", discovery: str = "oauth") -> None:
        self.path = path
        self.discovery = discovery
        self.keys: dict[str, Any] = {
            "RS256": RSAKey.generate_key(2048, parameters={"kid": "rsa-1", "alg": "RS256", "use": "sig"}),
            "ES256": ECKey.generate_key("P-256", parameters={"kid": "ec-1", "alg": "ES256", "use": "sig"}),
        }
        self.jwks_fetches = 0
        self.keys_delay = 0.0  # seconds the keys take to come (a slow authorization server)
        self.port = 0

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
        }

    def jwks(self) -> dict[str, Any]:
        self.jwks_fetches += 1
        time.sleep(self.keys_delay)
        return KeySet(list(self.keys.values())).as_dict(private=False)

    def rotate(self) -> str:
        """A new RSA signing key, published from now on (the kid of the tokens `token(..., key="rotated")` gets)."""
        kid = f"rsa-{len(self.keys) + 1}"
        self.keys["rotated"] = RSAKey.generate_key(2048, parameters={"kid": kid, "alg": "RS256", "use": "sig"})
        return kid

    def token(
        self,
        subject: str,
        scopes: str,
        audience: str | list[str],
        *,
        lifetime: float = 300,
        key: str = "RS256",
        signer: Any = None,
        **claims: Any,
    ) -> str:
        """An access token for `subject` with `scopes` (space-separated), for `audience`; `claims` override any
        claim (None drops it); `signer`: a key of nobody's to sign with instead."""
        now = int(time.time())
        payload: dict[str, Any] = {
            "iss": self.issuer,
            "sub": subject,
            "aud": audience,
            "exp": int(now + lifetime),
            "iat": now,
            "jti": secrets.token_hex(8),
            "scope": scopes,
            "client_id": "test-client",
        }
        payload.update(claims)
        payload = {name: value for name, value in payload.items() if value is not None}
        signing = signer if signer is not None else self.keys[key]
        algorithm = "ES256" if isinstance(signing, ECKey) else "RS256"
        return jwt.encode({"alg": algorithm, "kid": signing.kid, "typ": "at+jwt"}, payload, signing)


def _handler(server: AuthorizationServer) -> type[ScriptedHandler]:
    class Handler(ScriptedHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            wellknown_oauth = f"/.well-known/oauth-authorization-server{server.path}"
            wellknown_openid = f"{server.path}/.well-known/openid-configuration"
            if path == f"{server.path}/jwks":
                self.answer_json(200, server.jwks())
            elif (path == wellknown_oauth and server.discovery == "oauth") or (
                path == wellknown_openid and server.discovery == "openid"
            ):
                self.answer_json(200, server.metadata())
            else:
                self.answer_json(404, {"error": "not_found"})

    return Handler


@contextmanager
def authorization_server(path: str = "", discovery: str = "oauth") -> Iterator[AuthorizationServer]:
    """A stand-in authorization server, served on 127.0.0.1 while the block runs."""
    server = AuthorizationServer(path, discovery)
    with Serving(_handler(server)) as served:
        server.port = served.port
        yield server
