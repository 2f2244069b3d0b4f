"""Bearer-token authentication on Streamable HTTP, through real server processes and the official client."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
from pathlib import Path

import httpx2 as httpx
import pytest
from mcp import Client

from mcp_sections.shared.serving.http_auth import AuthConfigError, bearer_credential, resolve_token
from tests.processes import serving_over_http
from tests.stdio import cli_command

TOKEN = "test-token-0123456789abcdef"


def _post(port: int, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
    )
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request(
        "POST",
        "/mcp",
        body=body,
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
    )
    response = connection.getresponse()
    response.read()
    return response.status, dict(response.getheaders())


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n", encoding="utf-8")
    return path


def test_requests_without_the_token_get_401_and_the_listen_line_is_printed(token_file: Path) -> None:
    with serving_over_http(["serve", "calculator", "--auth-token-file", str(token_file)]) as (port, process):
        status, headers = _post(port, {})
        assert status == 401 and headers.get("www-authenticate", "").startswith("Bearer")
        assert _post(port, {"Authorization": "Bearer wrong-token-wrong-token"})[0] == 401
        assert _post(port, {"Authorization": f"Bearer {TOKEN}"})[0] == 200
        process.terminate()
        _, err = process.communicate(timeout=10)
    assert f"serving Streamable HTTP on http://127.0.0.1:{port}/mcp (bearer token required)" in err.decode()
    assert TOKEN not in err.decode()


@pytest.mark.anyio
async def test_the_official_client_calls_tools_with_the_token(token_file: Path) -> None:
    with serving_over_http(["serve", "calculator"], env={"MCP_SECTIONS_AUTH_TOKEN_FILE": str(token_file)}) as (port, _):
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
        from mcp.client.streamable_http import streamable_http_client

        async with http, Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client:
            result = await client.call_tool("calculator_binary", {"operation": "add", "a": 2, "b": 3})
        assert not result.is_error and result.structured_content["result"] == 5


@pytest.mark.anyio
async def test_the_gateway_reaches_a_token_protected_section(token_file: Path, tmp_path: Path) -> None:
    with serving_over_http(["serve", "calculator", "--auth-token-file", str(token_file)]) as (port, _):
        config = tmp_path / "gateway.toml"
        config.write_text(
            f'[gateway.sections.calculator]\nurl = "http://127.0.0.1:{port}/mcp"\nauth_token_file = "{token_file}"\n',
            encoding="utf-8",
        )
        from mcp.client.stdio import StdioServerParameters

        params = StdioServerParameters(
            command=cli_command()[0], args=[*cli_command()[1:], "gateway", "--config", str(config)]
        )
        async with Client(params, mode="legacy") as client:
            result = await client.call_tool(
                "call_section_tool",
                {
                    "section": "calculator",
                    "tool": "calculator_binary",
                    "arguments": {"operation": "add", "a": 1, "b": 2},
                },
            )
        assert not result.is_error, result.content


def test_binding_beyond_loopback_without_a_token_is_refused() -> None:
    result = subprocess.run(
        [*cli_command(), "serve", "calculator", "--transport", "http", "--host", "0.0.0.0", "--port", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        env={key: value for key, value in os.environ.items() if not key.startswith("MCP_SECTIONS_AUTH")},
    )
    assert result.returncode == 2
    assert "--auth-token-file" in result.stderr and "Traceback" not in result.stderr


def test_token_rules(tmp_path: Path) -> None:
    assert resolve_token(None, "127.0.0.1", {}) is None
    assert resolve_token(None, "::1", {"MCP_SECTIONS_AUTH_TOKEN": TOKEN}) == TOKEN
    short = tmp_path / "short"
    short.write_text("abc", encoding="utf-8")
    with pytest.raises(AuthConfigError, match="shorter"):
        resolve_token(short, "127.0.0.1", {})
    with pytest.raises(AuthConfigError, match="cannot read"):
        resolve_token(tmp_path / "missing", "127.0.0.1", {})
    with pytest.raises(AuthConfigError, match="reachable from other machines"):
        resolve_token(None, "10.0.0.5", {})


def test_the_bearer_scheme_is_read_in_one_place_in_any_case() -> None:
    """The status page and the OAuth resource server read `Authorization` with this one function."""
    assert bearer_credential("Bearer abc") == "abc"
    assert bearer_credential("bearer  abc ") == "abc"
    assert bearer_credential("Basic abc") is None
    assert bearer_credential("Bearer ") is None
    assert bearer_credential("") is None
