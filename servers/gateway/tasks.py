"""Which gateway calls run as MCP tasks (`shared.serving.tasks`), and where the bulky parts of forwarded results are
read.

The gateway runs a long call as a task of its own: the task's work is the gate's dispatch as for any call (grant,
approval, audit lines when it starts and when it ends or is cancelled), and a forwarded call is an ordinary
`tools/call` to the section. Cancelling the task cancels that call, which the SDK client turns into
`notifications/cancelled`: the section's handler is cancelled, and its tool stops its process group, browser page
or sub-agent. (Mapping the task onto a task of the section instead would need every section, third-party ones
included, to speak tasks, and would bypass the gate.) A call is long when:
- `plan_actions`: always (a sub-agent);
- `call_section_tool` and an exposed tool: when the target tool is (its declaration's `long` for a built-in section,
  else `execution.taskSupport` in the section's tools/list).

`resources/read` of a URI another section minted (`mcp-sections://<section>/...`) is answered by that section.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from mcp.shared.exceptions import MCPError

from mcp_sections.servers.pool.gate import FORWARD_TOOL
from mcp_sections.shared.framework.resources import server_of
from mcp_sections.shared.framework.tools import ToolSpec

logger = logging.getLogger("mcp_sections.gateway.tasks")


class GatewayTasks:
    """The gateway's `shared.serving.tasks.TaskPolicy` (see the module docstring)."""

    def __init__(self, gateway: Any) -> None:
        self._gateway = gateway

    def support(self, tool: str) -> Literal["optional"] | None:
        spec = self._own(tool)
        if spec is not None:
            return spec.task_support
        route = self._gateway.exposed.get(tool)
        return _published_support(route.definition) if route is not None else None

    def runs_long(self, tool: str, arguments: dict[str, Any]) -> bool:
        target = self._target(tool, arguments)
        if target is None:
            spec = self._own(tool)
            return spec is not None and spec.runs_long(arguments)
        section, name, target_arguments = target
        return self._target_runs_long(section, name, target_arguments)

    def _own(self, tool: str) -> ToolSpec | None:
        from .core import GATEWAY_SPECS

        return GATEWAY_SPECS.get(tool) if tool in self._gateway.own_tool_names() else None

    def _target(self, tool: str, arguments: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
        """(section, tool, arguments) of a forwarded call: call_section_tool's arguments, or an exposed tool."""
        if tool == FORWARD_TOOL:
            section, name, inner = arguments.get("section"), arguments.get("tool"), arguments.get("arguments")
            if isinstance(section, str) and isinstance(name, str):
                return section, name, inner if isinstance(inner, dict) else {}
            return None
        route = self._gateway.exposed.get(tool)
        return (route.section, route.tool, arguments) if route is not None else None

    def _target_runs_long(self, section: str, tool: str, arguments: dict[str, Any]) -> bool:
        entry = self._gateway.catalog.get(section)
        if entry is None:
            return False
        if entry.builtin and entry.declaration is not None:
            spec = next((spec for spec in entry.declaration.specs if spec.name == tool), None)
            return spec is not None and spec.runs_long(arguments)
        listed = entry.definitions(self._gateway.settings) or []  # a third-party section, once listed
        definition = next((item for item in listed if item.get("name") == tool), None)
        return definition is not None and _published_support(definition) is not None


def _published_support(definition: dict[str, Any]) -> Literal["optional"] | None:
    """A tools/list entry's task support, as the gateway publishes it ("required" is offered as optional: the
    gateway runs the call as its own task whenever the client allows one)."""
    execution = definition.get("execution")
    support = execution.get("taskSupport") if isinstance(execution, dict) else None
    return "optional" if support in ("optional", "required") else None


def section_resources(gateway: Any) -> Any:
    """The `shared.framework.resources.ServeResults` fallback: a URI minted by a section is read from that section."""

    async def read(uri: str) -> dict[str, Any] | None:
        section = server_of(uri)
        if section is None or section not in gateway.catalog:
            return None
        try:
            return await gateway.pool.launcher(section).read_resource(uri)
        except MCPError:
            return None

    return read
