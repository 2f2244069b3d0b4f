"""What the official conformance suite calls by name, served over Streamable HTTP by a section and by the gateway.

The tasks scenarios call `greet`, `slow_compute` and `failing_job` (the tasks test section's tools,
`tests/framework/tasks_section.py`), and `test_tool_with_task`: a long tool that asks the user first (on 2026-07-28 the
question is an input-required round, and the task starts on the answered round); `server-sse-polling` calls
`test_reconnection`, whose server closes the call's SSE stream mid-call (SEP-1699) so that the client must resume it
with `Last-Event-ID` (`shared/serving/event_store.py`).
Nothing here is a product section: it only gives the suite the names it expects.

    python -m tests.conformance.fixtures section PORT DATA_DIR   the section over HTTP on 127.0.0.1:PORT
    python -m tests.conformance.fixtures gateway PORT DATA_DIR   the gateway over HTTP, exposing the section's tools
    python -m tests.conformance.fixtures stdio                   the section over stdio (the gateway's section)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, Field

from mcp_sections.shared.framework.sections import Section
from mcp_sections.shared.framework.tools import READ_ONLY, ToolInput, UserAnswer, UserQuestion, tool
from tests.framework.tasks_section import TextResult, failing_job, greet, slow_compute

CLOSE_AFTER = 0.5  # seconds into the call when its stream is closed (after the priming event went out)


class ReconnectInput(ToolInput):
    seconds: float = Field(default=1.5, ge=0, le=30, description="How long the call works after its stream closes.")


@tool(name="test_reconnection", title="Close the stream mid-call", annotations=READ_ONLY)
async def test_reconnection(params: ReconnectInput) -> TextResult:
    """Work a while; its server closes the call's SSE stream meanwhile, the result comes on the resumed stream."""
    await anyio.sleep(params.seconds)
    return TextResult(text="the result after the reconnection")


class NoInput(ToolInput):
    pass


class NameForm(BaseModel):
    name: str = Field(description="Your name.", max_length=100)


def _ask_name(params: NoInput, state: Any) -> UserQuestion:
    return UserQuestion(message="What is your name?", schema=NameForm, timeout_seconds=300)


@tool(name="test_tool_with_task", title="Ask, then work", annotations=READ_ONLY, long=True, asks_user=_ask_name)
async def test_tool_with_task(params: NoInput, answer: UserAnswer) -> TextResult:
    """Ask the user's name, then work a second (a long tool: a task once the question is answered)."""
    await anyio.sleep(1)
    name = (answer.content or {}).get("name") if answer.action == "accept" else None
    return TextResult(text=f"Hello, {name or 'whoever you are'}!")


SECTION = Section(
    id="conformance",
    name="Conformance fixtures",
    description="The tools the official conformance suite calls by name.",
    tools=(greet, slow_compute, failing_job, test_tool_with_task, test_reconnection),
)


class CloseStreamMidCall:
    """Middleware: a `test_reconnection` call's SSE stream is closed `CLOSE_AFTER` seconds in (SEP-1699 polling)."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        params = getattr(ctx, "params", None) or {}
        close = getattr(ctx, "close_sse_stream", None)
        if getattr(ctx, "method", None) != "tools/call" or params.get("name") != "test_reconnection" or close is None:
            return await call_next(ctx)
        async with anyio.create_task_group() as group:

            async def later() -> None:
                await anyio.sleep(CLOSE_AFTER)
                await close()

            group.start_soon(later)
            return await call_next(ctx)


def gateway_config(data: Path) -> Path:
    """A config whose one third-party section is this module over stdio."""
    config = data / "config.toml"
    config.write_text(
        "[gateway.sections.conformance]\n"
        f'command = "{sys.executable}"\n'
        'args = ["-m", "tests.conformance.fixtures", "stdio"]\n'
        f'cwd = "{Path(__file__).resolve().parents[2]}"\n'
        'name = "Conformance fixtures"\n'
        'description = "The tools the conformance suite calls by name."\n'
        'protocol = "legacy"\n'
        f'env = {{ MCP_SECTIONS_DATA_DIR = "{data / "section"}" }}\n',
        encoding="utf-8",
    )
    return config


def main() -> None:
    from mcp_sections.servers.cli import build_parser, gateway_server, settings_from
    from mcp_sections.shared.serving.server import build_server, serve_http, transport_security
    from mcp_sections.shared.serving.stdio import run_stdio
    from mcp_sections.shared.settings.config import Settings

    kind = sys.argv[1]
    if kind == "stdio":
        server, _ = build_server(SECTION, SECTION.runtime(Settings.load()))
        anyio.run(run_stdio, server)
        return
    port, data = int(sys.argv[2]), Path(sys.argv[3])
    data.mkdir(parents=True, exist_ok=True)
    if kind == "section":
        server, _ = build_server(SECTION, SECTION.runtime(Settings.load(data_dir=data)))
    else:
        words = ["gateway", "--config", str(gateway_config(data)), "--data-dir", str(data), "--expose", "conformance"]
        arguments = build_parser().parse_args(words)
        server, _ = gateway_server(arguments, settings_from(arguments))
    server.middleware.append(CloseStreamMidCall())
    anyio.run(serve_http, server, "127.0.0.1", port, transport_security("127.0.0.1", port, [], []), None)


if __name__ == "__main__":
    main()
