"""A user per request across a team's replicas (issue #42): two real gateway replicas with `[gateway.auth]` (the
config of `users.py`: the stand-in authorization server, its scopes, the slow and bulky test section), sharing
tasks and links through one Redis, behind HAProxy (`team.py`), and the official client with alice's or bob's token.
Their tokens name the team's canonical URI (the address HAProxy would be published at), which every replica accepts.

Shown: a task alice started through replica A is refused to bob through replica B (neither got nor cancelled), while
alice gets and cancels it there; a request without a token gets 401 with `WWW-Authenticate` from either replica and
the balancer; a resource link minted for alice through A (file_ops, a section that keeps its links in the shared
Redis) is refused to bob through B and read by alice there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("joserfc")

from mcp.shared.exceptions import MCPError

from tests.gateway.helpers import FORWARD, forward
from tests.otlp_receiver import OtlpReceiver
from tests.tasks_client import CreatedTask, call_for_task, cancel_task, get_task
from tests.team.authorization_server import authorization_server
from tests.team.team import team
from tests.team.users import Team as Door
from tests.team.users import as_user, gateway_config, initialize

pytestmark = pytest.mark.anyio

RESOURCE = "https://mcp.team.example/mcp"  # the team's public URI: the audience of every token, on every replica
METADATA = "https://mcp.team.example/.well-known/oauth-protected-resource/mcp"


@dataclass
class Doors:
    """The ways into the team: replica A, replica B and the load balancer, each as `users.Team` sees one."""

    a: Door
    b: Door
    balancer: Door
    root: Path  # the replicas' root (one workspace, as a team's shared volume)

    def token(self, user: str) -> str:
        """`user`'s access token for the team's resource (the same token on every replica)."""
        return self.a.token(user, aud=RESOURCE)


@pytest.fixture(scope="module")
def doors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Doors]:
    directory = tmp_path_factory.mktemp("team-users-replicas")
    config = directory / "config.toml"
    with authorization_server() as auth, OtlpReceiver() as receiver:
        config.write_text(gateway_config(directory, auth, RESOURCE), encoding="utf-8")
        env = {"MCP_SECTIONS_CONFIG": str(config), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        with team(directory, env=env) as running:
            a, b = running.replica("a"), running.replica("b")
            yield Doors(
                Door(auth, a.port, directory, receiver),
                Door(auth, b.port, directory, receiver),
                Door(auth, running.balancer_port, directory, receiver),
                a.root,
            )


async def test_a_task_alice_started_through_a_is_neither_got_nor_cancelled_by_bob_through_b(doors: Doors) -> None:
    async with as_user(doors.a, doors.token("alice")) as alice_on_a:
        await alice_on_a.call_tool("describe_section", {"section": "tasks_demo"})  # replica A now knows its tools
        arguments = forward("tasks_demo", "slow_compute", seconds=60, label="alice")
        created = await call_for_task(alice_on_a, FORWARD, arguments)
        assert isinstance(created, CreatedTask), created
    async with as_user(doors.b, doors.token("bob")) as bob_on_b:
        for attempt in (get_task, cancel_task):
            with pytest.raises(MCPError, match="never existed or has expired"):
                await attempt(bob_on_b.session, created.task_id)
    async with as_user(doors.b, doors.token("alice")) as alice_on_b:
        assert (await get_task(alice_on_b.session, created.task_id)).status == "working"
        await cancel_task(alice_on_b.session, created.task_id)
        assert (await get_task(alice_on_b.session, created.task_id)).status == "cancelled"
    async with as_user(doors.a, doors.token("alice")) as alice_on_a:  # where it ran
        assert (await get_task(alice_on_a.session, created.task_id)).status == "cancelled"


async def test_a_link_minted_for_alice_through_a_is_read_by_alice_not_bob_through_b(doors: Doors) -> None:
    """Before, the section process answering the call recorded the link's owner first, in the Redis key the gateway
    used too (SET NX): the owner stayed the gateway's own client of the section, and the gateway refused alice."""
    long_file = doors.root / "alices-long-notes.md"
    long_file.write_text("# page 0\n" + "a line of alice's notes\n" * 1_500, encoding="utf-8")  # over the inline limit
    async with as_user(doors.a, doors.token("alice")) as alice_on_a:
        result = await alice_on_a.call_tool(FORWARD, forward("file_ops", "read_file", path=str(long_file)))
        links = [block for block in result.content if block.type == "resource_link"]
        assert len(links) == 1, result.content
    async with as_user(doors.b, doors.token("bob")) as bob_on_b:
        with pytest.raises(MCPError, match="unknown or has expired"):
            await bob_on_b.read_resource(links[0].uri)
    async with as_user(doors.b, doors.token("alice")) as alice_on_b:
        page = (await alice_on_b.read_resource(links[0].uri)).contents[0]
        assert "# page 0" in getattr(page, "text", "")


def test_a_request_without_a_token_gets_401_from_either_replica_and_the_balancer(doors: Doors) -> None:
    for door in (doors.a, doors.b, doors.balancer):
        refused = initialize(door, None)
        assert refused.status_code == 401, door.url
        challenge = refused.headers["www-authenticate"]
        assert challenge == f'Bearer resource_metadata="{METADATA}", scope="mcp:read mcp:tools"', challenge
        assert initialize(door, doors.token("alice")).status_code == 200, door.url
