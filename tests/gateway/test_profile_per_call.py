"""A read-only rule decides by each call's annotations (`servers/pool/filters.py`), as approval does: under the
built-in `readonly` profile web_ops' fetch_web_page stays listed — it writes only with `ingest=true` — its description
saying that `ingest=true` is refused there, a plain fetch runs, and a fetch that ingests is refused with
PERMISSION_DENIED naming the profile and the argument to drop, before anything runs or anyone is asked. The same for
a sub-agent's tools and calls, and for an OAuth user whose scope gives the `readonly` profile. The real gateway (in
memory, and over HTTP for the scopes), web_ops as its subprocess, a local site on 127.0.0.1, a scripted model."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_sections.shared.serving.audit import read_records
from tests.gateway.helpers import FORWARD, REPO, forward, write_config
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.in_memory import gateway_in_memory
from tests.orchestration.helpers import User
from tests.processes import free_port, listening
from tests.stdio import NO_WARM_UP, cli_command, data_of, error_of, text_of
from tests.web_ops.site import Site, running_site

pytestmark = pytest.mark.anyio
pytest.importorskip(
    "html_to_markdown", reason="web_ops reads pages with the `web` extra: pip install 'mcp-sections[web]'"
)
NOTE = "Under the gateway's profile 'readonly' only calls that only read may run: a call with ingest=true is refused"
REFUSED = "only calls that only read are available, and this call of fetch_web_page may write because of ingest=true"


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with running_site() as running:
        yield running


def web_table(site: Site) -> str:
    """web_ops reaches the local site over plain HTTP, and embeds nothing."""
    return (
        "[sections.web_ops]\n"
        f'allow = ["127.0.0.1:{site.port}"]\n'
        "browser = false\ntimeout_seconds = 10\nembeddings = false\n"
    )


def fetch(site: Site, path: str, **options: Any) -> dict[str, Any]:
    return {"url": site.url(path), "render": "http", **options}


async def test_a_plain_fetch_runs_under_readonly_and_one_that_ingests_is_refused_unasked(
    tmp_path: Path, site: Site
) -> None:
    config = write_config(tmp_path / "config.toml", '[gateway]\nexpose = ["web_ops"]\n', web_table(site))
    args = ["--config", str(config), "--data-dir", str(tmp_path / "data"), "--profile", "readonly"]
    user = User()  # would approve anything: it must never be asked
    user.will("accept", {"approve": True})
    env = {"MCP_SECTIONS_APPROVAL": "destructive", **NO_WARM_UP}
    async with gateway_in_memory(*args, env=env, cwd=tmp_path, elicitation_callback=user) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "ingest_web_page" not in listed and "search_web" in listed
        assert NOTE in (listed["fetch_web_page"].description or "")

        sections = {s["id"]: s for s in data_of(await client.call_tool("list_tool_sections", {}))["sections"]}
        assert set(sections["web_ops"]["tools"]) == {"search_web", "fetch_web_page"}
        described = data_of(await client.call_tool("describe_section", {"section": "web_ops"}))
        definitions = {tool["name"]: tool for tool in described["tools"]}
        assert NOTE in definitions["fetch_web_page"]["description"] and "ingest_web_page" not in definitions

        hits = len(site.hits)
        for refused in (
            await client.call_tool(FORWARD, forward("web_ops", "fetch_web_page", **fetch(site, "/", ingest=True))),
            await client.call_tool("fetch_web_page", fetch(site, "/", ingest=True)),  # the exposed tool
        ):
            code, message = error_of(refused)
            assert code == "PERMISSION_DENIED", message
            assert "profile 'readonly'" in message and REFUSED in message and "without ingest" in message, message
        code, message = error_of(
            await client.call_tool(FORWARD, forward("web_ops", "ingest_web_page", url=site.url("/")))
        )
        assert code == "PERMISSION_DENIED" and "only tools annotated read-only" in message, message
        assert len(site.hits) == hits, "a refused call fetches nothing"
        assert user.questions == [], [question.message for question in user.questions]

        read = await client.call_tool(FORWARD, forward("web_ops", "fetch_web_page", **fetch(site, "/about.html")))
        assert not read.is_error, read.content
        assert "About us" in text_of(read)
        exposed = await client.call_tool("fetch_web_page", fetch(site, "/", ingest=False))
        assert not exposed.is_error and "The lighthouse" in text_of(exposed)
    audit = tmp_path / "data" / "audit"
    assert [r["tool"] for r in read_records(audit, "web_ops")] == ["fetch_web_page"] * 2, "refusals never reach it"
    assert [r["outcome"] for r in read_records(audit, "gateway") if r["tool"] != "list_tool_sections"][-5:] == [
        "PERMISSION_DENIED",
        "PERMISSION_DENIED",
        "PERMISSION_DENIED",
        "OK",
        "OK",
    ]
    assert list(read_records(audit, "gateway.approvals")) == []


class RecordingModel(ScriptedModel):
    """The scripted model, keeping the tool definitions each request offered (`definitions`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.definitions: list[dict[str, str]] = []

    def answer(self, body: dict[str, Any], authorization: str | None) -> dict[str, Any]:
        offered = body.get("tools") or []
        self.definitions.append({t["function"]["name"]: t["function"].get("description", "") for t in offered})
        return super().answer(body, authorization)


def fetcher(site: Site) -> Any:
    def script(request: Request) -> Reply:
        if request.turn == 0:
            return Reply(tool_calls=[("fetch_web_page", fetch(site, "/static.html", ingest=True))])
        if request.turn == 1:
            return Reply(tool_calls=[("fetch_web_page", fetch(site, "/static.html"))])
        return Reply(text="Read the page [fetch_web_page].")

    return script


async def test_a_sub_agent_under_readonly_gets_fetch_web_page_and_its_ingest_is_refused(
    tmp_path: Path, site: Site
) -> None:
    with RecordingModel({"fetcher": fetcher(site)}) as model:
        config = write_config(tmp_path / "config.toml", model_table(model.base_url), web_table(site))
        args = ["--config", str(config), "--data-dir", str(tmp_path / "data"), "--profile", "readonly"]
        async with gateway_in_memory(*args, env={"SCRIPTED_MODEL_KEY": "k", **NO_WARM_UP}, cwd=tmp_path) as client:
            planned = await client.call_tool("plan_actions", {"goal": "[script:fetcher] read", "sections": ["web_ops"]})
            assert not planned.is_error, planned.content
    offered = model.definitions[0]
    assert "ingest_web_page" not in offered and NOTE in offered["fetch_web_page"]
    refused, read = model.requests[-1].tool_results
    assert "PERMISSION_DENIED" in refused and REFUSED in refused and "without ingest" in refused, refused
    assert "The lighthouse" in read, read
    assert [r["tool"] for r in read_records(tmp_path / "data" / "audit", "web_ops")] == ["fetch_web_page"]


async def test_a_readonly_scope_allows_a_plain_fetch_and_names_the_argument_to_drop(tmp_path: Path, site: Site) -> None:
    pytest.importorskip("joserfc", reason="OAuth is the `team` extra: pip install 'mcp-sections[team]'")
    from tests.team.authorization_server import authorization_server

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with authorization_server() as auth:
        config = write_config(
            tmp_path / "config.toml",
            f'[gateway.auth]\nissuer = "{auth.issuer}"\nresource = "{url}"\n',
            '[gateway.auth.scopes]\n"mcp:read" = "readonly"\n"mcp:tools" = "all"\n',
            web_table(site),
        )
        command = [*cli_command(), "gateway", "--config", str(config), "--data-dir", str(tmp_path / "data")]
        command += ["--transport", "http", "--port", str(port)]
        path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(REPO)]))
        environment = {**os.environ, **NO_WARM_UP, "PYTHONPATH": path}
        with listening(command, port, env=environment, cwd=tmp_path):
            token = auth.token("carol-id", "mcp:read", url, preferred_username="carol")
            http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
            async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as carol:
                described = data_of(await carol.call_tool("describe_section", {"section": "web_ops"}))
                definitions = {tool["name"]: tool["description"] for tool in described["tools"]}
                assert "Under the scope 'mcp:read' only calls that only read may run" in definitions["fetch_web_page"]
                assert "ingest=true is refused" in definitions["fetch_web_page"]
                ingest = forward("web_ops", "fetch_web_page", **fetch(site, "/", ingest=True))
                code, message = error_of(await carol.call_tool(FORWARD, ingest))
                assert code == "PERMISSION_DENIED", message
                assert "your access token allows fetch_web_page only for calls that only read" in message, message
                assert "because of ingest=true: call it again without ingest" in message, message
                assert "'mcp:tools'" in message, message
                read = await carol.call_tool(FORWARD, forward("web_ops", "fetch_web_page", **fetch(site, "/")))
                assert not read.is_error and "The lighthouse" in text_of(read), read.content
    assert [r["tool"] for r in read_records(tmp_path / "data" / "audit", "web_ops")] == ["fetch_web_page"]
