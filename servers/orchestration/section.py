"""The orchestration section: sub-agents on demand and questions to the user (MCP elicitation)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp_sections.shared.agents.scope import ScopedState
from mcp_sections.shared.framework.requirements import Requirement
from mcp_sections.shared.framework.sections import Section, SectionRuntime
from mcp_sections.shared.framework.tools import (
    OPEN_WORLD,
    OVERWRITE,
    READ_ONLY,
    Annotations,
    ToolContext,
    ToolSpec,
    UserAnswer,
    UserQuestion,
    spec_of,
    tool,
)
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, invalid_input

from .models import (
    AgentInfo,
    AgentMetrics,
    AskUserInput,
    AskUserResult,
    ChildInfo,
    DelegateTaskInput,
    DelegateTaskResult,
    ListAgentsResult,
    ListChildrenResult,
    NoInput,
    ParallelTasksInput,
    ParallelTasksResult,
    SpawnAgentInput,
    SpawnAgentResult,
    TaskOutcome,
    TerminateAgentInput,
    TerminateAgentResult,
)
from .needs import CONFIGURE_MODEL, model_configured
from .settings import OrchestrationSettings

ASKS_USER = Annotations(read_only=True, destructive=False, idempotent=False, open_world=True)


def _metrics(run: object) -> AgentMetrics:
    return AgentMetrics(**run.metrics.as_dict())  # type: ignore[attr-defined]


def _ran(run: Any, runtime: Any = None) -> dict[str, Any]:
    """The fields every sub-agent run's result shares: success, status, report, error and metrics. A run alone in its
    call (`runtime` given) that got nothing done (its model never answered) fails the call with its coded failure."""
    if runtime is not None and run.got_nothing_done and run.failure is not None:
        raise runtime.could_not_start([run])
    return {
        "success": run.status == "completed",
        "status": run.status,
        "report": _report(run),
        "error": run.error,
        "metrics": _metrics(run),
    }


def _report(run: object) -> str:
    report = run.report  # type: ignore[attr-defined]
    if run.sources:  # type: ignore[attr-defined]
        report += "\n\n**Tool calls (sources):**\n" + "\n".join(
            f"{n}. {source}"
            for n, source in enumerate(run.sources, 1)  # type: ignore[attr-defined]
        )
    return report


@tool(
    name="spawn_agent",
    title="Spawn a sub-agent",
    annotations=OPEN_WORLD,
    examples=(
        "start a temporary helper agent for a subtask",
        "create a sub-agent with only the file tools",
        "spawn a sub-agent",
        "delegate a one-off task to a new agent",
        "have a fresh agent research this and report back",
        "hand a subtask to a temporary agent with limited tools",
    ),
    long=True,
)
async def spawn_agent(params: SpawnAgentInput, state: ScopedState, ctx: ToolContext) -> SpawnAgentResult:
    """Create a temporary sub-agent, run it on one task and return its markdown report with metrics
    (duration_ms, tokens, tool_calls). "Prompt in, report out": the sub-agent sees ONLY `prompt` (plus your
    optional `system_prompt`) and the tools of `sections` (optionally narrowed to `tools`) — never more than
    you have. It is removed when done. At most 3 sub-agents run at once, shared with delegate_task and
    parallel_tasks (MAX_LIMIT_EXCEEDED beyond; see list_children). Needs a model in [gateway.model]
    (DEPENDENCY_ERROR says how otherwise)."""
    orchestrator, caller = state.host, state.scope
    if params.provider is not None and params.provider != orchestrator.limits.model.provider:
        raise invalid_input(
            f"provider {params.provider!r} is not configured; the configured provider is "
            f"{orchestrator.limits.model.provider!r} ([gateway.model]). Omit `provider`."
        )
    task = await orchestrator.build_task(
        caller,
        name=params.name,
        prompt=params.prompt,
        kind="spawn",
        sections=params.sections,
        tools=params.tools,
        instructions=params.system_prompt,
        model=params.model,
    )
    run = await orchestrator.run_one(task, ctx)
    return SpawnAgentResult(child_id=run.agent_id or "", name=params.name, **_ran(run, orchestrator.runtime))


@tool(
    name="list_children",
    title="List running sub-agents",
    annotations=READ_ONLY,
    examples=(
        "which sub-agents are running now",
        "check the free agent slots",
        "list my child agents",
        "what are my sub-agents doing right now",
        "how many agent slots are free",
        "show the running child agents and their depth",
    ),
)
async def list_children(params: NoInput, state: ScopedState) -> ListChildrenResult:
    """The sub-agents running now (yours: for a sub-agent, the ones it started) with their id, name, kind
    (spawn, delegate, parallel), depth, parent and start time, and how many slots remain free (the limit is
    shared by spawn_agent, delegate_task and parallel_tasks)."""
    orchestrator = state.host
    children = [
        ChildInfo(
            id=agent.id,
            name=agent.name,
            kind=agent.kind,  # type: ignore[arg-type]
            depth=agent.depth,
            parent=agent.parent,
            started_at=agent.started_at,
        )
        for agent in orchestrator.runtime.descendants(state.scope.agent_id)
    ]
    return ListChildrenResult(
        children=children,
        count=len(children),
        remaining_slots=orchestrator.remaining_slots,
        max_slots=orchestrator.runtime.slots.size,
    )


@tool(
    name="terminate_agent",
    title="Stop a running sub-agent",
    annotations=OVERWRITE,
    examples=(
        "cancel a running sub-agent",
        "stop the agent I spawned",
        "kill a child agent",
        "abort a sub-agent that is stuck",
        "terminate a sub-agent by id",
        "the helper agent is taking too long, stop it",
    ),
)
async def terminate_agent(params: TerminateAgentInput, state: ScopedState) -> TerminateAgentResult:
    """Stop a running sub-agent (and the sub-agents it started) now. The call that started it returns at
    once with status `terminated` and what the sub-agent had done; its slot is freed. Unknown or finished
    id → NOT_FOUND listing the running ones."""
    name = state.host.terminate(state.scope, params.child_id)
    return TerminateAgentResult(
        success=True, child_id=params.child_id, message=f"Sub-agent {name!r} ({params.child_id}) terminated."
    )


@tool(
    name="delegate_task",
    title="Delegate to a permanent agent",
    annotations=OPEN_WORLD,
    examples=(
        "give a job to one of the configured agents",
        "let the permanent writer agent handle this",
        "delegate a task to an existing agent",
        "ask the reviewer agent to do it",
        "have the configured reviewer agent check this code",
        "hand this job to a named permanent agent",
    ),
    long=True,
)
async def delegate_task(params: DelegateTaskInput, state: ScopedState, ctx: ToolContext) -> DelegateTaskResult:
    """Run a task on a permanent agent from the configuration (see list_agents): it works with its own
    instructions, sections and model, and returns a markdown report with metrics. "Prompt in, report out":
    give the COMPLETE task in `prompt`. An agent never delegates to itself (PERMISSION_DENIED), and never
    gets tools its caller lacks. Uses one of the sub-agent slots shared with spawn_agent and parallel_tasks."""
    orchestrator = state.host
    task = await orchestrator.permanent_task(state.scope, params.agent_id, params.prompt, "delegate")
    run = await orchestrator.run_one(task, ctx)
    return DelegateTaskResult(agent_id=params.agent_id, child_id=run.agent_id or "", **_ran(run, orchestrator.runtime))


@tool(
    name="list_agents",
    title="List permanent agents",
    annotations=READ_ONLY,
    examples=(
        "what permanent agents are configured",
        "show the agents I can delegate to",
        "list agents",
        "which specialist agents exist",
        "what specialists are available to take a job",
        "list configured agents with their capabilities",
    ),
)
async def list_agents(params: NoInput, state: ScopedState) -> ListAgentsResult:
    """The permanent agents delegate_task and parallel_tasks can use (never the caller itself): id, name,
    description, capabilities, sections and model; plus the free sub-agent slots."""
    orchestrator = state.host
    agents = [
        AgentInfo(
            id=agent_id,
            name=agent.name,
            description=agent.description,
            capabilities=agent.capabilities,
            sections=agent.sections,
            model=agent.model or orchestrator.limits.model.model,
        )
        for agent_id, agent in orchestrator.visible_agents(state.scope).items()
    ]
    return ListAgentsResult(agents=agents, count=len(agents), remaining_slots=orchestrator.remaining_slots)


@tool(
    name="parallel_tasks",
    title="Run tasks in parallel",
    annotations=OPEN_WORLD,
    examples=(
        "run several agent tasks concurrently",
        "fan out up to three jobs to agents at once",
        "run tasks in parallel",
        "execute a batch of agent tasks simultaneously",
        "run three independent jobs on different agents at the same time",
        "split work across agents concurrently and wait for all",
    ),
    long=True,
)
async def parallel_tasks(params: ParallelTasksInput, state: ScopedState, ctx: ToolContext) -> ParallelTasksResult:
    """execute_batch: run up to 3 independent tasks at the same time, each on a permanent agent (see
    list_agents), and wait for all of them; total time ≈ the slowest task. Returns, per task, success,
    report, error and metrics, plus an aggregated markdown report. One task failing (unknown agent, model
    error, budget) does not stop the others: the result says which failed (`completion`: all/some/none).
    Needs one free slot per runnable task (MAX_LIMIT_EXCEEDED otherwise, nothing started)."""
    orchestrator = state.host
    limit = min(orchestrator.section_config.max_batch, orchestrator.runtime.slots.size)
    if len(params.tasks) > limit:
        raise invalid_input(f"at most {limit} tasks per batch; split the work into several parallel_tasks calls.")
    orchestrator.check_depth(state.scope)
    orchestrator.runtime.provider()  # no model: one DEPENDENCY_ERROR for the batch, not one per task
    built = []
    for item in params.tasks:
        try:
            built.append(
                (item.agent_id, await orchestrator.permanent_task(state.scope, item.agent_id, item.prompt, "parallel"))
            )
        except ToolFailure as failure:
            built.append((item.agent_id, failure))
    results, total = await orchestrator.run_batch(built, ctx)
    _check_some_work(results, orchestrator.runtime.where_configured())
    outcomes: list[TaskOutcome] = []
    sections = ["# Parallel tasks report", ""]
    for index, (agent_id, outcome) in enumerate(results, 1):
        if isinstance(outcome, ToolFailure):
            error = f"[{outcome.code.value}] {outcome.message}"
            outcomes.append(TaskOutcome(agent_id=agent_id, success=False, status="not_started", error=error))
            sections += [f"## Task {index}: {agent_id} — failed", "", f"_Error: {error}_", ""]
            continue
        outcomes.append(TaskOutcome(agent_id=agent_id, child_id=outcome.agent_id, **_ran(outcome)))
        sections += [f"## Task {index}: {agent_id} — {outcome.status}", "", _report(outcome), ""]
        if outcome.error:
            sections += [f"_Stopped: {outcome.error}_", ""]
    completed = sum(1 for outcome in outcomes if outcome.success)
    failed = len(outcomes) - completed
    sections.append(
        f"_{completed} of {len(outcomes)} tasks completed in {total.duration_ms} ms; "
        f"{total.tokens_text(' by these tasks')}, {total.tool_calls} tool calls._"
    )
    return ParallelTasksResult(
        success=failed == 0,
        completion="all" if failed == 0 else ("none" if completed == 0 else "some"),
        completed=completed,
        failed=failed,
        results=outcomes,
        aggregated_report="\n".join(sections),
        metrics=AgentMetrics(**total.as_dict()),
    )


def _check_some_work(results: list[tuple[str, Any]], where_configured: str) -> None:
    """A batch none of whose tasks got anything done (not started, or their model never answered) fails with the
    first one's code, naming each task's failure; otherwise the result says which failed."""
    failures = [
        (agent_id, outcome if isinstance(outcome, ToolFailure) else outcome.failure)
        for agent_id, outcome in results
        if isinstance(outcome, ToolFailure) or (outcome.got_nothing_done and outcome.failure is not None)
    ]
    if not failures or len(failures) < len(results):
        return
    said = "; ".join(
        f"task {index} ({agent_id}): [{failure.code.value}] {failure.message}"
        for index, (agent_id, failure) in enumerate(failures, 1)
    )
    raise ToolFailure(failures[0][1].code, f"no task could start — {said}{where_configured}")


def _question(params: AskUserInput, state: ScopedState) -> UserQuestion:
    from .questions import form_of, message_of

    state.host.breaker.check()
    timeout = state.host.section_config.ask_timeout_seconds
    return UserQuestion(message=message_of(params), schema=form_of(params), timeout_seconds=timeout)


@tool(
    name="ask_user",
    title="Ask the user a question",
    annotations=ASKS_USER,
    asks_user=_question,
    examples=(
        "ask the user a clarifying question",
        "let the user choose between options",
        "get approval from a human",
        "request input from the user",
        "I need the user's decision to continue",
        "get the user's OK before a risky action",
    ),
)
async def ask_user(params: AskUserInput, state: ScopedState, answer: UserAnswer) -> AskUserResult:
    """Ask the human user a question and wait for the answer (MCP elicitation): `checkbox` (choose among
    `options`), `text` (free answer) or `mixed` (options plus text). Use it only when you cannot go on
    without the user's decision. The user may decline or cancel (status says so). No answer within the
    timeout (default 300 s) → TIMEOUT; after 3 unanswered questions in a row, questions are refused for 60 s
    (DEPENDENCY_ERROR with retry_after_seconds). A client without elicitation → DEPENDENCY_ERROR."""
    from .questions import result_of

    breaker = state.host.breaker
    if answer.action == "timeout":
        opened = breaker.timed_out()
        pause = (
            f" The user has not answered {breaker.threshold} questions in a row: questions are paused for "
            f"{breaker.cooldown:.0f} s."
            if opened
            else ""
        )
        raise ToolFailure(
            ErrorCode.TIMEOUT,
            f"the user did not answer within {state.host.section_config.ask_timeout_seconds:g} s; "
            f"continue without the answer, or ask later.{pause}",
        )
    breaker.answered()
    waited = answer.waited_seconds
    if answer.action == "decline":
        return AskUserResult(status="declined", waited_ms=int(waited * 1000))
    if answer.action == "cancel":
        return AskUserResult(status="cancelled", waited_ms=int(waited * 1000))
    return result_of(params, answer.content, waited)


TOOLS = (spawn_agent, list_children, terminate_agent, delegate_task, list_agents, parallel_tasks, ask_user)
SUBAGENT_SPECS: dict[str, ToolSpec] = {
    spec.name: spec for spec in (spec_of(f) for f in TOOLS) if spec.name != "ask_user"
}


def _hosted(runtime: SectionRuntime, host: Any) -> ScopedState:
    """Hosted by the gateway: the orchestrator on the gateway's agent host (its pool, slots and depth)."""
    from .orchestrator import on_host

    return on_host(runtime, host)


