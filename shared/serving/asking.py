"""Tools that ask the user one question before they run: MCP form elicitation in both protocol eras.

A call that runs as a 2025-11-25 task asks from the task's work, whose request was answered already: through the
task (`shared.serving.tasks.ask_client`: the task `input_required`, the question carried by the client's
`tasks/result`). Where that cannot carry it (no back-channel), the question goes where a client without elicitation
has it asked (the status page).

A question does not outlive its client, however it is asked (elicitation here, the status page in
`shared.serving.approval`): `watch_client` withdraws it once the client has been gone `GONE_GRACE_SECONDS` — over
Streamable HTTP the call's response stream closed and was not resumed, over stdio at once (nobody reads the server's
output: it cannot come back). A withdrawn question is declined (`withdrawn_answer`), so nothing runs for nobody.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from functools import partial
from typing import Any, Literal, Protocol, TypeVar

import anyio
import anyio.to_thread
from mcp.server.elicitation import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    render_elicitation_schema,
)
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve, build_resolver_plans
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp_types import CallToolResult, ElicitRequest, ElicitRequestFormParams, ElicitResult, ToolAnnotations
from pydantic import ValidationError

from mcp_sections.shared.framework.tools import ToolContext, ToolSpec, UserAnswer, UserQuestion
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.serving.audit import argument_digest
from mcp_sections.shared.serving.calls import failure_result, parse_arguments
from mcp_sections.shared.serving.preflight import Check
from mcp_sections.shared.serving.sdk_tools import (
    STDIO_PEER,
    RawArguments,
    response_stream_open,
    sdk_annotations,
    spec_schemas,
    tool_context,
    uses_input_required,
)
from mcp_sections.shared.serving.tasks import ask_client, asks_through_tasks

logger = logging.getLogger("mcp_sections.asking")


# The question is a resolver (`Annotated[..., Resolve(fn)]` returning `Elicit(...)`), so the SDK carries it
# the way the connection needs: on 2025-11-25 it sends `elicitation/create` mid-call and waits; on 2026-07-28
# it returns an `InputRequiredResult` and the client calls again with the answer. The timeout is enforced
# per era: a cancel scope around the wait (legacy), or the time between handing the question out and the
# client coming back with its answer (2026-07-28: the server holds nothing while the user thinks).

_answer_window: ContextVar[_AnswerWindow | None] = ContextVar("mcp_sections_answer_window", default=None)
ASKED_MEMORY_SECONDS = 3600.0

# How long a question waits for its client to come back once the stream that would carry its answer is gone: the
# suite tells clients to reconnect after RETRY_MS (2 s) and the official SDK tries twice, so a client that resumes is
# back within seconds; 20 s leaves room for a slow network, and withdraws a dead client's question well before a
# person is likely to act on it (the status page shows it disconnected meanwhile).
GONE_GRACE_SECONDS = 20.0
CLIENT_CHECK_SECONDS = 1.0  # how often a waiting question looks whether its client is still there
GONE = (
    "the client that asked is gone (the connection that would carry the answer closed, and was not resumed "
    "within {grace:.0f} s)"
)
GONE_OVER_STDIO = "the client that asked is gone (it no longer reads this server's output: stdio cannot resume)"
T = TypeVar("T")


def gone_grace() -> float:
    """How long a gone client may take to come back: over stdio it cannot (`STDIO_PEER` set), so no time at all."""
    return 0.0 if STDIO_PEER.get() is not None else GONE_GRACE_SECONDS


def client_gone() -> str:
    """Why a question was withdrawn, for the audit and the call's failure."""
    return GONE_OVER_STDIO if STDIO_PEER.get() is not None else GONE.format(grace=GONE_GRACE_SECONDS)


class Watched(Protocol):
    """A question whose client is watched: since when the client is gone, and how long it may stay gone."""

    disconnected_at: float | None
    withdrawn_after: float | None


