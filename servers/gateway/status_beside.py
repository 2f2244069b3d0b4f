"""The status page beside a gateway served over stdio: where a desktop client's person answers approval questions.

A desktop client that starts the gateway over stdio (Claude Desktop) often cannot ask its user anything (no
elicitation), yet that is exactly where approval matters. With approval on (`--status-page auto`, the default) or
`--status-page on`, the gateway also serves its status page (`status.py`) on loopback only (127.0.0.1, a free port
unless `--status-port`), behind a token made anew at each start. The person finds both in a file of the data directory,
`status-pages/gateway-<pid>.txt` (mode 0600, in a 0700 directory; removed when the gateway stops), whose path is also
printed on stderr (the client's server log) and given with every question's progress, and signs in with the token.
Host and Origin are checked as on HTTP (DNS-rebinding protection). If the port cannot be bound, the gateway serves on
without the page (questions are then refused as before) and says why on stderr.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn

from mcp_sections.shared.serving.http_auth import BearerToken
from mcp_sections.shared.serving.http_pages import WithPages
from mcp_sections.shared.serving.server import transport_security

from .core import Gateway
from .status import PREFIX, StatusPage

logger = logging.getLogger("mcp_sections.gateway.status")

NOTES = "status-pages"
LOOPBACK = "127.0.0.1"


class _BesideServer(uvicorn.Server):
    """uvicorn inside the stdio server's loop: the stdio server owns the signals and the lifetime."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _not_found(scope: Any, receive: Any, send: Any) -> None:
    body = b"not found: this address serves the gateway's status page only (/status)"
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 404, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def note_path(data_dir: Path, pid: int | None = None) -> Path:
    """Where a stdio gateway writes its status page's address and token."""
    return data_dir / NOTES / f"gateway-{pid or os.getpid()}.txt"


def _write_note(path: Path, url: str, token: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as note:
        note.write(f"url: {url}\ntoken: {token}\n")


async def serve_status_beside(gateway: Gateway, port: int = 0) -> None:
    """Serve the status page on loopback until cancelled (the stdio server ended); see the module docstring."""
    try:
        listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((LOOPBACK, port))
        listening.listen(64)
        listening.setblocking(False)
    except OSError as exc:
        print(f"mcp-sections: no status page (cannot listen on {LOOPBACK}:{port}: {exc.strerror})", file=sys.stderr)
        return
    bound = listening.getsockname()[1]
    token = secrets.token_urlsafe(24)
    url = f"http://{LOOPBACK}:{bound}{PREFIX}"
    note = note_path(gateway.settings.data_dir)
    _write_note(note, url, token)
    page = StatusPage(gateway, BearerToken(token), transport_security(LOOPBACK, bound, [], []))
    app = WithPages(_not_found, {PREFIX: page})
    gateway.questions.open_at(url, sign_in=f"sign in with the token in {note}")
    print(f"mcp-sections: status page on {url} (sign in with the token in {note})", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", server_header=False)
    try:
        await _BesideServer(config).serve(sockets=[listening])
    finally:
        gateway.questions.url = None
        with contextlib.suppress(OSError):
            note.unlink()
        listening.close()
