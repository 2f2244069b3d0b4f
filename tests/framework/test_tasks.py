"""MCP tasks and results by reference on a real section, with the official client: stdio and Streamable HTTP, in the
2025-11-25 era (tasks in the core protocol) and the 2026-07-28 era (the tasks extension). The section is
`tests/framework/tasks_section.py` (slow, failing and bulky tools) served by `tests/gateway/serve_module.py`."""

from __future__ import annotations

import base64
import os
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcp_sections.shared.confinement.secrets.masking import MASK
from mcp_sections.shared.framework.resources import Attachment, ResultStore, split_inline
from mcp_sections.shared.serving.audit import read_lines
from mcp_sections.shared.serving.provenance import unwrap
from tests.framework.tasks_section import FAKE_TOKEN
from tests.processes import free_port, listening
from tests.stdio import HOST_ENVIRONMENT, NO_WARM_UP, REPO, error_of, text_of
from tests.tasks_client import (
    TASKS,
    CreatedTask,
    Tasks,
    call_for_task,
    cancel_task,
    create_legacy_task,
    get_task,
    legacy_cancel,
    legacy_get,
    legacy_list,
    legacy_result,
    wait_for,
)
from tests.waiting import eventually

pytestmark = pytest.mark.anyio

SECTION = "tests.framework.tasks_section"
LONG_TOOLS = {"slow_compute", "failing_job", "maybe_long"}


def environment(data_dir: Path, **extra: str) -> dict[str, str]:
    inherited = {key: value for key, value in os.environ.items() if not key.startswith("MCP_SECTIONS_")}
    return {
        **inherited,
        **HOST_ENVIRONMENT,
        "MCP_SECTIONS_DATA_DIR": str(data_dir),
        **NO_WARM_UP,
        **extra,
    }


@contextmanager
def http_section(data_dir: Path, **extra: str) -> Iterator[str]:
    """The section over Streamable HTTP on 127.0.0.1 (a subprocess); its URL."""
    port = free_port()
    command = [sys.executable, "-m", "tests.gateway.serve_module", SECTION, "--http", str(port)]
    with listening(command, port, env=environment(data_dir, **extra), cwd=REPO):
        yield f"http://127.0.0.1:{port}/mcp"


@dataclass
class Connected:
    """A client of the section, which era it speaks, and where its server writes its audit log."""

    client: Client
    legacy: bool
    audit: Path
    tasks: Tasks | None

    @property
    def session(self) -> Any:
        return self.client.session


@asynccontextmanager
async def connect(
    target: str | StdioServerParameters, legacy: bool, audit: Path, name: str = "tests", with_tasks: bool = True
) -> AsyncIterator[Connected]:
    """A client in the 2025-11-25 era (`legacy`) or the 2026-07-28 one, there with the tasks extension unless not
    `with_tasks`."""
    tasks = None if legacy or not with_tasks else Tasks()
    client = Client(
        target,  # type: ignore[arg-type]
        mode="legacy" if legacy else "auto",
        extensions=[tasks] if tasks else None,
        client_info=types.Implementation(name=name, version="1"),
        read_timeout_seconds=60,
    )
    async with client:
        yield Connected(client, legacy, audit, tasks)


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    data_dir = tmp_path_factory.mktemp("tasks-http")
    with http_section(data_dir) as url:
        yield url, data_dir / "audit"


KINDS = ["stdio-2025-11-25", "stdio-2026-07-28", "http-2025-11-25", "http-2026-07-28"]


@pytest.fixture(scope="module", params=KINDS)
async def connected(
    request: pytest.FixtureRequest, http_url: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Connected]:
    kind: str = request.param
    legacy = kind.endswith("2025-11-25")
    if kind.startswith("http"):
        url, audit = http_url
        async with connect(url, legacy, audit, name=kind) as connection:
            yield connection
        return
    data_dir = tmp_path_factory.mktemp("tasks-stdio")
    command, *args = [sys.executable, "-m", "tests.gateway.serve_module", SECTION, "--our-stdio"]
    parameters = StdioServerParameters(command=command, args=args, env=environment(data_dir), cwd=REPO)
    async with connect(parameters, legacy, data_dir / "audit", name=kind) as connection:
        yield connection


# -- one way to drive a task in either era ------------------------------------------------------------------------


