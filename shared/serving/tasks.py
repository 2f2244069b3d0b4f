"""Long work as MCP tasks: a call answered at once with a task handle, its result fetched later.

Crawls, ingests, renders and sub-agent runs take longer than the ~60 s many clients wait for a reply. A long tool
(`@tool(long=...)`, `shared.framework.tools`) may run as a task instead, in both protocol eras the SDK speaks:
- 2025-11-25 (tasks in the core protocol): the server announces `capabilities.tasks`, and each long tool
  `execution.taskSupport: "optional"` in tools/list. The client asks for a task with `task: {ttl}` on `tools/call`
  and gets `{task}` at once; `tasks/get` gives the state and progress, `tasks/result` waits for the end and gives the
  tool's result, `tasks/cancel` stops it, `tasks/list` lists the client's tasks.
- 2026-07-28 (the `io.modelcontextprotocol/tasks` extension, SEP-2663): announced under `capabilities.extensions`.
  A client that declares the extension on its request lets the server decide: a long call is answered with
  `resultType: "task"` and the task's fields; `tasks/get` inlines the result (or the JSON-RPC error) once it ended;
  `tasks/cancel` acknowledges with an empty result; `tasks/update` acknowledges input (no task here asks for any).
  A tool that must ask the user first (approval) asks synchronously, then runs as a task on the answered round.
A plain call (no `task`, no extension) runs as it always did, with progress notifications.

A 2025-11-25 task's work that needs the client (a question for the user: `shared.serving.asking`) cannot use the
request that created the task, answered long ago: it asks through the task, as that revision's "Input Required
Status" says (`ask_client`). The task turns `input_required`, and the request waits for the client's `tasks/result`
on that task (which the client calls when it sees `input_required`, or has been waiting in already): sent on that
request's stream with the `io.modelcontextprotocol/related-task` metadata, its answer handed back to the work, the
task `working` again. A `tasks/result` that ends before the answer (its client went) leaves the request for the next
one. A task waiting for the person elsewhere (the status page) is `input_required` too, its status message saying
where (`awaiting_input`). A 2026-07-28 task never waits for input: its question is asked before it starts.

The work is the rest of the SDK's chain (argument validation, the section's pipeline and its audit lines), run in
this process's task group inside a cancel scope: `tasks/cancel` cancels it, and a tool stops its process group,
browser page or sub-agent as it does for a cancelled request. A task's latest progress is its status message (on
2025-11-25 progress notifications also go on to the client, whose token stays valid for the task's lifetime).
A task's `ttl` is also its work's deadline: work still running `ttl` after the task's creation is cancelled as
`tasks/cancel` cancels it, and the task ends `failed` with an error saying so (a client that died leaves nothing
running past it). A task is kept `ttl` after its creation, and at least until `min(ttl, KEEP_AFTER_END)` after it
ended, then forgotten, polled or not; an owner may have `max_per_client` tasks working at once (one more gets
MAX_LIMIT_EXCEEDED), and the store keeps at most `MAX_KEPT` ended tasks. Task ids are unguessable (192 bits).

A task belongs to a user and a client program, not to a connection (`shared.framework.clients`): a client that
reconnects (a new HTTP session, a restarted app) finds its tasks again with `tasks/list` and `tasks/get`.

Several replicas (a team, `MCP_SECTIONS_REDIS_URL`): the tasks are also written to the Redis the replicas share
(`shared.store.redis_state`), so any replica reads, lists, waits for and cancels any of them. A task's work runs in
the replica that started it: its state is written there when it starts and ends (its progress every
`HEARTBEAT_SECONDS`), a cancel from another replica is published to it (and found by its next look at the store if
the message was lost), and a task that ended cannot be overwritten (a Lua compare-and-set). A task whose replica
stopped (no heartbeat) ends `failed`, saying to call the tool again, when a replica next reads it; a replica that
shuts down ends its working tasks so. Unset, everything stays in this process as above.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from dataclasses import fields as fields_of
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, TypeVar, cast

import anyio
from anyio.abc import TaskGroup
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import decode_header_value
from mcp.shared.message import ServerMessageMetadata
from mcp_types import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    REQUEST_TIMEOUT,
    CancelTaskRequestParams,
    GetTaskPayloadRequestParams,
    GetTaskRequestParams,
    PaginatedRequestParams,
    RequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from mcp_sections.shared.framework.clients import owner_of
from mcp_sections.shared.framework.tools import Progress
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.serving.audit import written_at_once
from mcp_sections.shared.store.redis_state import HEARTBEAT_SECONDS, RedisTasks, shared_state

logger = logging.getLogger("mcp_sections.tasks")

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"
MCP_NAME_HEADER = "mcp-name"
LEGACY = frozenset({"2025-11-25"})  # the one handshake-era revision with tasks
MODERN = frozenset(MODERN_PROTOCOL_VERSIONS)
POLL_INTERVAL_MS = 1000
KEEP_AFTER_END = 600.0  # seconds an ended task stays readable at least (never more than its ttl)
MAX_KEPT = 256
SWEEP_SECONDS = 2.0
REMOTE_POLL_SECONDS = 0.25  # how often a replica waiting for another replica's task reads it
STOPPED_REPLICA = (
    "the gateway replica running this task stopped before the task ended (it was restarted, scaled down or "
    "crashed); call the tool again."
)
LEGACY_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}

Status = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL = frozenset({"completed", "failed", "cancelled"})
Work = Callable[[], Awaitable[dict[str, Any]]]
R = TypeVar("R", bound=BaseModel)


@dataclass(eq=False)
class ClientRequest:
    """A request of a 2025-11-25 task's work for its client (`ask_client`), until a `tasks/result` carries it."""

    request: Any  # a typed server-to-client request (mcp_types), its `_meta` naming the task
    result_type: type[BaseModel]
    answered: anyio.Event = field(default_factory=anyio.Event)
    result: BaseModel | None = None
    error: Exception | None = None  # the client's MCPError, NoBackChannelError, a malformed answer
    withdrawn: bool = False  # the work no longer waits (its question timed out, the task was cancelled)
    carrier: anyio.CancelScope | None = None  # the delivery under way, stopped when withdrawn

    async def carry(self, ctx: Any, task: TaskRecord) -> None:
        """Send it on the stream of `ctx` (a `tasks/result` request) and hand the client's answer to the work; when
        that request ends first (its client went), put it back for the task's next `tasks/result`."""
        try:
            with anyio.CancelScope() as self.carrier:
                if self.withdrawn:
                    return
                try:
                    related = ServerMessageMetadata(related_request_id=ctx.request_id)
                    self.result = await ctx.session.send_request(self.request, self.result_type, metadata=related)
                except Exception as exc:
                    self.error = exc
                self.answered.set()
        finally:
            if not self.answered.is_set() and not self.withdrawn:
                task.post(self, first=True)


