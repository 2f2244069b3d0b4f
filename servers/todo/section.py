"""The todo section: workflow-scoped tasks with priorities, dependencies and timing."""

from __future__ import annotations

from mcp_sections.servers.todo.board import Board, StatusChange
from mcp_sections.servers.todo.models import (
    CompleteInput,
    CreateInput,
    CreateResult,
    DeleteInput,
    DeleteResult,
    GetInput,
    GetResult,
    ListInput,
    ListResult,
    NextInput,
    NextResult,
    StatusResult,
    TaskSummary,
    TaskView,
    UpdateInput,
    UpdateResult,
    UpdateStatusInput,
)
from mcp_sections.servers.todo.settings import TodoSettings
from mcp_sections.shared.framework.sections import Section, SectionRuntime
from mcp_sections.shared.framework.tools import CREATE, OVERWRITE, READ_ONLY, WRITE, tool


def open_board(runtime: SectionRuntime) -> Board:
    settings = runtime.settings_of(TodoSettings)
    return Board.in_data_dir(runtime.data_dir, settings.max_tasks_per_workflow, settings)


def _status_result(change: StatusChange, verb: str) -> StatusResult:
    task = TaskView.of(change.task)
    if not change.changed:
        message = f"Task {task.id} was already {task.status}; nothing changed."
    else:
        message = f"Task {task.id} {verb}: {change.previous_status} → {task.status}."
        if task.status == "completed" and task.duration_ms is not None:
            message += f" Duration {task.duration_ms} ms."
        if change.forced_past:
            message += f" Forced past unfinished dependencies: {', '.join(change.forced_past)}."
    return StatusResult(
        task_id=task.id,
        previous_status=change.previous_status,
        new_status=task.status,
        changed=change.changed,
        duration_ms=task.duration_ms,
        forced_past=change.forced_past,
        message=message,
        task=task,
    )


@tool(
    name="todo_create",
    title="Create a task",
    annotations=CREATE,
    examples=(
        "add a task to write the release notes",
        "plan a new step that depends on the setup task",
        "create a todo item",
        "add a new task to the board with a description",
        "put a new item on the todo board with priority 1",
        "add a follow-up task assigned to the tester agent",
    ),
)
def todo_create(params: CreateInput, state: Board) -> CreateResult:
    """Create a task in a workflow's todo board, to break complex work into trackable steps.

    The task starts `pending` and gets a new id ('task_' + 12 hex digits). name: 1-128 characters;
    description: at most 1000; priority: 1 (critical) to 5 (nice-to-have), default 3; dependencies:
    ids of existing tasks of the same workflow that must be completed before this one can start
    (unknown ids → NOT_FOUND); assigned_agent: optional owner. A workflow holds at most 10,000 tasks
    by default (MAX_LIMIT_EXCEEDED beyond). A pending task with the very same fields is not doubled: it is
    returned with created=false (a retried call, the same step planned twice); allow_duplicate=true creates
    another. Returns the task id and the full task.
    """
    added = state.add(
        params.workflow_id,
        params.name,
        params.description,
        params.priority,
        params.dependencies,
        params.assigned_agent,
        allow_duplicate=params.allow_duplicate,
    )
    task = TaskView.of(added.task)
    if added.created:
        return CreateResult(task_id=task.id, message="Task created successfully", task=task)
    message = (
        f"Not created: pending task {task.id} of this workflow already has these fields, and is returned; pass "
        "allow_duplicate=true to add another."
    )
    return CreateResult(task_id=task.id, message=message, task=task, created=False)


@tool(
    name="todo_get",
    title="Get a task",
    annotations=READ_ONLY,
    examples=(
        "full details of one task including its timestamps",
        "what is task_0a1b2c3d4e5f waiting on",
        "look up a single task by id",
        "show one task's status and dependencies",
        "which tasks depend on this one",
        "show me everything about one task",
    ),
)
def todo_get(params: GetInput, state: Board) -> GetResult:
    """Get one task of a workflow with all its fields: name, description, status, priority, assigned
    agent, dependencies, timestamps (created_at, started_at, completed_at; ISO 8601 UTC), duration_ms,
    plus `dependents` (tasks waiting for it) and `unfinished_dependencies` (empty when it can start).
    NOT_FOUND if the id is not a task of this workflow.
    """
    detail = state.get(params.workflow_id, params.task_id)
    return GetResult(
        task=TaskView.of(detail.task),
        dependents=detail.dependents,
        unfinished_dependencies=detail.unfinished_dependencies,
    )


