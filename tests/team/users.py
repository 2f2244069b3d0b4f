"""The team gateway of `test_users.py` and `test_users_across_replicas.py`: its config (`[gateway.auth]` on the
stand-in authorization server, its scopes, the slow and bulky test section), the real HTTP gateway started on it, and
the official client (or a bare `initialize`) presenting a user's access token."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.helpers import REPO, tasks_demo_table
from tests.otlp_receiver import OtlpReceiver
from tests.processes import free_port, listening
from tests.stdio import NO_WARM_UP, cli_command
from tests.tasks_client import Tasks
from tests.team.authorization_server import AuthorizationServer, authorization_server

FAST_EXPORT = {"OTEL_BSP_SCHEDULE_DELAY": "100"}


@dataclass
class Team:
    """The gateway of the test, its authorization server, and where it keeps its files."""

    auth: AuthorizationServer
    port: int
    workdir: Path
    receiver: OtlpReceiver

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def token(self, user: str, **options: Any) -> str:
        scopes = {"alice": "mcp:tools", "bob": "mcp:tools", "carol": "mcp:read", "dave": "profile"}[user]
        return self.auth.token(f"{user}-id", scopes, self.url, preferred_username=user, **options)


def gateway_config(team_dir: Path, auth: AuthorizationServer, url: str, approval: str = "off") -> str:
    return (
        f'approval = "{approval}"\n'
        f'[gateway.auth]\nissuer = "{auth.issuer}"\nresource = "{url}"\n'
        '[gateway.auth.scopes]\n"mcp:read" = "readonly"\n"mcp:tools" = "all"\n'
        + tasks_demo_table(team_dir / "demo-data")
    )


@contextmanager
def team_gateway(workdir: Path, approval: str = "off") -> Iterator[Team]:
    """The HTTP gateway of a team (`approval` on or off), its authorization server and a trace receiver."""
    port = free_port()
    with authorization_server() as auth, OtlpReceiver() as receiver:
        config = workdir / "config.toml"
        config.write_text(gateway_config(workdir, auth, f"http://127.0.0.1:{port}/mcp", approval), encoding="utf-8")
        command = [
            *cli_command(),
            "gateway",
            *("--config", str(config), "--data-dir", str(workdir / "data"), "--root", str(workdir)),
            *("--transport", "http", "--port", str(port)),
        ]
        environment = {
            **os.environ,
            **NO_WARM_UP,
            "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(REPO)])),
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            **FAST_EXPORT,
        }
        with listening(command, port, env=environment, cwd=workdir):
            yield Team(auth, port, workdir, receiver)


@asynccontextmanager
async def as_user(team: Team, token: str, *, legacy: bool = False) -> AsyncIterator[Client]:
    """The official client presenting `token`: on the 2026-07-28 wire with the tasks extension, or on 2025-11-25."""
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    transport = streamable_http_client(team.url, http_client=http)
    options: dict[str, Any] = {"mode": "legacy"} if legacy else {"mode": "auto", "extensions": [Tasks()]}
    async with http, Client(transport, read_timeout_seconds=60, **options) as client:
        yield client


def initialize(team: Team, token: str | None) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.post(team.url, json=body, headers=headers, timeout=30)
