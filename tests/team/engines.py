"""The real engines a team deployment runs on, started for a test in a temporary directory: PostgreSQL (initdb and
pg_ctl from the Debian packages), Redis (redis-server) and HAProxy (a generated config on free ports).

Each starts on a free port of 127.0.0.1 and can be stopped and started again on the same port and data (the
restart tests). As root, PostgreSQL runs as the `postgres` user (initdb refuses root); elsewhere as the test user.
A missing program skips the test with what to install (`scripts/setup.sh` installs them where apt is available).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.processes import free_port, listening, stop, wait_until_listening

POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")
APT = "apt-get install -y haproxy redis-server postgresql (scripts/setup.sh does it where apt is available)"


def program(name: str, *places: Path) -> str:
    """The path of `name` (on PATH, /usr/sbin or `places`), or the test is skipped saying how to install it."""
    for place in places:
        if (place / name).is_file():
            return str(place / name)
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
    if found is None:
        pytest.skip(f"{name} is not installed: {APT}")
    return found


def _as_postgres() -> dict[str, object]:
    """Popen options running a PostgreSQL program as a non-root user (initdb and postgres refuse root)."""
    if os.geteuid() != 0:
        return {}
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("PostgreSQL refuses to run as root and there is no `postgres` user to run it as")
    return {"user": "postgres", "group": "postgres"}


@dataclass
class Postgres:
    """A PostgreSQL cluster in `directory`, listening on 127.0.0.1:`port` (trust authentication, loopback only)."""

    directory: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url_of(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def init(self) -> None:
        initdb = program("initdb", POSTGRES_BIN)
        options = _as_postgres()
        self.directory.mkdir(parents=True, exist_ok=True)
        if options:
            shutil.chown(self.directory, "postgres", "postgres")
        command = [initdb, "-D", str(self.directory / "data"), "-A", "trust", "-U", "postgres", "--no-sync"]
        subprocess.run(command, check=True, capture_output=True, **options)  # type: ignore[call-overload]

    def start(self) -> None:
        postgres = program("postgres", POSTGRES_BIN)
        command = [
            postgres, "-D", str(self.directory / "data"), "-p", str(self.port), "-h", "127.0.0.1",
            "-k", str(self.directory), "-c", "fsync=off", "-c", "max_connections=200",
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            **_as_postgres(),  # type: ignore[call-overload]
        )
        wait_until_listening(self.port, self.process)
        self._wait_accepting()

    def _wait_accepting(self, seconds: float = 30) -> None:
        """Listening is not yet accepting: wait for a query to succeed."""
        import psycopg

        deadline = time.monotonic() + seconds
        while True:
            try:
                with psycopg.connect(self.url, connect_timeout=2) as connection:
                    connection.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (`fast`: SIGINT, sessions cut off; `immediate`: SIGQUIT, as a crash)."""
        if self.process is None:
            return
        self.process.send_signal(signal.SIGQUIT if mode == "immediate" else signal.SIGINT)
        self.process.wait(timeout=30)
        self.process = None

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url_of(name)


@contextmanager
def postgres_server(directory: Path) -> Iterator[Postgres]:
    """A new cluster while the block runs. As root, in a directory of its own under the system's temporary one:
    the `postgres` user must reach it, and pytest's are private to root."""
    pytest.importorskip("psycopg", reason="psycopg is part of the team extra: pip install 'mcp-sections[team]'")
    own = Path(tempfile.mkdtemp(prefix="mcp-sections-postgres-")) if _as_postgres() else None
    server = Postgres(own or directory)
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.stop()
        if own is not None:
            shutil.rmtree(own, ignore_errors=True)


@dataclass
class Redis:
    """A Redis server in `directory` on 127.0.0.1:`port`, its writes in an append-only file (they survive a restart)."""

    directory: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [
            program("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
            "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "no",
        ]  # fmt: skip
        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_until_listening(self.port, self.process)

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process, seconds=30)
            self.process = None


@contextmanager
def redis_server(directory: Path) -> Iterator[Redis]:
    pytest.importorskip("redis", reason="redis is part of the team extra: pip install 'mcp-sections[team]'")
    server = Redis(directory)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def haproxy_config(port: int, backends: Sequence[tuple[str, int]], stats_socket: Path) -> str:
    """A load balancer on 127.0.0.1:`port` over the replicas (name, port): the team profile's config
    (`docker/haproxy.cfg`) with the addresses of this test."""
    template = (Path(__file__).resolve().parents[2] / "docker" / "haproxy.cfg").read_text(encoding="utf-8")
    servers = "\n".join(
        f"    server {name} 127.0.0.1:{backend} check inter 500ms fall 2 rise 1" for name, backend in backends
    )
    replicas = "    server-template replica 4 gateway-replica:8000 check resolvers docker init-addr none\n"
    assert replicas in template, "docker/haproxy.cfg's server line changed: change it here too"
    return (
        template.replace("bind :8000", f"bind 127.0.0.1:{port}")
        .replace(replicas, servers + "\n")
        .replace("resolvers docker\n    nameserver dns 127.0.0.11:53\n", "")
        .replace("stats socket /tmp/haproxy.sock", f"stats socket {stats_socket}")
    )


@contextmanager
def haproxy(directory: Path, backends: Sequence[tuple[str, int]], port: int | None = None) -> Iterator[int]:
    """HAProxy on `port` (a free one by default) in front of `backends` while the block runs: its port."""
    binary = program("haproxy")
    port = port or free_port()
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "haproxy.cfg"
    config.write_text(haproxy_config(port, backends, directory / "haproxy.sock"), encoding="utf-8")
    subprocess.run([binary, "-c", "-q", "-f", str(config)], check=True, capture_output=True)
    with listening([binary, "-db", "-f", str(config)], port):
        yield port
