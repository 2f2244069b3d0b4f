"""`--in-process`: light built-in sections run inside the gateway give what their subprocess gives (both gateways in
memory: one starts its sections as subprocesses, the other runs them in process)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import CallToolResult

from mcp_sections.servers.gateway.core import Gateway
from mcp_sections.servers.pool.settings import GatewaySettings, load_gateway_settings
from mcp_sections.shared.settings.config import ConfigError, Settings, load_settings
from tests.gateway.helpers import builtin_available, demo_section_table, write_config
from tests.in_memory import gateway_in_memory
from tests.processes import running_with
from tests.stdio import data_of

pytestmark = pytest.mark.skipif(
    not (builtin_available("todo") and builtin_available("calculator")), reason="todo/calculator not importable"
)

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("calculator", "calculator_binary", {"operation": "add", "a": 1, "b": 2}),
    ("calculator", "calculator_binary", {"operation": "divide", "a": 1, "b": 0}),  # the section's own error
    ("calculator", "calculator_unary", {"operation": "sqrt", "x": -1}),
    ("calculator", "calculator_evaluate", {"expression": "2**10 + sqrt(16)"}),
    ("calculator", "calculator_evaluate", {"expression": "__import__('os')"}),
    ("calculator", "calculator_binary", {"operation": "add", "a": "x"}),  # the gateway's schema check
    ("calculator", "calculator_binary", {"operation": "add", "a": 1, "b": 2, "c": 3}),
    ("calculator", "calculator_fly", {}),  # unknown tool
    ("todo", "todo_get", {"task_id": "task_missing", "workflow_id": "wf_same"}),
    ("todo", "todo_list", {"workflow_id": "wf_same"}),
    ("todo", "todo_create", {"workflow_id": "wf_same", "name": "n" * 300}),
    ("todo", "todo_update_status", {"task_id": "task_missing", "status": "done?"}),
]
VOLATILE = re.compile(r"task_[0-9a-f]{8,}|\d{4}-\d\d-\d\dT[\d:.]+Z?|\b[0-9a-f]{12}\b")  # ids, times, envelope marks


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("in_process")


@pytest.fixture(scope="module")
async def subprocess_gateway(workdir: Path) -> AsyncIterator[Client]:
    async with gateway_in_memory("--data-dir", str(workdir / "sub")) as client:
        yield client


@pytest.fixture(scope="module")
async def in_process_gateway(workdir: Path) -> AsyncIterator[Client]:
    async with gateway_in_memory("--data-dir", str(workdir / "local"), "--in-process", "calculator,todo") as client:
        yield client


def comparable(result: CallToolResult) -> dict[str, Any]:
    """What a client sees of a result, with generated ids and timestamps masked."""
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return _mask(dumped)


def _mask(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _mask(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_mask(item) for item in value]
    if isinstance(value, str):
        return VOLATILE.sub("<volatile>", value)
    return value


async def forward(client: Client, section: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    return await client.call_tool("call_section_tool", {"section": section, "tool": tool, "arguments": arguments})


@pytest.mark.anyio
async def test_results_and_errors_are_the_subprocess_ones(
    subprocess_gateway: Client, in_process_gateway: Client, workdir: Path
) -> None:
    for section, tool, arguments in CALLS:
        expected = await forward(subprocess_gateway, section, tool, arguments)
        got = await forward(in_process_gateway, section, tool, arguments)
        assert comparable(got) == comparable(expected), (section, tool, arguments)
    # a task created, read and completed the same way in both modes
    for client in (subprocess_gateway, in_process_gateway):
        created = data_of(await forward(client, "todo", "todo_create", {"workflow_id": "wf_cmp", "name": "Same"}))
        client.task_id = created["task_id"]  # type: ignore[attr-defined]
    pairs = [
        ("todo_get", lambda task_id: {"task_id": task_id, "workflow_id": "wf_cmp"}),
        ("todo_update_status", lambda task_id: {"task_id": task_id, "status": "in_progress", "workflow_id": "wf_cmp"}),
        ("todo_list", lambda task_id: {"workflow_id": "wf_cmp"}),
        ("todo_delete", lambda task_id: {"task_id": task_id, "workflow_id": "wf_cmp"}),
    ]
    for tool, arguments_for in pairs:
        results = [
            await forward(client, "todo", tool, arguments_for(client.task_id))  # type: ignore[attr-defined]
            for client in (subprocess_gateway, in_process_gateway)
        ]
        assert comparable(results[1]) == comparable(results[0]), tool
    # in process means no section subprocess, and the section shows as running once used
    assert running_with(f"serve calculator --data-dir {workdir / 'local'}") == []
    assert running_with(f"serve todo --data-dir {workdir / 'local'}") == []
    assert running_with(f"serve calculator --data-dir {workdir / 'sub'}")
    sections = {s["id"]: s for s in data_of(await in_process_gateway.call_tool("list_tool_sections", {}))["sections"]}
    assert sections["calculator"]["state"] == "running" and sections["todo"]["state"] == "running"
    assert sections["file_ops"]["state"] == "not_started"


@pytest.mark.anyio
async def test_same_tools_list_in_both_modes(subprocess_gateway: Client, in_process_gateway: Client) -> None:
    listed = [
        [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in (await client.list_tools()).tools]
        for client in (subprocess_gateway, in_process_gateway)
    ]
    assert listed[0] == listed[1]
    described = [
        data_of(await client.call_tool("describe_section", {"section": "todo"}))["tools"]
        for client in (subprocess_gateway, in_process_gateway)
    ]
    assert described[0] == described[1]


# -- which sections may run in process ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "reason"),
    [
        ("memory", "embedding model"),
        ("rag_ops", "embedding model"),
        ("orchestration", "lifespan"),
        ("demo", "only built-in sections"),
        ("nope", "unknown section"),
    ],
)
def test_heavy_agent_and_third_party_sections_are_refused(section: str, reason: str, tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.toml", demo_section_table())
    settings = load_settings(config)
    with pytest.raises(ConfigError, match=reason):
        Gateway(settings, load_gateway_settings(settings, in_process=[section]))


def test_a_section_launched_through_its_own_table_is_refused(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.toml", '[gateway.sections.todo]\ncommand = "docker"\n')
    settings = load_settings(config)
    with pytest.raises(ConfigError, match=r"\[gateway.sections.todo\]"):
        Gateway(settings, load_gateway_settings(settings, in_process=["todo"]))


def test_in_process_from_environment_and_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert GatewaySettings.load({}).in_process == []
    monkeypatch.setenv("MCP_SECTIONS_GATEWAY_IN_PROCESS", "calculator, todo")
    assert GatewaySettings.load({}).in_process == ["calculator", "todo"]
    assert GatewaySettings.load({"in_process": ["todo"]}, in_process=["calculator"]).in_process == ["calculator"]
    gateway = Gateway(Settings.load(), GatewaySettings.load({}))
    assert type(gateway.pool.launcher("calculator")).__name__ == "InProcessLauncher"


def test_gateway_start_imports_no_section() -> None:
    gateway = Gateway(Settings.load(), GatewaySettings.load({}))
    assert not any(entry.loaded for entry in gateway.catalog.values() if entry.builtin)
