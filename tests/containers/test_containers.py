"""The container files, checked without a Docker engine: hadolint, Docker Compose v2's own validation of
compose.yaml against the Compose Specification, and the hardened profile on every service."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_sections.servers.registry import BUILTIN_SECTIONS, all_sections
from mcp_sections.shared.framework.sections import Container, Section
from tests.stdio import REPO

DOCKERFILE = REPO / "docker" / "Dockerfile"

# Each section's container facts come from its declaration (`Section.container`); the services that are no section
# state theirs here: the gateway reads the workspace and reaches its model provider, SearXNG its search engines.
CONTAINERS: dict[str, Container] = {section.id: section.container for section in all_sections()}
OTHERS = {
    "gateway": Container(stage="runtime-tools", workspace="read", egress=True),
    "searxng": Container(egress=True),
    "neo4j": Container(),
}
THIRD_PARTY = {"neo4j", "searxng"}


def dockerfile_stanza(section: Section) -> str:
    """What docker/Dockerfile needs for a section: its target, from the stage and environment it declares."""
    facts = section.container
    return (
        f"FROM {facts.stage} AS {section.id}\nCOPY --from={facts.build} /opt/venv /opt/venv\nUSER 10001\n"
        f'CMD ["serve", "{section.id}"]'
    )


def compose_service(section: Section) -> str:
    """What compose.yaml needs for a section (its own limits, variables and volumes come on top)."""
    facts = section.container
    networks = "[sections, egress]" if facts.egress else "[sections]"
    mount = {"write": ['"${WORKSPACE:-.}:/workspace"'], "read": ['"${WORKSPACE:-.}:/workspace:ro"'], "none": []}
    volumes = ", ".join([f'"{section.id}-data:/data"', *mount[facts.workspace]])
    return (
        f"  {section.id}:\n    <<: *hardened\n    image: mcp-sections:{section.id}\n"
        f"    build: {{context: ., dockerfile: docker/Dockerfile, target: {section.id}}}\n"
        f'    command: ["serve", "{section.id}", "--transport", "http", "--host", "0.0.0.0", "--port", "8000",\n'
        f'              "--auth-token-file", "/run/secrets/mcp_token", "--allowed-host", "{section.id}:8000"]\n'
        f"    volumes: [{volumes}]\n    networks: {networks}"
    )


def gateway_table(section_id: str) -> str:
    return (
        f'[gateway.sections.{section_id}]\nurl = "http://{section_id}:8000/mcp"\n'
        'auth_token_file = "/run/secrets/mcp_token"'
    )


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (`make setup` installs it)")
    return found


def dockerfile_targets() -> dict[str, str]:
    """Each build stage's name → the stage it starts from."""
    stages: dict[str, str] = {}
    for match in re.finditer(r"^FROM\s+(\S+)\s+AS\s+(\S+)\s*$", DOCKERFILE.read_text(encoding="utf-8"), re.M):
        stages[match.group(2)] = match.group(1)
    return stages