async def watch_client(connected: Callable[[], bool | None], question: Watched, withdraw: Callable[[], None]) -> None:
    """Call `withdraw` once the client of `question` has been gone `gone_grace()`; meanwhile `disconnected_at` says
    since when (None again when the client comes back: a resumed stream keeps its question). Returns at once where
    nothing tells (`connected()` None). Run it beside the wait for the answer, and cancel it once that ends."""
    grace = question.withdrawn_after = gone_grace()
    while True:
        there = connected()
        if there is None:
            return  # nothing tells, here: a client gone ends the call by itself
        now = time.monotonic()
        if there:
            question.disconnected_at = None
        elif question.disconnected_at is None:
            question.disconnected_at = now
        if question.disconnected_at is not None and now - question.disconnected_at >= grace:
            withdraw()
            return
        await anyio.sleep(CLIENT_CHECK_SECONDS)


# The answer that withdrew this call's question, its client being gone (a decline nobody gave).
_withdrawn: ContextVar[UserAnswer | None] = ContextVar("mcp_sections_withdrawn_answer", default=None)


def withdrawn_answer(waited: float) -> UserAnswer:
    """The decline of a question withdrawn after `waited` seconds, its client gone (`is_withdrawn` tells it)."""
    answer = UserAnswer(action="decline", waited_seconds=waited)
    _withdrawn.set(answer)
    return answer


def is_withdrawn(answer: UserAnswer | None) -> bool:
    """Whether `answer` is this call's question withdrawn (`withdrawn_answer`), not a person's."""
    return answer is not None and answer is _withdrawn.get()


async def beside(watch: Callable[[], Coroutine[Any, Any, None]], work: Callable[[], Awaitable[T]]) -> T:
    """What `work()` returns or raises (as is, never in an exception group), with `watch()` running beside it until
    then."""
    error: Exception | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        try:
            done = await work()
        except Exception as exc:
            error = exc
        finally:
            group.cancel_scope.cancel()
    if error is not None:
        raise error
    return done


class _Question:
    """A question asked mid-call (`asked_unless_gone`), as `watch_client` sees it."""

    def __init__(self) -> None:
        self.disconnected_at: float | None = None
        self.withdrawn_after: float | None = None


async def asked_unless_gone(
    ask: Callable[[], Awaitable[UserAnswer | None]], connected: Callable[[], bool | None]
) -> UserAnswer | None:
    """`ask()`'s answer, or `withdrawn_answer` once its client is gone (`watch_client`): a question asked mid-call by
    elicitation (a sub-agent's call, from the gate)."""
    started = time.monotonic()
    with anyio.CancelScope() as scope:
        return await beside(partial(watch_client, connected, _Question(), scope.cancel), ask)
    return withdrawn_answer(time.monotonic() - started)


class _AnswerWindow:
    """One tools/call of an asking tool: the cancel scope the legacy wait runs in, how long it lasted, and whether its
    client left meanwhile (the question then withdrawn)."""

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.asked_at: float | None = None
        self.timeout: float | None = None
        self.waited: float | None = None
        self.disconnected_at: float | None = None
        self.withdrawn_after: float | None = None
        self.withdrawn = False
        self._opened = anyio.Event()
        self._watching = anyio.CancelScope()

    def open(self, timeout: float | None) -> None:
        self.asked_at = time.monotonic()
        self.timeout = timeout
        if timeout is not None:
            self.scope.deadline = anyio.current_time() + timeout
        self._opened.set()

    def close(self) -> float:
        """The answer arrived (or no question was needed): stop the clock, return how long the user took."""
        self.scope.deadline = math.inf
        self._watching.cancel()
        if self.waited is None and self.asked_at is not None:
            self.waited = time.monotonic() - self.asked_at
        return self.waited or 0.0

    async def watch(self, connected: Callable[[], bool | None]) -> None:
        """While the question is open (legacy era: the server waits for the answer), withdraw it if its client goes."""
        with self._watching:
            await self._opened.wait()
            await watch_client(connected, self, self._withdraw)

    def _withdraw(self) -> None:
        if self.waited is None:  # still unanswered
            self.withdrawn = True
            self.scope.cancel()


