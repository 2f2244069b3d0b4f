"""Long-running processes: started, read while they run, written to, stopped (start_process and its tools).

The programs are checked and confined exactly like run_command's (the service wraps them in the same sandbox with
the same fixed environment); this module keeps them running:

- spawned from one long-lived thread (bubblewrap's `--die-with-parent` is tied to the thread that started it),
  in a new session, stdin a pipe, stdout and stderr one pipe (interleaved as the program wrote them);
- their output goes into a ring of the last `output_bytes` bytes, addressed by absolute byte offsets, with the
  count of bytes that fell out of it; each process remembers where its reader stopped ("new output");
- a window of it is masked as part of the stream, not alone: read with CONTEXT bytes of what the ring keeps on each
  side (and on, until CONTEXT letters and digits: padding between two halves does not cut a secret in two), more
  than any secret the masker recognises spans, a secret that crosses either end is masked in the part the window
  shows (`secrets.mask_ends`). So no two windows (`offset`, `max_bytes`) each show one end of a secret that is
  masked when read whole. What a read cannot do is mask what the program has not written yet: the first part of a
  value, shown before its end is written, is masked only if it would be alone (12 letters and digits of a known
  value, or a shape a detector knows);
- bounded: at most `max_running` at once, each for at most its lifetime (then killed, state "expired");
  the last `max_running` finished ones are kept for their output and exit code;
- stopping sends a signal to the program inside the sandbox (never to bubblewrap's own processes), waits, then
  kills the whole sandbox (its process group; bubblewrap's PID namespace takes every process in it along);
- all of them end with the server: killed on close, and bubblewrap's `--die-with-parent` kills them when the
  server dies any other way (SIGKILL included). With the sandbox off (Linux), a keeper does the same
  (`keeper.py`): every descendant of the program ends with it, when it is stopped, and with the server.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from mcp_sections.servers.shell_ops.keeper import descendants
from mcp_sections.servers.shell_ops.processes import is_keeper, keep, kept, kill_group, needs_keeper
from mcp_sections.shared.confinement.secrets.masking import mask_ends
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, limit_exceeded, not_found

State = Literal["running", "exited", "stopped", "expired"]
READ_CHUNK = 65536
QUIET_SECONDS = 0.15  # output that stops for this long is taken to be complete (a prompt, a burst of lines)
WRITE_TIMEOUT = 5.0
CONTEXT = 16 * 1024  # bytes, and letters and digits, read on each side of a window to mask it as part of the stream
_NOT_ALNUM = bytes(byte for byte in range(256) if not (chr(byte).isascii() and chr(byte).isalnum()))


@dataclass(frozen=True)
class Window:
    """A piece of a process's output: bytes from `offset` to `next_offset`; `skipped` bytes before `offset` were
    asked for but had already fallen out of the ring; `more`: output after `next_offset` is already there."""

    data: bytes
    offset: int
    next_offset: int
    skipped: int
    more: bool
    before: bytes = b""  # output kept before and after the window, read to mask it as part of the stream
    after: bytes = b""

    def text(self) -> str:
        """The window as text, where a secret crosses either end masked as in the whole stream (what lies inside is
        masked with the result, as every result of shell_ops is)."""
        before, text, after = (part.decode("utf-8", errors="replace") for part in (self.before, self.data, self.after))
        return mask_ends(before + text + after, len(before), len(before) + len(text))


class OutputRing:
    """The last `limit` bytes of a stream, addressed by absolute offsets (0 = the first byte ever written)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._data = bytearray()
        self._start = 0  # absolute offset of _data[0]: everything before it was dropped
        self._closed = False
        self.changed = threading.Condition()

    @property
    def total(self) -> int:
        return self._start + len(self._data)

    @property
    def dropped(self) -> int:
        return self._start

    @property
    def closed(self) -> bool:
        return self._closed

    def feed(self, chunk: bytes) -> None:
        with self.changed:
            self._data += chunk
            if len(self._data) > self._limit:
                excess = len(self._data) - self._limit
                del self._data[:excess]
                self._start += excess
            self.changed.notify_all()

    def close(self) -> None:
        with self.changed:
            self._closed = True
            self.changed.notify_all()

    def window(self, offset: int, max_bytes: int, *, context: bool = True) -> Window:
        """At most `max_bytes` from `offset` (clamped to what is kept): cut after the last line break when more
        follows, and never inside a UTF-8 character that is still being written; with `context`, the output kept
        around it too (see CONTEXT)."""
        with self.changed:
            start = min(max(offset, self._start), self.total)
            skipped = start - offset if offset < self._start else 0
            piece = bytes(self._data[start - self._start : start - self._start + max_bytes])
            more = start + len(piece) < self.total
            if more and b"\n" in piece[:-1]:
                piece = piece[: piece.rindex(b"\n") + 1]
            elif not self._closed or more:
                piece = piece[: len(piece) - _partial_character(piece)]
            end = start + len(piece)
            window = Window(piece, start, end, skipped, end < self.total)
            if not context:
                return window
            first, last = _context(self._data, start - self._start, end - self._start)
            before, after = bytes(self._data[first : start - self._start]), bytes(self._data[end - self._start : last])
            return replace(window, before=before, after=after)


