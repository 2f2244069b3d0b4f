"""Approval: with `approval = "destructive"`, the user is asked (MCP elicitation, both protocol eras) before a
destructive tool runs — deleting, overwriting, running programs, starting sub-agents (the seeds' human in the
loop). A tool is destructive by its own annotations (`destructiveHint`). On a client without elicitation such
calls are refused with a message saying how to turn approval off. Off by default.

Where the user's client connects, there the question is asked: a section served on its own asks for its own
tools; the gateway asks for its own (`plan_actions`, `call_section_tool` on a destructive tool, …) and starts its
sections with approval off, having asked already.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from mcp_sections.shared.errors import ErrorCode, ToolFailure
from mcp_sections.shared.tools import ToolSpec, UserAnswer, UserQuestion

Approval = Literal["off", "destructive"]
APPROVAL_SECONDS = 300.0
SUMMARY_CHARS = 400
CANNOT_ASK = (
    "{tool} needs the user's approval (approval = 'destructive'), but this MCP client cannot ask the user "
    '(no elicitation). Use a client with elicitation, or turn approval off: `approval = "off"` in the config '
    "file or MCP_SECTIONS_APPROVAL=off."
)


class ApprovalForm(BaseModel):
    """What the user answers."""

    approve: bool = Field(description="Allow this call to run.")


def needs_approval(spec: ToolSpec, approval: Approval) -> bool:
    return approval == "destructive" and spec.annotations.destructive and spec.asks_user is None


def question_for(
    spec: ToolSpec, describe: Callable[[Any, Any], str | None] | None = None
) -> Callable[[Any, Any], UserQuestion | None]:
    """The `asks_user` of an approval: a question naming the tool and its arguments (`describe(params, state)`
    may word it, or return None when this call needs no approval, e.g. a read-only tool reached through the
    gateway's forwarding tool)."""

    def ask(params: Any, state: Any) -> UserQuestion | None:
        wording = describe(params, state) if describe is not None else _arguments(params)
        if wording is None:
            return None
        return UserQuestion(
            message=f"Allow {spec.title} ({spec.name})? {wording}",
            schema=ApprovalForm,
            timeout_seconds=APPROVAL_SECONDS,
        )

    return ask


def refusal(tool: str, answer: UserAnswer | None) -> ToolFailure | None:
    """None when the call may run (approved, or no question was needed); else why not."""
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


def _arguments(params: Any) -> str:
    try:
        text = json.dumps(params.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False)
    except (AttributeError, TypeError, ValueError):
        text = str(params)
    return f"Arguments: {text[:SUMMARY_CHARS]}" + ("…" if len(text) > SUMMARY_CHARS else "")
