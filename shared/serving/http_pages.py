"""The HTTP paths a Streamable HTTP server answers beside `/mcp`: `/health` for probes, and pages a host adds.

`/health` answers every server's probe without the bearer token, and says nothing but that the server is up:
`{"status": "ok"}` (no version, no path, no section name; compose's health checks and `servers/healthcheck.py`
use it). A host may add pages under a path prefix (the gateway's `/status`, `servers/gateway/status.py`): they
guard themselves (their own sign-in, the same token). Every other request goes to the MCP app behind the bearer
token, exactly as before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from mcp_sections.shared.serving.http_auth import ASGIApp, Receive, Scope, Send

HEALTH_PATH = "/health"
_HEALTH_BODY = json.dumps({"status": "ok"}).encode()


class WithPages:
    """ASGI: `/health`, then the pages by prefix, then the MCP app (which holds the bearer-token check)."""

    def __init__(self, app: ASGIApp, pages: Mapping[str, ASGIApp] | None = None) -> None:
        self._app = app
        self._pages = dict(pages or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope.get("path", "")
            if path == HEALTH_PATH:
                await health(scope, receive, send)
                return
            for prefix, page in self._pages.items():
                if path == prefix or path.startswith(prefix + "/"):
                    await page(scope, receive, send)
                    return
        await self._app(scope, receive, send)


async def health(scope: Scope, receive: Receive, send: Send) -> None:
    """`{"status": "ok"}` to GET and HEAD; 405 to anything else."""
    method = scope.get("method", "GET")
    allowed = method in ("GET", "HEAD")
    body = _HEALTH_BODY if allowed else b""
    headers = [
        (b"content-type", b"application/json"),
        (b"cache-control", b"no-store"),
        (b"x-content-type-options", b"nosniff"),
        (b"content-length", str(len(body)).encode()),
    ]
    if not allowed:
        headers.append((b"allow", b"GET, HEAD"))
    await send({"type": "http.response.start", "status": 200 if allowed else 405, "headers": headers})
    await send({"type": "http.response.body", "body": body if method != "HEAD" else b""})