def _context(data: bytearray, start: int, end: int) -> tuple[int, int]:
    """How far around `data[start:end]` to read: CONTEXT bytes on each side, and on (doubling) until CONTEXT letters
    and digits, within what is kept."""
    first = max(0, start - CONTEXT)
    while first > 0 and len(data[first:start].translate(None, _NOT_ALNUM)) < CONTEXT:
        first = max(0, first - (start - first))
    last = min(len(data), end + CONTEXT)
    while last < len(data) and len(data[end:last].translate(None, _NOT_ALNUM)) < CONTEXT:
        last = min(len(data), last + (last - end))
    return first, last


def _partial_character(data: bytes) -> int:
    """How many bytes at the end of `data` begin a UTF-8 character that is not complete yet."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:  # a continuation byte: look further back for the lead byte
            continue
        needed = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4 if byte & 0xF8 == 0xF0 else 1
        return back if needed > back else 0
    return 0


@dataclass
class BackgroundProcess:
    """One long-running program and what is known of it."""

    id: str
    command: list[str]
    cwd: str
    popen: subprocess.Popen[bytes]
    ring: OutputRing
    home: Path
    lifetime: float
    sandboxed: bool
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    started: float = field(default_factory=time.monotonic)
    cursor: int = 0
    state: State = "running"
    exit_code: int | None = None
    ended: float | None = None
    ports: tuple[int, ...] = ()
    on_end: Callable[[], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    call: tuple[object, ...] = ()  # what the start was asked (`ProcessTable.claim`)

    @property
    def running(self) -> bool:
        return self.state == "running"

    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def wait_for_output(self, after: int, seconds: float, *, settle: bool, until: str | None = None) -> bool:
        """Wait up to `seconds` until output past `after` arrives (then, with `settle`, until it pauses for
        QUIET_SECONDS), `until` appears in the output past `after`, or the process ends; whether `until` was seen."""
        deadline = time.monotonic() + seconds
        ring = self.ring
        wanted = until.encode() if until is not None else None
        with ring.changed:
            while True:
                if wanted is not None:
                    window = ring.window(after, ring.total, context=False)
                    if (found := window.data.find(wanted)) >= 0:
                        self._finish_line(window.offset + found + len(wanted))  # the rest of the line it is on
                        return True
                ended = ring.closed and not self.running
                arrived = ring.total > after and until is None
                remaining = deadline - time.monotonic()
                if ended or remaining <= 0 or (arrived and not settle):
                    return False
                if arrived:
                    seen = ring.total
                    ring.changed.wait(min(QUIET_SECONDS, remaining))
                    if ring.total == seen:
                        return False
                else:
                    ring.changed.wait(min(remaining, 0.5))

    def _finish_line(self, position: int) -> None:
        """Wait (at most QUIET_SECONDS after the last output) until the line at `position` has its line break."""
        ring = self.ring
        with ring.changed:
            while b"\n" not in ring.window(position, ring.total, context=False).data and not ring.closed:
                seen = ring.total
                ring.changed.wait(QUIET_SECONDS)
                if ring.total == seen:
                    return

    def wait_end(self, seconds: float) -> None:
        """Wait up to `seconds` until the process has ended and everything it wrote is in."""
        deadline = time.monotonic() + seconds
        with self.ring.changed:
            while not self.ring.closed and (remaining := deadline - time.monotonic()) > 0:
                self.ring.changed.wait(min(remaining, 0.5))


class ProcessTable:
    """The long-running processes of one server: start, find, stop, close."""

    def __init__(self, *, max_running: int, output_bytes: int, max_lifetime: float) -> None:
        self.max_running = max_running
        self.output_bytes = output_bytes
        self.max_lifetime = max_lifetime
        self._processes: dict[str, BackgroundProcess] = {}
        self._lock = threading.Lock()
        self._starting = threading.Lock()
        self._calls_starting: set[tuple[object, ...]] = set()  # calls between `claim` and the end of their start
        self._call_started = threading.Condition(self._lock)
        self._ids = itertools.count(1)
        self._closed = False
        # One long-lived thread spawns every process: a parent-death signal follows the thread that forked.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="shell-ops-spawner")

    def lifetime_for(self, requested: float | None) -> float:
        if requested is None:
            return self.max_lifetime
        if requested > self.max_lifetime:
            raise limit_exceeded(
                f"lifetime_seconds={requested:g} is above the server's maximum of {self.max_lifetime:g} "
                "(`max_process_lifetime_seconds` in [sections.shell_ops]); use a smaller value."
            )
        return requested

    def reserve(self) -> None:
        """MAX_LIMIT_EXCEEDED when `max_running` processes already run."""
        running = [p.id for p in self.all() if p.running]
        if len(running) >= self.max_running:
            raise limit_exceeded(
                f"{len(running)} processes are running, the server's limit (`max_processes` in [sections.shell_ops]): "
                f"{', '.join(running)}. Stop one with stop_process first (list_processes shows them)."
            )

    def start(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        home: Path,
        command: list[str],
        shown_cwd: str,
        lifetime: float,
        sandboxed: bool,
        pass_fds: Sequence[int] = (),
        ports: Sequence[int] = (),
        on_end: Callable[[], None] | None = None,
        call: tuple[object, ...] = (),
    ) -> BackgroundProcess:
        """Spawn `argv` (already wrapped in the sandbox) and keep it running; `home` is removed when it ends. `call`:
        what was asked (the checked command, directory, variables and ports), for `claim`."""
        with self._starting:  # one start at a time: the limit holds for calls made at once too
            with self._lock:
                if self._closed:
                    raise ToolFailure(ErrorCode.EXECUTION_FAILED, "the server is shutting down; no process can start.")
            self.reserve()
            process = BackgroundProcess(
                id=f"p{next(self._ids)}",
                command=command,
                cwd=shown_cwd,
                popen=self._popen(argv, cwd, env, pass_fds, sandboxed),
                ring=OutputRing(self.output_bytes),
                home=home,
                lifetime=lifetime,
                sandboxed=sandboxed,
                ports=tuple(ports),
                on_end=on_end,
                call=call,
            )
            with self._lock:
                self._processes[process.id] = process
                self._forget_finished()
        reader = threading.Thread(target=_pump, args=(process,), name=f"shell-ops-{process.id}-out", daemon=True)
        reader.start()
        threading.Thread(
            target=self._watch, args=(process, reader), name=f"shell-ops-{process.id}-wait", daemon=True
        ).start()
        return process

    def _popen(
        self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], pass_fds: Sequence[int], sandboxed: bool
    ) -> subprocess.Popen[bytes]:
        spawn = _spawner(argv, cwd, env, pass_fds, die_with_server=not sandboxed)
        try:
            return self._spawner.submit(spawn).result()
        except OSError as exc:
            raise ToolFailure(
                ErrorCode.EXECUTION_FAILED,
                f"{os.path.basename(argv[0])} could not be started: {exc.strerror or exc}; check that it is installed.",
            ) from None

    def get(self, process_id: str) -> BackgroundProcess:
        with self._lock:
            process = self._processes.get(process_id)
            known = list(self._processes)
        if process is None:
            raise not_found(
                f"no process {process_id[:40]!r}; known: {', '.join(known) or '(none)'} (see list_processes). "
                "Processes end with the server, and only the most recent finished ones are kept."
            )
        return process

    @contextlib.contextmanager
    def claim(self, call: tuple[object, ...]) -> Iterator[BackgroundProcess | None]:
        """The running process started by the very same call (the oldest), or None: then the caller starts it inside
        this block, and the same call made meanwhile waits for the block to end before looking again, so that two
        identical calls made at once start one process."""
        with self._call_started:
            self._call_started.wait_for(lambda: call not in self._calls_starting)
            twin = next((p for p in self._processes.values() if p.running and p.call == call), None)
            if twin is None:
                self._calls_starting.add(call)
        if twin is not None:
            yield twin
            return
        try:
            yield None
        finally:
            with self._call_started:
                self._calls_starting.discard(call)
                self._call_started.notify_all()

    def all(self) -> list[BackgroundProcess]:
        with self._lock:
            return list(self._processes.values())

    def stop(self, process: BackgroundProcess, signum: int, grace: float) -> None:
        """Send `signum` to the program (SIGKILL: the whole sandbox at once), wait up to `grace` seconds, then kill
        the whole sandbox."""
        with process.lock:
            if not process.running:
                return
            process.state = "stopped"
        if signum != signal.SIGKILL:
            signal_program(process.popen.pid, signum, sandboxed=process.sandboxed)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.popen.wait(timeout=grace)
        kill_group(process.popen.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.popen.wait(timeout=5)

    def close(self) -> None:
        """Kill every process (the server is ending)."""
        with self._lock:
            self._closed = True
            processes = list(self._processes.values())
        for process in processes:
            if process.running:
                with process.lock:
                    process.state = "stopped"
                kill_group(process.popen.pid)
        for process in processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.popen.wait(timeout=5)
        self._spawner.shutdown(wait=False)

    def _watch(self, process: BackgroundProcess, reader: threading.Thread) -> None:
        """Wait for the end (killing at the end of the lifetime), then tidy up: stragglers, output, home, relay."""
        try:
            process.popen.wait(timeout=process.lifetime)
        except subprocess.TimeoutExpired:
            with process.lock:
                if process.running:
                    process.state = "expired"
            kill_group(process.popen.pid)
            process.popen.wait()
        kill_group(process.popen.pid)  # whatever it left behind in its group
        reader.join(timeout=2)
        with process.lock:
            process.exit_code = process.popen.returncode
            process.ended = time.monotonic()
            if process.state == "running":
                process.state = "exited"
        if process.popen.stdin is not None:
            with contextlib.suppress(OSError):
                process.popen.stdin.close()
        if process.on_end is not None:
            with contextlib.suppress(Exception):
                process.on_end()
        shutil.rmtree(process.home, ignore_errors=True)
        process.ring.close()

    def _forget_finished(self) -> None:
        """Keep the output of at most `max_running` finished processes (the oldest go first)."""
        finished = [p for p in self._processes.values() if not p.running]
        for process in finished[: max(0, len(finished) - self.max_running)]:
            del self._processes[process.id]


def write_input(process: BackgroundProcess, data: bytes, *, close: bool) -> None:
    """Write `data` to the program's stdin (EXECUTION_FAILED when it no longer reads it), then close it if asked."""
    stream = process.popen.stdin
    if stream is None or stream.closed:
        raise ToolFailure(
            ErrorCode.EXECUTION_FAILED,
            f"the input of {process.id} is closed (close_input was sent, or the process ended); start it again.",
        )
    fd = stream.fileno()
    os.set_blocking(fd, False)
    deadline = time.monotonic() + WRITE_TIMEOUT
    view = memoryview(data)
    try:
        while view:
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ToolFailure(
                        ErrorCode.TIMEOUT,
                        f"{process.id} did not read its input for {WRITE_TIMEOUT:g}s (its input buffer is full); read "
                        "its output, or stop it.",
                    ) from None
                time.sleep(0.02)
                continue
            view = view[written:]
        if close:
            stream.close()
    except (ValueError, OSError):  # a broken pipe, or closed meanwhile
        raise ToolFailure(
            ErrorCode.EXECUTION_FAILED, f"{process.id} no longer reads its input (it closed it or ended)."
        ) from None


