"""What sections the gateway knows, and their tool definitions, without starting any process.

Built-in sections come from `servers.registry` declarations: their metadata and full tool definitions are
computed from the `Section` object (the same `tools/list` the section would serve). A declaration is
imported the first time something needs it (its name, its tools, a call), not when the gateway starts:
the gateway's own start-up and `tools/list` import no section. Third-party sections
(`[gateway.sections.<id>]`) are only known by their configuration until they are first started; a
`[gateway.sections.<id>]` table with a built-in id changes how that section is launched (e.g. in a
container) but keeps its declaration.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from mcp_sections.servers.registry import BUILTIN_SECTIONS, load_section
from mcp_sections.shared.settings.config import Settings

from .settings import ExternalSection, GatewaySettings

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mcp_sections.shared.framework.sections import Section

    from .validation import ArgumentChecker

logger = logging.getLogger("mcp_sections.gateway")

Kind = Literal["builtin", "stdio", "http"]
_LOAD_LOCK = threading.Lock()


@dataclass
class SectionTool:
    """One tool of a section: its definition, and the argument checker built on its first call."""

    definition: dict[str, Any]
    input_model: type[BaseModel] | None = None  # a built-in tool's own input model (its schema's source)
    _checker: ArgumentChecker | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.definition["name"]

    def checker(self) -> ArgumentChecker:
        if self._checker is None:
            from .validation import ArgumentChecker

            self._checker = ArgumentChecker(self.name, self.definition.get("inputSchema") or {}, self.input_model)
        return self._checker


@dataclass
class SectionEntry:
    """One section as the gateway sees it (a built-in one's declaration is imported on first need)."""

    id: str
    kind: Kind
    external: ExternalSection | None = None
    _declaration: Section | None = field(default=None, repr=False)
    _load_error: str | None = field(default=None, repr=False)
    _loaded: bool = field(default=False, repr=False)
    _definitions: list[dict[str, Any]] | None = field(default=None, repr=False)
    _tools: dict[str, SectionTool] | None = field(default=None, repr=False)

    @property
    def builtin(self) -> bool:
        return self.id in BUILTIN_SECTIONS

    def _load(self) -> None:
        if self._loaded:
            return
        with _LOAD_LOCK:
            if self._loaded:
                return
            if self.builtin:
                try:
                    self._declaration = load_section(self.id)
                except Exception as exc:  # a section that cannot even be imported is listed as failed
                    logger.warning("built-in section %s cannot be loaded: %s", self.id, exc)
                    self._load_error = f"{type(exc).__name__}: {exc}"
            self._loaded = True

    @property
    def loaded(self) -> bool:
        """True once the declaration was imported (or found missing); nothing to import for a third-party one."""
        return self._loaded or not self.builtin

    @property
    def declaration(self) -> Section | None:
        self._load()
        return self._declaration

    @property
    def load_error(self) -> str | None:
        self._load()
        return self._load_error

    @property
    def name(self) -> str:
        if self.external is not None and self.external.name:
            return self.external.name
        declaration = self.declaration
        return declaration.name if declaration is not None else self.id

    @property
    def description(self) -> str:
        if self.external is not None and self.external.description:
            return self.external.description
        declaration = self.declaration
        return declaration.description if declaration is not None else ""

    @property
    def runs_agents(self) -> bool:
        """A built-in section that runs sub-agents itself (`Section.runs_agents`): hosted by the gateway, never
        handed to a sub-agent."""
        declaration = self.declaration if self.builtin else None
        return declaration is not None and declaration.runs_agents

    @property
    def output_source(self) -> str:
        """Where this section's results come from, as a provenance envelope names it."""
        declaration = self.declaration if self.builtin else None
        return declaration.output_source if declaration is not None else f"the third-party section {self.id!r}"

    @property
    def trusted_output(self) -> bool:
        declaration = self.declaration if self.builtin else None
        return declaration is not None and declaration.trusted_output

    @property
    def declared_tools(self) -> list[str] | None:
        """Tool names known without a process (None for a third-party section never started)."""
        if self.declaration is not None:
            return [spec.name for spec in self.declaration.specs]
        if self._definitions is not None:
            return [tool["name"] for tool in self._definitions]
        return None

    def remember_definitions(self, definitions: list[dict[str, Any]]) -> None:
        """Third-party sections: the tools/list of their first connection (kept for the gateway's lifetime)."""
        if self.declaration is None and self._definitions is None:
            self._definitions = definitions

    def definitions(self, settings: Settings) -> list[dict[str, Any]] | None:
        """Full tool definitions (inputSchema, outputSchema, annotations); computed from the declaration."""
        if self._definitions is None and self.declaration is not None:
            self._definitions = declaration_definitions(self.declaration, settings)
        return self._definitions

    @property
    def cached_tools(self) -> dict[str, SectionTool] | None:
        return self._tools

    def tools(self, settings: Settings) -> dict[str, SectionTool] | None:
        """The tools by name (definition + argument checker), once the definitions are known."""
        if self._tools is None:
            definitions = self.definitions(settings)
            if definitions is None:
                return None
            models = {spec.name: spec.input_model for spec in self.declaration.specs} if self.declaration else {}
            self._tools = {tool["name"]: SectionTool(tool, models.get(tool["name"])) for tool in definitions}
        return self._tools


def declaration_definitions(section: Section, settings: Settings) -> list[dict[str, Any]]:
    """The `tools/list` of a declared section, exactly as its server publishes it, without a process."""
    from mcp_sections.shared.serving.sdk_tools import definition

    return [definition(spec) for spec in section.specs]


def build_catalog(gateway: GatewaySettings) -> dict[str, SectionEntry]:
    """Every section, built-in first (registry order) then third-party (sorted by id). Imports no section."""
    entries: dict[str, SectionEntry] = {}
    for section_id in BUILTIN_SECTIONS:
        external = gateway.sections.get(section_id)
        kind: Kind = "builtin" if external is None else ("http" if external.url else "stdio")
        entries[section_id] = SectionEntry(id=section_id, kind=kind, external=external)
    for section_id in sorted(gateway.sections):
        if section_id in entries:
            continue
        external = gateway.sections[section_id]
        entries[section_id] = SectionEntry(id=section_id, kind="http" if external.url else "stdio", external=external)
    return entries
