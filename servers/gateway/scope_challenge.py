"""Which scope a client's `tools/call` needs that its access token lacks, told before the call reaches MCP.

A team's gateway (`[gateway.auth.scopes]`, `servers/pool/filters.py`) answers a call its user's token does not allow,
when a token with another scope would, with HTTP 403 `insufficient_scope` naming that scope
(`shared.serving.http_auth.ScopeChallenge`): a client can ask its user for a broader token and call again, as the MCP
authorization specification's step-up flow describes. That is decided here from the request alone: a call of
`call_section_tool` or of an exposed tool, by the same check the gate makes (`SectionPool.check_shown`, run for the
token's user and for a caller without scopes: only a refusal of the token's scopes is a challenge). Whatever is
decided later stays a tool error (PERMISSION_DENIED naming the scope): a sub-agent's call inside `plan_actions`, a
call refused by the gateway's own rules whatever the token, a call whose arguments do not name a tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_sections.servers.pool.gate import FORWARD_TOOL
from mcp_sections.servers.pool.pool import SectionPool
from mcp_sections.shared.framework.clients import LOCAL_USER, User, calling
from mcp_sections.shared.ground.errors import ToolFailure
from mcp_sections.shared.serving.http_auth import ScopeNeeded


class CallScopes:
    """`shared.serving.http_auth.ScopeRule` of one gateway: the scope a client's call needs, if its token lacks it."""

    def __init__(self, pool: SectionPool) -> None:
        self._pool = pool

    async def __call__(self, user: User, tool: str, arguments: Mapping[str, Any]) -> ScopeNeeded | None:
        filters = self._pool.filters
        if not filters.scopes or user.scopes is None:
            return None
        target = self._target(tool, arguments)
        if target is None:
            return None
        section, name, call_arguments = target
        refusal = await self._refusal(user, section, name, call_arguments)
        if refusal is None or await self._refusal(LOCAL_USER, section, name, call_arguments) is not None:
            return None  # allowed, or refused whatever the token (another scope would not help)
        annotations = self._pool.call_annotations(section, name, call_arguments)
        allowing = filters.scopes_allowing(section, name, annotations)
        if not allowing or filters.reading_allowed(section, name, user.scopes):
            return None  # no scope would help, or the call runs without its writing argument: the tool error says which
        held = [grant.scope for grant in filters.scopes if grant.scope in user.scopes]
        # the token's scopes the gateway knows, and the first configured one that allows the call: what it may keep
        return ScopeNeeded(tuple(dict.fromkeys([*held, allowing[0]])), refusal)

    def _target(self, tool: str, arguments: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
        """(section, tool, arguments) a client's call runs: `call_section_tool`'s arguments name them, an exposed
        tool's route does; None for the gateway's own tools (never filtered) and for arguments that name nothing."""
        if tool == FORWARD_TOOL:
            section, name, inner = arguments.get("section"), arguments.get("tool"), arguments.get("arguments", {})
            if isinstance(section, str) and isinstance(name, str) and isinstance(inner, dict):
                return section, name, inner
            return None
        route = self._pool.exposed.get(tool)
        return (route.section, route.tool, dict(arguments)) if route is not None else None

    async def _refusal(self, user: User, section: str, tool: str, arguments: dict[str, Any]) -> str | None:
        """Why the gateway's tool filters refuse this call for `user` (None: they do not)."""
        with calling(user):
            try:
                await self._pool.check_shown(section, tool, arguments)
            except ToolFailure as refused:
                return refused.message
        return None
