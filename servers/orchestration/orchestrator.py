"""The orchestration host: permanent agents, sub-agents on the shared agent runtime, and their sections.

Sub-agents run on `shared.agents.runtime.AgentRuntime`, the runtime of the gateway's plan_actions, over a section
pool (`servers/pool/pool.py`) and through a gate (`servers/pool/gate.py`) like the gateway's:
- behind a gateway (the default: the gateway hosts this section in its own process, `servers/pool/hosted.py`)
  the orchestrator is given the gateway's pool and slot pool: one `max_subagents` bounds plan_actions and
  spawn_agent together, and no section runs twice;
- served on its own (`mcp-sections serve orchestration`, its own container), its lifespan builds a pool of its own.
Rules:
- one slot pool (`max_subagents`) for spawn_agent, delegate_task and parallel_tasks, taken without waiting;
- depth is kept here (the client is 0; a sub-agent is its parent + 1); orchestration tools are offered to a
  sub-agent only while its depth is below `max_depth`;
- a child's grant is never more than its parent's (section ids, and tools when the parent was narrowed);
- a permanent agent never delegates to itself;
- every call of its sub-agents passes the gate (grant, approval, audit in this section's log).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio

from mcp_sections.servers.pool.host import AgentHost
from mcp_sections.servers.pool.misplaced import depth_zero
from mcp_sections.servers.pool.pool import SectionPool
from mcp_sections.shared.agents.metrics import Metrics
from mcp_sections.shared.agents.providers import ToolDef
from mcp_sections.shared.agents.runtime import AgentRun, AgentTask, SlotPool
from mcp_sections.shared.agents.scope import CLIENT_SCOPE, AgentLimits, AgentScope, ConfigFile, ScopedState
from mcp_sections.shared.framework.tools import ToolContext, ToolSpec
from mcp_sections.shared.ground.errors import (
    ToolFailure,
    invalid_input,
    limit_exceeded,
    not_found,
    permission_denied,
)
from mcp_sections.shared.settings.config import Settings

from .settings import OrchestrationSettings, PermanentAgent

logger = logging.getLogger("mcp_sections.orchestration")

SECTION_ID = "orchestration"
SUBAGENT_TOOLS = ("spawn_agent", "delegate_task", "parallel_tasks", "list_children", "terminate_agent", "list_agents")


def hosted_limits(config: OrchestrationSettings, host: AgentHost) -> AgentLimits:
    """Inside a gateway: never deeper than the gateway allows nor than this section's own setting; the gateway's
    slot count, the section's budgets, the gateway's model (and its config file)."""
    gateway = host.pool.config
    return AgentLimits.of(
        config,
        max_depth=min(config.max_depth, gateway.max_depth),
        max_subagents=gateway.max_subagents,
        model=gateway.model,
        config_file=host.limits.config_file,
    )


def on_host(runtime: Any, host: AgentHost) -> ScopedState:
    """Hosted by the gateway (`Section.hosted`): an orchestrator on the gateway's pool and slots, its client's state."""
    config = runtime.settings_of(OrchestrationSettings)
    orchestrator = Orchestrator(
        runtime.settings, config, host.pool, hosted_limits(config, host), slots=host.runtime.slots
    )
    return orchestrator.client


def standalone_limits(config: OrchestrationSettings, gateway: Any, settings: Settings) -> AgentLimits:
    """Served on its own: this section's limits and budgets, the model of `[gateway.model]` in its config file."""
    return AgentLimits.of(config, model=gateway.model, config_file=ConfigFile.of(settings.config_file))


