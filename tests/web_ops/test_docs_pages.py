"""Documentation pages read as a developer needs them: links with their fragments resolved against the final
URL (and `<base>`), long pages in windows cut between blocks that continue with start_index, the corpus of
real doc pages kept (code lines, rows, no navigation), and the brain's chunks of an ingested page holding whole
code blocks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp import Client

from benchmarks import corpus
from benchmarks.corpus.truth import score, truth
from mcp_sections.servers.registry import load_section
from mcp_sections.servers.web_ops.extraction import extract_html
from mcp_sections.shared.brain.model import EntityFilter
from mcp_sections.shared.brain.parsing.files import CHUNK_CHARS, MAX_CODE_BLOCK_CHARS
from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore
from mcp_sections.shared.serving.server import build_server
from mcp_sections.shared.text.markdown_blocks import blocks, pieces
from tests.stdio import call, fail
from tests.web_ops.conftest import web_settings
from tests.web_ops.site import Site

pytestmark = pytest.mark.anyio
FENCE = re.compile(r"^[ >]*(```|~~~)", re.MULTILINE)


async def test_relative_links_and_fragments_resolve_against_the_final_url(web: Client, site: Site) -> None:
    page = await call(web, "fetch_web_page", url=site.url("/old-guide"), extract_images=True)
    text = page["text"]
    assert page["final_url"] == site.url("/guide/intro.html")  # after the redirect
    assert f"[usage]({site.url('/guide/intro.html#usage')})" in text
    assert f"[the function]({site.url('/guide/api.html#fn')})" in text
    assert f"[elsewhere]({site.url('/other/')})" in text
    assert f"![Flow diagram]({site.url('/guide/img/flow.png')})" in text
    assert "¶" not in text and "# The guide\n" in text and "## Usage\n" in text
    assert "Home of the project docs" not in text and "Copyright of the guide footer" not in text
    assert "```python\ndef fn(x):\n    return x\n```" in text  # code in a definition list, with its indentation
    assert "| `x` | the value |" in text
    based = await call(web, "fetch_web_page", url=site.url("/guide/based.html"))
    assert f"[API]({site.url('/reference/v2/api.html#x')})" in based["text"]
    assert f"[top]({site.url('/reference/v2/#top')})" in based["text"]


async def test_a_long_page_comes_in_windows_cut_between_blocks_and_read_on_with_start_index(
    web: Client, site: Site
) -> None:
    url = site.url("/corpus/python/library/itertools.html")
    whole = await call(web, "fetch_web_page", url=url, max_chars=200_000)
    assert not whole["text_truncated"] and whole["next_start_index"] is None
    full = whole["text"]
    assert whole["text_chars"] == len(full) > 20_000
    layout = blocks(full)
    windows, start = 0, 0
    while start is not None:
        page = await call(web, "fetch_web_page", url=url, max_chars=3000, start_index=start)
        assert page["from_cache"] and page["start_index"] == start and page["text_chars"] == len(full)
        text, following = page["text"], page["next_start_index"]
        assert len(text) <= 3000 and page["text_truncated"] == (following is not None)
        assert len(FENCE.findall(text)) % 2 == 0  # every code block in it is whole, or closed at the cut
        reopened = layout.fence_at(start)
        body = text.removeprefix(f"{reopened.opening}\n") if reopened else text
        if following is None or following in layout.cuts:  # cut between blocks
            assert body == full[start:following]
        else:  # inside the one code block longer than the window, at a line end, closed there
            cut = layout.fence_at(following)
            assert cut is not None and cut.end - cut.start > 3000 and full[following - 1] == "\n"
            assert body == full[start:following].rstrip("\n") + f"\n{cut.closing}\n"
        windows += 1
        start = following
    assert windows > 7
    message = await fail(web, "fetch_web_page", "INVALID_INPUT", url=url, start_index=len(full) + 10)
    assert "past the end" in message
    await fail(web, "fetch_web_page", "INVALID_INPUT", url=url, start_index=10**9)


async def test_a_code_block_longer_than_the_window_is_closed_and_reopened(web: Client, site: Site) -> None:
    url = site.url("/corpus/python/library/itertools.html")
    full = (await call(web, "fetch_web_page", url=url, max_chars=200_000))["text"]
    layout = blocks(full)
    longest = max(layout.fenced, key=lambda f: f.end - f.start)
    assert longest.end - longest.start > 1000
    first = await call(web, "fetch_web_page", url=url, max_chars=600, start_index=longest.start)
    assert first["text"].startswith(longest.opening) and first["text"].endswith("```\n")
    second = await call(web, "fetch_web_page", url=url, max_chars=600, start_index=first["next_start_index"])
    assert second["text"].startswith(longest.opening + "\n")  # the same fence, the same language
    assert first["next_start_index"] > longest.start


def test_the_corpus_keeps_code_rows_and_headings_and_leaks_no_navigation() -> None:
    kept = {"code": [0, 0], "rows": [0, 0], "headings": [0, 0], "links": [0, 0]}
    for page in corpus.pages():
        url = f"http://docs.test/{page.path}"
        result = score(
            extract_html(page.html.decode(), url).text, truth(page.html, url, page.main_xpath, page.navigation_xpaths)
        )
        assert result.navigation[0] == 0, (page.path, result.missing["navigation"])
        assert result.permalinks == 0, page.path
        for name in kept:
            got, of = getattr(result, name)
            kept[name][0] += got
            kept[name][1] += of
    assert kept["code"][0] >= 0.98 * kept["code"][1], kept
    assert kept["rows"][0] >= 0.95 * kept["rows"][1], kept
    assert kept["headings"][0] >= 0.95 * kept["headings"][1], kept
    assert kept["links"][0] >= 0.98 * kept["links"][1], kept


async def test_an_ingested_docs_page_is_chunked_with_whole_code_blocks(site: Site, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    section = load_section("web_ops")
    server, _ = build_server(section, section.runtime(web_settings(site, data_dir)))
    url = site.url("/corpus/python/library/itertools.html")
    async with Client(server) as web:
        fetched = await call(web, "fetch_web_page", url=url, max_chars=200_000)
        ingested = await call(web, "ingest_web_page", url=url, project_name="docs")
    assert ingested["pages_ingested"] == 1
    text = fetched["text"]
    code_blocks = [text[f.start : f.end].strip("\n") for f in blocks(text).fenced]
    assert len(code_blocks) > 20
    store = SQLiteBrainStore(data_dir / "brain.sqlite3")
    try:
        chunks, total = store.query_entities(EntityFilter(label="Chunk", project_ids=["docs"], limit=500))
    finally:
        store.close()
    assert total == len(chunks) > 10
    contents = [chunk.content or "" for chunk in chunks]
    for content in contents:
        assert len(FENCE.findall(content)) % 2 == 0, content[:200]
    for block in code_blocks:
        if len(block) <= MAX_CODE_BLOCK_CHARS:
            assert any(block in content for content in contents), block[:200]
        else:  # longer than a chunk may grow: in parts at line ends, each fenced like the block
            opening = block.split("\n", 1)[0]
            parts = [c for c in contents if c.startswith(opening) and c.split("\n", 2)[1] in block]
            assert len(parts) >= 2 and all(part.endswith("```") for part in parts)


def test_a_lone_article_card_beside_the_content_is_not_taken_for_it() -> None:
    story = "<p>" + "The harbour opened a new pier for the ferries this spring. " * 20 + "</p>"
    html = (
        "<html><body><header><a href='/'>Home</a></header><div class='post'><h1>The pier</h1>"
        f"{story}</div><div class='rail'><article><h3>Related</h3><p>Boats.</p></article></div>"
        "<footer>Footer text of the site</footer></body></html>"
    )
    text = extract_html(html, "https://example.org/news/pier").text
    assert text.startswith("# The pier") and "new pier for the ferries" in text
    assert "Footer text" not in text


def test_a_table_whose_cells_hold_lists_stays_a_table_one_row_per_line() -> None:
    """re's group-reference table: its cells hold paragraphs and lists. Each row stays one line of the table, a
    cell's lines joined by <br>: the brain's chunks never cut a row, and a model reads it as a table."""
    text = extract_html(corpus.page("python/library/re.html").html.decode(), "http://docs.test/re.html").text
    assert "| Context of reference to group “quote” | Ways to reference it |\n| --- | --- |\n" in text
    assert "| in the same pattern itself | • `(?P=quote)` (as shown)<br>• `\\1` |\n" in text
    assert "| when processing match object *m* | • `m.group('quote')`<br>• `m.end('quote')` (etc.) |\n" in text
    repl = "| in a string passed to the *repl* argument of `re.sub()` | • `\\g<quote>`<br>• `\\g<1>`<br>• `\\1` |"
    assert repl in text
    assert "**Ways to reference it:**" not in text  # no longer a list of rows
    assert "| `%c` | `.` |" in text  # a table of plain cells, as before
    for _, _, piece in pieces(text, CHUNK_CHARS, MAX_CODE_BLOCK_CHARS):  # as the brain chunks it
        assert all(line.count("|") != 1 for line in piece.splitlines() if line.startswith("| in "))
