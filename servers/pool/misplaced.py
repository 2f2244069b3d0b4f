"""Where a tool called in the wrong place is: the section that has it, or the closest names to a mistyped one.

The names come from what the pool knows without starting anything — the built-in sections' declarations and the
tools a third-party section listed once it ran (what `find_tools` and `list_tool_sections` show); tools the filters
hide are never named. Each answer says the call to make (`call_section_tool(section=…, tool=…, arguments={...})`).
A tool of the host switched off by a setting (plan_actions at `max_depth = 0`) is not unknown: the answer names the
setting and where it is set.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence

from mcp_sections.shared.agents.scope import ConfigFile
from mcp_sections.shared.settings.config import Settings

from .catalog import SectionEntry

FORWARD = 'call_section_tool(section="{section}", tool="{tool}", arguments={{...}})'
MAX_SUGGESTIONS = 3
CLOSENESS = 0.7  # difflib's ratio: "read_fil" and "readfile" reach read_file, unrelated names do not


def sections_having(entries: Iterable[SectionEntry], shows: Callable[[str, str], bool]) -> dict[str, list[str]]:
    """Every tool name known of these sections (their declarations loaded) and shown → the sections that have it."""
    found: dict[str, list[str]] = {}
    for entry in entries:
        for tool in entry.declared_tools or []:
            if shows(entry.id, tool):
                found.setdefault(tool, []).append(entry.id)
    return found


def call_of(section: str, tool: str) -> str:
    return FORWARD.format(section=section, tool=tool)


def closest(name: str, candidates: Iterable[str]) -> list[str]:
    return difflib.get_close_matches(name, list(dict.fromkeys(candidates)), n=MAX_SUGGESTIONS, cutoff=CLOSENESS)


def at_the_gateway(
    having: dict[str, list[str]], tool: str, own: Sequence[str], off: Mapping[str, str] | None = None
) -> str | None:
    """Why `tool` is not one of the gateway's tools (`own`) and what to call instead; None when no section has it
    (`having`: `sections_having`) nor a name close to it. `off`: the gateway's tools switched off → why."""
    if off and tool in off:
        return off[tool]
    sections = having.get(tool)
    if sections:
        return (
            f"{tool} is a tool of the {sections[0]} section, not one of the gateway's own: call it with "
            f'{call_of(sections[0], tool)} (its arguments: describe_section(section="{sections[0]}")).'
        )
    near = closest(tool, [*own, *having])
    if not near:
        return None
    return (
        f"unknown tool {tool[:80]!r}; did you mean {_named(near, having)}? The gateway's own tools are called "
        f"directly: {', '.join(own)}."
    )


def in_section(having: dict[str, list[str]], section: str, tool: str, tools: Sequence[str], own: Sequence[str]) -> str:
    """Why section `section` (whose tools are `tools`) has no `tool`: the section that has it, the host's own tool of
    that name, or the closest names; else its tools."""
    elsewhere = [other for other in having.get(tool, []) if other != section]
    if elsewhere:
        return f"{tool} is in {elsewhere[0]}, not {section}: call it with {call_of(elsewhere[0], tool)}."
    if tool in own:
        return f"{tool} is one of the gateway's own tools, not a tool of {section}: call it directly."
    near = closest(tool, tools) or closest(tool, [*having, *own])
    guess = f"; did you mean {_named(near, having, section)}?" if near else "."
    return f"section {section!r} has no tool {tool[:80]!r}{guess} Its tools are: {', '.join(tools)}."


def _named(names: Sequence[str], having: dict[str, list[str]], section: str | None = None) -> str:
    """Suggested names, each with the call that reaches it (a tool of `section` itself needs no more)."""
    said = []
    for name in names:
        sections = having.get(name, [])
        if section is not None and section in sections:
            said.append(name)
        elif sections:
            said.append(f"{name} (in {sections[0]}: {call_of(sections[0], name)})")
        else:
            said.append(f"{name} (a gateway tool, called directly)")
    return " or ".join(said)


DEPTH_VARIABLE = "MCP_SECTIONS_GATEWAY_MAX_DEPTH"


def depth_zero(tool: str, settings: Settings) -> str:
    """Why `tool` (plan_actions, spawn_agent, …) is off: the gateway's max_depth is 0, set by the command line, the
    environment or `[gateway]` of the settings' config file, each winning over the next (`LayeredSettings`)."""
    file_table = settings.gateway if isinstance(settings.gateway, dict) else {}
    raw = next((value for name, value in os.environ.items() if name.upper() == DEPTH_VARIABLE and value != ""), None)
    if raw is not None and raw.strip() == "0":
        where = f"{DEPTH_VARIABLE}=0 in the gateway's environment"
    elif raw is None and file_table.get("max_depth") == 0:
        where = f"[gateway] max_depth = 0 in {ConfigFile.of(settings.config_file)}"
    else:
        where = "--max-depth 0 on the gateway's command line"
    return f"{tool} is off: {where}; raise it to allow sub-agents."
