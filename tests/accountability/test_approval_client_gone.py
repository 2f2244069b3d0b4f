"""An approval question does not outlive its client (`shared/serving/approval.py`): over Streamable HTTP, a client
without elicitation whose call waits on the gateway's status page and then goes without a word (the MCP Inspector
giving up after 60 s, a killed process: no notifications/cancelled, no DELETE) has its question shown disconnected,
then withdrawn once the grace is over — declined, audited "the client that asked is gone" — so approving it can never
run the call for nobody. A client that resumes its stream (`Last-Event-ID`) within the grace keeps its question, and
gets the call's result once it is approved. A real gateway process over real HTTP, the page answered over HTTP."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from mcp_sections.shared.serving.audit import read_records
from tests.accountability.page_gateway import APPROVAL, PageGateway, page_gateway
from tests.processes import kill_running_with
from tests.raw_http import RawSession, call_result, events
from tests.stdio import REPO
from tests.waiting import eventually

pytestmark = pytest.mark.anyio
WAIT = 60  # the grace (20 s), and room for a loaded machine


class Gateway(PageGateway):
    def write(self, name: str) -> dict[str, Any]:
        """call_section_tool's arguments writing `name` in the root (only an approved call makes it)."""
        path = str(self.root / name)
        return {"section": "file_ops", "tool": "write_file", "arguments": {"path": path, "content": "written"}}


@contextmanager
def http_gateway(tmp_path: Path) -> Iterator[Gateway]:
    """The gateway over HTTP on loopback (no token: the page is open), approval on, file_ops in its process."""
    with page_gateway(tmp_path, "file_ops") as (port, root, data):
        yield Gateway(port, root, data)


CLIENT = textwrap.dedent(
    """
    import json, sys, anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> None:
        async with Client(streamable_http_client(sys.argv[1]), mode="legacy", read_timeout_seconds=600) as client:
            await client.call_tool("call_section_tool", json.loads(sys.argv[2]))

    anyio.run(main)
    """
)


async def test_a_killed_clients_question_is_shown_disconnected_then_withdrawn_and_nothing_runs(tmp_path: Path) -> None:
    with http_gateway(tmp_path) as gateway:
        arguments = json.dumps(gateway.write("made.txt"))
        client = subprocess.Popen([sys.executable, "-c", CLIENT, f"{gateway.url}/mcp", arguments], cwd=REPO)
        try:
            (question,) = await eventually(gateway.questions, timeout=60)
            assert "made.txt" in question["text"] and not question["disconnected"]
        finally:
            client.kill()  # no notifications/cancelled, no DELETE: its connection just closes
            client.wait()
        shown = await eventually(lambda: _disconnected(gateway), timeout=WAIT)
        assert shown["id"] == question["id"] and "withdrawn in" in shown["text"], shown["text"]
        await eventually(lambda: _no_question(gateway), timeout=WAIT)
        assert await gateway.answer(question, approve=True) == 409, "a withdrawn question cannot be approved"
    assert not (gateway.root / "made.txt").exists()
    (record,) = gateway.approvals()
    assert record["outcome"] == "DECLINED" and "the client that asked is gone" in record["message"], record
    (call,) = [r for r in read_records(gateway.data / "audit", "gateway") if r["tool"] == "call_section_tool"]
    assert call["outcome"] == "PERMISSION_DENIED" and "withdrawn" in call["message"], call


async def _disconnected(gateway: Gateway) -> dict[str, Any] | None:
    return next((q for q in await gateway.questions() if q["disconnected"]), None)


async def _no_question(gateway: Gateway) -> bool:
    return not await gateway.questions()


# -- a client that resumes its stream keeps its question ------------------------------------------------------