@pytest.fixture(scope="module")
def compose(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`docker compose config` of a copy of the project files with freshly made secrets."""
    compose_bin = _tool("docker-compose")
    version = subprocess.run([compose_bin, "version"], capture_output=True, text=True, timeout=30).stdout
    if "v2." not in version:
        pytest.skip(f"Docker Compose v2 is needed to validate against the Compose Specification: {version.strip()}")
    work = tmp_path_factory.mktemp("compose")
    shutil.copy(REPO / "compose.yaml", work / "compose.yaml")
    shutil.copytree(REPO / "docker", work / "docker", ignore=shutil.ignore_patterns("secrets"))
    subprocess.run(
        ["bash", str(REPO / "scripts" / "compose-secrets.sh"), str(work / "docker" / "secrets")],
        check=True,
        capture_output=True,
        timeout=60,
    )
    result = subprocess.run(
        [compose_bin, "-f", "compose.yaml", "--profile", "neo4j", "config", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=work,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_dockerfile_passes_hadolint() -> None:
    result = subprocess.run([_tool("hadolint"), str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_base_image_is_pinned_by_digest_and_final_stages_have_no_build_tools() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert re.search(r"^ARG PYTHON_IMAGE=\S+@sha256:[0-9a-f]{64}$", text, re.M)
    assert not re.search(r"apt-get install[^\n]*\b(gcc|g\+\+|build-essential|make)\b", text)


@pytest.mark.parametrize("section", all_sections(), ids=lambda section: section.id)
def test_every_section_has_the_target_its_declaration_asks_for(section: Section) -> None:
    stages = dockerfile_targets()
    facts = section.container
    want = f"add this target to docker/Dockerfile:\n\n{dockerfile_stanza(section)}\n"
    assert stages.get(section.id) == facts.stage, want
    text = DOCKERFILE.read_text(encoding="utf-8")
    target = text.split(f"AS {section.id}\n", 1)[1].split("\nFROM ", 1)[0]
    assert f"COPY --from={facts.build} /opt/venv /opt/venv" in target, want
    assert f'CMD ["serve", "{section.id}"]' in target, want


@pytest.mark.parametrize("section", all_sections(), ids=lambda section: section.id)
def test_every_section_has_its_service_and_the_gateway_reaches_it(compose: dict[str, Any], section: Section) -> None:
    import tomllib

    service = compose["services"].get(section.id)
    assert service is not None, f"add this service to compose.yaml:\n\n{compose_service(section)}\n"
    assert service["build"]["target"] == section.id
    sections = tomllib.loads((REPO / "docker" / "gateway.toml").read_text(encoding="utf-8"))["gateway"]["sections"]
    assert sections.get(section.id) == {
        "url": f"http://{section.id}:8000/mcp",
        "auth_token_file": "/run/secrets/mcp_token",
    }, f"add this table to docker/gateway.toml:\n\n{gateway_table(section.id)}\n"


def test_the_gateway_has_its_target_and_reaches_only_the_sections() -> None:
    import tomllib

    assert dockerfile_targets().get("gateway") == OTHERS["gateway"].stage
    config = tomllib.loads((REPO / "docker" / "gateway.toml").read_text(encoding="utf-8"))
    assert set(config["gateway"]["sections"]) == set(BUILTIN_SECTIONS)


@pytest.mark.parametrize("name", [*BUILTIN_SECTIONS, "gateway"])
def test_every_service_runs_the_hardened_profile(compose: dict[str, Any], name: str) -> None:
    service = compose["services"][name]
    assert service["read_only"] is True
    assert any(entry.startswith("/tmp") for entry in service["tmpfs"])
    assert service["cap_drop"] == ["ALL"] and not service.get("cap_add")
    assert "no-new-privileges:true" in service["security_opt"]
    assert service["user"] == "10001:10001"
    assert service["mem_limit"] and service["cpus"] and service["pids_limit"]
    assert service["healthcheck"]["test"][-1] == "mcp_sections.servers.healthcheck"
    command = service["command"]
    assert "--auth-token-file" in command, "a section bound beyond loopback must require the bearer token"


@pytest.mark.parametrize("name", [*BUILTIN_SECTIONS, "gateway", *sorted(THIRD_PARTY)])
def test_networks_and_mounts_are_least_privilege(compose: dict[str, Any], name: str) -> None:
    service = compose["services"][name]
    facts = CONTAINERS.get(name) or OTHERS[name]
    networks = set(service["networks"])
    internal = {key for key, value in compose["networks"].items() if value.get("internal")}
    if facts.egress:
        assert networks - internal, f"{name} needs a network with a route out"
    else:
        assert networks <= internal, f"{name} must sit on internal networks only, not {networks - internal}"
    workspace = [mount for mount in service.get("volumes", []) if mount["target"] == "/workspace"]
    if facts.workspace == "write":
        assert workspace and not workspace[0].get("read_only")
    elif facts.workspace == "read":
        assert workspace and workspace[0].get("read_only") is True
    else:
        assert not workspace, f"{name} has no use for the workspace"
    for mount in service.get("volumes", []):
        if mount["target"] != "/workspace" and mount["type"] == "bind":
            assert mount.get("read_only"), f"{name}: bind mount {mount['target']} must be read-only"


def test_only_the_gateway_is_published_and_only_on_loopback(compose: dict[str, Any]) -> None:
    published = {name: service["ports"] for name, service in compose["services"].items() if service.get("ports")}
    assert set(published) == {"gateway"}
    assert all(port["host_ip"] == "127.0.0.1" for port in published["gateway"])


def test_no_secret_has_a_default(compose: dict[str, Any]) -> None:
    text = (REPO / "compose.yaml").read_text(encoding="utf-8")
    assert not re.search(r"PASSWORD:-|SECRET:-|TOKEN:-", text)
    neo4j = compose["services"]["neo4j"]["environment"]
    assert "NEO4J_AUTH" not in neo4j and neo4j["NEO4J_AUTH_FILE"] == "/run/secrets/neo4j_auth"
    assert compose["services"]["rag_ops"]["environment"]["NEO4J_PASSWORD_FILE"] == "/run/secrets/neo4j_password"
