"""Who calls, and within which limits: the one caller-scope type and the one limits type of the agent runtime.

A tool of an agent host (the gateway's own tools, orchestration's tools) receives a `ScopedState`: the host and
the caller's `AgentScope`. The scope is kept by the runtime — depth 0 for the client's agent, the parent's + 1 for
a sub-agent — and never built from tool arguments. `AgentLimits` are the bounds every sub-agent of a host runs
within, read from the host's settings once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AgentScope:
    """The caller's depth and, for a sub-agent, its id and the tools it was given."""

    depth: int = 0
    agent_id: str | None = None
    tool_names: tuple[str, ...] | None = None  # None: the client, who has the host's whole tools/list
    profile: str | None = None  # the permanent agent (orchestration's `delegate_task`) this sub-agent runs as

    @property
    def is_client(self) -> bool:
        return self.agent_id is None


CLIENT_SCOPE = AgentScope()


@dataclass(frozen=True)
class ScopedState:
    """The `state` a host's own tools receive: the host (gateway or orchestrator) and who calls."""

    host: Any
    scope: AgentScope


@dataclass(frozen=True)
class AgentLimits:
    """What bounds the sub-agents of one host: depth, how many at once, and each one's budgets and model."""

    max_depth: int
    max_subagents: int
    agent_max_turns: int
    agent_max_tool_calls: int
    agent_max_tokens: int
    agent_max_seconds: float
    model: Any

    @classmethod
    def of(cls, settings: Any, **overrides: Any) -> AgentLimits:
        """The limits named by a settings object's fields of the same names (overrides win)."""
        values = {name: getattr(settings, name) for name in cls.__dataclass_fields__ if name not in overrides}
        return cls(**values, **overrides)
