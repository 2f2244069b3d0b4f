"""ask_user's work: the form the user fills in, reading the answer, and the circuit breaker.

Plain Python (pydantic only): the framework turns the form into an MCP elicitation.
"""

from __future__ import annotations

import threading
import time
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, create_model

from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

from .models import AskUserInput, AskUserResult

MAX_TEXT_ANSWER = 10_000


class CircuitBreaker:
    """After `threshold` consecutive unanswered questions, refuse to ask for `cooldown` seconds.

    Any answer (even a refusal) shows the user is there and resets the count; when the cooldown ends the
    breaker closes and the count starts again.
    """

    def __init__(self, threshold: int, cooldown: float, clock: Any = time.monotonic) -> None:
        self.threshold = threshold
        self.cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()
        self.consecutive_timeouts = 0
        self.open_until: float | None = None

    def check(self) -> None:
        with self._lock:
            if self.open_until is None:
                return
            remaining = self.open_until - self._clock()
            if remaining <= 0:
                self.open_until = None
                self.consecutive_timeouts = 0
                return
        raise ToolFailure(
            ErrorCode.DEPENDENCY_ERROR,
            f"the user did not answer the last {self.threshold} questions, so questions are paused for "
            f"{remaining:.0f} more seconds (circuit breaker). Continue without asking, or ask again later.",
            retry_after_seconds=round(remaining, 1),
        )

    def timed_out(self) -> bool:
        """Count one unanswered question; True when this one opened the breaker."""
        with self._lock:
            self.consecutive_timeouts += 1
            if self.consecutive_timeouts >= self.threshold and self.open_until is None:
                self.open_until = self._clock() + self.cooldown
                return True
            return False

    def answered(self) -> None:
        with self._lock:
            self.consecutive_timeouts = 0


def message_of(params: AskUserInput) -> str:
    message = params.question
    if params.context:
        message += f"\n\nContext: {params.context}"
    return message


def form_of(params: AskUserInput) -> type[BaseModel]:
    """The elicitation form: `selected` (checkbox/mixed, labelled options) and/or `text` (text/mixed)."""
    fields: dict[str, Any] = {}
    if params.options:
        ids = [option.id for option in params.options]
        choices = [{"const": option.id, "title": option.label} for option in params.options]

        def known(values: list[str]) -> list[str]:
            unknown = [value for value in values if value not in ids]
            if unknown:
                raise ValueError(f"unknown option(s): {', '.join(unknown[:5])}")
            if not params.multiple and len(values) > 1:
                raise ValueError("choose one option")
            return values

        schema: dict[str, Any] = {
            "type": "array",
            "title": "Choices",
            "description": "Choose one option." if not params.multiple else "Choose one or more options.",
            "items": {"anyOf": choices},
        }
        if params.type == "checkbox":
            schema["minItems"] = 1
        if not params.multiple:
            schema["maxItems"] = 1
        selected = Annotated[list[str], AfterValidator(known), WithJsonSchema(schema)]
        fields["selected"] = (selected, ...) if params.type == "checkbox" else (selected, [])
    if params.type in ("text", "mixed"):
        description = params.placeholder or ("Your answer." if params.type == "text" else "Anything to add.")
        text = Annotated[str, Field(max_length=MAX_TEXT_ANSWER, title="Answer", description=description)]
        fields["text"] = (text, ...) if params.type == "text" else (text | None, None)
    return create_model("UserAnswerForm", __config__=ConfigDict(extra="ignore"), **fields)


def result_of(params: AskUserInput, content: dict[str, Any] | None, waited: float) -> AskUserResult:
    content = content or {}
    selected = content.get("selected") if params.options else None
    labels = None
    if selected is not None and params.options:
        by_id = {option.id: option.label for option in params.options}
        labels = [by_id[value] for value in selected if value in by_id]
    text = content.get("text") if params.type in ("text", "mixed") else None
    return AskUserResult(
        status="answered", selected=selected, selected_labels=labels, text=text, waited_ms=int(waited * 1000)
    )
