"""Approval of a call that runs as a 2025-11-25 task (`shared/serving/tasks.py` `ask_client`,
`shared/serving/asking.py`, `shared/serving/approval.py`): the task starts at once, then asks from its work — which
can no longer send anything on the request that created it (before, the task ended `failed` with the SDK's "no
back-channel" error). As the 2025-11-25 spec's "Input Required Status" says, the task turns `input_required`, and its
question comes as `elicitation/create` with the related-task metadata on the stream of the client's `tasks/result`;
approved, the call runs and `tasks/result` gives its result; declined, the task completes with PERMISSION_DENIED and
nothing runs. A `tasks/result` given up before the answer leaves the question for the next one. A client without
elicitation has the question on the status page, the task `input_required` meanwhile with a status message saying
where, and a log line. A real gateway process over Streamable HTTP (one replica), the official client, shell_ops'
run_command in a sandbox."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.accountability.page_gateway import PageGateway, page_gateway
from tests.stdio import error_of
from tests.tasks_client import create_legacy_task, legacy_get, legacy_result
from tests.waiting import eventually

pytestmark = pytest.mark.anyio
RELATED = "io.modelcontextprotocol/related-task"


class Gateway(PageGateway):
    def run(self, name: str) -> dict[str, Any]:
        """call_section_tool's arguments running a program that writes `name` in the root and prints 42."""
        program = f"open({name!r}, 'w').write('ran'); print(6*7)"
        command = {"command": ["python3", "-c", program], "cwd": str(self.root)}
        return {"section": "shell_ops", "tool": "run_command", "arguments": command}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """The gateway over HTTP on loopback (its status page open), approval on, shell_ops in its process."""
    with page_gateway(tmp_path_factory.mktemp("approval-task"), "shell_ops") as (port, root, data):
        yield Gateway(port, root, data)


@dataclass
class User:
    """The client's user: answers each `elicitation/create` with the next of `answers` ("hold": never answers)."""

    answers: list[str]
    asked: list[types.ElicitRequestParams] = field(default_factory=list)

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        answer = self.answers[len(self.asked) - 1]
        if answer == "hold":
            await anyio.sleep_forever()
        if answer == "approve":
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")


@asynccontextmanager
async def legacy_client(
    gateway: Gateway, user: User | None = None, logged: list[Any] | None = None
) -> AsyncIterator[Client]:
    """A 2025-11-25 client of the gateway, with elicitation when it has a `user`."""

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        if logged is not None:
            logged.append(params.data)

    client = Client(
        f"{gateway.url}/mcp", mode="legacy", elicitation_callback=user, logging_callback=log, read_timeout_seconds=60
    )
    async with client:
        yield client


async def status_of(client: Client, task_id: str) -> tuple[str, str | None]:
    task = await legacy_get(client, task_id)
    return task.status, task.status_message


async def input_required(client: Client, task_id: str) -> str | None:
    status, message = await status_of(client, task_id)
    assert status in ("working", "input_required"), (status, message)  # never `failed` for want of a back-channel
    return message if status == "input_required" else None


async def test_a_task_asks_by_elicitation_through_tasks_result_and_runs_once_approved(gateway: Gateway) -> None:
    user = User(["approve"])
    async with legacy_client(gateway, user) as client:
        created = await create_legacy_task(client, "call_section_tool", gateway.run("approved.txt"), ttl_ms=60_000)
        task_id = created["task"]["taskId"]
        message = await eventually(lambda: input_required(client, task_id))
        assert "tasks/result" in message and "run_command" in message, message
        assert not user.asked and not (gateway.root / "approved.txt").exists()  # asked on tasks/result, not before
        result = await legacy_result(client, task_id)
        assert await status_of(client, task_id) == ("completed", "completed")
    (question,) = user.asked
    assert question.meta is not None and question.meta[RELATED] == {"taskId": task_id}
    assert "Section shell_ops, tool run_command" in question.message and "approved.txt" in question.message
    assert not result.is_error and result.structured_content is not None
    assert result.structured_content["stdout"] == "42\n" and result.meta and result.meta[RELATED] == {"taskId": task_id}
    assert (gateway.root / "approved.txt").read_text(encoding="utf-8") == "ran"
    record = gateway.approvals()[-1]
    assert record["outcome"] == "APPROVED" and "elicitation" in record["message"], record