@asynccontextmanager
async def _lifespan(runtime: SectionRuntime) -> AsyncIterator[ScopedState]:
    """Served on its own: a section pool of its own (one subprocess per section, started on first use)."""
    from mcp_sections.servers.pool.pool import SectionPool
    from mcp_sections.servers.pool.settings import load_gateway_settings

    from .orchestrator import Orchestrator, standalone_limits

    config = runtime.settings_of(OrchestrationSettings)
    gateway = load_gateway_settings(runtime.settings, expose=[])
    pool = SectionPool(runtime.settings, gateway)
    orchestrator = Orchestrator(runtime.settings, config, pool, standalone_limits(config, gateway, runtime.settings))
    async with pool.running():
        yield orchestrator.client


SECTION = Section(
    id="orchestration",
    name="Orchestration",
    description="Sub-agents on demand: spawn one, delegate to a permanent agent, run tasks in parallel; "
    "ask the user a question.",
    tools=TOOLS,
    instructions=(
        "spawn_agent runs an ad-hoc sub-agent on a complete prompt; delegate_task hands a task to a permanent "
        "agent (list_agents); parallel_tasks runs up to 3 independent tasks at once. They share 3 sub-agent slots "
        "(list_children, terminate_agent). ask_user asks the human when you cannot decide alone."
    ),
    settings_model=OrchestrationSettings,
    lifespan=_lifespan,
    runs_agents=True,
    requirements=(
        Requirement(
            "a model for sub-agents",
            model_configured,
            CONFIGURE_MODEL,
            optional=True,
            without="ask_user and the listings only (spawn_agent, delegate_task, parallel_tasks need a model)",
        ),
    ),
    hosted=_hosted,
    output_source="sub-agent report",
)
