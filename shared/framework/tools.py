"""Tool declarations: a typed function plus one frozen metadata object.

A tool is a plain function that takes one pydantic input model (`params`) and returns a
`ToolResult`. It may also ask for the section's state (`state`), for the call context
(`ctx`) and, when declared with `asks_user=`, for the user's answer to one question (`answer`),
by those parameter names. `@tool` attaches a `ToolSpec` and returns the function
unchanged, so it stays directly callable in tests; registration on a server is a separate step
(`shared.serving.server`).
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_type_hints

from pydantic import BaseModel, ConfigDict, PrivateAttr

if TYPE_CHECKING:
    from mcp_types import CreateMessageRequestParams, CreateMessageResult, CreateMessageResultWithTools

logger = logging.getLogger("mcp_sections.tools")

SPEC_ATTRIBUTE = "__mcp_tool_spec__"
ALLOWED_PARAMETERS = ("params", "state", "ctx", "answer")
MAX_EXAMPLES = 6
MAX_EXAMPLE_LENGTH = 160


class ToolInput(BaseModel):
    """Base of every tool input model: unknown arguments and non-finite numbers (NaN, ±inf) are refused."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ToolResult(BaseModel):
    """Base of every tool output model. `render_text` is the short text shown beside the structured data.

    Built from the domain code's outcome objects with `Result.model_validate(outcome)` (attributes are read
    by field name), never copied field by field.
    """

    model_config = ConfigDict(from_attributes=True)
    _attachments: list[Any] = PrivateAttr(default_factory=list)

    def render_text(self) -> str:
        return json.dumps(self.model_dump(mode="json", exclude_none=True), ensure_ascii=False)

    def extra_content(self) -> list[Any]:
        """Extra MCP content blocks (e.g. an image) sent after the text rendering."""
        return []

    def attach(self, data: str | bytes, *, name: str, mime_type: str, description: str | None = None) -> str:
        """Send a bulky part by reference (`shared.framework.resources`): a `resource_link` block after the content, its
        bytes served by `resources/read`. Returns its URI, for the structured content to keep."""
        from mcp_sections.shared.framework.resources import Attachment

        attachment = Attachment.new(data, name=name, mime_type=mime_type, description=description)
        self._attachments.append(attachment)
        return attachment.uri

    def attachments(self) -> list[Any]:
        """The parts sent by reference (`attach`)."""
        return list(self._attachments)


class ClientChannel(Protocol):
    """What the MCP client of the call that started this work can do for it (the SDK adapter implements it)."""

    async def roots(self) -> list[str] | None:
        """The client's MCP roots as `file://` URIs, or None when the client offers none."""
        ...

    def sampling_unavailable(self, tools: bool = False) -> str | None:
        """Why `sampling/createMessage` (with tool use if `tools`) cannot be sent on this call; None when it can."""
        ...

    async def sample(self, params: CreateMessageRequestParams) -> CreateMessageResult | CreateMessageResultWithTools:
        """One `sampling/createMessage` answered by the client's model; ToolFailure (DEPENDENCY_ERROR) if refused."""
        ...

    async def ask(self, question: UserQuestion) -> UserAnswer | None:
        """Ask the user one question mid-call (elicitation); None when this connection cannot ask mid-call."""
        ...

    def connected(self) -> bool | None:
        """Whether the client can still receive this call's answer: False once the stream that carries it is gone
        (Streamable HTTP: the POST's connection closed and was not resumed); None where the transport cannot tell."""
        ...


Progress = Callable[[float, float | None, str | None], Awaitable[None]]


class ProgressLine:
    """The progress notifications of one request, strictly increasing as MCP requires ("The progress value MUST
    increase with each notification, even if the total is unknown"), whoever reports them: approval's wait, then the
    tool, then what a section the gateway forwards to reports, each counting from 0 again. A value that does not
    exceed the previous one of its phase starts a new phase, counted from one past the last value sent (its total
    moved likewise); within a phase values go out as reported, plus the phase's offset."""

    def __init__(self) -> None:
        import anyio

        # map and send in one step, so concurrent reporters never overtake each other (no yield when uncontended)
        self._lock = anyio.Lock(fast_acquire=True)
        self._sent: float | None = None
        self._base = 0.0
        self._phase_last: float | None = None

    def through(self, send: Progress) -> Progress:
        """`send`, fed with this line's values."""

        async def report(progress: float, total: float | None, message: str | None) -> None:
            async with self._lock:
                value, moved = self.next(progress, total)
                await send(value, moved, message)

        return report

    def next(self, progress: float, total: float | None) -> tuple[float, float | None]:
        """The value (and total) to send for a reported one."""
        progress = max(float(progress), 0.0)
        if self._sent is not None and (self._phase_last is None or progress <= self._phase_last):
            self._base = self._sent + 1
        value = self._base + progress
        self._sent, self._phase_last = value, progress
        return value, None if total is None else self._base + total


