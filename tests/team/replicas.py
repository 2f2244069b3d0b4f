"""Two real gateway replicas over HTTP (approval on, one bearer token, one workspace) and HAProxy before them, as
the team profile runs them (`docker/haproxy.cfg`): the tests of what they share (`test_replicas_share_a_secret.py`,
`test_request_state_key_file.py`)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.orchestration.helpers import User
from tests.processes import free_port, listening
from tests.stdio import NO_WARM_UP, cli_command, server_environment
from tests.team.engines import haproxy

TOKEN = "a-team-bearer-token-of-some-length"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Pair:
    """Replicas `a` and `b` (their ports) and the balancer in front of them."""

    ports: dict[str, int]
    balancer: int
    root: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.balancer}"

    def direct(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}"


def gateway_environment(env: dict[str, str]) -> dict[str, str]:
    """A replica's variables: no config file, no warm-up, `env`, and this process's PYTHONPATH (the code under test)."""
    python_path = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
    return server_environment({**NO_WARM_UP, "MCP_SECTIONS_CONFIG": os.devnull, **python_path, **env})


@contextmanager
def replicas(directory: Path, env: dict[str, str]) -> Iterator[Pair]:
    """Gateways `a` and `b` (approval on, the bearer token, one workspace) on `env`, and HAProxy before them."""
    root = directory / "workspace"
    root.mkdir(parents=True, exist_ok=True)
    balancer, ports = free_port(), {"a": free_port(), "b": free_port()}
    environment = gateway_environment({"MCP_SECTIONS_APPROVAL": "destructive", "MCP_SECTIONS_AUTH_TOKEN": TOKEN, **env})
    with ExitStack() as stack:
        for name, port in ports.items():
            command = [
                *cli_command(), "gateway", "--transport", "http", "--port", str(port),
                "--data-dir", str(directory / name), "--root", str(root),
                "--allowed-host", f"127.0.0.1:{balancer}", "--allowed-origin", f"http://127.0.0.1:{balancer}",
            ]  # fmt: skip
            log = stack.enter_context((directory / f"{name}.log").open("ab"))
            stack.enter_context(listening(command, port, env=environment, stderr=log))
        stack.enter_context(haproxy(directory / "haproxy", list(ports.items()), balancer))
        yield Pair(ports, balancer, root)


@asynccontextmanager
async def approving_client(url: str, user: User, served: list[str]) -> AsyncIterator[Client]:
    """The official client on 2026-07-28 with elicitation; `served` gets the replica that answered each request."""

    async def record(response: httpx.Response) -> None:
        served.append(response.headers.get("x-mcp-replica", "direct"))

    http = httpx.AsyncClient(headers=AUTH, timeout=60, event_hooks={"response": [record]})
    transport = streamable_http_client(f"{url}/mcp", http_client=http)
    async with http, Client(transport, mode="auto", elicitation_callback=user, read_timeout_seconds=60) as client:
        assert client.session.protocol_version == "2026-07-28"
        yield client


async def write_approved(client: Client, user: User, path: Path) -> Any:
    user.will("accept", {"approve": True})
    arguments = {"path": str(path), "content": "approved"}
    return await client.call_tool(
        "call_section_tool", {"section": "file_ops", "tool": "write_file", "arguments": arguments}
    )


async def sign_in(http: httpx.AsyncClient, url: str) -> str:
    """The session cookie of a sign-in with the bearer token at `url` (from the balancer's page)."""
    signed = await http.post(f"{url}/status/sign-in", data={"token": TOKEN}, headers={"Origin": url})
    assert signed.status_code == 303, signed.text
    header = signed.headers["set-cookie"].lower()
    assert "httponly" in header and "samesite=strict" in header and "path=/status" in header, header
    cookie = signed.cookies["mcp_sections_status"]
    http.cookies.clear()  # each request below says which cookie it carries
    return cookie


def carrying(cookie: str, **headers: str) -> dict[str, str]:
    return {"Cookie": f"mcp_sections_status={cookie}", **headers}
