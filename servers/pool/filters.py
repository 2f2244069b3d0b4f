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

A read-only rule decides a call by that call's annotations, as approval does (`SectionPool.call_annotations`: a
built-in tool's `annotations_of`, else the listed ones). A tool listed as one that may write whose plainest calls
only read (fetch_web_page: it writes only with `ingest=true`; `ReadOnlyCalls`, probed from its declaration) stays
listed under a read-only rule, its description saying which arguments are refused there, and a call of it that may
write is refused naming the rule and the argument to drop. A third-party section's tools have only their listed
annotations: the worst case decides.

Per user (a gateway that is an OAuth resource server, `[gateway.auth]`): `[gateway.auth.scopes]` maps each scope of
the access tokens to a profile (`readonly`, a `[gateway.profiles.<name>]`, or `all`: no rule). A call of an OAuth
user may run a tool when one of the token's mapped scopes allows it, besides the rules above; otherwise it is
refused with PERMISSION_DENIED naming the scopes that would allow it (the user of the call is
`shared.framework.clients.current_user()`, its scopes those the token carries). What is listed stays the same for
every user — a tools/list may not differ by connection — only calls follow the scopes. Users without scopes (the
single bearer token, stdio, loopback) and tokens of a gateway without `[gateway.auth.scopes]` are not limited by them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from fnmatch import fnmatchcase
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from mcp_sections.shared.framework.clients import current_user
from mcp_sections.shared.framework.tools import Annotations, ToolSpec

ALL_TOOLS = "all"  # the profile of a scope that allows every tool the gateway's own rules leave
READS = {"readOnlyHint": True}  # the annotations of a call that only reads


def read_only_hint(annotations: Any) -> bool:
    """Whether annotations (MCP hints, a declaration's own, or None: unknown) say read-only."""
    if isinstance(annotations, Annotations):
        return annotations.read_only
    return bool((annotations or {}).get("readOnlyHint"))


@dataclass(frozen=True)
class ReadOnlyCalls:
    """A tool listed as one that may write, whose plainest call (every argument left to its default) only reads:
    `writing` are the arguments (`name=value`) found to make a call of it write."""

    writing: tuple[str, ...]

    def words(self) -> str:
        return " or ".join(self.writing) or "arguments that make it write"


#: (section, tool) -> its `ReadOnlyCalls`, None when no call of it is known to only read (the pool's).
CallsLookup = Callable[[str, str], ReadOnlyCalls | None]


def read_only_calls(spec: ToolSpec) -> ReadOnlyCalls | None:
    """What a declared tool that may write does on its plainest calls, by its per-call annotations
    (`ToolSpec.annotations_for`, the ones approval decides by): its input with every argument at its default, then
    each boolean, Literal or Enum argument changed alone. None: it has no per-call annotations, or its plainest call
    writes too, or its annotations need an argument that has no default (then its listed worst case decides)."""
    if spec.annotations.read_only or spec.annotations_of is None:
        return None
    model = spec.input_model
    try:
        if not spec.annotations_for(model.model_construct()).read_only:
            return None
        writing = [
            f"{name}={shown_value(value)}"
            for name, info in model.model_fields.items()
            if not info.is_required()
            for value in _choices(info.annotation)
            if value != info.default and not spec.annotations_for(model.model_construct(**{name: value})).read_only
        ]
    except Exception:  # annotations_of read an argument without a default: only a real call tells
        return None
    return ReadOnlyCalls(tuple(writing))


def _choices(annotation: Any) -> tuple[Any, ...]:
    """The values an argument of this type can take, when they are few (booleans, Literals, Enums)."""
    if annotation is bool:
        return (True, False)
    origin = get_origin(annotation)
    if origin is Literal:
        return get_args(annotation)
    if origin is Union or origin is UnionType:
        return tuple(value for option in get_args(annotation) for value in _choices(option))
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return tuple(annotation)
    return ()


