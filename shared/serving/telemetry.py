"""OpenTelemetry: a span (and metrics) for every tool call, exported over OTLP only when an endpoint is configured.

Configured by the standard variables, read by the OpenTelemetry SDK itself: `OTEL_EXPORTER_OTLP_ENDPOINT` (or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `_METRICS_ENDPOINT`), `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the
default, or `grpc` with `opentelemetry-exporter-otlp-proto-grpc` installed), `OTEL_EXPORTER_OTLP_HEADERS`,
`OTEL_SERVICE_NAME` (default `mcp-sections-<server>`), `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` (and
`_ARG`), `OTEL_BSP_*`, `OTEL_TRACES_EXPORTER=none`, `OTEL_METRICS_EXPORTER=otlp` (metrics are opt-in: they cost a
call more than its span), `OTEL_METRIC_EXPORT_INTERVAL`, `OTEL_SDK_DISABLED=true`. With no endpoint set nothing is
configured and nothing is imported beyond the opentelemetry-api the `mcp` SDK imports anyway: `current()` is None
and the call paths go on after testing it.

Where spans come from:
- `start(...)`: one span per tool call, in the two places every call passes — the agent host's gate
  (`servers/pool/gate.py`, the gateway and orchestration) and a section's pipeline (`shared/serving/pipeline.py`). When
  the call is the request the SDK's middleware has a span for (`tools/call <tool>`), that span is annotated instead of
  a second one being made (a span costs ~25 us); calls of sub-agents and in-process sections get their own;
- `start_agent(...)`: one span per sub-agent (`shared/agents/runtime.py`); its tool calls are its children;
- the `mcp` SDK: a SERVER span per request (`OpenTelemetryMiddleware`, which continues the trace named by the
  request's `_meta.traceparent`) and a CLIENT span per request the gateway sends to a section, which puts the
  current trace context in that request's `_meta`. So one client request — the gateway, its sections, every
  sub-agent of a `plan_actions` tree — is one trace.

A span says which tool, which section, for which user (`enduser.id`: the subject of the caller's OAuth access
token, `shared.framework.clients`; none for a local caller or the single bearer token), at what depth, for which
agent, how it ended (`OK` or the error code) and how long it took; never an argument value or a result (not even the
audit log's digest of the arguments: the audit line of the same call has it), never an error message (messages may
quote arguments).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from mcp_sections.shared.framework.clients import current_user

logger = logging.getLogger("mcp_sections.telemetry")

ENDPOINT_VARIABLES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)
SCOPE = "mcp-sections"
EXTRA_HINT = "pip install 'mcp-sections[otel]'"


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for export: an OTLP endpoint is set and the SDK is not disabled."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def passed_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The `OTEL_*` variables a host passes to the sections it starts (not the service name: each process names
    itself `mcp-sections-<section>`)."""
    env = os.environ if environ is None else environ
    return {key: value for key, value in env.items() if key.startswith("OTEL_") and key != "OTEL_SERVICE_NAME"}


