"""Approval: with `approval = "destructive"`, the person is asked before a tool that can change things runs —
deleting, overwriting, running programs, starting sub-agents, acting on the outside world (the seeds' human in the
loop). Off by default. This module decides it, on every path, and gets the answer wherever the person is.

Which calls: a tool needs approval by its annotations — destructive, or open-world and not read-only
(`needs_approval_by_hints`); for a tool that runs another one (`call_section_tool`, an exposed tool, `plan_actions`)
by the annotations of what would actually run (`Effect`, described per call by the server that publishes it). The
paths: a client's call to a section served on its own, to the gateway's own tools, `call_section_tool`, an exposed
tool, `plan_actions` — every published tool goes through `Approvals.tool`, which returns it unchanged when no call of
it can need approval — and a sub-agent's call, asked about again mid-call when the sub-agent has read untrusted
content since its goal was approved (`approve_mid_call`, from the gate, `servers/pool/gate.py`). Where the user's
client connects, there the question is asked: the gateway asks for its own tools and starts its sections with
approval off, having asked already.

Before asking, a call is checked against its tool's policy where the tool declares a preflight
(`shared.serving.preflight`): a call that can never run (a program off the allow-list, a path outside the roots) is
refused at once, without a question. A tool whose calls differ in effect declares per-call annotations
(`ToolSpec.annotations_for`: fetch_web_page is a read unless it ingests), and those decide.

What is asked: everything that will run — every argument, long values summarised by their start, their length and an
explicit "…", paths in full, never cut silently (`describe_arguments`). Only a boolean `true` approves (`refusal`).

Where the answer comes from, in this order:
1. elicitation, where the client declares it: `elicitation/create` mid-call on 2025-11-25 and older (a call running
   as a 2025-11-25 task asks through the task: `input_required`, the question carried by the client's `tasks/result`),
   an `InputRequiredResult` on 2026-07-28 (the call comes back with the answer; `shared.serving.asking`). A question
   asked mid-call does not outlive its client, by the same rule as on the page (below, `watch_client`): withdrawn,
   the call declined, audited "asked by elicitation, withdrawn: the client that asked is gone";
2. otherwise, the status page, when this server has one open (`shared.serving.question_board`: the gateway's, over
   HTTP or beside a stdio gateway): the question waits there for the signed-in person, the client gets progress (and a
   log line) saying where to answer (a 2025-11-25 task is `input_required` meanwhile, its status message saying
   where), and a question nobody answers in time (`APPROVAL_SECONDS`, 5 minutes, unless
   the gateway was started with `--approval-timeout`) is declined: the call does not run. A question does not outlive
   its client (`shared.serving.asking.watch_client`, one watch for the page and elicitation): over Streamable HTTP,
   once the call's response stream is gone (the client closed the connection that carries it: given up, killed) and
   not resumed within `GONE_GRACE_SECONDS`, the question is withdrawn (declined, "the client that asked is gone");
   meanwhile the page shows it disconnected. Over stdio, as soon as the client no longer reads the server's output
   (`shared.serving.sdk_tools.STDIO_PEER`: it cannot come back, so no grace). (On 2026-07-28 HTTP a client gone
   cancels the call itself, which takes its question off the page.)
3. otherwise the call is refused, saying how to get asked (a client with elicitation, the gateway's status page) or
   how to turn approval off.
Every answer is audited, with how and by whom it was given (`<server>.approvals.jsonl` beside the server's own audit
log: `mcp-sections audit --server gateway.approvals`); the call itself leaves its own lines, refusals included.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from mcp_sections.shared.framework.clients import calling, current_user, user_of
from mcp_sections.shared.framework.tools import (
    Annotations,
    Progress,
    ToolContext,
    ToolResult,
    ToolSpec,
    UserAnswer,
    UserQuestion,
)
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.serving import client_log
from mcp_sections.shared.serving.asking import (
    AskedCall,
    Fallback,
    asked_unless_gone,
    asking_tool,
    client_gone,
    is_withdrawn,
    watch_client,
    withdrawn_answer,
)
from mcp_sections.shared.serving.audit import AuditLog, AuditRecord, argument_digest, user_named
from mcp_sections.shared.serving.calls import parse_arguments
from mcp_sections.shared.serving.preflight import Check, ServePreflight, preflight_failure
from mcp_sections.shared.serving.question_board import PendingQuestion, QuestionBoard
from mcp_sections.shared.serving.sdk_tools import tool_context, tool_definition
from mcp_sections.shared.serving.tasks import awaiting_input

Approval = Literal["off", "destructive"]
APPROVAL_SECONDS = 300.0
VALUE_CHARS = 200  # a longer text value is shown by its start, its length and "…"
PATH_ARGUMENTS = ("path", "paths", "source", "destination", "cwd", "directory", "file", "output_path", "root")
CANNOT_ASK = (
    "{tool} needs the user's approval (approval = 'destructive'), but this MCP client cannot ask the user "
    "(no elicitation) and this server has no status page to ask on. Use a client with elicitation, or the "
    'gateway (its status page asks for any client), or turn approval off: `approval = "off"` in the config '
    "file or MCP_SECTIONS_APPROVAL=off."
)
WAITING_PROGRESS_SECONDS = 10.0  # how often a call waiting on the status page says so again
BY_ELICITATION = "by the MCP client's user (elicitation)"


class ApprovalForm(BaseModel):
    """What the user answers."""

    approve: StrictBool = Field(description="Allow this call to run.")


def needs_approval_by_hints(hints: Mapping[str, Any] | Annotations | None, approval: Approval) -> bool:
    """Whether a tool with these annotations (MCP `annotations` hints, or our own) needs the user's approval.

    Unknown hints count as the MCP defaults: not read-only, destructive, open-world."""
    if approval != "destructive":
        return False
    if isinstance(hints, Annotations):
        read_only, destructive, open_world = hints.read_only, hints.destructive, hints.open_world
    else:
        hints = hints or {}
        read_only = bool(hints.get("readOnlyHint", False))
        destructive = bool(hints.get("destructiveHint", True))
        open_world = bool(hints.get("openWorldHint", True))
    return not read_only and (destructive or open_world)


@dataclass(frozen=True)
class Effect:
    """What one call would run, as its approval needs to know it: the annotations of what actually runs (a forwarded
    tool's, not the forwarding tool's), what to call it in the question, and its arguments worded for the person."""

    hints: Mapping[str, Any] | Annotations | None
    what: str
    wording: str


#: What one call of a tool that runs another tool, chosen per call, would run (its parsed input -> `Effect`).
Target = Callable[[Any], Effect]
#: How one call's arguments are worded for the person (its parsed input -> text).
Wording = Callable[[Any], str]


def approval_question(what: str, wording: str, timeout: float = APPROVAL_SECONDS) -> UserQuestion:
    return UserQuestion(message=f"Allow {what}? {wording}", schema=ApprovalForm, timeout_seconds=timeout)


def tool_named(name: str, title: str | None) -> str:
    """A tool as a question names it mid-sentence: its name, then its title with a lower-case first letter unless its
    first word is an acronym ("call_section_tool (call a section's tool)", "run_npm_script (NPM script)")."""
    if not title or title == name:
        return name
    first = title.split(" ", 1)[0]
    if not any(letter.isupper() for letter in first[1:]):
        title = title[0].lower() + title[1:]
    return f"{name} ({title})"


def refusal(tool: str, answer: UserAnswer | None, where: str = "") -> ToolFailure | None:
    """None when the call may run (approved with a boolean `true`, or no question was needed); else why not."""
    if answer is None or _approved(answer):
        return None
    what = (
        "did not approve"
        if answer.action == "accept"
        else {"decline": "declined", "cancel": "cancelled"}.get(
            answer.action, f"did not answer within {answer.waited_seconds or APPROVAL_SECONDS:.0f} s"
        )
    )
    return ToolFailure(
        ErrorCode.PERMISSION_DENIED,
        f"the user {what} {tool}{where}; it did not run. Ask the user what to do instead, or change the request.",
    )


def _approved(answer: UserAnswer) -> bool:
    return answer.action == "accept" and (answer.content or {}).get("approve") is True


def _outcome(answer: UserAnswer) -> str:
    if _approved(answer):
        return "APPROVED"
    if answer.action == "accept":
        return "NOT_APPROVED"
    return {"decline": "DECLINED", "cancel": "CANCELLED"}.get(answer.action, "TIMED_OUT")


class _NoState:
    """An approval question needs no section state (the tool's own question may)."""

    async def aget(self) -> None:
        return None


# The server answering the current tools/call (set by `Approvals.serve`): where a question asked deeper down the
# call (a sub-agent's, in the gate) can wait, and who asked.
_current: ContextVar[tuple[Approvals, str] | None] = ContextVar("mcp_sections_approvals", default=None)
# The answer the status page gave in this call (its record is written there, with who answered).
_from_board: ContextVar[UserAnswer | None] = ContextVar("mcp_sections_board_answer", default=None)


class Approvals:
    """One server's approval (see the module docstring): which of its tools ask, and where the answers come from."""

    def __init__(self, mode: Approval, audit: AuditLog, board: QuestionBoard | None = None) -> None:
        """`audit`: where answers are recorded (`<server>.approvals`); `board`: the server's status page questions."""
        self.mode = mode
        self.audit = audit
        self.board = board
        self._asking: dict[str, tuple[ToolSpec, Target | None, Wording | None]] = {}
        self._checks: dict[str, Check] = {}  # the tools' preflights, for a gateway's `mcp-sections/preflight`

    def serve(self, server: MCPServer) -> None:
        """Make this the approval of every tools/call `server` answers (before `TaskCalls`: a task inherits it), and
        answer a gateway's preflight requests where this server does not ask itself (approval off)."""
        server.middleware.append(_InRequest(self))
        server.middleware.append(ServePreflight(self._checks, enabled=self.mode == "off"))

    def tool(
        self,
        spec: ToolSpec,
        plain: Tool,
        call: AskedCall,
        *,
        target: Target | None = None,
        wording: Wording | None = None,
        state: Any = None,
        preflight: Check | None = None,
    ) -> Tool:
        """The published tool of `spec`: `plain` when no call of it can need approval (or approval is off); else the
        same tool, as `plain` publishes it, asking first. `target`: what a call of a tool that runs another one, chosen
        per call, would run; `wording`: how a call's arguments are shown (default: every argument). A tool with a
        question of its own (`asks_user`) asks it (`state`: what it is computed from). `preflight`: the policy check
        run before asking (default: the tool's own, `spec.preflight`, on `state`)."""
        published = tool_definition(plain)
        if preflight is None and spec.preflight is not None and state is not None:
            preflight = partial(preflight_failure, spec, state=state)
        if preflight is not None:
            self._checks[spec.name] = preflight
        if spec.asks_user is not None:
            self._asking[spec.name] = (spec, None, None)
            return asking_tool(spec, state or _NoState(), call, published=published)
        if self.mode == "off" or (target is None and not needs_approval_by_hints(spec.annotations, self.mode)):
            return plain

        def ask(params: Any, _: Any) -> UserQuestion | None:
            effect = self._effect(spec, params, target, wording)
            if not needs_approval_by_hints(effect.hints, self.mode):
                return None
            return approval_question(effect.what, effect.wording)

        async def approved(
            arguments: dict[str, Any], ctx: ToolContext, answer: UserAnswer | None, failure: ToolFailure | None
        ) -> CallToolResult:
            board_answer = _from_board.get()
            if answer is not None and answer is not board_answer:
                self.record(spec.name, arguments, ctx.caller, answer, _elicited(answer))
            where = " on the status page" if answer is not None and answer is board_answer else ""
            refused = failure or _withdrawal(spec.name, answer) or refusal(spec.name, answer, where)
            return await call(arguments, ctx, None, refused)

        self._asking[spec.name] = (spec, target, wording)
        return asking_tool(
            replace(spec, asks_user=ask),
            _NoState(),
            approved,
            cannot_ask=CANNOT_ASK.format(tool=spec.name),
            published=published,
            fallback=self._on_board_of(spec.name),
            preflight=preflight,
        )

    def asks(self, tool: str, arguments: dict[str, Any]) -> bool:
        """Whether this call asks the person before it runs (on 2026-07-28 a long one becomes a task once answered)."""
        entry = self._asking.get(tool)
        if entry is None:
            return False
        spec, target, wording = entry
        if spec.asks_user is not None or (target is None and spec.annotations_of is None):
            return True
        try:
            params = parse_arguments(spec.input_model, arguments)
        except ToolFailure:
            return False  # the call fails at once
        return needs_approval_by_hints(self._effect(spec, params, target, wording).hints, self.mode)

    @staticmethod
    def _effect(spec: ToolSpec, params: Any, target: Target | None, wording: Wording | None) -> Effect:
        if target is not None:
            return target(params)
        shown = wording(params) if wording is not None else describe_arguments(_dump(params))
        return Effect(spec.annotations_for(params), tool_named(spec.name, spec.title), shown)

    # -- the status page -----------------------------------------------------------------------------------------

    def _on_board_of(self, tool: str) -> Fallback:
        async def on_board(question: UserQuestion, arguments: dict[str, Any], context: Context) -> UserAnswer | None:
            ctx = tool_context(context)
            current = _current.get()
            asker = current[1] if current is not None else "the MCP client"
            answer = await self.on_board(question, tool, arguments, ctx.caller, asker, ctx)
            _from_board.set(answer)
            return answer

        return on_board

    async def on_board(
        self,
        question: UserQuestion,
        tool: str,
        arguments: dict[str, Any],
        caller: tuple[int, str | None],
        asker: str,
        ctx: ToolContext | None,
    ) -> UserAnswer | None:
        """The person's answer on the status page (None when this server has none open); the client is told where
        to answer, and the answer is audited with who gave it. A question whose client is gone is withdrawn: a
        decline (`withdrawn` then says why). ToolFailure when too many questions wait already."""
        board = self.board
        if board is None or board.url is None:
            return None
        depth, agent = caller
        user = current_user()
        owner = user.id if user is not None and user.authenticated else None
        shown = f"sub-agent {agent} (depth {depth}) of {asker}" if agent else asker
        pending = board.put(tool, question.message, shown, owner)
        where = f"open {board.url}" + (f" ({board.sign_in})" if board.sign_in else "")
        text = (
            f"{tool} needs your approval: {where} and approve or decline question {pending.id} "
            f"(declined after {board.timeout_seconds:.0f} s)"
        )
        await client_log.say(self.audit.server.removesuffix(".approvals"), tool, "warning", "approval", text)
        try:
            with awaiting_input(text):  # a 2025-11-25 task is input_required meanwhile
                async with anyio.create_task_group() as group:
                    group.start_soon(_still_waiting, pending, text, ctx.report_progress if ctx is not None else None)
                    if ctx is not None:
                        group.start_soon(watch_client, ctx.client_connected, pending, partial(board.withdraw, pending))
                    outcome = await board.wait(pending)
                    group.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            gave_up = UserAnswer(action="cancel", waited_seconds=time.monotonic() - pending.asked)
            self.record(tool, arguments, caller, gave_up, "the call was given up while its question waited on the page")
            raise
        waited = time.monotonic() - pending.asked
        if outcome == "timeout":
            answer = UserAnswer(action="timeout", waited_seconds=board.timeout_seconds)
            how = f"asked on the status page ({board.url}); nobody answered within {board.timeout_seconds:.0f} s"
        elif outcome == "withdrawn":
            answer = withdrawn_answer(waited)
            how = f"withdrawn from the status page: {client_gone()}"
        else:
            answer = UserAnswer(action="accept", content={"approve": outcome == "approve"}, waited_seconds=waited)
            if outcome == "decline":
                answer = UserAnswer(action="decline", waited_seconds=waited)
            how = f"on the status page by {pending.answered_by}"
        self.record(tool, arguments, caller, answer, how)
        return answer

    def record(
        self, tool: str, arguments: dict[str, Any], caller: tuple[int, str | None], answer: UserAnswer, how: str
    ) -> None:
        """One audit line per answer: the tool, the arguments' digest, the outcome, how and by whom, how long."""
        self.audit.write(
            AuditRecord(
                server=self.audit.server,
                tool=tool,
                outcome=_outcome(answer),
                duration_ms=answer.waited_seconds * 1000,
                arguments_digest=argument_digest(arguments),
                depth=caller[0],
                agent_id=caller[1],
                message=how if answer.action == "timeout" else f"{how} after {answer.waited_seconds:.0f} s",
                call=f"approval-{time.time_ns():x}",
                user=user_named(),
            )
        )


async def _still_waiting(pending: PendingQuestion, text: str, progress: Progress | None) -> None:
    """Progress while a question waits on the status page (the client knows where, and does not give up): the seconds
    waited so far, which increase as MCP requires (what the tool reports next counts on from there)."""
    if progress is None:
        return
    while True:
        left = pending.seconds_left
        try:
            await progress(round(time.monotonic() - pending.asked), None, f"{text}; {left:.0f} s left")
        except Exception:  # progress is best effort
            return
        await anyio.sleep(WAITING_PROGRESS_SECONDS)


def _withdrawal(tool: str, answer: UserAnswer | None) -> ToolFailure | None:
    """The failure of a call whose question was withdrawn because its client is gone (None for any other answer)."""
    if not is_withdrawn(answer):
        return None
    return ToolFailure(
        ErrorCode.PERMISSION_DENIED,
        f"{tool} did not run: its approval question was withdrawn, {client_gone()}. Call "
        "it again, and stay connected until the question is answered.",
    )


def _elicited(answer: UserAnswer) -> str:
    """How an answer to a question asked by elicitation was given, for its audit line."""
    return f"asked by elicitation, withdrawn: {client_gone()}" if is_withdrawn(answer) else BY_ELICITATION


class _InRequest:
    """Middleware: the approval of the server answering each tools/call, and who sent it — its user, who is
    `shared.framework.clients.current_user()` for the whole call (audit, trace, the tools its scopes allow), and the
    client program."""

    def __init__(self, approvals: Approvals) -> None:
        self._approvals = approvals

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if getattr(ctx, "method", None) != "tools/call":
            return await call_next(ctx)
        user = user_of(ctx)
        params = getattr(getattr(ctx, "session", None), "client_params", None)
        info = params.client_info if params is not None else None
        program = f"{info.name} {info.version}" if info else "the MCP client"
        token = _current.set((self._approvals, f"{user.name} with {program}" if user.authenticated else program))
        try:
            with calling(user):
                return await call_next(ctx)
        finally:
            _current.reset(token)


async def approve_mid_call(
    name: str,
    hints: Mapping[str, Any] | Annotations | None,
    arguments: dict[str, Any],
    ctx: ToolContext | None,
    *,
    caller: tuple[int, str | None],
    situation: str,
    reason: str,
    mode: Approval,
    preflight: Callable[[], Awaitable[ToolFailure | None]] | None = None,
) -> None:
    """A call asked about while another runs (a tainted sub-agent's, from the gate): nothing when it needs no approval
    or is approved; ToolFailure when refused, or when nobody can be asked (no elicitation mid-call, no status page).
    `caller`: who makes the call (a sub-agent's depth and id); `situation` opens the question (who wants what, and why
    it is asked again); `reason` says why in a refusal; `preflight`: the policy check run before asking (its refusal
    is the call's, unasked)."""
    if not needs_approval_by_hints(hints, mode):
        return
    refused_first = await preflight() if preflight is not None else None
    if refused_first is not None:
        raise refused_first
    question = approval_question(name, f"{situation} {describe_arguments(arguments)}")
    current = _current.get()
    answer = await asked_unless_gone(partial(ctx.ask, question), ctx.client_connected) if ctx is not None else None
    where = ""
    if answer is not None and current is not None:
        current[0].record(name, arguments, caller, answer, _elicited(answer))
    elif answer is None and current is not None:
        answer = await current[0].on_board(question, name, arguments, caller, current[1], ctx)
        where = " on the status page"
    if answer is None:
        raise ToolFailure(
            ErrorCode.PERMISSION_DENIED,
            f"{name} needs the user's approval: {reason}, and the user cannot be asked during "
            "this call (the client connection allows no question mid-call, and there is no status page). It did not "
            "run; report what you wanted to do instead.",
        )
    refused = _withdrawal(name, answer) or refusal(name, answer, where)
    if refused is not None:
        raise refused


def describe_arguments(arguments: Mapping[str, Any], limit: int = VALUE_CHARS) -> str:
    """Every argument, as the user must see it to decide: paths in full, other texts longer than `limit` summarised by
    their start, their length and an explicit "…", nested values likewise."""
    if not arguments:
        return "No arguments."
    return "Arguments: " + "; ".join(f"{key} = {_shown(key, value, limit)}" for key, value in arguments.items())


def _shown(key: str, value: Any, limit: int) -> str:
    if isinstance(value, str):
        if key in PATH_ARGUMENTS or len(value) <= limit:
            return json.dumps(value, ensure_ascii=False)
        start = json.dumps(value[:limit], ensure_ascii=False)[:-1]
        return f'{start}…" ({len(value)} characters in all)'
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_shown(str(k), v, limit)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_shown(key, item, limit) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False, default=str)


