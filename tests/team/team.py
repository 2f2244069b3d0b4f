"""A team deployment on this machine, for the tests and `benchmarks/bench_team.py`: gateway replicas (real
`mcp-sections gateway --transport http` processes, each with its own data directory and section subprocesses)
sharing one Redis (tasks, links) and one PostgreSQL database (memory, todo), behind HAProxy running the team
profile's config (`docker/haproxy.cfg`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client

from tests.processes import free_port, wait_until_listening
from tests.stdio import NO_WARM_UP, cli_command, data_of, server_environment
from tests.tasks_client import Tasks
from tests.team.engines import Postgres, Redis, haproxy, postgres_server, redis_server


@dataclass
class Replica:
    """One gateway replica, in a process group of its own (its sections die with it, as in a container)."""

    name: str
    data_dir: Path
    root: Path
    env: dict[str, str]
    balancer_port: int
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        command = [
            *cli_command(), "gateway", "--transport", "http", "--port", str(self.port),
            "--data-dir", str(self.data_dir), "--root", str(self.root),
            "--allowed-host", f"127.0.0.1:{self.balancer_port}",
        ]  # fmt: skip
        log = (self.data_dir.parent / f"{self.name}.log").open("ab")
        self.process = subprocess.Popen(
            command, env=self.env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True
        )
        wait_until_listening(self.port, self.process)

    def kill(self) -> None:
        """SIGKILL to the replica and its sections at once: a machine or container that died."""
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
            self.process = None


@dataclass
class Team:
    replicas: list[Replica]
    balancer_port: int
    postgres: Postgres | None
    redis: Redis | None
    stats_socket: Path

    @property
    def url(self) -> str:
        """The load balancer's MCP endpoint."""
        return f"http://127.0.0.1:{self.balancer_port}/mcp"

    def haproxy(self, command: str) -> str:
        """A command on HAProxy's admin socket (`show stat`, `show table gateways`)."""
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(self.stats_socket))
            sock.sendall(command.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def served(self) -> dict[str, int]:
        """Requests each replica answered through the load balancer so far."""
        lines = self.haproxy("show stat").splitlines()
        header = lines[0].lstrip("# ").split(",")
        rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:] if line]
        return {row["svname"]: int(row["stot"] or 0) for row in rows if row.get("pxname") == "gateways"}

    def sticky(self) -> dict[str, str]:
        """The stick table: session id → the replica (by name) its requests go to."""
        names = {str(index + 1): replica.name for index, replica in enumerate(self.replicas)}
        table = {}
        for line in self.haproxy("show table gateways").splitlines():
            parts = dict(part.split("=", 1) for part in line.split() if "=" in part)
            if "key" in parts and "server_id" in parts:
                table[parts["key"]] = names.get(parts["server_id"], parts["server_id"])
        return table

    def replica(self, name: str) -> Replica:
        return next(replica for replica in self.replicas if replica.name == name)


def shared_environment(postgres: Postgres | None, redis: Redis | None, prefix: str) -> dict[str, str]:
    """The variables that make replicas a team: the shared Redis and PostgreSQL (memory without a model: its
    searches are by words, which is what these tests ask)."""
    env = {"MCP_SECTIONS_MEMORY_EMBEDDINGS_ENABLED": "false"}
    if redis is not None:
        env |= {"MCP_SECTIONS_REDIS_URL": redis.url, "MCP_SECTIONS_REDIS_PREFIX": prefix}
    if postgres is not None:
        url = postgres.create_database(prefix)
        env |= {
            "MCP_SECTIONS_TODO_STORE": "postgres",
            "MCP_SECTIONS_TODO_POSTGRES_URL": url,
            "MCP_SECTIONS_MEMORY_STORE": "postgres",
            "MCP_SECTIONS_MEMORY_POSTGRES_URL": url,
        }
    return env


@contextmanager
def team(directory: Path, replicas: int = 2, shared: bool = True, env: dict[str, str] | None = None) -> Iterator[Team]:
    """`replicas` gateways behind HAProxy; `shared`: on their own Redis and PostgreSQL (else each on its own SQLite,
    as one person's gateway: the benchmark's baseline)."""
    directory.mkdir(parents=True, exist_ok=True)
    root = directory / "workspace"
    root.mkdir(exist_ok=True)
    with ExitStack() as stack:
        postgres = stack.enter_context(postgres_server(directory / "postgres")) if shared else None
        redis = stack.enter_context(redis_server(directory / "redis")) if shared else None
        environment = server_environment(
            {
                **NO_WARM_UP,
                **shared_environment(postgres, redis, "team"),
                "MCP_SECTIONS_CONFIG": os.devnull,
                **(env or {}),
            }
        )
        balancer_port = free_port()
        members = [
            Replica(name, directory / name / "data", root, environment, balancer_port)
            for name in ("a", "b", "c", "d")[:replicas]
        ]
        for replica in members:
            replica.data_dir.mkdir(parents=True, exist_ok=True)
            replica.start()
            stack.callback(replica.stop)
        stack.enter_context(haproxy(directory / "haproxy", [(r.name, r.port) for r in members], balancer_port))
        yield Team(members, balancer_port, postgres, redis, directory / "haproxy" / "haproxy.sock")


def client(url: str, name: str, legacy: bool = False, tasks: bool = False) -> Client:
    """A client of `url` in the 2026-07-28 era (stateless), or a 2025-11-25 session with `legacy`."""
    return Client(
        url,
        mode="legacy" if legacy else "auto",
        extensions=[Tasks()] if tasks else None,
        client_info=types.Implementation(name=name, version="1"),
        read_timeout_seconds=60,
    )


async def forward(connected: Client, section: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """A section tool through the gateway (call_section_tool): its structured result."""
    result = await connected.call_tool("call_section_tool", {"section": section, "tool": tool, "arguments": arguments})
    return data_of(result)
