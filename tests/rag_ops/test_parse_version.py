"""A brain written by an older version of the parsers is parsed again: a file's record keeps the parse version
(`shared/brain/parsing/parse.PARSE_VERSION`), and a change in what parsing writes reaches every file at the next
ingest, not only the files that changed on disk (unchanged files were skipped by size and time before)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_sections.servers.rag_ops.brain import Brain
from mcp_sections.shared.brain.parsing import parse
from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore
from tests.rag_ops.trees import EXPECTED_FILES, make_tree


@pytest.fixture
def brain(tmp_path: Path) -> Iterator[Brain]:
    (tmp_path / "root").mkdir()
    instance = Brain(SQLiteBrainStore(tmp_path / "brain.sqlite3"), [tmp_path / "root"], background_embeddings=False)
    yield instance
    instance.close()


def test_files_parsed_by_another_version_are_stale_then_parsed_again_once(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = brain.roots[0] / "shop"
    make_tree(root)
    first = brain.ingest_directory(str(root), "shop")
    assert len(first.files_added) == len(EXPECTED_FILES)
    records = brain.store.file_records("shop")
    assert all(record.hash.startswith(f"{parse.PARSE_VERSION}:") for record in records.values()), records
    assert brain.load_project("shop")["stale_files"] == 0

    monkeypatch.setattr(parse, "PARSE_VERSION", parse.PARSE_VERSION + 1)
    assert brain.load_project("shop")["stale_files"] == len(EXPECTED_FILES)
    again = brain.ingest_directory(str(root), "shop")
    assert sorted(again.files_changed) == sorted(EXPECTED_FILES) and again.files_unchanged == 0
    assert brain.load_project("shop")["stale_files"] == 0
    third = brain.ingest_directory(str(root), "shop")
    assert third.files_unchanged == len(EXPECTED_FILES) and third.nodes_written == 0
