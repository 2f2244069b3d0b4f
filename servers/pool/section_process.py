"""A section's local process seen from the gateway: the stdio transport to it, how it ended, what it last said.

The restart policy (`launchers.py`) must tell a section that fails by itself (it exits with an error, crashes on a
signal of its own such as SIGSEGV or SIGABRT, or cannot be spawned) from one that was killed from outside (SIGKILL:
someone's `kill -9`, the OOM killer), and say why a section failed. The SDK's `stdio_client` keeps its process to
itself, so the gateway runs its sections' processes with this transport: the same exchange (newline-delimited
JSON-RPC on stdin and stdout, the process alone in a new session) and the same shutdown (stdin closed, a grace
period, then the whole process group SIGTERMed, then SIGKILLed, every wait bounded and shielded), and it records
the exit status. The process's stderr goes on to the gateway's own stderr as before, and its last bytes are kept.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import mcp_types
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

STDERR_TAIL_BYTES = 4096  # what is kept of a process's stderr for the reason of its failure
EXIT_GRACE_SECONDS = 2.0  # after stdin closes, before the process group gets SIGTERM (as the SDK's client)
KILL_GRACE_SECONDS = 2.0  # after SIGTERM, before SIGKILL
FLUSH_SECONDS = 0.5  # for messages already accepted to reach stdin at shutdown
POLL_SECONDS = 0.01

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


class SectionProcess:
    """One spawn of a section: its exit status once it ended, and the tail of its stderr (passed on to the
    gateway's stderr as it comes). Made before the spawn: `stderr` is the child's end of the pipe."""

    def __init__(self) -> None:
        read, write = os.pipe()
        self.stderr = os.fdopen(write, "wb", buffering=0)
        self.returncode: int | None = None
        self._kept: deque[bytes] = deque()
        self._size = 0
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._pump, args=(read,), name="section-stderr", daemon=True)
        self._reader.start()

    def spawned(self) -> None:
        """The child holds its own copy of the pipe now (or was never spawned): close ours."""
        with contextlib.suppress(OSError):
            self.stderr.close()

    @property
    def killed(self) -> bool:
        """Whether it was killed from outside (SIGKILL), not ended by anything of its own."""
        return self.returncode == -signal.SIGKILL

    def ending(self) -> str:
        """How it ended, in words ("" while it runs or before it was spawned)."""
        code = self.returncode
        if code is None:
            return ""
        if code < 0:
            try:
                return f"it was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"it was killed by signal {-code}"
        return f"it exited with status {code}"

    def said(self, limit: int = 600) -> str:
        """The last lines it wrote on stderr (at most `limit` characters), or ""."""
        with self._lock:
            data = b"".join(self._kept)
        lines = [line.strip() for line in data.decode("utf-8", errors="replace").splitlines() if line.strip()]
        return " | ".join(lines)[-limit:]

    def reason(self, what: str) -> str:
        """`what` happened, how the process ended and what it last said."""
        parts = [what, self.ending()]
        said = self.said()
        if said:
            parts.append(f"its stderr ended with: {said}")
        return "; ".join(part for part in parts if part)

    async def read_all(self, seconds: float = 1.0) -> None:
        """Wait (at most `seconds`) until everything it wrote on stderr is read."""
        with anyio.move_on_after(seconds):
            while self._reader.is_alive():
                await anyio.sleep(POLL_SECONDS)

    def _pump(self, fd: int) -> None:
        try:
            while chunk := os.read(fd, 65536):
                with contextlib.suppress(OSError):
                    os.write(2, chunk)
                with self._lock:
                    self._kept.append(chunk)
                    self._size += len(chunk)
                    while self._size - len(self._kept[0]) >= STDERR_TAIL_BYTES:
                        self._size -= len(self._kept.popleft())
        except OSError:
            pass
        finally:
            os.close(fd)


@asynccontextmanager
async def section_stdio(parameters: StdioServerParameters, spawn: SectionProcess) -> AsyncIterator[Streams]:
    """The stdio transport to a new process of `parameters` (see the module docstring); `spawn` records its end."""
    try:
        process = await anyio.open_process(
            [parameters.command, *parameters.args],
            env={**get_default_environment(), **(parameters.env or {})},
            cwd=parameters.cwd,
            stderr=spawn.stderr,
            start_new_session=True,
        )
    finally:
        spawn.spawned()
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    written = anyio.Event()

    async def from_stdout() -> None:
        assert process.stdout is not None
        buffer = b""
        try:
            async with read_writer:
                async for chunk in process.stdout:
                    lines = (buffer + chunk).split(b"\n")
                    buffer = lines.pop()
                    for line in lines:
                        await read_writer.send(_message(line, parameters))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass  # the session is gone, or the process: the session sees the read stream end
        finally:
            await _drain(process)

    async def to_stdin() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    line = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(line.encode(parameters.encoding, parameters.encoding_error_handler))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the process no longer reads: no request may wait for an answer
        finally:
            written.set()

    async with anyio.create_task_group() as pipes:
        pipes.start_soon(from_stdout)
        pipes.start_soon(to_stdin)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(FLUSH_SECONDS):
                    await written.wait()
                await _stop(process)
                spawn.returncode = process.returncode
                for stream in (read_stream, write_stream, read_writer, write_reader):
                    await stream.aclose()
            pipes.cancel_scope.cancel()


def _message(line: bytes, parameters: StdioServerParameters) -> SessionMessage | Exception:
    try:
        text = line.decode(parameters.encoding, parameters.encoding_error_handler)
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except ValueError as exc:  # the session reports a line that is not JSON-RPC
        return exc


async def _drain(process: Process) -> None:
    """Read and drop what the process still writes, so that it is never stuck on a full pipe at shutdown."""
    assert process.stdout is not None
    with anyio.CancelScope(shield=True), contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError):
        while True:
            await process.stdout.receive()


async def _stop(process: Process) -> None:
    """Close stdin, give the process its grace period, then end its whole group (SIGTERM, then SIGKILL)."""
    assert process.stdin is not None and process.stdout is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, EXIT_GRACE_SECONDS):
        await terminate_posix_process_tree(process, KILL_GRACE_SECONDS)
        await _exited(process, KILL_GRACE_SECONDS)
    with anyio.move_on_after(KILL_GRACE_SECONDS), contextlib.suppress(OSError, anyio.BrokenResourceError):
        await process.aclose()  # its pipes too (a descendant may still hold them: the reader ends all the same)


async def _exited(process: Process, seconds: float) -> bool:
    """Whether the process ended within `seconds`, by its return code (`wait()` would also wait for its pipes,
    which a descendant may hold)."""
    with anyio.move_on_after(seconds):
        while process.returncode is None:
            await anyio.sleep(POLL_SECONDS)
    return process.returncode is not None
