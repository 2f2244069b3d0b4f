"""A section: one declaration from which come its MCP server, its listing and its snapshot.

Declaring a section imports nothing heavy: tools import their libraries when first called,
and `open_state` builds the section's state (a database, a model) lazily, once per process.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mcp_sections.shared.config import SectionSettings, Settings
from mcp_sections.shared.tools import ToolSpec, spec_of

SECTION_ID = re.compile(r"^[a-z][a-z0-9_]{1,39}$")
TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]{1,63}$")


@dataclass(frozen=True)
class SectionRuntime:
    """What a section's state factory receives: the settings of this process."""

    settings: Settings
    section_settings: SectionSettings | None

    @property
    def data_dir(self) -> Any:
        return self.settings.data_dir


@dataclass(frozen=True)
class Section:
    """The single declaration of a section.

    `open_state(runtime)` returns the object passed to tools as `state` (closed with `close()` at
    shutdown if it has one); `warm_up(state)` runs in the background once the client is connected.
    `lifespan(runtime)`, for a state that needs the server's event loop (background tasks, subprocess
    sessions), is an async context manager entered when the server starts; what it yields is the state.
    """

    id: str
    name: str
    description: str
    tools: tuple[Callable[..., Any], ...]
    instructions: str | None = None
    settings_model: type[SectionSettings] | None = None
    open_state: Callable[[SectionRuntime], Any] | None = None
    warm_up: Callable[[Any], None] | None = None
    lifespan: Callable[[SectionRuntime], AbstractAsyncContextManager[Any]] | None = None
    extra: str | None = field(default=None, metadata={"doc": "pip extra that brings this section's libraries"})
    masks_secrets: bool = field(default=False, metadata={"doc": "mask secret values in every result (shared.secrets)"})

    def __post_init__(self) -> None:
        if not SECTION_ID.match(self.id):
            raise ValueError(f"section id {self.id!r} must match {SECTION_ID.pattern}")
        names = [spec.name for spec in self.specs]
        if len(set(names)) != len(names):
            raise ValueError(f"section {self.id}: duplicate tool names in {names}")
        for name in names:
            if not TOOL_NAME.match(name):
                raise ValueError(f"section {self.id}: tool name {name!r} must match {TOOL_NAME.pattern}")

    @cached_property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(spec_of(function) for function in self.tools)

    def spec(self, tool_name: str) -> ToolSpec | None:
        return next((spec for spec in self.specs if spec.name == tool_name), None)

    def metadata(self) -> dict[str, Any]:
        """What the gateway and `mcp-sections list` show: no schemas, just names."""
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "tools": [spec.name for spec in self.specs],
            "tool_count": len(self.specs),
        }

    def runtime(self, settings: Settings) -> SectionRuntime:
        section_settings = settings.section_settings(self.settings_model, self.id) if self.settings_model else None
        return SectionRuntime(settings=settings, section_settings=section_settings)
