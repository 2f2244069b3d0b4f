"""Spawning: a fixed environment, a new process group, a deadline, capped output. No shell, no MCP.

- The child gets only `child_environment(...)`: nothing is inherited from the server (no tokens,
  no proxies, no LD_PRELOAD), PATH is the fixed search path and HOME/TMPDIR a private directory made for that
  call alone (`homes.private_home`).
- The child leads a new session (`start_new_session=True`); at the deadline, on cancellation, and
  also after a normal exit (to reap background stragglers), the whole program ends (`kill_group`): inside
  bubblewrap its PID namespace goes with the sandbox's first process, killed with bubblewrap even while the
  sandbox is still being set up; without the sandbox (Linux) the program runs under a keeper
  (`keeper.py`, `kept`), a child subreaper that dies with the server and ends every descendant, those that
  started their own session included, when the program ends or is ended.
- stdin is /dev/null; stdout and stderr are kept up to `max_output_bytes` each, head and tail
  (the middle is dropped and counted).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_sections.servers.shell_ops import keeper
from mcp_sections.servers.shell_ops.homes import home_environment
from mcp_sections.shared.ground.errors import SuiteError

READ_CHUNK = 65536
PIPE_GRACE_SECONDS = 2.0
STOP_SECONDS = 1.0  # the longest kill_group waits for a program it stopped to be stopped (it takes milliseconds)
KEEPER = keeper.__file__

ProgressCallback = Callable[[float], Awaitable[None]]


class SpawnError(SuiteError):
    """The program could not be started at all (the message is safe to show)."""


def child_environment(*, search_path: str, home: Path) -> dict[str, str]:
    """The complete environment of every child: fixed values only, nothing inherited."""
    env = {
        "PATH": search_path,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CI": "1",
        "PAGER": "cat",
        "EDITOR": "true",
        "VISUAL": "true",
        # git: no system/global config (ShellOps.environment gives the commit identity as the global one), no prompts,
        # no pager, no editor, no optional index writes.
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "GIT_EDITOR": "true",
        "GIT_SEQUENCE_EDITOR": "true",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_PROTOCOL_FROM_USER": "0",
        # npm: no lifecycle hooks, a pinned script shell, no user/global npmrc, no preloads, quiet.
        "npm_config_ignore_scripts": "true",
        "npm_config_script_shell": "/bin/sh",
        "npm_config_node_options": "",
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
        # python: no user site-packages from the server's account.
        "PYTHONNOUSERSITE": "1",
        **home_environment(home),
    }
    return env


class CappedBuffer:
    """Keeps the first and last `limit / 2` bytes of a stream and counts what lies between."""

    def __init__(self, limit: int) -> None:
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            if len(self._tail) > self._tail_limit:
                del self._tail[: len(self._tail) - self._tail_limit]

    @property
    def dropped(self) -> int:
        return self.total - len(self._head) - len(self._tail)

    def text(self) -> str:
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        if self.dropped:
            return f"{head}\n[... {self.dropped} bytes dropped ...]\n{tail}"
        return head + tail

    def raw(self) -> bytes:
        """Head and tail joined (only meaningful when nothing was dropped)."""
        return bytes(self._head + self._tail)


@dataclass(frozen=True)
class ProcessResult:
    exit_code: int | None
    stdout: CappedBuffer
    stderr: CappedBuffer
    duration_ms: int
    timed_out: bool
    flooded: bool = False  # stopped for writing more than `max_total_bytes`


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    max_output_bytes: int,
    progress: ProgressCallback | None = None,
    progress_interval: float = 1.0,
    max_total_bytes: int | None = None,
    pass_fds: Sequence[int] = (),
) -> ProcessResult:
    """Run `argv` (argv[0] absolute) without a shell; kill its process group at the deadline, or as soon as it
    has written more than `max_total_bytes` in all (`cat` of a 4 GiB sparse file stops in milliseconds instead of
    streaming gigabytes through the capped buffers)."""
    started = time.monotonic()
    process = await _spawn(argv, cwd=cwd, env=env, pass_fds=pass_fds)
    output = _Output(process, max_output_bytes, max_total_bytes)
    readers = [
        asyncio.ensure_future(output.pump(process.stdout, output.stdout)),
        asyncio.ensure_future(output.pump(process.stderr, output.stderr)),
    ]
    waiter = asyncio.ensure_future(process.wait())
    timed_out = False
    try:
        timed_out = await _waited(waiter, started + timeout, started, progress, progress_interval)
    finally:
        await _reaped(process, waiter, readers)
    exit_code = None if timed_out else process.returncode
    return ProcessResult(
        exit_code=exit_code,
        stdout=output.stdout,
        stderr=output.stderr,
        duration_ms=int((time.monotonic() - started) * 1000),
        timed_out=timed_out,
        flooded=output.flooded,
    )


async def _spawn(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], pass_fds: Sequence[int]
) -> asyncio.subprocess.Process:
    """The program started in a session of its own (under a keeper where it needs one), its output piped."""
    keeping = needs_keeper(argv)
    try:
        process = await asyncio.create_subprocess_exec(
            *(kept(argv) if keeping else argv),
            cwd=str(cwd),
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
            pass_fds=tuple(pass_fds),
        )
    except OSError as exc:
        raise SpawnError(f"{os.path.basename(argv[0])} could not be started: {exc.strerror or exc}") from None
    if keeping:
        keep(process)
    return process


class _Output:
    """A program's two capped outputs, read as they come; the program is killed once it has written more than
    `max_total_bytes` in all (`flooded`)."""

    def __init__(self, process: asyncio.subprocess.Process, max_output_bytes: int, max_total_bytes: int | None):
        self.process = process
        self.stdout, self.stderr = CappedBuffer(max_output_bytes), CappedBuffer(max_output_bytes)
        self.max_total_bytes = max_total_bytes
        self.flooded = False

    async def pump(self, stream: asyncio.StreamReader | None, buffer: CappedBuffer) -> None:
        if stream is None:
            return
        while chunk := await stream.read(READ_CHUNK):
            buffer.feed(chunk)
            total = self.stdout.total + self.stderr.total
            if self.max_total_bytes is not None and not self.flooded and total > self.max_total_bytes:
                self.flooded = True
                kill_group(self.process.pid)


async def _waited(
    waiter: asyncio.Future[int],
    deadline: float,
    started: float,
    progress: ProgressCallback | None,
    progress_interval: float,
) -> bool:
    """Wait for the program to end, reporting progress every `progress_interval`; True when the deadline came first."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return True
        done, _ = await asyncio.wait({waiter}, timeout=min(progress_interval, remaining))
        if waiter in done:
            return False
        if progress is not None:
            await progress(time.monotonic() - started)