@dataclass(eq=False)
class TaskRecord:
    """One task: its state, its result once ended, and the cancel scope of its work."""

    id: str
    owner: str
    tool: str
    modern: bool  # created on the 2026-07-28 wire (its shapes, and no progress notifications)
    ttl_ms: int
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    status: Status = "working"
    message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    ended: float | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    requests: list[ClientRequest] = field(default_factory=list)  # its work's, for the client, not yet carried
    pulse: anyio.Event = field(default_factory=anyio.Event)  # set (and renewed) when a request is posted or it ends
    waits: int = 0  # how many waits for input keep it `input_required`

    @property
    def expires(self) -> float | None:
        """When it may be forgotten (None while it works)."""
        if self.ended is None:
            return None
        ttl = self.ttl_ms / 1000
        return max(self.created + ttl, self.ended + min(ttl, KEEP_AFTER_END))

    @property
    def deadline(self) -> float:
        """When its work is stopped if still working (`time.time()` scale)."""
        return self.created + self.ttl_ms / 1000

    def overdue(self, now: float) -> bool:
        """Whether it still works past its deadline (work that does not stop at once when cancelled)."""
        return self.status not in TERMINAL and now >= self.deadline

    def expire(self, max_ttl_ms: int) -> bool:
        """End it as failed because its ttl ran out while it worked (False: it had already ended)."""
        seconds, most = self.ttl_ms / 1000, max_ttl_ms / 1000
        message = (
            f"stopped: the task's ttl of {seconds:g} s ran out before its work ended, and a task works at most its "
            f"ttl. Call the tool again with narrower work, or ask a longer ttl (this server allows up to {most:g} s: "
            "`task_ttl_seconds`)."
        )
        return self.end("failed", error={"code": REQUEST_TIMEOUT, "message": message})

    def note_progress(self, progress: float, total: float | None, message: str | None) -> None:
        """The tool's latest progress is the task's status message (its own words, else the numbers)."""
        self.message = (message or f"progress {progress:g}" + (f"/{total:g}" if total else ""))[:300]
        self.updated = time.time()

    def end(self, status: Status, *, result: dict[str, Any] | None = None, error: dict[str, Any] | None = None) -> bool:
        """Move to a terminal status (once: a cancelled task stays cancelled when its work ends after)."""
        if self.status in TERMINAL:
            return False
        self.status, self.result, self.error = status, result, error
        self.ended = self.updated = time.time()
        if status == "cancelled":
            self.message = "cancelled by the client"
        elif status == "failed" and error is not None:
            self.message = str(error.get("message", "failed"))[:300]
        elif status == "completed":
            self.message = "completed"
        self.done.set()
        self._wake()
        return True

    # -- input its work waits for (2025-11-25) ------------------------------------------------------------------

    @contextmanager
    def needs_input(self, message: str) -> Iterator[None]:
        """`input_required`, saying `message`, while the block waits for an answer; `working` again after."""
        before = self.message
        self.waits += 1
        if self.status not in TERMINAL:
            self.status, self.message, self.updated = "input_required", message[:300], time.time()
        try:
            yield
        finally:
            self.waits -= 1
            if self.waits == 0 and self.status == "input_required":
                self.status, self.message, self.updated = "working", before, time.time()

    def post(self, request: ClientRequest, first: bool = False) -> None:
        """A request for the client, for the next `tasks/result` to carry (`first`: one that was being carried)."""
        self.requests.insert(0 if first else len(self.requests), request)
        self._wake()

    def withdraw(self, request: ClientRequest) -> None:
        """The work no longer waits for `request`: not carried any more, nor sent."""
        request.withdrawn = True
        if request in self.requests:
            self.requests.remove(request)
        if request.carrier is not None:
            request.carrier.cancel()

    async def next_request(self) -> ClientRequest | None:
        """The next request its work has for the client (taken: one `tasks/result` carries it); None once it ended."""
        while True:
            if self.requests:
                return self.requests.pop(0)
            if self.status in TERMINAL:
                return None
            await self.pulse.wait()

    def _wake(self) -> None:
        pulse, self.pulse = self.pulse, anyio.Event()
        pulse.set()

    # -- the wire shapes --------------------------------------------------------------------------------------

    def fields(self, modern: bool | None = None) -> dict[str, Any]:
        """The task in an era's names (`ttl`/`pollInterval` on 2025-11-25, `ttlMs`/`pollIntervalMs` on 2026): the
        era of the request that asks (`modern`; default: the era it was created on). A user's tasks are theirs on
        either wire, so one made on 2026-07-28 may be read or listed on 2025-11-25."""
        expires = self.expires
        ttl = round((expires - self.created) * 1000) if expires is not None else self.ttl_ms
        task: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": _iso(self.created),
            "lastUpdatedAt": _iso(self.updated),
        }
        if self.message:
            task["statusMessage"] = self.message
        if self.modern if modern is None else modern:
            task.update(ttlMs=ttl, pollIntervalMs=POLL_INTERVAL_MS)
        else:
            task.update(ttl=ttl, pollInterval=POLL_INTERVAL_MS)
        return task

    def detailed(self) -> dict[str, Any]:
        """2026-07-28 `tasks/get`: the task, with the result (or JSON-RPC error) inlined once it ended."""
        task = self.fields(modern=True)
        if self.status == "completed" and self.result is not None:
            task["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            task["error"] = self.error
        return task


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TaskStore:
    """The tasks (see the module docstring): started in this process's task group, kept for their ttl; with
    `shared` (by default from the environment: `shared.store.redis_state.shared_state`), also in the Redis the
    replicas share."""

    def __init__(self, ttl_seconds: float, max_per_client: int, shared: RedisTasks | bool | None = True) -> None:
        self.ttl_ms = max(1, round(ttl_seconds * 1000))
        self.max_per_client = max_per_client
        self._tasks: dict[str, TaskRecord] = {}
        self._group: TaskGroup | None = None
        if shared is True:
            settings = shared_state()
            shared = RedisTasks(settings) if settings is not None else None
        self._shared: RedisTasks | None = shared or None
        self._saved: dict[str, float] = {}  # task id → `updated` of what the shared store holds of a task run here

    @asynccontextmanager
    async def running(self) -> AsyncIterator[TaskStore]:
        """Tasks run inside; on the way out the ones still working are cancelled."""
        async with anyio.create_task_group() as group:
            self._group = group
            group.start_soon(self._sweep)
            if self._shared is not None:
                self._shared.connect()
                group.start_soon(self._shared.cancels, self._cancelled_elsewhere)
                group.start_soon(self._share)
            try:
                yield self
            finally:
                self._group = None
                group.cancel_scope.cancel()
        if self._shared is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await self._shared.close()

    async def start(self, owner: str, tool: str, work: Work, *, modern: bool, ttl_ms: int | None = None) -> TaskRecord:
        """A new working task running `work`; ToolFailure when this client has too many working already."""
        if self._group is None:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "this server is shutting down; call again after restart.")
        working = sum(1 for task in await self.owned(owner) if task.status not in TERMINAL)
        if working >= self.max_per_client:
            raise ToolFailure(
                ErrorCode.MAX_LIMIT_EXCEEDED,
                f"{working} tasks of this client are still working (at most {self.max_per_client} at once); wait "
                "for one to end (tasks/get) or cancel one (tasks/cancel), then call again.",
            )
        ttl = self.ttl_ms if ttl_ms is None else max(1000, min(int(ttl_ms), self.ttl_ms))
        task = TaskRecord(id=secrets.token_urlsafe(24), owner=owner, tool=tool, modern=modern, ttl_ms=ttl)
        task.scope.deadline = anyio.current_time() + ttl / 1000  # the work stops at the ttl (see `_run`)
        self._tasks[task.id] = task
        await self._save(task)
        self._group.start_soon(self._run, task, work, name=f"task {tool}")
        return task

    async def find(self, task_id: str, owner: str) -> TaskRecord:
        """The client's task; INVALID_PARAMS for an id it does not own, never had, or that expired."""
        self._forget_expired()
        task = self._tasks.get(task_id)
        if task is None and self._shared is not None:
            task = await self._load(task_id)
        if task is None or task.owner != owner:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"no task {task_id[:64]!r}: it never existed or has expired (a task is kept for its ttl "
                f"from its start — the ttl its call asked for, {self.ttl_ms / 1000:g} s by default and at most — and "
                f"at least min(ttl, {KEEP_AFTER_END:g} s) after it ended); call the tool again.",
            )
        return task

    async def owned(self, owner: str) -> list[TaskRecord]:
        self._forget_expired()
        here = [task for task in self._tasks.values() if task.owner == owner]
        if self._shared is None:
            return here
        held = {task.id for task in here}
        elsewhere = [
            await self._judged(_record(fields), fields.get("replica"))
            for fields in await self._shared.owned(owner)
            if fields.get("id") not in held
        ]
        return sorted(here + elsewhere, key=lambda task: task.created)

    async def cancel(self, task: TaskRecord) -> bool:
        """Stop a working task now (False: it had already ended)."""
        if not task.end("cancelled"):
            return False
        if self._tasks.get(task.id) is task:
            task.scope.cancel()
            await self._save(task)
            return True
        assert self._shared is not None  # a task of another replica: it runs the work, and is told to stop it
        stored = await self._shared.put(self._fields(task), *self._lifetimes(task))
        if stored is not None:  # it ended there first
            _update(task, stored)
            return False
        await self._shared.cancel(task.id)
        return True

    async def wait(self, task: TaskRecord, ctx: Any = None) -> TaskRecord:
        """The task once it ended (a task of another replica is read until then); meanwhile the requests its work has
        for the client are carried on the stream of `ctx`, the `tasks/result` request that waits."""
        if self._shared is None or self._tasks.get(task.id) is task:
            while ctx is not None and (request := await task.next_request()) is not None:
                await request.carry(ctx, task)
            await task.done.wait()
            return task
        while task.status not in TERMINAL:
            await anyio.sleep(REMOTE_POLL_SECONDS)
            fresh = await self._load(task.id)
            if fresh is None:
                raise MCPError(code=INVALID_PARAMS, message=f"task {task.id[:64]!r} has expired; call the tool again.")
            task = fresh
        return task

    @property
    def count(self) -> int:
        return len(self._tasks)

    async def _run(self, task: TaskRecord, work: Work) -> None:
        token = CURRENT.set(task)
        try:
            with task.scope, written_at_once():
                try:
                    result = await work()
                except MCPError as exc:
                    task.end("failed", error=exc.error.model_dump(mode="json", exclude_none=True))
                except Exception:
                    logger.exception("task %s (%s) failed", task.id[:8], task.tool)
                    task.end("failed", error={"code": INTERNAL_ERROR, "message": "the work failed (see server log)"})
                else:
                    task.end("completed", result=result)
        finally:
            CURRENT.reset(token)
            if task.scope.cancelled_caught:  # its own scope: the deadline (tasks/cancel ended it before cancelling)
                task.expire(self.ttl_ms)
            if self._shared is not None and self._group is None:  # this replica is stopping: others will read it
                task.end("failed", error={"code": INTERNAL_ERROR, "message": STOPPED_REPLICA})
            task.end("cancelled")  # only when still working: the server is shutting down
            if self._shared is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await self._save(task)

    async def _sweep(self) -> None:
        while True:
            await anyio.sleep(SWEEP_SECONDS)
            self._forget_expired()

    def _forget_expired(self) -> None:
        now = time.time()
        for task in list(self._tasks.values()):
            if task.overdue(now):  # its work was cancelled at the deadline but has not stopped yet
                task.expire(self.ttl_ms)
                task.scope.cancel()
        ended = sorted((task for task in self._tasks.values() if task.ended is not None), key=lambda t: t.created)
        surplus = len(ended) - MAX_KEPT
        for task in ended:
            expires = task.expires
            if surplus > 0 or (expires is not None and expires <= now):
                del self._tasks[task.id]
                self._saved.pop(task.id, None)
                surplus -= 1

    # -- the store the replicas share ----------------------------------------------------------------------------

    def _fields(self, task: TaskRecord) -> dict[str, Any]:
        fields = {name: getattr(task, name) for name in _STORED}
        return {**fields, "replica": self._shared.replica if self._shared is not None else None}

    @staticmethod
    def _lifetimes(task: TaskRecord) -> tuple[float, float]:
        """Until when the shared store keeps the task, and its owner's index (its longest possible life)."""
        longest = task.created + task.ttl_ms / 1000 + KEEP_AFTER_END
        return (task.expires or task.deadline + SWEEP_SECONDS * 4), longest

    async def _save(self, task: TaskRecord) -> None:
        """Write a task run here to the shared store (a task that another replica ended meanwhile takes its end)."""
        if self._shared is None:
            return
        try:
            stored = await self._shared.put(self._fields(task), *self._lifetimes(task))
        except Exception:
            logger.warning("task %s could not be written to the shared store; retried", task.id[:8], exc_info=True)
            return
        self._saved[task.id] = task.updated
        if stored is not None:
            self._ended_elsewhere(task, stored)

    async def _load(self, task_id: str) -> TaskRecord | None:
        assert self._shared is not None
        fields = await self._shared.get(task_id)
        return None if fields is None else await self._judged(_record(fields), fields.get("replica"))

    async def _judged(self, task: TaskRecord, replica: str | None) -> TaskRecord:
        """A task of another replica; failed (and written so) when that replica stopped while it worked."""
        assert self._shared is not None
        if task.status in TERMINAL or replica is None or not await self._shared.gone(replica):
            return task
        task.end("failed", error={"code": INTERNAL_ERROR, "message": STOPPED_REPLICA})
        stored = await self._shared.put({**self._fields(task), "replica": replica}, *self._lifetimes(task))
        if stored is not None:
            _update(task, stored)
        return task

    def _cancelled_elsewhere(self, task_id: str) -> None:
        """Another replica cancelled a task: if it runs here, its work stops."""
        task = self._tasks.get(task_id)
        if task is not None and task.end("cancelled"):
            task.scope.cancel()

    def _ended_elsewhere(self, task: TaskRecord, stored: dict[str, Any]) -> None:
        if task.status in TERMINAL:
            return
        task.end(stored.get("status", "cancelled"), result=stored.get("result"), error=stored.get("error"))
        task.scope.cancel()

    async def _share(self) -> None:
        """The heartbeat, and what the shared store must learn (progress) or says (a cancel whose message was lost)."""
        assert self._shared is not None
        while True:
            try:
                await self._shared.beat()
                for task in list(self._tasks.values()):
                    if self._saved.get(task.id) != task.updated:
                        await self._save(task)
                    elif task.status not in TERMINAL:
                        stored = await self._shared.get(task.id)
                        if stored is not None and stored.get("status") in TERMINAL:
                            self._ended_elsewhere(task, stored)
            except Exception as exc:
                logger.warning("the shared task store cannot be reached (%s); retrying", exc)
            await anyio.sleep(HEARTBEAT_SECONDS)


