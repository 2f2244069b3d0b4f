"""The project's stdio transport: line splitting, oversized lines, files instead of pipes, a closed client."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from mcp_sections.shared.serving.stdio import MAX_LINE_BYTES, LineSplitter
from tests.stdio import NO_WARM_UP, cli_command

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ADD = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "calculator_binary", "arguments": {"operation": "add", "a": 2, "b": 3}},
}
ENV = {**os.environ, **NO_WARM_UP}


def _lines(*messages: dict) -> bytes:
    return b"".join(json.dumps(message).encode() + b"\n" for message in messages)


def test_lines_split_across_chunks_come_out_whole() -> None:
    splitter = LineSplitter(b'{"a"')
    assert splitter.feed(b": 1}\n{") == [b'{"a": 1}']
    assert splitter.feed(b'"b": 2}') == []
    assert splitter.feed(b"\n\n") == [b'{"b": 2}', b""]


def test_an_oversized_line_is_reported_once_and_skipped_to_its_end() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"x" * (MAX_LINE_BYTES + 1)) == [None]
    assert splitter.feed(b"y" * 1000) == []  # still the same oversized line
    assert splitter.feed(b"z\n{}\n") == [b"{}"]
    assert splitter.feed(b"w" * (MAX_LINE_BYTES + 1) + b"\n{}\n") == [None, b"{}"]  # whole, yet too long


def test_an_oversized_message_gets_an_error_and_the_server_goes_on() -> None:
    huge = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "' + b"x" * MAX_LINE_BYTES + b'"}}\n'
    process = subprocess.Popen(
        [*cli_command(), "serve", "calculator"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=ENV
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(_lines(INITIALIZE, INITIALIZED) + huge + _lines(ADD))
    process.stdin.flush()
    replies = []
    while not replies or replies[-1].get("id") != 2:
        replies.append(json.loads(process.stdout.readline()))
    process.stdin.close()
    assert process.wait(timeout=30) == 0
    errors = [reply for reply in replies if "error" in reply]
    assert [error["error"]["code"] for error in errors] == [-32600]
    assert "larger than" in errors[0]["error"]["message"]
    assert replies[-1]["result"]["structuredContent"]["result"] == 5


def test_regular_files_for_stdin_and_stdout_are_served(tmp_path: Path) -> None:
    """`serve < requests.jsonl > replies.jsonl` works: files cannot be watched on the loop, so a thread reads."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(_lines(INITIALIZE, INITIALIZED, ADD))
    replies_file = tmp_path / "replies.jsonl"
    with requests.open("rb") as stdin, replies_file.open("wb") as stdout:
        subprocess.run([*cli_command(), "serve", "calculator"], stdin=stdin, stdout=stdout, env=ENV, timeout=60)
    replies = {reply["id"]: reply for reply in map(json.loads, replies_file.read_text().splitlines())}
    assert replies["init"]["result"]["serverInfo"]["name"] == "mcp-sections-calculator"
    assert replies[2]["result"]["structuredContent"]["result"] == 5


def test_a_client_that_stops_reading_does_not_crash_the_server() -> None:
    process = subprocess.Popen(
        [*cli_command(), "serve", "calculator"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(_lines(INITIALIZE, INITIALIZED))
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == "init"
    process.stdout.close()  # the reply to the next call has nowhere to go
    process.stdin.write(_lines(ADD))
    process.stdin.close()
    assert process.wait(timeout=30) == 0
    assert b"Traceback" not in process.stderr.read()  # type: ignore[union-attr]


def test_a_cancelled_request_does_not_hold_the_server_open_after_stdin_closes(tmp_path: Path) -> None:
    """Closing stdin waits for running requests to answer, but never for one the client cancelled."""
    env = {**ENV, "MCP_SECTIONS_SHELL_OPS_ALLOWED_PROGRAMS": "sleep"}
    sleep = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "run_command", "arguments": {"command": ["sleep", "60"]}},
    }
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
    process = subprocess.Popen(
        [*cli_command(), "serve", "shell_ops", "--root", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(_lines(INITIALIZE, INITIALIZED, sleep))
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == "init"
    time.sleep(1)  # the command is running
    started = time.monotonic()
    process.stdin.write(_lines(cancel))
    process.stdin.close()
    assert process.wait(timeout=20) == 0
    assert time.monotonic() - started < 10
    assert b'"id":5' not in process.stdout.read()


def test_a_terminal_for_stdout_is_served_and_left_blocking() -> None:
    """A terminal is written through a thread: the event loop would leave it non-blocking for the shell."""
    import pty

    controller, terminal = pty.openpty()
    process = subprocess.Popen([*cli_command(), "serve", "calculator"], stdin=subprocess.PIPE, stdout=terminal, env=ENV)
    probe = os.dup(terminal)  # shares the terminal's open file description, and so its O_NONBLOCK flag
    os.close(terminal)
    assert process.stdin is not None
    process.stdin.write(_lines(INITIALIZE, INITIALIZED, ADD))
    process.stdin.flush()
    received = b""
    while b'"id":2' not in received:
        chunk = os.read(controller, 65536)
        assert chunk, "the terminal closed before the reply"
        received += chunk
    process.stdin.close()
    assert process.wait(timeout=30) == 0
    assert os.get_blocking(probe)
    os.close(probe)
    os.close(controller)
    replies = [json.loads(line) for line in received.replace(b"\r\n", b"\n").splitlines() if line.strip()]
    assert replies[-1]["result"]["structuredContent"]["result"] == 5
