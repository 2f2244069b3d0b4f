"""Inputs and outputs of the todo tools."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from mcp_sections.servers.todo.board import (
    AGENT_ID_PATTERN,
    DEFAULT_LIST_LIMIT,
    DEFAULT_PRIORITY,
    DEFAULT_WORKFLOW,
    MAX_DEPENDENCIES,
    MAX_DESCRIPTION_LENGTH,
    MAX_DURATION_MS,
    MAX_LIST_LIMIT,
    MAX_NAME_LENGTH,
    PRIORITY_MAX,
    PRIORITY_MIN,
    TASK_ID_PATTERN,
    Task,
)
from mcp_sections.shared.framework.tools import ToolInput, ToolResult
from mcp_sections.shared.ground.workflows import WORKFLOW_ID_RULE, WorkflowId

StatusName = Literal["pending", "in_progress", "completed", "blocked"]

MAX_OFFSET = 1_000_000

WorkflowField = Annotated[
    WorkflowId,
    Field(
        description=(
            "Workflow the tasks belong to; each workflow is a separate board and no call sees another "
            f"workflow's tasks. {WORKFLOW_ID_RULE[0].upper()}{WORKFLOW_ID_RULE[1:]} (the same workflow ids as "
            f"memory's). Default '{DEFAULT_WORKFLOW}'."
        ),
    ),
]
TaskId = Annotated[
    str,
    Field(
        description="Task id as returned by todo_create (e.g. 'task_1a2b3c4d5e6f').",
        min_length=1,
        max_length=64,
        pattern=TASK_ID_PATTERN,
    ),
]
AgentId = Annotated[
    str,
    Field(
        description="Agent id: 1-64 characters, letters, digits, '_', '.', '@', ':', '-'.",
        min_length=1,
        max_length=64,
        pattern=AGENT_ID_PATTERN,
    ),
]
Priority = Annotated[
    int,
    Field(
        description="Priority from 1 (critical/blocking) to 5 (nice-to-have); 3 is normal.",
        ge=PRIORITY_MIN,
        le=PRIORITY_MAX,
    ),
]
Name = Annotated[
    str,
    Field(
        description=f"Short task name, 1-{MAX_NAME_LENGTH} characters (surrounding spaces are trimmed).",
        min_length=1,
        max_length=MAX_NAME_LENGTH,
        pattern=r"\S",
    ),
]
Description = Annotated[
    str,
    Field(
        description=f"Detailed description, at most {MAX_DESCRIPTION_LENGTH} characters.",
        max_length=MAX_DESCRIPTION_LENGTH,
    ),
]
Dependencies = Annotated[
    list[TaskId],
    Field(
        description=(
            f"Ids of tasks (same workflow) that must be completed before this one can start; at most "
            f"{MAX_DEPENDENCIES}, duplicates ignored. Unknown ids fail with NOT_FOUND."
        ),
        max_length=MAX_DEPENDENCIES,
    ),
]
Force = Annotated[
    bool,
    Field(
        description=(
            "Override the dependency rule: start/complete even if dependencies are not completed, or reopen "
            "a completed task whose dependents already started. Default false."
        )
    ),
]


# ---------------------------------------------------------------------------------------------- inputs


class CreateInput(ToolInput):
    name: Name
    description: Description = ""
    priority: Priority = DEFAULT_PRIORITY
    dependencies: Dependencies = Field(default=[])
    assigned_agent: AgentId | None = Field(
        default=None, description="Agent responsible for the task (optional; omit for unassigned)."
    )
    workflow_id: WorkflowField = DEFAULT_WORKFLOW
    allow_duplicate: bool = Field(
        default=False,
        description=(
            "Create the task even if a pending task with the very same name, description, priority, dependencies "
            "and agent exists in the workflow (default false: that task is returned with created=false, so a "
            "retried call never doubles a task)."
        ),
    )


class GetInput(ToolInput):
    task_id: TaskId
    workflow_id: WorkflowField = DEFAULT_WORKFLOW


class UpdateStatusInput(ToolInput):
    task_id: TaskId
    status: StatusName = Field(
        description=(
            "New status: 'pending' (not started), 'in_progress' (being worked on), 'completed' (done), "
            "'blocked' (cannot proceed)."
        )
    )
    force: Force = False
    workflow_id: WorkflowField = DEFAULT_WORKFLOW


class UpdateInput(ToolInput):
    task_id: TaskId
    name: Name | None = Field(default=None, description="New name (1-128 characters); omit to keep.")
    description: Description | None = Field(default=None, description="New description (max 1000); omit to keep.")
    priority: Priority | None = Field(default=None, description="New priority 1 (critical) to 5; omit to keep.")
    assigned_agent: AgentId | None = Field(default=None, description="Assign the task to this agent; omit to keep.")
    unassign: bool = Field(default=False, description="true to remove the assigned agent.")
    dependencies: Dependencies | None = Field(
        default=None,
        description=(
            "Replace the whole dependency list (ids of same-workflow tasks, at most 100; [] removes all); "
            "omit to keep. Refused with VALIDATION_FAILED if it would form a cycle."
        ),
    )
    force: bool = Field(
        default=False,
        description="Allow adding dependencies that are not completed to a task already in_progress or completed.",
    )
    workflow_id: WorkflowField = DEFAULT_WORKFLOW


class ListInput(ToolInput):
    status_filter: StatusName | None = Field(default=None, description="Only tasks with this status; omit for all.")
    assigned_agent: AgentId | None = Field(default=None, description="Only tasks assigned to this agent.")
    limit: int = Field(
        default=DEFAULT_LIST_LIMIT,
        ge=1,
        le=MAX_LIST_LIMIT,
        description=f"Maximum number of tasks returned, 1-{MAX_LIST_LIMIT} (default {DEFAULT_LIST_LIMIT}).",
    )
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET, description="Skip this many tasks first (paging).")
    workflow_id: WorkflowField = DEFAULT_WORKFLOW


class CompleteInput(ToolInput):
    task_id: TaskId
    duration_ms: int | None = Field(
        default=None,
        ge=0,
        le=MAX_DURATION_MS,
        description=(
            "Execution time in milliseconds (0 to 366 days). Omit to measure it from started_at "
            "(null if the task was never started)."
        ),
    )
    force: Force = False
    workflow_id: WorkflowField = DEFAULT_WORKFLOW


class DeleteInput(ToolInput):
    task_id: TaskId
    cascade: bool = Field(
        default=False,
        description=(
            "If other tasks depend on this one: false (default) refuses with VALIDATION_FAILED listing them; "
            "true deletes them too, and their own dependents, transitively."
        ),
    )
    workflow_id: WorkflowField = DEFAULT_WORKFLOW


class NextInput(ToolInput):
    assigned_agent: AgentId | None = Field(
        default=None, description="Only consider tasks assigned to this agent or to nobody; omit for all tasks."
    )
    workflow_id: WorkflowField = DEFAULT_WORKFLOW


# --------------------------------------------------------------------------------------------- outputs


class TaskView(ToolResult):
    """A task with all its fields; timestamps are ISO 8601 UTC."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    workflow_id: str
    name: str
    description: str
    status: StatusName
    priority: int
    assigned_agent: str | None
    dependencies: list[str] = Field(description="Ids of the tasks this one waits for.")
    created_at: str
    updated_at: str
    started_at: str | None = Field(description="First time the task entered in_progress.")
    completed_at: str | None
    duration_ms: int | None

    @classmethod
    def of(cls, task: Task) -> TaskView:
        return cls.model_validate(task)

    def line(self) -> str:
        """One line: id, status, priority, name, agent, dependencies."""
        parts = [f"{self.id} [{self.status}] P{self.priority} {self.name}"]
        if self.assigned_agent:
            parts.append(f"@{self.assigned_agent}")
        if self.dependencies:
            parts.append(f"(after {', '.join(self.dependencies)})")
        return " ".join(parts)

    def render_text(self) -> str:
        lines = [self.line(), f"workflow: {self.workflow_id}"]
        if self.description:
            lines.append(f"description: {self.description}")
        lines.append(f"created: {self.created_at}")
        if self.started_at:
            lines.append(f"started: {self.started_at}")
        if self.completed_at:
            duration = f" ({self.duration_ms} ms)" if self.duration_ms is not None else ""
            lines.append(f"completed: {self.completed_at}{duration}")
        return "\n".join(lines)