_STORED = tuple(f.name for f in fields_of(TaskRecord) if f.name not in ("scope", "done", "requests", "pulse", "waits"))


def _record(stored: dict[str, Any]) -> TaskRecord:
    """A task of another replica, as the shared store holds it (no work of its own here)."""
    task = TaskRecord(**{name: stored[name] for name in _STORED if name in stored})
    if task.status in TERMINAL:
        task.done.set()
    return task


def _update(task: TaskRecord, stored: dict[str, Any]) -> None:
    for name in _STORED:
        if name in stored:
            setattr(task, name, stored[name])
    if task.status in TERMINAL:
        task.done.set()


CURRENT: ContextVar[TaskRecord | None] = ContextVar("mcp_sections_task", default=None)


def asks_through_tasks() -> bool:
    """Whether this call's work runs as a 2025-11-25 task: its requests to the client go through `ask_client`."""
    task = CURRENT.get()
    return task is not None and not task.modern


async def ask_client(request: Any, result_type: type[R], waiting: str) -> R:
    """The client's answer to `request` (a typed server-to-client request) from a 2025-11-25 task's work: sent with
    the related-task metadata on the stream of the task's `tasks/result`, the task `input_required` (`waiting` its
    status message) until then (see the module docstring). Raises what the client answered (MCPError), or
    NoBackChannelError when the `tasks/result` that took it cannot carry requests (stateless HTTP)."""
    task = CURRENT.get()
    if task is None or task.modern:
        raise RuntimeError("ask_client is for the work of a 2025-11-25 task")
    meta = {**(request.params.meta or {}), RELATED_TASK: {"taskId": task.id}}
    related = request.model_copy(update={"params": request.params.model_copy(update={"meta": meta})})
    asked = ClientRequest(related, result_type)
    with task.needs_input(waiting):
        task.post(asked)
        try:
            await asked.answered.wait()
        finally:
            task.withdraw(asked)
    if asked.error is not None:
        raise asked.error
    return cast(R, asked.result)


