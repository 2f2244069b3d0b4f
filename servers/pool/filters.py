"""Tool filters and profiles: which section tools an agent host shows and lets anyone call, and which each user may
call.

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

Per user (a gateway that is an OAuth resource server, `[gateway.auth]`): `[gateway.auth.scopes]` maps each scope of
the access tokens to a profile (`readonly`, a `[gateway.profiles.<name>]`, or `all`: no rule). A call of an OAuth
user may run a tool when one of the token's mapped scopes allows it, besides the rules above; otherwise it is
refused with PERMISSION_DENIED naming the scopes that would allow it (the user of the call is
`shared.framework.clients.current_user()`, its scopes those the token carries). What is listed stays the same for
every user — a tools/list may not differ by connection — only calls follow the scopes. Users without scopes (the
single bearer token, stdio, loopback) and tokens of a gateway without `[gateway.auth.scopes]` are not limited by them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from mcp_sections.shared.framework.clients import current_user

ALL_TOOLS = "all"  # the profile of a scope that allows every tool the gateway's own rules leave


@dataclass(frozen=True)
class ScopeGrant:
    """What one scope of an access token allows: the rules of its profile (none for `all`)."""

    scope: str
    profile: str
    enabled: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()
    read_only: bool = False

    def allows(self, section: str, tool: str, annotations: Mapping[str, Any] | None) -> bool:
        if self.read_only and not (annotations or {}).get("readOnlyHint"):
            return False
        if self.enabled and _matching(self.enabled, section, tool) is None:
            return False
        return _matching(self.disabled, section, tool) is None

    def describe(self) -> str:
        if self.profile == ALL_TOOLS:
            return "every tool"
        return f"profile {self.profile!r}" + (" (only tools annotated read-only)" if self.read_only else "")


@dataclass(frozen=True)
class ToolFilter:
    """The filter rules in force (see the module docstring). `read_only`: the gateway's profile allows only read-only
    tools, for every caller; `scopes`: what each scope of a user's access token allows."""

    enabled: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()
    profile: str | None = None
    profile_enabled: tuple[str, ...] = ()
    profile_disabled: tuple[str, ...] = ()
    read_only: bool = False
    scopes: tuple[ScopeGrant, ...] = ()

    @property
    def needs_annotations(self) -> bool:
        """Whether a read-only rule applies to some caller (the gateway's profile, or a scope's): deciding then
        needs the tool's annotations."""
        return self.read_only or any(grant.read_only for grant in self.scopes)

    @property
    def active(self) -> bool:
        """Whether anything can be refused (the rules, or the scopes of a user)."""
        rules = self.enabled or self.disabled or self.profile_enabled or self.profile_disabled
        return bool(rules or self.read_only or self.scopes)

    def refusal(self, section: str, tool: str, annotations: Mapping[str, Any] | None) -> str | None:
        """Why the caller may not call `tool` of `section`, naming the setting or the scope (None: it may).
        `annotations`: its tools/list annotations (None when unknown: then a read-only rule refuses it)."""
        return self._hidden(section, tool, annotations) or self._out_of_scope(section, tool, annotations)

    def _hidden(self, section: str, tool: str, annotations: Mapping[str, Any] | None) -> str | None:
        """Why `tool` is hidden from everyone, naming the setting (None: it is shown)."""
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

    def _out_of_scope(self, section: str, tool: str, annotations: Mapping[str, Any] | None) -> str | None:
        """Why the current user's access token does not allow `tool` (None: it does, or no scope applies)."""
        user = current_user()
        if not self.scopes or user is None or user.scopes is None:
            return None
        held = [grant for grant in self.scopes if grant.scope in user.scopes]
        if any(grant.allows(section, tool, annotations) for grant in held):
            return None
        needed = [grant.scope for grant in self.scopes if grant.allows(section, tool, annotations)]
        has = "; ".join(f"{grant.scope!r} gives {grant.describe()}" for grant in held) or "none of its scopes applies"
        if not needed:
            return f"{tool} is allowed by no scope of [gateway.auth.scopes] (your access token: {has})"
        return (
            f"{tool} needs the scope {' or '.join(map(repr, needed))} (your access token: {has}); ask the "
            "authorization server for a token with that scope"
        )

    def shows(self, section: str, tool: str, annotations: Mapping[str, Any] | None) -> bool:
        """Whether `tool` is listed: by the gateway's rules only, the same for every user."""
        return self._hidden(section, tool, annotations) is None

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
        if self.scopes:
            parts.append("by scope: " + ", ".join(f"{grant.scope} → {grant.describe()}" for grant in self.scopes))
        return "; ".join(parts)


def _matching(patterns: Sequence[str], section: str, tool: str) -> str | None:
    qualified = f"{section}:{tool}"
    return next((p for p in patterns if fnmatchcase(tool, p) or fnmatchcase(qualified, p)), None)
