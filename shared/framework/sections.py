"""A section: one declaration from which come its MCP server, its listing, its snapshot — and every fact about it.

A section is its folder: what it needs on the machine (`requirements`, read by `mcp-sections doctor`), whether it is
too heavy to run inside the gateway's process, whether it runs sub-agents itself, whether it keeps embedding vectors,
where its results come from (for the provenance envelope a model sees), its settings model and its container are all
declared here, on its `Section`; nothing outside the folder lists section ids (`servers/registry.py` names each once).

Declaring a section imports nothing heavy: tools import their libraries when first called,
and `open_state` builds the section's state (a database, a model) lazily, once per process.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from mcp_sections.shared.framework.requirements import Requirement
from mcp_sections.shared.framework.tools import ToolSpec, spec_of
from mcp_sections.shared.settings.config import SectionSettings, SectionSettingsT, Settings

SECTION_ID = re.compile(r"^[a-z][a-z0-9_]{1,39}$")
TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]{1,63}$")


@dataclass(frozen=True)
class SectionRuntime:
    """What a section's state factory receives: the settings of this process."""

    settings: Settings
    section_settings: SectionSettings | None
    section_id: str = ""

    @property
    def data_dir(self) -> Any:
        return self.settings.data_dir

    def settings_of(self, model: type[SectionSettingsT]) -> SectionSettingsT:
        """The section's own settings as `model` (its config-file table, then `MCP_SECTIONS_<ID>_*`)."""
        if isinstance(self.section_settings, model):
            return self.section_settings
        return self.settings.section_settings(model, self.section_id)


@dataclass(frozen=True)
class Container:
    """The section's container, as `docker/Dockerfile` and `compose.yaml` must build and run it (checked by
    tests/containers, which print what to add for a new section): the Dockerfile stage its target starts from and
    the build stage its virtual environment comes from, what it does with the workspace, and whether it needs a
    route out of the compose network."""

    stage: Literal["runtime", "runtime-tools", "runtime-browser", "runtime-render"] = "runtime"
    build: Literal["build-core", "build-ml", "build-web", "build-media"] = "build-core"  # its virtual environment
    workspace: Literal["none", "read", "write"] = "none"
    egress: bool = False


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
    masks_secrets: bool = field(
        default=False, metadata={"doc": "mask secret values in every result (shared.confinement.secrets.masking)"}
    )
    requirements: tuple[Requirement, ...] = field(default=(), metadata={"doc": "what doctor checks on the machine"})
    heavy: str | None = field(
        default=None, metadata={"doc": "what it loads that is too heavy for the gateway's process (no in_process)"}
    )
    runs_agents: bool = field(
        default=False,
        metadata={
            "doc": "runs sub-agents itself: the gateway hosts it on its own agent host and gives it the model "
            "settings; it is never handed to a sub-agent (its agents would start again at depth 0)"
        },
    )
    hosted: Callable[[SectionRuntime, Any], Any] | None = field(
        default=None,
        metadata={
            "doc": "for a section that runs agents: its state built on the agent host it is given (the gateway's: "
            "its pool, slots and depth) instead of a host of its own; the state's `host.runtime` is the agent "
            "runtime the gateway shows"
        },
    )
    embeds: bool = field(default=False, metadata={"doc": "keeps embedding vectors (`mcp-sections reembed` applies)"})
    output_source: str = field(
        default="tool output",
        metadata={"doc": "where its results' text comes from, as the provenance envelope names it (file, web, ...)"},
    )
    trusted_output: bool = field(
        default=False,
        metadata={"doc": "its results are computed by the suite alone (never text from files, the web, people)"},
    )
    container: Container = field(default_factory=Container)
    search_terms: Callable[[Any], dict[str, str]] | None = field(
        default=None,
        metadata={
            "doc": "words find_tools also indexes for some tools, by tool name, from the section's settings (e.g. "
            "the programs run_command may start); never published"
        },
    )

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
        return SectionRuntime(settings=settings, section_settings=section_settings, section_id=self.id)