def signal_program(pid: int, signum: int, *, sandboxed: bool) -> None:
    """Send `signum` to the program started as `pid`: inside bubblewrap, to every process of the sandbox but
    bubblewrap's own (which would die of it and take the sandbox along); under a keeper, to every process below it
    (the keeper ends the program when told to); otherwise to its process group."""
    if not sandboxed and not is_keeper(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signum)
        return
    for child, name in descendants(pid):
        if not (sandboxed and name == "bwrap"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(child, signum)


def _pump(process: BackgroundProcess) -> None:
    stream = process.popen.stdout
    assert stream is not None
    fd = stream.fileno()
    try:
        while chunk := os.read(fd, READ_CHUNK):
            process.ring.feed(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            stream.close()


def _spawner(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], pass_fds: Sequence[int], *, die_with_server: bool
) -> Callable[[], subprocess.Popen[bytes]]:
    """How to start `argv` (from the spawner thread); `die_with_server`: it is not sandboxed, so on Linux a keeper
    runs it (`processes.kept`): all its processes end with it and with the server, as bubblewrap's do."""
    keeping = die_with_server and needs_keeper(argv)

    def spawn() -> subprocess.Popen[bytes]:
        popen = subprocess.Popen(
            kept(argv) if keeping else list(argv),
            cwd=str(cwd),
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            pass_fds=tuple(pass_fds),
        )
        if keeping:
            keep(popen)
        return popen

    return spawn