@tool(
    name="todo_update_status",
    title="Change a task's status",
    annotations=OVERWRITE,
    examples=(
        "mark the current task as in progress",
        "set that task back to pending",
        "this step is stuck, set it to blocked",
        "start working on a task",
        "reopen a task that was completed",
        "flag a task as in_progress",
    ),
)
def todo_update_status(params: UpdateStatusInput, state: Board) -> StatusResult:
    """Set a task's status: pending, in_progress, completed or blocked.

    Rules: moving to in_progress or completed requires every dependency to be completed, else
    VALIDATION_FAILED naming the unfinished ones (force=true overrides and reports them in
    `forced_past`). Reopening a completed task (to any other status) is refused while a task that
    depends on it is in_progress or completed, unless force=true; reopening clears completed_at and
    duration_ms. started_at is set the first time the task enters in_progress. Setting the current
    status again changes nothing (changed=false). Use todo_complete to record a duration.
    """
    change = state.set_status(params.workflow_id, params.task_id, params.status, force=params.force)
    return _status_result(change, "status updated")


@tool(
    name="todo_complete",
    title="Complete a task",
    annotations=WRITE,
    examples=(
        "I'm done with this task, log how long it took",
        "close out the finished step",
        "mark a task as done",
        "finish a task and record its duration",
        "tick off a finished task",
        "complete task_1a2b3c4d5e6f",
    ),
)
def todo_complete(params: CompleteInput, state: Board) -> StatusResult:
    """Mark a task completed and record its execution time.

    duration_ms: the time spent, in milliseconds; when omitted it is measured from started_at (null if
    the task was never started). Every dependency must be completed first, else VALIDATION_FAILED
    naming the unfinished ones (force=true overrides). Completing an already completed task changes
    nothing (changed=false). Completed dependencies make their dependents eligible for todo_next.
    """
    change = state.complete(params.workflow_id, params.task_id, params.duration_ms, force=params.force)
    return _status_result(change, "completed")


@tool(
    name="todo_update",
    title="Edit a task",
    annotations=OVERWRITE,
    examples=(
        "change the description and owner of a task",
        "lower the priority of the docs task to 4",
        "replace a task's dependencies",
        "assign a task to another agent",
        "make an existing task depend on another one",
        "rename a task",
    ),
)
def todo_update(params: UpdateInput, state: Board) -> UpdateResult:
    """Edit a task's name, description, priority, assigned agent (or unassign=true), or replace its
    dependency list. Only the given fields change. New dependencies must be tasks of the same workflow
    (NOT_FOUND otherwise) and must not form a cycle (VALIDATION_FAILED showing the loop). Adding an
    unfinished dependency to a task already in_progress or completed is refused unless force=true.
    Use todo_update_status / todo_complete to change the status.
    """
    task = state.update(
        params.workflow_id,
        params.task_id,
        name=params.name,
        description=params.description,
        priority=params.priority,
        assigned_agent=params.assigned_agent,
        unassign=params.unassign,
        dependencies=params.dependencies,
        force=params.force,
    )
    return UpdateResult(task_id=task.id, message="Task updated successfully", task=TaskView.of(task))


