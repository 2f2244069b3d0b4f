"""The access tokens a team's gateway accepts (`shared.serving.oauth`), checked by the real verifier against a stand-in
authorization server on 127.0.0.1 (its metadata and keys over real HTTP): RS256 and ES256 tokens pass with their
user and scopes; expired, wrong-audience, wrong-issuer, badly signed, unsigned and subject-less ones are refused
saying why; a rotated key is fetched once, made-up key ids are not followed; the settings refuse what cannot work.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from types import SimpleNamespace

import anyio
import pytest

pytest.importorskip("joserfc")

from joserfc import jwt
from joserfc.jwk import OctKey, RSAKey
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp_types import Implementation, InitializeRequestParams
from starlette.requests import Request

from mcp_sections.servers.pool.settings import GatewaySettings, load_gateway_settings
from mcp_sections.shared.framework.clients import owner_of, user_of_access
from mcp_sections.shared.serving.http_auth import AuthConfigError, resolve_guard
from mcp_sections.shared.serving.oauth import (
    JwtVerifier,
    OAuthGuard,
    ResourceServer,
    TokenRefused,
    metadata_urls,
)
from mcp_sections.shared.settings.config import ConfigError, Settings
from tests.team.authorization_server import AuthorizationServer, authorization_server

pytestmark = pytest.mark.anyio

RESOURCE = "http://127.0.0.1:8999/mcp"


def verifier(server: AuthorizationServer, **options: object) -> JwtVerifier:
    return JwtVerifier(ResourceServer(server.issuer, RESOURCE, **options))  # type: ignore[arg-type]


async def test_rs256_and_es256_tokens_pass_with_their_user_and_scopes() -> None:
    with authorization_server() as server:
        check = verifier(server)
        for key in ("RS256", "ES256"):
            token = server.token("alice-id", "mcp:read mcp:tools", RESOURCE, key=key, preferred_username="alice")
            access = await check.check(token)
            assert access.subject == "alice-id" and access.scopes == ["mcp:read", "mcp:tools"]
            assert access.client_id == "test-client" and access.resource == RESOURCE
            user = user_of_access(access)
            assert user.id == "oauth:alice-id" and user.name == "alice (alice-id)"
            assert user.scopes == frozenset({"mcp:read", "mcp:tools"}) and user.authenticated
        scp = await check.check(server.token("bob", "", RESOURCE, scope=None, scp=["mcp:read"]))
        assert scp.scopes == ["mcp:read"]  # Okta's and Azure's claim
        assert server.jwks_fetches == 1  # fetched once, then kept


async def test_the_first_requests_at_once_all_wait_for_the_one_fetch_of_the_keys() -> None:
    """Several first requests arriving together (two users connecting at the gateway's start) all pass on the keys
    of one fetch; before, those arriving while it ran were refused with "keys could not be fetched"."""
    with authorization_server() as server:
        check = verifier(server)
        server.keys_delay = 0.5
        users = [f"user-{number}" for number in range(6)]
        tokens = {user: server.token(user, "mcp:read", RESOURCE) for user in users}
        passed: list[str] = []

        async def verify(user: str) -> None:
            passed.append((await check.check(tokens[user])).subject)

        async with anyio.create_task_group() as group:
            group.start_soon(verify, users[0])
            await anyio.sleep(0.2)  # the others arrive while the first one's fetch runs
            for user in users[1:]:
                group.start_soon(verify, user)
        assert sorted(passed) == users
        assert server.jwks_fetches == 1


async def test_the_owner_of_a_call_is_the_tokens_subject_not_the_token() -> None:
    """A refreshed token (new `jti`, `iat`, key) keeps its user's tasks and links; another user's does not."""
    with authorization_server() as server:
        check = verifier(server)

        async def owner(token: str) -> str:
            access = await check.check(token)
            headers = [(b"authorization", f"Bearer {token}".encode())]
            request = Request({"type": "http", "headers": headers, "user": AuthenticatedUser(access)})
            info = Implementation(name="client", version="1")
            params = InitializeRequestParams(protocol_version="2025-11-25", capabilities={}, client_info=info)
            return owner_of(SimpleNamespace(request=request, session=SimpleNamespace(client_params=params)))

        first = await owner(server.token("bob-id", "mcp:tools", RESOURCE))
        refreshed = await owner(server.token("bob-id", "mcp:read", RESOURCE, key="ES256"))
        assert first == refreshed == "oauth:bob-id|client:client/1"
        assert await owner(server.token("alice-id", "mcp:tools", RESOURCE)) != first


def _unsigned(claims: dict[str, object]) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("expired", "the token has expired"),
        ("wrong audience", "not issued for this server"),
        ("wrong issuer", "not issued by http://127.0.0.1:"),
        ("bad signature", "signature is not the authorization server's"),
        ("unknown key", "a key the authorization server does not publish"),
        ("no subject", "no 'sub' claim"),
        ("not yet valid", "'nbf' claim is not valid"),
        ("unsigned", "signed with 'none'"),
        ("shared secret", "signed with 'HS256'"),
        ("not a token", "not a signed JWT"),
    ],
)
async def test_tokens_that_fail_are_refused_saying_why(case: str, reason: str) -> None:
    with authorization_server() as server:
        now = int(time.time())
        token = {
            "expired": lambda: server.token("alice", "mcp:read", RESOURCE, lifetime=-120),  # beyond the 60 s skew
            "wrong audience": lambda: server.token("alice", "mcp:read", "http://127.0.0.1:8999/other"),
            "wrong issuer": lambda: server.token("alice", "mcp:read", RESOURCE, iss="http://127.0.0.1:1/elsewhere"),
            "bad signature": lambda: server.token(
                "alice", "mcp:read", RESOURCE, signer=RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})
            ),
            "unknown key": lambda: server.token(
                "alice", "mcp:read", RESOURCE, signer=RSAKey.generate_key(2048, parameters={"kid": "made-up"})
            ),
            "no subject": lambda: server.token("alice", "mcp:read", RESOURCE, sub=None),
            "not yet valid": lambda: server.token("alice", "mcp:read", RESOURCE, nbf=now + 600),
            "unsigned": lambda: _unsigned({"iss": server.issuer, "sub": "alice", "aud": RESOURCE, "exp": now + 60}),
            "shared secret": lambda: jwt.encode(
                {"alg": "HS256"},
                {"iss": server.issuer, "sub": "alice", "aud": RESOURCE, "exp": now + 60},
                OctKey.generate_key(256),
            ),
            "not a token": lambda: "not-a-token",
        }[case]()
        check = verifier(server)
        with pytest.raises(TokenRefused, match=reason):
            await check.check(token)
        assert await check.verify_token(token) is None  # the SDK's TokenVerifier answer


async def test_the_clock_skew_and_the_audience_forms_are_allowed_for() -> None:
    with authorization_server() as server:
        check = verifier(server)
        await check.check(server.token("alice", "mcp:read", RESOURCE, lifetime=-30))  # within the 60 s skew
        await check.check(server.token("alice", "mcp:read", "HTTP://127.0.0.1:8999/mcp/"))  # case, trailing slash
        await check.check(server.token("alice", "mcp:read", ["https://other.example/api", RESOURCE]))
        strict = verifier(server, clock_skew_seconds=0)
        with pytest.raises(TokenRefused, match="expired"):
            await strict.check(server.token("alice", "mcp:read", RESOURCE, lifetime=-30))


async def test_a_rotated_key_is_fetched_once_and_made_up_key_ids_are_not_followed() -> None:
    with authorization_server() as server:
        check = verifier(server)
        await check.check(server.token("alice", "mcp:read", RESOURCE))
        for number in range(5):
            stranger = RSAKey.generate_key(2048, parameters={"kid": f"made-up-{number}"})
            with pytest.raises(TokenRefused, match="does not publish"):
                await check.check(server.token("mallory", "mcp:read", RESOURCE, signer=stranger))
        assert server.jwks_fetches == 1  # at most one fetch in refresh_seconds (10), whatever the ids
        eager = verifier(server, refresh_seconds=0)
        await eager.check(server.token("alice", "mcp:read", RESOURCE))
        server.rotate()
        await eager.check(server.token("alice", "mcp:read", RESOURCE, key="rotated"))  # a new kid: fetched again
        await eager.check(server.token("alice", "mcp:read", RESOURCE, key="rotated"))
        assert server.jwks_fetches == 3


async def test_keys_are_found_by_openid_discovery_for_an_issuer_with_a_path() -> None:
    with authorization_server("/realms/team", discovery="openid") as server:
        assert metadata_urls(server.issuer)[-1] == f"{server.issuer}/.well-known/openid-configuration"
        access = await verifier(server).check(server.token("alice", "mcp:read", RESOURCE))
        assert access.subject == "alice"


async def test_metadata_naming_another_issuer_gives_no_keys() -> None:
    with authorization_server() as server:
        impostor = ResourceServer(f"{server.issuer}/other", RESOURCE, metadata_url=f"{server.issuer}/jwks-nope")
        with pytest.raises(TokenRefused, match="keys could not be fetched"):
            await JwtVerifier(impostor).check(server.token("alice", "mcp:read", RESOURCE, iss=impostor.issuer))
        lying = ResourceServer(
            f"{server.issuer}/other",
            RESOURCE,
            metadata_url=f"{server.issuer}/.well-known/oauth-authorization-server",  # names server.issuer
        )
        with pytest.raises(TokenRefused, match="keys could not be fetched"):
            await JwtVerifier(lying).check(server.token("alice", "mcp:read", RESOURCE, iss=lying.issuer))
        assert server.jwks_fetches == 0


def test_settings_and_guards_refuse_what_cannot_work(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(AuthConfigError, match="must use https"):
        OAuthGuard(ResourceServer("http://auth.example.com", RESOURCE))
    with pytest.raises(AuthConfigError, match="must use https"):
        OAuthGuard(ResourceServer("https://auth.example.com", "http://mcp.example.com/mcp"))
    guard = OAuthGuard(ResourceServer("https://auth.example.com", "https://mcp.example.com/mcp"))
    assert guard.metadata_url == "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    assert resolve_guard(None, "0.0.0.0", guard, {}) is guard  # an authorization server guards beyond loopback
    with caplog.at_level(logging.WARNING, logger="mcp_sections.http_auth"):
        assert resolve_guard(None, "0.0.0.0", guard, {"MCP_SECTIONS_AUTH_TOKEN": "x" * 32}) is guard
    assert "the single bearer token (--auth-token-file" in caplog.text and "x" * 32 not in caplog.text
    auth = {"issuer": "https://auth.example.com", "resource": "https://mcp.example.com/mcp"}
    with pytest.raises(ValueError, match="needs both `issuer`"):
        GatewaySettings.load({"auth": {"issuer": "https://auth.example.com"}})
    with pytest.raises(ValueError, match=r"algorithms \['HS256'\]"):
        GatewaySettings.load({"auth": {**auth, "algorithms": ["HS256"]}})
    with pytest.raises(ValueError, match="unknown tool profile 'writer'; profiles: all, readonly"):
        GatewaySettings.load({"auth": {**auth, "scopes": {"mcp:write": "writer"}}})
    with pytest.raises(ValueError, match="not an OAuth scope"):
        GatewaySettings.load({"auth": {**auth, "scopes": {"two words": "all"}}})
    settings = Settings.load()
    object.__setattr__(settings, "gateway", {"auth": {**auth, "scopes": {"mcp:read": "readonly"}, "nope": 1}})
    with pytest.raises(ConfigError, match=r"unknown setting 'nope' in \[gateway.auth\]"):
        load_gateway_settings(settings)


def test_the_environment_configures_the_authorization_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SECTIONS_GATEWAY_AUTH_ISSUER", "https://auth.example.com")
    monkeypatch.setenv("MCP_SECTIONS_GATEWAY_AUTH_RESOURCE", "https://mcp.example.com/mcp")
    monkeypatch.setenv("MCP_SECTIONS_GATEWAY_AUTH_SCOPES", '{"mcp:read": "readonly", "mcp:tools": "all"}')
    monkeypatch.setenv("MCP_SECTIONS_GATEWAY_AUTH_ALGORITHMS", "ES256")
    settings = Settings.load()
    object.__setattr__(settings, "gateway", {"auth": {"issuer": "https://ignored.example.com"}})
    config = load_gateway_settings(settings)
    server = config.auth.resource_server()
    assert server is not None and server.issuer == "https://auth.example.com" and server.algorithms == ("ES256",)
    assert server.scopes == ("mcp:read", "mcp:tools")
    assert "by scope: mcp:read → profile 'readonly'" in config.tool_filter().describe()