@contextmanager
def awaiting_input(message: str) -> Iterator[None]:
    """In a 2025-11-25 task's work, the task is `input_required` with `message` (where to answer) while the block
    waits for the person; elsewhere (a plain call, a 2026-07-28 task: its status means another thing) nothing."""
    task = CURRENT.get()
    if task is None or task.modern:
        yield
        return
    with task.needs_input(message):
        yield


def task_execution(support: str | None) -> dict[str, Any] | None:
    """The `execution` member of a tool's tools/list entry (None: the tool never runs as an MCP task)."""
    return {"taskSupport": support} if support is not None else None


def tracked(progress: Progress) -> Progress:
    """`progress` of a call that may run as a task: its reports become the task's status message, and go on to
    the client except on 2026-07-28, where a task gets no progress notifications."""
    task = CURRENT.get()
    if task is None:
        return progress

    async def report(done: float, total: float | None, message: str | None) -> None:
        task.note_progress(done, total, message)
        if not task.modern:
            await progress(done, total, message)

    return report


# -- the protocol: which calls become tasks, and the tasks/* methods ------------------------------------------


class TaskPolicy(Protocol):
    """Which tools may run as tasks, and which calls should (the server's part of the 2026-07-28 decision). Whether
    a call asks the person first is approval's to say (`shared.serving.approval.Approvals.asks`)."""

    def support(self, tool: str) -> Literal["optional"] | None:
        """The tool's `execution.taskSupport` (None: it never runs as a task)."""
        ...

    def runs_long(self, tool: str, arguments: dict[str, Any]) -> bool:
        """Whether this call is long work (a task on 2026-07-28 when the client declared the extension)."""
        ...