class _AskedQuestions:
    """2026-07-28: when each question was handed to the client, until the client comes back with its answer."""

    def __init__(self) -> None:
        self._asked: dict[tuple[str, str], deque[float]] = {}
        self._lock = threading.Lock()

    def asked(self, key: tuple[str, str]) -> None:
        now = time.monotonic()
        with self._lock:
            for other in [k for k, times in self._asked.items() if now - times[-1] > ASKED_MEMORY_SECONDS]:
                del self._asked[other]
            self._asked.setdefault(key, deque()).append(now)

    def answered(self, key: tuple[str, str]) -> float | None:
        """Seconds since the question was handed out (None when this server did not hand it out)."""
        with self._lock:
            times = self._asked.get(key)
            if not times:
                return None
            asked_at = times.popleft()
            if not times:
                del self._asked[key]
        return time.monotonic() - asked_at


class _NotAsked:
    """A resolver outcome that is not the user's answer: a failure to report, or an answer decided here."""

    def __init__(self, failure: ToolFailure | None = None, answer: UserAnswer | None = None) -> None:
        self.failure = failure
        self.answer = answer


def _can_elicit(context: Context) -> bool:
    capabilities = context.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def _question_for(spec: ToolSpec, arguments: dict[str, Any], value: Any) -> UserQuestion | _NotAsked:
    """The question `spec.asks_user` builds for a call, or what to do instead (nothing to ask, a failure to report)."""
    assert spec.asks_user is not None
    try:
        user_question = spec.asks_user(parse_arguments(spec.input_model, arguments), value)
    except ToolFailure as failure:
        return _NotAsked(failure)
    except Exception:
        logger.exception("the question of tool %s could not be built", spec.name)
        return _NotAsked(
            ToolFailure(ErrorCode.EXECUTION_FAILED, f"{spec.name} failed with an internal error (see the log).")
        )
    return _NotAsked() if user_question is None else user_question


def _user_answer(answer: Any, waited: float) -> tuple[UserAnswer | None, ToolFailure | None]:
    """What the SDK resolved for `answer` (an elicitation's outcome, or one decided here), as the call's answer."""
    if isinstance(answer, AcceptedElicitation) and isinstance(answer.data, _NotAsked):
        return answer.data.answer, answer.data.failure
    if isinstance(answer, AcceptedElicitation):
        content = answer.data.model_dump(mode="json") if hasattr(answer.data, "model_dump") else answer.data
        return UserAnswer(action="accept", content=content, waited_seconds=waited), None
    action: Literal["decline", "cancel"] = "decline" if isinstance(answer, DeclinedElicitation) else "cancel"
    assert isinstance(answer, DeclinedElicitation | CancelledElicitation)
    return UserAnswer(action=action, waited_seconds=waited), None


class _AskingTool(Tool):
    """An SDK tool whose `answer` parameter is resolved by asking the user; a legacy wait may time out, or end
    withdrawn when the client goes (`watch_client`)."""

    unanswered: Any = None

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        window = _AnswerWindow()
        token = _answer_window.set(window)
        try:
            watch = partial(window.watch, partial(response_stream_open, context))
            return await beside(watch, partial(self._answered, window, arguments, context, convert_result))
        finally:
            _answer_window.reset(token)

    async def _answered(self, window: _AnswerWindow, arguments: dict[str, Any], context: Any, convert: bool) -> Any:
        try:
            with window.scope:
                return await super().run(arguments, context, convert)
        except ToolError:  # raised while resolving the answer (the body itself never raises): a bad answer
            logger.info("tool %s: the client's answer does not fit the question", self.name, exc_info=True)
            return failure_result(_misfit(self.name))
        # only reached when the wait for the answer ended unanswered (legacy era): timed out, or withdrawn
        if window.withdrawn:
            answer = withdrawn_answer(time.monotonic() - (window.asked_at or time.monotonic()))
        else:
            answer = UserAnswer(action="timeout", waited_seconds=window.timeout or 0.0)
        result = await self.unanswered(dict(arguments), context, answer)
        return self.fn_metadata.convert_result(result) if convert else result


