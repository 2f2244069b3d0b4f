"""What a sub-agent spent: its own model tokens, tool calls and turns, and the tokens of the sub-agents below it.

A sub-agent may start others (plan_actions, spawn_agent, delegate_task, parallel_tasks); each of those, when it ends
(completed, failed, stopped), adds what it spent — its own tokens and those of everything below it — to the
`NestedTokens` of the sub-agent that started it (`AgentTask.reports_to`, that agent's `AgentScope.nested`). So a
result reports both: `tokens_input`/`tokens_output` (the model calls of the sub-agents the call ran) and
`tokens_input_with_nested`/`tokens_output_with_nested` (plus every sub-agent they started, at any depth), the
figure to budget with.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class NestedTokens:
    """Tokens of the sub-agents one agent started, theirs and their own descendants' (mutable, per agent)."""

    tokens_input: int = 0
    tokens_output: int = 0
    agents: int = 0  # sub-agents below, at every depth
    unreported: int = 0  # their model answers without token counts (MCP sampling may not say)

    def add(self, other: Metrics) -> None:
        """Count a sub-agent that ended: its own tokens and everything below it."""
        self.merge(other.nested)
        self.tokens_input += other.tokens_input
        self.tokens_output += other.tokens_output
        self.agents += 1
        self.unreported += other.unreported

    def merge(self, other: NestedTokens) -> None:
        self.tokens_input += other.tokens_input
        self.tokens_output += other.tokens_output
        self.agents += other.agents
        self.unreported += other.unreported


@dataclass
class Metrics:
    depth: int
    started: float = field(default_factory=time.monotonic)
    tokens_input: int = 0
    tokens_output: int = 0
    tool_calls: int = 0
    turns: int = 0
    duration_ms: int = 0
    answers: int = 0  # model turns that came back (a turn whose call failed is counted in `turns` only)
    unreported: int = 0  # answers without token counts (MCP sampling may not say)
    provider: str | None = None  # the model provider the sub-agent ran on (sampling, openai, anthropic)
    model: str | None = None  # the model's name: as its endpoint named it in an answer, else as configured
    nested: NestedTokens = field(default_factory=NestedTokens)  # the sub-agents it started, at every depth

    @property
    def tokens_reported(self) -> bool:
        """The token counts are the model's own: it answered, each time with its counts."""
        return self.answers > 0 and self.unreported == 0

    def finish(self) -> Metrics:
        self.duration_ms = int((time.monotonic() - self.started) * 1000)
        return self

    def add(self, other: Metrics) -> None:
        """Count `other`'s tokens, calls and turns in these (a plan's or a batch's totals)."""
        self.tokens_input += other.tokens_input
        self.tokens_output += other.tokens_output
        self.tool_calls += other.tool_calls
        self.turns += other.turns
        self.answers += other.answers
        self.unreported += other.unreported
        self.nested.merge(other.nested)
        self.model = other.model or self.model

    def as_dict(self) -> dict[str, int]:
        return {
            "duration_ms": self.duration_ms,
            "tokens_input": self.tokens_input,
            "tokens_output": self.tokens_output,
            "tokens_input_with_nested": self.tokens_input + self.nested.tokens_input,
            "tokens_output_with_nested": self.tokens_output + self.nested.tokens_output,
            "nested_agents": self.nested.agents,
            "tokens_reported": int(self.tokens_reported),  # 0: no answer, or one without its token counts
            "tool_calls": self.tool_calls,
            "turns": self.turns,
            "depth": self.depth,
        }

    def tokens_text(self, who: str = "") -> str:
        """`22 input / 14 output tokens`, then what the nested sub-agents add (`who`: whose tokens the first are)."""
        text = f"{self.tokens_input} input / {self.tokens_output} output tokens{who}"
        nested = self.nested
        if nested.agents:
            text += (
                f"; {self.tokens_input + nested.tokens_input} input / {self.tokens_output + nested.tokens_output} "
                f"output with the {nested.agents} nested sub-agent{'s' if nested.agents > 1 else ''} below"
            )
        else:
            text += " (no nested sub-agents)"
        if self.answers == 0:
            return f"{text} (the model never answered)"
        if self.tokens_reported and not nested.unreported:
            return text
        return f"{text} (the client's model did not report all token counts)"

    def model_text(self) -> str:
        """`qwen2.5:14b (openai)`: the model's name and its provider."""
        name = self.model or "unnamed"
        return f"{name} ({self.provider})" if self.provider else name
