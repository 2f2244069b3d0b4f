"""What a person can attach from the gateway, and complete as they type: three resource templates and their arguments.

- `mcp-sections://gateway/sections/{section}`: a section, its state and its tools' full definitions (what
  `describe_section` returns; a third-party section never started is started to list its tools);
- `mcp-sections://gateway/tools/{tool}`: one tool's definition and the section it belongs to;
- `mcp-sections://gateway/brain/{project}`: a brain project's summary (type, nodes, pending embeddings, last ingest),
  read from the SQLite brain read-only, as the status page reads it.
`completion/complete` offers their arguments' values (`shared.serving.completions`): the section ids, the tool names
known without starting anything and shown by the tool filters, and the brain's projects by name. Results under
`mcp-sections://gateway/results/...` stay `ServeResults`' business.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any
from urllib.parse import unquote

import anyio.to_thread
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_sections.shared.brain.summary import brain_summary
from mcp_sections.shared.ground.errors import ToolFailure

from .core import Gateway

BASE = "mcp-sections://gateway"
TEMPLATES: list[dict[str, Any]] = [
    {
        "uriTemplate": f"{BASE}/sections/{{section}}",
        "name": "section",
        "title": "A section and its tools",
        "description": "One section of the gateway: its state and its tools' full definitions (as describe_section).",
        "mimeType": "application/json",
    },
    {
        "uriTemplate": f"{BASE}/tools/{{tool}}",
        "name": "tool",
        "title": "A tool's definition",
        "description": "One section tool: its section, input schema, output schema and annotations.",
        "mimeType": "application/json",
    },
    {
        "uriTemplate": f"{BASE}/brain/{{project}}",
        "name": "brain-project",
        "title": "A brain project",
        "description": "One project of the brain: its type, node count, pending embeddings and last ingest.",
        "mimeType": "application/json",
    },
]
_URI = re.compile(rf"^{re.escape(BASE)}/(sections|tools|brain)/([^/?#]{{1,200}})$")


class GatewayResources:
    """Middleware (before `ServeResults`): lists the templates and answers reads of their URIs; the `Completer`."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        method = getattr(ctx, "method", None)
        if method == "resources/templates/list":
            listed = await call_next(ctx)
            if isinstance(listed, dict):
                listed["resourceTemplates"] = [*listed.get("resourceTemplates", []), *TEMPLATES]
            return listed
        uri = (ctx.params or {}).get("uri") if method == "resources/read" else None
        found = _URI.match(uri) if isinstance(uri, str) else None
        if found is None:
            return await call_next(ctx)
        content = await self.read(found.group(1), unquote(found.group(2)))
        text = json.dumps(content, ensure_ascii=False, indent=1)
        result: dict[str, Any] = {"contents": [{"uri": uri, "mimeType": "application/json", "text": text}]}
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            result["resultType"] = "complete"
        return result

    async def read(self, kind: str, key: str) -> dict[str, Any]:
        gateway = self._gateway
        try:
            if kind == "sections":
                return (await gateway.describe_section(key)).model_dump(mode="json", exclude_none=True)
            if kind == "tools":
                return await self._tool(key)
        except ToolFailure as failure:
            raise MCPError(code=INVALID_PARAMS, message=failure.message) from None
        summary = await anyio.to_thread.run_sync(brain_summary, gateway.settings.data_dir)
        project = next((p for p in summary.projects if key in (p.name, p.id)), None)
        if project is None:
            known = ", ".join(p.name for p in summary.projects) or summary.note or "none"
            raise MCPError(code=INVALID_PARAMS, message=f"no brain project {key[:80]!r}; projects: {known}.")
        return asdict(project)

    async def _tool(self, name: str) -> dict[str, Any]:
        pool = self._gateway.pool
        await pool.load_declarations()
        for section in self._gateway.catalog.values():
            if name in (section.declared_tools or []) and pool.shows(section.id, name):
                definitions = pool.filters.shown_definitions(section.id, await pool.definitions(section))
                definition = next((tool for tool in definitions if tool.get("name") == name), None)
                if definition is not None:
                    return {"section": section.id, **definition}
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"no tool {name[:80]!r} in the gateway's sections; find_tools or list_tool_sections names them.",
        )

    async def complete(self, reference: str, argument: str, typed: str) -> Sequence[str] | None:
        """The values of a template's argument (None for anything else)."""
        gateway = self._gateway
        if reference == TEMPLATES[0]["uriTemplate"] and argument == "section":
            return list(gateway.catalog)
        if reference == TEMPLATES[1]["uriTemplate"] and argument == "tool":
            await gateway.pool.load_declarations()
            return [
                tool
                for section in gateway.catalog.values()
                for tool in section.declared_tools or []
                if gateway.pool.shows(section.id, tool)
            ]
        if reference == TEMPLATES[2]["uriTemplate"] and argument == "project":
            summary = await anyio.to_thread.run_sync(brain_summary, gateway.settings.data_dir)
            return [project.name for project in summary.projects]
        return None
