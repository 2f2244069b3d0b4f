"""A token without the scope a call needs gets HTTP 403 `insufficient_scope` (the MCP authorization specification's
step-up flow), where the gateway can tell from the request: the real HTTP gateway of a team (`[gateway.auth]` on the
stand-in authorization server, `tests/team/users.py`: carol holds `mcp:read`, the `readonly` profile; dave a scope the
gateway does not know), with a scripted model for `plan_actions`.

Shown: the 403's `WWW-Authenticate` names the error, the scopes to ask for and the resource metadata, as the SDK's
OAuth client reads them to step up; its body is the request's JSON-RPC error, which the official client with a fixed
token raises with the reason, on both protocol wires; nothing ran, and the session goes on. A call refused only once
it runs (a sub-agent's call inside `plan_actions`) stays a tool error naming the scope.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

pytest.importorskip("joserfc")

import httpx2 as httpx
from mcp.client.auth.utils import extract_field_from_www_auth, extract_resource_metadata_from_www_auth
from mcp.shared.exceptions import MCPError

from tests.gateway.helpers import FORWARD, REPO, forward
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.otlp_receiver import OtlpReceiver
from tests.processes import free_port, listening
from tests.stdio import NO_WARM_UP, cli_command, data_of
from tests.team.authorization_server import authorization_server
from tests.team.users import Team, as_user, gateway_config, initialize

pytestmark = pytest.mark.anyio

CHALLENGE_PARTS = ('Bearer error="insufficient_scope"', 'scope="', 'resource_metadata="', 'error_description="')


def write_in_a_sub_agent(request: Request) -> Reply:
    if request.turn == 0:
        path = request.goal.rsplit(" ", 1)[-1]
        return Reply(tool_calls=[("write_file", {"path": path, "content": "from a sub-agent"})])
    return Reply(text=f"Done: {request.tool_results[-1]}")


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    """The team gateway of `tests/team/users.py`, with a scripted model for its sub-agents."""
    workdir = tmp_path_factory.mktemp("scope-challenge")
    port = free_port()
    with (
        ScriptedModel({"write": write_in_a_sub_agent}) as model,
        authorization_server() as auth,
        OtlpReceiver() as receiver,
    ):
        config = workdir / "config.toml"
        url = f"http://127.0.0.1:{port}/mcp"
        config.write_text(gateway_config(workdir, auth, url) + model_table(model.base_url), encoding="utf-8")
        command = [
            *cli_command(),
            "gateway",
            *("--config", str(config), "--data-dir", str(workdir / "data"), "--root", str(workdir)),
            *("--transport", "http", "--port", str(port)),
        ]
        environment = {
            **os.environ,
            **NO_WARM_UP,
            "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(REPO)])),
            "SCRIPTED_MODEL_KEY": "k",
        }
        with listening(command, port, env=environment, cwd=workdir):
            yield Team(auth, port, workdir, receiver)


def _call(team: Team, token: str, arguments: dict[str, object]) -> httpx.Response:
    """One `tools/call` of `call_section_tool` in a new 2025-11-25 session of `token`'s user."""
    opened = initialize(team, token)
    assert opened.status_code == 200, opened.text
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Mcp-Session-Id": opened.headers["mcp-session-id"],
        "MCP-Protocol-Version": "2025-11-25",
    }
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": FORWARD, "arguments": arguments}}
    return httpx.post(team.url, json=body, headers=headers, timeout=60)


async def test_a_call_the_tokens_scopes_do_not_allow_gets_403_insufficient_scope(team: Team) -> None:
    target = team.workdir / "carol.txt"
    refused = _call(team, team.token("carol"), forward("file_ops", "write_file", path=str(target), content="x"))
    assert refused.status_code == 403, refused.text
    challenge = refused.headers["www-authenticate"]
    metadata = f"http://127.0.0.1:{team.port}/.well-known/oauth-protected-resource/mcp"
    assert all(part in challenge for part in CHALLENGE_PARTS), challenge
    # what the SDK's OAuth client reads to step up: the scopes carol keeps and the one the call needs
    assert extract_field_from_www_auth(refused, "error") == "insufficient_scope"
    assert extract_field_from_www_auth(refused, "scope") == "mcp:read mcp:tools"
    assert extract_resource_metadata_from_www_auth(refused) == metadata
    assert "write_file needs the scope 'mcp:tools'" in (extract_field_from_www_auth(refused, "error_description") or "")
    error = refused.json()
    assert error["id"] == 7 and "write_file needs the scope 'mcp:tools'" in error["error"]["message"]
    assert error["error"]["data"]["scope"] == "mcp:read mcp:tools"
    assert not target.exists()
    # a token whose scopes the gateway does not know is told the first one that allows the call
    unknown = _call(team, team.token("dave"), forward("tasks_demo", "greet", name="dave"))
    assert unknown.status_code == 403 and extract_field_from_www_auth(unknown, "scope") == "mcp:read"
    # a call the token allows is answered as before
    allowed = _call(team, team.token("carol"), forward("tasks_demo", "greet", name="carol"))
    assert allowed.status_code == 200 and "carol" in allowed.text


@pytest.mark.parametrize("legacy", [False, True], ids=["2026-07-28", "2025-11-25"])
async def test_the_official_client_raises_the_refusal_with_its_reason_and_goes_on(team: Team, legacy: bool) -> None:
    target = team.workdir / f"carol-{legacy}.txt"
    async with as_user(team, team.token("carol"), legacy=legacy) as carol:
        with pytest.raises(MCPError, match="write_file needs the scope 'mcp:tools'") as raised:
            await carol.call_tool(FORWARD, forward("file_ops", "write_file", path=str(target), content="x"))
        assert raised.value.error.data["scope"] == "mcp:read mcp:tools"  # type: ignore[index]
        greeted = await carol.call_tool(FORWARD, forward("tasks_demo", "greet", name="carol"))
        assert not greeted.is_error, greeted.content
    assert not target.exists()


async def test_a_call_refused_only_once_it_runs_stays_a_tool_error_naming_the_scope(team: Team) -> None:
    target = team.workdir / "from-a-sub-agent.txt"
    async with as_user(team, team.token("carol")) as carol:
        planned = await carol.call_tool(
            "plan_actions", {"goal": f"[script:write] write {target}", "sections": ["file_ops"]}
        )
    report = str(data_of(planned))
    assert "PERMISSION_DENIED" in report and "write_file needs the scope 'mcp:tools'" in report, report
    assert not target.exists()
