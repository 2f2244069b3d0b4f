"""`completion/complete`: the values an argument of a resource template (or a prompt) can take, for a client to offer
as the user types.

Every server of the suite answers it (the `completions` capability); a server says which arguments have a known set
of values with a `Completer` — the gateway's resource templates complete section ids, tool names and brain projects
(`servers/gateway/resources.py`). Matches are ranked: the values that start with what was typed (case-insensitive),
then those that contain it, each in the source's order; at most `MAX_VALUES` are sent, with the total and `hasMore`.
An argument nothing is known about gets an empty list (not an error: the client simply offers nothing).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CompleteRequestParams, CompleteResult, Completion

from mcp_sections.shared.serving.sdk_tools import lowlevel_server

MAX_VALUES = 100  # the protocol's limit per answer

#: `(reference, argument name, typed value) -> the argument's values`, or None when nothing is known about it. The
#: reference is a template's URI (`ref/resource`) or a prompt's name (`ref/prompt`).
Completer = Callable[[str, str, str], Awaitable[Sequence[str] | None]]


def serve_completions(server: MCPServer, completer: Completer | None = None) -> None:
    """Answer `completion/complete` on `server` with `completer`'s values (none at all without one)."""

    async def complete(ctx: Any, params: CompleteRequestParams) -> CompleteResult:
        ref = params.ref
        reference = str(getattr(ref, "uri", None) or getattr(ref, "name", "") or "")
        values = await completer(reference, params.argument.name, params.argument.value) if completer else None
        return CompleteResult(completion=ranked(values or (), params.argument.value))

    lowlevel_server(server).add_request_handler("completion/complete", CompleteRequestParams, complete)


def ranked(values: Sequence[str], typed: str) -> Completion:
    """The values matching what was typed (see the module docstring), at most `MAX_VALUES` of them."""
    wanted = typed.casefold()
    starting = [value for value in values if value.casefold().startswith(wanted)]
    containing = [value for value in values if wanted in value.casefold() and value not in starting]
    matches = list(dict.fromkeys(starting + containing))
    return Completion(values=matches[:MAX_VALUES], total=len(matches), has_more=len(matches) > MAX_VALUES)