async def _reaped(
    process: asyncio.subprocess.Process, waiter: asyncio.Future[int], readers: Sequence[asyncio.Future[None]]
) -> None:
    """Kill the program's group, wait for it briefly, and stop reading pipes a grandchild may still hold."""
    kill_group(process.pid)
    if not waiter.done():
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(waiter), timeout=5)
    _, pending = await asyncio.wait(readers, timeout=PIPE_GRACE_SECONDS)
    for task in pending:  # a grandchild in its own session still holds the pipe
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
    if not waiter.done():
        waiter.cancel()


def kill_group(pid: int) -> None:
    """End the program started as `pid` (in a new session): when `pid` is a running keeper, SIGTERM to the keeper,
    which SIGKILLs every process of the program and then itself; else SIGKILL to its process group, and on Linux
    first to every process below it.

    Below it, because bubblewrap runs the sandbox in a session of its own, whose first process arms
    `--die-with-parent` only at the end of the sandbox's setup: bubblewrap killed before then (a call cancelled or
    timed out as its program starts, for longer on a loaded machine) died alone, and the sandbox ran the program on,
    orphaned. So the program is stopped first (SIGSTOP: it starts nothing more, and what it started stays its
    child), what runs below it is killed (the sandbox's first process takes its whole PID namespace along), then its
    group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if is_keeper(pid):
            os.killpg(pid, signal.SIGTERM)
            return
        if sys.platform.startswith("linux"):
            os.killpg(pid, signal.SIGSTOP)
            _until_stopped(pid)
            for child, _name in keeper.descendants(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(child, signal.SIGKILL)
        os.killpg(pid, signal.SIGKILL)


def _until_stopped(pid: int) -> None:
    """Wait (at most `STOP_SECONDS`) until the child `pid` is stopped or has ended (not reaping it)."""
    deadline = time.monotonic() + STOP_SECONDS
    while time.monotonic() < deadline:
        try:
            if os.waitid(os.P_PID, pid, os.WSTOPPED | os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return
        except ChildProcessError:  # reaped already, or not a child of this process: nothing to wait for
            return
        time.sleep(0.001)


# -- the keeper of a program run without the sandbox (keeper.py) -------------------------------------------------

_keepers: dict[int, Any] = {}  # pid -> its Popen or asyncio Process, while it may run


def needs_keeper(argv: Sequence[str]) -> bool:
    """Whether `argv` runs a program unsandboxed on Linux (bubblewrap's PID namespace ends the others' processes)."""
    return sys.platform.startswith("linux") and os.path.basename(argv[0]) != "bwrap"


def kept(argv: Sequence[str]) -> list[str]:
    """The command line that runs `argv` under a keeper; OSError as its exec would give when argv[0] cannot run."""
    if not os.path.isfile(argv[0]):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])
    if not os.access(argv[0], os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), argv[0])
    return [sys.executable, "-I", "-S", KEEPER, str(os.getpid()), *argv]


def keep(process: Any) -> None:
    """Remember a process started with `kept` (`kill_group` and `background.signal_program` treat it as a keeper)."""
    _keepers[process.pid] = process


def is_keeper(pid: int) -> bool:
    """Whether `pid` is a keeper not yet reaped (so its pid cannot have been given to another process)."""
    process = _keepers.get(pid)
    if process is not None and process.returncode is None:
        return True
    _keepers.pop(pid, None)
    return False
