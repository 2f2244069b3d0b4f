"""A project is found by the name its manifest declares; the manifests are read once per project, not at every search
by name, and again when one changed on disk or the project is ingested again. The real server in memory; the reads are
counted by wrapping the real `shared.text.manifests.declared`, which still does the work."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_sections.shared.text import manifests
from tests.in_memory import section_in_memory
from tests.stdio import call, fail

pytestmark = pytest.mark.anyio
ENV = {"MCP_SECTIONS_RAG_OPS_EMBEDDINGS": "0"}


def package(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True)
    (directory / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n', encoding="utf-8")
    (directory / "splitter.py").write_text('def split(text):\n    """Split a statement."""\n    return [text]\n')
    return directory


def rename_in_place(directory: Path, name: str) -> None:
    """Another name of the same length, written in place with the same mtime: no stat tells the change."""
    manifest = directory / "pyproject.toml"
    before = manifest.stat()
    with manifest.open("r+", encoding="utf-8") as out:
        out.write(f'[project]\nname = "{name}"\n')
    os.utime(manifest, ns=(before.st_atime_ns, before.st_mtime_ns))


async def test_manifest_names_are_read_once_per_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[Path] = []
    real = manifests.declared

    def counted(directory: Path, allowed: manifests.Allowed = lambda path: True) -> manifests.Declared:
        reads.append(directory)
        return real(directory, allowed)

    monkeypatch.setattr(manifests, "declared", counted)
    roots = tmp_path / "roots"
    first, second = package(roots / "a", "alpha"), package(roots / "b", "bravo")
    async with section_in_memory("rag_ops", "--root", str(roots), env=ENV) as client:
        await call(client, "setup_project", path=str(first), name="proj-a")
        await call(client, "setup_project", path=str(second), name="proj-b")
        reads.clear()
        for _ in range(3):
            for name, project in (("alpha", "proj-a"), ("bravo", "proj-b")):
                found = await call(client, "brain_search", query="split", projects=[name], semantic=False)
                assert found["searched_projects"] == [project], found
        assert sorted(reads) == [first, second], reads  # read once each, then known

        reads.clear()
        (second / "pyproject.toml").write_text('[project]\nname = "charlie"\n', encoding="utf-8")
        os.utime(second / "pyproject.toml", ns=(0, 1_000_000_000))  # changed on disk, as its stat shows
        found = await call(client, "brain_search", query="split", projects=["charlie"], semantic=False)
        assert found["searched_projects"] == ["proj-b"] and reads == [second], reads
        await fail(client, "brain_search", "NOT_FOUND", query="split", projects=["bravo"], semantic=False)

        rename_in_place(first, "omega")  # the same stat: still known as alpha until ingested again
        assert (await call(client, "brain_search", query="x", projects=["alpha"], semantic=False))["searched_projects"]
        await call(client, "ingest_directory", path=str(first))
        found = await call(client, "brain_search", query="split", projects=["omega"], semantic=False)
        assert found["searched_projects"] == ["proj-a"], found
