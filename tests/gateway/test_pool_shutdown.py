"""The pool's shutdown: a section still starting when the pool stops does not outlive it.

A call announces itself by starting its section in the background (`boot`); if the gateway stops meanwhile, the
start ends after the pool has stopped every connection it knew. That late connection used to stay open, holding the
gateway's exit for the whole shutdown grace (10 s), and its process until then.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import pytest

from mcp_sections.servers.pool.pool import SHUTDOWN_GRACE_SECONDS, SectionPool
from mcp_sections.servers.pool.settings import ExternalSection, GatewaySettings
from mcp_sections.shared.settings.config import Settings
from tests.gateway.helpers import REPO

SLOW_START = 0.8  # seconds the stand-in server sleeps before it serves (the pool stops at 0.3 s)
SLOW_SERVER = (
    "import runpy, sys, time\n"
    f"time.sleep({SLOW_START})\n"
    "sys.argv = ['serve_module', 'tests.framework.demo_section']\n"
    "runpy.run_module('tests.gateway.serve_module', run_name='__main__')\n"
)


@pytest.mark.anyio
async def test_a_section_still_starting_when_the_pool_stops_is_stopped_with_it(tmp_path: Path) -> None:
    slow = ExternalSection(
        command=sys.executable, args=["-c", SLOW_SERVER], cwd=str(REPO), env={"PYTHONPATH": str(REPO)}
    )
    pool = SectionPool(Settings(data_dir=tmp_path / "data"), GatewaySettings(sections={"slow": slow}))
    launcher = pool.launcher("slow")
    started = time.monotonic()
    async with pool.running():
        launcher.boot()  # a call is coming: the section starts in the background
        await anyio.sleep(0.3)  # the gateway stops before the start ends
    took = time.monotonic() - started
    assert took < SLOW_START + SHUTDOWN_GRACE_SECONDS / 2, f"the pool waited {took:.1f} s to stop"
    assert launcher.state != "running" and launcher.running_since is None
