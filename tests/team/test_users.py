"""A user per request on a team's gateway (issue #42): the real HTTP gateway (`mcp-sections gateway --transport http`)
with `[gateway.auth]`, an OAuth 2.1 resource server of a stand-in authorization server on 127.0.0.1 that signs RS256
and ES256 access tokens for the users of the test — alice (`mcp:tools`: every tool), bob (the same), carol
(`mcp:read`: the `readonly` profile) and dave (a scope the gateway does not know) — and the official client over
Streamable HTTP with each user's token.

Shown: a request without a valid token gets 401 with `WWW-Authenticate` naming the protected-resource metadata (served
without a token, RFC 9728); expired, wrong-audience, wrong-issuer and badly signed tokens are refused; one user can
neither get, cancel nor list another's task, nor read another's resource link, while the same user with a refreshed
token can; the gateway's audit lines and trace spans name the user; a read-only scope refuses a destructive tool
(HTTP 403 insufficient_scope, which the client raises) naming the scope it needs, while tools/list is the same for
every user; the status page signs a user in with an access token.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("joserfc")

import anyio
import httpx2 as httpx
from mcp.shared.exceptions import MCPError

from mcp_sections.shared.serving.audit import read_lines, read_records
from tests.gateway.helpers import FORWARD, forward
from tests.tasks_client import (
    CreatedTask,
    call_for_task,
    cancel_task,
    create_legacy_task,
    get_task,
    legacy_cancel,
    legacy_list,
)
from tests.team.users import Team, as_user, initialize, team_gateway
from tests.waiting import eventually

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    with team_gateway(tmp_path_factory.mktemp("team-users")) as gateway:
        yield gateway


def test_requests_without_a_valid_token_get_401_naming_the_resource_metadata(team: Team) -> None:
    refused = initialize(team, None)
    metadata_url = f"http://127.0.0.1:{team.port}/.well-known/oauth-protected-resource/mcp"
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert challenge == f'Bearer resource_metadata="{metadata_url}", scope="mcp:read mcp:tools"', challenge
    for url in (metadata_url, f"http://127.0.0.1:{team.port}/.well-known/oauth-protected-resource"):
        document = httpx.get(url, timeout=30)
        assert document.status_code == 200, url
        assert document.json() == {
            "resource": team.url,
            "authorization_servers": [team.auth.issuer],
            "scopes_supported": ["mcp:read", "mcp:tools"],
            "bearer_methods_supported": ["header"],
        }
    assert httpx.get(f"http://127.0.0.1:{team.port}/health", timeout=30).status_code == 200
    wrong = {
        "the token has expired": team.token("alice", lifetime=-300),
        "not issued for this server": team.auth.token("alice-id", "mcp:tools", "http://127.0.0.1:1/mcp"),
        f"not issued by {team.auth.issuer}": team.token("alice", iss="http://127.0.0.1:1/other"),
        "signature is not the authorization server's": team.token("alice")[:-8] + "AAAAAAAA",
    }
    for reason, token in wrong.items():
        answer = initialize(team, token)
        assert answer.status_code == 401, reason
        assert 'error="invalid_token"' in answer.headers["www-authenticate"], reason
        assert reason in answer.json()["error_description"]
    assert initialize(team, team.token("alice", key="ES256")).status_code == 200


async def test_one_user_can_neither_get_nor_cancel_another_users_task(team: Team) -> None:
    async with as_user(team, team.token("bob")) as bob:
        await bob.call_tool("describe_section", {"section": "tasks_demo"})  # the gateway now knows its tools
        created = await call_for_task(bob, FORWARD, forward("tasks_demo", "slow_compute", seconds=60, label="bob"))
        assert isinstance(created, CreatedTask)
    async with as_user(team, team.token("alice")) as alice:
        for attempt in (get_task, cancel_task):
            with pytest.raises(MCPError, match="never existed or has expired"):
                await attempt(alice.session, created.task_id)
    async with as_user(team, team.token("bob")) as bob:  # a refreshed token: the same user
        assert (await get_task(bob.session, created.task_id)).status == "working"
        await cancel_task(bob.session, created.task_id)
        assert (await get_task(bob.session, created.task_id)).status == "cancelled"


async def test_on_2025_11_25_a_user_lists_only_their_tasks_and_cannot_use_another_users_session(team: Team) -> None:
    async with as_user(team, team.token("bob"), legacy=True) as bob:
        await bob.call_tool("describe_section", {"section": "tasks_demo"})
        created = await create_legacy_task(bob, FORWARD, forward("tasks_demo", "slow_compute", seconds=60))
        task_id = created["task"]["taskId"]
        assert task_id in {task.task_id for task in (await legacy_list(bob)).tasks}
    async with as_user(team, team.token("alice"), legacy=True) as alice:
        assert task_id not in {task.task_id for task in (await legacy_list(alice)).tasks}
        with pytest.raises(MCPError, match="never existed or has expired"):
            await legacy_cancel(alice, task_id)
    async with as_user(team, team.token("bob", key="ES256"), legacy=True) as bob:
        assert (await legacy_cancel(bob, task_id)).status == "cancelled"
    opened = initialize(team, team.token("bob"))
    session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream", **session}
    for user, expected in (("alice", 404), ("bob", 200)):  # the SDK binds a session to its user (sub, iss, client)
        headers = {**accept, "Authorization": f"Bearer {team.token(user)}"}
        assert httpx.post(team.url, json=listing, headers=headers, timeout=30).status_code == expected, user


async def test_one_user_cannot_read_another_users_links(team: Team) -> None:
    async with as_user(team, team.token("bob")) as bob:
        result = await bob.call_tool(FORWARD, forward("tasks_demo", "bulky_report", pages=2, chars=30_000))
        links = [block for block in result.content if block.type == "resource_link"]
        assert len(links) == 2, result.content
    async with as_user(team, team.token("alice")) as alice:
        with pytest.raises(MCPError, match="unknown or has expired"):
            await alice.read_resource(links[0].uri)
    async with as_user(team, team.token("bob", key="ES256")) as bob:  # another token of bob's
        page = (await bob.read_resource(links[0].uri)).contents[0]
        assert "# page 0" in getattr(page, "text", "")


async def test_a_read_only_scope_refuses_a_destructive_tool_naming_the_scope_it_needs(team: Team) -> None:
    target = team.workdir / "written-by-alice.txt"
    write = forward("file_ops", "write_file", path=str(target), content="hello")
    async with as_user(team, team.token("carol")) as carol:
        listed = {tool.name for tool in (await carol.list_tools()).tools}
        with pytest.raises(MCPError, match="write_file needs the scope 'mcp:tools'") as refused:
            await carol.call_tool(FORWARD, write)  # HTTP 403 insufficient_scope: tests/team/test_scope_challenge.py
        assert "'mcp:read' gives profile 'readonly' (only tools annotated read-only)" in str(refused.value)
        greeted = await carol.call_tool(FORWARD, forward("tasks_demo", "greet", name="carol"))
        assert not greeted.is_error, greeted.content
    assert not target.exists()
    async with as_user(team, team.token("dave")) as dave:
        with pytest.raises(MCPError, match="needs the scope 'mcp:read' or 'mcp:tools'"):
            await dave.call_tool(FORWARD, forward("tasks_demo", "greet", name="dave"))
    async with as_user(team, team.token("alice")) as alice:
        assert {tool.name for tool in (await alice.list_tools()).tools} == listed  # one tools/list for everyone
        written = await alice.call_tool(FORWARD, write)
        assert not written.is_error, written.content
    assert target.read_text() == "hello"


async def test_audit_lines_and_trace_spans_name_the_user(team: Team) -> None:
    async with as_user(team, team.token("bob")) as bob:
        greeted = await bob.call_tool(FORWARD, forward("tasks_demo", "greet", name="audited"))
        assert not greeted.is_error, greeted.content
    audit = team.workdir / "data" / "audit"

    def bobs_lines() -> list[dict[str, Any]]:
        return [line for line in read_lines(audit, "gateway") if line.get("tool") == FORWARD]

    await eventually(lambda: any(line.get("phase") == "end" and line.get("user") for line in bobs_lines()))
    users = {line.get("user") for line in bobs_lines()}
    assert "bob (bob-id)" in users, users
    team.receiver.wait_for(
        lambda receiver: any(span.attributes.get("enduser.id") == "bob-id" for span in receiver.spans)
    )


async def test_the_status_page_signs_a_user_in_with_an_access_token(team: Team) -> None:
    page = f"http://127.0.0.1:{team.port}/status"
    headers = {"Origin": f"http://127.0.0.1:{team.port}"}
    async with httpx.AsyncClient(timeout=30, headers=headers) as browser:
        assert (await browser.get(page)).status_code == 401
        wrong = await browser.post(f"{page}/sign-in", data={"token": team.token("carol", lifetime=-300)})
        assert wrong.status_code == 401 and "valid access token" in wrong.text
        signed = await browser.post(f"{page}/sign-in", data={"token": team.token("carol")})
        assert signed.status_code == 303
        assert (await browser.get(page)).status_code == 200
        by_header = await browser.get(page, headers={"Authorization": f"Bearer {team.token('alice')}"})
        assert by_header.status_code == 200


async def test_an_approval_question_is_seen_and_answered_by_its_user_only(tmp_path: Path) -> None:
    """With approval on and clients that cannot ask (no elicitation), alice's and bob's destructive calls wait on the
    status page: each, signed in with their token, sees only their own question, and bob's answer to alice's (with
    his own valid form) is refused; alice approves hers, bob declines his, and each answer's audit line names them."""
    with team_gateway(tmp_path, approval="destructive") as team:
        page = f"http://127.0.0.1:{team.port}/status"
        origin = {"Origin": f"http://127.0.0.1:{team.port}"}

        def browser(user: str) -> httpx.AsyncClient:
            headers = {**origin, "Authorization": f"Bearer {team.token(user)}"}
            return httpx.AsyncClient(timeout=30, headers=headers)

        async def waiting(user: str) -> tuple[list[str], str]:
            async with browser(user) as client:
                text = (await client.get(f"{page}/live")).text
            csrf = re.search(r'name=csrf value="([^"]+)"', text)
            return re.findall(r'data-question="([^"]+)"', text), csrf.group(1) if csrf else ""

        async def answer(user: str, question: str, csrf: str, choice: str) -> int:
            async with browser(user) as client:
                form = {"csrf": csrf, "answer": choice}
                return (await client.post(f"{page}/questions/{question}", data=form)).status_code

        results: dict[str, Any] = {}

        async def write(user: str) -> None:
            arguments = forward("file_ops", "write_file", path=str(tmp_path / f"{user}.txt"), content=user)
            async with as_user(team, team.token(user)) as client:
                results[user] = await client.call_tool(FORWARD, arguments)

        async with anyio.create_task_group() as group:
            group.start_soon(write, "alice")
            group.start_soon(write, "bob")

            async def both_asked() -> bool:
                return bool((await waiting("alice"))[0] and (await waiting("bob"))[0])

            await eventually(both_asked, timeout=60)
            (alices,), alice_csrf = await waiting("alice")
            (bobs,), bob_csrf = await waiting("bob")
            assert alices != bobs
            assert await answer("bob", alices, bob_csrf, "approve") == 409  # not his: as if it were no longer there
            assert await answer("alice", alices, alice_csrf, "approve") == 303
            assert await answer("bob", bobs, bob_csrf, "decline") == 303
        assert not results["alice"].is_error, results["alice"].content
        assert (tmp_path / "alice.txt").read_text() == "alice"
        assert results["bob"].is_error and not (tmp_path / "bob.txt").exists()
        records = {r["user"]: r for r in read_records(team.workdir / "data" / "audit", "gateway.approvals")}
        assert records["alice (alice-id)"]["outcome"] == "APPROVED"
        assert "by alice (alice-id) with an access token from 127.0.0.1" in records["alice (alice-id)"]["message"]
        assert records["bob (bob-id)"]["outcome"] == "DECLINED"
