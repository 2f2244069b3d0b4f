"""`mcp-sections serve rag_ops` over stdio driven with raw JSON-RPC lines, its standard error kept in a file: for
the tests where the process is the subject (stopped mid-work, started again on the same data)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.stdio import cli_command, server_environment


class RagServer:
    """The server on `root`, with its data and model cache in `data` and `cache`, its stderr in `log`."""

    def __init__(self, root: Path, data: Path, cache: Path, log: Path) -> None:
        self.log = log
        env = {"MCP_SECTIONS_DATA_DIR": str(data), "MCP_SECTIONS_CACHE_DIR": str(cache)}
        with log.open("wb") as errors:
            self.process = subprocess.Popen(
                [*cli_command(), "serve", "rag_ops", "--root", str(root)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                env=server_environment(env),
            )
        self.next_id = 1

    def request(self, method: str, params: dict) -> dict:
        """Send a request and read until its answer."""
        message_id = self.start(method, params)
        return self.read(lambda message: message.get("id") == message_id)

    def start(self, method: str, params: dict) -> int:
        """Send a request without waiting for its answer: its id."""
        message_id, self.next_id = self.next_id, self.next_id + 1
        self.send({"jsonrpc": "2.0", "id": message_id, "method": method, "params": params})
        return message_id

    def read(self, until: Callable[[dict], bool]) -> dict:
        """The first message from the server that satisfies `until` (those before it are dropped)."""
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            assert line, f"the server ended: {self.log.read_text(errors='replace')[-2000:]}"
            message = json.loads(line)
            if until(message):
                return message

    def send(self, message: dict) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def start_session(self) -> None:
        """initialize and tools/list: the listing starts the section's warm-up (the brain, the model)."""
        client = {"name": "rag-ops-test", "version": "0"}
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.request("tools/list", {})
