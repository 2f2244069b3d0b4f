"""The brain's graph of this very repository, through the rag_ops tools in process (the in-memory client).

The test reads the graph and text search, not vectors: background embedding is off, so no model loads and no
thread spends the rest of the run embedding a thousand nodes nobody searches by meaning here (over stdio it did:
about 12 s of CPU for nothing). Semantic search over stdio stays in `test_stdio.py`.
"""

from __future__ import annotations

import pytest

from tests.in_memory import section_in_memory
from tests.stdio import REPO, call, data_of

pytestmark = pytest.mark.anyio


async def test_ingest_this_repository() -> None:
    # the data directory and an empty config come from tests/conftest.py's isolated_environment
    env = {"MCP_SECTIONS_RAG_OPS_BACKGROUND_EMBEDDINGS": "false"}
    async with section_in_memory("rag_ops", "--root", str(REPO), env=env) as client:
        report = data_of(
            await client.call_tool("ingest_directory", {"path": str(REPO), "project_name": "mcp-sections"})
        )
        assert report["project_id"] == "mcp-sections" and report["files_scanned"] > 60
        schema = await call(client, "get_schema", project="mcp-sections")
        assert 0 <= report["files_scanned"] - schema["labels"]["File"] <= 10  # binaries (the corpus archive), keys
        assert schema["labels"]["Scope"] > 500 and schema["relationships"]["CALLS"] > 200
        assert schema["relationships"]["IMPORTS"] > 50
        hits = await call(client, "brain_search", query="PathGuard resolve", projects=["mcp-sections"], semantic=False)
        # among the tests of the guard that also name it (the corpus is this repository, so it drifts)
        assert any(r["relative_path"] == "shared/confinement/guards/paths.py" for r in hits["results"][:10])
        [section] = (await call(client, "query_entities", label="Scope", name="Section", project="mcp-sections"))[
            "entities"
        ]
        assert section["relative_path"] == "shared/framework/sections.py" and section["kind"] == "class"
        sections_file = (
            await call(
                client, "query_entities", label="File", path="shared/framework/sections.py", project="mcp-sections"
            )
        )["entities"][0]
        imports = await call(
            client, "explore_relationships", node_id=sections_file["id"], types=["IMPORTS"], direction="out"
        )
        assert {"shared/settings/config.py", "shared/framework/tools.py"} <= {
            n["relative_path"] for n in imports["nodes"]
        }
        files = await call(client, "query_entities", label="File", project="mcp-sections", limit=200)
        assert not any(".venv" in e["path"] or "__pycache__" in e["path"] for e in files["entities"])
        again = data_of(await client.call_tool("ingest_directory", {"path": str(REPO / "shared")}))
        assert again["context"] == "subdir-of-project" and again["project_id"] == "mcp-sections"