class ToolContext:
    """What a running tool may ask of whoever called it — the one context of every call path.

    A section server builds it over the MCP request (progress to the client, the client's roots, sampling and
    questions through its channel); the gateway, for a section it runs in process, with progress forwarded to its own
    caller; the agent runtime, for a sub-agent's calls, with progress labelled for the sub-agent and the channel of the
    client call that started the tree. What a path cannot offer answers "unavailable" (None, or a reason).
    `caller` is (depth, agent id) as the request claims it: the client is (0, None).
    """

    def __init__(
        self,
        *,
        progress: Progress | None = None,
        channel: ClientChannel | None = None,
        caller: tuple[int, str | None] = (0, None),
    ) -> None:
        self._progress = progress
        self.channel = channel
        self.caller = caller

    def derive(self, *, progress: Progress | None) -> ToolContext:
        """The same client channel and caller, with progress going elsewhere (e.g. labelled for a sub-agent)."""
        return ToolContext(progress=progress, channel=self.channel, caller=self.caller)

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self._progress is None:
            return
        try:
            await self._progress(progress, total, message)
        except Exception:  # progress is best effort; a closed stream must not fail the call
            logger.debug("progress notification dropped", exc_info=True)

    async def client_roots(self) -> list[str] | None:
        """The client's MCP roots as `file://` URIs, or None when the client does not offer roots."""
        return await self.channel.roots() if self.channel is not None else None

    def sampling_unavailable(self, tools: bool = False) -> str | None:
        """Why this call cannot reach the client's model (with tool use if `tools`); None when it can."""
        if self.channel is None:
            return "this call has no MCP client connection to sample through"
        return self.channel.sampling_unavailable(tools)

    async def sample(self, params: CreateMessageRequestParams) -> CreateMessageResult | CreateMessageResultWithTools:
        """One `sampling/createMessage` answered by the client's model; ToolFailure (DEPENDENCY_ERROR) if refused."""
        from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

        reason = self.sampling_unavailable(tools=bool(params.tools))
        if reason is not None or self.channel is None:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, f"the client's model cannot be used here: {reason}")
        return await self.channel.sample(params)

    async def ask(self, question: UserQuestion) -> UserAnswer | None:
        """The user's answer to one question asked mid-call; None when no client can be asked here."""
        return await self.channel.ask(question) if self.channel is not None else None

    def client_connected(self) -> bool | None:
        """Whether the client that made this call can still receive its answer (`ClientChannel.connected`); None
        when nothing says (stdio, in memory: a client gone ends the connection, and the call with it)."""
        return self.channel.connected() if self.channel is not None else None


@dataclass(frozen=True)
class Annotations:
    """MCP tool annotations, stated for every tool (no defaults hidden in the SDK)."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool


READ_ONLY = Annotations(read_only=True, destructive=False, idempotent=True, open_world=False)
"""Only reads: lists, gets, searches."""
WRITE = Annotations(read_only=False, destructive=False, idempotent=True, open_world=False)
"""Adds or sets state without destroying any, and the same call again changes nothing more (ingest, set a scope)."""
CREATE = Annotations(read_only=False, destructive=False, idempotent=False, open_world=False)
"""Adds something new on every call (calling twice makes two), destroying nothing."""
OVERWRITE = Annotations(read_only=False, destructive=True, idempotent=True, open_world=False)
"""Replaces or deletes existing state, and the same call again changes nothing more (update, delete, overwrite)."""
WEB_READ = Annotations(read_only=True, destructive=False, idempotent=True, open_world=True)
"""Reads from the open web (search, fetch) and changes nothing here."""
WEB_WRITE = Annotations(read_only=False, destructive=False, idempotent=True, open_world=True)
"""Reads from the open web and stores what it read (ingest); the same call again replaces, never duplicates."""
OPEN_WORLD = Annotations(read_only=False, destructive=True, idempotent=False, open_world=True)
"""Acts outside the server's own state (runs programs or agents, installs packages): anything may change."""


