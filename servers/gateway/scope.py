"""Who is calling a gateway tool: the client's agent (depth 0) or a sub-agent, as kept by the runtime."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AgentScope:
    """The caller's depth and, for a sub-agent, the tools it was given. Never built from tool arguments."""

    depth: int
    agent_id: str | None = None
    tool_names: tuple[str, ...] | None = None  # None: the client, who has the gateway's whole tools/list

    @property
    def is_client(self) -> bool:
        return self.agent_id is None


CLIENT_SCOPE = AgentScope(depth=0)


@dataclass(frozen=True)
class CallScope:
    """The `state` the gateway's own tools receive: the gateway and the caller's scope."""

    gateway: Any
    scope: AgentScope
