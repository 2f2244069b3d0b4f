"""The Neo4j backend without a server: every statement through Neo4j's parser, the read-only guard, secrets.

The behavioural contract and the read guard on a live server are in test_store_contract.py (a Neo4j 5 when
NEO4J_URI is set, else ArcadeDB's Bolt listener).
"""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcp_sections.shared.brain.cypher_guard import check_read_query
from mcp_sections.shared.brain.neo4j_backend import Neo4jBrainStore
from mcp_sections.shared.brain.neo4j_statements import all_statements, neighbors_statement
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from tests.node_tools import node_and_npm, node_tools

LINT_SCRIPT = Path(__file__).parent / "cypher" / "lint.mjs"


@pytest.fixture(scope="module")
def cypher_linter(shared_cache_dir: Path) -> list[str]:
    """Node running the lint script against Neo4j's Cypher language support (pinned in tests/node)."""
    node, _ = node_and_npm()
    return [node, str(LINT_SCRIPT), str(node_tools(shared_cache_dir))]


def lint(linter: list[str], statements: list[str]) -> list[dict[str, Any]]:
    run = subprocess.run(linter, input=json.dumps(statements), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


@pytest.mark.slow  # Neo4j's semantic analysis in Node, ~0.2 s per statement
def test_every_statement_parses_with_neo4j_parser(cypher_linter: list[str]) -> None:
    statements = all_statements()
    assert len(statements) > 60
    report = lint(cypher_linter, [*statements, "MATCH (n RETURN n"])
    *ours, broken = report
    assert broken["errors"], "the parser did not flag a broken statement: is it really running?"
    failures = [(r["statement"], r["errors"]) for r in ours if r["errors"]]
    assert failures == []


@pytest.mark.parametrize(
    "query",
    [
        "LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row",
        "load/**/csv from 'x' as r return r",
        "CALL apoc.load.json('http://x') YIELD value RETURN value",
        "CALL apoc.cypher.runFirstColumnMany('MATCH (n) DETACH DELETE n', {})",
        "CALL dbms.security.listUsers()",
        "CALL { MATCH (n) RETURN n } IN TRANSACTIONS OF 10 ROWS RETURN 1",
        "CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DELETE n', {})",
        "   ",
        "CALL `apoc`.`load`.json('http://169.254.169.254/') YIELD value RETURN value",
        "CALL `apoc.load.json`('file:///etc/passwd') YIELD value RETURN value",
        "CALL apoc /* hidden */ . load . json('x') YIELD value RETURN value",
        "CALL `db`.`labels`() YIELD label CALL `apoc`.`do`.`when`(true, 'CREATE (n)', '', {}) YIELD value RETURN 1",
        "MATCH (n) RETURN apoc.text.join(['a'], ',')",
        "MATCH (n) RETURN `apoc`.`util`.`sleep`(100000)",
        "RETURN dbms.components()",
        "CALL { MATCH (n) RETURN n } IN 4 CONCURRENT TRANSACTIONS RETURN 1",
        "LOAD // split\n CSV FROM 'x' AS r RETURN r",
        "MATCH (n) RETURN n; MATCH (m) DETACH DELETE m",
        "USE system SHOW USERS",
        "CALL db.createLabel('X')",
        "MATCH (n) RETURN n.name + 'unterminated",
        "MATCH (`n RETURN n",
    ],
)
def test_denied_constructs(query: str) -> None:
    with pytest.raises(ToolFailure) as failure:
        check_read_query(query)
    assert failure.value.code in (ErrorCode.PERMISSION_DENIED, ErrorCode.INVALID_INPUT)


def test_read_queries_pass_the_text_check() -> None:
    check_read_query("CALL db.labels() YIELD label RETURN label")
    check_read_query("CALL `db`.`index`.`fulltext`.queryNodes('brain_text', 'login') YIELD node RETURN node.name")
    check_read_query("MATCH (n) WHERE n.name IN ['a', 'b'] RETURN n.name, date.truncate('day', datetime()) LIMIT 3;")
    check_read_query("MATCH (n) RETURN n { .name, `weird``name`: 1 } // CALL apoc.load.json")
    check_read_query("RETURN 'CALL apoc.load.json(1); LOAD CSV' AS text")
    check_read_query("MATCH (n:Scope {kind: $kind}) RETURN n.name LIMIT 5")
    check_read_query("MATCH (f:File)-[:IMPORTS]->(g:File) RETURN f.path, g.path")


def test_traversal_templates_only_inline_allow_listed_identifiers() -> None:
    statement = neighbors_statement(["CALLS", "x]->(m) DETACH DELETE m //"], "out", 99)
    assert "DETACH" not in statement and "*1..5]" in statement and "[:CALLS*1..5]" in statement


class FakeSummary:
    def __init__(self, query_type: str) -> None:
        self.query_type = query_type


class FakeRecord(dict):
    def data(self) -> dict:
        return dict(self)


class FakeResult(list):
    def __init__(self, rows: list[dict], query_type: str) -> None:
        super().__init__(FakeRecord(r) for r in rows)
        self._type = query_type

    def consume(self) -> FakeSummary:
        return FakeSummary(self._type)


class FakeSession:
    def __init__(self, driver: FakeDriver, mode: str) -> None:
        self.driver, self.mode = driver, mode

    def __enter__(self) -> FakeSession:
        return self

    def __exit__(self, *exc: object) -> None: ...

    def run(self, query: Any, params: dict | None = None) -> FakeResult:
        text = getattr(query, "text", query)
        self.driver.sent.append((self.mode, text))
        query_type = "rw" if any(w in text.upper() for w in ("CREATE", "DELETE", "SET ", "MERGE")) else "r"
        return FakeResult([{"n": i} for i in range(self.driver.rows)], query_type)

    def execute_read(self, work: Any) -> Any:
        return work(self)

    def execute_write(self, work: Any) -> Any:
        return work(self)


class FakeDriver:
    def __init__(self, rows: int = 0) -> None:
        self.rows = rows
        self.sent: list[tuple[str, str]] = []

    def session(self, database: str | None = None, default_access_mode: str = "WRITE") -> FakeSession:
        return FakeSession(self, default_access_mode)

    def close(self) -> None: ...


def test_run_read_query_explains_first_reads_in_read_mode_and_caps_rows() -> None:
    pytest.importorskip("neo4j")
    driver = FakeDriver(rows=7)
    store = Neo4jBrainStore(driver)
    assert all(text.startswith("CREATE") for _, text in driver.sent)  # idempotent schema set-up
    driver.sent.clear()
    rows, truncated = store.run_read_query("MATCH (n) RETURN n", {}, timeout=5, limit=5)
    assert len(rows) == 5 and truncated
    assert driver.sent[0] == ("READ", "EXPLAIN MATCH (n) RETURN n")
    assert all(mode == "READ" for mode, _ in driver.sent)
    with pytest.raises(ToolFailure) as failure:
        store.run_read_query("MATCH (n) SET n.x = 1 RETURN n", {}, timeout=5, limit=5)
    assert failure.value.code is ErrorCode.PERMISSION_DENIED and "type 'rw'" in failure.value.message
    assert driver.sent[-1][1].startswith("EXPLAIN")  # refused before it ran


def test_password_never_in_errors_or_logs(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("neo4j")
    monkeypatch.setenv("NEO4J_URI", "bolt://admin:uri-secret-77@127.0.0.1:1")
    monkeypatch.setenv("NEO4J_USERNAME", "neo4j")
    monkeypatch.setenv("NEO4J_PASSWORD", "hunter2-secret-99")
    with caplog.at_level(logging.DEBUG), pytest.raises(ToolFailure) as failure:
        Neo4jBrainStore.from_env()
    assert failure.value.code is ErrorCode.DEPENDENCY_ERROR
    assert "127.0.0.1:1" in failure.value.message
    for text in (failure.value.message, caplog.text):
        assert "hunter2-secret-99" not in text and "uri-secret-77" not in text
