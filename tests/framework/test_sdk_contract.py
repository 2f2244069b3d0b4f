"""The private corners of the `mcp` SDK that `shared/serving/sdk_tools.py` relies on (and nothing else does).

When an SDK release moves one of them, the test that fails names the symbol, so the fix starts in the right place.
"""

from __future__ import annotations

import importlib
import inspect
import re

import anyio
import pytest

from tests.stdio import REPO

ADAPTER = REPO / "shared" / "serving" / "sdk_tools.py"


def test_create_context_streams_still_exists() -> None:
    module = importlib.import_module("mcp.shared._context_streams")
    assert callable(getattr(module, "create_context_streams", None)), (
        "SDK changed: mcp.shared._context_streams.create_context_streams is gone (used by shared/serving/sdk_tools.py)"
    )
    assert hasattr(module, "ContextSendStream") and hasattr(module, "ContextReceiveStream"), (
        "SDK changed: mcp.shared._context_streams.ContextSendStream / ContextReceiveStream"
    )


def test_mcpserver_keeps_its_lowlevel_server_with_run_on_streams() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="contract")
    lowlevel = getattr(server, "_lowlevel_server", None)
    assert lowlevel is not None, "SDK changed: MCPServer._lowlevel_server is gone (used by shared/serving/sdk_tools.py)"
    parameters = list(inspect.signature(lowlevel.run).parameters)
    assert parameters[:3] == ["read_stream", "write_stream", "initialization_options"], (
        f"SDK changed: MCPServer._lowlevel_server.run{parameters} no longer takes (read, write, options)"
    )
    assert callable(lowlevel.create_initialization_options)


def test_server_session_keeps_a_connection_attribute() -> None:
    from mcp.server.session import ServerSession

    source = inspect.getsource(ServerSession)
    assert re.search(r"self\._connection\b", source), (
        "SDK changed: ServerSession._connection is gone (the client-roots cache key in shared/serving/sdk_tools.py)"
    )


def test_the_http_transport_keeps_its_request_streams() -> None:
    from mcp.server.streamable_http import StreamableHTTPServerTransport

    source = inspect.getsource(StreamableHTTPServerTransport)
    assert re.search(r"self\._request_streams\b", source), (
        "SDK changed: StreamableHTTPServerTransport._request_streams is gone (response_stream_open in "
        "shared/serving/sdk_tools.py: an approval question withdrawn when its client is gone)"
    )


def test_arg_model_base_keeps_model_dump_one_level() -> None:
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata

    assert callable(getattr(ArgModelBase, "model_dump_one_level", None)), (
        "SDK changed: ArgModelBase.model_dump_one_level is gone "
        "(overridden by RawArguments in shared/serving/sdk_tools.py)"
    )
    assert "model_dump_one_level" in inspect.getsource(FuncMetadata), (
        "SDK changed: FuncMetadata no longer calls model_dump_one_level, so RawArguments would not be used"
    )


def test_the_sdk_still_ships_its_opentelemetry_middleware_in_every_server() -> None:
    from mcp.server._otel import OpenTelemetryMiddleware
    from mcp.server.mcpserver import MCPServer

    assert any(isinstance(item, OpenTelemetryMiddleware) for item in MCPServer(name="contract").middleware), (
        "SDK changed: mcp.server._otel.OpenTelemetryMiddleware is no longer in MCPServer.middleware "
        "(taken out by shared/serving/sdk_tools.py without_sdk_tracing)"
    )


def test_a_tool_added_to_the_tool_managers_dict_is_listed() -> None:
    from mcp.server.mcpserver import MCPServer

    from mcp_sections.shared.serving.sdk_tools import add_built_tools, raw_tool

    async def call(arguments: dict[str, object], context: object) -> object:
        raise AssertionError("never called")

    server = MCPServer(name="contract")
    assert isinstance(getattr(getattr(server, "_tool_manager", None), "_tools", None), dict), (
        "SDK changed: MCPServer._tool_manager._tools is no longer a dict of tools by name (add_built_tools in "
        "shared/serving/sdk_tools.py)"
    )
    schema = {"type": "object"}
    late = raw_tool(
        name="late", title="Late", description="-", input_schema=schema, output_schema=None, annotations=None, call=call
    )  # type: ignore[arg-type]
    add_built_tools(server, [late])
    assert [tool.name for tool in anyio.run(server.list_tools)] == ["late"], (
        "SDK changed: a tool put in MCPServer._tool_manager._tools is not listed (add_built_tools)"
    )


@pytest.mark.parametrize(
    "private",
    [
        "_context_streams",
        "_lowlevel_server",
        "_connection",
        "model_dump_one_level",
        "_otel",
        "_tool_manager",
        "_request_streams",
    ],
)
def test_private_sdk_names_are_used_in_the_adapter_only(private: str) -> None:
    pattern = re.compile(rf"(?<!\w){private}\b")
    own = re.compile(rf"(self|cls)\.{private}\b|def \w*{private}")
    users = sorted(
        path.relative_to(REPO).as_posix()
        for folder in ("shared", "servers")
        for path in (REPO / folder).rglob("*.py")
        if any(pattern.search(line) and not own.search(line) for line in path.read_text(encoding="utf-8").splitlines())
    )
    assert users == ["shared/serving/sdk_tools.py"], f"{private} is used outside the SDK adapter: {users}"
    assert ADAPTER.exists()
