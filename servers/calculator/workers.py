"""A persistent child process that runs functions with a wall-clock timeout and an optional memory cap.

Use it for work that may hang or blow up (symbolic maths, parsers of untrusted input): the parent
never runs that code itself, so a runaway call is stopped by killing the child, and the next call gets
a fresh one. Nothing here knows about a particular section.

    worker = WorkerProcess("calculator", timeout_seconds=10, preload=("sympy",))
    worker.start()                                       # optional: spawn and preload in advance
    worker.run("package.module:function", 1, 2, key=3)  # -> the function's return value

- Targets are named `"package.module:function"` (imported in the child, so the parent never imports
  the heavy module) or given as a picklable module-level function. Arguments and return values are
  pickled; keep them to plain data.
- One call runs at a time per worker; concurrent callers queue on a lock. The timeout runs from the
  moment the request is sent: queueing and the child's start-up (`start_timeout_seconds`) are apart.
- Exceptions raised by the target are re-raised in the parent: a `ToolFailure` keeps its code,
  message and details; another picklable exception is re-raised as is; anything else becomes
  `WorkerTaskError` with the type name and message.
- Timeout: the child is killed (SIGKILL), a new one is spawned at once, and `WorkerTimeout` (a
  `TimeoutError`) is raised. A child that dies (signal, `os._exit`, out of memory) is replaced and
  `WorkerCrashed` is raised. `MemoryError` inside the child (e.g. hitting the `RLIMIT_AS` cap) restarts
  it and raises `WorkerMemoryError`.
- The child's stdout is redirected to stderr, so stray prints cannot corrupt the protocol (or an MCP
  stdio stream); the child exits when its stdin closes or its parent disappears.

POSIX only (pipes + `select`, `RLIMIT_AS`); the pickles only travel between this process and its own child.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from mcp_sections.shared.ground.errors import ErrorCode, SuiteError, ToolFailure

logger = logging.getLogger("mcp_sections.workers")

_HEADER = struct.Struct(">Q")
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
_CHILD_ENTRY = "from mcp_sections.servers.calculator.workers import child_main; child_main()"


class WorkerError(SuiteError, RuntimeError):
    """Base of the worker's own failures (not exceptions raised by the target)."""


class WorkerTimeout(WorkerError, TimeoutError):
    """The call did not finish in time; the child was killed and replaced."""


class WorkerCrashed(WorkerError):
    """The child died during the call (signal, exit, out of memory); it was replaced.

    `status` says what is known of how it ended: "killed by SIGKILL", "exit status 3"...
    """

    def __init__(self, message: str, status: str = "unknown") -> None:
        super().__init__(message)
        self.status = status


class WorkerMemoryError(WorkerError, MemoryError):
    """The target raised MemoryError in the child (usually the memory cap); the child was replaced."""


class WorkerStartError(WorkerError):
    """The child could not start or could not import its preload modules."""


