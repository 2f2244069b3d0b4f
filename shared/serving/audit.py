"""The audit log: two JSON lines per tool call, under `<data dir>/audit/<server>.jsonl`, rotated by size.

A line says who called what and how it ended, never what was said: section, tool, the user (`user`: the subject of
the caller's OAuth access token and the name its token gives, or a digest of the single bearer token; none for a
local caller: `shared.framework.clients`), caller depth and agent id
(a gateway calling a section for one of its sub-agents says so in the request's `_meta`, `caller_meta`; a
section records what its caller claims, 0 and none for a client calling it directly), a SHA-256 digest of the
canonical arguments (no argument value is stored), the outcome code (`OK` or an error code), the duration and,
when a call fails, the first 500 characters of its error message.

A section the gateway launched records the gateway's user too, from the same `_meta` — but a user name is never
taken as claimed: only from the gateway that launched this very process. That gateway gives the process a key of its
own in its environment (`launch_environment`) and presents it beside the user (`caller_meta`); a request without
that key (any other client, over any transport, or a section nobody launched with one) names no user.

Every call leaves its intent line (`"phase": "start"`) before it runs, written at once, and its outcome line
(`"phase": "end"`, with the same `call` id) when it ends — `CANCELLED` when it was cancelled — so a call that was
cancelled, crashed the server, or never came back still left its line. Over stdio the outcome line is written just
after the reply has gone out (`written_after_replies`). `read_calls` pairs them: a call without an outcome reads as
`UNFINISHED`.
Each server process writes its own file (one writer per file: rotation needs no cross-process lock);
`mcp-sections audit` merges them in time order.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import itertools
import json
import logging
import os
import secrets
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp_sections.shared.framework.clients import LOCAL, current_user

logger = logging.getLogger("mcp_sections.audit")

MAX_BYTES = 10 * 1024 * 1024
BACKUPS = 5
META_DEPTH = "mcp-sections/depth"
META_AGENT = "mcp-sections/agent-id"
META_USER = "mcp-sections/user"
META_LAUNCHER = "mcp-sections/launcher"
LAUNCHER_ENV = "MCP_SECTIONS_LAUNCHER"  # in a section's environment: the key of the gateway that launched it
LONGEST_USER = 200  # as `shared.framework.clients.User.name`


class Caller(tuple[int, str | None]):
    """(depth, agent id) as a request's `_meta` claims them, and `user`: the user named by the gateway that launched
    this process (None: no such gateway, or no user)."""

    user: str | None

    def __new__(cls, depth: int = 0, agent_id: str | None = None, user: str | None = None) -> Caller:
        caller = super().__new__(cls, (depth, agent_id))
        caller.user = user
        return caller


@functools.cache
def launch_key() -> str:
    """This process's key, for the sections it launches (made once, never written anywhere but their environment)."""
    return secrets.token_urlsafe(32)


def launch_environment() -> dict[str, str]:
    """What a gateway adds to the environment of a section it launches: the key it presents with a user's name."""
    return {LAUNCHER_ENV: launch_key()}


def caller_meta(depth: int, agent_id: str | None, user: str | None = None) -> dict[str, Any]:
    """The `_meta` of a call a host makes for one of its agents (depth 0, no id: the client itself); `user`: the user
    of the call, for a section it launched itself (with its `launch_key`: never give it to another server)."""
    meta: dict[str, Any] = {META_DEPTH: depth}
    if agent_id is not None:
        meta[META_AGENT] = agent_id
    if user is not None:
        meta[META_USER] = user
        meta[META_LAUNCHER] = launch_key()
    return meta


def caller_of(meta: Mapping[str, Any] | None) -> Caller:
    """The caller a request's `_meta` names: (depth, agent id) as claimed, anything malformed counting as the client
    (0, None); its user only when the request presents the key of the gateway that launched this process."""
    if not meta:
        return Caller()
    depth = meta.get(META_DEPTH)
    agent = meta.get(META_AGENT)
    user = meta.get(META_USER)
    valid_depth = depth if isinstance(depth, int) and not isinstance(depth, bool) and 0 <= depth <= 100 else 0
    valid_agent = agent[:64] if isinstance(agent, str) and agent else None
    vouched = user[:LONGEST_USER] if isinstance(user, str) and user and _from_launcher(meta) else None
    return Caller(valid_depth, valid_agent, vouched)


def _from_launcher(meta: Mapping[str, Any]) -> bool:
    """Whether `meta` carries the key this process was launched with (none: nobody may name a user)."""
    expected = os.environ.get(LAUNCHER_ENV, "")
    presented = meta.get(META_LAUNCHER)
    if not expected or not isinstance(presented, str):
        return False
    return hmac.compare_digest(presented.encode("utf-8", "replace"), expected.encode("utf-8", "replace"))


# Built once: `json.dumps` with options builds a new encoder on every call, a third of an audit line's cost.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
_LINE = json.JSONEncoder(ensure_ascii=False)
REMOVAL_CHECK_SECONDS = 1.0