@dataclass(frozen=True)
class UserQuestion:
    """One question a tool asks the user before its body runs (MCP form elicitation).

    `schema` is a flat pydantic model of primitive fields (str, int, float, bool, enums, lists of enum
    strings), as MCP elicitation requires. The question must be computable from the arguments alone: on a
    2026-07-28 connection it is asked by returning an `InputRequiredResult`, and asked again identically
    when the client comes back with the answer.
    """

    message: str
    schema: type[BaseModel]
    timeout_seconds: float | None = None


@dataclass(frozen=True)
class UserAnswer:
    """What the user did with the question: `accept` (with `content`), `decline`, `cancel`, or `timeout`."""

    action: Literal["accept", "decline", "cancel", "timeout"]
    content: dict[str, Any] | None = None
    waited_seconds: float = 0.0


LongWork = bool | Callable[[Any], bool]
"""`@tool(long=...)`: True when every call may be long (a crawl, an ingest, a sub-agent), or a predicate on the
parsed input for the calls that are (`lambda params: params.depth > 0`); False for a tool that answers at once."""

AskUser = Callable[[Any, Any], UserQuestion | None]
"""`asks_user(params, state) -> UserQuestion`; raising `ToolFailure` fails the call without asking; None: this
call needs no question (it runs with `answer=None`)."""

CallAnnotations = Callable[[Any], Annotations]
"""`@tool(annotations_of=...)`: the annotations of one call, from its parsed input (fetch_web_page reads the web and
changes nothing unless `ingest=true`). Approval and the gateway's gate decide by them; `annotations` stays the worst
case of every call, as tools/list publishes it."""

Preflight = Callable[[Any, Any], None]
"""`@tool(preflight=...)`: `preflight(params, state)` checks one call against the tool's policy without running
anything (the allow-list, the roots, protected names) and raises the ToolFailure the call would fail with. It runs
before the person is asked to approve the call, so that a call that can never run is refused at once instead of
asked about; it refuses only what the call would refuse whatever happens meanwhile (a missing file may appear)."""


@dataclass(frozen=True)
class ToolSpec:
    """Everything the framework needs to publish and call one tool."""

    name: str
    title: str
    description: str
    annotations: Annotations
    input_model: type[BaseModel]
    output_model: type[ToolResult]
    function: Callable[..., Any] = field(repr=False)
    wants_state: bool
    wants_ctx: bool
    is_async: bool
    asks_user: AskUser | None = field(default=None, repr=False)
    examples: tuple[str, ...] = ()  # needs in a user's words, for the gateway's find_tools (not published)
    long: LongWork = False  # may outlive a client's request timeout: runs as an MCP task (see `shared.serving.tasks`)
    annotations_of: CallAnnotations | None = field(default=None, repr=False)  # per call (approval, the gate)
    preflight: Preflight | None = field(default=None, repr=False)  # a policy check run before the person is asked

    def annotations_for(self, params: Any) -> Annotations:
        """The annotations of one call (its parsed input): `annotations_of`'s, else the tool's own."""
        return self.annotations if self.annotations_of is None else self.annotations_of(params)

    @property
    def task_support(self) -> Literal["optional"] | None:
        """Its `execution.taskSupport` in tools/list: "optional" for a long tool (a plain call works too)."""
        return "optional" if self.long is not False else None

    def runs_long(self, arguments: dict[str, Any]) -> bool:
        """Whether this call is long work (the server then answers with a task where the client allows it): always
        for `long=True`, per call for a predicate on the parsed input (invalid arguments: no, the call fails fast)."""
        if self.long is False or self.long is True:
            return self.long
        try:
            params = self.input_model.model_validate(arguments)
        except ValueError:
            return False
        return bool(self.long(params))

    async def invoke(
        self, params: BaseModel, state: Any, ctx: ToolContext | None, answer: UserAnswer | None = None
    ) -> ToolResult:
        """Call the function with what it asked for; sync functions run in a worker thread."""
        kwargs: dict[str, Any] = {"params": params}
        if self.wants_state:
            kwargs["state"] = state
        if self.wants_ctx:
            kwargs["ctx"] = ctx
        if self.asks_user is not None:
            kwargs["answer"] = answer
        if self.is_async:
            return await self.function(**kwargs)
        import anyio.to_thread

        return await anyio.to_thread.run_sync(lambda: self.function(**kwargs))