class Orchestrator:
    def __init__(
        self,
        settings: Settings,
        config: OrchestrationSettings,
        pool: SectionPool,
        limits: AgentLimits,
        slots: SlotPool | None = None,
    ) -> None:
        """`pool`: the sections its sub-agents may use; `slots`: the slot pool to share (the hosting gateway's)."""
        from .questions import CircuitBreaker

        self.settings = settings
        self.limits = limits
        self.section_config = config
        self.pool = pool
        self.host = AgentHost(
            self,
            settings,
            pool,
            _specs(),
            limits,
            audit_name=SECTION_ID,
            offered=SUBAGENT_TOOLS,
            delegating=frozenset(SUBAGENT_TOOLS),
            untrusted_own={name: "sub-agent report" for name in ("spawn_agent", "delegate_task", "parallel_tasks")},
            slots=slots,
        )
        self.runtime = self.host.runtime
        self.breaker = CircuitBreaker(config.ask_breaker_threshold, config.ask_cooldown_seconds)
        self.client = ScopedState(self, CLIENT_SCOPE)

    # -- building one sub-agent ---------------------------------------------------------------------------

    def permanent(self, agent_id: str) -> PermanentAgent:
        agent = self.section_config.agents.get(agent_id)
        if agent is None:
            known = ", ".join(sorted(self.section_config.agents)) or "none are configured"
            raise not_found(f"Agent not found: {agent_id[:64]!r}; permanent agents: {known} (see list_agents).")
        return agent

    def visible_agents(self, caller: AgentScope) -> dict[str, PermanentAgent]:
        """Permanent agents the caller may delegate to (never itself)."""
        return {key: agent for key, agent in self.section_config.agents.items() if key != caller.profile}

    def check_depth(self, caller: AgentScope) -> int:
        if self.limits.max_depth == 0:  # hosted by a gateway whose max_depth is 0 (this section's own is at least 1)
            raise limit_exceeded(depth_zero("sub-agents", self.settings))
        if caller.depth >= self.limits.max_depth:
            raise limit_exceeded(
                f"sub-agents may not be deeper than {self.limits.max_depth}; do this task with your own tools."
            )
        return caller.depth + 1

    async def build_task(
        self,
        caller: AgentScope,
        *,
        name: str,
        prompt: str,
        kind: str,
        sections: list[str] | None,
        tools: list[str] | None,
        instructions: str | None,
        model: str | None,
        profile: str | None = None,
    ) -> AgentTask:
        """A sub-agent's task, with tools never exceeding the caller's. Raises ToolFailure when refused."""
        depth = self.check_depth(caller)
        own_sections = self.pool.sections_of(caller)
        if sections is None:
            sections = list(self.section_config.default_sections) if caller.is_client else own_sections
        sections = list(dict.fromkeys(sections))
        for section_id in sections:
            if section_id in self.pool.catalog and self.pool.entry(section_id).runs_agents:
                raise permission_denied(
                    f"section {section_id!r} cannot be given to a sub-agent: orchestration tools come with its depth."
                )
        self.pool.check_sections_in_scope(sections, caller)
        provider = self.runtime.provider(
            self.limits.model.model_copy(update={"model": model}) if model else self.limits.model
        )
        routes = await self.host.agent_routes(sections)
        if tools is not None:
            unknown = sorted(set(tools) - set(routes))
            if unknown:
                raise invalid_input(
                    f"tools {', '.join(unknown[:10])} are not tools of sections {', '.join(sections) or '(none)'}; "
                    f"their tools are: {', '.join(routes) or 'none'}."
                )
            routes = {key: route for key, route in routes.items() if key in tools}
        if not caller.is_client:
            beyond = sorted(name for name, route in routes.items() if not caller.grants(route.section, name))
            if beyond and tools is not None:
                raise permission_denied(
                    f"a sub-agent cannot get tools its parent does not have: {', '.join(beyond[:10])}"
                    f"{' ...' if len(beyond) > 10 else ''}. Give it a subset of your own tools."
                )
            routes = {key: route for key, route in routes.items() if caller.grants(route.section, key)}  # never more
        narrowed = tools is not None or caller.tools is not None
        tool_defs: list[ToolDef] = self.runtime.tool_defs(routes, depth)
        return AgentTask(
            prompt=prompt,
            routes=routes,
            tools=tool_defs,
            depth=depth,
            provider=provider,
            sections=frozenset(sections),
            tool_filter=frozenset(routes) if narrowed else None,
            instructions=instructions,
            name=name,
            kind=kind,
            parent=caller.agent_id,
            profile=profile,
            reports_to=caller.nested,
            label=f"depth {depth} · {name} · ",
        )

    async def permanent_task(self, caller: AgentScope, agent_id: str, prompt: str, kind: str) -> AgentTask:
        if caller.profile is not None and agent_id == caller.profile:
            raise permission_denied(
                f"agent {agent_id!r} cannot delegate to itself; do the task yourself or pick another agent."
            )
        agent = self.permanent(agent_id)
        return await self.build_task(
            caller,
            name=agent.name,
            prompt=prompt,
            kind=kind,
            sections=agent.sections,
            tools=agent.tools,
            instructions=agent.system_prompt or None,
            model=agent.model,
            profile=agent_id,
        )

    # -- slots --------------------------------------------------------------------------------------------

    def take_slots(self, count: int) -> None:
        slots = self.runtime.slots
        free = slots.size - slots.live
        if count > free:
            raise limit_exceeded(
                f"{count} sub-agent slot(s) needed but {free} of {slots.size} are free (shared by spawn_agent, "
                "delegate_task and parallel_tasks); wait for one to finish (list_children), or do it yourself.",
                live=slots.live,
                limit=slots.size,
            )
        for _ in range(count):
            slots.try_take()

    def give_back(self, count: int) -> None:
        for _ in range(count):
            self.runtime.slots.give_back()

    @property
    def remaining_slots(self) -> int:
        return self.runtime.slots.size - self.runtime.slots.live

    async def run_one(self, task: AgentTask, ctx: ToolContext | None) -> AgentRun:
        """Run one sub-agent on a slot taken here."""
        self.take_slots(1)
        try:
            return await self.runtime.run_agent(task, ctx)
        finally:
            self.give_back(1)

    async def run_batch(
        self, tasks: list[tuple[str, AgentTask | ToolFailure]], ctx: ToolContext | None
    ) -> tuple[list[tuple[str, AgentRun | ToolFailure]], Metrics]:
        """Run the built tasks concurrently (one slot each, all taken up front); refused ones fail alone."""
        runnable = [task for _, task in tasks if isinstance(task, AgentTask)]
        self.take_slots(len(runnable))
        outcomes: list[AgentRun | ToolFailure | None] = [None] * len(tasks)
        started = time.monotonic()

        async def run(index: int, task: AgentTask) -> None:
            try:
                outcomes[index] = await self.runtime.run_agent(task, ctx)
            except ToolFailure as failure:
                outcomes[index] = failure
            finally:
                self.give_back(1)

        async with anyio.create_task_group() as group:
            for index, (_, task) in enumerate(tasks):
                if isinstance(task, AgentTask):
                    group.start_soon(run, index, task)
                else:
                    outcomes[index] = task
        total = Metrics(depth=0, started=started)
        for outcome in outcomes:
            if isinstance(outcome, AgentRun):
                total.depth = outcome.metrics.depth
                total.add(outcome.metrics)
        total.finish()
        results = [(agent_id, outcome) for (agent_id, _), outcome in zip(tasks, outcomes, strict=True)]
        return results, total  # type: ignore[return-value]

    def terminate(self, caller: AgentScope, child_id: str) -> str:
        allowed = {agent.id: agent for agent in self.runtime.descendants(caller.agent_id)}
        agent = allowed.get(child_id)
        if agent is None:
            running = ", ".join(sorted(allowed)) or "none"
            raise not_found(f"no running sub-agent {child_id[:64]!r} of yours; running: {running} (list_children).")
        who = "the client" if caller.is_client else caller.agent_id
        agent.terminate(f"terminated by {who} with terminate_agent")
        return agent.name


def _specs() -> dict[str, ToolSpec]:
    from .section import SUBAGENT_SPECS

    return SUBAGENT_SPECS
