"""Inputs and outputs of the orchestration tools."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, model_validator

from mcp_sections.shared.framework.tools import ToolInput, ToolResult

SECTION_ID_PATTERN = r"^[a-z][a-z0-9_]{1,39}$"
AGENT_ID_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"
SectionId = Annotated[str, Field(pattern=SECTION_ID_PATTERN)]
ToolName = Annotated[str, Field(min_length=1, max_length=128)]
AgentStatus = Literal["completed", "failed", "budget_exceeded", "terminated"]


class NoInput(ToolInput):
    pass


class AgentMetrics(BaseModel):
    duration_ms: int
    tokens_input: int = Field(description="Input tokens of this call's own sub-agent(s), without those they started.")
    tokens_output: int = Field(description="Output tokens of this call's own sub-agent(s), without those they started.")
    tokens_input_with_nested: int = Field(
        description="Input tokens including every sub-agent started below, at any depth: the figure to budget with."
    )
    tokens_output_with_nested: int = Field(description="Output tokens including every sub-agent started below.")
    nested_agents: int = Field(description="How many sub-agents were started below, at any depth.")
    tool_calls: int
    turns: int
    depth: int


# -- spawn_agent / list_children / terminate_agent -------------------------------------------------------


class SpawnAgentInput(ToolInput):
    name: str = Field(description="Short name of the sub-agent (shown by list_children).", min_length=1, max_length=64)
    prompt: str = Field(
        description="The COMPLETE task: the sub-agent sees only this text and its tools (no shared context). "
        "Say what to produce (e.g. a markdown report with sections).",
        min_length=1,
        max_length=20_000,
    )
    system_prompt: str | None = Field(
        default=None, description="Extra instructions (role, focus), put before the standard rules.", max_length=20_000
    )
    sections: list[SectionId] | None = Field(
        default=None,
        description="Sections whose tools the sub-agent gets (default: the caller's own sections; for the client, "
        "the configured default_sections). Never more than the caller has.",
        max_length=10,
    )
    tools: list[ToolName] | None = Field(
        default=None,
        description="Only these tools of those sections (default: all of them that you have yourself).",
        max_length=100,
    )
    provider: Literal["openai", "anthropic"] | None = Field(
        default=None, description="Must be the configured provider when given (only one endpoint is configured)."
    )
    model: str | None = Field(
        default=None,
        description="Another model name on the configured endpoint (default: the configured one).",
        min_length=1,
        max_length=200,
    )


class SpawnAgentResult(ToolResult):
    success: bool = Field(description="True when the sub-agent finished its task (status completed).")
    child_id: str
    name: str
    status: AgentStatus
    report: str = Field(description="The sub-agent's markdown report, facts attributed to the tool behind them.")
    error: str | None = None
    metrics: AgentMetrics

    def render_text(self) -> str:
        head = f"[{self.name} · {self.child_id} · {self.status}]"
        tail = f"\n\n_Stopped: {self.error}_" if self.error else ""
        return f"{head}\n\n{self.report}{tail}"


class ChildInfo(BaseModel):
    id: str
    name: str
    kind: Literal["spawn", "delegate", "parallel", "plan"]
    status: Literal["running"] = "running"
    depth: int
    parent: str | None = Field(description="The sub-agent that started it (None: the client).")
    started_at: str


class ListChildrenResult(ToolResult):
    children: list[ChildInfo]
    count: int
    remaining_slots: int
    max_slots: int


class TerminateAgentInput(ToolInput):
    child_id: str = Field(description="Id of a running sub-agent (see list_children).", min_length=1, max_length=64)


class TerminateAgentResult(ToolResult):
    success: bool
    child_id: str
    message: str


# -- delegate_task / list_agents -------------------------------------------------------------------------


class DelegateTaskInput(ToolInput):
    agent_id: str = Field(description="Id of a permanent agent (see list_agents).", pattern=AGENT_ID_PATTERN)
    prompt: str = Field(
        description="The COMPLETE task for that agent: it sees only this text, its own instructions and tools.",
        min_length=1,
        max_length=20_000,
    )


class DelegateTaskResult(ToolResult):
    success: bool
    agent_id: str
    child_id: str
    status: AgentStatus
    report: str
    error: str | None = None
    metrics: AgentMetrics

    def render_text(self) -> str:
        tail = f"\n\n_Stopped: {self.error}_" if self.error else ""
        return f"[{self.agent_id} · {self.child_id} · {self.status}]\n\n{self.report}{tail}"


class AgentInfo(BaseModel):
    id: str
    name: str
    description: str
    lifecycle: Literal["permanent"] = "permanent"
    capabilities: list[str]
    sections: list[str]
    model: str | None = None


class ListAgentsResult(ToolResult):
    agents: list[AgentInfo]
    count: int
    remaining_slots: int


# -- parallel_tasks ----------------------------------------------------------------------------------------


class BatchTask(BaseModel):
    model_config = {"extra": "forbid"}

    agent_id: str = Field(description="Id of a permanent agent (see list_agents).", min_length=1, max_length=64)
    prompt: str = Field(description="The COMPLETE task for that agent.", min_length=1, max_length=20_000)


class ParallelTasksInput(ToolInput):
    tasks: list[BatchTask] = Field(
        description="Independent tasks run at the same time, one sub-agent each (no dependencies between them).",
        min_length=1,
        max_length=10,
    )
    wait_all: Literal[True] = Field(default=True, description="Always true: the call returns when all are done.")


class TaskOutcome(BaseModel):
    agent_id: str
    success: bool
    child_id: str | None = None
    status: AgentStatus | Literal["not_started"]
    report: str | None = None
    error: str | None = None
    metrics: AgentMetrics | None = None


class ParallelTasksResult(ToolResult):
    success: bool = Field(description="True only when every task completed.")
    completion: Literal["all", "some", "none"]
    completed: int
    failed: int
    results: list[TaskOutcome]
    aggregated_report: str
    metrics: AgentMetrics = Field(description="Wall time of the batch and the sums over its tasks.")

    def render_text(self) -> str:
        return self.aggregated_report


# -- ask_user ----------------------------------------------------------------------------------------------


class QuestionOption(BaseModel):
    model_config = {"extra": "forbid"}

    id: str = Field(description="Value returned when chosen.", min_length=1, max_length=64)
    label: str = Field(description="What the user sees.", min_length=1, max_length=256)


class AskUserInput(ToolInput):
    question: str = Field(description="The question, self-contained.", min_length=1, max_length=2000)
    type: Literal["checkbox", "text", "mixed"] = Field(
        default="text",
        description="checkbox: pick among `options`; text: free answer; mixed: options plus a free text.",
    )
    options: list[QuestionOption] | None = Field(
        default=None, description="Choices (checkbox and mixed; 1 to 20, unique ids).", max_length=20
    )
    multiple: bool = Field(default=True, description="checkbox/mixed: several options may be chosen.")
    placeholder: str | None = Field(default=None, description="text/mixed: hint shown in the text box.", max_length=200)
    context: str | None = Field(
        default=None, description="Why you ask / what you already know, shown with the question.", max_length=5000
    )

    @model_validator(mode="after")
    def _options_fit_the_type(self) -> AskUserInput:
        if self.type in ("checkbox", "mixed"):
            if not self.options:
                raise ValueError(f"type {self.type!r} needs `options` (1 to 20)")
            ids = [option.id for option in self.options]
            if len(set(ids)) != len(ids):
                raise ValueError("option ids must be unique")
        elif self.options:
            raise ValueError("type 'text' takes no `options`; use 'checkbox' or 'mixed'")
        return self


class AskUserResult(ToolResult):
    status: Literal["answered", "declined", "cancelled"] = Field(
        description="answered; declined (the user refused to answer); cancelled (dismissed without choosing)."
    )
    selected: list[str] | None = Field(default=None, description="Ids of the chosen options (checkbox/mixed).")
    selected_labels: list[str] | None = None
    text: str | None = Field(default=None, description="The free-text answer (text/mixed).")
    waited_ms: int

    def render_text(self) -> str:
        if self.status != "answered":
            return f"The user {self.status} the question; continue without the answer or ask differently."
        parts = []
        if self.selected is not None:
            parts.append("selected: " + (", ".join(self.selected) or "(none)"))
        if self.text is not None:
            parts.append(f"text: {self.text}")
        return "The user answered — " + "; ".join(parts)