def tool(
    *,
    name: str,
    title: str,
    annotations: Annotations,
    description: str | None = None,
    asks_user: AskUser | None = None,
    examples: tuple[str, ...] = (),
    long: LongWork = False,
    annotations_of: CallAnnotations | None = None,
    preflight: Preflight | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a function as a tool. The description defaults to the function's docstring.

    `asks_user(params, state) -> UserQuestion` makes the tool ask the user one question (MCP elicitation)
    before its body runs; the body then receives the `UserAnswer` as its `answer` parameter. The framework
    handles both protocol eras, the question's timeout, and clients without elicitation (DEPENDENCY_ERROR).

    `examples` are a few short needs in a user's own words that this tool answers ("undo my last edit"):
    the gateway's `find_tools` searches them beside the name and description. They are not published in
    `tools/list`. At most `MAX_EXAMPLES`, each at most `MAX_EXAMPLE_LENGTH` characters.

    `long` marks work that may outlive a client's request timeout (a crawl, an ingest, a render, a sub-agent):
    True, or a predicate on the parsed input for the calls that are long. Such a tool is published with
    `execution.taskSupport: "optional"` and may run as an MCP task (`shared.serving.tasks`); a plain call still works,
    with progress notifications.

    `annotations_of(params) -> Annotations`: the annotations of one call, when some calls do less than the worst case
    `annotations` states (`CallAnnotations`); `preflight(params, state)`: a check of one call against the tool's
    policy, run before the person is asked to approve it (`Preflight`).
    """

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        spec = _build_spec(function, name, title, annotations, description, asks_user, examples, long)
        spec = replace(spec, annotations_of=annotations_of, preflight=preflight)
        setattr(function, SPEC_ATTRIBUTE, spec)
        return function

    return decorate


def spec_of(function: Callable[..., Any]) -> ToolSpec:
    try:
        return getattr(function, SPEC_ATTRIBUTE)
    except AttributeError:
        raise TypeError(f"{function!r} is not declared with @tool") from None


def _build_spec(
    function: Callable[..., Any | Awaitable[Any]],
    name: str,
    title: str,
    annotations: Annotations,
    description: str | None,
    asks_user: AskUser | None = None,
    examples: tuple[str, ...] = (),
    long: LongWork = False,
) -> ToolSpec:
    parameters = list(inspect.signature(function).parameters)
    unexpected = [p for p in parameters if p not in ALLOWED_PARAMETERS]
    if not parameters or parameters[0] != "params" or unexpected:
        raise TypeError(f"tool {name}: parameters must be (params[, state][, ctx][, answer]), got {parameters}")
    if ("answer" in parameters) != (asks_user is not None):
        raise TypeError(f"tool {name}: an `answer` parameter goes with @tool(asks_user=...), and only with it")
    hints = get_type_hints(function)
    input_model, output_model = hints.get("params"), hints.get("return")
    if not (isinstance(input_model, type) and issubclass(input_model, BaseModel)):
        raise TypeError(f"tool {name}: `params` must be annotated with a pydantic model")
    if not (isinstance(output_model, type) and issubclass(output_model, ToolResult)):
        raise TypeError(f"tool {name}: the return annotation must be a ToolResult subclass")
    text = inspect.cleandoc(description or function.__doc__ or "")
    if not text:
        raise TypeError(f"tool {name}: a description (or docstring) is required")
    if isinstance(examples, str) or len(examples) > MAX_EXAMPLES:
        raise TypeError(f"tool {name}: examples must be a tuple of at most {MAX_EXAMPLES} strings")
    if any(not example.strip() or len(example) > MAX_EXAMPLE_LENGTH for example in examples):
        raise TypeError(f"tool {name}: each example must be 1-{MAX_EXAMPLE_LENGTH} characters")
    return ToolSpec(
        name=name,
        title=title,
        description=text,
        annotations=annotations,
        input_model=input_model,
        output_model=output_model,
        function=function,
        wants_state="state" in parameters,
        wants_ctx="ctx" in parameters,
        is_async=inspect.iscoroutinefunction(function),
        asks_user=asks_user,
        examples=tuple(examples),
        long=long,
    )
