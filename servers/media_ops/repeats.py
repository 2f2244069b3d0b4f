"""A paid generation asked again is not paid again: a client calls again after losing an answer (a 502 from a proxy,
a timeout, a reconnect) and MCP carries no idempotency key.

"The same call" is the same user asking the same tool with every input identical (the service builds the key; for an
input image, its content's digest). Made while that call runs, it waits for it and gets its result; made within
`window_seconds` after it succeeded, it gets that result again as long as every file it wrote is still there unchanged
(size, mtime, inode). Either answer says it was reused. `allow_duplicate` always generates. A failure is handed to the
calls waiting for it, never remembered.

A running generation belongs to the calls waiting for it, not to the one that started it: a caller cancelled leaves it
to the others, and when the last one is gone it is cancelled (a 3D job then cancelled at the provider) before that
call ends. Kept in memory, per process: the `REMEMBERED` most recent calls, their previews within `REMEMBERED_BYTES`.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

import anyio
from anyio.abc import TaskGroup

from mcp_sections.servers.media_ops.providers import Progress
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

T = TypeVar("T")
REMEMBERED = 32  # calls remembered after they succeeded, least recently asked dropped first
REMEMBERED_BYTES = 64_000_000  # their previews, at most (the newest is kept whatever its size)
STOP_SECONDS = 15.0  # the last caller cancelled waits this long at most for the work to stop (a 3D job's DELETE)
AGAIN = "pass allow_duplicate=true to generate new ones, paid again"


@dataclass(frozen=True)
class Asked:
    """How a generation was asked: by whom (one user's calls never meet another's), whether a twin may be made
    (`allow_duplicate`), and where this caller's progress goes."""

    user: str = "local"
    allow_duplicate: bool = False
    progress: Progress | None = None


@dataclass(eq=False)
class _Flight(Generic[T]):
    """A generation running for the calls waiting for it."""

    started: float = field(default_factory=time.time)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    waiting: int = 0
    listeners: list[Progress] = field(default_factory=list)
    result: T | None = None
    failure: Exception | None = None

    async def report(self, done: float, total: float | None, message: str) -> None:
        for listener in list(self.listeners):
            await listener(done, total, message)


Stamp = tuple[int, int, int] | None  # None: the file is gone


@dataclass(frozen=True)
class _Made(Generic[T]):
    """A generation that succeeded, with what its files were when it ended."""

    result: T
    at: float  # wall clock, told to the caller
    clock: float  # monotonic, for the window
    files: tuple[tuple[Path, Stamp], ...]
    weight: int

    def unchanged(self) -> bool:
        return all(stamp is not None and _stamp(path) == stamp for path, stamp in self.files)


class Repeats(Generic[T]):
    """The generations running and the recent ones (see the module docstring). `files(result)` are the files a
    result wrote; `weight(result)` its size in memory (its previews)."""

    def __init__(self, window_seconds: float, files: Callable[[T], Sequence[Path]], weight: Callable[[T], int]) -> None:
        self.window_seconds = window_seconds
        self._files = files
        self._weight = weight
        self._flights: dict[Hashable, _Flight[T]] = {}
        self._made: OrderedDict[Hashable, _Made[T]] = OrderedDict()
        self._group: TaskGroup | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Repeats[T]]:
        """Generations run inside; on the way out the ones still running are cancelled."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield self
            finally:
                self._group = None
                group.cancel_scope.cancel()

    async def once(
        self, call: Hashable, work: Callable[[Progress], Awaitable[T]], asked: Asked
    ) -> tuple[T, str | None]:
        """`work(progress)`'s result, and None; or, for the same call running or made within the window, its result
        and a warning saying so (nothing generated)."""
        key = (asked.user, call)
        if not asked.allow_duplicate:
            running = self._flights.get(key)
            if running is not None:
                since = _when(running.started)
                note = (
                    f"This very call was already running (since {since}): its result is returned, nothing was "
                    f"generated or paid for twice ({AGAIN})."
                )
                told = f"the same call is already running (since {since}): waiting for its result"
                return await self._wait(key, running, asked, told), note
            made = self._made_again(key)
            if made is not None:
                note = (
                    f"This very call generated these files at {_when(made.at)} "
                    f"({time.monotonic() - made.clock:.0f} s ago) and they are unchanged: they are returned, nothing "
                    f"was generated or paid for again ({AGAIN})."
                )
                return made.result, note
        return await self._wait(key, self._start(key, work), asked), None

    def _start(self, key: Hashable, work: Callable[[Progress], Awaitable[T]]) -> _Flight[T]:
        if self._group is None:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "this server is shutting down; call again after restart.")
        flight: _Flight[T] = _Flight()
        self._flights.setdefault(key, flight)  # beside a twin running (allow_duplicate), the twin stays the one joined
        self._group.start_soon(self._fly, key, flight, work, name="media_ops generation")
        return flight

    async def _fly(self, key: Hashable, flight: _Flight[T], work: Callable[[Progress], Awaitable[T]]) -> None:
        try:
            with flight.scope:
                flight.result = await work(flight.report)
        except Exception as exc:  # handed to the calls waiting, never remembered
            flight.failure = exc
        finally:
            self._leave(key, flight)
            if flight.result is not None:
                self._remember(key, flight.result)
            flight.done.set()

    async def _wait(self, key: Hashable, flight: _Flight[T], asked: Asked, told: str | None = None) -> T:
        """The flight's result once it ends (`told` first to this caller's progress). A caller cancelled meanwhile
        leaves it to the others; the last one stops it, and waits (shielded, at most STOP_SECONDS) until it has."""
        flight.waiting += 1
        if asked.progress is not None:
            flight.listeners.append(asked.progress)
        try:
            if told is not None and asked.progress is not None:
                await asked.progress(0.0, None, told)
            await flight.done.wait()
        finally:
            flight.waiting -= 1
            if asked.progress is not None:
                flight.listeners.remove(asked.progress)
            if flight.waiting == 0 and not flight.done.is_set():  # the last caller is gone: nobody wants it
                self._leave(key, flight)
                flight.scope.cancel()
                with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_SECONDS):
                    await flight.done.wait()
        if flight.failure is not None:
            raise flight.failure
        if flight.result is None:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "the generation was stopped: the server is shutting down.")
        return flight.result

    def _leave(self, key: Hashable, flight: _Flight[T]) -> None:
        """The flight is no longer the one a new call joins."""
        if self._flights.get(key) is flight:
            del self._flights[key]

    def _made_again(self, key: Hashable) -> _Made[T] | None:
        made = self._made.get(key)
        if made is None:
            return None
        if time.monotonic() - made.clock > self.window_seconds or not made.unchanged():
            del self._made[key]
            return None
        self._made.move_to_end(key)
        return made

    def _remember(self, key: Hashable, result: T) -> None:
        if self.window_seconds <= 0:
            return
        files = tuple((path, _stamp(path)) for path in self._files(result))
        now = time.monotonic()
        for old in [k for k, made in self._made.items() if now - made.clock > self.window_seconds]:
            del self._made[old]
        self._made[key] = _Made(result, time.time(), now, files, self._weight(result))
        self._made.move_to_end(key)
        while len(self._made) > 1 and (
            len(self._made) > REMEMBERED or sum(made.weight for made in self._made.values()) > REMEMBERED_BYTES
        ):
            self._made.popitem(last=False)


def _stamp(path: Path) -> Stamp:
    """What tells a file was changed or replaced: (size, mtime in ns, inode); None when it is gone."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ino)


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
