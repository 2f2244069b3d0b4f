"""A section's idle watch pings it outside the trace of the call that started it.

The first call of a section starts its process; the connection, and the idle watch that pings the section every
`idle_watch_seconds` once the call is over, must not inherit that call's trace context: a tester saw `MCP send ping` /
`ping` spans added to a user's trace every 2 s long after the call had ended. The real gateway (stdio) and its
section export to a local OTLP receiver.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gateway.helpers import FORWARD, forward, gateway_client, write_config
from tests.otlp_receiver import OtlpReceiver, Span
from tests.waiting import eventually

pytest.importorskip("opentelemetry.sdk", reason="pip install 'mcp-sections[otel]'")
pytest.importorskip("opentelemetry.proto", reason="pip install 'mcp-sections[otel]'")

pytestmark = pytest.mark.anyio

PINGS = 10  # pings seen (the gateway's client spans and the section's server spans) before the trace is looked at


def _ping(span: Span) -> bool:
    return span.name in ("MCP send ping", "ping")


async def test_idle_pings_of_a_section_are_not_spans_of_the_call_that_started_it(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.toml", "[gateway]\nidle_watch_seconds = 0.2\n")
    with OtlpReceiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        args = ["--config", str(config), "--data-dir", str(tmp_path / "data"), "--root", str(tmp_path)]
        async with gateway_client(*args, env=env, cwd=tmp_path) as client:
            addition = forward("calculator", "calculator_binary", a=1, b=2, operation="add")
            added = await client.call_tool(FORWARD, addition)
            assert not added.is_error, added.content
            await eventually(lambda: sum(_ping(span) for span in list(receiver.spans)) >= PINGS)
            spans = list(receiver.spans)

    call = next(
        span
        for span in spans
        if span.service == "mcp-sections-gateway" and span.attributes.get("gen_ai.tool.name") == FORWARD
    )
    in_its_trace = [span.name for span in spans if span.trace_id == call.trace_id]
    # at most the call's own check of a section idle for a while (`IDLE_CHECK_SECONDS`), never the watch's pings
    assert in_its_trace.count("MCP send ping") <= 1, in_its_trace
    assert any(span.service == "mcp-sections-calculator" for span in spans if span.trace_id == call.trace_id)
    watched = [span for span in spans if span.name == "MCP send ping" and span.trace_id != call.trace_id]
    assert len(watched) >= 3 and all(not span.parent_id for span in watched), "a ping of the watch is a trace's root"