#: Whether a call asks the person before it runs (its tool name and arguments): on 2026-07-28 its task starts once
#: the question is answered.
Asks = Callable[[str, dict[str, Any]], bool]


def is_modern(ctx: Any) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def declares_tasks(ctx: Any) -> bool:
    """Whether this 2026-07-28 request declares the tasks extension (the client can take a task as the answer)."""
    capabilities = ctx.session.client_capabilities
    return bool(capabilities is not None and capabilities.extensions and TASKS_EXTENSION in capabilities.extensions)


class TaskCalls:
    """Middleware: answers a long call with a task where the client allows it, and publishes task support on
    2025-11-25 (`capabilities.tasks` in `initialize`, `execution.taskSupport` in tools/list)."""

    def __init__(self, store: TaskStore, policy: TaskPolicy, asks: Asks) -> None:
        self._store = store
        self._policy = policy
        self._asks = asks

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        method = getattr(ctx, "method", None)
        if method == "tools/call":
            return await self._call(ctx, call_next)
        result = await call_next(ctx)
        if is_modern(ctx) or not isinstance(result, dict):
            return result
        if method == "initialize":
            result.setdefault("capabilities", {})["tasks"] = LEGACY_CAPABILITY
        elif method == "tools/list":
            for tool in result.get("tools", []):
                execution = task_execution(self._policy.support(tool.get("name", "")))
                if execution is not None:
                    tool["execution"] = execution
        return result

    async def _call(self, ctx: Any, call_next: Any) -> Any:
        params = ctx.params or {}
        name, arguments = params.get("name"), params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return await call_next(ctx)
        modern = is_modern(ctx)
        ttl_ms = None
        if modern:
            if not (declares_tasks(ctx) and self._policy.support(name) and self._policy.runs_long(name, arguments)):
                return await call_next(ctx)
            if self._asks(name, arguments) and not params.get("inputResponses"):
                return await call_next(ctx)  # the question first (InputRequiredResult), the task on the next round
        else:
            requested = params.get("task")
            if requested is None:
                return await call_next(ctx)
            if self._policy.support(name) is None:
                raise MCPError(
                    code=METHOD_NOT_FOUND,
                    message=f"{name[:80]} does not support task-augmented execution; call it without `task`.",
                )
            ttl = requested.get("ttl") if isinstance(requested, dict) else None
            ttl_ms = ttl if isinstance(ttl, int) and ttl > 0 else None
        try:
            task = await self._store.start(owner_of(ctx), name, lambda: call_next(ctx), modern=modern, ttl_ms=ttl_ms)
        except ToolFailure as failure:
            from mcp_sections.shared.serving.calls import failure_result

            refused = failure_result(failure).model_dump(mode="json", by_alias=True, exclude_none=True)
            return {**refused, "resultType": "complete"} if modern else refused
        if modern:
            return {"resultType": "task", **task.fields()}
        return {"task": task.fields()}