class WorkerTaskError(WorkerError):
    """The target raised an exception that cannot travel back as is; `type_name` names it."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


class _Deadline(Exception):
    pass


class _Closed(Exception):
    pass


class _BadReply(Exception):
    pass


class WorkerProcess:
    """One persistent child interpreter; see the module docstring."""

    def __init__(
        self,
        name: str,
        *,
        timeout_seconds: float = 10.0,
        start_timeout_seconds: float = 60.0,
        memory_limit_bytes: int | None = None,
        preload: Sequence[str] = (),
    ) -> None:
        self.name = name
        self.timeout_seconds = timeout_seconds
        self.start_timeout_seconds = start_timeout_seconds
        self.memory_limit_bytes = memory_limit_bytes
        self.preload = tuple(preload)
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._selector: selectors.BaseSelector | None = None
        self._ready = False
        self._closed = False
        self._next_id = 0
        self.restarts = 0
        self.calls = 0

    # -- public API ---------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def start(self, wait: bool = False) -> None:
        """Spawn the child if none is running; with `wait`, also wait until its preloads are imported."""
        with self._lock:
            self._ensure_spawned()
            if wait:
                self._ensure_ready()

    def run(self, target: str | Callable[..., Any], /, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        """Run `target(*args, **kwargs)` in the child and return its result (see the module docstring)."""
        if not isinstance(target, str):
            target = f"{target.__module__}:{target.__qualname__}"
        limit = self.timeout_seconds if timeout is None else timeout
        if not self._lock.acquire(timeout=self.start_timeout_seconds + limit):
            raise WorkerTimeout(f"worker {self.name} stayed busy with other calls for too long")
        try:
            self._ensure_spawned()
            self._ensure_ready()
            self._next_id += 1
            request_id = self._next_id
            self.calls += 1
            try:
                self._send((request_id, target, args, kwargs))
                deadline = time.monotonic() + limit
                while True:
                    reply_id, kind, payload = self._receive(deadline)
                    if reply_id == request_id:
                        break
            except _Deadline:
                self._replace("timeout")
                raise WorkerTimeout(f"worker {self.name}: call to {target} exceeded {limit:g} s") from None
            except _Closed:
                status = self._describe_exit()
                self._replace("crash")
                raise WorkerCrashed(f"worker {self.name} died during {target} ({status})", status) from None
            except _BadReply as exc:
                raise WorkerTaskError(
                    "UnreadableReply", f"the reply of {target} could not be unpickled: {exc}"
                ) from None
            return self._unwrap(kind, payload)
        finally:
            self._lock.release()

    def restart(self) -> None:
        """Kill the child (if any) and spawn a fresh one."""
        with self._lock:
            self._replace("restart")

    def close(self) -> None:
        """Stop the child for good: close its stdin and give it a moment, then kill it.

        A call still running is not waited for: its child is killed and the call raises WorkerCrashed.
        """
        self._closed = True
        if self._lock.acquire(timeout=0.2):
            try:
                self._stop(graceful=True)
            finally:
                self._lock.release()
            return
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()

    # -- internals (called with the lock held) --------------------------------------------------------

    def _ensure_spawned(self) -> None:
        if self._closed:
            raise WorkerError(f"worker {self.name} is closed")
        if self._process is not None and self._process.poll() is None:
            return
        if self._process is not None:
            self._stop(graceful=False)
        config = json.dumps({"memory_limit_bytes": self.memory_limit_bytes, "preload": list(self.preload)})
        try:
            process = subprocess.Popen(
                [sys.executable, "-P", "-c", _CHILD_ENTRY, config],  # -P: no working directory on sys.path
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=None,
                close_fds=True,
            )
        except OSError as exc:
            raise WorkerStartError(f"worker {self.name} could not start: {exc}") from exc
        assert process.stdout is not None
        selector = selectors.DefaultSelector()
        selector.register(process.stdout.fileno(), selectors.EVENT_READ)
        self._process, self._selector, self._ready = process, selector, False
        logger.debug("worker %s started (pid %s)", self.name, process.pid)

    def _ensure_ready(self) -> None:
        if self._ready:
            return
        try:
            _, kind, payload = self._receive(time.monotonic() + self.start_timeout_seconds)
        except (_Deadline, _Closed, _BadReply):
            status = self._describe_exit()
            self._stop(graceful=False)
            raise WorkerStartError(f"worker {self.name} did not become ready ({status})") from None
        if kind != "ready":
            self._stop(graceful=False)
            raise WorkerStartError(f"worker {self.name} could not start: {payload}")
        self._ready = True

    def _replace(self, reason: str) -> None:
        self._stop(graceful=False)
        self.restarts += 1
        logger.warning("worker %s replaced after %s", self.name, reason)
        if not self._closed:
            try:
                self._ensure_spawned()
            except WorkerStartError:
                logger.warning("worker %s could not be respawned", self.name, exc_info=True)

    def _stop(self, graceful: bool) -> None:
        process, selector = self._process, self._selector
        self._process, self._selector, self._ready = None, None, False
        if selector is not None:
            selector.close()
        if process is None:
            return
        if graceful and process.poll() is None and process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=1.0)
        if process.poll() is None:
            process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5.0)
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _describe_exit(self) -> str:
        process = self._process
        if process is None:
            return "not running"
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=1.0)
        code = process.poll()
        if code is None:
            return "still running"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit status {code}"

    def _send(self, message: Any) -> None:
        assert self._process is not None and self._process.stdin is not None
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self._process.stdin.write(_HEADER.pack(len(data)) + data)
            self._process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise _Closed from None

    def _receive(self, deadline: float) -> tuple[Any, str, Any]:
        (size,) = _HEADER.unpack(self._read_exact(_HEADER.size, deadline))
        if size > MAX_MESSAGE_BYTES:
            raise _Closed
        data = self._read_exact(size, deadline)
        try:
            return pickle.loads(data)
        except Exception as exc:  # e.g. a class the parent cannot import: the frame was consumed, stay in sync
            raise _BadReply(f"{type(exc).__name__}: {str(exc)[:500]}") from None

    def _read_exact(self, size: int, deadline: float) -> bytes:
        assert self._process is not None and self._process.stdout is not None and self._selector is not None
        fd = self._process.stdout.fileno()
        buffer = bytearray()
        while len(buffer) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._selector.select(remaining):
                raise _Deadline
            chunk = os.read(fd, min(size - len(buffer), 1 << 20))
            if not chunk:
                raise _Closed
            buffer += chunk
        return bytes(buffer)

    def _unwrap(self, kind: str, payload: Any) -> Any:
        if kind == "ok":
            return payload
        if kind == "raise":
            raise payload
        if kind == "failure":
            code, message, details = payload
            raise ToolFailure(ErrorCode(code), message, **details)
        if kind == "memory":
            self._replace("MemoryError")
            raise WorkerMemoryError(f"worker {self.name} ran out of memory: {payload}")
        type_name, message, trace = payload
        logger.debug("worker %s: %s: %s\n%s", self.name, type_name, message, trace)
        raise WorkerTaskError(type_name, message)


# -- the child side ---------------------------------------------------------------------------------


def _resolve(target: str) -> Callable[..., Any]:
    module_name, _, qualname = target.partition(":")
    value: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def _read_frame(stream: Any) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = bytearray()
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return pickle.loads(bytes(data))


def _write_frame(stream: Any, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _exception_reply(request_id: int, exc: BaseException) -> tuple[int, str, Any]:
    if isinstance(exc, ToolFailure):
        return request_id, "failure", (exc.code.value, exc.message, exc.details)
    if isinstance(exc, MemoryError):
        return request_id, "memory", str(exc)[:500]
    try:
        pickle.loads(pickle.dumps(exc))
        return request_id, "raise", exc
    except Exception:
        trace = "".join(traceback.format_exception(exc))[-4000:]
        return request_id, "error", (type(exc).__qualname__, str(exc)[:2000], trace)


def _watch_parent(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(1)
        time.sleep(1.0)


def child_main() -> None:
    """Entry point of the child: `python -c '...child_main()' <json config>`."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # stray prints go to stderr, never into the protocol
    config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    try:
        limit = config.get("memory_limit_bytes")
        if limit:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (int(limit), int(limit)))
        for module in config.get("preload", []):
            importlib.import_module(module)
    except BaseException as exc:
        _write_frame(replies, (0, "start-error", f"{type(exc).__name__}: {exc}"))
        return
    _write_frame(replies, (0, "ready", None))
    while True:
        message = _read_frame(requests)
        if message is None:
            return
        request_id, target, args, kwargs = message
        try:
            reply: tuple[int, str, Any] = (request_id, "ok", _resolve(target)(*args, **kwargs))
        except BaseException as exc:
            reply = _exception_reply(request_id, exc)
        try:
            _write_frame(replies, reply)
        except Exception as exc:  # an unpicklable return value
            _write_frame(replies, (request_id, "error", (type(exc).__qualname__, str(exc)[:2000], "")))
