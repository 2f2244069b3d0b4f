"""OpenTelemetry end to end: the gateway and its section processes export to a local OTLP receiver on 127.0.0.1.

One client request is one trace: the gateway's span, the section's spans (the trace context travels in the request's
`_meta`), and a `plan_actions` tree three levels deep with every sub-agent and every tool call it made. Spans say
tool, section, depth, agent, outcome; never an argument value (the receiver sees every byte that was exported).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.helpers import REPO, gateway_client, write_config
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.otlp_receiver import OtlpReceiver, Span
from tests.stdio import HOST_ENVIRONMENT, data_of, error_of

pytest.importorskip("opentelemetry.sdk", reason="pip install 'mcp-sections[otel]'")
pytest.importorskip("opentelemetry.proto", reason="pip install 'mcp-sections[otel]'")

SECRET_TITLE = "SECRET-TITLE-7f3a"  # an argument value: it must never reach the receiver
SECRET_GOAL = "SECRET-GOAL-91c2"
FAST_EXPORT = {"OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_METRICS_EXPORTER": "otlp", "OTEL_METRIC_EXPORT_INTERVAL": "300"}


def dive(request: Request) -> Reply:
    """Each level adds a todo (an argument value to keep out of the traces), then delegates while it may."""
    if request.turn == 0:
        return Reply(tool_calls=[("todo_create", {"name": f"{SECRET_TITLE} at depth {request.depth}"})])
    if request.turn == 1 and "plan_actions" in request.tools:
        return Reply(tool_calls=[("plan_actions", {"goal": f"[script:dive] {SECRET_GOAL}", "sections": ["todo"]})])
    return Reply(text=f"Depth {request.depth} done [todo_create].")


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel({"dive": dive}) as server:
        yield server


def _env(receiver: OtlpReceiver) -> dict[str, str]:
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "SCRIPTED_MODEL_KEY": "k", **FAST_EXPORT}


def _children(spans: list[Span], parent: Span) -> list[Span]:
    return [span for span in spans if span.parent_id == parent.span_id]


@pytest.mark.anyio
async def test_one_request_is_one_trace_across_the_gateway_its_sections_and_three_levels_of_sub_agents(
    tmp_path: Path, model: ScriptedModel
) -> None:
    config = write_config(tmp_path / "config.toml", model_table(model.base_url))
    with OtlpReceiver() as receiver:
        args = ["--config", str(config), "--data-dir", str(tmp_path / "data")]
        async with gateway_client(*args, env=_env(receiver), cwd=tmp_path) as client:
            forwarded = await client.call_tool(
                "call_section_tool", {"section": "todo", "tool": "todo_create", "arguments": {"name": SECRET_TITLE}}
            )
            assert not forwarded.is_error, forwarded
            refused = await client.call_tool(
                "call_section_tool", {"section": "todo", "tool": "todo_get", "arguments": {"task_id": "task_999999"}}
            )
            assert error_of(refused)[0] == "NOT_FOUND"
            planned = await client.call_tool(
                "plan_actions", {"goal": f"[script:dive] {SECRET_GOAL}", "sections": ["todo"]}
            )
            assert data_of(planned)["success"], data_of(planned)
        # the processes flush their spans on exit
        receiver.wait_for(lambda r: sum(s.name == "invoke_agent sub-agent" for s in r.spans) == 3)
        receiver.wait_for(lambda r: any(p.metric == "mcp_sections.tool.duration" for p in r.points))
        spans = list(receiver.spans)
        bodies = b"".join(receiver.bodies)

    # never an argument value, a goal, or an error message in anything exported
    assert SECRET_TITLE.encode() not in bodies and SECRET_GOAL.encode() not in bodies
    assert b"999999" not in bodies

    calls = [span for span in spans if "mcp_sections.outcome" in span.attributes]  # spans of tool calls
    by_id = {span.span_id: span for span in spans}

    # the forwarded call: the gateway's span (the SDK's server span of the request, annotated) names the section it
    # resolved to; the section's span is in the same trace, below the SDK's client span (traceparent in _meta)
    gateway_call = next(
        s for s in calls if s.service == "mcp-sections-gateway" and s.attributes["mcp_sections.outcome"] == "OK"
    )
    assert gateway_call.service == "mcp-sections-gateway" and gateway_call.kind == 2
    assert gateway_call.attributes["gen_ai.tool.name"] == "call_section_tool"
    assert gateway_call.attributes["mcp_sections.section"] == "todo"
    assert gateway_call.attributes["mcp_sections.target_tool"] == "todo_create"
    assert gateway_call.attributes["mcp_sections.depth"] == 0
    assert not any(key.endswith("digest") for span in calls for key in span.attributes)
    section_call = next(s for s in calls if s.trace_id == gateway_call.trace_id and s.service == "mcp-sections-todo")
    assert section_call.attributes["gen_ai.tool.name"] == "todo_create" and section_call.kind == 2
    assert section_call.attributes["mcp_sections.section"] == "todo"
    ancestors = []
    cursor = section_call
    while cursor.parent_id in by_id:
        cursor = by_id[cursor.parent_id]
        ancestors.append(cursor)
    assert gateway_call in ancestors, "the section's span must descend from the gateway's span"
    assert any(s.service == "mcp-sections-gateway" and s.kind == 3 for s in ancestors), "the SDK's client span"

    # a failed call carries its error code, never its message
    failed = next(s for s in calls if s.service == "mcp-sections-todo" and s.attributes["mcp_sections.outcome"] != "OK")
    assert failed.attributes["mcp_sections.outcome"] == "NOT_FOUND" and failed.status == 2

    # plan_actions, three levels deep: one trace; each agent below the plan_actions call that started it
    plan = next(
        s
        for s in calls
        if s.attributes["gen_ai.tool.name"] == "plan_actions" and s.attributes["mcp_sections.depth"] == 0
    )
    tree = [s for s in spans if s.trace_id == plan.trace_id]
    agents = sorted(
        (s for s in tree if s.name == "invoke_agent sub-agent"), key=lambda s: s.attributes["mcp_sections.depth"]
    )
    assert [a.attributes["mcp_sections.depth"] for a in agents] == [1, 2, 3]
    parent_call = plan
    for agent in agents:
        assert by_id[agent.parent_id] is parent_call
        assert agent.attributes["mcp_sections.agent.status"] == "completed"
        own = [s for s in _children(tree, agent) if "mcp_sections.outcome" in s.attributes]
        assert {s.attributes["gen_ai.tool.name"] for s in own} <= {"todo_create", "plan_actions"}
        for call in own:
            assert call.attributes["mcp_sections.depth"] == agent.attributes["mcp_sections.depth"]
            assert call.attributes["mcp_sections.agent_id"] == agent.attributes["mcp_sections.agent_id"]
        # the section records the sub-agent's call in the same trace, with its depth and agent id
        created = next(s for s in own if s.attributes["gen_ai.tool.name"] == "todo_create")
        in_section = [
            s
            for s in tree
            if s.service == "mcp-sections-todo"
            and s.attributes.get("gen_ai.tool.name") == "todo_create"
            and s.attributes.get("mcp_sections.agent_id") == agent.attributes["mcp_sections.agent_id"]
        ]
        assert in_section and in_section[0].attributes["mcp_sections.depth"] == created.attributes["mcp_sections.depth"]
        nested = [s for s in own if s.attributes["gen_ai.tool.name"] == "plan_actions"]
        parent_call = nested[0] if nested else parent_call
    assert agents[-1].attributes["mcp_sections.depth"] == 3 and not any(
        s.attributes["gen_ai.tool.name"] == "plan_actions" for s in _children(tree, agents[-1])
    )

    # metrics: calls by outcome, errors by code, latency, per section
    points = receiver.points
    assert any(p.metric == "mcp_sections.tool.errors" and p.attributes.get("error.type") == "NOT_FOUND" for p in points)
    assert any(
        p.metric == "mcp_sections.tool.calls" and p.attributes.get("mcp_sections.section") == "todo" for p in points
    )


def test_without_an_endpoint_nothing_is_loaded_or_paid() -> None:
    """The light path: no endpoint, no OpenTelemetry SDK imported, no provider, and the SDK's own per-request span
    taken out of the served server."""
    code = (
        "import sys\n"
        "from mcp_sections.shared.serving import telemetry\n"
        "from mcp_sections.shared.settings.config import Settings\n"
        "from mcp_sections.servers.pool.settings import GatewaySettings\n"
        "from mcp_sections.servers.gateway.server import build_gateway_server\n"
        "from mcp_sections.shared.serving.sdk_tools import without_sdk_tracing\n"
        "assert telemetry.configure('gateway') is None and telemetry.current() is None\n"
        "server, _ = build_gateway_server(Settings.load(), GatewaySettings.load({}))\n"
        "without_sdk_tracing(server)\n"
        "names = [type(item).__name__ for item in server.middleware]\n"
        "assert 'OpenTelemetryMiddleware' not in names, names\n"
        "loaded = sorted(name for name in sys.modules if name.startswith('opentelemetry.sdk') or 'exporter' in name)\n"
        "assert not loaded, loaded\n"
        "print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(HOST_ENVIRONMENT)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_configuration_follows_the_standard_variables(tmp_path: Path) -> None:
    """The SDK disabled, or no endpoint: nothing; an endpoint: export, named after the server unless
    OTEL_SERVICE_NAME says otherwise; a host passes OTEL_* to its sections but not the service name."""
    from mcp_sections.shared.serving.telemetry import passed_environment, wanted

    assert not wanted({})
    assert not wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"})
    assert wanted({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"})
    passed = passed_environment({"OTEL_SERVICE_NAME": "mine", "OTEL_TRACES_SAMPLER": "always_on", "HOME": "/root"})
    assert passed == {"OTEL_TRACES_SAMPLER": "always_on"}

    code = (
        "from mcp_sections.shared.serving import telemetry\n"
        "from opentelemetry import trace\n"
        "assert telemetry.configure('calculator') is not None\n"
        "provider = trace.get_tracer_provider()\n"
        "print(provider.resource.attributes['service.name'], type(provider.sampler).__name__)\n"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    base.update({"PYTHONPATH": str(REPO), "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    named = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=base, timeout=60)
    assert named.stdout.split() == ["mcp-sections-calculator", "ParentBased"], named.stderr[-1500:]
    chosen = {**base, "OTEL_SERVICE_NAME": "my-gateway", "OTEL_TRACES_SAMPLER": "traceidratio"}
    chosen["OTEL_TRACES_SAMPLER_ARG"] = "0.25"
    named = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=chosen, timeout=60)
    assert named.stdout.split() == ["my-gateway", "TraceIdRatioBased"], named.stderr[-1500:]
    assert json.dumps(passed)  # plain strings only
