"""A tiny section used to test the framework itself (not a product section)."""

from __future__ import annotations

from pydantic import Field

from mcp_sections.shared.framework.sections import Section
from mcp_sections.shared.framework.tools import READ_ONLY, Annotations, ToolContext, ToolInput, ToolResult, tool
from mcp_sections.shared.ground.errors import not_found


class SumInput(ToolInput):
    numbers: list[float] = Field(description="Numbers to add.", min_length=1, max_length=5)


class SumResult(ToolResult):
    total: float

    def render_text(self) -> str:
        return f"total = {self.total}"


@tool(name="demo_sum", title="Sum numbers", annotations=READ_ONLY)
def demo_sum(params: SumInput) -> SumResult:
    """Add up to five numbers."""
    return SumResult(total=sum(params.numbers))


class LookupInput(ToolInput):
    key: str = Field(description="Key to look up.", max_length=20)


class LookupResult(ToolResult):
    value: str


@tool(name="demo_lookup", title="Look up a key", annotations=READ_ONLY)
def demo_lookup(params: LookupInput, state: dict[str, str]) -> LookupResult:
    """Return the value stored under a key; `boom` raises an unexpected error."""
    if params.key == "boom":
        raise RuntimeError("secret-token-123 leaked in an exception")
    if params.key not in state:
        raise not_found(f"no key {params.key!r}; known keys: {', '.join(sorted(state))}")
    return LookupResult(value=state[params.key])


class CountInput(ToolInput):
    steps: int = Field(default=3, ge=1, le=10, description="How many progress steps to report.")


class CountResult(ToolResult):
    steps: int


@tool(
    name="demo_count",
    title="Count with progress",
    annotations=Annotations(read_only=True, destructive=False, idempotent=True, open_world=False),
)
async def demo_count(params: CountInput, ctx: ToolContext) -> CountResult:
    """Report progress once per step."""
    for step in range(1, params.steps + 1):
        await ctx.report_progress(step, params.steps, f"step {step}")
    return CountResult(steps=params.steps)


SECTION = Section(
    id="demo",
    name="Demo",
    description="Framework test section.",
    tools=(demo_sum, demo_lookup, demo_count),
    open_state=lambda runtime: {"alpha": "1", "beta": "2"},
)