def argument_digest(arguments: Mapping[str, Any] | None) -> str:
    """SHA-256 of the arguments as canonical JSON: equal calls share a digest, no value is revealed."""
    canonical = _CANONICAL.encode(arguments or {})
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class AuditRecord:
    server: str
    tool: str
    outcome: str
    duration_ms: float
    arguments_digest: str
    depth: int = 0
    agent_id: str | None = None
    message: str | None = None
    phase: str = "end"
    call: str | None = None
    user: str | None = None

    def as_json(self) -> str:
        line: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "phase": self.phase,
            "call": self.call,
            "server": self.server,
            "tool": self.tool,
            **({"user": self.user} if self.user is not None else {}),
            "depth": self.depth,
            "agent_id": self.agent_id,
            "arguments_digest": self.arguments_digest,
            "outcome": self.outcome,
            "duration_ms": round(self.duration_ms, 2),
        }
        if self.message:
            line["message"] = self.message[:500]
        return _LINE.encode(line)


_CALL_IDS = itertools.count(1)


def user_named() -> str | None:
    """The user of the call being answered, as an audit line names it (None: a local caller, or no request)."""
    user = current_user()
    return user.name if user is not None and user.id != LOCAL else None


def outcome_of(result: Any) -> tuple[str, str | None]:
    """(outcome code, error message) of an MCP result: `OK`, or its `error_code` and `error`."""
    structured = getattr(result, "structured_content", None) or {}
    if not getattr(result, "is_error", False):
        return "OK", None
    return str(structured.get("error_code") or "ERROR"), str(structured.get("error") or "")


class AuditCall:
    """One call in progress: its intent line is written; `end(result)` or `cancelled()` writes its outcome."""

    def __init__(self, log: AuditLog, tool: str, digest: str, caller: tuple[int, str | None]) -> None:
        self._log = log
        self._tool = tool
        self._digest = digest
        self._caller = caller
        self._started = time.perf_counter()
        self._ended = False
        self._user = getattr(caller, "user", None) or user_named()  # named by the launching gateway, else its own
        self.id = f"{os.getpid():x}-{next(_CALL_IDS)}"
        log.write(self._record("start", "STARTED", 0.0))

    def _record(self, phase: str, outcome: str, duration_ms: float, message: str | None = None) -> AuditRecord:
        return AuditRecord(
            server=self._log.server,
            tool=self._tool,
            outcome=outcome,
            duration_ms=duration_ms,
            arguments_digest=self._digest,
            depth=self._caller[0],
            agent_id=self._caller[1],
            message=message,
            phase=phase,
            call=self.id,
            user=self._user,
        )

    def end(self, result: Any) -> None:
        """The call's outcome (inside `written_after_replies`, written once the reply has gone out)."""
        if self._ended:
            return
        self._ended = True
        duration = (time.perf_counter() - self._started) * 1000
        pending = _after_reply.get()
        if pending is not None:
            pending.append(functools.partial(self._end_now, result, duration))
            return
        self._end_now(result, duration)

    def _end_now(self, result: Any, duration_ms: float) -> None:
        outcome, message = outcome_of(result)
        self._log.write(self._record("end", outcome, duration_ms, message))

    def cancelled(self) -> None:
        """The call was cancelled (or its task died): its outcome line says so, written at once."""
        if self._ended:
            return
        self._ended = True
        self._log.write(self._record("end", "CANCELLED", (time.perf_counter() - self._started) * 1000))


class AuditLog:
    """Appends records to one file, rotating it at `max_bytes` (keeps `backups` older files)."""

    def __init__(self, directory: Path, server: str, *, max_bytes: int = MAX_BYTES, backups: int = BACKUPS) -> None:
        self.server = server
        self.path = directory / f"{server}.jsonl"
        self._max_bytes = max_bytes
        self._backups = backups
        self._lock = threading.Lock()
        self._broken = False
        self._fd: int | None = None
        self._size = 0
        self._closer: weakref.finalize[Any, AuditLog] | None = None
        self._checked_at = 0.0

    def write(self, record: AuditRecord) -> None:
        """Never raises: an unwritable audit directory is logged once and the call goes on."""
        if self._broken:
            return
        line = (record.as_json() + "\n").encode("utf-8", "replace")
        with self._lock:
            try:
                self._append(line)
            except OSError as exc:
                self._broken = True
                self._close()
                logger.warning("audit log %s is not writable (%s); calls are no longer audited", self.path, exc)

    def _append(self, line: bytes) -> None:
        """One `write` on a descriptor kept open between calls (a call paid six system calls when the file was
        opened each time); a new one after rotation, or when the file was removed behind the server's back
        (looked for at most once a second)."""
        now = time.monotonic()
        if self._fd is not None and now - self._checked_at >= REMOVAL_CHECK_SECONDS:
            self._checked_at = now
            if os.fstat(self._fd).st_nlink == 0:
                self._close()
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            self._closer = weakref.finalize(self, os.close, self._fd)
            self._size = os.fstat(self._fd).st_size
        if self._size > 0 and self._size + len(line) > self._max_bytes:
            self._close()
            self._rotate()
            self._append(line)
            return
        os.write(self._fd, line)
        self._size += len(line)

    def _close(self) -> None:
        if self._closer is not None:
            self._closer()  # closes the descriptor once
        self._fd, self._closer = None, None

    def start(
        self, tool: str, arguments: Mapping[str, Any] | None, caller: tuple[int, str | None] = (0, None)
    ) -> AuditCall:
        """The intent line of a call about to run, written at once; end it with `end(result)` or `cancelled()`."""
        return AuditCall(self, tool, argument_digest(arguments), caller)

    def _rotate(self) -> None:
        for index in range(self._backups - 1, 0, -1):
            older = self.path.with_suffix(f".jsonl.{index}")
            if older.exists():
                older.replace(self.path.with_suffix(f".jsonl.{index + 1}"))
        self.path.replace(self.path.with_suffix(".jsonl.1"))


