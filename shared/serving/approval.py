"""Approval: with `approval = "destructive"`, the user is asked (MCP elicitation, both protocol eras) before a tool
that can change things runs — deleting, overwriting, running programs, starting sub-agents, acting on the outside
world (the seeds' human in the loop). Off by default.

One policy, on every path a call can take (a client's call to a section, `call_section_tool`, an exposed tool,
`plan_actions`, a sub-agent's call): a tool needs approval by its annotations — destructive, or open-world and not
read-only (`needs_approval`). The question shows everything that will run: every argument, long values summarised
with their length and an explicit "…", paths in full, never cut silently (`describe_arguments`). Only a boolean
`true` approves (`refusal`).

Where the user's client connects, there the question is asked: a section served on its own asks for its own tools;
the gateway asks for its own, and starts its sections with approval off, having asked already. A sub-agent's call is
asked about mid-call through the client's channel when the sub-agent has read untrusted content since its goal was
approved (`servers/pool/gate.py`); where no question can be asked mid-call, such a call is refused.
On a client without elicitation, calls that need approval are refused with a message saying how to turn approval off.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from mcp_sections.shared.framework.tools import Annotations, ToolResult, ToolSpec, UserAnswer, UserQuestion
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

Approval = Literal["off", "destructive"]
APPROVAL_SECONDS = 300.0
VALUE_CHARS = 200  # a longer text value is shown by its start, its length and "…"
PATH_ARGUMENTS = ("path", "paths", "source", "destination", "cwd", "directory", "file", "output_path", "root")
CANNOT_ASK = (
    "{tool} needs the user's approval (approval = 'destructive'), but this MCP client cannot ask the user "
    '(no elicitation). Use a client with elicitation, or turn approval off: `approval = "off"` in the config '
    "file or MCP_SECTIONS_APPROVAL=off."
)


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


def needs_approval(spec: ToolSpec, approval: Approval) -> bool:
    return spec.asks_user is None and needs_approval_by_hints(spec.annotations, approval)


def question_for(
    spec: ToolSpec, describe: Callable[[Any, Any], str | None] | None = None
) -> Callable[[Any, Any], UserQuestion | None]:
    """The `asks_user` of an approval: a question naming the tool and everything it will run with
    (`describe(params, state)` may word it, or return None when this call needs no approval, e.g. a read-only tool
    reached through the gateway's forwarding tool)."""

    def ask(params: Any, state: Any) -> UserQuestion | None:
        wording = describe(params, state) if describe is not None else describe_arguments(_dump(params))
        if wording is None:
            return None
        return approval_question(f"{spec.title} ({spec.name})", wording)

    return ask


def approval_question(what: str, wording: str) -> UserQuestion:
    return UserQuestion(message=f"Allow {what}? {wording}", schema=ApprovalForm, timeout_seconds=APPROVAL_SECONDS)


def refusal(tool: str, answer: UserAnswer | None) -> ToolFailure | None:
    """None when the call may run (approved with a boolean `true`, or no question was needed); else why not."""
    if answer is None or (answer.action == "accept" and (answer.content or {}).get("approve") is True):
        return None
    what = (
        "did not approve"
        if answer.action == "accept"
        else {"decline": "declined", "cancel": "cancelled"}.get(
            answer.action, f"did not answer within {APPROVAL_SECONDS:.0f} s"
        )
    )
    return ToolFailure(
        ErrorCode.PERMISSION_DENIED,
        f"the user {what} {tool}; it did not run. Ask the user what to do instead, or change the request.",
    )


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
