"""The status page's Gateway facts tell the deepest sub-agent reached from the depth limit: "none yet" before any
sub-agent ran (the limit was shown as if it were a depth reached), then the depth the tree reached, the limit apart.
A real gateway over HTTP, its sub-agents asked of a scripted model on 127.0.0.1."""

from __future__ import annotations

import os
import re
from pathlib import Path

import anyio
import httpx2 as httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.helpers import REPO, write_config
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.processes import serving_over_http
from tests.stdio import data_of

TOKEN = "status-depth-token-0123456789abcdef"


def two_deep(request: Request) -> Reply:
    """The sub-agent at depth 1 delegates once more; the one at depth 2 answers."""
    if request.turn == 0 and request.depth == 1:
        return Reply(tool_calls=[("plan_actions", {"goal": "[script:deep] go on", "sections": ["calculator"]})])
    return Reply(text=f"done at depth {request.depth}.")


def facts(port: int) -> dict[str, str]:
    """The Gateway part of `/status/live`: {label: value}."""
    answer = httpx.get(f"http://127.0.0.1:{port}/status/live", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200, answer.status_code
    return dict(re.findall(r"<div><dt>([^<]*)</dt><dd>([^<]*)</dd></div>", answer.text))


async def plan(port: int) -> None:
    async with (
        httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx.Timeout(30, read=120)) as http,
        Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http), mode="legacy") as client,  # type: ignore[arg-type]
    ):
        planned = await client.call_tool("plan_actions", {"goal": "[script:deep] start", "sections": ["calculator"]})
        assert data_of(planned)["success"], planned


def test_the_deepest_sub_agent_reached_and_the_limit_are_told_apart(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(TOKEN + "\n", encoding="utf-8")
    with ScriptedModel({"deep": two_deep}) as model:
        config = write_config(tmp_path / "config.toml", model_table(model.base_url))
        args = ["gateway", "--config", str(config), "--data-dir", str(tmp_path / "data")]
        args += ["--auth-token-file", str(tmp_path / "token"), "--max-depth", "3"]
        environment = {"SCRIPTED_MODEL_KEY": "k", "MCP_SECTIONS_CONFIG": os.devnull}
        with serving_over_http(args, environment, cwd=REPO) as (port, _):
            before = facts(port)
            assert before["Deepest sub-agent reached"] == "none yet", before
            assert before["Sub-agent depth limit"] == "3", before
            assert "Deepest sub-agent" not in before, "no depth reached is shown when none ran"
            anyio.run(plan, port)
            after = facts(port)
    assert after["Deepest sub-agent reached"] == "depth 2", after
    assert after["Sub-agent depth limit"] == "3", after