class TaskSummary(ToolResult):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    status: StatusName
    priority: int
    assigned_agent: str | None
    dependencies: list[str]


class _TaskChange(ToolResult):
    """A write that returns the task as it now is."""

    success: bool = True
    task_id: str
    message: str
    task: TaskView


class CreateResult(_TaskChange):
    created: bool = Field(
        default=True,
        description="false when a pending task with the same fields already existed: that task is returned, not a "
        "new one (allow_duplicate=true creates another).",
    )

    def render_text(self) -> str:
        if not self.created:
            return f"Not created: {self.task.line()} in workflow {self.task.workflow_id} already has these fields."
        return f"Created {self.task.line()} in workflow {self.task.workflow_id}."


class GetResult(ToolResult):
    success: bool = True
    task: TaskView
    dependents: list[str] = Field(description="Ids of the tasks that depend on this one.")
    unfinished_dependencies: list[str] = Field(description="Dependencies not completed yet (empty: ready).")

    def render_text(self) -> str:
        lines = [self.task.render_text()]
        if self.dependents:
            lines.append(f"needed by: {', '.join(self.dependents)}")
        if self.unfinished_dependencies:
            lines.append(f"waiting for: {', '.join(self.unfinished_dependencies)}")
        return "\n".join(lines)


class StatusResult(ToolResult):
    success: bool = True
    task_id: str
    previous_status: StatusName
    new_status: StatusName
    changed: bool = Field(description="false when the task already had this status (nothing was changed).")
    duration_ms: int | None
    forced_past: list[str] = Field(description="Unfinished dependencies overridden with force=true (empty when none).")
    message: str
    task: TaskView

    def render_text(self) -> str:
        return self.message


