"""The floor of a process hop with the `mcp` SDK: the least a forwarding server can do, and nothing more.

Run: python benchmarks/sdk_forwarder.py COMMAND [ARGS...] (serves stdio). One tool, `forward(tool,
arguments)`, sends the call to one backend stdio server over a kept-open SDK `Client` and returns its result
unchanged: no catalog, no argument check, no output-schema check, no progress relay, the project's fast stdio
transport on the front. Whatever a real gateway adds sits on top of what this costs. Benchmark-only.

With an `OTEL_EXPORTER_OTLP_ENDPOINT` set, the process exports what the SDK's own OpenTelemetry instrumentation
makes (a SERVER span per request, a CLIENT span per request it sends), as the suite's processes configure it: the
floor of tracing a hop.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ToolAnnotations

from mcp_sections.shared.serving import telemetry
from mcp_sections.shared.serving.sdk_tools import raw_tool
from mcp_sections.shared.serving.stdio import run_stdio


async def _accept(name: str, result: CallToolResult) -> None:
    """Skips the client's jsonschema check of structured results."""


async def main(command: str, args: list[str]) -> None:
    telemetry.configure("sdk-forwarder")  # nothing without an OTLP endpoint in the environment
    backend = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with Client(backend, mode="legacy") as client:
        client.session.validate_tool_result = _accept  # type: ignore[method-assign]
        await client.list_tools()

        async def forward(arguments: dict[str, Any], context: Any) -> CallToolResult:
            return await client.call_tool(arguments["tool"], arguments.get("arguments") or {})  # type: ignore[return-value]

        tool = raw_tool(
            name="forward",
            title="Forward",
            description="Forward one call to the backend server.",
            input_schema={
                "type": "object",
                "properties": {"tool": {"type": "string"}, "arguments": {"type": "object"}},
            },
            output_schema=None,
            annotations=ToolAnnotations(),
            call=forward,
        )
        await run_stdio(MCPServer("sdk-forwarder", tools=[tool]))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: sdk_forwarder.py COMMAND [ARGS...]")
    anyio.run(main, sys.argv[1], sys.argv[2:])
