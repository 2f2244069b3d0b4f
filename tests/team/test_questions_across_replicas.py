"""Approval questions across a team's replicas (`shared/serving/question_board.py`, `shared/store/redis_questions.py`):
two real gateway replicas over HTTP with `[gateway.auth]` (the stand-in authorization server of `users.py`) and
approval on, sharing one Redis (`team.py`), and a client without elicitation whose call waits on the status page.

Shown: alice's call through replica A waits on the page of replica B too (and on each page HAProxy's round robin
serves) — for alice only, not for bob — and her answer on B's page runs the call on A, once: answering again, on
either replica, is refused, and the answer is audited on A with who gave it on B. A replica killed while its question
waits: the question leaves B's page. Before, a question lived in the memory of the replica whose call asked it: B's
page said "No call is waiting for your approval" and B refused the answer.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

pytest.importorskip("joserfc")

from mcp_sections.shared.serving.audit import read_records
from tests.gateway.helpers import forward
from tests.stdio import REPO
from tests.team.authorization_server import AuthorizationServer, authorization_server
from tests.team.team import Replica, team
from tests.team.users import gateway_config
from tests.waiting import eventually

pytestmark = pytest.mark.anyio

RESOURCE = "https://mcp.team.example/mcp"  # the team's public URI: the audience of every token, on every replica
WAIT = 60

CLIENT = textwrap.dedent(
    """
    import json, os, sys, anyio
    import httpx2 as httpx
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> None:
        headers = {"Authorization": f"Bearer {os.environ['TEST_ACCESS_TOKEN']}"}
        async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=600)) as http:
            transport = streamable_http_client(sys.argv[1], http_client=http)
            async with Client(transport, mode="legacy", read_timeout_seconds=600) as client:
                result = await client.call_tool("call_section_tool", json.loads(sys.argv[2]))
        print(json.dumps({"is_error": result.is_error, "content": result.structured_content}), flush=True)

    anyio.run(main)
    """
)


@dataclass
class Replicas:
    a: Replica
    b: Replica
    auth: AuthorizationServer
    root: Path
    balancer: int  # HAProxy's port (round robin over A and B)

    def token(self, user: str) -> str:
        return self.auth.token(f"{user}-id", "mcp:tools", RESOURCE, preferred_username=user)

    @contextmanager
    def call(self, replica: Replica, user: str, name: str) -> Iterator[subprocess.Popen[str]]:
        """`user`'s client (no elicitation) writing `name` in the root through `replica` while the block runs (only
        an approved call writes it); it prints the call's result when it returns."""
        arguments = json.dumps(forward("file_ops", "write_file", path=str(self.root / name), content="written"))
        env = {**os.environ, "TEST_ACCESS_TOKEN": self.token(user)}
        command = [sys.executable, "-c", CLIENT, f"http://127.0.0.1:{replica.port}/mcp", arguments]
        client = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
        try:
            yield client
        finally:
            client.kill()
            client.communicate()


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    directory = tmp_path_factory.mktemp("team-questions")
    config = directory / "config.toml"
    with authorization_server() as auth:
        config.write_text(gateway_config(directory, auth, RESOURCE, approval="destructive"), encoding="utf-8")
        env = {"MCP_SECTIONS_CONFIG": str(config)}
        if "PYTHONPATH" in os.environ:  # the replicas run the package this test imports
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        with team(directory, env=env) as running:
            a = running.replica("a")
            yield Replicas(a, running.replica("b"), auth, a.root, running.balancer_port)


async def questions(replica: Replica | int, token: str) -> list[dict[str, Any]]:
    """The questions the page of `replica` (or of a port) shows the holder of `token`: id, CSRF token, text."""
    headers = {"Authorization": f"Bearer {token}"}
    port = replica if isinstance(replica, int) else replica.port
    async with httpx.AsyncClient(headers=headers, timeout=20) as http:
        response = await http.get(f"http://127.0.0.1:{port}/status/live")
    assert response.status_code == 200, response.text
    found = []
    for item in re.findall(r'<li class="question".*?</li>', response.text, re.S):
        question = re.search(r'data-question="([^"]+)"', item)
        csrf = re.search(r'name=csrf value="([^"]+)"', item)
        assert question is not None and csrf is not None
        found.append({"id": question[1], "csrf": csrf[1], "text": item})
    return found


async def csrf_of(replica: Replica, token: str) -> str:
    """The CSRF token of `replica`'s page for the holder of `token` (read from a question it shows them)."""
    shown = await eventually(lambda: questions(replica, token), timeout=WAIT)
    return str(shown[0]["csrf"])


async def answer(replica: Replica, token: str, question_id: str, csrf: str, approve: bool = True) -> int:
    """An answer posted to `replica`'s page; its HTTP status (303 taken, 409 no longer waiting)."""
    form = {"csrf": csrf, "answer": "approve" if approve else "decline"}
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=headers, timeout=20) as http:
        response = await http.post(f"http://127.0.0.1:{replica.port}/status/questions/{question_id}", data=form)
    return response.status_code


def approvals(replica: Replica) -> list[dict[str, Any]]:
    return list(read_records(replica.data_dir / "audit", "gateway.approvals"))


async def test_alices_question_asked_on_a_is_listed_and_answered_on_b_once(replicas: Replicas) -> None:
    a, b = replicas.a, replicas.b
    alice, bob = replicas.token("alice"), replicas.token("bob")
    with replicas.call(a, "alice", "approved.txt") as client:
        (shown,) = await eventually(lambda: questions(b, alice), timeout=WAIT)
        assert "write_file" in shown["text"] and "approved.txt" in shown["text"], shown["text"]
        assert [q["id"] for q in await questions(a, alice)] == [shown["id"]], "A, where the call waits, lists it too"
        for _ in range(4):  # round robin: A, B, A, B
            assert [q["id"] for q in await questions(replicas.balancer, alice)] == [shown["id"]]
        assert await questions(b, bob) == [] and await questions(a, bob) == [], "bob sees only his own questions"

        with replicas.call(a, "bob", "bobs.txt"):  # bob's own question gives him a CSRF token of B's page
            bobs_csrf = await csrf_of(b, bob)
            assert await answer(b, bob, shown["id"], bobs_csrf) == 409, "bob cannot answer alice's question"

        assert await answer(b, alice, shown["id"], shown["csrf"]) == 303
        stdout, _ = client.communicate(timeout=WAIT)
    result = json.loads(stdout)
    assert not result["is_error"], result
    assert (replicas.root / "approved.txt").read_text(encoding="utf-8") == "written"
    assert await answer(b, alice, shown["id"], shown["csrf"]) == 409, "answered once"
    assert await questions(a, alice) == [] and await questions(b, alice) == []
    (record,) = [r for r in approvals(a) if r["outcome"] == "APPROVED"]
    assert "alice" in record["message"] and "access token" in record["message"], record
    assert approvals(b) == [], "the call waited on A: its answer is audited there"


async def test_the_question_of_a_replica_killed_while_it_waits_leaves_the_other_page(replicas: Replicas) -> None:
    a, b = replicas.a, replicas.b
    alice = replicas.token("alice")
    with replicas.call(a, "alice", "never.txt"):
        (shown,) = await eventually(lambda: questions(b, alice), timeout=WAIT)
        a.kill()
        try:
            await eventually(lambda: _none(b, alice), timeout=WAIT)
            assert await answer(b, alice, shown["id"], shown["csrf"]) == 409
        finally:
            a.start()  # the next test finds its team whole
    assert not (replicas.root / "never.txt").exists()


async def _none(replica: Replica, token: str) -> bool:
    return not await questions(replica, token)
