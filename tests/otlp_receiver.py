"""A local OTLP/HTTP receiver on 127.0.0.1: decodes the protobuf exports (opentelemetry-proto) of spans and metrics.

What the suite's processes export when `OTEL_EXPORTER_OTLP_ENDPOINT` names it: `spans` (each with its trace and
parent ids, name, kind, attributes, status and the service that sent it) and `metric_names` with their data points.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.http_stand_in import ScriptedHandler, Serving


@dataclass
class Span:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    status: int  # 0 unset, 1 ok, 2 error
    status_message: str
    duration_ms: float


@dataclass
class Point:
    service: str
    metric: str
    attributes: dict[str, Any]
    value: float  # a sum's value, or a histogram's count


@dataclass
class OtlpReceiver:
    spans: list[Span] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)  # every request body as received (decompressed)
    requests: int = 0
    decode: bool = True  # False: only count the requests (a benchmark's receiver costs the machine little)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._served = Serving(self._handler())

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._served.port}"

    def __enter__(self) -> OtlpReceiver:
        self._served.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._served.stop()

    def wait_for(self, predicate: Callable[[OtlpReceiver], bool], seconds: float = 30.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self._lock:
                if predicate(self):
                    return
            time.sleep(0.05)
        raise AssertionError(f"the receiver did not get what was expected within {seconds:g} s: {self.spans!r}")

    def receive(self, path: str, body: bytes) -> bytes:
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        with self._lock:
            self.requests += 1
            if not self.decode:
                return b""
            self.bodies.append(body)
            if path == "/v1/traces":
                request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
                self.spans += _spans(request)
                return trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            if path == "/v1/metrics":
                metrics = metrics_service_pb2.ExportMetricsServiceRequest.FromString(body)
                self.points += _points(metrics)
                return metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()
        raise LookupError(path)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(ScriptedHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                try:
                    payload = receiver.receive(self.path, body)
                except LookupError:
                    self.send_error(404)
                    return
                self.answer_bytes(200, payload, "application/x-protobuf")

        return Handler


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


def _spans(request: Any) -> list[Span]:
    spans = []
    for resource_spans in request.resource_spans:
        service = str(_attributes(resource_spans.resource.attributes).get("service.name"))
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    Span(
                        service=service,
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(),
                        kind=span.kind,
                        attributes=_attributes(span.attributes),
                        status=span.status.code,
                        status_message=span.status.message,
                        duration_ms=(span.end_time_unix_nano - span.start_time_unix_nano) / 1e6,
                    )
                )
    return spans


def _points(request: Any) -> list[Point]:
    points = []
    for resource_metrics in request.resource_metrics:
        service = str(_attributes(resource_metrics.resource.attributes).get("service.name"))
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                for point in getattr(metric, kind).data_points:
                    value = point.count if kind == "histogram" else (point.as_int or point.as_double)
                    points.append(Point(service, metric.name, _attributes(point.attributes), float(value)))
    return points