def shown_value(value: Any) -> str:
    """An argument's value as a call writes it (JSON), cut short."""
    text = json.dumps(value.value if isinstance(value, Enum) else value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


@dataclass(frozen=True)
class ScopeGrant:
    """What one scope of an access token allows: the rules of its profile (none for `all`)."""

    scope: str
    profile: str
    enabled: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()
    read_only: bool = False

    def allows(self, section: str, tool: str, annotations: Any) -> bool:
        """Whether a call of `tool` with these annotations (the call's, or the listed ones) is allowed."""
        if self.read_only and not read_only_hint(annotations):
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
    calls, for every caller; `scopes`: what each scope of a user's access token allows; `calls`: which tools have
    calls that only read though they are listed as ones that may write (the pool's, bound by `knowing`)."""

    enabled: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()
    profile: str | None = None
    profile_enabled: tuple[str, ...] = ()
    profile_disabled: tuple[str, ...] = ()
    read_only: bool = False
    scopes: tuple[ScopeGrant, ...] = ()
    calls: CallsLookup | None = field(default=None, compare=False, repr=False)

    def knowing(self, calls: CallsLookup) -> ToolFilter:
        """The same rules, told which tools have calls that only read (`ReadOnlyCalls`)."""
        return replace(self, calls=calls)

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

    def refusal(self, section: str, tool: str, annotations: Any, drop: Sequence[str] = ()) -> str | None:
        """Why the caller may not make this call of `tool` of `section`, naming the setting or the scope (None: it
        may). `annotations`: the call's (`SectionPool.call_annotations`; None when unknown: then a read-only rule
        refuses it); `drop`: its arguments (`name=value`) without which it would only read."""
        return self._hidden(section, tool, annotations, drop) or self._out_of_scope(section, tool, annotations, drop)

    def _hidden(self, section: str, tool: str, annotations: Any, drop: Sequence[str] | None) -> str | None:
        """Why `tool` is hidden from everyone, naming the setting (None: it is shown). `drop` None: is it listed
        (`annotations` as listed: a tool with calls that only read is); else: may this call run."""
        profile = f"[gateway.profiles.{self.profile}]"
        if self.read_only and not read_only_hint(annotations):
            reads = self._reads(section, tool)
            where = f"the gateway runs with profile {self.profile!r} ([gateway] profile / --profile)"
            if reads is None:
                return f"{where}: only tools annotated read-only are available, and {tool} is not"
            if drop is not None:
                return f"{where}: only calls that only read are available, and {_writing(tool, reads, drop)}"
        for patterns, where in ((self.enabled, "[gateway] enabled_tools"), (self.profile_enabled, profile)):
            if patterns and _matching(patterns, section, tool) is None:
                return f"{tool} matches none of the patterns of {where} ({', '.join(patterns)})"
        for patterns, where in ((self.disabled, "[gateway] disabled_tools"), (self.profile_disabled, profile)):
            pattern = _matching(patterns, section, tool)
            if pattern is not None:
                return f"{tool} is hidden by the pattern {pattern!r} of {where}"
        return None

    def scopes_allowing(self, section: str, tool: str, annotations: Any) -> list[str]:
        """The configured scopes whose grant allows this call (`annotations`: the call's own), in their order."""
        return [grant.scope for grant in self.scopes if grant.allows(section, tool, annotations)]

    def reading_allowed(self, section: str, tool: str, scopes: Collection[str]) -> bool:
        """Whether `scopes` allow `tool`'s calls that only read (False: it has none, or they do not): then a call
        refused for writing runs once the caller drops the argument that writes."""
        reads = READS if self._reads(section, tool) is not None else None
        return reads is not None and any(g.allows(section, tool, reads) for g in self.scopes if g.scope in scopes)

    def _out_of_scope(self, section: str, tool: str, annotations: Any, drop: Sequence[str]) -> str | None:
        """Why the current user's access token does not allow this call (None: it does, or no scope applies)."""
        user = current_user()
        if not self.scopes or user is None or user.scopes is None:
            return None
        held = [grant for grant in self.scopes if grant.scope in user.scopes]
        if any(grant.allows(section, tool, annotations) for grant in held):
            return None
        needed = self.scopes_allowing(section, tool, annotations)
        has = "; ".join(f"{grant.scope!r} gives {grant.describe()}" for grant in held) or "none of its scopes applies"
        reads = self._reads(section, tool) if not read_only_hint(annotations) else None
        if reads is not None and any(grant.allows(section, tool, READS) for grant in held):
            other = f" (or ask for a token with the scope {' or '.join(map(repr, needed))})" if needed else ""
            return f"your access token allows {tool} only for calls that only read ({has}), and " + (
                _writing(tool, reads, drop) + other
            )
        call = f"{tool} with {', '.join(drop)}" if drop else tool
        if not needed:
            return f"{call} is allowed by no scope of [gateway.auth.scopes] (your access token: {has})"
        return (
            f"{call} needs the scope {' or '.join(map(repr, needed))} (your access token: {has}); ask the "
            "authorization server for a token with that scope"
        )

    def shows(self, section: str, tool: str, annotations: Any) -> bool:
        """Whether `tool` is listed (`annotations`: as listed): by the gateway's rules only, the same for every
        user."""
        return self._hidden(section, tool, annotations, None) is None

    def shown_definitions(self, section: str, definitions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The definitions of `section`'s tools this filter shows; a tool shown for its calls that only read says in
        its description which arguments a read-only rule refuses (`note`)."""
        if not self.active:
            return list(definitions)
        shown = []
        for item in definitions:
            if self.shows(section, item["name"], item.get("annotations")):
                note = self.note(section, item["name"], item.get("annotations"))
                shown.append(item if note is None else {**item, "description": f"{item.get('description', '')}{note}"})
        return shown

    def note(self, section: str, tool: str, annotations: Any) -> str | None:
        """What a listed tool's description adds when a read-only rule refuses some of its calls (`annotations`: as
        listed): the rules, and the arguments they refuse. None: no such rule, or every call of it reads."""
        reads = None if read_only_hint(annotations) else self._reads(section, tool)
        if reads is None:
            return None
        rules = [f"the gateway's profile {self.profile!r}"] if self.read_only else []
        rules += [
            f"the scope {grant.scope!r}"
            for grant in self.scopes
            if grant.read_only and grant.allows(section, tool, READS)
        ]
        if not rules:
            return None
        return (
            f"\n\nUnder {' and '.join(rules)} only calls that only read may run: a call with {reads.words()} is "
            "refused (PERMISSION_DENIED)."
        )

    def _reads(self, section: str, tool: str) -> ReadOnlyCalls | None:
        return self.calls(section, tool) if self.calls is not None else None

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


def _writing(tool: str, reads: ReadOnlyCalls, drop: Sequence[str]) -> str:
    """A refused call of a tool with calls that only read: what makes this one write, and what to drop."""
    if drop:
        names = " or ".join(dict.fromkeys(argument.split("=", 1)[0] for argument in drop))
        return f"this call of {tool} may write because of {', '.join(drop)}: call it again without {names}"
    return f"this call of {tool} may write: {tool} only reads without {reads.words()}"


def _matching(patterns: Sequence[str], section: str, tool: str) -> str | None:
    qualified = f"{section}:{tool}"
    return next((p for p in patterns if fnmatchcase(tool, p) or fnmatchcase(qualified, p)), None)
