"""Two real gateway replicas over HTTP, sharing one real Redis and nothing else, behind HAProxy running the team
profile's config (round robin: each request goes to the other replica). What one replica hands out, the other takes:

- a 2026-07-28 approval: the question is asked by one replica, the answer comes back to the other, and the call runs
  (before, the answer round failed with "Invalid or expired requestState": each replica sealed with a key of its own);
- the status page's sign-in cookie and CSRF token: every request through the balancer is signed in (before, one in
  two was 401), a form rendered by one replica is accepted by the other, and signing out on one signs out on both;
- the approval message names the page where people reach it (the balancer's address, `--allowed-origin`), and the
  page shows the question's id;
- a Host or Origin a replica refuses is answered with the flag that accepts it.

The secret from a key file instead of Redis: `test_request_state_key_file.py`; the helpers: `replicas.py`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import anyio
import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.orchestration.helpers import User
from tests.team.engines import Redis
from tests.team.replicas import AUTH, TOKEN, Pair, approving_client, carrying, replicas, sign_in, write_approved
from tests.waiting import eventually

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def pair(redis: Redis, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    shared = {"MCP_SECTIONS_REDIS_URL": redis.url, "MCP_SECTIONS_REDIS_PREFIX": "secret-test"}
    with replicas(tmp_path_factory.mktemp("replicas-secret"), shared) as running:
        yield running


async def test_a_question_asked_by_one_replica_is_answered_through_the_other(pair: Pair) -> None:
    user, served = User(), []
    async with approving_client(pair.url, user, served) as client:
        for number in range(4):
            before = len(served)
            target = pair.root / f"approved-{number}.txt"
            result = await write_approved(client, user, target)
            assert not result.is_error, result.content
            assert target.read_text(encoding="utf-8") == "approved"
            assert len(user.questions) == number + 1, "asked once per call"
            rounds = served[before:]
            assert len(set(rounds)) == 2, f"the answer came back to the other replica: {rounds}"


async def test_a_browser_signed_in_through_the_balancer_stays_signed_in_on_every_replica(pair: Pair) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        cookie = await sign_in(http, pair.url)
        pages = [await http.get(f"{pair.url}/status", headers=carrying(cookie)) for _ in range(4)]
        assert [page.status_code for page in pages] == [200] * 4
        assert {page.headers["x-mcp-replica"] for page in pages} == {"a", "b"}

        signed_out = await http.post(f"{pair.direct('a')}/status/sign-out", headers=carrying(cookie, Origin=pair.url))
        assert signed_out.status_code == 303
        for name in ("a", "b"):
            assert (await http.get(f"{pair.direct(name)}/status", headers=carrying(cookie))).status_code == 401, name


async def test_the_approval_message_names_the_public_page_and_a_form_of_one_replica_is_taken_by_the_other(
    pair: Pair,
) -> None:
    """A client that cannot ask its user: the question waits on replica A's page, and the client is told to open it at
    the balancer's address (an `--allowed-origin`), not the replica's own, with the id the page shows. The answer form
    A rendered carries a CSRF token replica B takes too."""
    progress: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    target = pair.root / "waiting.txt"
    arguments = {"section": "file_ops", "tool": "write_file", "arguments": {"path": str(target), "content": "x"}}
    http = httpx.AsyncClient(headers=AUTH, timeout=60)
    transport = streamable_http_client(f"{pair.direct('a')}/mcp", http_client=http)
    legacy = Client(transport, mode="legacy", read_timeout_seconds=60)
    async with http, legacy as client, anyio.create_task_group() as group:
        group.start_soon(lambda: client.call_tool("call_section_tool", arguments, progress_callback=on_progress))
        said = await eventually(lambda: next((line for line in progress if "approve or decline" in line), None))
        async with httpx.AsyncClient(timeout=30, headers={"Origin": pair.url}) as page:
            cookie = await sign_in(page, pair.direct("a"))
            live = (await page.get(f"{pair.direct('a')}/status/live", headers=carrying(cookie))).text
            (question,) = re.findall(r'data-question="([^"]+)"', live)
            csrf = re.search(r'name=csrf value="([^"]+)"', live)
            assert csrf is not None and f"Question {question}" in live, live
            form = {"answer": "decline", "csrf": csrf.group(1)}
            on_b = await page.post(
                f"{pair.direct('b')}/status/questions/{question}", data=form, headers=carrying(cookie)
            )
            assert on_b.status_code == 303, on_b.text  # B takes A's form, and A's question (shared in Redis)
    assert f"open {pair.url}/status " in said, said
    assert str(pair.ports["a"]) not in said, said
    assert f"question {question}" in said, said  # the whole id, as the page shows it
    assert not target.exists()


async def test_a_refused_host_or_origin_says_which_flag_accepts_it(pair: Pair) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        wrong_host = await http.get(f"{pair.direct('a')}/mcp", headers={**AUTH, "Host": "gateway.internal:9000"})
        assert wrong_host.status_code == 421
        assert "--allowed-host gateway.internal:9000" in wrong_host.text, wrong_host.text
        origin = "http://localhost:8766"
        wrong_origin = await http.post(f"{pair.url}/status/sign-in", data={"token": TOKEN}, headers={"Origin": origin})
        assert wrong_origin.status_code == 403
        assert f"--allowed-origin {origin}" in wrong_origin.text, wrong_origin.text
        assert (
            await http.post(f"{pair.url}/status/sign-in", data={"token": TOKEN}, headers={"Origin": pair.url})
        ).status_code == 303


async def test_the_recent_calls_name_their_user(pair: Pair) -> None:
    """Every signed-in user sees the recent calls, so each names whose it is (here the bearer token's user)."""
    async with approving_client(pair.direct("a"), User(), []) as client:
        await client.call_tool("list_tool_sections", {})
    async with httpx.AsyncClient(timeout=30, headers=AUTH) as http:
        page = (await http.get(f"{pair.direct('a')}/status/live")).text
    calls = page[page.index('id="calls-h"') :]
    assert "<th scope=col>User</th>" in calls
    row = next(row for row in calls.split("<tr>") if "list_tool_sections" in row)
    assert re.search(r"<td>token:[0-9a-f]{24}</td>", row), row