async def test_a_client_that_resumes_its_stream_keeps_its_question_and_gets_the_result(tmp_path: Path) -> None:
    with http_gateway(tmp_path) as gateway:
        async with httpx.AsyncClient(timeout=httpx.Timeout(30, read=120)) as http:
            session = RawSession(http, f"{gateway.url}/mcp")
            await session.start()
            last = None
            async with session.call(
                "call_section_tool", gateway.write("kept.txt"), _meta={"progressToken": "p"}
            ) as stream:
                async for event_id, message in events(stream):
                    last = event_id or last
                    if message is not None and message.get("method") == "notifications/progress":
                        break  # the question waits on the page; the stream drops here
            assert last is not None
            shown = await eventually(lambda: _disconnected(gateway), timeout=WAIT)
            async with session.resumed(last) as resumed:
                await eventually(_reconnected(gateway, shown["id"]), timeout=30)
                assert await gateway.answer(shown, approve=True) == 303
                result = await call_result(resumed)
    assert result is not None and not result.get("isError"), result
    assert (gateway.root / "kept.txt").read_text(encoding="utf-8") == "written"
    (record,) = gateway.approvals()
    assert record["outcome"] == "APPROVED", record


def _reconnected(gateway: Gateway, question_id: str) -> Any:
    async def check() -> bool:
        return any(q["id"] == question_id and not q["disconnected"] for q in await gateway.questions())

    return check


STDIO_CLIENT = """
import asyncio, json, sys
from mcp import Client
from tests.stdio import server_parameters
args, env, cwd, arguments = json.loads(sys.argv[1])
async def main():
    async with Client(server_parameters(args, env=env, cwd=cwd), mode="legacy", read_timeout_seconds=600) as client:
        print("connected", flush=True)
        await client.call_tool("call_section_tool", arguments)
asyncio.run(main())
"""


async def test_a_stdio_client_killed_while_asked_has_its_question_withdrawn(tmp_path: Path) -> None:
    """A desktop client killed while its call waits on the page beside a stdio gateway: the gateway's stdout has no
    reader any more (`shared.serving.stdio`), so the question is withdrawn after the grace, and approving it runs
    nothing (it used to stay, and approving it wrote the file)."""
    root, data = tmp_path / "root", tmp_path / "data"
    root.mkdir()
    gateway = Gateway(0, root, data)
    args = ["gateway", "--data-dir", str(data), "--root", str(root), "--in-process", "file_ops"]
    request = json.dumps([args, APPROVAL, str(REPO), gateway.write("ghost.txt")])
    client = subprocess.Popen([sys.executable, "-c", STDIO_CLIENT, request], cwd=REPO, stdout=subprocess.DEVNULL)
    try:
        notes = await eventually(lambda: list((data / "status-pages").glob("gateway-*.txt")), timeout=WAIT)
        fields = dict(line.split(": ", 1) for line in notes[0].read_text(encoding="utf-8").splitlines())
        headers = {"Authorization": f"Bearer {fields['token']}"}

        async def waiting() -> list[str]:
            async with httpx.AsyncClient(headers=headers, timeout=20) as http:
                return re.findall(r'<li class="question".*?</li>', (await http.get(f"{fields['url']}/live")).text, re.S)

        asked = await eventually(waiting, timeout=WAIT, interval=0.5)
        client.kill()
        client.wait(timeout=10)

        def withdrawn() -> bool:
            return any("the client that asked is gone" in r["message"] for r in gateway.approvals())

        # at once, not after the transport's 30 s drain (before: approving within it wrote the file)
        assert await eventually(withdrawn, timeout=15, interval=0.5), gateway.approvals()
        question = re.search(r'data-question="([^"]+)"', asked[0])
        csrf = re.search(r'name=csrf value="([^"]+)"', asked[0])
        assert question is not None and csrf is not None
        form = {"csrf": csrf[1], "answer": "approve"}
        with contextlib.suppress(httpx.ConnectError):  # the gateway may have ended meanwhile: nobody is left
            async with httpx.AsyncClient(headers=headers, timeout=20) as http:
                status = (await http.post(f"{fields['url']}/questions/{question[1]}", data=form)).status_code
            assert status == 409
        assert not (root / "ghost.txt").exists()
    finally:
        client.kill()
        kill_running_with(str(data))
