"""Bulky parts of the real tools' results by reference (`shared.framework.resources`): a long file read, a crawl of real
documentation pages, the OCR of a long document; each read back through `resources/read` on the section's server."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from mcp_sections.servers.registry import load_section
from mcp_sections.shared.confinement.secrets.masking import MASK
from mcp_sections.shared.framework.resources import INLINE_CHARS, PREVIEW_CHARS
from mcp_sections.shared.serving.calls import success_result
from mcp_sections.shared.serving.server import build_server
from mcp_sections.shared.settings.config import Settings
from tests.framework.tasks_section import FAKE_TOKEN
from tests.stdio import data_of

pytestmark = pytest.mark.anyio


async def read_back(client: Client, uri: str) -> Any:
    from mcp_sections.shared.serving.provenance import unwrap

    content = (await client.read_resource(uri)).contents[0]
    if getattr(content, "text", None) is not None:  # served in its provenance envelope
        assert content.text.startswith("<data id=")  # type: ignore[union-attr]
        return content.model_copy(update={"text": unwrap(content.text)})  # type: ignore[union-attr]
    return content


def links_of(result: types.CallToolResult) -> list[types.ResourceLink]:
    return [block for block in result.content if isinstance(block, types.ResourceLink)]


@pytest.fixture(scope="module")
async def files(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Client, Path]]:
    root = tmp_path_factory.mktemp("resources-files").resolve()
    section = load_section("file_ops")
    settings = Settings.load({"data_dir": str(root / ".data"), "roots": [str(root)], "warm_up": False})
    server, _ = build_server(section, section.runtime(settings))
    async with Client(server) as client:
        yield client, root


async def test_a_long_file_read_is_inline_up_to_the_limit_and_whole_by_reference(files: tuple[Client, Path]) -> None:
    client, root = files
    lines = [f"line {n:05d} of a long log\n" for n in range(1, 3001)]
    lines[2500] = f"github_token = {FAKE_TOKEN}\n"  # beyond the inline part: masked in the resource too
    (root / "long.log").write_text("".join(lines), encoding="utf-8")
    result = await client.call_tool("read_file", {"path": "long.log"})
    data = data_of(result)
    assert len(data["content"]) <= INLINE_CHARS and data["content"].endswith("\n") and data["truncated"]
    assert data["end_line"] == data["content"].count("\n") and data["start_line"] == 1
    [link] = links_of(result)
    assert link.uri == data["content_uri"] and link.mime_type == "text/plain" and link.name == "long.log"
    whole = (await read_back(client, link.uri)).text
    assert whole.splitlines()[:2500] == [line.rstrip("\n") for line in lines[:2500]]
    assert FAKE_TOKEN not in whole and MASK in whole.splitlines()[2500]
    short = data_of(await client.call_tool("read_file", {"path": "long.log", "head": 3}))
    assert short["content_uri"] is None and short["content"].count("\n") == 3  # under the limit: inline only


async def test_a_crawl_gives_previews_and_every_page_whole_by_reference(tmp_path: Path) -> None:
    pytest.importorskip("html_to_markdown", reason="web_ops needs the `web` extra")
    from benchmarks.corpus import serving

    section = load_section("web_ops")
    with serving() as base:
        port = base.rstrip("/").rsplit(":", 1)[1]
        table = {"allow": [f"127.0.0.1:{port}"], "embeddings": False, "timeout_seconds": 10}
        settings = Settings.load({"data_dir": str(tmp_path / "data"), "sections": {"web_ops": table}, "warm_up": False})
        server, _ = build_server(section, section.runtime(settings))
        arguments = {
            "url": f"{base}rust/book/ch03-02-data-types.html",
            "depth": 1,
            "max_pages": 4,
            "include_patterns": [r"/rust/book/ch0\d-02-[a-z-]+\.html$"],
            "render": "http",
            "max_chars": 2000,
        }
        async with Client(server) as client:
            result = await client.call_tool("fetch_web_page", arguments)
            data = data_of(result)
            children = data["children"]
            assert data["total_pages_fetched"] == 4 and len(children) == 3
            assert all(len(child["text"]) <= PREVIEW_CHARS for child in children)
            by_uri = {link.uri: link for link in links_of(result)}
            referenced = [data["text_uri"], *(child["text_uri"] for child in children if child["text_uri"])]
            assert data["text_uri"] is not None and set(referenced) == set(by_uri)  # the structure keeps the links
            for child in children:
                if child["text_uri"] is None:
                    assert not child["text_truncated"]
                    continue
                page = await read_back(client, child["text_uri"])
                assert page.mime_type == "text/markdown" and page.text.startswith(child["text"].rstrip())
                assert len(page.text) > len(child["text"])
            root_page = await read_back(client, data["text_uri"])
            assert root_page.text.startswith(data["text"][:200]) and len(root_page.text) == data["text_chars"]


def test_a_long_ocr_keeps_its_start_inline_and_the_rest_by_reference() -> None:
    from mcp_sections.servers.media_ops.models import MAX_INLINE_LINES, ReadImageResult
    from mcp_sections.servers.media_ops.service import Rendered

    box = [[0.0, 0.0], [9.0, 0.0], [9.0, 1.0], [0.0, 1.0]]
    lines = [{"text": f"row {n} of a scanned ledger", "confidence": 0.98, "box": box} for n in range(450)]
    values = {"path": "scan.png", "format": "PNG", "width": 800, "height": 9000}
    values |= {"text": "\n".join(line["text"] for line in lines), "lines": lines}
    image = Rendered(base64.b64encode(b"\x89PNG fake").decode(), "image/png", 800, 9000, "scan.png")
    result = ReadImageResult.build(values, [image]).long_by_reference()
    assert result.line_count == 450 and len(result.lines) == MAX_INLINE_LINES
    assert result.text_uri and result.lines_uri and result.images[0].uri and result.extra_content() == []
    called = success_result(result)
    assert [block.type for block in called.content] == ["text", *["resource_link"] * 3]
    from mcp_sections.shared.framework.resources import STORE

    stored = STORE.get(result.lines_uri)
    assert stored is not None and len(json.loads(stored.data)) == 450
    assert STORE.get(result.images[0].uri).data == b"\x89PNG fake"  # type: ignore[union-attr]
    short = ReadImageResult.build({**values, "text": "one line", "lines": lines[:1]}, [image]).long_by_reference()
    assert short.text_uri is None and [block.type for block in short.extra_content()] == ["image"]
