"""Each image's exact entrypoint, run outside a container: the compose service's command line answers tools/list.

No Docker engine runs here, so the command every container would run (the Dockerfile's ENTRYPOINT with the
compose service's `command`, the image's ENV plus the service's `environment`) is run directly, as uid 10001
when the tests run as root, with a read-only copy of a workspace, the data directory in a temporary folder, and
the bearer token from a file where compose mounts its secret. Only what cannot be the same outside a container
changes: paths that only exist inside one, and the port (a free one, as several run on this machine). An image
therefore cannot ship an entrypoint that does not start.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_sections.servers.registry import BUILTIN_SECTIONS
from tests.containers.test_containers import DOCKERFILE, compose  # noqa: F401  (the compose fixture)
from tests.processes import free_port, listening

TOKEN = "entrypoint-test-token-0123456789"
RUN_AS = 10001


def image_environment() -> dict[str, str]:
    """The ENV lines of the Dockerfile's runtime stage."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    block = re.search(r"^ENV (MCP_SECTIONS_DATA_DIR=.*?)(?=^\S)", text, re.M | re.S)
    assert block, "the runtime stage sets the data dir, roots and cache dir"
    return dict(re.findall(r"(\w+)=(\S+)", block.group(1).replace("\\\n", " ")))


@pytest.fixture(scope="module")
def sandbox() -> Iterator[dict[str, Path]]:
    base = Path(tempfile.mkdtemp(prefix="mcp-sections-entrypoints-"))  # outside pytest's root-only tree
    base.chmod(0o755)
    workspace = base / "workspace"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("def main() -> int:\n    return 0\n", encoding="utf-8")
    for path in [workspace, *workspace.rglob("*")]:  # read-only, as compose mounts it for readers
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    secrets = base / "secrets"
    secrets.mkdir()
    (secrets / "mcp_token").write_text(TOKEN, encoding="utf-8")
    yield {"base": base, "workspace": workspace, "secrets": secrets}
    for path in [workspace, *workspace.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    shutil.rmtree(base, ignore_errors=True)


def _as_container_user() -> list[str]:
    """setpriv to uid 10001 when running as root and the installed code is reachable by other users (as in the
    image), else nothing: the command then runs as the current user (a checkout in a private directory)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None or not _reachable_by_others(Path(sys.executable)):
        return []
    return [setpriv, f"--reuid={RUN_AS}", f"--regid={RUN_AS}", "--clear-groups"]


def _reachable_by_others(path: Path) -> bool:
    return all(parent.stat().st_mode & stat.S_IXOTH for parent in path.parents)


def _command(
    service: dict[str, Any], port: int, sandbox: dict[str, Path], data: Path
) -> tuple[list[str], dict[str, str]]:
    argv = ["mcp-sections", *service["command"]]  # ENTRYPOINT ["mcp-sections"] + the service's command
    swapped = {"/run/secrets/mcp_token": str(sandbox["secrets"] / "mcp_token")}
    argv = [swapped.get(arg, arg) for arg in argv]
    argv = [str(port) if previous == "--port" else arg for previous, arg in zip(["", *argv[:-1]], argv, strict=True)]
    env = {**image_environment(), **{key: str(value) for key, value in (service.get("environment") or {}).items()}}
    env.pop("MCP_SECTIONS_CONFIG", None)
    env.update(
        MCP_SECTIONS_DATA_DIR=str(data),
        MCP_SECTIONS_CACHE_DIR=str(data / "cache"),
        MCP_SECTIONS_ROOTS=str(sandbox["workspace"]),
        HOME=str(data),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    argv[0] = str(Path(sys.executable).parent / "mcp-sections")
    return argv, env


@pytest.mark.anyio
@pytest.mark.parametrize("service_name", [*sorted(BUILTIN_SECTIONS), "gateway"])
async def test_the_service_command_answers_tools_list(
    compose: dict[str, Any],  # noqa: F811
    sandbox: dict[str, Path],
    service_name: str,
) -> None:
    service = compose["services"][service_name]
    data = sandbox["base"] / f"data-{service_name}"
    data.mkdir()
    prefix = _as_container_user()
    if prefix:  # the data volume belongs to the user the command runs as, as in the image
        os.chown(data, RUN_AS, RUN_AS)
    port = free_port()
    argv, env = _command(service, port, sandbox, data)
    if service_name == "gateway":  # its config is a compose `configs` entry mounted at /etc/mcp-sections/
        config = sandbox["base"] / "gateway.toml"
        shutil.copy(Path(__file__).resolve().parents[2] / "docker" / "gateway.toml", config)
        config.chmod(0o644)
        argv = [str(config) if arg == "/etc/mcp-sections/gateway.toml" else arg for arg in argv]
        env["MCP_SECTIONS_GATEWAY_MODEL_API_KEY_ENV"] = ""
    if prefix:
        (sandbox["secrets"] / "mcp_token").chmod(0o644)
    with listening([*prefix, *argv], port, env=env):
        # the Host a real client sends: the gateway through its published port, a section by its service name
        host = "127.0.0.1:8765" if service_name == "gateway" else f"{service_name}:8000"
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}", "Host": host})
        url = f"http://127.0.0.1:{port}/mcp"
        async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            tools = (await client.list_tools()).tools
        assert tools, f"{service_name} listed no tools"
