"""The built-in sections, by id. Each entry is imported only when asked for."""

from __future__ import annotations

import importlib

from mcp_sections.shared.framework.sections import Section
from mcp_sections.shared.ground.errors import SuiteError

BUILTIN_SECTIONS: dict[str, str] = {
    "calculator": "mcp_sections.servers.calculator.section",
    "todo": "mcp_sections.servers.todo.section",
    "file_ops": "mcp_sections.servers.file_ops.section",
    "shell_ops": "mcp_sections.servers.shell_ops.section",
    "memory": "mcp_sections.servers.memory.section",
    "rag_ops": "mcp_sections.servers.rag_ops.section",
    "orchestration": "mcp_sections.servers.orchestration.section",
    "web_ops": "mcp_sections.servers.web_ops.section",
    "media_ops": "mcp_sections.servers.media_ops.section",
}


class UnknownSection(SuiteError, LookupError):
    """No section has this id (the message lists the ones there are)."""


def load_section(section_id: str) -> Section:
    """Import one built-in section's declaration (`SECTION` in its `section` module)."""
    try:
        module_name = BUILTIN_SECTIONS[section_id]
    except KeyError:
        known = ", ".join(sorted(BUILTIN_SECTIONS))
        raise UnknownSection(f"unknown section {section_id!r}; known sections: {known}") from None
    section = importlib.import_module(module_name).SECTION
    if not isinstance(section, Section) or section.id != section_id:
        raise TypeError(f"{module_name}.SECTION must be the Section {section_id!r}")
    return section


def all_sections() -> list[Section]:
    return [load_section(section_id) for section_id in BUILTIN_SECTIONS]
