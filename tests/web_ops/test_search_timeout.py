"""A search provider reached through the guarded client that does not answer in time is TIMEOUT naming where it is
and the setting bounding it ([sections.web_ops] timeout_seconds), as every remote service's (model APIs, media_ops'
providers), with the providers that can be configured instead."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.servers.registry import load_section
from mcp_sections.shared.serving.server import build_server
from mcp_sections.shared.settings.config import Settings
from tests.http_stand_in import ScriptedHandler, serving
from tests.stdio import fail

pytestmark = pytest.mark.anyio


async def test_a_searxng_too_slow_to_answer_is_a_timeout_naming_timeout_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    answer = threading.Event()

    class Held(ScriptedHandler):
        def do_GET(self) -> None:
            answer.wait(30)
            self.answer_json(200, {"results": []})

    with serving(Held) as port:
        url = f"http://127.0.0.1:{port}"
        web_ops = {"searxng_url": url, "timeout_seconds": 0.5}
        settings = Settings.load({"data_dir": str(tmp_path), "warm_up": False, "sections": {"web_ops": web_ops}})
        section = load_section("web_ops")
        server, _ = build_server(section, section.runtime(settings))
        try:
            async with Client(server) as client:
                message = await fail(client, "search_web", "TIMEOUT", query="tide tables")
        finally:
            answer.set()
    assert message.startswith(
        f"web search failed: the SearXNG instance at {url} did not answer in time (0.5 s); retry, or raise "
        "[sections.web_ops] timeout_seconds. Search providers: "
    ), message
