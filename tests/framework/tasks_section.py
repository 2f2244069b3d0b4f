"""A small section of slow and bulky tools for the tests of MCP tasks and results by reference (not a product section).

Its first three tools are the fixtures the official conformance suite's tasks scenarios call (`greet`,
`slow_compute`, `failing_job`), so it can also be served over HTTP for `npx @modelcontextprotocol/conformance`.
"""

from __future__ import annotations

import anyio
from pydantic import Field

from mcp_sections.shared.framework.sections import Section
from mcp_sections.shared.framework.tools import READ_ONLY, ToolContext, ToolInput, ToolResult, tool
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

FAKE_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub token's shape (not a token): masked


class GreetInput(ToolInput):
    name: str = Field(default="World", max_length=100, description="Who to greet.")


class TextResult(ToolResult):
    text: str

    def render_text(self) -> str:
        return self.text


@tool(name="greet", title="Greet", annotations=READ_ONLY)
def greet(params: GreetInput) -> TextResult:
    """Say hello at once (a tool that never runs as a task)."""
    return TextResult(text=f"Hello, {params.name}!")


class SlowInput(ToolInput):
    seconds: float = Field(default=1.0, ge=0, le=600, description="How long to work.")
    label: str = Field(default="", max_length=100, description="A label echoed in the result.")


@tool(name="slow_compute", title="Work for a while", annotations=READ_ONLY, long=True)
async def slow_compute(params: SlowInput, ctx: ToolContext) -> TextResult:
    """Work for `seconds`, reporting progress every 0.1 s; a long tool (it may run as an MCP task)."""
    steps = max(1, round(params.seconds * 10))
    for step in range(1, steps + 1):
        await anyio.sleep(params.seconds / steps)
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    return TextResult(text=f"computed {params.label or 'nothing'} in {params.seconds:g} s")


class FailingInput(ToolInput):
    seconds: float = Field(default=1.0, ge=0, le=60, description="How long to work before failing.")


@tool(name="failing_job", title="Fail after a second", annotations=READ_ONLY, long=True)
async def failing_job(params: FailingInput) -> TextResult:
    """Work for a second (or `seconds`), then fail with EXECUTION_FAILED (a tool error, not a protocol error)."""
    await anyio.sleep(params.seconds)
    raise ToolFailure(ErrorCode.EXECUTION_FAILED, "the job failed on purpose; nothing to fix")


class MaybeLongInput(ToolInput):
    seconds: float = Field(default=0, ge=0, le=600, description="How long to work; above 5 s the call is long.")


@tool(
    name="maybe_long",
    title="Work, long only sometimes",
    annotations=READ_ONLY,
    long=lambda params: params.seconds > 5,
)
async def maybe_long(params: MaybeLongInput) -> TextResult:
    """Work for `seconds`; only calls of more than 5 s are long work."""
    await anyio.sleep(params.seconds)
    return TextResult(text=f"worked {params.seconds:g} s")


class ReportInput(ToolInput):
    pages: int = Field(default=10, ge=1, le=50, description="Pages to make.")
    chars: int = Field(default=20_000, ge=1, le=1_000_000, description="Characters per page.")


class ReportResult(ToolResult):
    pages: list[str] = Field(description="The URI of each page (read with resources/read).")
    preview: str


@tool(name="bulky_report", title="Make a bulky report", annotations=READ_ONLY)
def bulky_report(params: ReportInput) -> ReportResult:
    """Make `pages` pages of `chars` characters each, sent by reference (resource links)."""
    texts = [f"# page {n}\n" + (f"github_token = {FAKE_TOKEN}\n" if n == 0 else "") for n in range(params.pages)]
    texts = [(text + "x" * params.chars)[: params.chars] for text in texts]
    result = ReportResult(pages=[], preview=texts[0][:100])
    result.pages = [result.attach(text, name=f"page-{n}.md", mime_type="text/markdown") for n, text in enumerate(texts)]
    return result


SECTION = Section(
    id="tasks_demo",
    name="Tasks demo",
    description="Slow and bulky test tools (MCP tasks, results by reference).",
    tools=(greet, slow_compute, failing_job, maybe_long, bulky_report),
    masks_secrets=True,
)