class UpdateResult(_TaskChange):
    def render_text(self) -> str:
        return f"Updated {self.task.line()}."


class ListResult(ToolResult):
    success: bool = True
    workflow_id: str
    tasks: list[TaskSummary] = Field(description="Tasks by priority (1 first), then oldest first.")
    count: int = Field(description="Number of tasks in this page.")
    total: int = Field(description="Number of tasks matching the filters.")
    offset: int
    has_more: bool = Field(description="true if more tasks match: call again with offset = offset + count.")

    def render_text(self) -> str:
        if not self.tasks:
            return f"No tasks in workflow {self.workflow_id} match (total {self.total})."
        header = f"{self.count} of {self.total} tasks in workflow {self.workflow_id}"
        header += f" (offset {self.offset}; more: offset={self.offset + self.count})" if self.has_more else ":"
        lines = [header]
        for task in self.tasks:
            line = f"{task.id} [{task.status}] P{task.priority} {task.name}"
            if task.assigned_agent:
                line += f" @{task.assigned_agent}"
            if task.dependencies:
                line += f" (after {', '.join(task.dependencies)})"
            lines.append(line)
        return "\n".join(lines)


class DeleteResult(ToolResult):
    success: bool = True
    deleted: list[str] = Field(description="Ids deleted: the task first, then its dependents when cascade=true.")
    count: int
    message: str

    def render_text(self) -> str:
        return self.message


class NextResult(ToolResult):
    success: bool = True
    task: TaskView | None = Field(description="The task to do next, or null when no pending task is ready.")
    pending_count: int = Field(description="Pending tasks considered.")
    waiting_count: int = Field(description="Pending tasks still waiting for unfinished dependencies.")
    message: str

    def render_text(self) -> str:
        if self.task is None:
            return self.message
        return f"Next: {self.task.line()}\n{self.message}"
