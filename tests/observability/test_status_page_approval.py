"""Approval on the status page, as a desktop client without elicitation meets it: the gateway started over stdio with
approval on serves its status page on loopback, behind a token it writes to a 0600 file of the data directory; a
destructive call waits there, with progress telling the client where to answer; a person signs in in Chromium and
approves it (the call runs), or nobody answers and it is declined when its time is up (nothing runs). Both answers are
audited with how they were given; a forged answer (no CSRF token, another site's Origin) changes nothing. Real
processes, real stdio, a real browser (driven from the test's own event loop, beside the client)."""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2 as httpx
import pytest
from mcp import Client

from mcp_sections.shared.serving.audit import read_records
from tests.stdio import NO_WARM_UP, REPO, error_of, server_parameters
from tests.waiting import eventually

pytestmark = pytest.mark.anyio
APPROVAL = {"MCP_SECTIONS_APPROVAL": "destructive", "MCP_SECTIONS_CONFIG": os.devnull, **NO_WARM_UP}


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    async_api = pytest.importorskip("playwright.async_api", reason="pip install 'mcp-sections[web]'")
    from mcp_sections.servers.web_ops.browser import find_chromium

    async with async_api.async_playwright() as playwright:
        try:
            browser = await playwright.chromium.launch(executable_path=find_chromium(None), args=["--no-sandbox"])
        except Exception as exc:  # no Chromium on this machine
            pytest.skip(f"Chromium cannot start here: {exc}")
        try:
            yield browser
        finally:
            await browser.close()


class Desktop:
    """A desktop client connected to a stdio gateway, its one destructive call running in the background."""

    def __init__(self, tmp_path: Path, client: Client) -> None:
        self.root, self.data, self.client = tmp_path / "root", tmp_path / "data", client
        self.progress: list[str] = []
        self.result: list[Any] = []
        self.ended = anyio.Event()

    @property
    def victim(self) -> Path:
        return self.root / "victim.txt"

    async def delete_victim(self) -> None:
        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            self.progress.append(message or "")

        arguments = {"section": "file_ops", "tool": "delete_path", "arguments": {"path": str(self.victim)}}
        self.result.append(await self.client.call_tool("call_section_tool", arguments, progress_callback=on_progress))
        self.ended.set()

    async def note(self) -> tuple[str, str, Path]:
        """The status page's address and token, from the file the gateway wrote."""
        found = await eventually(lambda: list((self.data / "status-pages").glob("gateway-*.txt")), timeout=60)
        fields = dict(line.split(": ", 1) for line in found[0].read_text(encoding="utf-8").splitlines())
        return fields["url"], fields["token"], found[0]

    async def outcome(self) -> Any:
        with anyio.fail_after(120):
            await self.ended.wait()
        return self.result[0]


@asynccontextmanager
async def desktop(tmp_path: Path, *extra: str) -> AsyncIterator[Desktop]:
    """A stdio gateway with approval on (file_ops in its process), a client without elicitation, and a file to
    delete; the client's call starts at once."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "victim.txt").write_text("precious", encoding="utf-8")
    args = ["gateway", "--data-dir", str(tmp_path / "data"), "--root", str(root), "--in-process", "file_ops", *extra]
    parameters = server_parameters(args, env=APPROVAL, cwd=REPO)
    async with Client(parameters, mode="legacy", read_timeout_seconds=120) as client:  # type: ignore[arg-type]
        session = Desktop(tmp_path, client)
        async with anyio.create_task_group() as group:
            group.start_soon(session.delete_victim)
            yield session


async def sign_in(page: Any, url: str, token: str) -> None:
    await page.goto(url)
    await page.fill("#token", token)  # not typed: on a loaded machine keys typed before autofocus applies are lost
    await page.press("#token", "Enter")
    await page.wait_for_selector("#live")


async def test_a_client_without_elicitation_gets_a_destructive_call_approved_in_chromium(tmp_path: Path) -> None:
    async with desktop(tmp_path) as session, chromium() as browser:
        url, token, note = await session.note()
        assert stat.S_IMODE(note.stat().st_mode) == 0o600 and stat.S_IMODE(note.parent.stat().st_mode) == 0o700
        assert urlsplit(url).hostname == "127.0.0.1", "loopback only"

        context = await browser.new_context()
        page = await context.new_page()
        await sign_in(page, url, token)
        question = page.locator("li.question")
        await question.wait_for(timeout=30000)  # the page refreshes itself: the call's question appears
        text = await question.inner_text()
        assert str(session.victim) in text and "delete_path" in text and "declined in" in text
        assert session.victim.exists(), "nothing runs before the answer"

        # a forged answer changes nothing: without the page's CSRF token, or from another site, or signed out
        path = f"{url}/questions/{await question.get_attribute('data-question')}"
        cookie = "; ".join(f"{c['name']}={c['value']}" for c in await context.cookies())
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        async with httpx.AsyncClient(timeout=10) as http:
            forged = [
                ({"Cookie": cookie}, "answer=approve"),
                ({"Cookie": cookie}, "answer=approve&csrf=0123"),
                ({"Cookie": cookie, "Origin": "http://evil.example"}, "answer=approve"),
                ({}, "answer=approve"),
            ]
            statuses = [(await http.post(path, headers={**form, **h}, content=body)).status_code for h, body in forged]
        assert statuses == [403, 403, 403, 401]

        await question.get_by_role("button", name="Approve").click()
        await page.wait_for_selector("text=No call is waiting for your approval.")
        result = await session.outcome()
        assert not result.is_error and not session.victim.exists()
        assert any(url in line and "approve or decline" in line for line in session.progress), session.progress
        await context.close()

    audit = tmp_path / "data" / "audit"
    (answer,) = read_records(audit, "gateway.approvals")
    assert answer["outcome"] == "APPROVED" and answer["tool"] == "call_section_tool"
    assert "on the status page by the person signed in with session" in answer["message"]
    assert "127.0.0.1" in answer["message"] and token not in answer["message"]
    assert [r["outcome"] for r in read_records(audit, "gateway") if r["tool"] == "call_section_tool"] == ["OK"]
    assert not note.exists(), "the note goes with the gateway"


async def test_a_question_nobody_answers_is_declined_and_nothing_runs(tmp_path: Path) -> None:
    # the browser first: the question's 6 s run from the call, which starts with the gateway (a browser launched
    # after it, on a loaded machine, could find the question already gone)
    async with chromium() as browser, desktop(tmp_path, "--approval-timeout", "6") as session:
        url, token, _ = await session.note()
        context = await browser.new_context()
        page = await context.new_page()
        await sign_in(page, url, token)
        await page.locator("li.question").wait_for(timeout=30000)

        code, message = error_of(await session.outcome())
        assert code == "PERMISSION_DENIED" and "did not answer within 6 s" in message
        assert session.victim.read_text(encoding="utf-8") == "precious"
        await page.reload()
        assert await page.locator("li.question").count() == 0, "a question whose time is up leaves the page"
        await context.close()

    audit = tmp_path / "data" / "audit"
    (answer,) = read_records(audit, "gateway.approvals")
    assert answer["outcome"] == "TIMED_OUT" and "nobody answered within 6 s" in answer["message"]
    (call,) = [r for r in read_records(audit, "gateway") if r["tool"] == "call_section_tool"]
    assert call["outcome"] == "PERMISSION_DENIED" and "did not answer" in call["message"]
