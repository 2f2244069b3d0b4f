"""The client side of MCP tasks, on the official `mcp` client, in both protocol eras (for the tests).

- 2026-07-28 (the `io.modelcontextprotocol/tasks` extension): `Tasks` is a `ClientExtension`. Passed to
  `Client(extensions=[Tasks()])` it declares the extension on every request and claims `resultType: "task"`: a plain
  `client.call_tool` then polls `tasks/get` until the task ends and returns the tool's result, as a 2025 client
  would see it. `client.session.call_tool(..., allow_claimed=True, allow_input_required=False)` returns the
  `CreatedTask` itself, for tests that poll or cancel by hand (`get_task`, `cancel_task`).
- 2025-11-25 (tasks in the core protocol): the client asks with `task: {ttl}` (`create_legacy_task`), then uses
  `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/list` through `ClientSession.send_request` and the SDK's
  own 2025-11-25 task models. The SDK's client validates every `tools/call` reply of a 2025-11-25 connection as a
  `CallToolResult`, so the task-augmented `tools/call` alone goes through the session's dispatcher (private), with
  the session's own header stamp.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from pydantic import ConfigDict

TASKS = "io.modelcontextprotocol/tasks"
TERMINAL = ("completed", "failed", "cancelled")


class CreatedTask(types.Result):
    """A 2026-07-28 `CreateTaskResult`: flat task fields, `resultType: "task"`."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    status_message: str | None = None


class DetailedTask(types.Result):
    """A 2026-07-28 `tasks/get` result: the task, its result or error inlined once it ended."""

    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskIdParams(types.RequestParams):
    task_id: str


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"  # Mcp-Name on Streamable HTTP (SEP-2663)


class CancelTask(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


async def get_task(session: ClientSession, task_id: str) -> DetailedTask:
    return await session.send_request(GetTask(params=TaskIdParams(task_id=task_id)), DetailedTask)


async def cancel_task(session: ClientSession, task_id: str) -> dict[str, Any]:
    result = await session.send_request(CancelTask(params=TaskIdParams(task_id=task_id)), types.EmptyResult)
    return result.model_dump(by_alias=True, exclude_none=True)


async def wait_for(session: ClientSession, task_id: str, timeout: float = 60) -> DetailedTask:
    """Poll `tasks/get` (at the server's poll interval, at most 0.2 s here) until the task ended."""
    with anyio.fail_after(timeout):
        while True:
            task = await get_task(session, task_id)
            if task.status in TERMINAL:
                return task
            await anyio.sleep(min((task.poll_interval_ms or 200) / 1000, 0.2))


class Tasks(ClientExtension):
    """The tasks extension on the official client (see the module docstring)."""

    identifier = TASKS

    def __init__(self) -> None:
        self.created: list[CreatedTask] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self._resolve)]

    async def _resolve(self, created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        self.created.append(created)
        task = await wait_for(ctx.session, created.task_id, timeout=ctx.read_timeout_seconds or 120)
        if task.status == "completed" and task.result is not None:
            return types.CallToolResult.model_validate(task.result)
        raise RuntimeError(f"task {task.task_id} ended {task.status}: {task.error}")


async def call_for_task(client: Client, name: str, arguments: dict[str, Any]) -> CreatedTask | types.CallToolResult:
    """A 2026-07-28 call that returns the task handle as it is (or the plain result when the server ran it)."""
    result = await client.session.call_tool(name, arguments, allow_claimed=True, allow_input_required=False)
    assert isinstance(result, CreatedTask | types.CallToolResult), result
    return result


# -- 2025-11-25 ------------------------------------------------------------------------------------------------


async def create_legacy_task(
    client: Client, name: str, arguments: dict[str, Any], ttl_ms: int | None = None
) -> dict[str, Any]:
    """`tools/call` with `task: {ttl}`; the raw reply (`{task: {...}}`, or a plain result when the server ran it)."""
    session = client.session
    params = {"name": name, "arguments": arguments, "task": {} if ttl_ms is None else {"ttl": ttl_ms}}
    data: dict[str, Any] = {"method": "tools/call", "params": params}
    options: dict[str, Any] = {}
    session._stamp(data, options)  # type: ignore[arg-type]  # the session's protocol-version header
    return await session._dispatcher.send_raw_request("tools/call", data["params"], options)  # type: ignore[arg-type]


async def legacy_get(client: Client, task_id: str) -> types.GetTaskResult:
    request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.GetTaskResult)


async def legacy_result(client: Client, task_id: str) -> types.CallToolResult:
    request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.CallToolResult)


async def legacy_cancel(client: Client, task_id: str) -> types.CancelTaskResult:
    request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, types.CancelTaskResult)


async def legacy_list(client: Client) -> types.ListTasksResult:
    return await client.session.send_request(types.ListTasksRequest(), types.ListTasksResult)