#: How an asking tool hands a call on: its arguments, its context, the user's answer (None: nothing was asked) and
#: the failure decided before it could run (no way to ask, a question that could not be built). The callee records
#: and returns that failure, so that a call refused before running is audited like every other call.
AskedCall = Callable[[dict[str, Any], ToolContext, UserAnswer | None, ToolFailure | None], Awaitable[CallToolResult]]

#: Where else a question can be answered when the client cannot elicit (the status page: `shared.serving.approval`):
#: the question, the call's arguments and context -> the answer, or None when there is nowhere else either.
Fallback = Callable[[UserQuestion, dict[str, Any], Context], Awaitable[UserAnswer | None]]


def asking_tool(
    spec: ToolSpec,
    state: Any,
    call: AskedCall,
    cannot_ask: str | None = None,
    published: dict[str, Any] | None = None,
    fallback: Fallback | None = None,
    preflight: Check | None = None,
) -> Tool:
    """The SDK tool of a tool that asks the user first. `spec.asks_user` may return None: no question for this
    call, which then runs with `answer=None`. On a client without elicitation the question goes to `fallback`, else
    the call is refused (`cannot_ask` words why). `published`: the tools/list entry to publish it as (its schemas,
    title, description and annotations), else the declaration's. `preflight`: what refuses a call before it is
    asked about (`shared.serving.preflight`): such a call answers that failure, unasked."""
    asked = _AskedQuestions()

    async def question(arguments: dict[str, Any], context: Context) -> Any:
        try:
            value = await state.aget()
        except Exception:  # the body reports it, as for any tool
            return _NotAsked()
        user_question = _question_for(spec, arguments, value)
        if isinstance(user_question, _NotAsked):
            return user_question
        refused = await preflight(arguments) if preflight is not None else None
        if refused is not None:
            return _NotAsked(refused)
        elsewhere = partial(_without_elicitation, spec.name, user_question, arguments, context, fallback, cannot_ask)
        if not _can_elicit(context):
            return await elsewhere()
        late = _timed(asked, spec.name, arguments, context, user_question.timeout_seconds)
        if late is None and asks_through_tasks():
            return await _asked_in_task(spec.name, user_question, elsewhere)
        return late or Elicit(user_question.message, user_question.schema)

    async def invoke(arguments: dict[str, Any], context: Context, answer: Any = None) -> CallToolResult:
        window = _answer_window.get()
        waited = window.close() if window is not None else 0.0
        user_answer, failure = _user_answer(answer, waited)
        return await call(arguments, tool_context(context), user_answer, failure)

    async def unanswered(arguments: dict[str, Any], context: Context, answer: UserAnswer) -> CallToolResult:
        return await call(arguments, tool_context(context), answer, None)

    resolved = {"answer": (Resolve(question), True)}
    title, description, input_schema, output_schema, annotations = _shape(spec, published)
    return _AskingTool(
        fn=invoke,
        name=spec.name,
        title=title,
        description=description,
        parameters=input_schema,
        fn_metadata=FuncMetadata(arg_model=RawArguments, output_schema=output_schema),
        is_async=True,
        context_kwarg="context",
        resolved_params=resolved,
        resolver_plans=build_resolver_plans(resolved, {"arguments"}),
        annotations=annotations,
        unanswered=unanswered,
    )