async def start(connection: Connected, tool: str, **arguments: Any) -> str:
    """A task-augmented (2025-11-25) or task-declaring (2026-07-28) call of a long tool: its task id, at once."""
    if connection.legacy:
        created = await create_legacy_task(connection.client, tool, arguments)
        task = created["task"]
        assert set(task) >= {"taskId", "status", "createdAt", "lastUpdatedAt", "ttl", "pollInterval"}
        return task["taskId"]
    handle = await call_for_task(connection.client, tool, arguments)
    assert isinstance(handle, CreatedTask), handle
    assert handle.ttl_ms and handle.poll_interval_ms and "ttl" not in (handle.model_extra or {})
    return handle.task_id


async def state(connection: Connected, task_id: str) -> tuple[str, str | None]:
    """(status, status message) from tasks/get."""
    if connection.legacy:
        task = await legacy_get(connection.client, task_id)
        return task.status, task.status_message
    detailed = await get_task(connection.session, task_id)
    return detailed.status, detailed.status_message


async def outcome(connection: Connected, task_id: str) -> tuple[str, types.CallToolResult | None]:
    """(final status, the tool's result): tasks/result on 2025-11-25, tasks/get's inlined result on 2026-07-28."""
    if connection.legacy:
        try:
            result = await legacy_result(connection.client, task_id)
        except MCPError:
            return (await legacy_get(connection.client, task_id)).status, None
        assert result.meta and result.meta["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        return (await legacy_get(connection.client, task_id)).status, result
    detailed = await wait_for(connection.session, task_id)
    if detailed.result is None:
        return detailed.status, None
    assert "io.modelcontextprotocol/related-task" not in (detailed.result.get("_meta") or {})
    return detailed.status, types.CallToolResult.model_validate(detailed.result)


async def cancel(connection: Connected, task_id: str) -> None:
    if connection.legacy:
        cancelled = await legacy_cancel(connection.client, task_id)
        assert cancelled.status == "cancelled"
    else:  # an empty acknowledgement, without the task's fields
        assert not {"taskId", "status", "result", "error"} & set(await cancel_task(connection.session, task_id))


def audit_outcomes(connection: Connected, tool: str) -> list[str]:
    return [line["outcome"] for line in read_lines(connection.audit) if line.get("tool") == tool]


# -- the tests ----------------------------------------------------------------------------------------------------


async def test_task_support_is_announced_for_the_era(connected: Connected) -> None:
    tools = {tool.name: tool for tool in (await connected.client.list_tools()).tools}
    capabilities = connected.client.server_capabilities
    if connected.legacy:
        assert capabilities.tasks is not None and capabilities.tasks.requests is not None
        assert capabilities.tasks.requests.tools is not None and capabilities.tasks.cancel is not None
        supported = {name for name, tool in tools.items() if tool.execution and tool.execution.task_support}
        assert supported == LONG_TOOLS
        assert {tools[name].execution.task_support for name in supported} == {"optional"}  # type: ignore[union-attr]
    else:  # the extension, and the server decides per call: no per-tool field on this wire
        assert capabilities.extensions is not None and TASKS in capabilities.extensions
        assert all(tool.execution is None for tool in tools.values())


async def test_a_long_call_is_answered_at_once_and_its_result_read_later(connected: Connected) -> None:
    started = time.monotonic()
    task_id = await start(connected, "slow_compute", seconds=1, label="late")
    assert time.monotonic() - started < 0.8  # the reply did not wait for the work
    status, message = await eventually(lambda: _progressed(connected, task_id))
    assert status == "working" and "step" in message  # tasks/get reports the tool's progress
    final, result = await outcome(connected, task_id)
    assert final == "completed" and result is not None and not result.is_error
    assert text_of(result) == "computed late in 1 s" and result.structured_content == {"text": "computed late in 1 s"}
    if connected.legacy:
        listed = {task.task_id: task.status for task in (await legacy_list(connected.client)).tasks}
        assert listed[task_id] == "completed"
    else:
        with pytest.raises(MCPError) as removed:  # 2026-07-28 has no tasks/result and no tasks/list
            await connected.session.send_request(types.ListTasksRequest(), types.ListTasksResult)
        assert removed.value.code == types.METHOD_NOT_FOUND
    assert audit_outcomes(connected, "slow_compute")[-2:] == ["STARTED", "OK"]


async def _progressed(connection: Connected, task_id: str) -> tuple[str, str] | None:
    status, message = await state(connection, task_id)
    return (status, message) if message else None


async def test_cancel_stops_the_work(connected: Connected) -> None:
    task_id = await start(connected, "slow_compute", seconds=120, label="never")
    await eventually(lambda: _progressed(connected, task_id))
    before = len(audit_outcomes(connected, "slow_compute"))
    await cancel(connected, task_id)
    assert await state(connected, task_id) == ("cancelled", "cancelled by the client")
    # the tool was cancelled for real: its pipeline wrote CANCELLED at once, not two minutes later
    await eventually(lambda: audit_outcomes(connected, "slow_compute")[before:] == ["CANCELLED"], timeout=10)
    await anyio.sleep(0.5)
    assert await state(connected, task_id) == ("cancelled", "cancelled by the client")  # no progress after it
    if connected.legacy:  # cancelling an ended task is refused on 2025-11-25, acknowledged on 2026-07-28
        with pytest.raises(MCPError) as ended:
            await legacy_cancel(connected.client, task_id)
        assert ended.value.code == types.INVALID_PARAMS
    else:
        await cancel(connected, task_id)


async def test_tool_errors_complete_and_protocol_errors_are_json_rpc_errors(connected: Connected) -> None:
    task_id = await start(connected, "failing_job", seconds=0.2)
    final, result = await outcome(connected, task_id)
    assert final == "completed" and result is not None  # a tool error is a completed task whose result isError
    assert error_of(result)[0] == "EXECUTION_FAILED"
    with pytest.raises(MCPError) as unknown:
        await state(connected, "no-such-task")
    assert unknown.value.code == types.INVALID_PARAMS and "expired" in unknown.value.message
    if connected.legacy:
        with pytest.raises(MCPError) as forbidden:  # a tool that never runs as a task
            await create_legacy_task(connected.client, "greet", {"name": "x"})
        assert forbidden.value.code == types.METHOD_NOT_FOUND
    else:
        greeting = await call_for_task(connected.client, "greet", {"name": "x"})
        assert isinstance(greeting, types.CallToolResult) and text_of(greeting) == "Hello, x!"
        request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
        with pytest.raises(MCPError) as removed:
            await connected.session.send_request(request, types.CallToolResult)
        assert removed.value.code == types.METHOD_NOT_FOUND


async def test_the_server_decides_per_call_on_2026(connected: Connected) -> None:
    if connected.legacy:
        pytest.skip("on 2025-11-25 the client decides (task-augmented or not)")
    quick = await call_for_task(connected.client, "maybe_long", {"seconds": 0})
    assert isinstance(quick, types.CallToolResult) and text_of(quick) == "worked 0 s"
    slow = await call_for_task(connected.client, "maybe_long", {"seconds": 30})
    assert isinstance(slow, CreatedTask)
    await cancel(connected, slow.task_id)
    assert connected.tasks is not None
    created = len(connected.tasks.created)
    transparent = await connected.client.call_tool("slow_compute", {"seconds": 0.3, "label": "plain"})
    assert text_of(transparent) == "computed plain in 0.3 s" and len(connected.tasks.created) == created + 1


async def test_bulky_parts_come_by_reference_and_are_read_back(connected: Connected) -> None:
    result = await connected.client.call_tool("bulky_report", {"pages": 3, "chars": 20_000})
    assert not result.is_error and [block.type for block in result.content] == ["text", *["resource_link"] * 3]
    links = [block for block in result.content if isinstance(block, types.ResourceLink)]
    assert result.structured_content is not None and result.structured_content["pages"] == [link.uri for link in links]
    assert all(link.uri.startswith("mcp-sections://tasks_demo/results/") for link in links)
    assert [link.size for link in links[1:]] == [20_000, 20_000]  # the size of what is stored (page 0: masked)
    pages = [(await connected.client.read_resource(link.uri)).contents[0] for link in links]
    assert [page.mime_type for page in pages] == ["text/markdown"] * 3
    texts = [unwrap(page.text) for page in pages]  # type: ignore[union-attr]
    assert texts[1].startswith("# page 1\nxxx") and len(texts[1]) == 20_000
    assert FAKE_TOKEN not in texts[0] and MASK in texts[0]  # masked like the rest of the section's results
    with pytest.raises(MCPError) as gone:
        await connected.client.read_resource("mcp-sections://tasks_demo/results/unknown/page.md")
    assert gone.value.code == types.INVALID_PARAMS and "call the tool again" in gone.value.message


async def test_a_plain_call_still_works_with_progress(http_url: tuple[str, Path]) -> None:
    """Without `task` (2025-11-25) or the extension (2026-07-28), a long tool runs as it always did."""
    url, audit = http_url
    for legacy in (True, False):
        steps: list[float] = []
        async with connect(url, legacy, audit, with_tasks=False) as connection:
            result = await connection.client.call_tool(
                "slow_compute", {"seconds": 0.5, "label": "plain"}, progress_callback=_recorder(steps)
            )
        assert text_of(result) == "computed plain in 0.5 s" and steps[-1] == 5, (legacy, steps)


def _recorder(steps: list[float]) -> Any:
    async def progress(done: float, total: float | None, message: str | None) -> None:
        steps.append(done)

    return progress


async def test_tasks_methods_need_the_extension_on_2026(http_url: tuple[str, Path]) -> None:
    url, _ = http_url
    async with Client(url, read_timeout_seconds=30) as plain:  # 2026-07-28, the extension not declared
        result = await plain.session.call_tool("slow_compute", {"seconds": 0.2}, allow_claimed=True)
        assert isinstance(result, types.CallToolResult)  # no task for a client that cannot take one
        with pytest.raises(MCPError) as missing:
            await get_task(plain.session, "whatever")
        assert missing.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY


# -- time to live, clients that never poll, the per-client bound -------------------------------------------------


@pytest.fixture(scope="module")
def short_lived(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A server whose tasks live 1 s (the least it allows), with at most 2 working per client."""
    data_dir = tmp_path_factory.mktemp("tasks-ttl")
    extra = {"MCP_SECTIONS_TASK_TTL_SECONDS": "1", "MCP_SECTIONS_MAX_TASKS_PER_CLIENT": "2"}
    with http_section(data_dir, **extra) as url:
        yield url, data_dir / "audit"


async def test_tasks_are_forgotten_after_their_ttl_even_when_never_polled(short_lived: tuple[str, Path]) -> None:
    url, audit = short_lived
    async with connect(url, True, audit) as legacy, connect(url, False, audit) as modern:
        asked = await create_legacy_task(legacy.client, "slow_compute", {"seconds": 0.3}, ttl_ms=86_400_000)
        assert asked["task"]["ttl"] == 1000  # what the client asked, capped by the server's ttl
        ids = [(legacy, asked["task"]["taskId"]), (modern, await start(modern, "slow_compute", seconds=0.3))]
        # nobody polled: the work ran to its end all the same (its audit lines say so), then the tasks expired
        await eventually(lambda: audit_outcomes(legacy, "slow_compute").count("OK") == 2)
        await anyio.sleep(2)  # the ttl (1 s) after the end, and a second to spare
        assert audit_outcomes(legacy, "slow_compute").count("OK") == 2
        for connection, task_id in ids:
            with pytest.raises(MCPError) as expired:
                await state(connection, task_id)
            assert expired.value.code == types.INVALID_PARAMS


async def test_a_client_has_a_bounded_number_of_working_tasks(short_lived: tuple[str, Path]) -> None:
    url, audit = short_lived
    async with connect(url, False, audit, name="busy") as busy, connect(url, False, audit, name="other") as other:
        first, second = [await start(busy, "slow_compute", seconds=60) for _ in range(2)]
        refused = await call_for_task(busy.client, "slow_compute", {"seconds": 60})
        assert isinstance(refused, types.CallToolResult)
        code, message = error_of(refused)
        assert code == "MAX_LIMIT_EXCEEDED" and "tasks/cancel" in message
        third = await start(other, "slow_compute", seconds=60)  # another client is not held back
        await cancel(busy, first)
        fourth = await start(busy, "slow_compute", seconds=60)  # a slot freed by the cancel
        for connection, task_id in ((busy, second), (busy, fourth), (other, third)):
            await cancel(connection, task_id)


# -- the stores on their own ----------------------------------------------------------------------------------------


def test_the_result_store_is_bounded_in_size_and_time() -> None:
    now = [0.0]
    store = ResultStore(max_bytes=100, ttl_seconds=10, clock=lambda: now[0])
    first, second, third = (Attachment.new("x" * 40, name=f"{n}.txt", mime_type="text/plain") for n in range(3))
    for attachment in (first, second, third):
        store.put(attachment)
    assert store.get(first.uri) is None and store.get(third.uri) is third  # the oldest went first
    assert store.total_bytes == 80
    now[0] = 11
    assert store.get(third.uri) is None and store.total_bytes == 0
    blob = Attachment.new(b"\x89PNG....", name="a view.png", mime_type="image/png")
    assert blob.uri.endswith("/a%20view.png") and blob.contents()["blob"] == base64.b64encode(b"\x89PNG....").decode()


def test_inline_text_is_cut_at_a_line_near_the_limit() -> None:
    text = "".join(f"line {n:05d}\n" for n in range(3000))  # 33,000 characters
    inline, cut = split_inline(text, 16_000)
    assert cut and inline.endswith("\n") and 12_800 <= len(inline) <= 16_000 and text.startswith(inline)
    assert split_inline("short", 16_000) == ("short", False)