_LOGS: dict[Path, AuditLog] = {}
_LOGS_LOCK = threading.Lock()


def audit_log(directory: Path, server: str) -> AuditLog:
    """The one `AuditLog` of a server's file in this process (every writer of a file shares it: one rotation)."""
    path = directory / f"{server}.jsonl"
    with _LOGS_LOCK:
        log = _LOGS.get(path)
        if log is None:
            log = _LOGS[path] = AuditLog(directory, server)
        return log


_after_reply: ContextVar[deque[Callable[[], None]] | None] = ContextVar("audit_after_reply", default=None)


@contextmanager
def written_after_replies() -> Iterator[Callable[[], None]]:
    """Within it, audit records wait for the transport to send the reply they belong to: it calls the flush this
    yields after each message it writes (and the rest is written on exit). As a web server writes its access log,
    the line then costs the call no latency: inside a running gateway the record and its append took ~50 us of
    a ~1.5 ms hop. Records of calls whose reply never comes (cancelled ones) go with the next message."""
    pending: deque[Callable[[], None]] = deque()
    token = _after_reply.set(pending)

    def flush() -> None:
        while pending:
            try:
                pending.popleft()()
            except Exception:  # the transport's writer must never die of a log line
                logger.exception("an audit record could not be written")

    try:
        yield flush
    finally:
        _after_reply.reset(token)
        flush()


@contextmanager
def written_at_once() -> Iterator[None]:
    """Within it, outcome lines are written when the call ends: for work that outlives its request (an MCP task,
    `shared.serving.tasks`), whose reply went out long before."""
    token = _after_reply.set(None)
    try:
        yield
    finally:
        _after_reply.reset(token)


def logged_servers(directory: Path) -> list[str]:
    """The servers that have an audit log under `directory`."""
    try:
        names = {path.name.split(".jsonl", 1)[0] for path in directory.iterdir() if ".jsonl" in path.name}
    except OSError:
        return []
    return sorted(names)


def read_lines(directory: Path, server: str | None = None) -> list[dict[str, Any]]:
    """Every line under `directory` (rotated files included), oldest first."""
    pattern = f"{server}.jsonl*" if server else "*.jsonl*"
    records: list[dict[str, Any]] = []
    for path in directory.glob(pattern):
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        records += _json_objects(lines)
    records.sort(key=lambda record: str(record.get("time", "")))
    return records


def _json_objects(lines: Iterable[str]) -> list[dict[str, Any]]:
    """The lines that are JSON objects, decoded (any other line is passed over)."""
    objects = []
    for line in lines:
        try:
            decoded = json.loads(line)
        except ValueError:
            continue
        if isinstance(decoded, dict):
            objects.append(decoded)
    return objects


def read_records(directory: Path, server: str | None = None) -> Iterator[dict[str, Any]]:
    """One record per call, oldest first: its outcome line, or its intent line as `UNFINISHED` when the call has no
    outcome (it was cut short: the server was killed, or it is still running)."""
    return _paired(read_lines(directory, server))


def recent_records(directory: Path, limit: int, tail_bytes: int = 256 * 1024) -> list[dict[str, Any]]:
    """The newest `limit` calls across every server's current file, newest first, reading only the last
    `tail_bytes` of each (cheap enough for a page that refreshes itself); a call still running is `UNFINISHED`."""
    lines: list[dict[str, Any]] = []
    try:
        paths = [path for path in directory.iterdir() if path.name.endswith(".jsonl")]
    except OSError:
        return []
    for path in paths:
        try:
            with path.open("rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(0, size - tail_bytes))
                chunk = handle.read()
        except OSError:
            continue
        texts = chunk.decode("utf-8", "replace").splitlines()
        lines += _json_objects(texts[1:] if size > tail_bytes else texts)  # the first line of a tail may be cut
    lines.sort(key=lambda record: str(record.get("time", "")))
    return list(_paired(lines))[::-1][:limit]


def _paired(lines: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    ended = {(line.get("server"), line.get("call")) for line in lines if line.get("phase") == "end"}
    for line in lines:
        phase = line.get("phase", "end")  # lines of older versions have no phase: one line per call
        if phase == "end":
            yield line
        elif (line.get("server"), line.get("call")) not in ended:
            yield {**line, "outcome": "UNFINISHED"}
