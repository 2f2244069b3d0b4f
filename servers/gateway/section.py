"""The gateway's own tools, declared like any section's (the state they receive is the caller's scope)."""

from __future__ import annotations

from mcp_sections.shared.tools import READ_ONLY, Annotations, ToolContext, tool

from .models import (
    CallSectionToolInput,
    CallSectionToolResult,
    DescribeSectionInput,
    DescribeSectionResult,
    EnvironmentInfoResult,
    ListSectionsResult,
    NoInput,
    PlanActionsInput,
    PlanActionsResult,
    ProjectInfoInput,
    ProjectInfoResult,
    WorkingDirectoryResult,
)
from .scope import CallScope

OPEN_WORLD = Annotations(read_only=False, destructive=True, idempotent=False, open_world=True)


@tool(name="list_tool_sections", title="List tool sections", annotations=READ_ONLY)
async def list_tool_sections(params: NoInput, state: CallScope) -> ListSectionsResult:
    """List the tool sections (groups of related tools) this gateway offers: id, name, description, tool
    names, tool count and whether the section's server is running. Starts nothing. Use it first to decide
    which sections a task needs, then describe_section for their schemas, call_section_tool to run one tool,
    or plan_actions to hand a multi-step task to a sub-agent with those sections."""
    return state.gateway.list_sections(state.scope)


@tool(name="describe_section", title="Describe a section's tools", annotations=READ_ONLY)
async def describe_section(params: DescribeSectionInput, state: CallScope) -> DescribeSectionResult:
    """Full definitions of one section's tools (inputSchema, outputSchema, annotations), to call them
    correctly with call_section_tool. Built-in sections are described without starting them; a third-party
    section is started on first description. Unknown section → NOT_FOUND listing the valid ids."""
    return await state.gateway.describe_section(params.section)


@tool(name="call_section_tool", title="Call a section's tool", annotations=OPEN_WORLD)
async def call_section_tool(params: CallSectionToolInput, state: CallScope, ctx: ToolContext) -> CallSectionToolResult:
    """Run one tool of one section and return that tool's own result unchanged (content, structuredContent,
    isError/error_code). `arguments` is checked against the tool's inputSchema first (INVALID_INPUT names
    the wrong field). The section starts on first use; if it is down the call gets DEPENDENCY_ERROR and the
    next call restarts it. Whether it changes anything depends on the tool called (see its annotations)."""
    raise NotImplementedError("served by Gateway.forward, which returns the section's result as-is")


@tool(name="plan_actions", title="Delegate to a sub-agent", annotations=OPEN_WORLD)
async def plan_actions(params: PlanActionsInput, state: CallScope, ctx: ToolContext) -> PlanActionsResult:
    """Hand a task to a sub-agent that runs inside the gateway on the configured model, with exactly the
    tools of the listed `sections` (plus list_tool_sections, and plan_actions while the depth limit allows).
    The goal (and each action) must be complete: the sub-agent sees nothing else. With `actions`, each one
    gets its own sub-agent, one after another (`sequential`) or concurrently (`parallel`); at most a few
    sub-agents live at once (MAX_LIMIT_EXCEEDED beyond). Returns a markdown report citing the tool behind
    each fact, with metrics (duration_ms, tokens, tool_calls, depth) and a status per action. Needs a model
    in [gateway.model] (DEPENDENCY_ERROR says how otherwise)."""
    return await state.gateway.plan_actions(params, state.scope, ctx)


@tool(name="get_working_directory", title="Working directory and roots", annotations=READ_ONLY)
async def get_working_directory(params: NoInput, state: CallScope, ctx: ToolContext) -> WorkingDirectoryResult:
    """The gateway's current directory, the configured roots (directories file tools may use; the first is
    the default) and the roots the MCP client offers, if any."""
    return await state.gateway.working_directory(ctx)


@tool(name="get_environment_info", title="Environment information", annotations=READ_ONLY)
async def get_environment_info(params: NoInput, state: CallScope) -> EnvironmentInfoResult:
    """Operating system, Python, gateway version, every section with its state, the configured model
    provider (name, model, which API-key variable and whether it is set — never its value) and the
    sub-agent limits."""
    return state.gateway.environment_info()


@tool(name="get_project_info", title="Project information", annotations=READ_ONLY)
def get_project_info(params: ProjectInfoInput, state: CallScope) -> ProjectInfoResult:
    """Project type (python, node, rust, go, java, ...), name, version and description from the manifests
    in a directory (pyproject.toml, package.json, Cargo.toml, go.mod, ...), plus the git branch from
    .git/HEAD. Default directory: the first root, else the current directory. Reads only those files."""
    return state.gateway.project_info(params.path)


GATEWAY_TOOLS = (
    list_tool_sections,
    describe_section,
    call_section_tool,
    plan_actions,
    get_working_directory,
    get_environment_info,
    get_project_info,
)
