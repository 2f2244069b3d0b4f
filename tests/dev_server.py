"""A dev server started through shell_ops (tests of start_process's published ports, and of web_ops reaching them)."""

from __future__ import annotations

from typing import Any

from mcp import Client

from tests.stdio import call


async def start_dev_server(shell: Client, port: int, cwd: str = "srv") -> dict[str, Any]:
    """`python3 -m http.server` on 127.0.0.1:`port`, started with start_process in `cwd` with the port published;
    start_process's result, once the server says it is serving."""
    started = await call(
        shell,
        "start_process",
        command=["python3", "-m", "http.server", "--bind", "127.0.0.1", str(port)],
        cwd=cwd,
        ports=[port],
        wait_for="Serving HTTP",
        wait_seconds=15,
    )
    assert started["ready"] is True, started
    return started
