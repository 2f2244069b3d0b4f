"""A scripted media provider on 127.0.0.1: an OpenAI-compatible images API and chat (vision) endpoint, and a
TRELLIS-style 3D job API (submit, poll, download, cancel). It records every request and can be told to fail,
to stall a job, to hold image generations until released, or to answer with a URL instead of inline data."""

from __future__ import annotations

import base64
import io
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.http_stand_in import ScriptedHandler, serving


def png_bytes(width: int = 64, height: int = 48, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


def glb_bytes() -> bytes:
    import trimesh

    mesh = trimesh.util.concatenate(
        [
            trimesh.creation.box(extents=[1, 0.4, 0.6]),
            trimesh.creation.icosphere(radius=0.3).apply_translation([0.6, 0.3, 0]),
        ]
    )
    return mesh.export(file_type="glb")


@dataclass
class MediaStandIn:
    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)  # statuses answered before succeeding
    answer_with_url: bool = False
    image_url: str | None = None  # answered instead of the stand-in's own file URL
    job_polls_before_done: int = 2
    job_outcome: str = "succeeded"  # or "failed", or "stall" (never finishes)
    result_bytes: bytes | None = None  # what the GLB download returns (default: a real GLB)
    cancelled: list[str] = field(default_factory=list)
    held: threading.Event | None = None  # when set here, image generations wait until it is set (a slow provider)
    _polls: dict[str, int] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def paths(self) -> list[str]:
        return [f"{r['method']} {r['path']}" for r in self.requests]

    def paid(self) -> int:
        """The paid requests received: image generations and 3D jobs submitted."""
        return sum(path in ("POST /v1/images/generations", "POST /v1/jobs") for path in self.paths())


@contextmanager
def media_stand_in() -> Iterator[MediaStandIn]:
    stand_in = MediaStandIn()
    image = png_bytes()

    class Handler(ScriptedHandler):
        def _record(self) -> dict[str, Any] | None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            stand_in.requests.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "body": body,
                    "authorization": self.headers["Authorization"],
                }
            )
            return body

        def do_POST(self) -> None:
            body = self._record() or {}
            if stand_in.failures:
                self.answer_json(stand_in.failures.pop(0), {"error": {"message": "scripted failure"}})
                return
            if self.path == "/v1/images/generations":
                if stand_in.held is not None:
                    stand_in.held.wait(30)
                own = f"http://127.0.0.1:{stand_in.port}/files/image.png"
                item = (
                    {"url": stand_in.image_url or own}
                    if stand_in.answer_with_url or stand_in.image_url
                    else {"b64_json": base64.b64encode(image).decode()}
                )
                self.answer_json(200, {"created": 1, "data": [item for _ in range(body.get("n", 1))]})
            elif self.path == "/v1/chat/completions":
                self.answer_json(200, {"choices": [{"message": {"role": "assistant", "content": "A red rectangle."}}]})
            elif self.path == "/v1/jobs":
                job = f"job-{len(stand_in._polls) + 1}"
                stand_in._polls[job] = 0
                self.answer_json(200, {"id": job, "status": "queued"})
            else:
                self.answer_json(404, {"error": "no such endpoint"})

        def do_GET(self) -> None:
            self._record()
            if self.path == "/files/image.png":
                self.answer_bytes(200, image, "image/png")
            elif self.path.startswith("/v1/jobs/") and self.path.endswith("/result.glb"):
                self.answer_bytes(200, stand_in.result_bytes or glb_bytes(), "model/gltf-binary")
            elif self.path.startswith("/v1/jobs/"):
                job = self.path.rsplit("/", 1)[1]
                polls = stand_in._polls.get(job, 0) + 1
                stand_in._polls[job] = polls
                if stand_in.job_outcome == "stall" or polls <= stand_in.job_polls_before_done:
                    self.answer_json(200, {"id": job, "status": "running", "progress": min(polls / 4, 0.9)})
                elif stand_in.job_outcome == "failed":
                    self.answer_json(200, {"id": job, "status": "failed", "error": "the scripted model gave up"})
                else:
                    self.answer_json(
                        200, {"id": job, "status": "succeeded", "progress": 1.0, "result_url": f"jobs/{job}/result.glb"}
                    )
            else:
                self.answer_json(404, {"error": "no such file"})

        def do_DELETE(self) -> None:
            self._record()
            stand_in.cancelled.append(self.path.rsplit("/", 1)[1])
            self.answer_json(200, {"status": "canceled"})

    with serving(Handler) as stand_in.port:
        yield stand_in
