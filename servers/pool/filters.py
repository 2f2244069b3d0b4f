"""Tool filters and profiles: which section tools an agent host shows and lets anyone call.

`[gateway]` settings (see `settings.py`):
- `disabled_tools`: patterns of tools hidden everywhere;
- `enabled_tools`: when set, only tools matching one of these patterns are shown;
- `profile` (CLI `--profile NAME`): a named set of the same rules, `[gateway.profiles.<name>]` with its own
  `enabled_tools`, `disabled_tools` and `read_only = true` (only tools annotated read-only). `readonly` is built in.
A pattern is a shell-style glob (`*`, `?`, `[abc]`) matched against a tool's name as its section declares it, or
against `<section>:<tool>` (`shell_ops:*` hides a whole section). The gateway's own tools are never filtered.

A hidden tool is hidden wherever a tool is seen or called: `list_tool_sections`, `describe_section`, `find_tools`,
the tools exposed in the gateway's tools/list, the tools a sub-agent is given, and every call through the gate
(PERMISSION_DENIED naming the setting, before anything runs or anyone is asked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any


@dataclass(frozen=True)
class ToolFilter:
    """The filter rules in force (see the module docstring)."""

    enabled: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()
    profile: str | None = None
    profile_enabled: tuple[str, ...] = ()
    profile_disabled: tuple[str, ...] = ()
    read_only: bool = False

    @property
    def active(self) -> bool:
        return bool(self.enabled or self.disabled or self.profile_enabled or self.profile_disabled or self.read_only)

    def refusal(self, section: str, tool: str, annotations: Mapping[str, Any] | None) -> str | None:
        """Why `tool` of `section` is hidden, naming the setting (None: it is shown). `annotations`: its
        tools/list annotations (None when unknown: then the read-only rule hides it)."""
        if not self.active:
            return None
        profile = f"[gateway.profiles.{self.profile}]"
        if self.read_only and not (annotations or {}).get("readOnlyHint"):
            return (
                f"the gateway runs with profile {self.profile!r} ([gateway] profile / --profile): only tools "
                f"annotated read-only are available, and {tool} is not"
            )
        for patterns, where in ((self.enabled, "[gateway] enabled_tools"), (self.profile_enabled, profile)):
            if patterns and _matching(patterns, section, tool) is None:
                return f"{tool} matches none of the patterns of {where} ({', '.join(patterns)})"
        for patterns, where in ((self.disabled, "[gateway] disabled_tools"), (self.profile_disabled, profile)):
            pattern = _matching(patterns, section, tool)
            if pattern is not None:
                return f"{tool} is hidden by the pattern {pattern!r} of {where}"
        return None

    def shows(self, section: str, tool: str, annotations: Mapping[str, Any] | None) -> bool:
        return self.refusal(section, tool, annotations) is None

    def shown_definitions(self, section: str, definitions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The definitions of `section`'s tools this filter shows."""
        if not self.active:
            return list(definitions)
        return [item for item in definitions if self.shows(section, item["name"], item.get("annotations"))]

    def describe(self) -> str:
        """One line for logs and the status page."""
        if not self.active:
            return "none"
        parts = []
        if self.profile:
            parts.append(f"profile {self.profile}" + (" (read-only tools)" if self.read_only else ""))
        if self.enabled or self.profile_enabled:
            parts.append("enabled: " + ", ".join((*self.enabled, *self.profile_enabled)))
        if self.disabled or self.profile_disabled:
            parts.append("disabled: " + ", ".join((*self.disabled, *self.profile_disabled)))
        return "; ".join(parts)


def _matching(patterns: Sequence[str], section: str, tool: str) -> str | None:
    qualified = f"{section}:{tool}"
    return next((p for p in patterns if fnmatchcase(tool, p) or fnmatchcase(qualified, p)), None)
