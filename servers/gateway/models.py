"""Inputs and outputs of the gateway's own tools."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from mcp_sections.shared.framework.tools import ToolInput, ToolResult

SECTION_ID_PATTERN = r"^[a-z][a-z0-9_]{1,39}$"
MAX_ARGUMENTS = 100  # the largest tool input has under 20 fields
MAX_ARGUMENT_NAME_CHARS = 128  # argument names are identifiers
SectionState = Literal["not_started", "starting", "running", "stopped", "failed"]  # stopped: ended while idle


class NoInput(ToolInput):
    pass


class SectionInfo(BaseModel):
    id: str = Field(description="Section id, as passed to describe_section / call_section_tool / plan_actions.")
    name: str
    description: str
    tools: list[str] = Field(description="Tool names (empty for a third-party section never started yet).")
    tool_count: int
    tools_known: bool = Field(description="False when the tools of a third-party section are not known yet.")
    state: SectionState = Field(description="not_started, starting, running or failed (its process or connection).")
    kind: Literal["builtin", "stdio", "http"]
    exposed: bool = Field(description="True when its tools are also listed directly by the gateway.")
    error: str | None = Field(default=None, description="Why the section last failed, when it did.")


class ListSectionsResult(ToolResult):
    sections: list[SectionInfo]
    always_available: list[str] = Field(description="Tools the caller always has, whatever sections it uses.")

    def render_text(self) -> str:
        lines = [f"{len(self.sections)} sections (always available: {', '.join(self.always_available)})"]
        for section in self.sections:
            tools = ", ".join(section.tools) if section.tools_known else "(tools listed once started)"
            lines.append(f"- {section.id} [{section.state}] {section.name}: {section.description} — {tools}")
        return "\n".join(lines)


class FindToolsInput(ToolInput):
    query: str = Field(
        description="The need in plain words, e.g. 'convert miles to km', 'save text to a new file'; paths, URLs and "
        "pasted text or code may stay in it (they are read as what the action acts on), but the action first ranks "
        "best.",
        min_length=1,
        max_length=500,
    )
    limit: int = Field(default=5, ge=1, le=20, description="How many tools to return.")
    sections: list[Annotated[str, Field(pattern=SECTION_ID_PATTERN)]] | None = Field(
        default=None, max_length=20, description="Search only these sections (default: all)."
    )


class FoundTool(BaseModel):
    section: str
    name: str
    summary: str
    score: float
    inputSchema: dict[str, Any]  # the MCP field name, as describe_section shows it


class UnsearchedSection(BaseModel):
    section: str
    reason: str


class FindToolsResult(ToolResult):
    tools: list[FoundTool]
    mode: Literal["hybrid", "bm25"]
    note: str | None = None
    unsearched: list[UnsearchedSection] = Field(default_factory=list)

    def render_text(self) -> str:
        lines = [
            f"{len(self.tools)} tools ({self.mode}); call a section's tool with call_section_tool(section, tool, "
            "arguments), a gateway tool (section `gateway`) directly"
        ]
        if self.note:
            lines.append(f"note: {self.note}")
        for found in self.tools:
            schema = json.dumps(found.inputSchema, ensure_ascii=False, separators=(",", ":"))
            lines.append(
                f"- {found.section} / {found.name} ({found.score:.3f}): {found.summary}\n  inputSchema: {schema}"
            )
        for section in self.unsearched:
            lines.append(f"not searched: {section.section} ({section.reason})")
        return "\n".join(lines)


class DescribeSectionInput(ToolInput):
    section: str = Field(description="Section id (see list_tool_sections).", pattern=SECTION_ID_PATTERN)
    tools: list[Annotated[str, Field(min_length=1, max_length=128)]] | None = Field(
        default=None,
        max_length=50,
        description="Only these tools, described in full (whole descriptions, every argument's); default: every tool "
        "of the section, each in a few lines.",
    )


class DescribeSectionResult(ToolResult):
    section: SectionInfo
    tools: list[dict[str, Any]] = Field(
        description="Full MCP tool definitions: name, title, description, inputSchema, outputSchema, annotations."
    )
    _full: bool = PrivateAttr(default=False)  # the text shows the whole descriptions (`tools` was given)

    def in_full(self) -> DescribeSectionResult:
        self._full = True
        return self

    def render_text(self) -> str:
        from .described import tools_text

        info = self.section
        call = f'call_section_tool(section="{info.id}", tool=..., arguments={{...}})'
        head = [
            f"{info.id} — {info.name} [{info.state}]: {info.description}",
            f"{len(self.tools)} of its tools; call one with {call}. "
            + (
                "Their full definitions (inputSchema, outputSchema, annotations) are in structuredContent."
                if self._full
                else "Each: what it does to things, its purpose, then its arguments (type, bounds, default, required). "
                f'The whole descriptions: describe_section(section="{info.id}", tools=[...]); the full definitions '
                "are in structuredContent."
            ),
            "",
        ]
        return "\n".join(head + tools_text(self.tools, self._full))


class CallSectionToolInput(ToolInput):
    section: str = Field(description="Section id.", pattern=SECTION_ID_PATTERN)
    tool: str = Field(description="Tool name (see describe_section).", min_length=1, max_length=128)
    # Bounds of the envelope only: the values are checked against the target tool's own bounded inputSchema.
    arguments: dict[Annotated[str, Field(max_length=MAX_ARGUMENT_NAME_CHARS)], Any] = Field(
        default_factory=dict,
        max_length=MAX_ARGUMENTS,
        description="The tool's arguments, per its inputSchema.",
    )


class CallSectionToolResult(ToolResult):
    """Placeholder: call_section_tool returns the section's own result unchanged (no output schema)."""


