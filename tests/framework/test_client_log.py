"""The logging capability (`shared/serving/client_log.py`): `logging/setLevel` per client, log lines from long work
with its progress and from sub-agents, through a section and through the gateway — and never an argument value."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_sections.shared.serving.server import build_server
from mcp_sections.shared.settings.config import Settings
from tests.framework.tasks_section import SECTION
from tests.gateway.helpers import demo_section_table, write_config
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.in_memory import gateway_in_memory

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]
LABEL = "private-label-7f3a"  # an argument value: it must appear in no log line


class Lines:
    """The log messages a client received."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def __call__(self, params: Any) -> None:
        self.messages.append(params)

    def of(self, event: str) -> list[dict[str, Any]]:
        return [message.data for message in self.messages if message.data.get("event") == event]

    def levels(self) -> set[str]:
        return {message.level for message in self.messages}


def section_server(tmp_path: Path) -> Any:
    settings = Settings.load(data_dir=tmp_path)
    server, _ = build_server(SECTION, SECTION.runtime(settings))
    return server


async def test_a_section_logs_its_long_work_at_the_level_each_client_set(tmp_path: Path) -> None:
    server = section_server(tmp_path)
    lines, quiet = Lines(), Lines()
    async with (
        Client(server, logging_callback=lines, mode="legacy") as client,
        Client(server, logging_callback=quiet, mode="legacy") as other,
    ):
        assert client.server_capabilities.logging is not None
        await client.set_logging_level("debug")
        await other.set_logging_level("warning")
        for connected in (client, other):
            await connected.call_tool("slow_compute", {"seconds": 1.2, "label": LABEL})
            await connected.call_tool("greet", {"name": LABEL})
    progress = lines.of("progress")
    assert progress and progress[-1]["progress"] == progress[-1]["total"] == 12, "the last progress is always said"
    assert len(progress) <= 3, "at most one progress line a second (and the last)"
    assert {line["tool"] for line in lines.of("start")} == {"slow_compute", "greet"}
    ended = {line["tool"]: line for line in lines.of("end")}
    assert ended["slow_compute"]["outcome"] == "OK" and ended["slow_compute"]["server"] == "tasks_demo"
    assert {m.level for m in lines.messages if m.data["tool"] == "greet"} == {"debug"}, "a quick call: debug only"
    assert {m.level for m in lines.messages if m.data["event"] == "progress"} == {"info"}
    assert all(m.logger == "mcp-sections.tasks_demo" for m in lines.messages)
    assert quiet.messages == [], "the other client asked for warnings only"
    assert LABEL not in json.dumps([m.data for m in lines.messages]), "no argument value in a log line"


async def test_the_default_level_is_info_and_a_failed_call_is_a_notice(tmp_path: Path) -> None:
    lines = Lines()
    async with Client(section_server(tmp_path), logging_callback=lines, mode="legacy") as client:
        await client.call_tool("greet", {"name": "x"})
        await client.call_tool("slow_compute", {"seconds": 0.3})
        await client.call_tool("failing_job", {"seconds": 0})
    assert lines.levels() == {"info", "notice"} and lines.of("progress")
    assert not any(line["tool"] == "greet" for line in lines.of("end")), "debug lines stay below the default level"
    failed = next(line for line in lines.of("end") if line["tool"] == "failing_job")
    assert next(m.level for m in lines.messages if m.data is failed) == "notice"
    assert failed["outcome"] == "EXECUTION_FAILED" and "on purpose" not in json.dumps(failed), "the code, not the text"


async def test_on_2026_07_28_a_request_opts_in_with_its_log_level(tmp_path: Path) -> None:
    lines, silent = Lines(), Lines()
    server = section_server(tmp_path)
    async with Client(server, logging_callback=lines, log_level="info") as client:
        await client.call_tool("slow_compute", {"seconds": 0.2})
    async with Client(server, logging_callback=silent) as client:
        await client.call_tool("slow_compute", {"seconds": 0.2})
    assert lines.of("progress") and lines.of("end") and silent.messages == []


# -- through the gateway: forwarded progress, and sub-agents ---------------------------------------------------


def counting(request: Request) -> Reply:
    if request.turn == 0:
        return Reply(tool_calls=[("demo_count", {"steps": 2}), ("demo_lookup", {"key": LABEL})])
    return Reply(text="Counted [demo_count].")


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel({"count": counting}) as server:
        yield server


async def test_the_gateway_logs_forwarded_progress_and_each_call_of_a_sub_agent(
    tmp_path: Path, model: ScriptedModel
) -> None:
    config = write_config(tmp_path / "config.toml", demo_section_table(), model_table(model.base_url))
    args = ["--config", str(config), "--data-dir", str(tmp_path / "data")]
    lines = Lines()
    async with gateway_in_memory(
        *args, env={"SCRIPTED_MODEL_KEY": "k"}, cwd=tmp_path, logging_callback=lines
    ) as client:
        await client.set_logging_level("info")
        forwarded = {"section": "demo", "tool": "demo_count", "arguments": {"steps": 3}}
        await client.call_tool("call_section_tool", forwarded)
        await client.call_tool("plan_actions", {"goal": f"[script:count] {LABEL}", "sections": ["demo"]})
    steps = [line for line in lines.of("progress") if line["tool"] == "call_section_tool"]
    assert steps and steps[-1]["progress"] == steps[-1]["total"] == 3 and steps[-1]["server"] == "gateway"
    agents = [line for line in lines.of("end") if line.get("agent")]
    assert {line["tool"] for line in agents} == {"demo_count", "demo_lookup"}
    assert all(line["depth"] == 1 and line["agent"].startswith("agent-") for line in agents)
    assert any(line["tool"] == "plan_actions" and line["outcome"] == "OK" for line in lines.of("end"))
    assert LABEL not in json.dumps([m.data for m in lines.messages]), "neither the goal nor a sub-agent's arguments"
