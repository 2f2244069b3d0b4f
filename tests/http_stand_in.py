"""The one way tests serve a scripted HTTP service on 127.0.0.1 (the stand-ins for model APIs, embedding endpoints,
media providers and package indexes, the web sites and canaries of web_ops' tests): a threaded server in the test's
process; each stand-in writes only its routes."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedHandler(BaseHTTPRequestHandler):
    """A quiet handler with the answers a stand-in gives: JSON, or bytes of a content type."""

    def log_message(self, *args: object) -> None:
        pass

    def read_json(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def answer_json(self, status: int, payload: Any) -> None:
        self.answer_bytes(status, json.dumps(payload).encode(), "application/json")

    def answer_bytes(self, status: int, data: bytes, content_type: str = "text/html", **headers: str) -> None:
        """`data` with its type and length, and `headers` (`Location=...`; `_` in a name is sent as `-`)."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        # Headers and body in one write: two small writes meet the client's delayed ACK (a 40 ms stall on a kept-alive
        # HTTP/1.1 connection).
        self._headers_buffer.append(b"\r\n" + data)  # type: ignore[attr-defined]
        with contextlib.suppress(OSError):  # the client gave up (a slow page)
            self.flush_headers()


class Serving:
    """`handler` served on 127.0.0.1 from a thread while the context is open (the port is known before)."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Serving:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """`handler` served on 127.0.0.1 from a thread until the block ends; its port."""
    with Serving(handler) as served:
        yield served.port
