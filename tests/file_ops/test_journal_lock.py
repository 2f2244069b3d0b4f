"""The undo journal's lock is fair: callers get it in the order they asked for it, and one that comes later
never passes those already waiting (#44: with polling, one write waited 1.02 s while 300 later writes went by)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mcp_sections.servers.file_ops.journal import Journal, Limits
from mcp_sections.servers.file_ops.locking import FairLock, LockTimeout
from tests.waiting import eventually


def inside_the_lock(thread: threading.Thread) -> bool:
    """Whether `thread` is in the middle of taking the journal's lock (Journal.locked is on its stack)."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_name == "locked" and frame.f_code.co_filename.endswith("journal.py"):
            return True
        frame = frame.f_back
    return False


@pytest.mark.anyio
async def test_the_journal_lock_is_taken_in_arrival_order(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "data", Limits())
    order: list[str] = []

    def change(name: str) -> None:
        with journal.locked():
            order.append(name)

    threads = [threading.Thread(target=change, args=(f"w{number}",)) for number in range(6)]
    try:
        with journal.locked():
            for thread in threads:  # each one waits before the next one asks
                thread.start()
                await eventually(lambda thread=thread: inside_the_lock(thread))
        change("late")  # asked for after those six, the moment the lock was released: it comes last
    finally:
        for thread in threads:
            thread.join(timeout=60)
        journal.close()
    assert order == ["w0", "w1", "w2", "w3", "w4", "w5", "late"]


HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def test_another_process_holding_it_times_out_then_hands_it_over(tmp_path: Path) -> None:
    path = tmp_path / "file_changes.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    lock = FairLock.of(path)
    with pytest.raises(LockTimeout), lock.held(timeout=0.2):
        pass
    assert lock.waiting == 0
    holder.communicate("")  # the other process ends, and its lock with it
    taken = []
    with lock.held(timeout=60):  # the waiter that gave up left nothing locked behind
        taken.append(True)
    assert taken == [True]
