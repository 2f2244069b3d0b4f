"""The Bolt server the Neo4j backend's tests run against (one per test process)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.rag_ops.bolt_server import BoltServer, bolt_process


@pytest.fixture(scope="session")
def bolt_server() -> Iterator[BoltServer | None]:
    """ArcadeDB's Bolt listener started here; None when NEO4J_URI names a real Neo4j 5 to use instead."""
    if os.environ.get("NEO4J_URI"):
        yield None
        return
    pytest.importorskip("neo4j", reason="the neo4j driver comes with the 'rag' extra")
    pytest.importorskip("arcadedb_embedded", reason="arcadedb-embedded (test-tools extra) runs the Bolt server here")
    with bolt_process() as server:
        yield server
