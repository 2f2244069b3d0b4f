"""A call's progress notifications strictly increase, as MCP requires ("The progress value MUST increase with each
notification, even if the total is unknown"), whoever reports them (`shared.framework.tools.ProgressLine`): while
the call waits for approval on the status page it reports the seconds waited, then the tool's own progress — here
forwarded by the gateway from shell_ops' process, counting from 0 again — goes on from there, its total moved
likewise. A desktop client without elicitation on a stdio gateway, the page answered over HTTP: real processes."""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import Client

from mcp_sections.shared.framework.tools import ProgressLine
from tests.stdio import NO_WARM_UP, REPO, data_of, server_parameters
from tests.waiting import eventually

pytestmark = pytest.mark.anyio
APPROVAL = {"MCP_SECTIONS_APPROVAL": "destructive", "MCP_SECTIONS_CONFIG": os.devnull, **NO_WARM_UP}


async def _approve_on_the_page(data: Path) -> None:
    """Approve the one waiting question, signed in with the token the stdio gateway wrote beside its page."""
    notes = await eventually(lambda: list((data / "status-pages").glob("gateway-*.txt")), timeout=60)
    fields = dict(line.split(": ", 1) for line in notes[0].read_text(encoding="utf-8").splitlines())
    headers = {"Authorization": f"Bearer {fields['token']}"}
    async with httpx.AsyncClient(headers=headers, timeout=20) as http:
        html = (await http.get(f"{fields['url']}/live")).text
        question = re.search(r'data-question="([^"]+)"', html)
        csrf = re.search(r'name=csrf value="([^"]+)"', html)
        assert question is not None and csrf is not None, html[:500]
        form = {"csrf": csrf[1], "answer": "approve"}
        assert (await http.post(f"{fields['url']}/questions/{question[1]}", data=form)).status_code == 303


async def test_progress_through_approval_and_a_forwarded_tool_only_increases(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    root.mkdir()
    args = ["gateway", "--data-dir", str(data), "--root", str(root)]  # shell_ops in its own process
    notes: list[tuple[float, float | None, str]] = []
    result: list[Any] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notes.append((progress, total, message or ""))

    async def run(client: Client) -> None:
        command = {"command": ["python3", "-c", "import time; time.sleep(3)"], "timeout_seconds": 30}
        arguments = {"section": "shell_ops", "tool": "run_command", "arguments": command}
        result.append(await client.call_tool("call_section_tool", arguments, progress_callback=on_progress))

    parameters = server_parameters(args, env=APPROVAL, cwd=REPO)
    client = Client(parameters, mode="legacy", read_timeout_seconds=120)  # type: ignore[arg-type]
    async with client, anyio.create_task_group() as group:
        group.start_soon(run, client)
        # two reports of the wait (one every 10 s): the second used to repeat the first's 0
        await eventually(lambda: len(notes) >= 2, timeout=60)
        await _approve_on_the_page(data)
    data_of(result[0])
    waiting = [note for note in notes if "needs your approval" in note[2]]
    running = [note for note in notes if "running for" in note[2]]
    assert len(waiting) >= 2 and running, notes
    values = [progress for progress, _, _ in notes]
    assert all(later > earlier for earlier, later in itertools.pairwise(values)), notes
    # the tool's phase is moved as a whole: one total (its 30 s timeout, moved), above each of its values
    assert len({total for _, total, _ in running}) == 1, running
    assert all(total is not None and total > progress for progress, total, _ in running), running


def test_a_new_phase_counts_on_from_one_past_what_was_sent() -> None:
    line = ProgressLine()
    sent = [line.next(progress, total) for progress, total in [(0, None), (10, None), (20, None)]]
    sent += [line.next(progress, total) for progress, total in [(0, 5), (2, 5), (5, 5)]]  # the tool, from 0
    sent += [line.next(progress, total) for progress, total in [(1, 3), (1, 3)]]  # a forwarded section, twice alike
    assert sent == [(0, None), (10, None), (20, None), (21, 26), (23, 26), (26, 26), (28, 30), (30, 32)]
