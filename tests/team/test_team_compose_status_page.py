"""compose.yaml's gateway replicas accept the browser of their status page as the balancer publishes it: every
`--allowed-host` the balancer is reached by has its `--allowed-origin` (a sign-in POST through the balancer carries that
Origin; without it the replica answered 403 Invalid Origin), the first one being the balancer's published address (the
page's address in approval messages). Resolved by Docker Compose v2 itself (`test_team_compose.py`'s fixture)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from tests.team.test_team_compose import team_compose  # noqa: F401 (the fixture)


def _values(command: list[str], flag: str) -> list[str]:
    return [value for name, value in pairwise(command) if name == flag]


def test_every_host_the_replicas_are_reached_by_is_an_origin_they_accept(team_compose: dict[str, Any]) -> None:  # noqa: F811
    services = team_compose["services"]
    command = services["gateway-replica"]["command"]
    hosts, origins = _values(command, "--allowed-host"), _values(command, "--allowed-origin")
    assert hosts and all(f"http://{host}" in origins for host in hosts), (hosts, origins)
    (published,) = services["balancer"]["ports"]
    assert origins[0] == f"http://{published['host_ip']}:{published['published']}"
