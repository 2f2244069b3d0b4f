"""The processes a test starts and looks for: a section server driven with raw JSON-RPC lines over stdio (so it can be
killed -9 mid-burst), a server listening on a local port for the length of a block, and processes found by their
command line in /proc."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.stdio import NO_WARM_UP, cli_command, server_environment


class RawServer:
    """`mcp-sections serve <args>` driven with raw JSON-RPC lines; responses are collected by id.

    Use it as a context manager: on exit the process is killed if it still runs and the reader is joined.
    """

    def __init__(self, args: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [*cli_command(), "serve", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=server_environment(env),
        )
        self.responses: dict[int, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.reader.join(timeout=5)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:  # a line cut short by the kill
                continue
            if "id" in message:
                with self.lock:
                    self.responses[message["id"]] = message

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def wait_for(self, predicate: Callable[[dict[int, dict[str, Any]]], bool], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if predicate(self.responses):
                    return
            time.sleep(0.005)
        raise AssertionError(f"server did not answer in time ({len(self.responses)} responses)")

    def initialize(self) -> None:
        """The handshake, as request id 0."""
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "kill", "version": "0"}}
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        self.wait_for(lambda responses: 0 in responses)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call_tool(self, message_id: int, name: str, arguments: dict[str, Any]) -> None:
        """Send a tools/call without waiting for its answer."""
        params = {"name": name, "arguments": arguments}
        self.send({"jsonrpc": "2.0", "id": message_id, "method": "tools/call", "params": params})

    def kill_9(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def tool_results(self) -> dict[int, dict[str, Any]]:
        """The `result` of every answered tools/call (every response but the handshake's), by request id."""
        with self.lock:
            return {message_id: message["result"] for message_id, message in self.responses.items() if message_id != 0}


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on (for a server started by a test)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_listening(port: int, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    """Until `process` accepts connections on 127.0.0.1:`port`; its stderr in the failure if it exits first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(process.stderr.read().decode(errors="replace") if process.stderr else "exited")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listened on port {port} within {seconds:g} s")


def stop(process: subprocess.Popen[bytes], seconds: float = 15) -> None:
    """End `process` as an operator would: SIGTERM, then SIGKILL if it is still there after `seconds`."""
    process.terminate()
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


@contextmanager
def listening(
    command: Sequence[str], port: int, seconds: float = 60, **options: Any
) -> Iterator[subprocess.Popen[bytes]]:
    """`command` running while the block runs, from the moment it accepts connections on 127.0.0.1:`port`; then
    stopped. `options` go to `subprocess.Popen`: by default its stdout is dropped and its stderr kept for the failure
    if it exits first."""
    process = subprocess.Popen(list(command), **{"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, **options})
    try:
        wait_until_listening(port, process, seconds)
        yield process
    finally:
        stop(process)


@contextmanager
def serving_over_http(
    args: Sequence[str], env: dict[str, str] | None = None, seconds: float = 60, **options: Any
) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """`mcp-sections <args> --transport http --port <a free port>` while the block runs (this process's environment
    without warm-up, and `env`): its port and process."""
    port = free_port()
    command = [*cli_command(), *args, "--transport", "http", "--port", str(port)]
    environment = {**os.environ, **NO_WARM_UP, **(env or {})}
    with listening(command, port, seconds, env=environment, **options) as process:
        yield port, process


def process_info(pid: int) -> tuple[list[str], str, int] | None:
    """A process's arguments, state letter and parent pid, read from /proc (None once it is gone)."""
    try:
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
        state, parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:2]
    except OSError:
        return None
    return arguments, state, int(parent)


def pids_where(match: Callable[[list[str]], bool], zombies: bool = False) -> list[int]:
    """Host pids of the processes (this one aside) whose arguments satisfy `match`, read from /proc: a sandboxed
    program's pid is its sandbox's own, so it is found by what it runs. Ended but unreaped ones only with `zombies`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        info = process_info(int(entry.name))
        if info is not None and match(info[0]) and (zombies or info[1] not in ("Z", "X")):
            found.append(int(entry.name))
    return found


def running(argv: list[str], suffix: bool = False) -> list[int]:
    """Live processes whose command line is exactly `argv` (or ends with it: `suffix`)."""
    return pids_where(lambda arguments: (arguments[-len(argv) :] if suffix else arguments) == argv)


_MARKS = itertools.count(1)


def unique_seconds(whole: int) -> str:
    """A duration in seconds, `whole` and a little more, that no other program on this machine is given: its decimals
    are this process's pid (fixed width, so no mark holds another) and a count. A test finds the program it started
    by it (`running_with`), even beside another test run on the same machine."""
    return f"{whole}.{os.getpid():07d}{next(_MARKS):03d}"


def running_with(text: str, zombies: bool = False) -> list[int]:
    """Live processes (unreaped ones too with `zombies`) whose arguments, joined by spaces, hold `text`."""
    return pids_where(lambda arguments: text in " ".join(arguments), zombies)


def process_report(text: str) -> str:
    """For a failure message: each process `running_with(text)` (zombies too), its state and its parents' commands."""
    lines = []
    for pid in running_with(text, zombies=True):
        chain, current = [], pid
        while current > 1 and len(chain) < 6 and (info := process_info(current)) is not None:
            arguments, state, parent = info
            chain.append(f"{current} [{state}] {' '.join(arguments)[:120]}")
            current = parent
        lines.append(" <- ".join(chain))
    return "; ".join(lines) or "none"


def kill_running_with(text: str, seconds: float = 5.0) -> list[int]:
    """SIGKILL every live process `running_with(text)`; their pids, once gone (or after `seconds`)."""
    pids = running_with(text)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # killing a sandbox's first process ends the program below it
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + seconds
    while running_with(text) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pids


def gone(argv: list[str], seconds: float = 10, suffix: bool = False) -> bool:
    """Whether every process running `argv` (see `running`) has ended within `seconds`."""
    deadline = time.monotonic() + seconds
    while running(argv, suffix):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True