def _timed(
    asked: _AskedQuestions, tool: str, arguments: dict[str, Any], context: Context, timeout: float | None
) -> _NotAsked | None:
    """Start (or read) the clock of a question about to be asked; a timeout answer when the client came back too late.

    Each round of a 2026-07-28 call is a request of its own (no connection to key on): the same question asked twice
    at once is told apart only by order, which is close enough for a timeout."""
    window = _answer_window.get()
    if not uses_input_required(context):
        if window is not None:
            window.open(timeout)
        return None
    key = (tool, argument_digest(arguments))
    if not context.input_responses:
        asked.asked(key)
        return None
    waited = asked.answered(key)  # the client is back with the answer
    if waited is not None and timeout is not None and waited > timeout:
        return _NotAsked(answer=UserAnswer(action="timeout", waited_seconds=waited))
    if window is not None:
        window.waited = waited or 0.0
    return None


def _misfit(name: str) -> ToolFailure:
    return ToolFailure(
        ErrorCode.VALIDATION_FAILED,
        f"the answer to {name}'s question does not fit the form (e.g. an unknown option); ask again.",
    )


async def _asked_in_task(name: str, question: UserQuestion, elsewhere: Callable[[], Awaitable[_NotAsked]]) -> _NotAsked:
    """The answer to a question of a call running as a 2025-11-25 task: by elicitation through the task (its
    `tasks/result`), or `elsewhere()` when that request cannot reach the client. Its timeout is the legacy wait's
    (`_AnswerWindow`, opened by `_timed`)."""
    started = time.monotonic()
    params = ElicitRequestFormParams(
        message=question.message, requested_schema=render_elicitation_schema(question.schema)
    )
    waiting = f"input required: call tasks/result to receive {name}'s question for the user. {question.message}"
    try:
        result = await ask_client(ElicitRequest(params=params), ElicitResult, waiting)
    except NoBackChannelError:
        logger.info("tool %s: the task's tasks/result cannot carry its question; asked elsewhere", name)
        return await elsewhere()
    except MCPError:  # the client refused the request: as a cancel (`SdkChannel.ask` does the same)
        return _NotAsked(answer=UserAnswer(action="cancel", waited_seconds=time.monotonic() - started))
    except Exception:
        logger.info("tool %s: the client's answer is not an elicitation result", name, exc_info=True)
        return _NotAsked(_misfit(name))
    waited = time.monotonic() - started
    if result.action != "accept":
        return _NotAsked(answer=UserAnswer(action=result.action, waited_seconds=waited))
    try:
        content = question.schema.model_validate(result.content or {}).model_dump(mode="json")
    except ValidationError:
        return _NotAsked(_misfit(name))
    return _NotAsked(answer=UserAnswer(action="accept", content=content, waited_seconds=waited))


async def _without_elicitation(
    name: str,
    question: UserQuestion,
    arguments: dict[str, Any],
    context: Context,
    fallback: Fallback | None,
    cannot_ask: str | None,
) -> _NotAsked:
    """A question this client cannot be asked: answered elsewhere (`fallback`), else the call is refused."""
    if fallback is not None:
        try:
            elsewhere = await fallback(question, arguments, context)
        except ToolFailure as failure:
            return _NotAsked(failure)
        if elsewhere is not None:
            return _NotAsked(answer=elsewhere)
    return _NotAsked(
        ToolFailure(
            ErrorCode.DEPENDENCY_ERROR,
            cannot_ask
            or f"{name} must ask the user, but this MCP client does not support elicitation (form mode). "
            "Use a client that declares the elicitation capability, or continue without asking the user.",
        )
    )


def _shape(
    spec: ToolSpec, published: dict[str, Any] | None
) -> tuple[str, str, dict[str, Any], dict[str, Any] | None, ToolAnnotations]:
    """Title, description, schemas and annotations: as `published` (the plain tool, or another server, publishes
    it), else the declaration's."""
    if published is None:
        input_schema, output_schema = spec_schemas(spec)
        return spec.title, spec.description, input_schema, output_schema, sdk_annotations(spec)
    return (
        published.get("title", spec.title),
        published.get("description", spec.description),
        published.get("inputSchema") or {"type": "object"},
        published.get("outputSchema") or None,
        ToolAnnotations.model_validate(published.get("annotations") or {}),
    )
