"""A sandboxed program ended before bubblewrap has finished setting its sandbox up ends whole.

bubblewrap runs the sandbox in a session of its own, and the sandbox's first process arms `--die-with-parent` only at
the end of its setup. Ended in those first milliseconds (a call cancelled or timed out as its program starts: longer
on a loaded machine), bubblewrap alone died and the sandbox went on running the program, orphaned. `--lock-file` on a
FIFO holds the sandbox's first process just before that point (its `open` waits for a writer that never comes) while
the program already runs: the moment the flaky gateway test cancelled in, made certain.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

from mcp_sections.servers.shell_ops.processes import child_environment, run_process
from mcp_sections.shared.confinement.sandbox import Confinement, bubblewrap_problem, detect
from tests.processes import process_report, running, running_with, unique_seconds
from tests.waiting import cancelled_once, eventually

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or bubblewrap_problem() is not None, reason="bubblewrap cannot run here"
    ),
]
SEARCH_PATH = "/usr/bin:/bin"


async def test_a_call_cancelled_while_its_sandbox_is_set_up_leaves_nothing_running(tmp_path: Path) -> None:
    sleep = shutil.which("sleep", path=SEARCH_PATH)
    assert sleep is not None
    seconds = unique_seconds(60)
    held = tmp_path / "held"
    os.mkfifo(held)
    sandbox = detect("auto")
    with sandbox.spawning([sleep, seconds], tmp_path, Confinement(writable=(tmp_path,))) as spawn:
        bwrap, *options = spawn.argv
        argv = [bwrap, "--lock-file", str(held), *options]  # its first process waits, its program runs

        async def run() -> None:
            environment = child_environment(search_path=SEARCH_PATH, home=tmp_path)
            await run_process(
                argv, cwd=tmp_path, env=environment, timeout=120, max_output_bytes=1024, pass_fds=spawn.pass_fds
            )

        try:
            assert await cancelled_once(run, lambda: running([sleep, seconds]))
            try:
                await eventually(lambda: not running_with(seconds), timeout=15)
            except TimeoutError:
                raise AssertionError(f"still running after the cancel: {process_report(seconds)}") from None
        finally:
            for pid in running_with(seconds):  # what the old kill left (ended with its sandbox's first process)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
