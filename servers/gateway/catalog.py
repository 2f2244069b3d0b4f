"""What sections the gateway knows, and their tool definitions, without starting any process.

Built-in sections come from `shared.registry` declarations: their metadata and full tool definitions are
computed from the `Section` object (the same `tools/list` the section would serve). Third-party sections
(`[gateway.sections.<id>]`) are only known by their configuration until they are first started; a
`[gateway.sections.<id>]` table with a built-in id changes how that section is launched (e.g. in a
container) but keeps its declaration.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_sections.shared.config import Settings
from mcp_sections.shared.registry import BUILTIN_SECTIONS, load_section
from mcp_sections.shared.sections import Section

from .settings import ExternalSection, GatewaySettings

logger = logging.getLogger("mcp_sections.gateway")

Kind = Literal["builtin", "stdio", "http"]


@dataclass
class SectionEntry:
    """One section as the gateway sees it."""

    id: str
    name: str
    description: str
    kind: Kind
    declaration: Section | None = None
    external: ExternalSection | None = None
    load_error: str | None = None
    _definitions: list[dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def builtin(self) -> bool:
        return self.id in BUILTIN_SECTIONS

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


def declaration_definitions(section: Section, settings: Settings) -> list[dict[str, Any]]:
    """The `tools/list` of a declared section, exactly as its server publishes it, without a process."""
    from mcp_sections.shared.server import raw_tool, sdk_annotations

    definitions = []
    for spec in section.specs:
        tool = raw_tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.input_model.model_json_schema(),
            output_schema=spec.output_model.model_json_schema(mode="serialization"),
            annotations=sdk_annotations(spec),
            call=_never_called,
        )
        definitions.append(
            {
                "name": tool.name,
                "title": tool.title,
                "description": tool.description,
                "inputSchema": tool.parameters,
                "outputSchema": tool.output_schema,
                "annotations": tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
                if tool.annotations
                else None,
            }
        )
    return [{key: value for key, value in item.items() if value is not None} for item in definitions]


async def _never_called(arguments: dict[str, Any], ctx: Any) -> Any:  # pragma: no cover
    raise AssertionError("definitions only")


def build_catalog(gateway: GatewaySettings) -> dict[str, SectionEntry]:
    """Every section, built-in first (registry order) then third-party (sorted by id)."""
    entries: dict[str, SectionEntry] = {}
    for section_id in BUILTIN_SECTIONS:
        external = gateway.sections.get(section_id)
        kind: Kind = "builtin" if external is None else ("http" if external.url else "stdio")
        try:
            section = load_section(section_id)
        except Exception as exc:  # a section that cannot even be imported is listed as failed
            logger.warning("built-in section %s cannot be loaded: %s", section_id, exc)
            entries[section_id] = SectionEntry(
                id=section_id,
                name=(external.name if external else None) or section_id,
                description=external.description if external else "",
                kind=kind,
                external=external,
                load_error=f"{type(exc).__name__}: {exc}",
            )
            continue
        entries[section_id] = SectionEntry(
            id=section_id,
            name=(external.name if external else None) or section.name,
            description=(external.description if external else "") or section.description,
            kind=kind,
            declaration=section,
            external=external,
        )
    for section_id in sorted(gateway.sections):
        if section_id in entries:
            continue
        external = gateway.sections[section_id]
        entries[section_id] = SectionEntry(
            id=section_id,
            name=external.name or section_id,
            description=external.description,
            kind="http" if external.url else "stdio",
            external=external,
        )
    return entries