@tool(
    name="todo_list",
    title="List tasks",
    annotations=READ_ONLY,
    examples=(
        "show all tasks in this workflow by priority",
        "list the tasks filtered by status",
        "what's on the task list",
        "list the tasks an agent is responsible for",
        "give me an overview of all the tasks and their states",
        "which tasks are still pending",
    ),
)
def todo_list(params: ListInput, state: Board) -> ListResult:
    """List a workflow's tasks, by priority (1 first) then oldest first, optionally filtered by status
    (status_filter) and assigned agent. Returns id, name, status, priority, assigned agent and
    dependencies of each task; limit 1-1000 (default 1000) with offset for paging (`total` counts all
    matches, `has_more` says whether to fetch the next page). Use todo_get for a task's full details.
    """
    page = state.list(params.workflow_id, params.status_filter, params.assigned_agent, params.limit, params.offset)
    tasks = [TaskSummary.model_validate(task) for task in page.tasks]
    return ListResult(
        workflow_id=params.workflow_id,
        tasks=tasks,
        count=len(tasks),
        total=page.total,
        offset=page.offset,
        has_more=page.offset + len(tasks) < page.total,
    )


@tool(
    name="todo_next",
    title="Next task to do",
    annotations=READ_ONLY,
    examples=(
        "which task is ready to start now",
        "give me the most urgent unblocked task",
        "what should be done next",
        "the next task whose dependencies are finished",
        "what should I work on now",
        "pick the highest-priority task that can start",
    ),
)
def todo_next(params: NextInput, state: Board) -> NextResult:
    """The task to work on next: among `pending` tasks whose dependencies are all completed, the one
    with the best priority (1 first); ties go to the oldest (created first). With assigned_agent, only
    tasks assigned to that agent or unassigned are considered. Returns task=null when nothing is ready,
    with how many pending tasks still wait for dependencies. Read-only: start it with
    todo_update_status(status='in_progress').
    """
    pick = state.next(params.workflow_id, params.assigned_agent)
    if pick.task is None:
        if pick.pending == 0:
            message = f"No pending task in workflow {params.workflow_id}."
        else:
            message = f"No task is ready: all {pick.pending} pending tasks wait for unfinished dependencies."
    else:
        message = f"{pick.pending} pending, {pick.waiting} waiting for dependencies."
    task = None if pick.task is None else TaskView.of(pick.task)
    return NextResult(task=task, pending_count=pick.pending, waiting_count=pick.waiting, message=message)


@tool(
    name="todo_delete",
    title="Delete a task",
    annotations=OVERWRITE,
    examples=(
        "throw away a task I created by mistake",
        "delete this task and the ones that depend on it",
        "remove a task from the workflow",
        "cancel a planned task entirely",
        "delete a todo",
        "get rid of a task on the board",
    ),
)
def todo_delete(params: DeleteInput, state: Board) -> DeleteResult:
    """Delete a task from a workflow for good. If other tasks depend on it, the call is refused with
    VALIDATION_FAILED listing them, unless cascade=true, which also deletes every task that depends on
    it, directly or transitively (the result lists all deleted ids). NOT_FOUND for an unknown id; for a task
    already deleted (a call repeated after its answer was lost) the NOT_FOUND says when, and by which cascade
    (details deleted_at, deleted_with): that delete is done. To keep the dependents instead, first remove the
    dependency with todo_update.
    """
    deletion = state.delete(params.workflow_id, params.task_id, cascade=params.cascade)
    extra = len(deletion.deleted) - 1
    message = "Task deleted successfully" + (
        f", with {extra} dependent task{'s' if extra > 1 else ''}: {', '.join(deletion.deleted[1:])}" if extra else ""
    )
    return DeleteResult(deleted=deletion.deleted, count=len(deletion.deleted), message=message + ".")


SECTION = Section(
    id="todo",
    output_source="task board",
    name="Todo",
    description="Workflow task board: create, prioritise, order by dependencies, track and time tasks.",
    instructions=(
        "Break complex work into tasks with todo_create before starting it; use workflow_id to keep "
        "separate boards (default 'default'). Pick work with todo_next, mark it in_progress with "
        "todo_update_status, finish with todo_complete."
    ),
    tools=(
        todo_create,
        todo_get,
        todo_update_status,
        todo_complete,
        todo_update,
        todo_list,
        todo_next,
        todo_delete,
    ),
    settings_model=TodoSettings,
    open_state=open_board,
)