async def test_declined_the_task_ends_with_permission_denied_and_nothing_runs(gateway: Gateway) -> None:
    user = User(["decline"])
    async with legacy_client(gateway, user) as client:
        created = await create_legacy_task(client, "call_section_tool", gateway.run("declined.txt"), ttl_ms=60_000)
        task_id = created["task"]["taskId"]
        result = await legacy_result(client, task_id)  # waiting already when the question comes: it carries it
        status, _ = await status_of(client, task_id)
    assert len(user.asked) == 1 and status == "completed"  # a tool error is a completed task whose result isError
    code, message = error_of(result)
    assert code == "PERMISSION_DENIED" and "declined" in message and "did not run" in message, message
    assert not (gateway.root / "declined.txt").exists()
    assert gateway.approvals()[-1]["outcome"] == "DECLINED"


async def test_a_tasks_result_given_up_leaves_the_question_for_the_next_one(gateway: Gateway) -> None:
    user = User(["hold", "approve"])
    async with legacy_client(gateway, user) as client:
        created = await create_legacy_task(client, "call_section_tool", gateway.run("second.txt"), ttl_ms=60_000)
        task_id = created["task"]["taskId"]
        with anyio.move_on_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(legacy_result, client, task_id)
                await eventually(lambda: user.asked)
                group.cancel_scope.cancel()  # the client gives this tasks/result up: notifications/cancelled
        assert (await status_of(client, task_id))[0] == "input_required"
        result = await legacy_result(client, task_id)
    assert len(user.asked) == 2 and user.asked[0].message == user.asked[1].message
    assert not result.is_error and (gateway.root / "second.txt").read_text(encoding="utf-8") == "ran"


async def test_without_elicitation_the_task_waits_on_the_status_page_saying_where(gateway: Gateway) -> None:
    logged: list[Any] = []
    async with legacy_client(gateway, logged=logged) as client:
        created = await create_legacy_task(client, "call_section_tool", gateway.run("paged.txt"), ttl_ms=60_000)
        task_id = created["task"]["taskId"]
        message = await eventually(lambda: input_required(client, task_id))
        assert f"{gateway.url}/status" in message and "approve or decline" in message, message
        (question,) = await eventually(gateway.questions)
        assert "paged.txt" in question["text"] and question["id"][:6] in message
        assert await gateway.answer(question, approve=True) == 303
        result = await legacy_result(client, task_id)
    assert not result.is_error and (gateway.root / "paged.txt").read_text(encoding="utf-8") == "ran"
    said = [line.get("text", "") for line in logged if isinstance(line, dict)]
    assert any(f"{gateway.url}/status" in text and "needs your approval" in text for text in said), logged
    record = gateway.approvals()[-1]
    assert record["outcome"] == "APPROVED" and "on the status page" in record["message"], record


async def test_an_unknown_task_says_how_long_tasks_are_kept_truly(gateway: Gateway) -> None:
    async with legacy_client(gateway) as client:
        created = await create_legacy_task(client, "call_section_tool", gateway.run("short.txt"), ttl_ms=600_000)
        assert created["task"]["ttl"] == 600_000  # this task is kept 600 s, not the server's 3600
        with pytest.raises(MCPError) as unknown:
            await legacy_get(client, "no-such-task")
        request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=created["task"]["taskId"]))
        await client.session.send_request(request, types.CancelTaskResult)
    message = unknown.value.message
    assert unknown.value.code == types.INVALID_PARAMS and "3600 s after they start" not in message, message
    assert "its ttl" in message and "3600 s by default" in message, message
