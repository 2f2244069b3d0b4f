"""The gateway's own tools, declared like any section's (the state they receive is the caller's scope)."""

from __future__ import annotations

from mcp_sections.shared.agents.scope import ScopedState
from mcp_sections.shared.framework.tools import READ_ONLY, Annotations, ToolContext, tool

from .models import (
    CallSectionToolInput,
    CallSectionToolResult,
    DescribeSectionInput,
    DescribeSectionResult,
    EnvironmentInfoResult,
    FindToolsInput,
    FindToolsResult,
    ListSectionsResult,
    NoInput,
    PlanActionsInput,
    PlanActionsResult,
    ProjectInfoInput,
    ProjectInfoResult,
    WorkingDirectoryResult,
)

OPEN_WORLD = Annotations(read_only=False, destructive=True, idempotent=False, open_world=True)


@tool(
    name="list_tool_sections",
    title="List tool sections",
    annotations=READ_ONLY,
    examples=(
        "which tool sections does the gateway offer",
        "list the groups of tools and what each one holds",
        "what tools are available here",
        "overview of every section and its state",
        "show all sections with their tool names",
        "which sections are running or failed",
    ),
)
async def list_tool_sections(params: NoInput, state: ScopedState) -> ListSectionsResult:
    """List the tool sections (groups of tools): id, name, description, tool names and state. Starts
    nothing. Then: describe_section for schemas, call_section_tool to run a tool, plan_actions to delegate."""
    return await state.host.list_sections(state.scope)


@tool(
    name="find_tools",
    title="Find tools for a need",
    annotations=READ_ONLY,
    examples=(
        "which tool can do this for me",
        "search the available tools for a need",
        "is there a tool for this job",
        "look for the right tool by describing what I want",
        "rank the tools that could handle a task",
        "I don't know which tool to use, find one",
    ),
)
async def find_tools(params: FindToolsInput, state: ScopedState) -> FindToolsResult:
    """Section tools ranked for a need in plain words, with their inputSchema: call the best one with
    call_section_tool. Starts nothing. mode: hybrid, or bm25 (words alone) without an embedding model."""
    return await state.host.find_tools(params)


@tool(
    name="describe_section",
    title="Describe a section's tools",
    annotations=READ_ONLY,
    examples=(
        "show the input schemas of a section's tools",
        "full definitions of the tools in one section",
        "what arguments does each tool of a section take",
        "annotations and output schemas of a section's tools",
        "describe a section without starting it",
        "details of every tool in a group",
    ),
)
async def describe_section(params: DescribeSectionInput, state: ScopedState) -> DescribeSectionResult:
    """How to call one section's tools with call_section_tool: per tool its purpose and arguments (type,
    bounds, default, required); `tools` gives those tools' whole descriptions. The full definitions (inputSchema,
    outputSchema, annotations) are in the structured result. A built-in section is described without starting it."""
    return await state.host.describe_section(params.section, params.tools)


@tool(
    name="call_section_tool",
    title="Call a section's tool",
    annotations=OPEN_WORLD,
    long=True,
    examples=(
        "call a tool of a section by name with arguments",
        "run a section's tool through the gateway",
        "invoke the tool the search found",
        "execute one tool of another section",
        "pass these arguments to a section tool",
        "forward a call to a section and return its result",
    ),
)
async def call_section_tool(
    params: CallSectionToolInput, state: ScopedState, ctx: ToolContext
) -> CallSectionToolResult:
    """Run one tool of a section and return its own result unchanged. `arguments` are checked
    against the tool's inputSchema first (INVALID_INPUT names the field). A section that is down gives
    DEPENDENCY_ERROR and restarts on the next call. Effects: see the called tool's annotations."""
    # The declaration only (name, input schema, annotations): the gate routes this tool itself — `Gate._dispatch`
    # resolves the section and tool from `params`, checks the grant and the approval, and returns the section's own
    # result unchanged (servers/pool/gate.py); a spec run never reaches this body.
    raise AssertionError("call_section_tool is forwarded by the gate (servers/pool/gate.py), never run as a body")


@tool(
    name="plan_actions",
    title="Delegate to a sub-agent",
    annotations=OPEN_WORLD,
    long=True,
    examples=(
        "delegate the whole job to a sub-agent with some sections",
        "plan and carry out several actions with sub-agents",
        "let a sub-agent do this multi-step task and report back",
        "run a goal through sub-agents, one after another or in parallel",
        "hand a complete task to an agent that gets only the file and shell tools",
        "have an agent work through these actions and give me a report",
    ),
)
async def plan_actions(params: PlanActionsInput, state: ScopedState, ctx: ToolContext) -> PlanActionsResult:
    """Delegate a task to a sub-agent (run by the gateway on [gateway.model]) that gets exactly
    the tools of `sections`. The goal must be complete: the sub-agent sees nothing else. Each of `actions` gets
    its own sub-agent, sequential or parallel; few run at once (MAX_LIMIT_EXCEEDED beyond). Returns a markdown
    report citing the tool behind each fact, with metrics and a status per action (work done before a failure is
    kept); a plan that got nothing done fails with the model's error (DEPENDENCY_ERROR, TIMEOUT). Tokens:
    tokens_input/tokens_output are this plan's sub-agents' own, tokens_*_with_nested add every sub-agent below."""
    return await state.host.plan_actions(params, state.scope, ctx)


@tool(
    name="get_working_directory",
    title="Working directory and roots",
    annotations=READ_ONLY,
    examples=(
        "what is the current working directory",
        "where is the gateway running from",
        "which roots did the client share",
        "the cwd and the allowed roots",
        "pwd",
        "what folder am I in",
    ),
)
async def get_working_directory(params: NoInput, state: ScopedState, ctx: ToolContext) -> WorkingDirectoryResult:
    """The gateway's current directory, the allowed roots (the first is the default)
    and the MCP client's roots, if any."""
    return await state.host.working_directory(ctx)


@tool(
    name="get_environment_info",
    title="Environment information",
    annotations=READ_ONLY,
    examples=(
        "what OS and Python version is this running on",
        "which gateway version is installed",
        "is the sub-agent model configured and its API key set",
        "environment details for a bug report",
        "the state of every section and the sub-agent limits",
        "system information",
    ),
)
async def get_environment_info(params: NoInput, state: ScopedState, ctx: ToolContext) -> EnvironmentInfoResult:
    """OS, Python, gateway version, each section's state, the sub-agent model (and
    whether its API-key variable is set, never the key), the sub-agent limits, the data directory and the config
    file read (its path, and whether it exists)."""
    return state.host.environment_info(ctx)


@tool(
    name="get_project_info",
    title="Project information",
    annotations=READ_ONLY,
    examples=(
        "what kind of project is this",
        "project name and version from its manifest",
        "is this a python or a node project",
        "which git branch is the project on",
        "read the project's metadata from package.json or pyproject.toml",
        "detect the type of project in a directory",
    ),
)
def get_project_info(params: ProjectInfoInput, state: ScopedState) -> ProjectInfoResult:
    """Project type (python, node, rust, go, ...), name, version and description from the
    manifests in a directory, and its git branch. Default: the first root, else the current directory."""
    return state.host.project_info(params.path)


GATEWAY_TOOLS = (
    list_tool_sections,
    find_tools,
    describe_section,
    call_section_tool,
    plan_actions,
    get_working_directory,
    get_environment_info,
    get_project_info,
)
