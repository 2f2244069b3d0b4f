"""Who calls, with which grant, within which limits: the caller scope and the limits type of the agent runtime.

A tool of an agent host (the gateway's own tools, orchestration's tools) receives a `ScopedState`: the host and
the caller's `AgentScope`. The scope is kept by the runtime — depth 0 for the client's agent, the parent's + 1 for
a sub-agent — and never built from tool arguments.

A sub-agent's grant is by identity: the set of section ids it was given (`sections`), optionally narrowed to some of
their tools (`tools`, published names), always a subset of its caller's. A tool whose name matches a granted
section's tool but that belongs to another section is not granted: every call carries the section id the host
resolved it to, and the host's gate checks that id against the grant. `trail` is what the sub-agent has read so far
(untrusted content since its goal was approved makes its destructive calls ask again, `servers/pool/gate.py`), and
`nested` what the sub-agents it starts spend (they add their tokens to it when they end, `shared.agents.metrics`).
`AgentLimits` are the bounds every sub-agent of a host runs within, read from the host's settings once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_sections.shared.agents.metrics import NestedTokens
from mcp_sections.shared.ground.locations import default_config_file


@dataclass
class Trail:
    """What a sub-agent has read: the sources of untrusted content among its tool results (mutable, per agent)."""

    untrusted_sources: list[str] = field(default_factory=list)

    @property
    def read_untrusted(self) -> bool:
        return bool(self.untrusted_sources)

    def read(self, source: str) -> None:
        if source not in self.untrusted_sources:
            self.untrusted_sources.append(source)


@dataclass(frozen=True)
class AgentScope:
    """The caller's depth and, for a sub-agent, its id, its grant and its trail."""

    depth: int = 0
    agent_id: str | None = None
    sections: frozenset[str] | None = None  # None: the client, who has every enabled section
    tools: frozenset[str] | None = None  # None: every tool of `sections`; else only these published names
    host_tools: tuple[str, ...] = ()  # the host's own tools this sub-agent may call (list_tool_sections, ...)
    routes: Mapping[str, Any] | None = field(default=None, compare=False)  # its tools' published names → routes
    profile: str | None = None  # the permanent agent (orchestration's `delegate_task`) this sub-agent runs as
    trail: Trail | None = field(default=None, compare=False)
    nested: NestedTokens | None = field(default=None, compare=False)  # its metrics' tokens of the agents it starts

    @property
    def is_client(self) -> bool:
        return self.agent_id is None

    def grants(self, section: str, tool: str) -> bool:
        """Whether this caller may call `tool` (its published name) of section `section`."""
        if self.sections is None:
            return True
        return section in self.sections and (self.tools is None or tool in self.tools)

    @property
    def caller(self) -> tuple[int, str | None]:
        return self.depth, self.agent_id


CLIENT_SCOPE = AgentScope()


@dataclass(frozen=True)
class ScopedState:
    """The `state` a host's own tools receive: the host (gateway or orchestrator) and who calls."""

    host: Any
    scope: AgentScope


@dataclass(frozen=True)
class ConfigFile:
    """The config file a server reads `[gateway.model]` from, as messages name it: its path and whether it exists
    (without one, where the default one would be read)."""

    path: Path
    exists: bool

    @classmethod
    def of(cls, config_file: Path | None) -> ConfigFile:
        """`Settings.config_file` (the file read: `--config`, MCP_SECTIONS_CONFIG or the default one), or the default
        location when none was read."""
        if config_file is not None:
            return cls(config_file, config_file.exists())
        return cls(default_config_file(), False)

    def __str__(self) -> str:
        return str(self.path) if self.exists else f"{self.path} (none yet: create it, or pass --config)"


@dataclass(frozen=True)
class AgentLimits:
    """What bounds the sub-agents of one host: depth, how many at once, and each one's budgets and model (and the
    config file it is configured in, for the messages that say how to change it)."""

    max_depth: int
    max_subagents: int
    agent_max_turns: int
    agent_max_tool_calls: int
    agent_max_tokens: int
    agent_max_seconds: float
    model: Any
    config_file: ConfigFile | None = None

    @classmethod
    def of(cls, settings: Any, **overrides: Any) -> AgentLimits:
        """The limits named by a settings object's fields of the same names (overrides win; `config_file` is given)."""
        names = [name for name in cls.__dataclass_fields__ if name not in overrides and name != "config_file"]
        return cls(**{name: getattr(settings, name) for name in names}, **overrides)
