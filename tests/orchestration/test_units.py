"""Unit tests: the circuit breaker, the elicitation forms, and declaring a tool that asks the user."""

from __future__ import annotations

import pytest
from mcp.server.elicitation import render_elicitation_schema
from pydantic import ValidationError

from mcp_sections.servers.orchestration.models import AskUserInput
from mcp_sections.servers.orchestration.questions import CircuitBreaker, form_of, result_of
from mcp_sections.shared.framework.tools import (
    READ_ONLY,
    ToolInput,
    ToolResult,
    UserAnswer,
    UserQuestion,
    spec_of,
    tool,
)
from mcp_sections.shared.ground.errors import ToolFailure

OPTIONS = [{"id": "a", "label": "Alpha"}, {"id": "b", "label": "Beta"}]


def test_circuit_breaker_opens_after_consecutive_timeouts_and_closes_after_cooldown() -> None:
    now = [100.0]
    breaker = CircuitBreaker(threshold=3, cooldown=60, clock=lambda: now[0])
    assert [breaker.timed_out(), breaker.timed_out()] == [False, False]
    breaker.answered()  # an answer resets the count
    assert [breaker.timed_out(), breaker.timed_out(), breaker.timed_out()] == [False, False, True]
    now[0] += 59
    with pytest.raises(ToolFailure) as caught:
        breaker.check()
    assert caught.value.code.value == "DEPENDENCY_ERROR" and caught.value.details["retry_after_seconds"] == 1.0
    now[0] += 1.5
    breaker.check()  # closed again, count reset
    assert breaker.consecutive_timeouts == 0 and breaker.timed_out() is False


@pytest.mark.parametrize("kind", ["checkbox", "text", "mixed"])
def test_forms_are_valid_elicitation_schemas(kind: str) -> None:
    params = AskUserInput(question="q", type=kind, options=OPTIONS if kind != "text" else None)
    schema = render_elicitation_schema(form_of(params))  # raises when not a spec-valid form
    assert (
        set(schema["properties"]) == {"checkbox": {"selected"}, "text": {"text"}, "mixed": {"selected", "text"}}[kind]
    )


def test_answers_are_checked_against_the_options() -> None:
    params = AskUserInput(question="q", type="checkbox", options=OPTIONS, multiple=False)
    form = form_of(params)
    with pytest.raises(ValidationError, match="unknown option"):
        form.model_validate({"selected": ["z"]})
    with pytest.raises(ValidationError, match="choose one option"):
        form.model_validate({"selected": ["a", "b"]})
    result = result_of(params, form.model_validate({"selected": ["b"]}).model_dump(), 0.25)
    assert (result.selected_labels, result.waited_ms) == (["Beta"], 250)
    with pytest.raises(ValidationError, match="needs `options`"):
        AskUserInput(question="q", type="mixed")
    with pytest.raises(ValidationError, match="unique"):
        AskUserInput(question="q", type="checkbox", options=OPTIONS + OPTIONS[:1])


class Q(ToolInput):
    text: str


class R(ToolResult):
    ok: bool


def test_asking_tools_are_declared_with_their_question() -> None:
    def question(params: Q, state: object) -> UserQuestion:
        return UserQuestion(message=params.text, schema=R)

    @tool(name="demo_ask", title="Ask", annotations=READ_ONLY, asks_user=question)
    async def demo_ask(params: Q, answer: UserAnswer) -> R:
        """Ask."""
        return R(ok=answer.action == "accept")

    assert spec_of(demo_ask).asks_user is question
    with pytest.raises(TypeError, match="asks_user"):

        @tool(name="demo_bad", title="Bad", annotations=READ_ONLY)
        async def demo_bad(params: Q, answer: UserAnswer) -> R:
            """No question declared."""
            return R(ok=True)