class WorkingDirectoryResult(ToolResult):
    cwd: str = Field(description="The gateway's current working directory.")
    roots: list[str] = Field(description="Directories file-touching sections may use (--root); first is the default.")
    client_roots: list[str] | None = Field(description="Roots offered by the MCP client, if it offers any.")


class ModelInfo(BaseModel):
    configured: bool
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = Field(default=None, description="Name of the API-key variable (never its value).")
    api_key_set: bool = False
    sampling: str = Field(default="off", description="MCP sampling: only, prefer, fallback or off.")
    in_use: Literal["sampling", "http", "none"] = Field(
        default="none", description="What this connection's sub-agents run on: the client's model, HTTP, or none."
    )
    sampling_unavailable: str | None = Field(default=None, description="Why sampling cannot be used here, if so.")


class ConfigFileInfo(BaseModel):
    path: str = Field(description="The config file this gateway reads (without one: where the default one would be).")
    exists: bool = Field(description="False: no config file is read; create this one, or pass --config.")


class ApprovalInfo(BaseModel):
    mode: Literal["off", "destructive"] = Field(
        description="'destructive': a call that can change things waits for the person's approval before it runs."
    )
    asked_at: str | None = Field(
        default=None,
        description="Where the person answers when the client cannot ask (the status page), if it is open.",
    )
    timeout_seconds: float = Field(description="How long a question waits before the call is declined.")


class SectionStatus(BaseModel):
    id: str
    state: SectionState
    exposed: bool


class EnvironmentInfoResult(ToolResult):
    os: dict[str, str]
    python: dict[str, str]
    gateway_version: str
    sections: list[SectionStatus]
    model: ModelInfo
    max_depth: int
    max_subagents: int
    data_dir: str
    config_file: ConfigFileInfo
    approval: ApprovalInfo


class ProjectInfoInput(ToolInput):
    path: str | None = Field(
        default=None,
        description="Project directory, absolute or relative to the first root.",
        max_length=4096,
    )


class GitInfo(BaseModel):
    root: str
    branch: str | None
    detached: bool
    commit: str | None = None


class ProjectInfoResult(ToolResult):
    path: str
    type: str = Field(description="Main project type: python, node, rust, go, java, ... or unknown.")
    types: list[str]
    manifests: list[str]
    name: str
    version: str | None
    version_source: str | None = Field(
        default=None,
        description="The file the version was read from, or 'dynamic (…)' when a build backend computes it.",
    )
    description: str | None
    git: GitInfo | None


class PlannedAction(BaseModel):
    model_config = {"extra": "forbid"}

    description: str = Field(description="The step, stated completely.", min_length=1, max_length=4000)
    complexity: Literal["simple", "moderate", "complex"] = "moderate"


class PlanActionsInput(ToolInput):
    goal: str = Field(description="The whole task, with all the context it needs.", min_length=1, max_length=20_000)
    sections: list[Annotated[str, Field(pattern=SECTION_ID_PATTERN)]] = Field(
        description="Section ids whose tools the sub-agent gets.", min_length=1, max_length=10
    )
    actions: list[PlannedAction] | None = Field(default=None, description="Optional steps.", max_length=20)
    strategy: Literal["sequential", "parallel"] = "sequential"


# duration_ms, tokens_input, tokens_output, tokens_input_with_nested, tokens_output_with_nested, nested_agents,
# tokens_reported (1: the model answered, each time with its token counts), tool_calls, turns, depth
# (shared.agents.metrics.Metrics.as_dict)
AgentMetrics = dict[str, int]
METRICS = (
    "duration_ms, tool_calls, turns, depth; tokens_input/tokens_output: the model tokens of {whose} alone; "
    "tokens_input_with_nested/tokens_output_with_nested: with every sub-agent started below, at any depth "
    "(nested_agents of them): the figure to budget with; tokens_reported: 1 when the model gave its token counts."
)


class ActionOutcome(BaseModel):
    description: str
    complexity: str
    status: Literal["completed", "failed", "budget_exceeded", "skipped", "terminated"]
    report: str
    metrics: AgentMetrics = Field(description=METRICS.format(whose="this action's sub-agent"))
    error: str | None = None


class PlanActionsResult(ToolResult):
    success: bool = Field(description="True when every action completed (a plan that got nothing done is an error).")
    report: str = Field(description="Markdown report; facts are attributed to the tool they came from.")
    metrics: AgentMetrics = Field(description=METRICS.format(whose="this plan's sub-agents"))
    actions: list[ActionOutcome]
    model: str | None = Field(default=None, description="The model the sub-agents ran on, as its endpoint names it.")

    def render_text(self) -> str:
        return self.report