class CallSpan:
    """One tool call's span, current from `CallTelemetry.start` until `end` or `cancelled` (same task). `token` is
    None when the span is the SDK's own server span of the request, which this only annotates (the SDK ends it).
    Its attributes are set once, at the end: each one costs the SDK a few microseconds."""

    __slots__ = (
        "_caller",
        "_owner",
        "_section",
        "_server",
        "_span",
        "_started",
        "_target",
        "_token",
        "_tool",
        "_user",
    )

    def __init__(
        self, owner: CallTelemetry, span: Any, token: Any | None, server: str, tool: str, caller: tuple[int, str | None]
    ) -> None:
        self._owner = owner
        self._span = span
        self._token = token
        self._server = server
        self._section = server
        self._tool = tool
        self._target: str | None = None
        self._caller = caller
        user = current_user()
        self._user = user.subject if user is not None else None
        self._started = time.perf_counter_ns()

    def target(self, section: str, tool: str) -> None:
        """The section tool a gateway call resolved to (`call_section_tool` names it in its arguments)."""
        self._section = section
        if tool != self._tool:
            self._target = tool

    def end(self, result: Any) -> None:
        structured = getattr(result, "structured_content", None) or {}
        failed = bool(getattr(result, "is_error", False))
        self._finish(str(structured.get("error_code") or "ERROR") if failed else "OK")

    def cancelled(self) -> None:
        self._finish("CANCELLED")

    def _finish(self, outcome: str) -> None:
        owner, span = self._owner, self._span
        depth, agent_id = self._caller
        attributes: dict[str, Any] = {
            "mcp_sections.section": self._section,
            "mcp_sections.depth": depth,
            "mcp_sections.outcome": outcome,
        }
        if agent_id is not None:
            attributes["mcp_sections.agent_id"] = agent_id
        if self._user is not None:
            attributes["enduser.id"] = self._user
        if self._target is not None:
            attributes["mcp_sections.target_tool"] = self._target
        if outcome != "OK":
            attributes["error.type"] = outcome
        span.set_attributes(attributes)
        if outcome != "OK":
            span.set_status(owner.error_status, outcome)
        if self._token is not None:
            owner.detach(self._token)
            span.end()
        owner.record(self._tool, self._server, self._section, outcome, time.perf_counter_ns() - self._started)


class CallTelemetry:
    """The tracer and instruments of this process (built by `configure`)."""

    def __init__(self, tracer: Any, meter: Any | None) -> None:
        from opentelemetry import context, trace
        from opentelemetry.trace import SpanKind, StatusCode

        self._tracer = tracer
        self._context = context
        self._set_span = trace.set_span_in_context
        self._current_span = trace.get_current_span
        self._internal = SpanKind.INTERNAL
        self._server = SpanKind.SERVER
        self.error_status = StatusCode.ERROR
        self._calls = self._duration = self._errors = None
        if meter is not None:
            self._calls = meter.create_counter("mcp_sections.tool.calls", unit="{call}", description="Tool calls.")
            self._errors = meter.create_counter(
                "mcp_sections.tool.errors", unit="{call}", description="Tool calls that failed, by error code."
            )
            self._duration = meter.create_histogram(
                "mcp_sections.tool.duration", unit="ms", description="Duration of tool calls."
            )

    def start(self, server: str, tool: str, caller: tuple[int, str | None]) -> CallSpan:
        """A tool call `server` handles (a section id, or `gateway`), made current; end it with `end`/`cancelled`."""
        request = self._current_span()
        if getattr(request, "kind", None) is self._server and getattr(request, "name", None) == f"tools/call {tool}":
            # the SDK's span of this very request (OpenTelemetryMiddleware, which names the tool): annotated, so a
            # call costs one span, not two
            return CallSpan(self, request, None, server, tool, caller)
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}
        span = self._tracer.start_span(f"execute_tool {tool}", kind=self._internal, attributes=attributes)
        return CallSpan(self, span, self._context.attach(self._set_span(span)), server, tool, caller)

    def start_agent(self, agent_id: str, name: str, kind: str, depth: int, parent: str | None) -> AgentSpan:
        """A sub-agent's span, made current: every tool call it makes is its child."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.id": agent_id,
            "gen_ai.agent.name": name,
            "mcp_sections.agent_id": agent_id,
            "mcp_sections.agent.kind": kind,
            "mcp_sections.depth": depth,
        }
        if parent is not None:
            attributes["mcp_sections.agent.parent"] = parent
        span = self._tracer.start_span(f"invoke_agent {name}", kind=self._internal, attributes=attributes)
        return AgentSpan(self, span, self._context.attach(self._set_span(span)))

    def detach(self, token: Any) -> None:
        try:
            self._context.detach(token)
        except Exception:  # a context detached elsewhere must never fail a call
            logger.debug("span context already detached", exc_info=True)

    def record(self, tool: str, server: str, section: str, outcome: str, duration_ns: int) -> None:
        """One call in the metrics, when they are exported."""
        if self._calls is None or self._duration is None or self._errors is None:
            return
        labels = {"gen_ai.tool.name": tool, "mcp_sections.server": server, "mcp_sections.section": section}
        self._calls.add(1, {**labels, "mcp_sections.outcome": outcome})
        self._duration.record(duration_ns / 1e6, labels)
        if outcome != "OK":
            self._errors.add(1, {**labels, "error.type": outcome})


class AgentSpan:
    """A sub-agent's span (see `CallTelemetry.start_agent`)."""

    __slots__ = ("_owner", "_span", "_token")

    def __init__(self, owner: CallTelemetry, span: Any, token: Any) -> None:
        self._owner = owner
        self._span = span
        self._token = token

    def end(self, status: str, metrics: Mapping[str, int] | None = None) -> None:
        span = self._span
        span.set_attribute("mcp_sections.agent.status", status)
        for key, value in (metrics or {}).items():
            span.set_attribute(f"mcp_sections.agent.{key}", value)
        if status != "completed":
            span.set_attribute("error.type", status)
            span.set_status(self._owner.error_status, status)
        self._owner.detach(self._token)
        span.end()


