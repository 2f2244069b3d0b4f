"""A real Bolt/Cypher server for the Neo4j backend's tests: ArcadeDB (PyPI `arcadedb-embedded`, with its own
JRE) listening on 127.0.0.1, started by the tests themselves. `NEO4J_URI` points them at a real Neo4j 5 instead.

The JVM runs in a process of its own (`python -m tests.rag_ops.bolt_server`, `bolt_process`), never inside a pytest
worker: a JVM uses SIGSEGV on purpose (safepoints, null checks) and, sharing a process with Python's faulthandler
and the suite's native libraries, it brought a worker down now and then ("node down: Not properly terminated").

The backend targets Neo4j 5 and is not changed for ArcadeDB. Where ArcadeDB differs, this fixture adapts:
ArcadeDB's Cypher has no `CREATE FULLTEXT INDEX` / `CREATE VECTOR INDEX`, so `AdaptingDriver` runs those two
statements as the equivalent ArcadeDB SQL (a named FULL_TEXT index, an LSM_VECTOR index) and passes every other
statement through unchanged; `db.index.fulltext.queryNodes` and `db.index.vector.queryNodes` then work as in Neo4j.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tests.processes import free_port

DATABASE = "brain"
_FULLTEXT = re.compile(
    r"CREATE FULLTEXT INDEX (\w+) IF NOT EXISTS FOR \(\w+:(\w+)\) ON EACH \[([^\]]+)\]", re.IGNORECASE
)
_VECTOR = re.compile(
    r"CREATE VECTOR INDEX (\w+) IF NOT EXISTS FOR \(\w+:(\w+)\) ON \(\w+\.(\w+)\).*?`vector\.dimensions`: (\d+)"
    r".*?`vector\.similarity_function`: '(\w+)'",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True)
class BoltServer:
    uri: str
    user: str
    password: str
    http_port: int

    def sql(self, command: str) -> Any:
        """Run ArcadeDB SQL on the brain database through its HTTP API."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.http_port}/api/v1/command/{DATABASE}",
            data=json.dumps({"language": "sql", "command": command}).encode(),
            headers={
                "Content-Type": "application/json",
                "Authorization": "Basic " + base64.b64encode(f"{self.user}:{self.password}".encode()).decode(),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"ArcadeDB refused {command!r}: {exc.read()[:400]!r}") from None

    def adapt(self, statement: str) -> bool:
        """Run a Neo4j index statement ArcadeDB's Cypher lacks as SQL; False when the statement is not one."""
        if match := _FULLTEXT.fullmatch(statement.strip()):
            name, label, fields = match.groups()
            properties = [field.strip().split(".", 1)[1] for field in fields.split(",")]
            for prop in properties:
                self.sql(f"CREATE PROPERTY {label}.{prop} IF NOT EXISTS STRING")
            self.sql(f"CREATE INDEX {name} IF NOT EXISTS ON {label} ({', '.join(properties)}) FULL_TEXT")
            return True
        if match := _VECTOR.match(statement.strip()):
            name, label, prop, dimensions, similarity = match.groups()
            self.sql(f"CREATE PROPERTY {label}.{prop} IF NOT EXISTS ARRAY_OF_FLOATS")
            self.sql(
                f"CREATE INDEX {name} IF NOT EXISTS ON {label} ({prop}) LSM_VECTOR "
                f'METADATA {{"dimensions": {int(dimensions)}, "similarity": "{similarity.upper()}"}}'
            )
            return True
        return False


@contextmanager
def arcadedb_bolt() -> Iterator[BoltServer]:
    """ArcadeDB with its Bolt listener on 127.0.0.1 (a fresh database directory), stopped afterwards."""
    bolt_port, http_port = free_port(), free_port()
    password = secrets.token_urlsafe(16)
    with tempfile.TemporaryDirectory(prefix="arcadedb-") as root:
        # ArcadeDB's own log goes to ./log of the working directory; warnings to stderr only, nothing written here.
        logging_config = os.path.join(root, "logging.properties")
        with open(logging_config, "w", encoding="utf-8") as handle:
            handle.write("handlers = java.util.logging.ConsoleHandler\n.level = WARNING\n")
        # C1 only and the serial collector: a test server lives seconds, and starts with half the CPU
        os.environ.setdefault(
            "ARCADEDB_JVM_ARGS",
            f"-Djava.util.logging.config.file={logging_config} -XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        )
        import arcadedb_embedded

        server = arcadedb_embedded.create_server(
            root_path=root,
            root_password=password,
            config={
                "http_port": http_port,
                "server_plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin",
                "bolt_port": bolt_port,
            },
        )
        server.start()
        try:
            server.create_database(DATABASE)
            yield BoltServer(f"bolt://127.0.0.1:{bolt_port}", "root", password, http_port)
        finally:
            server.stop()


@contextmanager
def bolt_process() -> Iterator[BoltServer]:
    """`arcadedb_bolt` in a child process: its address on the child's first line of output; closing the child's
    stdin stops it."""
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")]))}
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.rag_ops.bolt_server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=repo,
        env=env,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        line = child.stdout.readline()
        if not line:
            raise RuntimeError(f"the Bolt server process ended before it served (exit {child.wait(timeout=30)})")
        yield BoltServer(**json.loads(line))
    finally:
        child.stdin.close()
        try:
            child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=30)


def main() -> None:
    """Serve `arcadedb_bolt` until stdin closes; its address as one JSON line on stdout."""
    with arcadedb_bolt() as server:
        print(json.dumps(asdict(server)), flush=True)
        sys.stdin.read()


def neo4j_store(server: BoltServer | None) -> Any:
    """The Neo4j backend on `server` (ArcadeDB, adapted), or on NEO4J_URI's Neo4j when `server` is None."""
    from mcp_sections.shared.brain.neo4j_backend import Neo4jBrainStore

    if server is None:
        return Neo4jBrainStore.from_env()
    import neo4j

    driver = neo4j.GraphDatabase.driver(server.uri, auth=(server.user, server.password))
    return Neo4jBrainStore(AdaptingDriver(driver, server), DATABASE)


class AdaptingDriver:
    """A neo4j driver whose sessions run Neo4j's index statements through `BoltServer.adapt`."""

    def __init__(self, driver: Any, server: BoltServer) -> None:
        self._driver, self._server = driver, server

    def session(self, **options: Any) -> _Session:
        return _Session(self._driver.session(**options), self._server)

    def close(self) -> None:
        self._driver.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._driver, name)


class _Session:
    def __init__(self, session: Any, server: BoltServer) -> None:
        self._session, self._server = session, server

    def __enter__(self) -> _Session:
        self._session.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._session.__exit__(*exc)

    def execute_write(self, work: Any, *args: Any, **kwargs: Any) -> Any:
        return self._session.execute_write(lambda tx: work(_Transaction(tx, self._server)), *args, **kwargs)

    def execute_read(self, work: Any, *args: Any, **kwargs: Any) -> Any:
        return self._session.execute_read(lambda tx: work(_Transaction(tx, self._server)), *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


class _Transaction:
    def __init__(self, tx: Any, server: BoltServer) -> None:
        self._tx, self._server = tx, server

    def run(self, query: Any, parameters: Any = None, **kwargs: Any) -> Any:
        if isinstance(query, str) and self._server.adapt(query):
            return []
        return self._tx.run(query, parameters, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)


if __name__ == "__main__":
    main()
