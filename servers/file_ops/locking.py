"""A fair (first come, first served) exclusive lock on a file, shared by the threads of a process and by processes.

Within a process, callers queue in arrival order: the one at the head holds the lock, and releasing it hands it to
the next one (a caller that arrives meanwhile queues behind those waiting, it never barges in). Across processes, the
head of each process's queue takes `flock(LOCK_EX)` on the file, blocking in the kernel: no polling, so no waiter
sleeps through a release. The kernel wakes a process's waiting head as soon as the lock is free; which of several
processes' heads then wins is the kernel's choice, and every other waiter stays queued behind its own head.

A wait longer than the timeout raises `LockTimeout`. A blocking `flock` cannot be cancelled, so it runs in a helper
thread the waiter leaves behind: when the helper gets the lock after all, it releases it at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from mcp_sections.shared.ground.errors import SuiteError

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class LockTimeout(SuiteError):
    """The lock was not obtained in time."""


class FairLock:
    """An exclusive lock on `path`, fair within the process (see the module). Use one per file and process:
    `FairLock.of(path)`."""

    _locks: ClassVar[dict[str, FairLock]] = {}
    _locks_guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: Path) -> None:
        self.path = path
        self._queue: deque[object] = deque()
        self._changed = threading.Condition()

    @classmethod
    def of(cls, path: Path) -> FairLock:
        """The process's one lock for `path` (two locks on one file would queue apart)."""
        key = os.path.abspath(path)
        with cls._locks_guard:
            lock = cls._locks.get(key)
            if lock is None:
                lock = cls._locks[key] = cls(path)
            return lock

    @property
    def waiting(self) -> int:
        """How many callers of this process wait for the lock (the holder aside)."""
        with self._changed:
            return max(len(self._queue) - 1, 0)

    @contextlib.contextmanager
    def held(self, timeout: float) -> Iterator[None]:
        """Hold the lock for the block, after those who asked before (LockTimeout after `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        me = object()
        with self._changed:
            self._queue.append(me)
            while self._queue[0] is not me:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._queue.remove(me)
                    self._changed.notify_all()
                    raise LockTimeout(f"{self.path} was not free within {timeout:g} s")
                self._changed.wait(remaining)
        try:
            fd = self._lock_file(deadline, timeout)
        except BaseException:
            self._leave()
            raise
        try:
            yield
        finally:
            os.close(fd)  # releases the flock
            self._leave()

    def _leave(self) -> None:
        with self._changed:
            self._queue.popleft()
            self._changed.notify_all()

    def _lock_file(self, deadline: float, timeout: float) -> int:
        """A descriptor of the file holding `flock(LOCK_EX)`: at once when no other process holds it, else by a
        blocking flock in a helper thread, waited for until `deadline`."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        except BaseException:
            os.close(fd)
            raise
        state: dict[str, object] = {"locked": False, "abandoned": False, "error": None}
        settled = threading.Condition()

        def block() -> None:
            error: OSError | None = None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError as exc:
                error = exc
            with settled:
                if state["abandoned"] or error is not None:
                    os.close(fd)  # the waiter left (or the lock failed): the next one may have it
                state["error"], state["locked"] = error, error is None
                settled.notify_all()

        threading.Thread(target=block, name=f"flock {self.path.name}", daemon=True).start()
        with settled:
            while not state["locked"]:
                if isinstance(state["error"], OSError):
                    raise state["error"]
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    state["abandoned"] = True
                    raise LockTimeout(f"another process held {self.path} for {timeout:g} s")
                settled.wait(remaining)
        return fd