class UpdateTaskParams(RequestParams):
    task_id: str
    input_responses: dict[str, Any] | None = None


class TasksExtension(Extension):
    """The tasks/* methods (both eras) and the 2026-07-28 capability (`capabilities.extensions`)."""

    identifier = TASKS_EXTENSION

    def __init__(self, store: TaskStore) -> None:
        self._store = store

    def methods(self) -> list[MethodBinding]:
        both = LEGACY | MODERN
        return [
            MethodBinding("tasks/get", GetTaskRequestParams, self._get, protocol_versions=both),
            MethodBinding("tasks/cancel", CancelTaskRequestParams, self._cancel, protocol_versions=both),
            MethodBinding("tasks/result", GetTaskPayloadRequestParams, self._result, protocol_versions=LEGACY),
            MethodBinding("tasks/list", PaginatedRequestParams, self._list, protocol_versions=LEGACY),
            MethodBinding("tasks/update", UpdateTaskParams, self._update, protocol_versions=MODERN),
        ]

    async def _find(self, ctx: Any, task_id: str) -> TaskRecord:
        if is_modern(ctx):
            require_client_extension(ctx, TASKS_EXTENSION)
            headers = getattr(getattr(ctx, "request", None), "headers", None)
            named = headers.get(MCP_NAME_HEADER) if headers is not None else None
            if named is not None and decode_header_value(named) != task_id:  # SEP-2663: Mcp-Name is the task id
                raise MCPError(code=HEADER_MISMATCH, message="the Mcp-Name header does not match params.taskId")
        return await self._store.find(task_id, owner_of(ctx))

    async def _get(self, ctx: Any, params: GetTaskRequestParams) -> dict[str, Any]:
        task = await self._find(ctx, params.task_id)
        return task.detailed() if is_modern(ctx) else task.fields(modern=False)

    async def _cancel(self, ctx: Any, params: CancelTaskRequestParams) -> dict[str, Any]:
        task = await self._find(ctx, params.task_id)
        cancelled = await self._store.cancel(task)
        if is_modern(ctx):
            return {}  # an acknowledgement, also for a task that already ended
        if not cancelled:
            raise MCPError(
                code=INVALID_PARAMS, message=f"task {task.id[:64]!r} already ended ({task.status}); nothing to cancel."
            )
        return task.fields(modern=False)

    async def _result(self, ctx: Any, params: GetTaskPayloadRequestParams) -> dict[str, Any]:
        task = await self._find(ctx, params.task_id)
        task = await self._store.wait(task, ctx)  # carrying its work's requests for the client meanwhile
        if task.status == "completed" and task.result is not None:
            meta = {**(task.result.get("_meta") or {}), RELATED_TASK: {"taskId": task.id}}
            return {**task.result, "_meta": meta}
        if task.status == "failed" and task.error is not None:
            raise MCPError(code=int(task.error.get("code", INTERNAL_ERROR)), message=str(task.error.get("message")))
        raise MCPError(code=INVALID_PARAMS, message=f"task {task.id[:64]!r} was cancelled; it has no result.")

    async def _list(self, ctx: Any, params: PaginatedRequestParams) -> dict[str, Any]:
        return {"tasks": [task.fields(modern=False) for task in await self._store.owned(owner_of(ctx))]}

    async def _update(self, ctx: Any, params: UpdateTaskParams) -> dict[str, Any]:
        await self._find(ctx, params.task_id)  # no task here waits for input: the responses are acknowledged, unused
        return {}


@dataclass(frozen=True)
class SpecPolicy:
    """The task policy of a section's declared tools (`ToolSpec.long`)."""

    specs: dict[str, Any]

    def support(self, tool: str) -> Literal["optional"] | None:
        spec = self.specs.get(tool)
        return spec.task_support if spec is not None else None

    def runs_long(self, tool: str, arguments: dict[str, Any]) -> bool:
        spec = self.specs.get(tool)
        return spec is not None and spec.runs_long(arguments)
