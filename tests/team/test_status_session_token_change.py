"""Changing the single bearer token signs every status page out, though the page's cookie is signed by a key that
outlives a restart (a key file, or the key replicas share in Redis): a session stands only while the token it was
opened with is the gateway's."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest

from tests.processes import free_port, listening
from tests.stdio import cli_command
from tests.team.replicas import TOKEN, carrying, gateway_environment, sign_in

pytestmark = pytest.mark.anyio


async def test_a_new_token_ends_the_sessions_the_old_one_opened(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("k" * 40 + "\n", encoding="utf-8")
    key_file.chmod(0o600)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [*cli_command(), "gateway", "--transport", "http", "--port", str(port), "--data-dir", str(tmp_path)]
    shared = {"MCP_SECTIONS_REQUEST_STATE_KEY_FILE": str(key_file)}
    async with httpx.AsyncClient(timeout=30, follow_redirects=False) as http:
        with listening(command, port, env=gateway_environment({**shared, "MCP_SECTIONS_AUTH_TOKEN": TOKEN})):
            cookie = await sign_in(http, url)
            assert (await http.get(f"{url}/status", headers=carrying(cookie))).status_code == 200
        with listening(command, port, env=gateway_environment({**shared, "MCP_SECTIONS_AUTH_TOKEN": TOKEN})):
            page = await http.get(f"{url}/status", headers=carrying(cookie))
            assert page.status_code == 200, "the same token after a restart: the session stands"
        other = {**shared, "MCP_SECTIONS_AUTH_TOKEN": "another-team-bearer-token-of-some-length"}
        with listening(command, port, env=gateway_environment(other)):
            page = await http.get(f"{url}/status", headers=carrying(cookie))
            assert page.status_code == 401, "a session the old token opened outlived the token"
