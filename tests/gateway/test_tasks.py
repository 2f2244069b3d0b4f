"""MCP tasks through the gateway, with real section processes: a task on call_section_tool runs the gate's dispatch
(audited when it starts and when it ends or is cancelled), cancelling it cancels the section's work (a sandboxed
program killed), plan_actions runs as a task, and the bulky parts of a section's result are read through the gateway
(`resources/read` proxied to the section that holds them). Both protocol eras; the gateway in memory, and over stdio
and Streamable HTTP where the transport carries the cancellation."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from mcp_sections.shared.serving.audit import read_lines
from mcp_sections.shared.serving.provenance import unwrap
from tests.gateway.helpers import FORWARD, REPO, builtin_available, forward, tasks_demo_table, write_config
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.in_memory import gateway_in_memory
from tests.processes import process_report, running_with, serving_over_http, unique_seconds
from tests.stdio import HOST_ENVIRONMENT, data_of, server_parameters
from tests.tasks_client import (
    CreatedTask,
    Tasks,
    call_for_task,
    cancel_task,
    create_legacy_task,
    get_task,
    legacy_get,
    legacy_result,
    wait_for,
)
from tests.waiting import eventually

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not builtin_available("shell_ops"), reason="shell_ops not importable"),
]
KEY = {"SCRIPTED_MODEL_KEY": "sk-tasks-test"}


def quick(request: Request) -> Reply:
    return Reply(text="Done [none].", delay=0.5)


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel({"quick": quick}) as server:
        yield server


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel) -> Path:
    workdir = tmp_path_factory.mktemp("gateway-tasks")
    tasks_demo = tasks_demo_table(workdir / "demo-data")
    shell = '[sections.shell_ops]\nallowed_programs = ["sleep"]\n'
    write_config(workdir / "config.toml", tasks_demo, shell, model_table(model.base_url))
    return workdir


def gateway_args(workdir: Path) -> list[str]:
    return ["--config", str(workdir / "config.toml"), "--data-dir", str(workdir / "data"), "--root", str(workdir)]


@pytest.fixture(scope="module")
def http_url(workdir: Path) -> Iterator[str]:
    environment = {"PYTHONPATH": str(REPO), **KEY}
    with serving_over_http(["gateway", *gateway_args(workdir)], environment, cwd=workdir) as (port, _):
        yield f"http://127.0.0.1:{port}/mcp"


@asynccontextmanager
async def gateway(workdir: Path, http_url: str | None, legacy: bool, *, stdio: bool = False) -> AsyncIterator[Client]:
    """A client of the gateway (in memory, the stdio subprocess with `stdio`, or the HTTP one), with the tasks
    extension on 2026-07-28. Its sections are processes either way."""
    extensions = None if legacy else [Tasks()]
    mode = "legacy" if legacy else "auto"
    if http_url is None and not stdio:
        async with gateway_in_memory(
            *gateway_args(workdir), env=KEY, mode=mode, cwd=workdir, extensions=extensions
        ) as client:
            yield client
        return
    if http_url is not None:
        target: Any = http_url
    else:
        environment = {**HOST_ENVIRONMENT, **KEY}
        target = server_parameters(["gateway", *gateway_args(workdir)], env=environment, cwd=workdir)
    async with Client(target, mode=mode, extensions=extensions, read_timeout_seconds=120) as client:
        yield client


def outcomes(directory: Path, server: str, tool: str) -> list[str]:
    return [line["outcome"] for line in read_lines(directory, server) if line.get("tool") == tool]


async def test_a_long_section_tool_runs_as_a_gateway_task_in_both_eras(workdir: Path) -> None:
    async with gateway(workdir, None, legacy=False) as client:
        await client.call_tool("describe_section", {"section": "tasks_demo"})  # the gateway now knows its tools
        handle = await call_for_task(client, FORWARD, forward("tasks_demo", "slow_compute", seconds=1, label="gw"))
        assert isinstance(handle, CreatedTask)
        # the section's progress reaches the gateway's task
        await eventually(lambda: _status_message(client, handle.task_id), interval=0.05)
        done = await wait_for(client.session, handle.task_id)
        assert done.status == "completed" and done.result is not None
        assert data_of(types.CallToolResult.model_validate(done.result)) == {"text": "computed gw in 1 s"}
        quick = await call_for_task(client, FORWARD, forward("tasks_demo", "greet", name="x"))
        assert isinstance(quick, types.CallToolResult)  # a short target: no task
    async with gateway(workdir, None, legacy=True) as client:  # 2025-11-25: the client asks for the task
        created = await create_legacy_task(client, FORWARD, forward("tasks_demo", "slow_compute", seconds=0.5))
        result = await legacy_result(client, created["task"]["taskId"])
        assert data_of(result) == {"text": "computed nothing in 0.5 s"}
        assert (await legacy_get(client, created["task"]["taskId"])).status == "completed"
    audit = workdir / "data" / "audit"
    assert outcomes(audit, "gateway", FORWARD).count("OK") >= 3


async def _status_message(client: Client, task_id: str) -> str | None:
    return (await get_task(client.session, task_id)).status_message


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_cancelling_the_task_cancels_the_section_work(
    workdir: Path, http_url: str, transport: str, request: pytest.FixtureRequest
) -> None:
    marker = f"sleep {unique_seconds(61)}"  # found by its command line, whatever else runs on the machine
    arguments = forward("shell_ops", "run_command", command=marker.split(), timeout_seconds=120)
    audit = workdir / "data" / "audit"
    url = http_url if transport == "http" else None
    async with gateway(workdir, url, legacy=False, stdio=transport == "stdio") as client:
        before = len(outcomes(audit, "gateway", FORWARD))
        handle = await call_for_task(client, FORWARD, arguments)
        assert isinstance(handle, CreatedTask)  # run_command with a timeout over a minute is long work
        await eventually(lambda: running_with(marker), timeout=60, interval=0.05)
        await cancel_task(client.session, handle.task_id)
        assert (await get_task(client.session, handle.task_id)).status == "cancelled"
        try:
            await eventually(lambda: not running_with(marker), timeout=15, interval=0.05)  # the program was killed
        except TimeoutError:  # CANCELLED in shell_ops' audit: its handler was cancelled, and its kill missed some
            ended = outcomes(audit, "gateway", FORWARD)[before:], outcomes(audit, "shell_ops", "run_command")[-1:]
            raise AssertionError(
                f"still running after the cancel: {process_report(marker)}; audit outcomes (gateway, shell_ops): "
                f"{ended}"
            ) from None
        await eventually(lambda: outcomes(audit, "gateway", FORWARD)[before:] == ["STARTED", "CANCELLED"])
        await eventually(lambda: outcomes(audit, "shell_ops", "run_command")[-1:] == ["CANCELLED"])


async def test_plan_actions_runs_as_a_task(workdir: Path, http_url: str) -> None:
    async with gateway(workdir, http_url, legacy=False) as client:
        handle = await call_for_task(client, "plan_actions", {"goal": "[script:quick] go", "sections": ["todo"]})
        assert isinstance(handle, CreatedTask)
        done = await wait_for(client.session, handle.task_id)
        assert done.status == "completed" and done.result is not None
        assert data_of(types.CallToolResult.model_validate(done.result))["success"] is True


@pytest.mark.parametrize("legacy", [True, False])
async def test_bulky_parts_of_a_section_result_are_read_through_the_gateway(workdir: Path, legacy: bool) -> None:
    async with gateway(workdir, None, legacy=legacy) as client:
        result = await client.call_tool(FORWARD, forward("tasks_demo", "bulky_report", pages=2, chars=30_000))
        links = [block for block in result.content if isinstance(block, types.ResourceLink)]
        assert len(links) == 2 and all(link.uri.startswith("mcp-sections://tasks_demo/") for link in links)
        page = (await client.read_resource(links[1].uri)).contents[0]
        text = unwrap(page.text)  # type: ignore[union-attr]
        assert text.startswith("# page 1\n") and len(text) == 30_000