_current: CallTelemetry | None = None
_configured = False


def current() -> CallTelemetry | None:
    """This process's telemetry, or None when nothing is exported (the call paths test this and go on)."""
    return _current


def configure(server: str, environ: Mapping[str, str] | None = None) -> CallTelemetry | None:
    """Set up export for the process serving `server` when the environment asks for it (once per process).

    Without an endpoint nothing happens. Without the `otel` extra, one warning says what to install.
    """
    global _current, _configured
    if _configured:
        return _current
    _configured = True
    env = os.environ if environ is None else environ
    if not wanted(env):
        return None
    try:
        _current = _install(server, env)
    except ModuleNotFoundError as exc:
        logger.warning(
            "an OTLP endpoint is set but %s is not installed; no traces are exported (%s)", exc.name, EXTRA_HINT
        )
    except Exception:
        logger.exception("OpenTelemetry could not be set up; no traces are exported")
    return _current


def _install(server: str, env: Mapping[str, str]) -> CallTelemetry:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from mcp_sections.shared.ground.about import package_version

    attributes: dict[str, Any] = {"service.version": package_version(), "mcp_sections.server": server}
    if not env.get("OTEL_SERVICE_NAME"):
        attributes["service.name"] = f"mcp-sections-{server}"
    resource = Resource.create(attributes)
    protocol = _protocol(env, "TRACES")
    meter = None
    if env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() != "none":
        provider = TracerProvider(resource=resource)  # the sampler comes from OTEL_TRACES_SAMPLER
        provider.add_span_processor(BatchSpanProcessor(_span_exporter(protocol)))
        trace.set_tracer_provider(provider)
    if _metrics_wanted(env):
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        reader = PeriodicExportingMetricReader(_metric_exporter(_protocol(env, "METRICS")))
        metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=[reader]))
        meter = metrics.get_meter(SCOPE, package_version())
    logger.info("OpenTelemetry: exporting over OTLP (%s) as %s", protocol, resource.attributes.get("service.name"))
    return CallTelemetry(trace.get_tracer(SCOPE, package_version()), meter)


def _metrics_wanted(env: Mapping[str, str]) -> bool:
    """Metrics are opt-in (they cost a call more than its span): `OTEL_METRICS_EXPORTER=otlp`, or a metrics
    endpoint of their own."""
    exporter = env.get("OTEL_METRICS_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return exporter == "otlp" or bool(env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "").strip())


def _protocol(env: Mapping[str, str], signal: str) -> str:
    value = env.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    protocol = value.strip().lower() or "http/protobuf"
    if protocol not in ("http/protobuf", "grpc"):
        logger.warning("OTLP protocol %r is not supported; using http/protobuf", protocol)
        return "http/protobuf"
    return protocol


def _span_exporter(protocol: str) -> Any:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # type: ignore[assignment]
    return OTLPSpanExporter()


def _metric_exporter(protocol: str) -> Any:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # type: ignore[assignment]
            OTLPMetricExporter,
        )
    return OTLPMetricExporter()
