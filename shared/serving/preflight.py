"""Preflight: a call checked against its tool's policy before the person is asked to approve it.

Asking "Allow run_command rm -rf /?" about a call that can never run (a program off the allow-list, a `cwd` outside
the roots, `cat .env`) is alarming noise. A tool may declare a preflight (`@tool(preflight=...)`,
`shared.framework.tools.Preflight`): a check of one call's arguments against its policy that runs nothing. Approval
(`shared.serving.approval`) runs it before it asks; a call it refuses answers its coded error at once, unasked, and
its refusal is audited like any call's.

Only the policy's refusals count (`POLICY_CODES`: PERMISSION_DENIED, INVALID_INPUT, MAX_LIMIT_EXCEEDED); anything
else a preflight raises is left to the call itself (it is asked about as before, then reports it).

Through the gateway the question is the gateway's and the tool is a section's: the gateway asks the section with a
request of its own, `mcp-sections/preflight` {name, arguments} → {refused: the error's payload | null}, answered by
the section's server without running anything (`ServePreflight`, only on a server with approval off: a section the
gateway started, whose calls its client was asked about already). The request never runs a tool, so no caller can
use it to skip approval; an agent cannot send it at all (it reaches sections only through the gateway's gate, which
forwards tool calls), and a section that does not know it (older, third-party) is asked nothing: the gateway sends it
only to its built-in sections, and takes an error for "no preflight".
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio.to_thread
import mcp_types as types
from pydantic import BaseModel, Field

from mcp_sections.shared.framework.tools import ToolSpec
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.serving.calls import parse_arguments

logger = logging.getLogger("mcp_sections.preflight")

PREFLIGHT_METHOD = "mcp-sections/preflight"
POLICY_CODES = frozenset({ErrorCode.PERMISSION_DENIED, ErrorCode.INVALID_INPUT, ErrorCode.MAX_LIMIT_EXCEEDED})

#: One call's preflight, from its raw arguments: the failure it would answer, or None (it may run: ask).
Check = Callable[[dict[str, Any]], Awaitable[ToolFailure | None]]


async def preflight_failure(spec: ToolSpec, arguments: dict[str, Any], state: Any) -> ToolFailure | None:
    """What `spec`'s preflight refuses of this call (None: nothing, or the tool declares no preflight); `state`: the
    section's state (its `aget()`), which the check reads."""
    if spec.preflight is None:
        return None
    check = spec.preflight
    try:
        params = parse_arguments(spec.input_model, arguments, spec.name)
        value = await state.aget()
        await anyio.to_thread.run_sync(lambda: check(params, value))
    except ToolFailure as failure:
        return failure if failure.code in POLICY_CODES else None
    except Exception:  # the call itself will tell: it is asked about as before
        logger.warning("the preflight of %s failed; the call is asked about as usual", spec.name, exc_info=True)
    return None


class PreflightParams(types.RequestParams):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class PreflightRequest(types.Request[PreflightParams, Literal["mcp-sections/preflight"]]):
    method: Literal["mcp-sections/preflight"] = "mcp-sections/preflight"
    params: PreflightParams


class PreflightResult(types.Result):
    refused: dict[str, Any] | None = None  # `ToolFailure.payload()` of the refusal


def request(tool: str, arguments: dict[str, Any]) -> PreflightRequest:
    """The request a gateway sends its section before asking about a call of `tool`."""
    return PreflightRequest(params=PreflightParams(name=tool, arguments=arguments))


def refusal_of(result: BaseModel) -> ToolFailure | None:
    """The section's refusal in a `PreflightResult`, as the ToolFailure the call would have answered."""
    refused = getattr(result, "refused", None)
    if not isinstance(refused, dict):
        return None
    try:
        code = ErrorCode(str(refused.get("error_code")))
    except ValueError:
        return None
    details = refused.get("details")
    return ToolFailure(code, str(refused.get("error", "")), **(details if isinstance(details, dict) else {}))


class ServePreflight:
    """Middleware: answers `mcp-sections/preflight` from the checks of this server's tools, running none of them,
    on a server with approval off (see the module docstring); elsewhere the method stays unknown."""

    def __init__(self, checks: dict[str, Check], enabled: bool) -> None:
        self._checks = checks
        self._enabled = enabled

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if getattr(ctx, "method", None) != PREFLIGHT_METHOD or not self._enabled:
            return await call_next(ctx)
        params = ctx.params or {}
        name, arguments = params.get("name"), params.get("arguments") or {}
        check = self._checks.get(name) if isinstance(name, str) else None
        failure = await check(arguments) if check is not None and isinstance(arguments, dict) else None
        return {"refused": failure.payload() if failure is not None else None}