class AnyArguments(BaseModel):
    """The arguments of a tool known only by its JSON schema (a third-party section's): checked by the gate."""

    model_config = ConfigDict(extra="allow")


class _Passed(ToolResult):
    pass


def exposed_spec(name: str, definition: Mapping[str, Any]) -> ToolSpec:
    """A `ToolSpec` standing for a tool published from another server's definition (so that it can ask)."""
    hints = definition.get("annotations") or {}
    return ToolSpec(
        name=name,
        title=str(definition.get("title") or name),
        description=str(definition.get("description") or name),
        annotations=Annotations(
            read_only=bool(hints.get("readOnlyHint", False)),
            destructive=bool(hints.get("destructiveHint", True)),
            idempotent=bool(hints.get("idempotentHint", False)),
            open_world=bool(hints.get("openWorldHint", True)),
        ),
        input_model=AnyArguments,
        output_model=_Passed,
        function=_never,
        wants_state=False,
        wants_ctx=False,
        is_async=True,
    )


async def _never(params: Any) -> Any:  # pragma: no cover - the gate runs exposed tools
    raise AssertionError("an exposed tool runs through the gateway's gate")


def _dump(params: Any) -> dict[str, Any]:
    try:
        dumped = params.model_dump(mode="json", exclude_defaults=True)
    except (AttributeError, TypeError, ValueError):
        return {"arguments": str(params)}
    return dumped if isinstance(dumped, dict) else {"arguments": dumped}
