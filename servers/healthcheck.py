"""The containers' HEALTHCHECK: does the server answer `/health` on the port its command line names?

`python -m mcp_sections.servers.healthcheck` reads the command line of PID 1 (the container's `mcp-sections ...`).
Served over Streamable HTTP, every server answers `GET /health` with 200 `{"status": "ok"}` without the bearer token
(`shared/serving/http_pages.py`); anything else (no answer, another status) is unhealthy. Over stdio there is nothing to
probe and the check passes. Standard library only: it runs every 30 s and must stay cheap.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

DEFAULT_PORT = 8000


def _option(argv: list[str], name: str) -> str | None:
    for index, arg in enumerate(argv):
        if arg == name and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def probe_url(argv: list[str]) -> str | None:
    """The URL to probe for a server started with `argv`, or None when it does not serve HTTP."""
    if _option(argv, "--transport") != "http":
        return None
    port = _option(argv, "--port") or str(DEFAULT_PORT)
    return f"http://127.0.0.1:{int(port)}/health"


def check(url: str, timeout: float = 4.0) -> bool:
    request = urllib.request.Request(url, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return bool(response.status == 200 and json.loads(response.read(256)).get("status") == "ok")
    except (OSError, ValueError):  # no answer, an HTTP error status, or not our answer
        return False


def main(cmdline: Path = Path("/proc/1/cmdline")) -> int:
    try:
        argv = cmdline.read_bytes().decode("utf-8", "replace").split("\0")
    except OSError:
        return 0  # no /proc (not Linux): nothing to check
    url = probe_url(argv)
    if url is None:
        return 0
    return 0 if check(url) else 1


if __name__ == "__main__":
    sys.exit(main())
